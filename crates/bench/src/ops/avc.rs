//! The AVC sweep (issue 25): open and close one file of each of N distinct
//! SELinux types, round-robin, so that every open asks the access vector
//! cache about a different (subject, type, file) triple. With N beyond the
//! cache's threshold (512 nodes by default) every lookup misses; with the
//! threshold raised, N nodes share the cache's slots and chains grow. The op
//! records the cache's own statistics around its run (`avc` in its result).
//!
//! The files are `<--dir>/avc-types/avc-(100000+I)`, I = 0 .. N-1: the
//! `selinux-avc` configurations' setup makes them before the run (their
//! policy labels each with its own type by a named type transition) and
//! flushes the cache; the op makes any that are missing (then they carry
//! whatever label the directory gives, and `distinct_labels` says so).
use std::{
    collections::HashSet,
    ffi::CString,
    fs,
    os::fd::{AsRawFd, OwnedFd},
    path::Path,
};

use anyhow::{Context, Result};

use crate::op::{group, Bench, Ctx, OpDef, Unit, Work};
use crate::sys::fd::{check, owned};
use model::avc::{AvcCacheStats, AvcFigures, AvcHashStats};

/// The sweep's N, as op names: avc_open_16 … avc_open_16k.
pub fn ops() -> Vec<OpDef> {
    group(
        "avc",
        Unit::NsPerOp,
        &[
            ("avc_open_16", |c| Ok(Box::new(AvcOpen::new(c, 16)?))),
            ("avc_open_256", |c| Ok(Box::new(AvcOpen::new(c, 256)?))),
            ("avc_open_1k", |c| Ok(Box::new(AvcOpen::new(c, 1024)?))),
            ("avc_open_4k", |c| Ok(Box::new(AvcOpen::new(c, 4096)?))),
            ("avc_open_16k", |c| Ok(Box::new(AvcOpen::new(c, 16384)?))),
        ],
    )
}

/// Where selinuxfs shows the AVC.
const AVC_DIR: &str = "/sys/fs/selinux/avc";
/// The file set's directory under the bench's --dir.
pub const FILES_DIR: &str = "avc-types";
/// File I is named avc-(FIRST_NAME + I): every name the same length.
pub const FIRST_NAME: u64 = 100_000;

struct AvcOpen {
    dir: OwnedFd,
    /// The directory's path (the labels are read by path).
    path: CString,
    names: Vec<CString>,
    next: usize,
    opens: u64,
    /// cache_stats before the first open (None: no SELinux AVC here).
    before: Option<AvcCacheStats>,
}

impl AvcOpen {
    fn new(c: &Ctx, types: u64) -> Result<Self> {
        let root = c.dir.parent().context("the op's directory has no parent")?;
        let files = root.join(FILES_DIR);
        fs::create_dir_all(&files).with_context(|| format!("making {}", files.display()))?;
        let names = (0..types)
            .map(|i| CString::new(format!("avc-{}", FIRST_NAME + i)))
            .collect::<Result<Vec<_>, _>>()?;
        let path = CString::new(files.as_os_str().as_encoded_bytes())?;
        // SAFETY: a valid NUL-terminated path.
        let dir = owned(
            unsafe {
                libc::open(
                    path.as_ptr(),
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
                )
            },
            "opening the AVC sweep's directory",
        )?;
        for name in &names {
            make_if_missing(&dir, name)?;
        }
        let before = read_cache_stats()?;
        let mut op = Self {
            dir,
            path,
            names,
            next: 0,
            opens: 0,
            before,
        };
        // One untimed pass over every type: the cold misses are counted in
        // the cache's figures, not in the samples (a sample of 16 384 types
        // would otherwise be mostly the first pass).
        op.run(types)?;
        Ok(op)
    }
}

/// Makes an empty file unless it exists (mknod: no open, no file_open hook).
fn make_if_missing(dir: &OwnedFd, name: &CString) -> Result<()> {
    // SAFETY: a valid directory descriptor and NUL-terminated name.
    let ret = unsafe { libc::mknodat(dir.as_raw_fd(), name.as_ptr(), libc::S_IFREG | 0o644, 0) };
    if ret < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST) {
        check(ret.into(), &format!("making {}", name.to_string_lossy()))?;
    }
    Ok(())
}

