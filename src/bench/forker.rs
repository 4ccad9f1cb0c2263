//! A small, clean process to create processes from. fork() copies the
//! parent's page tables, so forking from the measuring process (several ops'
//! buffers alive during round-robin sampling) cost 5.4 times lmbench's
//! lat_proc. As lmbench forks from its own small program, lsmpmon re-executes
//! itself as this helper before any op's state exists in it, and asks it for
//! N forks per sample over a pipe (two small messages a sample: ≈ 0.1 % of
//! a 10 ms sample).
use std::{
    ffi::CString,
    io::{Read, Write},
    os::unix::ffi::OsStrExt,
    os::unix::process::CommandExt,
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
};

use anyhow::{bail, Context, Result};

use super::sys::child::tie_to;

/// argv[1] of the helper; checked before any argument parsing.
pub const HELPER_ARG: &str = "__lsmpmon-fork-helper";

/// In main(), first: if this process is the helper, serve and exit.
pub fn serve_if_helper() {
    let mut args = std::env::args_os().skip(1);
    if args.next().is_none_or(|a| a != HELPER_ARG) {
        return;
    }
    let argv: Vec<CString> = args
        .filter_map(|a| CString::new(a.as_bytes()).ok())
        .collect();
    serve(&argv);
    std::process::exit(0);
}

/// Reads a count, forks that many children (each exits, or execs `argv`),
/// waits for each, and answers with the count done well.
fn serve(argv: &[CString]) {
    let ptrs: Vec<*const libc::c_char> = argv
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let env: [*const libc::c_char; 1] = [std::ptr::null()];
    let mut req = [0u8; 8];
    let (mut input, mut output) = (std::io::stdin().lock(), std::io::stdout().lock());
    while input.read_exact(&mut req).is_ok() {
        let n = u64::from_ne_bytes(req);
        let mut ok = 0u64;
        for _ in 0..n {
            // SAFETY: the child only execs or exits.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                if !argv.is_empty() {
                    // SAFETY: NULL-terminated argv and envp.
                    unsafe { libc::execve(ptrs[0], ptrs.as_ptr(), env.as_ptr()) };
                    // SAFETY: exec failed.
                    unsafe { libc::_exit(127) };
                }
                // As lat_proc's child: the C library's exit(), whose
                // clean-up writes (copy-on-write faults) are part of the cost.
                // SAFETY: this helper registers no Rust destructors to run.
                unsafe { libc::exit(0) };
            }
            let mut status = 0;
            // SAFETY: our own child.
            if pid > 0 && unsafe { libc::waitpid(pid, &mut status, 0) } == pid && status == 0 {
                ok += 1;
            }
        }
        if output
            .write_all(&ok.to_ne_bytes())
            .and_then(|_| output.flush())
            .is_err()
        {
            return;
        }
    }
}

pub struct Forker {
    child: Child,
    to: ChildStdin,
    from: ChildStdout,
}

impl Forker {
    /// Starts the helper; `exec` is what each child runs (None: it exits).
    /// As every helper bench starts, it dies with bench (PR_SET_PDEATHSIG);
    /// in a process group of its own, a terminal's Ctrl-C reaches bench
    /// alone, which then stops it.
    pub fn spawn(exec: Option<&[&str]>) -> Result<Self> {
        // By its own path (as policies name it), not /proc/self/exe.
        let exe = std::env::current_exe().context("finding lsmpmon's own path")?;
        // SAFETY: getpid cannot fail.
        let parent = unsafe { libc::getpid() };
        let mut command = Command::new(exe);
        command
            .arg(HELPER_ARG)
            .args(exec.unwrap_or_default())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .process_group(0);
        // SAFETY: tie_to makes two async-signal-safe syscalls.
        unsafe {
            command.pre_exec(move || match tie_to(parent) {
                true => Ok(()),
                // Bench has gone: no allocation here, between fork and exec.
                false => Err(std::io::Error::from_raw_os_error(libc::ESRCH)),
            });
        }
        let mut child = command
            .spawn()
            .context("starting the fork helper (lsmpmon itself)")?;
        let to = child.stdin.take().context("fork helper stdin")?;
        let from = child.stdout.take().context("fork helper stdout")?;
        Ok(Self { child, to, from })
    }

    /// `iters` processes created (and exited) by the helper.
    pub fn run(&mut self, iters: u64) -> Result<()> {
        self.to.write_all(&iters.to_ne_bytes())?;
        let mut done = [0u8; 8];
        self.from
            .read_exact(&mut done)
            .context("the fork helper died")?;
        let done = u64::from_ne_bytes(done);
        if done != iters {
            bail!("the fork helper's children failed: {done} of {iters} exited with status 0");
        }
        Ok(())
    }

    /// The helper's resident size, for the result (lmbench forks from a
    /// process of about this size).
    pub fn rss_kb(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    }
}

impl Drop for Forker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
