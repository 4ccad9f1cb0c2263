//! Descriptors as `OwnedFd` (closed when dropped), and the small reads and
//! writes the helpers' protocols use.
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use anyhow::{bail, Result};

/// A libc return value as a Result: negative means errno.
pub fn check(ret: i64, what: &str) -> Result<i64> {
    if ret < 0 {
        bail!("{what}: {}", std::io::Error::last_os_error());
    }
    Ok(ret)
}

/// A new descriptor from a libc call that returns one (or -1).
pub fn owned(ret: i32, what: &str) -> Result<OwnedFd> {
    check(ret.into(), what)?;
    // SAFETY: a descriptor the call just opened, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(ret) })
}

/// A pipe: (read end, write end). Close-on-exec: a helper that execs (the
/// fork helper, its children) never holds another op's pipe open.
pub fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut p = [0i32; 2];
    // SAFETY: an array of two fds.
    check(
        unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) }.into(),
        "pipe",
    )?;
    // SAFETY: the two descriptors pipe2 just made.
    Ok(unsafe { (OwnedFd::from_raw_fd(p[0]), OwnedFd::from_raw_fd(p[1])) })
}

/// A connected AF_UNIX stream pair (close-on-exec).
pub fn socketpair() -> Result<(OwnedFd, OwnedFd)> {
    let mut sv = [0i32; 2];
    // SAFETY: an array of two fds.
    check(
        unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                0,
                sv.as_mut_ptr(),
            )
        }
        .into(),
        "socketpair",
    )?;
    // SAFETY: the two descriptors socketpair just made.
    Ok(unsafe { (OwnedFd::from_raw_fd(sv[0]), OwnedFd::from_raw_fd(sv[1])) })
}

/// Reads exactly `buf.len()` bytes from `fd`; false on EOF or error.
pub fn read_full(fd: RawFd, buf: &mut [u8]) -> bool {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: reading into the rest of our buffer.
        let n = unsafe { libc::read(fd, buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        if n <= 0 {
            return false;
        }
        got += n as usize;
    }
    true
}

/// Writes `buf` in one write (messages are far below PIPE_BUF: atomic).
pub fn write_full(fd: RawFd, buf: &[u8]) -> bool {
    // SAFETY: writing our buffer.
    unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) == buf.len() as isize }
}

/// In a forked child: closes descriptors it inherited but does not use (the
/// parent's copies stay open). A child holding the write end of a pipe it
/// reads never sees EOF when the parent goes.
pub fn close_in_child(fds: impl IntoIterator<Item = RawFd>) {
    for fd in fds {
        // SAFETY: the child's own copy of an inherited descriptor, unused after.
        unsafe { libc::close(fd) };
    }
}
