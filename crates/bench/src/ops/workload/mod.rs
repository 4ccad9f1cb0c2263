//! `--workload FILE`: the user's own program as an op. One op = one run of
//! the program's private copy (fork, exec, wait), in the op's private
//! directory, stdin from /dev/null, its output drained from a pipe as it
//! comes (bounded, never on disk). A run that exits non-zero, dies of a
//! signal, outlives --workload-timeout or prints without end fails the op
//! with the end of its output, escaped. Its process group is killed after
//! every run; what left the group (a new session) is adopted by the bench
//! (a subreaper during the op's samples) and killed after each sample; and
//! the program dies with the bench (parent-death signal).
mod output;
mod program;
mod reap;
mod spawn;

use std::{
    fs,
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
    os::unix::fs::{MetadataExt, OpenOptionsExt},
    os::unix::process::ExitStatusExt,
    path::PathBuf,
    process::ExitStatus,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{bail, Context, Result};

use crate::interrupt::requested_now;
use crate::op::{group, Bench, Ctx, OpDef, Unit, Work};
use crate::sys::cgroup::Cgroup;
use output::{Capture, MAX_OUTPUT_BYTES};
pub use program::{recorded_path, Program};
use reap::{children_of, kill_adopted, subreaper};
use spawn::{Plan, Started};

pub const OP: &str = "workload";
/// How often a wait looks at Ctrl-C / SIGTERM (a signal that came just
/// before the wait began interrupts nothing).
const STOP_CHECK: Duration = Duration::from_secs(1);
/// How often a wait without a pidfd looks at the run.
const POLL_WITHOUT_PIDFD: Duration = Duration::from_millis(1);

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
    /// The op's directory, held: every run starts in it (fchdir), whatever
    /// its name has been made to point to since.
    _dir_fd: OwnedFd,
    /// (device, inode) of that directory.
    dir_id: (u64, u64),
    output: Capture,
    /// Every run starts in it; what they leave is killed there.
    cgroup: Option<Arc<Cgroup>>,
    /// How a run starts, built once (untimed): it refers to the descriptors
    /// this op holds (`null`, `output`, `dir_fd`, `cgroup`).
    plan: Plan,
    timeout: Duration,
    /// /dev/null, the program's stdin, opened once (untimed).
    _null: fs::File,
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
    TooMuchOutput,
}

impl Workload {
    fn new(c: &Ctx) -> Result<Self> {
        let Some(program) = &c.workload else {
            bail!("the workload op runs the program --workload names: give --workload FILE");
        };
        let dir = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&c.dir)
            .with_context(|| format!("opening {}", c.dir.display()))?;
        let meta = dir.metadata()?;
        let null = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_CLOEXEC)
            .open("/dev/null")
            .context("opening /dev/null")?;
        let output = Capture::new()?;
        let cgroup = c.workload_cgroup.clone();
        // The child's stdio are the held descriptors, dup2'd between fork
        // and exec, and its directory the held one: no open or fcntl in
        // the bench (and no hook call) per run.
        let plan = Plan::new(
            program,
            (null.as_raw_fd(), output.write_fd()),
            dir.as_raw_fd(),
            cgroup.as_ref().map(|c| c.dir_fd()),
        )?;
        Ok(Self {
            program: program.clone(),
            dir: c.dir.clone(),
            _dir_fd: dir.into(),
            dir_id: (meta.dev(), meta.ino()),
            output,
            cgroup,
            plan,
            timeout: Duration::from_secs(c.workload_timeout_s),
            _null: null,
            children_before: Vec::new(),
            armed: false,
        })
    }

    /// One run, to its end, its timeout or its output's bound. Its group is
    /// killed while the leader is still unreaped (its pid, the group's id,
    /// cannot be reused).
    fn run_once(&mut self) -> Result<()> {
        self.output.begin();
        let mut child = self
            .plan
            .start()
            .with_context(|| format!("starting the workload {}", self.program.display()))?;
        let pgid = child.id();
        let waited = wait_until(&mut child, self.timeout, &mut self.output);
        // SAFETY: signalling the group the unreaped child leads.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        if !matches!(waited, Ok(Wait::Exited)) {
            // It may have left its group: the leader itself, too.
            child.kill();
        }
        let status = child.wait()?;
        let tail = || self.output.tail_text();
        match waited? {
            Wait::Exited => {}
            Wait::TimedOut => bail!(
                "the workload ran longer than --workload-timeout {} s and was killed{}",
                self.timeout.as_secs(),
                tail()
            ),
            Wait::TooMuchOutput => bail!(
                "the workload wrote more than {} MiB of output in one run and was killed \
                 (a benchmark should print little){}",
                MAX_OUTPUT_BYTES >> 20,
                tail()
            ),
            Wait::Interrupted => bail!("interrupted"),
        }
        if !status.success() {
            bail!("the workload {}{}", describe(status), tail());
        }
        Ok(())
    }

    /// The op's directory is still the one made for it: a workload that
    /// replaced it (by a symbolic link, say) fails the op, as later runs
    /// and the cleanup would otherwise act on what the name now points to.
    fn check_dir(&self) -> Result<()> {
        let now = fs::symlink_metadata(&self.dir);
        let what = match &now {
            Ok(m) if m.is_dir() && (m.dev(), m.ino()) == self.dir_id => return Ok(()),
            Ok(m) if m.file_type().is_symlink() => "a symbolic link",
            Ok(_) => "another file",
            Err(_) => "nothing (it was removed or renamed)",
        };
        bail!(
            "the workload replaced its directory {} by {what}: runs must stay in the \
             directory bench made for them; the op fails",
            self.dir.display()
        )
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("was killed by signal {s}"),
        _ => format!("ended: {status}"),
    }
}

