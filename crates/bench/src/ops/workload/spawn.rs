//! Starting one run by hand: clone3 straight into the workload's cgroup
//! (CLONE_INTO_CGROUP), or (uncontained) clone3 as fork, or fork. A run that started elsewhere and then
//! joined the cgroup would take the cgroup threadgroup lock for writing,
//! which waits for an RCU grace period: inside the timed figure. Starting
//! in the cgroup takes it for reading only. Everything the child needs is
//! built before the clone; the child only makes async-signal-safe calls.
use std::{
    ffi::{CString, OsStr},
    os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd},
    os::unix::ffi::OsStrExt,
    os::unix::process::ExitStatusExt,
    path::Path,
    process::ExitStatus,
};

use anyhow::{bail, Context, Result};

use crate::sys::child::tie_to;
use crate::sys::clone::clone_into;

/// What a run's child does between fork and exec, built once per op.
pub struct Plan {
    path: CString,
    /// argv and envp: pointers into `_strings`, null-terminated.
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    _strings: Vec<CString>,
    /// (from, to): stdin, stdout, stderr.
    stdio: [(RawFd, RawFd); 3],
    dir: RawFd,
    cgroup_dir: Option<RawFd>,
    parent: libc::pid_t,
}

// SAFETY: the raw pointers point into `_strings`, owned and never changed.
unsafe impl Send for Plan {}

fn c_string(s: &OsStr, what: &str) -> Result<CString> {
    CString::new(s.as_bytes()).with_context(|| format!("{what} holds a NUL byte"))
}

impl Plan {
    /// The program run with no argument but its path and the bench's own
    /// environment; stdin `null`, stdout and stderr `out`, in `dir`.
    pub fn new(
        program: &Path,
        stdio: (RawFd, RawFd),
        dir: RawFd,
        cgroup_dir: Option<RawFd>,
    ) -> Result<Self> {
        let path = c_string(program.as_os_str(), "the workload's path")?;
        let mut strings = vec![path.clone()];
        for (k, v) in std::env::vars_os() {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            // An entry with a NUL cannot be passed on: std's Command drops
            // it too.
            if let Ok(kv) = CString::new(kv) {
                strings.push(kv);
            }
        }
        let null_terminated = |s: &[CString]| {
            let mut v: Vec<_> = s.iter().map(|s| s.as_ptr()).collect();
            v.push(std::ptr::null());
            v
        };
        let (null, out) = stdio;
        Ok(Self {
            argv: null_terminated(&strings[..1]),
            envp: null_terminated(&strings[1..]),
            path,
            _strings: strings,
            stdio: [(null, 0), (out, 1), (out, 2)],
            dir,
            cgroup_dir,
            parent: std::process::id() as libc::pid_t,
        })
    }

