//! The bpf() links the attach methods make: one tracing program to its
//! target, and one program to many functions (a tracing multi-link).
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::intf::lsmpmon_multi_cookie::{LSMPMON_MULTI_HOOK_MASK, LSMPMON_MULTI_RETURNS_INT};

/// A link for tracing program `prog`, loaded with its target (fentry, fexit,
/// session). The bpf() syscall itself: libbpf-rs links whole objects' programs only.
pub fn tracing_link(prog: &OwnedFd, attach_type: u32) -> Result<OwnedFd, String> {
    // SAFETY: a live program fd, no target fd, NULL options.
    let fd =
        unsafe { libbpf_sys::bpf_link_create(prog.as_raw_fd(), 0, attach_type, std::ptr::null()) };
    if fd < 0 {
        return Err(format!(
            "attach: {}",
            std::io::Error::from_raw_os_error(-fd)
        ));
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `union bpf_attr` as BPF_LINK_CREATE reads it for a tracing multi-link
/// (the 7.x UAPI: link_create.tracing_multi after prog_fd, target_fd,
/// attach_type and flags).
#[repr(C)]
struct LinkCreateMulti {
    prog_fd: u32,
    target_fd: u32,
    attach_type: u32,
    flags: u32,
    /// User pointers: `cnt` BTF ids (u32) and `cnt` cookies (u64).
    ids: u64,
    cookies: u64,
    cnt: u32,
    pad: u32,
}

/// The cookie that tells the program which hook called it.
pub fn cookie(hook_id: u32, returns_int: bool) -> u64 {
    let returns = if returns_int {
        LSMPMON_MULTI_RETURNS_INT as u64
    } else {
        0
    };
    (hook_id & LSMPMON_MULTI_HOOK_MASK) as u64 | returns
}

/// One link attaching `prog` to every function in `targets` (BTF id, cookie).
pub fn multi_link(
    prog: &OwnedFd,
    attach_type: u32,
    targets: &[(u32, u64)],
) -> Result<OwnedFd, String> {
    let ids: Vec<u32> = targets.iter().map(|t| t.0).collect();
    let cookies: Vec<u64> = targets.iter().map(|t| t.1).collect();
    let attr = LinkCreateMulti {
        prog_fd: prog.as_raw_fd() as u32,
        target_fd: 0,
        attach_type,
        flags: 0,
        ids: ids.as_ptr() as u64,
        cookies: cookies.as_ptr() as u64,
        cnt: ids.len() as u32,
        pad: 0,
    };
    // SAFETY: attr and the arrays it points to outlive the call; the kernel
    // reads size_of::<LinkCreateMulti>() bytes of attr.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            libbpf_sys::BPF_LINK_CREATE,
            &attr as *const LinkCreateMulti,
            std::mem::size_of::<LinkCreateMulti>() as u32,
        )
    };
    if fd < 0 {
        return Err(format!(
            "multi-link of {} functions: {}",
            ids.len(),
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_carries_the_hook_and_whether_it_returns_int() {
        assert_eq!(cookie(7, false), 7);
        assert_eq!(cookie(7, true), 7 | 0x10000);
        // Every hook id lsmpmon can trace fits the cookie.
        let max = crate::intf::lsmpmon_limits::LSMPMON_MAX_HOOKS - 1;
        assert_eq!(cookie(max, false), max as u64);
        assert_eq!(std::mem::size_of::<LinkCreateMulti>(), 40);
    }
}