/// Waits for the child's exit (left unreaped) up to `timeout`, draining
/// its output as it comes: on a pidfd and the pipe (no helper thread inside
/// the timed run), else looking every millisecond (waitid WNOWAIT).
fn wait_until(child: &mut Started, timeout: Duration, out: &mut Capture) -> Result<Wait> {
    let deadline = Instant::now() + timeout;
    // SAFETY: pidfd_open on our own, unreaped child; the result is checked.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, child.id(), 0) };
    // SAFETY: a descriptor pidfd_open just returned, owned here.
    let pidfd = (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) });
    let pollfd = |fd: i32| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let mut fds = vec![pollfd(out.read_fd())];
    fds.extend(pidfd.as_ref().map(|p| pollfd(p.as_raw_fd())));
    loop {
        if !out.drain()? {
            return Ok(Wait::TooMuchOutput);
        }
        if requested_now() {
            return Ok(Wait::Interrupted);
        }
        let exited = match fds.get(1) {
            Some(p) => p.revents != 0,
            None => exited_polling(child)?,
        };
        if exited {
            // What it wrote just before it ended.
            return Ok(match out.drain()? {
                true => Wait::Exited,
                false => Wait::TooMuchOutput,
            });
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(Wait::TimedOut);
        }
        let step = match pidfd {
            Some(_) => STOP_CHECK,
            None => POLL_WITHOUT_PIDFD,
        };
        let ms = left.min(step).as_millis().max(1) as i32;
        fds.iter_mut().for_each(|p| p.revents = 0);
        // SAFETY: valid pollfds; EINTR just loops.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    }
}

/// Whether the child has ended, without reaping it (before Linux 5.3, or
/// with pidfd_open refused by a seccomp filter).
fn exited_polling(child: &Started) -> Result<bool> {
    // SAFETY: a zeroed siginfo for waitid to fill.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waiting, without reaping, on our own child.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            child.id() as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    if r < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
        bail!(
            "waiting for the workload: {}",
            std::io::Error::last_os_error()
        );
    }
    // SAFETY: si_pid is set by waitid when a child changed state.
    Ok(r == 0 && unsafe { info.si_pid() } != 0)
}

impl Bench for Workload {
    fn prepare(&mut self, _iters: u64) -> Result<()> {
        self.check_dir()?;
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
        let in_cgroup = self.cgroup.as_ref().map_or(Ok(()), |c| c.kill_all());
        let killed = kill_adopted(&self.children_before);
        subreaper(false)?;
        self.armed = false;
        killed?;
        in_cgroup.map_err(anyhow::Error::msg)?;
        self.check_dir()
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        // Only within a sample is `children_before` current: outside one,
        // other ops' helpers made since must not be taken for the workload's.
        if self.armed {
            if let Some(c) = &self.cgroup {
                let _ = c.kill_all();
            }
            let _ = kill_adopted(&self.children_before);
            let _ = subreaper(false);
        }
    }
}