    /// Starts one run: its pid, in its own process group, once it has
    /// exec'd; or why it could not (as std's Command, by a close-on-exec
    /// pipe the child writes its errno to).
    pub fn start(&self) -> Result<Started> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two descriptors, owned below.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            bail!(
                "starting the workload: a pipe: {}",
                std::io::Error::last_os_error()
            );
        }
        // SAFETY: pipe2 returned them, nobody else owns them.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // Uncontained runs start the same way (glibc's fork costs more:
        // its handlers and locks), unless clone3 is missing (before 5.3).
        // SAFETY: the child runs `child` only, which execs or _exits.
        let pid = match unsafe { clone_into(self.cgroup_dir) } {
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) && self.cgroup_dir.is_none() => {
                // SAFETY: as above.
                match unsafe { libc::fork() } {
                    -1 => Err(std::io::Error::last_os_error()),
                    pid => Ok(pid),
                }
            }
            r => r,
        };
        let pid = pid.context("starting the workload")?;
        if pid == 0 {
            // SAFETY: in the new child.
            unsafe { self.child(write.as_raw_fd()) };
        }
        drop(write);
        let mut started = Started { pid, reaped: false };
        let mut errno = [0u8; 4];
        let n = loop {
            // SAFETY: reading into our own 4 bytes.
            let n = unsafe { libc::read(read.as_raw_fd(), errno.as_mut_ptr().cast(), 4) };
            if n >= 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                break n;
            }
        };
        if n == 4 {
            started.wait()?;
            bail!(
                "{}",
                std::io::Error::from_raw_os_error(i32::from_ne_bytes(errno))
            );
        }
        Ok(started)
    }

    /// The child: stdio, directory, group, parent-death signal, the signal
    /// mask and SIGPIPE as std's Command leaves them, then exec; 127 if any
    /// of it fails.
    unsafe fn child(&self, report: RawFd) -> ! {
        // SAFETY: async-signal-safe syscalls on descriptors and data that
        // were made before the clone; nothing allocates or locks.
        unsafe {
            let fail = || {
                let errno = *libc::__errno_location();
                libc::write(report, errno.to_ne_bytes().as_ptr().cast(), 4);
                libc::_exit(127)
            };
            for (from, to) in self.stdio {
                // A bench started with that descriptor closed holds its own
                // file there: dup2 is then a no-op that leaves close-on-exec.
                let r = match from == to {
                    true => libc::fcntl(to, libc::F_SETFD, 0),
                    false => libc::dup2(from, to),
                };
                if r < 0 {
                    fail();
                }
            }
            if libc::fchdir(self.dir) != 0 || libc::setpgid(0, 0) != 0 {
                fail();
            }
            if !tie_to(self.parent) {
                *libc::__errno_location() = libc::ESRCH;
                fail();
            }
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            libc::execve(self.path.as_ptr(), self.argv.as_ptr(), self.envp.as_ptr());
            fail()
        }
    }
}

/// A started run: killed and reaped if dropped unreaped.
pub struct Started {
    pid: libc::pid_t,
    reaped: bool,
}

impl Started {
    pub fn id(&self) -> libc::pid_t {
        self.pid
    }

    pub fn kill(&self) {
        if !self.reaped {
            // SAFETY: signalling our own unreaped child.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
        }
    }

    pub fn wait(&mut self) -> Result<ExitStatus> {
        let mut status = 0;
        loop {
            // SAFETY: waiting for our own child.
            let r = unsafe { libc::waitpid(self.pid, &mut status, 0) };
            if r == self.pid {
                self.reaped = true;
                return Ok(ExitStatus::from_raw(status));
            }
            let e = std::io::Error::last_os_error();
            if r < 0 && e.kind() != std::io::ErrorKind::Interrupted {
                bail!("waiting for the workload: {e}");
            }
        }
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill();
            let _ = self.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::{fs, os::fd::AsRawFd};

    use super::*;
    use crate::sys::cgroup::make;

    /// A run starts in the workload's cgroup (this host, as root, has v2):
    /// what /proc says of a child that sleeps.
    #[test]
    fn a_run_starts_in_the_workloads_cgroup() {
        let cgroup = make().unwrap();
        assert_eq!(cgroup.kind, "cgroup v2");
        let dir = std::env::temp_dir().join(format!("in-cgroup-{}", std::process::id()));
        fs::create_dir(&dir).unwrap();
        let script = dir.join("w");
        fs::write(&script, "#!/bin/sh\nexec sleep 100\n").unwrap();
        fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        let null = fs::File::open("/dev/null").unwrap();
        let here = fs::File::open(&dir).unwrap();
        let plan = Plan::new(
            &script,
            (null.as_raw_fd(), null.as_raw_fd()),
            here.as_raw_fd(),
            Some(cgroup.dir_fd()),
        )
        .unwrap();
        let run = plan.start().unwrap();
        let own = fs::read_to_string(format!("/proc/{}/cgroup", run.id())).unwrap();
        let v2 = own.lines().find_map(|l| l.strip_prefix("0::")).unwrap();
        let name = format!("/lsmpmon-workload.{}", std::process::id());
        assert!(v2.ends_with(&name), "{own}");
        drop(run);
        drop(cgroup);
        fs::remove_dir_all(&dir).unwrap();
    }
}
