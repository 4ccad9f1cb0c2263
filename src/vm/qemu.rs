//! Boots one throwaway guest under QEMU and supervises it: output streamed
//! back as it arrives, a wall-clock timeout, the console log kept.
use std::{
    fs,
    io::{Read, Seek, SeekFrom, Write},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};

use crate::base::error::{usage, with_code, EXIT_GUEST_TIMEOUT};

/// Serial ports: ttyS0 console, ttyS1 COMMAND's stdout, ttyS2 its stderr,
/// ttyS3 the exit status. Separate files, so the console never mixes in.
pub const GUEST_STDOUT: &str = "/dev/ttyS1";
pub const GUEST_STDERR: &str = "/dev/ttyS2";
pub const GUEST_STATUS: &str = "/dev/ttyS3";

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    /// Software emulation with instruction-counted (virtual, deterministic) time.
    Tcg,
    /// Hardware virtualisation: real time, not deterministic. Only on request.
    Kvm,
}

pub struct Boot<'a> {
    /// The kernel image and the initramfs, as files QEMU inherits.
    pub vmlinuz: &'a fs::File,
    pub initramfs: &'a fs::File,
    pub cmdline: String,
    pub machine: &'a super::Machine,
    /// More QEMU arguments (a TPM, say).
    pub extra_args: &'a [String],
    pub run_dir: &'a Path,
    pub output: &'a Output<'a>,
}

/// Where COMMAND's output goes while the guest runs.
pub enum Output<'a> {
    /// Copied to lsmpmon's stdout and stderr as it arrives; the guest is
    /// stopped when `cancel` is set (`vm run`, on SIGINT/SIGTERM).
    Terminal { cancel: &'a AtomicBool },
    /// Kept in the run directory's `stdout` file; each stderr line goes to
    /// `progress`; the guest is stopped when `cancel` is set (the lab).
    Quiet {
        progress: &'a (dyn Fn(&str) + Sync),
        cancel: &'a AtomicBool,
    },
}

