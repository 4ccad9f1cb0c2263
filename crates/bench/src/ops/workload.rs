//! `--workload FILE`: the user's own program as an op. One op = one run of
//! the program (fork, exec, wait), in the op's private directory, stdin
//! from /dev/null, its output appended to one file there (opened once,
//! untimed). A run that exits non-zero, dies of a signal or outlives
//! --workload-timeout fails the op with the end of its output. Its process
//! group is killed after every run; what left the group (a new session) is
//! adopted by the bench (a subreaper during the op's samples) and killed
//! after each sample; and the program dies with the bench (parent-death
//! signal).
use std::{
    fs,
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
    os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt},
    os::unix::process::{CommandExt, ExitStatusExt},
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    time::{Duration, Instant},
};

use anyhow::{bail, Context, Result};

use crate::interrupt::requested_now;
use crate::op::{group, Bench, Ctx, OpDef, Unit, Work};
use crate::sys::child::tie_to;
use base::secure_fs::{euid, trusted_path};

pub const OP: &str = "workload";
/// Bytes of the program's output a failure quotes.
const TAIL_BYTES: u64 = 2048;
/// Output the runs of one sample may write before the op fails (the file
/// is on the benchmark's file system, often a tmpfs).
const MAX_OUTPUT_BYTES: u64 = 64 << 20;
/// How often a wait looks at Ctrl-C / SIGTERM (a signal that came just
/// before the wait began interrupts nothing).
const STOP_CHECK: Duration = Duration::from_secs(1);

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
    /// The runs' output, appended (opened once, never reopened: what the
    /// program does to its name changes nothing here).
    output: fs::File,
    timeout: Duration,
    /// /dev/null, the program's stdin, opened once (untimed).
    null: fs::File,
    /// The bench's children before the sample (other ops' helpers): not
    /// the workload's to kill.
    children_before: Vec<libc::pid_t>,
    /// Within a sample (prepare .. finish): the subreaper is on and
    /// `children_before` is this sample's.
    armed: bool,
}

/// How a run's wait ended.
enum Wait {
    Exited,
    TimedOut,
    Interrupted,
}

impl Workload {
    fn new(c: &Ctx) -> Result<Self> {
        let Some(program) = &c.workload else {
            bail!("the workload op runs the program --workload names: give --workload FILE");
        };
        let path = c.dir.join(".workload-output");
        let output = fs::OpenOptions::new()
            .append(true)
            .read(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        let null = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_CLOEXEC)
            .open("/dev/null")
            .context("opening /dev/null")?;
        Ok(Self {
            program: program.clone(),
            dir: c.dir.clone(),
            output,
            timeout: Duration::from_secs(c.workload_timeout_s),
            null,
            children_before: Vec::new(),
            armed: false,
        })
    }