fn read_avc(file: &str) -> Result<Option<String>> {
    let path = Path::new(AVC_DIR).join(file);
    match fs::read_to_string(&path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

fn read_cache_stats() -> Result<Option<AvcCacheStats>> {
    read_avc("cache_stats")?
        .map(|t| AvcCacheStats::parse(&t).context("cache_stats: unexpected format"))
        .transpose()
}

impl AvcOpen {
    /// Distinct `security.selinux` values of the N files.
    fn distinct_labels(&self) -> Result<u64> {
        let mut seen = HashSet::new();
        let mut buf = [0u8; 256];
        for name in &self.names {
            let path = CString::new([self.path.as_bytes(), b"/", name.as_bytes()].concat())?;
            // SAFETY: a NUL-terminated path, attribute name and a buffer of its length.
            let len = unsafe {
                libc::getxattr(
                    path.as_ptr(),
                    c"security.selinux".as_ptr(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                )
            };
            let len = check(len as i64, "reading a sweep file's SELinux label")?;
            seen.insert(buf[..len as usize].to_vec());
        }
        Ok(seen.len() as u64)
    }
}

impl Bench for AvcOpen {
    fn run(&mut self, iters: u64) -> Result<Work> {
        let flags = libc::O_RDONLY | libc::O_CLOEXEC;
        for _ in 0..iters {
            let name = &self.names[self.next];
            self.next = (self.next + 1) % self.names.len();
            // SAFETY: a valid directory descriptor and NUL-terminated name.
            let fd = unsafe { libc::openat(self.dir.as_raw_fd(), name.as_ptr(), flags) };
            check(fd.into(), "open")?;
            // SAFETY: the descriptor just opened.
            check(unsafe { libc::close(fd) }.into(), "close")?;
        }
        self.opens += iters;
        Ok(Work {
            ops: iters,
            bytes: 0,
        })
    }

    /// Read before anything else touches the AVC: the labels' check after
    /// it asks about every type again.
    fn avc(&mut self) -> Result<Option<AvcFigures>> {
        let Some(before) = self.before else {
            return Ok(None);
        };
        let after = read_cache_stats()?.context("cache_stats vanished during the run")?;
        let hash = read_avc("hash_stats")?.context("no avc/hash_stats")?;
        let hash = AvcHashStats::parse(&hash).context("hash_stats: unexpected format")?;
        let threshold = read_avc("cache_threshold")?.context("no avc/cache_threshold")?;
        Ok(Some(AvcFigures {
            types: self.names.len() as u64,
            distinct_labels: self.distinct_labels()?,
            cache_threshold: threshold
                .trim()
                .parse()
                .context("cache_threshold: not a number")?,
            opens: self.opens,
            cache: before.delta(after),
            hash,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_each_file_round_robin_and_makes_the_missing_ones() {
        let root = std::env::temp_dir().join(format!("lsmpmon-avc-{}", std::process::id()));
        let dir = root.join("avc_open_16.x");
        fs::create_dir_all(&dir).unwrap();
        let ctx = Ctx {
            dir,
            mmap_bytes: 0,
            prot_exec: false,
            select_fds: 0,
            ctx_procs: 2,
            ctx_size_kib: 0,
            workload: None,
            workload_timeout_s: 1,
            workload_cgroup: None,
        };
        let mut op = AvcOpen::new(&ctx, 16).unwrap();
        assert!(root.join("avc-types/avc-100015").is_file());
        assert!(!root.join("avc-types/avc-100016").exists());
        // The untimed pass went once round.
        assert_eq!((op.next, op.opens), (0, 16));
        assert_eq!(op.run(40).unwrap().ops, 40);
        assert_eq!((op.next, op.opens), (8, 56));
        // A second op finds the files made.
        assert_eq!(AvcOpen::new(&ctx, 16).unwrap().names.len(), 16);
        fs::remove_dir_all(&root).unwrap();
    }
}
