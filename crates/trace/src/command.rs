//! The command `trace -- CMD` runs: in a process group of its own, so that a
//! SIGINT or SIGTERM sent to lsmpmon reaches CMD and everything it started
//! (lsmpmon then finishes and prints), and killed with lsmpmon if lsmpmon is
//! killed outright. On a terminal CMD gets the foreground, as it would
//! without lsmpmon.
use std::{
    os::fd::AsFd,
    os::unix::process::{CommandExt, ExitStatusExt},
    process::{Child, Command, Stdio},
    sync::atomic::{AtomicI32, AtomicU32, Ordering},
};

use anyhow::{Context, Result};
use signal_hook::{
    consts::{SIGINT, SIGTERM},
    low_level,
};

use base::error::usage;

/// The last SIGINT/SIGTERM received, and how many.
static SIGNAL: AtomicI32 = AtomicI32::new(0);
static SIGNALS: AtomicU32 = AtomicU32::new(0);

/// Catches SIGINT and SIGTERM (stop tracing, then print) from here on.
pub fn catch_signals() -> Result<()> {
    for sig in [SIGINT, SIGTERM] {
        // SAFETY: the action only stores to atomics (async-signal-safe).
        unsafe {
            low_level::register(sig, move || {
                SIGNAL.store(sig, Ordering::SeqCst);
                SIGNALS.fetch_add(1, Ordering::SeqCst);
            })
        }
        .context("catching SIGINT and SIGTERM")?;
    }
    Ok(())
}

/// A SIGINT or SIGTERM has arrived.
pub fn stopped() -> bool {
    SIGNALS.load(Ordering::SeqCst) > 0
}

pub struct Traced {
    child: Child,
    /// Signals already passed on to CMD's group.
    forwarded: u32,
    /// The terminal's foreground group to give back, if CMD was given it.
    terminal: Option<libc::pid_t>,
}

impl Traced {
    /// Starts CMD; its stdout goes to stderr when `stdout_to_stderr`.
    pub fn spawn(command: &[String], stdout_to_stderr: bool) -> Result<Option<Self>> {
        let Some((program, rest)) = command.split_first() else {
            return Ok(None);
        };
        let mut cmd = Command::new(program);
        cmd.args(rest).process_group(0);
        if stdout_to_stderr {
            cmd.stdout(Stdio::from(std::io::stderr().as_fd().try_clone_to_owned()?));
        }
        // SAFETY: prctl and getppid are async-signal-safe.
        unsafe {
            let parent = libc::getpid();
            cmd.pre_exec(move || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                // lsmpmon died between fork and prctl: nobody will stop CMD.
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| usage(format!("cannot run {program}: {e}")))?;
        let terminal = give_terminal(child.id() as libc::pid_t);
        Ok(Some(Self {
            child,
            forwarded: 0,
            terminal,
        }))
    }

    /// CMD's exit status (128 + signal if killed), once it has exited.
    /// Passes a SIGINT/SIGTERM on to CMD's process group; a second one kills it.
    pub fn poll(&mut self) -> Result<Option<i32>> {
        let received = SIGNALS.load(Ordering::SeqCst);
        if received > self.forwarded {
            self.forwarded = received;
            let sig = if received > 1 {
                libc::SIGKILL
            } else {
                SIGNAL.load(Ordering::SeqCst)
            };
            // SAFETY: signals CMD's own process group.
            unsafe { libc::kill(-(self.child.id() as libc::pid_t), sig) };
        }
        Ok(self
            .child
            .try_wait()?
            .map(|st| st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0))))
    }

    /// Ends CMD's group (--duration has passed) and waits for CMD.
    pub fn kill(&mut self) {
        // SAFETY: signals CMD's own process group.
        unsafe { libc::kill(-(self.child.id() as libc::pid_t), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

impl Drop for Traced {
    fn drop(&mut self) {
        if let Some(pgid) = self.terminal {
            set_foreground(pgid);
        }
    }
}

/// Makes `pgid` the terminal's foreground group if lsmpmon's group has it;
/// returns the group to give it back to.
fn give_terminal(pgid: libc::pid_t) -> Option<libc::pid_t> {
    // SAFETY: plain queries on fd 0.
    let ours = unsafe {
        if libc::isatty(0) != 1 {
            return None;
        }
        libc::getpgrp()
    };
    // SAFETY: as above.
    if unsafe { libc::tcgetpgrp(0) } != ours {
        return None;
    }
    set_foreground(pgid);
    Some(ours)
}

/// Gives the terminal to `pgid`. From a background group (lsmpmon, once
/// CMD has the terminal) that raises SIGTTOU unless it is blocked: it is
/// blocked in this thread around the call, as a shell ignores it.
fn set_foreground(pgid: libc::pid_t) {
    // SAFETY: sigset operations on our own set, then the thread's mask
    // changed and restored around tcsetpgrp on fd 0.
    unsafe {
        let mut ttou: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut ttou);
        libc::sigaddset(&mut ttou, libc::SIGTTOU);
        libc::pthread_sigmask(libc::SIG_BLOCK, &ttou, &mut old);
        libc::tcsetpgrp(0, pgid);
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
}
