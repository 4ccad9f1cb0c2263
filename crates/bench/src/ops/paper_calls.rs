//! The syscalls the LSMPMON paper breaks down hook by hook: `close` (its
//! Table 6, under SELinux), `creat` (Table 7, under TOMOYO) and
//! `truncate(2)` by path (Table 4's `path_truncate`). Each op times that one
//! syscall alone: the descriptors it closes are opened untimed before, and
//! those it creates are closed untimed after.
use std::{ffi::CString, os::fd::RawFd, path::PathBuf};

use anyhow::{bail, Result};

use crate::op::{group, Bench, Ctx, OpDef, Unit, Work};
use crate::sys::{
    fd::{check, nr_open},
    file::write_new,
};

pub fn ops() -> Vec<OpDef> {
    group(
        "files",
        Unit::NsPerOp,
        &[
            ("close", |c| Ok(Box::new(Close::new(c)?))),
            ("creat", |c| Ok(Box::new(Creat::new(c)?))),
            ("truncate", |c| Ok(Box::new(Truncate::new(c)?))),
        ],
    )
}

/// The descriptor limit during a `close` or `creat` sample: raised (the
/// soft limit to the hard one, and as root the hard one to the kernel's
/// `nr_open`: a guest's is 4096), and put back as it was after, so that
/// other ops and their children run with the limits they were given.
struct FdLimit {
    was: libc::rlimit,
    now: u64,
}

impl FdLimit {
    fn raise() -> Result<Self> {
        let mut was = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: a valid rlimit to fill.
        check(
            unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut was) }.into(),
            "getrlimit",
        )?;
        let nr_open = nr_open().unwrap_or(0);
        let mut want = libc::rlimit {
            rlim_cur: was.rlim_max.max(nr_open),
            rlim_max: was.rlim_max.max(nr_open),
        };
        // SAFETY: a valid rlimit; raising the hard limit needs root.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } != 0 {
            want.rlim_cur = was.rlim_max;
            want.rlim_max = was.rlim_max;
            // SAFETY: raising the soft limit to the hard one is always allowed.
            check(
                unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) }.into(),
                "setrlimit",
            )?;
        }
        Ok(Self {
            was,
            now: want.rlim_cur,
        })
    }

    /// The raised limit for a sample of `iters` new descriptors, or a
    /// refusal of one that would not fit beside those the process holds
    /// (the limit then put back at once).
    fn fit(self, op: &str, iters: u64) -> Result<Self> {
        let held = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64);
        if held + iters + SPARE_FDS > self.now {
            bail!(
                "{op}: a sample of {iters} calls needs as many open descriptors, beside the {held} held, above this process's limit of {}: raise `ulimit -Hn` or lower --sample-ms",
                self.now
            );
        }
        Ok(self)
    }
}

impl Drop for FdLimit {
    fn drop(&mut self) {
        // SAFETY: the limits as they were (root may raise them again).
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &self.was) };
    }
}

/// Descriptors left for what else the process opens meanwhile.
const SPARE_FDS: u64 = 16;

fn c_path(p: &std::path::Path) -> Result<CString> {
    Ok(CString::new(p.as_os_str().as_encoded_bytes())?)
}

fn close_all(fds: &mut Vec<RawFd>) -> Result<()> {
    let mut first_err = Ok(());
    for fd in fds.drain(..) {
        // SAFETY: a descriptor this op opened and still owns, closed once.
        let r = check(unsafe { libc::close(fd) }.into(), "close");
        if first_err.is_ok() {
            first_err = r.map(|_| ());
        }
    }
    first_err
}

/// One op = `close` of a descriptor that is the last reference to its open
/// file, so that the kernel frees the file (and its security blob) as a
/// process's close usually does.
struct Close {
    path: CString,
    file: PathBuf,
    fds: Vec<RawFd>,
    limit: Option<FdLimit>,
}

impl Close {
    fn new(c: &Ctx) -> Result<Self> {
        let file = c.dir.join("closed");
        write_new(&file, b"lsmpmon close\n")?;
        Ok(Self {
            path: c_path(&file)?,
            file,
            fds: Vec::new(),
            limit: None,
        })
    }
}

impl Bench for Close {
    fn prepare(&mut self, iters: u64) -> Result<()> {
        self.limit = Some(FdLimit::raise()?.fit("close", iters)?);
        self.fds.reserve(iters as usize);
        for _ in 0..iters {
            // SAFETY: valid path; the descriptor is kept in self.fds.
            let fd = unsafe { libc::open(self.path.as_ptr(), libc::O_RDONLY | libc::O_NOFOLLOW) };
            self.fds.push(check(fd.into(), "open")? as RawFd);
        }
        Ok(())
    }

