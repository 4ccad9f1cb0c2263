//! Boots one throwaway guest under QEMU and supervises it: output streamed
//! back as it arrives, a wall-clock timeout, the console log kept.
use std::{
    fs,
    io::{Read, Seek, SeekFrom, Write},
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    thread,
    time::{Duration, Instant},
};

use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};

use super::machine::{Accel, Machine};
use base::command::{dies_with_parent, which};
use base::error::{usage, with_code, EXIT_GUEST_TIMEOUT};

/// Serial ports: ttyS0 console, ttyS1 COMMAND's stdout, ttyS2 its stderr,
/// ttyS3 the exit status. Separate files, so the console never mixes in.
pub const GUEST_STDOUT: &str = "/dev/ttyS1";
pub const GUEST_STDERR: &str = "/dev/ttyS2";
pub const GUEST_STATUS: &str = "/dev/ttyS3";

pub struct Boot<'a> {
    /// The kernel image and the initramfs, as files QEMU inherits.
    pub vmlinuz: &'a fs::File,
    pub initramfs: &'a fs::File,
    pub cmdline: String,
    pub machine: &'a Machine,
    /// More QEMU arguments (a TPM, say).
    pub extra_args: &'a [String],
    pub run_dir: &'a Path,
    pub output: &'a Output<'a>,
    /// The console port is QEMU's stdio, the user's terminal (`--tty`).
    pub tty: bool,
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

const QEMU: &str = "qemu-system-x86_64";

/// The guest's serial output files in its run directory, one per port.
struct Ports {
    console: PathBuf,
    stdout: PathBuf,
    stderr: PathBuf,
    status: PathBuf,
}

impl Ports {
    fn new(run_dir: &Path) -> Self {
        Self {
            console: run_dir.join("console.log"),
            stdout: run_dir.join("stdout"),
            stderr: run_dir.join("stderr"),
            status: run_dir.join("status"),
        }
    }
}

impl Boot<'_> {
    fn cancelled(&self) -> bool {
        match self.output {
            Output::Terminal { cancel } | Output::Quiet { cancel, .. } => {
                cancel.load(Ordering::SeqCst)
            }
        }
    }
}

/// Runs the guest to completion; returns COMMAND's exit status.
pub fn boot(b: &Boot) -> Result<i32> {
    if which(QEMU).is_none() {
        return Err(usage(
            "qemu-system-x86_64 not found: apt-get install qemu-system-x86 (scripts/setup.sh does)",
        ));
    }
    let ports = Ports::new(b.run_dir);
    let mut cmd = command(b, &ports)?;
    if b.cancelled() {
        return Err(interrupted(&ports.console));
    }
    let _terminal = b.tty.then(super::tty::Restore::save);
    let child = cmd.spawn().context("starting qemu-system-x86_64")?;
    let exited = supervise(b, &ports, child)?;
    if exited.is_none() && b.cancelled() {
        return Err(interrupted(&ports.console));
    }
    if exited.is_none() {
        return Err(with_code(
            EXIT_GUEST_TIMEOUT,
            format!(
                "guest did not finish within {} s (raise --timeout); console log: {}",
                b.machine.timeout.as_secs(),
                ports.console.display()
            ),
        ));
    }
    status(b, &ports)
}

/// The QEMU command line for `b`: its ports written to files, its own
/// output to `qemu.log`, dying with lsmpmon.
fn command(b: &Boot, ports: &Ports) -> Result<Command> {
    let m = b.machine;
    let mut cmd_fds = Vec::new();
    let mut cmd = Command::new(QEMU);
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
    if b.tty {
        // signal=off: Ctrl-C is a key for the guest, not QEMU's end.
        cmd.args([
            "-chardev",
            "stdio,id=tty,signal=off",
            "-serial",
            "chardev:tty",
        ]);
    } else {
        cmd.arg("-serial")
            .arg(format!("file:{}", ports.console.display()));
    }
    for f in [&ports.stdout, &ports.stderr, &ports.status] {
        cmd.arg("-serial").arg(format!("file:{}", f.display()));
    }
    cmd.args(b.extra_args);
    let qemu_log = fs::File::create(b.run_dir.join("qemu.log"))?;
    if b.tty {
        // The terminal's own process group: a background one could not read it.
        cmd.stdin(Stdio::inherit())
            .stdout(Stdio::inherit())
            .stderr(qemu_log);
    } else {
        cmd.stdin(Stdio::null())
            .stdout(qemu_log.try_clone()?)
            .stderr(qemu_log);
        // Its own process group: a terminal's Ctrl-C goes to lsmpmon, which stops it.
        cmd.process_group(0);
    }
    inherit(&mut cmd, cmd_fds);
    dies_with_parent(&mut cmd);
    Ok(cmd)
}