    /// The child's stdio are the held descriptors, dup2'd between fork and
    /// exec: no open or fcntl in the bench (and no hook call) per run.
    fn start(&self) -> Result<Child> {
        let (null, out) = (self.null.as_raw_fd(), self.output.as_raw_fd());
        let parent = std::process::id() as libc::pid_t;
        let mut cmd = Command::new(&self.program);
        cmd.current_dir(&self.dir)
            .stdin(Stdio::inherit())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            .process_group(0);
        // SAFETY: dup2, prctl and getppid only, async-signal-safe, between
        // fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                for (from, to) in [(null, 0), (out, 1), (out, 2)] {
                    // A bench started with that descriptor closed holds its
                    // own file there: dup2 is then a no-op that leaves
                    // close-on-exec set.
                    let r = match from == to {
                        true => libc::fcntl(to, libc::F_SETFD, 0),
                        false => libc::dup2(from, to),
                    };
                    if r < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if !tie_to(parent) {
                    return Err(std::io::Error::other("the bench ended"));
                }
                Ok(())
            })
        };
        cmd.spawn()
            .with_context(|| format!("starting the workload {}", self.program.display()))
    }

    /// One run, to its end or its timeout. Its group is killed while the
    /// leader is still unreaped (its pid, the group's id, cannot be reused).
    fn run_once(&self) -> Result<()> {
        // lseek: no LSM hook, nothing added to what the run is charged.
        let from = (&self.output).seek_end()?;
        let mut child = self.start()?;
        let pgid = child.id() as libc::pid_t;
        let waited = wait_until(&mut child, self.timeout);
        // SAFETY: signalling the group the unreaped child leads.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        if !matches!(waited, Ok(Wait::Exited)) {
            // It may have left its group: the leader itself, too.
            let _ = child.kill();
        }
        let status = child.wait()?;
        match waited? {
            Wait::Exited => {}
            Wait::TimedOut => bail!(
                "the workload ran longer than --workload-timeout {} s and was killed{}",
                self.timeout.as_secs(),
                self.tail(from)
            ),
            Wait::Interrupted => bail!("interrupted"),
        }
        if !status.success() {
            bail!("the workload {}{}", describe(status), self.tail(from));
        }
        Ok(())
    }

    /// The end of what the run wrote from offset `from`, as a failure quotes it.
    fn tail(&self, from: u64) -> String {
        let Ok(end) = self.output.metadata().map(|m| m.len()) else {
            return String::new();
        };
        let start = from.max(end.saturating_sub(TAIL_BYTES));
        let mut buf = vec![0u8; (end.saturating_sub(start)) as usize];
        let n = self.output.read_at(&mut buf, start).unwrap_or(0);
        let text = String::from_utf8_lossy(&buf[..n]);
        let lines: Vec<&str> = text.trim().lines().collect();
        if lines.is_empty() {
            return ": it printed nothing".into();
        }
        format!(": its output ended: {}", lines.join(" | "))
    }
}

trait SeekEnd {
    fn seek_end(self) -> Result<u64>;
}

impl SeekEnd for &fs::File {
    fn seek_end(self) -> Result<u64> {
        use std::io::Seek;
        let mut f = self;
        Ok(f.seek(std::io::SeekFrom::End(0))?)
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("was killed by signal {s}"),
        _ => format!("ended: {status}"),
    }
}

/// Waits for the child's exit (left unreaped) up to `timeout`, on a pidfd:
/// no helper thread inside the timed run, one wakeup a second.
fn wait_until(child: &mut Child, timeout: Duration) -> Result<Wait> {
    let deadline = Instant::now() + timeout;
    // SAFETY: pidfd_open on our own, unreaped child; the result is checked.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, child.id(), 0) };
    if fd < 0 {
        return wait_polling(child, deadline);
    }
    // SAFETY: a descriptor pidfd_open just returned, owned here.
    let pidfd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
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
            return Ok(Wait::Exited);
        }
    }
}

/// Without pidfds (before Linux 5.3, or refused by a seccomp filter): looks
/// every millisecond, without reaping (waitid WNOWAIT).
fn wait_polling(child: &Child, deadline: Instant) -> Result<Wait> {
    loop {
        // SAFETY: a zeroed siginfo for waitid to fill.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waiting, without reaping, on our own child.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                child.id(),
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: si_pid is set by waitid when a child changed state.
        if r == 0 && unsafe { info.si_pid() } != 0 {
            return Ok(Wait::Exited);
        }
        if r < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            bail!(
                "waiting for the workload: {}",
                std::io::Error::last_os_error()
            );
        }
        if requested_now() {
            return Ok(Wait::Interrupted);
        }
        if Instant::now() >= deadline {
            return Ok(Wait::TimedOut);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Whether orphans of what the bench starts become the bench's children
/// (so that the op can find and kill what left the workload's group).
fn subreaper(on: bool) -> Result<()> {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, on as libc::c_ulong) } != 0 {
        bail!(
            "prctl(PR_SET_CHILD_SUBREAPER): {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// How long killing what the workload left behind may take.
const KILL_ADOPTED: Duration = Duration::from_secs(10);

/// Kills and reaps what the workload left behind outside its group: the
/// bench's children that were not there before the sample (the op's own
/// child is reaped by then; only one op samples at a time). Fails if some
/// still live at the deadline (one that forks faster than it is killed).
fn kill_adopted(before: &[libc::pid_t]) -> Result<()> {
    let me = std::process::id().to_string();
    let deadline = Instant::now() + KILL_ADOPTED;
    loop {
        let mut adopted = children_of(&me)?;
        adopted.retain(|p| !before.contains(p));
        if adopted.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!(
                "the workload left {} processes that could not be killed in {} s (pids {:?})",
                adopted.len(),
                KILL_ADOPTED.as_secs(),
                adopted
            );
        }
        for pid in &adopted {
            // SAFETY: our own child, unreaped (its pid cannot be reused).
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        for pid in adopted {
            // SAFETY: reaping our own child.
            unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        }
    }
}

/// The pids whose parent is `ppid`, from /proc.
fn children_of(ppid: &str) -> Result<Vec<libc::pid_t>> {
    let entries = fs::read_dir("/proc").context("listing /proc for the workload's processes")?;
    Ok(entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|pid| {
            fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                // The fields after the command name: state, ppid, …
                s.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1).map(|p| p == ppid))
                    .unwrap_or(false)
            })
        })
        .collect())
}

