//! The syscalls the LSMPMON paper breaks down hook by hook: `close` (its
//! Table 6, under SELinux), `creat` (Table 7, under TOMOYO) and
//! `truncate(2)` by path (Table 4's `path_truncate`). Each op times that one
//! syscall alone: the descriptors it closes are opened untimed before, and
//! those it creates are closed untimed after, a batch at a time
//! (`BATCH_CALLS`, or what the descriptor limit leaves room for).
use std::{ffi::CString, os::fd::RawFd, path::PathBuf};

use anyhow::{bail, Context, Result};

use crate::op::{group, Bench, Ctx, OpDef, Unit, Work};
use crate::sys::{
    fd::check,
    fd_limit::{self, Raised},
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

/// The calls of one timed batch of `close` and `creat`, which hold a
/// descriptor per call until the batch ends: the same on every machine
/// whose descriptor limit has room for it (a non-root user's default of
/// 1 024 has). What one call costs depends on the batch it is made in (the
/// descriptors and files the process holds, the slabs the batch's files
/// came from, the directory's size): a fixed batch keeps the limit,
/// --sample-ms and the op's own speed out of the figure.
const BATCH_CALLS: u64 = 512;

/// The batches of one op: their size and whether a smaller one was said.
struct Batches {
    op: &'static str,
    noted: bool,
}

impl Batches {
    fn new(op: &'static str) -> Self {
        Self { op, noted: false }
    }

    /// The calls of the next batch, `BATCH_CALLS` or what the limit leaves
    /// room for (said once).
    fn limit(&mut self) -> Result<Option<u64>> {
        let n = fd_limit::batch_calls(self.op, BATCH_CALLS)?;
        if n < BATCH_CALLS && !std::mem::replace(&mut self.noted, true) {
            base::say!(
                "bench: {} times batches of {n} calls, not {BATCH_CALLS}: the descriptor limit leaves no more room; compare its figure only with others of {n} (batch_calls)",
                self.op
            );
        }
        Ok(Some(n))
    }

    /// `iters` as whole batches, at least one: every timed call is made in
    /// a batch of the same size.
    fn whole(&self, iters: u64) -> u64 {
        match fd_limit::batch_calls(self.op, BATCH_CALLS) {
            Ok(n) => iters.div_ceil(n).max(1) * n,
            // Said when the batch is asked for.
            Err(_) => iters,
        }
    }
}

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
    batches: Batches,
    raised: Option<Raised>,
}

impl Close {
    fn new(c: &Ctx) -> Result<Self> {
        let file = c.dir.join("closed");
        write_new(&file, b"lsmpmon close\n")?;
        Ok(Self {
            path: c_path(&file)?,
            file,
            fds: Vec::new(),
            batches: Batches::new("close"),
            raised: None,
        })
    }
}

impl Bench for Close {
    fn batch_limit(&mut self) -> Result<Option<u64>> {
        self.batches.limit()
    }

    fn whole_iterations(&self, iters: u64) -> u64 {
        self.batches.whole(iters)
    }

    fn prepare(&mut self, iters: u64) -> Result<()> {
        self.raised = fd_limit::fit(iters).context("close")?;
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
        self.raised = None;
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
    batches: Batches,
    raised: Option<Raised>,
}

impl Creat {
    fn new(c: &Ctx) -> Result<Self> {
        Ok(Self {
            dir: c.dir.clone(),
            names: Vec::new(),
            fds: Vec::new(),
            batches: Batches::new("creat"),
            raised: None,
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
    fn batch_limit(&mut self) -> Result<Option<u64>> {
        self.batches.limit()
    }

    fn whole_iterations(&self, iters: u64) -> u64 {
        self.batches.whole(iters)
    }

    fn prepare(&mut self, iters: u64) -> Result<()> {
        self.raised = fd_limit::fit(iters).context("creat")?;
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
        self.raised = None;
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