/// Forwards the guest's output until QEMU exits (its status) or the timeout
/// or a cancel stops it (None).
fn supervise(b: &Boot, ports: &Ports, mut child: Child) -> Result<Option<ExitStatus>> {
    let start = Instant::now();
    let mut forward = Forward::new(ports);
    let exited = loop {
        forward.step(b.output);
        if start.elapsed() > b.machine.timeout || b.cancelled() {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        thread::sleep(Duration::from_millis(50));
    };
    forward.step(b.output);
    Ok(exited)
}

/// COMMAND's status from its port, or why there is none.
fn status(b: &Boot, ports: &Ports) -> Result<i32> {
    let status = fs::read_to_string(&ports.status).unwrap_or_default();
    if let Some(code) = parse_status(&status) {
        return Ok(code);
    }
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
        format!("{why}; console log: {}", ports.console.display()),
    ))
}

/// A guest's progress line as passed on: its bytes escaped (they reach a
/// terminal), at most this many characters ...
const MAX_LINE_CHARS: usize = 1000;
/// ... and at most this many bytes held while waiting for its newline.
const MAX_LINE_BYTES: usize = 64 << 10;

/// COMMAND's stdout and stderr, followed as QEMU writes them.
struct Forward {
    out: Tail,
    err: Tail,
    /// stderr not yet ended by a newline (`Output::Quiet`).
    pending: Vec<u8>,
}

impl Forward {
    fn new(ports: &Ports) -> Self {
        Self {
            out: Tail::new(&ports.stdout),
            err: Tail::new(&ports.stderr),
            pending: Vec::new(),
        }
    }

    fn step(&mut self, output: &Output) {
        match output {
            Output::Terminal { .. } => {
                self.out.copy_to(&mut std::io::stdout());
                self.err.copy_to(&mut std::io::stderr());
            }
            Output::Quiet { progress, .. } => {
                self.err.copy_to(&mut self.pending);
                while let Some(nl) = self.pending.iter().position(|&c| c == b'\n') {
                    let line: Vec<u8> = self.pending.drain(..=nl).collect();
                    progress(&base::text::escaped(line.trim_ascii_end(), MAX_LINE_CHARS));
                }
                // A guest that never ends its line is still shown, bounded.
                if self.pending.len() > MAX_LINE_BYTES {
                    let line: Vec<u8> = self.pending.drain(..).collect();
                    progress(&base::text::escaped(&line, MAX_LINE_CHARS));
                }
            }
        }
    }
}

fn interrupted(console: &Path) -> anyhow::Error {
    with_code(
        base::error::EXIT_FAILURE,
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

    /// A guest's stderr reaches the progress lines (and a terminal)
    /// escaped and bounded, even a line that never ends.
    #[test]
    fn progress_lines_are_escaped_and_bounded() {
        let dir = std::env::temp_dir().join(format!("lsmpmon-forward-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let ports = Ports::new(&dir);
        let mut bytes = b"lab: stage bench\r\n\x1b[2K\rall fine \xff\n".to_vec();
        bytes.extend(vec![b'y'; MAX_LINE_BYTES + 1]);
        fs::write(&ports.stderr, &bytes).unwrap();
        let lines = std::sync::Mutex::new(Vec::<String>::new());
        let progress = |l: &str| lines.lock().unwrap().push(l.to_string());
        let cancel = AtomicBool::new(false);
        let output = Output::Quiet {
            progress: &progress,
            cancel: &cancel,
        };
        Forward::new(&ports).step(&output);
        let _ = fs::remove_dir_all(&dir);
        let lines = lines.into_inner().unwrap();
        assert_eq!(
            lines[..2],
            ["lab: stage bench", r"\u{1b}[2K\rall fine \xff"]
        );
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[2].chars().count(), MAX_LINE_CHARS + 1);
    }
}
