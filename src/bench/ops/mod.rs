//! The operations, one file per family. Each proves it did its work: a
//! syscall that fails, a short read or a missing file fails the operation.
mod bandwidth;
pub mod build;
mod files;
pub mod ima;
mod ipc;
mod process;
mod syscall;
pub mod web;
mod yielding;

use std::{
    ffi::CString,
    os::unix::ffi::OsStrExt,
    path::{Path, PathBuf},
};

pub use crate::model::bench::Unit;
use anyhow::{bail, Context, Result};

/// What one timed run did; the runner checks it against what was asked.
#[derive(Debug, Default, Clone, Copy)]
pub struct Work {
    pub ops: u64,
    pub bytes: u64,
}

/// Settings shared by every operation.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// The op's own fresh private directory, `<--dir>/<op>.XXXXXX`.
    pub dir: PathBuf,
    pub mmap_bytes: usize,
    pub prot_exec: bool,
    pub select_fds: usize,
    pub ctx_procs: usize,
    pub ctx_size_kib: usize,
}

/// One benchmark: `prepare` and `finish` are not timed, `run` is.
pub trait Bench {
    fn prepare(&mut self, _iters: u64) -> Result<()> {
        Ok(())
    }
    fn run(&mut self, iters: u64) -> Result<Work>;
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
    /// What the op's own mechanism costs per op, measured untimed once and
    /// subtracted from every sample (lat_ctx's token-passing overhead).
    fn overhead_ns(&mut self) -> Result<Option<f64>> {
        Ok(None)
    }
    /// Resident size of the helper process that does the work, if any.
    fn helper_rss_kb(&self) -> Option<u64> {
        None
    }
    /// How long the last `run` took by the op's own timing process's clock
    /// (ns, one clock pair included, as the runner's own), when the work is
    /// done and timed in a child as lmbench's benchmp does; None: the runner
    /// times `run` itself.
    fn child_timed_ns(&self) -> Option<f64> {
        None
    }
    /// Each request's own latency (ns) since the last call, for ops that
    /// serve many clients at once (web): the runner keeps the sampled ones.
    fn take_latencies_ns(&mut self) -> Vec<f64> {
        Vec::new()
    }
    /// The iteration count a sample uses for `iters`: ops whose work comes
    /// in units (whole file mixes shared by all clients) round it up.
    fn whole_iterations(&self, iters: u64) -> u64 {
        iters
    }
}

pub type Make = fn(&Ctx) -> Result<Box<dyn Bench>>;

pub struct OpDef {
    pub name: &'static str,
    pub group: &'static str,
    pub unit: Unit,
    pub make: Make,
}

/// The operations of one group, all in the same unit.
fn group(group: &'static str, unit: Unit, ops: &[(&'static str, Make)]) -> Vec<OpDef> {
    ops.iter()
        .map(|&(name, make)| OpDef {
            name,
            group,
            unit,
            make,
        })
        .collect()
}

pub fn all() -> Vec<OpDef> {
    let mut v = Vec::new();
    v.extend(syscall::ops());
    v.extend(files::ops());
    v.extend(ipc::ops());
    v.extend(process::ops());
    v.extend(yielding::ops());
    v.extend(bandwidth::ops());
    v.extend(ima::ops());
    v.extend(web::ops());
    v.extend(build::ops());
    v
}

/// the LSMPMON paper's Table 3 and the embedded-SELinux paper's Tables 1 and 2.
pub const PAPER: &[&str] = &[
    "null",
    "read",
    "write",
    "stat",
    "open_close",
    "create_0k",
    "delete_0k",
    "create_10k",
    "delete_10k",
    "rw_256",
    "rw_1k",
    "rw_4k",
    "pipe",
    "unix",
    "tcp",
    "udp",
];

/// The group whose ops take a fixed number of rounds (`--iterations`).
pub const YIELD_GROUP: &str = "yield";

/// Every op's group, as `--ops` names them.
pub const GROUPS: &[&str] = &[
    "syscall", "files", "ipc", "proc", "yield", "bw", "ima", "web", "build",
];
/// Groups of the other papers' studies: not in `lmbench` (all the others).
const STUDY_GROUPS: &[&str] = &["ima", "web", "build"];

