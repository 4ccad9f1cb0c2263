//! A small, clean process to create processes from. fork() copies the
//! parent's page tables and anonymous pages, so forking from the measuring
//! process (several ops' buffers alive during round-robin sampling) cost 5.4
//! times lmbench's lat_proc, and forking from lsmpmon re-executed (a 5 MB
//! static PIE: 41 anonymous pages, its layout randomized) still 3.5-8.8 %
//! more, moving from run to run. As lat_proc forks from its own small C
//! program, lsmpmon asks `lsmpmon-fork` (forker.c: static, non-PIE, 12
//! anonymous pages to lat_proc's 14, arranged as lat_proc under benchmp) for
//! N processes per sample over a pipe (two small messages a sample: ≈ 0.1 %
//! of a 10 ms sample).
use std::{
    ffi::OsString,
    io::{Read, Write},
    os::unix::ffi::OsStringExt,
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
};

use anyhow::{bail, Context, Result};

use super::sys::child::tie_to;
use base::error::usage;
use model::bench::{FORK_HELPER_INSTALLED, FORK_HELPER_NAME};

/// Where the helper is: beside lsmpmon's own binary (a build's target
/// directory, a guest's /usr/libexec/lsmpmon-workload), else where the Debian
/// package and the guests install it. None: in neither place.
pub fn helper_path() -> Option<PathBuf> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join(FORK_HELPER_NAME)));
    beside
        .into_iter()
        .chain(std::iter::once(PathBuf::from(FORK_HELPER_INSTALLED)))
        .find(|p| p.is_file())
}

/// This process's command name (what comm-based policies know it by).
fn own_comm() -> OsString {
    std::fs::read("/proc/self/comm")
        .map(|mut b| {
            b.retain(|c| *c != b'\n');
            OsString::from_vec(b)
        })
        .unwrap_or_else(|_| "lsmpmon".into())
}

pub struct Forker {
    program: PathBuf,
    child: Child,
    to: ChildStdin,
    from: ChildStdout,
}

impl Forker {
    /// Starts the helper; `exec` is what each child runs (None: it exits).
    /// It takes this process's command name, so that a policy recognising
    /// lsmpmon by name confines it and its children alike. As every helper
    /// bench starts, it dies with bench (PR_SET_PDEATHSIG); in a process
    /// group of its own, a terminal's Ctrl-C reaches bench alone, which then
    /// stops it.
    pub fn spawn(exec: Option<&[&str]>) -> Result<Self> {
        let program = helper_path().ok_or_else(|| {
            usage(format!(
                "the fork ops' helper {FORK_HELPER_NAME} is neither beside lsmpmon nor at \
                 {FORK_HELPER_INSTALLED}: put it in one of them (a cargo build makes it beside \
                 the binary, the Debian package installs it there)"
            ))
        })?;
        Self::start(program, exec)
    }

    fn start(program: PathBuf, exec: Option<&[&str]>) -> Result<Self> {
        // SAFETY: getpid cannot fail.
        let parent = unsafe { libc::getpid() };
        let mut command = Command::new(&program);
        command
            .arg(own_comm())
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
            .with_context(|| format!("starting the fork helper {}", program.display()))?;
        let to = child.stdin.take().context("fork helper stdin")?;
        let from = child.stdout.take().context("fork helper stdout")?;
        Ok(Self {
            program,
            child,
            to,
            from,
        })
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

    /// The helper's program, by the path it was started from.
    pub fn program(&self) -> &Path {
        &self.program
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The helper build.rs made (unit tests run from deps/, where nothing
    /// lies beside them).
    fn built() -> PathBuf {
        PathBuf::from(concat!(env!("OUT_DIR"), "/lsmpmon-fork"))
    }

    #[test]
    fn the_helper_forks_under_this_process_name_and_counts_failures() {
        let mut exits = Forker::start(built(), None).unwrap();
        exits.run(20).unwrap();
        let comm = std::fs::read(format!("/proc/{}/comm", exits.child.id())).unwrap();
        assert_eq!(
            OsString::from_vec(comm.trim_ascii_end().to_vec()),
            own_comm()
        );
        // A small process: lsmpmon re-executed was several MiB resident.
        assert!(exits.rss_kb().unwrap() < 1024, "{:?} KiB", exits.rss_kb());
        Forker::start(built(), Some(&["/bin/true"]))
            .unwrap()
            .run(3)
            .unwrap();
        let err = Forker::start(built(), Some(&["/bin/false"]))
            .unwrap()
            .run(3)
            .unwrap_err()
            .to_string();
        assert!(err.contains("0 of 3 exited with status 0"), "{err}");
    }
}