    fn run(&mut self, _iters: u64) -> Result<Work> {
        let n = self.fds.len() as u64;
        close_all(&mut self.fds)?;
        Ok(Work { ops: n, bytes: 0 })
    }

    fn finish(&mut self) -> Result<()> {
        let closed = close_all(&mut self.fds);
        self.limit = None;
        closed
    }
}

impl Drop for Close {
    fn drop(&mut self) {
        let _ = close_all(&mut self.fds);
        let _ = std::fs::remove_file(&self.file);
    }
}

/// One op = `creat` of a new empty file (the syscall itself, not
/// open(O_CREAT)); the files are closed and removed untimed.
struct Creat {
    dir: PathBuf,
    names: Vec<CString>,
    fds: Vec<RawFd>,
    limit: Option<FdLimit>,
}

impl Creat {
    fn new(c: &Ctx) -> Result<Self> {
        Ok(Self {
            dir: c.dir.clone(),
            names: Vec::new(),
            fds: Vec::new(),
            limit: None,
        })
    }

    fn remove_all(&mut self) -> Result<()> {
        let closed = close_all(&mut self.fds);
        for n in &self.names {
            // SAFETY: valid path.
            check(unsafe { libc::unlink(n.as_ptr()) }.into(), "unlink")?;
        }
        self.names.clear();
        closed
    }
}

impl Bench for Creat {
    fn prepare(&mut self, iters: u64) -> Result<()> {
        self.limit = Some(FdLimit::raise()?.fit("creat", iters)?);
        self.fds.reserve(iters as usize);
        self.names = (0..iters)
            .map(|i| c_path(&self.dir.join(format!("c{i}"))))
            .collect::<Result<_>>()?;
        Ok(())
    }

    fn run(&mut self, _iters: u64) -> Result<Work> {
        for n in &self.names[self.fds.len()..] {
            // SAFETY: valid path; the descriptor is kept in self.fds.
            let fd = unsafe { libc::syscall(libc::SYS_creat, n.as_ptr(), 0o644 as libc::c_uint) };
            self.fds.push(check(fd, "creat")? as RawFd);
        }
        Ok(Work {
            ops: self.fds.len() as u64,
            bytes: 0,
        })
    }

    fn finish(&mut self) -> Result<()> {
        // Only files this op made are removed: a name it could not create
        // (the error above) is not in fds, and unlink would report it.
        self.names.truncate(self.fds.len());
        let removed = self.remove_all();
        self.limit = None;
        removed?;
        if std::fs::read_dir(&self.dir)?.next().is_some() {
            bail!("files left behind in {}", self.dir.display());
        }
        Ok(())
    }
}

impl Drop for Creat {
    fn drop(&mut self) {
        self.names.truncate(self.fds.len());
        let _ = self.remove_all();
    }
}

/// One op = `truncate(2)` by path, the file's size alternating between 0
/// and one page, so that every call changes the inode.
struct Truncate {
    path: CString,
    file: PathBuf,
    calls: u64,
}

const TRUNCATE_BYTES: i64 = 4096;

impl Truncate {
    fn new(c: &Ctx) -> Result<Self> {
        let file = c.dir.join("truncated");
        write_new(&file, &[])?;
        Ok(Self {
            path: c_path(&file)?,
            file,
            calls: 0,
        })
    }
}

impl Bench for Truncate {
    fn run(&mut self, iters: u64) -> Result<Work> {
        for _ in 0..iters {
            let len = TRUNCATE_BYTES * ((self.calls + 1) % 2) as i64;
            // SAFETY: valid path.
            check(
                unsafe { libc::truncate(self.path.as_ptr(), len) }.into(),
                "truncate",
            )?;
            self.calls += 1;
        }
        Ok(Work {
            ops: iters,
            bytes: 0,
        })
    }

    fn finish(&mut self) -> Result<()> {
        // Proof of work: the size the last call set.
        let want = TRUNCATE_BYTES * (self.calls % 2) as i64;
        let got = std::fs::metadata(&self.file)?.len() as i64;
        if got != want {
            bail!(
                "truncate: the file is {got} bytes after {} calls, not {want}",
                self.calls
            );
        }
        Ok(())
    }
}

impl Drop for Truncate {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}