/// Resolves "paper", "lmbench", group names and op names, in order, no repeats.
pub fn select(spec: &str) -> Result<Vec<OpDef>> {
    let mut out: Vec<OpDef> = Vec::new();
    for word in spec.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let names: Vec<&str> = match word {
            "paper" => PAPER.to_vec(),
            // The other papers' studies are not LMbench's: asked for by name.
            "lmbench" => all()
                .iter()
                .filter(|o| !STUDY_GROUPS.contains(&o.group))
                .map(|o| o.name)
                .collect(),
            g if all().iter().any(|o| o.group == g) => all()
                .iter()
                .filter(|o| o.group == g)
                .map(|o| o.name)
                .collect(),
            name if all().iter().any(|o| o.name == name) => vec![name],
            other => {
                return Err(crate::base::error::usage(format!(
                "unknown operation or group '{other}': groups are {}, lmbench, paper; ops are {}",
                GROUPS.join(", "),
                all().iter().map(|o| o.name).collect::<Vec<_>>().join(" ")
            )))
            }
        };
        for n in names {
            if !out.iter().any(|o| o.name == n) {
                out.extend(all().into_iter().filter(|o| o.name == n));
            }
        }
    }
    if out.is_empty() {
        return Err(crate::base::error::usage("no operation selected"));
    }
    Ok(out)
}

/// Creates `path` as a new file, mode 0600: never over an existing file or
/// through a symlink (O_EXCL | O_NOFOLLOW).
pub fn create_new(path: &Path) -> Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))
}

/// A new file holding `data` (see `create_new`).
pub fn write_new(path: &Path, data: &[u8]) -> Result<()> {
    use std::io::Write;
    create_new(path)?
        .write_all(data)
        .with_context(|| format!("writing {}", path.display()))
}

/// Opens an existing file without following a symlink; returns the fd.
pub fn open_nofollow(path: &Path, flags: i32) -> Result<i32> {
    let p = CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: valid path; the caller owns the fd.
    let fd = unsafe { libc::open(p.as_ptr(), flags | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
    Ok(check(fd as i64, "open")? as i32)
}

/// A libc return value as a Result: negative means errno.
pub fn check(ret: i64, what: &str) -> Result<i64> {
    if ret < 0 {
        bail!("{what}: {}", std::io::Error::last_os_error());
    }
    Ok(ret)
}

/// Forks a child that runs `body` and exits; returns its pid. The child only
/// makes plain syscalls, so forking a threaded process is safe here.
pub fn fork_child(body: impl FnOnce()) -> Result<libc::pid_t> {
    // SAFETY: fork; the child runs `body` then _exit without unwinding.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        bail!("fork: {}", std::io::Error::last_os_error());
    }
    if pid == 0 {
        body();
        // SAFETY: end the child without running the parent's destructors.
        unsafe { libc::_exit(0) };
    }
    Ok(pid)
}

/// `fork_child` for a helper that must not outlive this process: it gets
/// SIGKILL when we die (PR_SET_PDEATHSIG), and leaves at once if we died
/// before it could ask for that.
pub fn fork_tied_child(body: impl FnOnce()) -> Result<libc::pid_t> {
    // SAFETY: getpid cannot fail.
    let parent = unsafe { libc::getpid() };
    fork_child(|| {
        // SAFETY: prctl and getppid on ourselves.
        let tied = unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == 0 && libc::getppid() == parent
        };
        if tied {
            body();
        }
    })
}

/// Kills and reaps a helper child.
pub fn reap(pid: libc::pid_t) {
    // SAFETY: signalling and waiting for our own child.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
}

/// Waits for a child and fails unless it exited with status 0.
pub fn wait_ok(pid: libc::pid_t, what: &str) -> Result<()> {
    let mut status = 0;
    // SAFETY: waiting for our own child.
    let r = unsafe { libc::waitpid(pid, &mut status, 0) };
    if r != pid || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        bail!("{what}: child failed (status {status:#x})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_and_names_resolve_in_order_without_repeats() {
        let names = |s| {
            select(s)
                .unwrap()
                .into_iter()
                .map(|o| o.name)
                .collect::<Vec<_>>()
        };
        assert_eq!(names("paper").len(), PAPER.len());
        assert_eq!(names("null,syscall")[0], "null");
        assert_eq!(
            names("null,syscall")
                .iter()
                .filter(|n| **n == "null")
                .count(),
            1
        );
        assert!(names("lmbench").len() >= 30);
        assert!(select("nosuch").is_err());
        assert!(names("lmbench").iter().all(|n| !n.starts_with("ima_")));
        assert_eq!(names("ima").len(), 11);
        // The web ops need a server: never in the lmbench set.
        assert!(!names("lmbench")
            .iter()
            .any(|n| n.starts_with("web_") || n.starts_with("build_")));
        assert_eq!(names("web"), ["web_c8", "web_c16", "web_c24", "web_c32"]);
        for op in all() {
            assert!(GROUPS.contains(&op.group), "{}", op.name);
        }
    }
}
