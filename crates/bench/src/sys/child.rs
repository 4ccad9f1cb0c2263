//! Helper processes, one rule for all: a child bench forks gets SIGKILL
//! when the thread that forked it ends (PR_SET_PDEATHSIG), so nothing
//! outlives bench, however bench ends (SIGKILL included); dropping it kills
//! and reaps it.
use anyhow::{bail, Result};

/// A forked child, killed and reaped when dropped.
#[derive(Debug)]
pub struct Child {
    pid: libc::pid_t,
    reaped: bool,
}

impl Child {
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Kills and reaps the child now.
    pub fn kill(&mut self) {
        if !self.reaped {
            // SAFETY: signalling and waiting for our own child.
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
                libc::waitpid(self.pid, std::ptr::null_mut(), 0);
            }
            self.reaped = true;
        }
    }

    /// Waits for the child and fails unless it exited with status 0.
    pub fn wait_ok(mut self, what: &str) -> Result<()> {
        let pid = self.pid;
        let mut status = 0;
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        self.reaped = r == pid;
        if r != pid || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
            bail!("{what}: child failed (status {status:#x})");
        }
        Ok(())
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A child and our ends of the channels to it (pipes, sockets, listeners):
/// dropped in this order, so the child is killed and reaped before our ends
/// are closed.
pub struct WithEnds {
    child: Child,
    _ends: Vec<Box<dyn std::any::Any>>,
}

impl WithEnds {
    pub fn new(child: Child, ends: Vec<Box<dyn std::any::Any>>) -> Self {
        Self { child, _ends: ends }
    }
}

impl std::ops::Deref for WithEnds {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.child
    }
}

impl std::ops::DerefMut for WithEnds {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.child
    }
}

/// Forks a child that runs `body` and exits with status 0. The child asks
/// for SIGKILL when we die, and leaves at once if we died before it could
/// ask. It only makes plain syscalls, so forking a threaded process is safe
/// here.
pub fn fork(body: impl FnOnce()) -> Result<Child> {
    // SAFETY: getpid cannot fail.
    let parent = unsafe { libc::getpid() };
    // SAFETY: fork; the child runs `body` then _exit without unwinding.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        bail!("fork: {}", std::io::Error::last_os_error());
    }
    if pid == 0 {
        if tie_to(parent) {
            super::timed_name::helper();
            body();
        }
        // SAFETY: end the child without running the parent's destructors.
        unsafe { libc::_exit(0) };
    }
    Ok(Child { pid, reaped: false })
}

/// In a new child: SIGKILL when `parent` dies; false if it already has.
/// Async-signal-safe (two syscalls), as `pre_exec` requires.
pub fn tie_to(parent: libc::pid_t) -> bool {
    // SAFETY: prctl and getppid on ourselves.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == 0 && libc::getppid() == parent }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_reports_its_status_and_dies_when_dropped() {
        fork(|| ()).unwrap().wait_ok("empty child").unwrap();
        let failing = fork(|| {
            // SAFETY: ending the child with a failure status.
            unsafe { libc::_exit(3) };
        })
        .unwrap();
        let err = failing.wait_ok("failing child").unwrap_err().to_string();
        assert!(err.contains("failing child"), "{err}");
        let sleeper = fork(|| loop {
            // SAFETY: waiting to be killed.
            unsafe { libc::pause() };
        })
        .unwrap();
        let pid = sleeper.pid();
        drop(sleeper);
        // SAFETY: probing a pid we reaped: gone (ESRCH).
        assert_eq!(unsafe { libc::kill(pid, 0) }, -1);
    }
}
