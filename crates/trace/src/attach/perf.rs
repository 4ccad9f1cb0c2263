//! Perf events that run a BPF program: kprobes and kretprobes, made through
//! the kprobe PMU or from tracefs events.
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// From <linux/perf_event.h> (not in the libc crate).
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_SET_BPF: libc::c_ulong = 0x4004_2408;

/// A system-wide perf event (pid -1, CPU 0, as libbpf opens kprobe events)
/// described by `attr`, running `prog`, enabled. `what` names it in errors.
pub fn attach(
    attr: &libbpf_sys::perf_event_attr,
    prog: &OwnedFd,
    what: &str,
) -> Result<OwnedFd, String> {
    let event = open(attr).map_err(|e| format!("perf_event_open {what}: {e}"))?;
    let fd = event.as_raw_fd();
    // SAFETY: perf ioctls on our own event fd, with an int argument.
    let failed = unsafe {
        libc::ioctl(fd, PERF_EVENT_IOC_SET_BPF as _, prog.as_raw_fd()) < 0
            || libc::ioctl(fd, PERF_EVENT_IOC_ENABLE as _, 0) < 0
    };
    if failed {
        return Err(format!(
            "attach kprobe: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(event)
}

fn open(attr: &libbpf_sys::perf_event_attr) -> std::io::Result<OwnedFd> {
    // SAFETY: attr (and any string it points to, which the caller keeps)
    // outlives the syscall, which only reads it.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const libbpf_sys::perf_event_attr,
            -1,
            0,
            -1,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}