/// Runs the guest to completion; returns COMMAND's exit status.
pub fn boot(b: &Boot) -> Result<i32> {
    let qemu = "qemu-system-x86_64";
    if which(qemu).is_none() {
        return Err(usage(
            "qemu-system-x86_64 not found: apt-get install qemu-system-x86 (scripts/setup.sh does)",
        ));
    }
    let console = b.run_dir.join("console.log");
    let files = [
        console.clone(),
        b.run_dir.join("stdout"),
        b.run_dir.join("stderr"),
        b.run_dir.join("status"),
    ];
    let m = b.machine;
    let cancelled = || match b.output {
        Output::Terminal { cancel } | Output::Quiet { cancel, .. } => cancel.load(Ordering::SeqCst),
    };
    let mut cmd_fds = Vec::new();
    let mut cmd = Command::new(qemu);
    match m.accel {
        Accel::Tcg => {
            cmd.args(["-accel", "tcg"]);
            if m.icount != "off" {
                cmd.args(["-icount", &m.icount]);
            }
        }
        Accel::Kvm => {
            cmd.args(["-accel", "kvm", "-cpu", "host"]);
        }
    };
    if !m.rtc.is_empty() {
        cmd.args(["-rtc", &m.rtc]);
    }
    cmd.args(["-m", &m.memory_mb.to_string(), "-smp", &m.cpus.to_string()])
        .args([
            "-nodefaults",
            "-display",
            "none",
            "-no-reboot",
            "-monitor",
            "none",
        ])
        .arg("-kernel")
        .arg(handed_on(&mut cmd_fds, b.vmlinuz))
        .arg("-initrd")
        .arg(handed_on(&mut cmd_fds, b.initramfs))
        .args(["-append", &b.cmdline]);
    for f in &files {
        cmd.arg("-serial").arg(format!("file:{}", f.display()));
    }
    cmd.args(b.extra_args);
    let qemu_log = fs::File::create(b.run_dir.join("qemu.log"))?;
    cmd.stdin(Stdio::null())
        .stdout(qemu_log.try_clone()?)
        .stderr(qemu_log);
    inherit(&mut cmd, cmd_fds);
    dies_with_parent(&mut cmd);
    // Its own process group: a terminal's Ctrl-C goes to lsmpmon, which stops it.
    cmd.process_group(0);
    if cancelled() {
        return Err(interrupted(&console));
    }
    let mut child = cmd.spawn().context("starting qemu-system-x86_64")?;

    let start = Instant::now();
    let mut out = Tail::new(&files[1]);
    let mut err = Tail::new(&files[2]);
    let mut pending = Vec::new();
    let mut forward = |out: &mut Tail, err: &mut Tail| match b.output {
        Output::Terminal { .. } => {
            out.copy_to(&mut std::io::stdout());
            err.copy_to(&mut std::io::stderr());
        }
        Output::Quiet { progress, .. } => {
            err.copy_to(&mut pending);
            while let Some(nl) = pending.iter().position(|&c| c == b'\n') {
                let line: Vec<u8> = pending.drain(..=nl).collect();
                progress(String::from_utf8_lossy(&line).trim_end());
            }
        }
    };
    let exited = loop {
        forward(&mut out, &mut err);
        if start.elapsed() > m.timeout || cancelled() {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        thread::sleep(Duration::from_millis(50));
    };
    forward(&mut out, &mut err);

    if exited.is_none() && cancelled() {
        return Err(interrupted(&console));
    }
    if exited.is_none() {
        return Err(with_code(
            EXIT_GUEST_TIMEOUT,
            format!(
                "guest did not finish within {} s (raise --timeout); console log: {}",
                m.timeout.as_secs(),
                console.display()
            ),
        ));
    }
    let status = fs::read_to_string(&files[3]).unwrap_or_default();
    match parse_status(&status) {
        Some(code) => Ok(code),
        None => {
            let qemu_err = fs::read_to_string(b.run_dir.join("qemu.log")).unwrap_or_default();
            let why = if qemu_err.trim().is_empty() {
                "guest stopped before its command finished (kernel panic?)".to_string()
            } else {
                format!(
                    "qemu failed: {}",
                    qemu_err.lines().last().unwrap_or("").trim()
                )
            };
            Err(with_code(
                EXIT_GUEST_TIMEOUT,
                format!("{why}; console log: {}", console.display()),
            ))
        }
    }
}

fn interrupted(console: &Path) -> anyhow::Error {
    with_code(
        crate::base::error::EXIT_FAILURE,
        format!(
            "guest stopped (interrupted); console log: {}",
            console.display()
        ),
    )
}

/// The path under which the child finds `file` (inherited, see `inherit`).
fn handed_on(fds: &mut Vec<RawFd>, file: &fs::File) -> String {
    fds.push(file.as_raw_fd());
    format!("/proc/self/fd/{}", file.as_raw_fd())
}

/// The child keeps `fds` open across exec (they are close-on-exec here, so
/// no other child started meanwhile gets them).
fn inherit(cmd: &mut Command, fds: Vec<RawFd>) {
    // SAFETY: fcntl is async-signal-safe; the fds stay open until spawn returns.
    unsafe {
        cmd.pre_exec(move || {
            for &fd in &fds {
                if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// The child is killed when the thread that started it ends, whatever ends
/// it (a signal, a panic, SIGKILL): no QEMU or swtpm outlives lsmpmon.
pub fn dies_with_parent(cmd: &mut Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: prctl and getppid are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Had the parent died between fork and prctl, no signal would come:
            // the child now belongs to another process.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// The status line the guest writes: "status N".
pub fn parse_status(text: &str) -> Option<i32> {
    text.lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("status ")?.trim().parse().ok())
}

/// Follows a file that QEMU is still writing.
struct Tail {
    path: PathBuf,
    pos: u64,
}

impl Tail {
    fn new(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            pos: 0,
        }
    }

    fn copy_to(&mut self, w: &mut dyn Write) {
        let Ok(mut f) = fs::File::open(&self.path) else {
            return;
        };
        if f.seek(SeekFrom::Start(self.pos)).is_err() {
            return;
        }
        let mut buf = Vec::new();
        if let Ok(n) = f.read_to_end(&mut buf) {
            self.pos += n as u64;
            let _ = w.write_all(&buf);
            let _ = w.flush();
        }
    }
}

pub fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(program))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_line_is_found_after_noise() {
        assert_eq!(parse_status("garbage\nstatus 3\n"), Some(3));
        assert_eq!(parse_status("status 0"), Some(0));
        assert_eq!(parse_status(""), None);
        assert_eq!(parse_status("status x"), None);
    }
}
