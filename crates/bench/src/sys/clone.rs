//! clone3, as fork, with the child started straight in a cgroup
//! (CLONE_INTO_CGROUP) where one is given.
use std::os::fd::RawFd;

/// CLONE_INTO_CGROUP (Linux 5.7), from linux/sched.h.
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// struct clone_args as of Linux 5.7 (CLONE_ARGS_SIZE_VER2, 88 bytes).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// Forks a child, started in the cgroup `cgroup_dir` names (an open
/// descriptor of its directory) if given: the child's pid, 0 in the
/// child, or the error clone3 returned.
///
/// # Safety
/// As fork: the child may only make async-signal-safe calls, then exec or
/// `_exit`.
pub unsafe fn clone_into(cgroup_dir: Option<RawFd>) -> std::io::Result<libc::pid_t> {
    let args = CloneArgs {
        flags: cgroup_dir.map_or(0, |_| CLONE_INTO_CGROUP),
        exit_signal: libc::SIGCHLD as u64,
        cgroup: cgroup_dir.map_or(0, |fd| fd as u64),
        ..CloneArgs::default()
    };
    // SAFETY: clone3 without CLONE_VM and without a stack: fork's semantics.
    let r = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &args as *const CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    match r {
        r if r < 0 => Err(std::io::Error::last_os_error()),
        pid => Ok(pid as libc::pid_t),
    }
}

/// Whether a child can start in that cgroup: one that exits at once, or
/// why not (clone3 missing, CLONE_INTO_CGROUP refused, not a v2 cgroup).
pub fn probe(cgroup_dir: RawFd) -> std::io::Result<()> {
    // SAFETY: the child only calls _exit.
    let pid = unsafe { clone_into(Some(cgroup_dir))? };
    if pid == 0 {
        // SAFETY: ending the probe's child at once.
        unsafe { libc::_exit(0) };
    }
    // SAFETY: reaping our own child.
    unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
    Ok(())
}
