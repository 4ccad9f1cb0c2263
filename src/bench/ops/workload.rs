//! `--workload FILE`: the user's own program as an op. One op = one run of
//! the program (fork, exec, wait), in the op's private directory, stdin
//! from /dev/null, its output to a file there. A run that exits non-zero,
//! dies of a signal or outlives --workload-timeout fails the op with the
//! tail of its output; whatever it started (its process group) is killed
//! after every run, so nothing it leaves behind runs into the next sample.
use std::{
    fs,
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
    os::unix::process::{CommandExt, ExitStatusExt},
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    time::{Duration, Instant},
};

use anyhow::{bail, Context, Result};

use crate::bench::interrupt::requested_now;
use crate::bench::op::{group, Bench, Ctx, OpDef, Unit, Work};

pub const OP: &str = "workload";
/// Bytes of the program's output a failure quotes.
const TAIL_BYTES: usize = 2048;

pub fn ops() -> Vec<OpDef> {
    group(
        OP,
        Unit::NsPerOp,
        &[(OP, |c| Ok(Box::new(Workload::new(c)?)))],
    )
}

struct Workload {
    program: PathBuf,
    dir: PathBuf,
    output: PathBuf,
    timeout: Duration,
}

impl Workload {
    fn new(c: &Ctx) -> Result<Self> {
        let Some(program) = &c.workload else {
            bail!("the workload op runs the program --workload names: give --workload FILE");
        };
        Ok(Self {
            program: program.clone(),
            dir: c.dir.clone(),
            output: c.dir.join(".workload-output"),
            timeout: Duration::from_secs(c.workload_timeout_s),
        })
    }

    fn start(&self) -> Result<Child> {
        let out = fs::File::create(&self.output)
            .with_context(|| format!("creating {}", self.output.display()))?;
        Command::new(&self.program)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .process_group(0)
            .spawn()
            .with_context(|| format!("starting the workload {}", self.program.display()))
    }

    /// One run, to its end or its timeout; its process group killed after.
    fn run_once(&self) -> Result<()> {
        let mut child = self.start()?;
        let pgid = child.id() as libc::pid_t;
        let waited = wait_until(&mut child, self.timeout);
        // SAFETY: signalling the process group the child leads; ESRCH
        // (nothing left) is the usual answer.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let status = match waited? {
            Wait::Exited(s) => s,
            Wait::TimedOut => {
                let _ = child.wait();
                bail!(
                    "the workload ran longer than --workload-timeout {} s and was killed{}",
                    self.timeout.as_secs(),
                    self.tail()
                );
            }
            Wait::Interrupted => {
                let _ = child.wait();
                bail!("interrupted");
            }
        };
        if !status.success() {
            bail!("the workload {}{}", describe(status), self.tail());
        }
        Ok(())
    }

    /// The end of the program's output, as a failure quotes it.
    fn tail(&self) -> String {
        let Ok(bytes) = fs::read(&self.output) else {
            return String::new();
        };
        let start = bytes.len().saturating_sub(TAIL_BYTES);
        let text = String::from_utf8_lossy(&bytes[start..]);
        let text = text.trim();
        if text.is_empty() {
            return ": it printed nothing".into();
        }
        let lines: Vec<&str> = text.lines().collect();
        format!(": its output ended: {}", lines.join(" | "))
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("was killed by signal {s}"),
        _ => format!("ended: {status}"),
    }
}

/// How often a wait looks at Ctrl-C / SIGTERM (a signal that came just
/// before the wait began interrupts nothing).
const STOP_CHECK: Duration = Duration::from_secs(1);

/// Why a run ended early.
enum Wait {
    Exited(ExitStatus),
    TimedOut,
    Interrupted,
}

/// Waits for the child's exit up to `timeout`, on a pidfd: no helper
/// thread inside the timed run, one wakeup a second.
fn wait_until(child: &mut Child, timeout: Duration) -> Result<Wait> {
    // SAFETY: pidfd_open on our own child; the result is checked.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, child.id(), 0) };
    if fd < 0 {
        // Before Linux 5.3: no pidfd. Wait without a timeout.
        return Ok(Wait::Exited(child.wait()?));
    }
    // SAFETY: a descriptor pidfd_open just returned, owned here.
    let pidfd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    let deadline = Instant::now() + timeout;
    loop {
        if requested_now() {
            return Ok(Wait::Interrupted);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(Wait::TimedOut);
        }
        let mut pfd = libc::pollfd {
            fd: pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.min(STOP_CHECK).as_millis().max(1) as i32;
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut pfd, 1, ms) } > 0 {
            return Ok(Wait::Exited(child.wait()?));
        }
    }
}

impl Bench for Workload {
    fn run(&mut self, iters: u64) -> Result<Work> {
        for _ in 0..iters {
            self.run_once()?;
        }
        Ok(Work {
            ops: iters,
            bytes: 0,
        })
    }
}

/// The program `--workload` names, if a regular executable file, by its
/// absolute path (the op runs it from its own directory).
pub fn check_program(path: &Path) -> Result<PathBuf, String> {
    let cannot = |e: std::io::Error| format!("--workload {}: {e}", path.display());
    let meta = fs::metadata(path).map_err(cannot)?;
    use std::os::unix::fs::PermissionsExt;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err(format!(
            "{} is not an executable file: give a script with #! or a static binary (chmod +x)",
            path.display()
        ));
    }
    fs::canonicalize(path).map_err(cannot)
}