impl Bench for Workload {
    fn prepare(&mut self, _iters: u64) -> Result<()> {
        self.children_before = children_of(&std::process::id().to_string())?;
        subreaper(true)?;
        self.armed = true;
        Ok(())
    }

    fn run(&mut self, iters: u64) -> Result<Work> {
        for _ in 0..iters {
            self.run_once()?;
        }
        Ok(Work {
            ops: iters,
            bytes: 0,
        })
    }

    fn finish(&mut self) -> Result<()> {
        let killed = kill_adopted(&self.children_before);
        subreaper(false)?;
        self.armed = false;
        killed?;
        let written = self.output.metadata()?.len();
        if written > MAX_OUTPUT_BYTES {
            bail!(
                "the workload wrote {} MiB of output in one sample (at most {} MiB)",
                written >> 20,
                MAX_OUTPUT_BYTES >> 20
            );
        }
        self.output.set_len(0)?;
        Ok(())
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        // Only within a sample is `children_before` current: outside one,
        // other ops' helpers made since must not be taken for the workload's.
        if self.armed {
            let _ = kill_adopted(&self.children_before);
            let _ = subreaper(false);
        }
    }
}

/// How results record the program: relative to the current directory when
/// it lies below it (as the configurations' directories), so that results
/// made in a checkout name no machine path.
pub fn recorded_path(real: &Path) -> String {
    let cwd = std::env::current_dir().and_then(fs::canonicalize);
    match cwd
        .ok()
        .and_then(|c| real.strip_prefix(c).ok().map(Path::to_path_buf))
    {
        Some(rel) => rel.display().to_string(),
        None => real.display().to_string(),
    }
}

/// The program `--workload` names, if a regular executable file that only
/// its owner (root or the caller) can change, in a directory no other user
/// can change: by its absolute path (the op runs it from its own directory).
pub fn check_program(path: &Path) -> Result<PathBuf, String> {
    let cannot = |e: std::io::Error| format!("--workload {}: {e}", path.display());
    let real = fs::canonicalize(path).map_err(cannot)?;
    let meta = fs::metadata(&real).map_err(cannot)?;
    if !meta.is_file() || meta.mode() & 0o111 == 0 {
        return Err(format!(
            "--workload {} is not an executable file: give a script with #! or a static binary (chmod +x)",
            path.display()
        ));
    }
    let owner_ok = meta.uid() == 0 || meta.uid() == euid();
    if !owner_ok || meta.mode() & 0o022 != 0 {
        return Err(format!(
            "--workload {} (uid {}, mode {:o}) could be changed by another user: make it yours or root's, writable by its owner only",
            path.display(),
            meta.uid(),
            meta.mode() & 0o7777
        ));
    }
    let dir = real.parent().unwrap_or(Path::new("/"));
    trusted_path(dir).map_err(|e| format!("--workload {}: {e}", path.display()))?;
    Ok(real)
}
