//! LMbench lat_fs (create and delete N files of 0 or 10 KB, time per file)
//! and Unixbench fstime (read, write, or both, of a file by buffer size).
use std::{
    ffi::CString,
    os::fd::{AsRawFd, OwnedFd},
    path::PathBuf,
};

use anyhow::{bail, Result};

use crate::op::{group, Bench, Ctx, OpDef, Unit, Work};
use crate::op_names;
use crate::sys::{
    fd::check,
    file::{open_nofollow, write_new},
};

pub fn ops() -> Vec<OpDef> {
    group(
        "files",
        Unit::NsPerOp,
        &[
            (op_names::CREATE_0K, |c| Ok(Box::new(Fs::new(c, 0, false)))),
            ("delete_0k", |c| Ok(Box::new(Fs::new(c, 0, true)))),
            ("create_10k", |c| Ok(Box::new(Fs::new(c, 10 * 1024, false)))),
            ("delete_10k", |c| Ok(Box::new(Fs::new(c, 10 * 1024, true)))),
            ("read_256", |c| Ok(Box::new(FileRw::new(c, 256, Rw::Read)?))),
            ("read_1k", |c| Ok(Box::new(FileRw::new(c, 1024, Rw::Read)?))),
            ("read_4k", |c| Ok(Box::new(FileRw::new(c, 4096, Rw::Read)?))),
            ("write_256", |c| {
                Ok(Box::new(FileRw::new(c, 256, Rw::Write)?))
            }),
            ("write_1k", |c| {
                Ok(Box::new(FileRw::new(c, 1024, Rw::Write)?))
            }),
            ("write_4k", |c| {
                Ok(Box::new(FileRw::new(c, 4096, Rw::Write)?))
            }),
            ("rw_256", |c| Ok(Box::new(FileRw::new(c, 256, Rw::Both)?))),
            ("rw_1k", |c| Ok(Box::new(FileRw::new(c, 1024, Rw::Both)?))),
            ("rw_4k", |c| Ok(Box::new(FileRw::new(c, 4096, Rw::Both)?))),
        ],
    )
}

struct Fs {
    dir: PathBuf,
    size: usize,
    /// Timed part is the deletion (files made in prepare), else the creation.
    delete: bool,
    names: Vec<CString>,
    data: Vec<u8>,
}

impl Fs {
    fn new(c: &Ctx, size: usize, delete: bool) -> Self {
        Self {
            dir: c.dir.clone(),
            size,
            delete,
            names: Vec::new(),
            data: vec![0x5a; size],
        }
    }

    fn create_all(&self) -> Result<()> {
        for n in &self.names {
            // SAFETY: valid path; fd closed right away.
            let fd = check(
                unsafe {
                    libc::open(
                        n.as_ptr(),
                        libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_WRONLY,
                        0o644,
                    )
                } as i64,
                "create",
            )? as i32;
            let written = write_all(fd, &self.data);
            // SAFETY: our descriptor, closed once.
            let closed = check(unsafe { libc::close(fd) } as i64, "close");
            written.and(closed)?;
        }
        Ok(())
    }

    fn delete_all(&self) -> Result<()> {
        for n in &self.names {
            // SAFETY: valid path.
            check(unsafe { libc::unlink(n.as_ptr()) } as i64, "unlink")?;
        }
        Ok(())
    }
}

/// Writes all of `data` to `fd`; the error names its cause (ENOSPC on a
/// full disk, which a first short write does not report).
fn write_all(fd: libc::c_int, data: &[u8]) -> Result<()> {
    let mut done = 0;
    while done < data.len() {
        // SAFETY: writing the rest of our buffer.
        let w = unsafe { libc::write(fd, data[done..].as_ptr().cast(), data.len() - done) };
        if w <= 0 {
            bail!(
                "writing a {} byte file: {} after {done} bytes",
                data.len(),
                std::io::Error::last_os_error()
            );
        }
        done += w as usize;
    }
    Ok(())
}

impl Bench for Fs {
    fn prepare(&mut self, iters: u64) -> Result<()> {
        self.names = (0..iters)
            .map(|i| CString::new(self.dir.join(format!("f{i}")).to_string_lossy().as_bytes()))
            .collect::<Result<_, _>>()?;
        if self.delete {
            self.create_all()?;
        }
        Ok(())
    }

    fn run(&mut self, iters: u64) -> Result<Work> {
        if self.delete {
            self.delete_all()?;
        } else {
            self.create_all()?;
        }
        Ok(Work {
            ops: iters,
            bytes: iters * self.size as u64,
        })
    }

    fn finish(&mut self) -> Result<()> {
        if !self.delete {
            self.delete_all()?;
        }
        // Proof of work: the directory is empty again.
        if std::fs::read_dir(&self.dir)?.next().is_some() {
            bail!("files left behind in {}", self.dir.display());
        }
        Ok(())
    }
}

/// Reads then writes `buf` bytes at a time over a 1 MiB file (fstime).
/// What one op of `FileRw` does at its offset.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rw {
    /// A pread (Unixbench's read column).
    Read,
    /// A pwrite (its write column).
    Write,
    /// A pread then a pwrite: `rw_*`, as the atlas measured before the two
    /// were apart.
    Both,
}

struct FileRw {
    fd: OwnedFd,
    buf: Vec<u8>,
    path: PathBuf,
    rw: Rw,
}

const RW_FILE_BYTES: usize = 1 << 20;

impl FileRw {
    fn new(c: &Ctx, buf: usize, rw: Rw) -> Result<Self> {
        let path = c.dir.join(format!("rw{buf}"));
        write_new(&path, &vec![0x33u8; RW_FILE_BYTES])?;
        let fd = open_nofollow(&path, libc::O_RDWR)?;
        Ok(Self {
            fd,
            buf: vec![0u8; buf],
            path,
            rw,
        })
    }
}

impl Bench for FileRw {
    /// One op = a read, a write, or both, of the buffer size, walking
    /// the 1 MiB file.
    fn run(&mut self, iters: u64) -> Result<Work> {
        let len = self.buf.len();
        let per_file = (RW_FILE_BYTES / len) as u64;
        let fd = self.fd.as_raw_fd();
        let (read, write) = (self.rw != Rw::Write, self.rw != Rw::Read);
        for i in 0..iters {
            let off = ((i % per_file) * len as u64) as i64;
            // SAFETY: buffer of len bytes; our fd.
            let r = match read {
                true => unsafe { libc::pread(fd, self.buf.as_mut_ptr().cast(), len, off) },
                false => len as isize,
            };
            // SAFETY: as above.
            let w = match write {
                true => unsafe { libc::pwrite(fd, self.buf.as_ptr().cast(), len, off) },
                false => len as isize,
            };
            if r != len as isize || w != len as isize {
                bail!("short read/write of {len} bytes ({r}, {w})");
            }
        }
        Ok(Work {
            ops: iters,
            bytes: iters * (read as u64 + write as u64) * len as u64,
        })
    }
}

impl Drop for FileRw {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
