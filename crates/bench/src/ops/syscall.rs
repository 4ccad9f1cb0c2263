//! LMbench lat_syscall: null, read, write, stat, fstat, open/close.
use std::{
    ffi::CString,
    os::fd::{AsRawFd, OwnedFd},
};

use anyhow::{bail, Result};

use crate::op::{group, Bench, Ctx, OpDef, Unit, Work};
use crate::op_names;
use crate::sys::{
    fd::{check, owned},
    file::write_new,
};

pub fn ops() -> Vec<OpDef> {
    group(
        "syscall",
        Unit::NsPerOp,
        &[
            ("null", |_| Ok(Box::new(Null))),
            ("read", |_| Ok(Box::new(Rw::open("/dev/zero", false)?))),
            ("write", |_| Ok(Box::new(Rw::open("/dev/null", true)?))),
            (op_names::STAT, |c| Ok(Box::new(Stat::new(c)?))),
            ("fstat", |c| Ok(Box::new(Fstat::new(c)?))),
            (op_names::OPEN_CLOSE, |c| Ok(Box::new(OpenClose::new(c)?))),
        ],
    )
}

struct Null;

impl Bench for Null {
    fn run(&mut self, iters: u64) -> Result<Work> {
        for _ in 0..iters {
            // getppid is never cached by libc: a real syscall each time.
            // SAFETY: no arguments.
            if unsafe { libc::getppid() } <= 0 {
                bail!("getppid failed");
            }
        }
        Ok(Work {
            ops: iters,
            bytes: 0,
        })
    }
}

/// 1 byte from /dev/zero or to /dev/null.
struct Rw {
    fd: OwnedFd,
    write: bool,
}

impl Rw {
    fn open(path: &str, write: bool) -> Result<Self> {
        let p = CString::new(path)?;
        let flags = if write {
            libc::O_WRONLY
        } else {
            libc::O_RDONLY
        };
        // SAFETY: valid C string.
        let fd = owned(unsafe { libc::open(p.as_ptr(), flags) }, path)?;
        Ok(Self { fd, write })
    }
}

impl Bench for Rw {
    fn run(&mut self, iters: u64) -> Result<Work> {
        let (fd, mut b) = (self.fd.as_raw_fd(), [0u8; 1]);
        for _ in 0..iters {
            // SAFETY: one-byte buffer on the stack.
            let n = unsafe {
                if self.write {
                    libc::write(fd, b.as_ptr().cast(), 1)
                } else {
                    libc::read(fd, b.as_mut_ptr().cast(), 1)
                }
            };
            if n != 1 {
                bail!(
                    "1-byte {} returned {n}",
                    if self.write { "write" } else { "read" }
                );
            }
        }
        Ok(Work {
            ops: iters,
            bytes: iters,
        })
    }
}

/// A file in the work directory: path depth matters to path-based LSMs.
fn work_file(c: &Ctx) -> Result<CString> {
    let p = c.dir.join("file");
    write_new(&p, b"lsmpmon")?;
    Ok(CString::new(p.to_string_lossy().as_bytes())?)
}

struct Stat(CString);

impl Stat {
    fn new(c: &Ctx) -> Result<Self> {
        Ok(Self(work_file(c)?))
    }
}

impl Bench for Stat {
    fn run(&mut self, iters: u64) -> Result<Work> {
        // SAFETY: zeroed stat buffer, valid path.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        for _ in 0..iters {
            check(
                unsafe { libc::stat(self.0.as_ptr(), &mut st) } as i64,
                "stat",
            )?;
        }
        Ok(Work {
            ops: iters,
            bytes: 0,
        })
    }
}

struct Fstat(OwnedFd);

impl Fstat {
    fn new(c: &Ctx) -> Result<Self> {
        let p = work_file(c)?;
        // SAFETY: valid path.
        Ok(Self(owned(
            unsafe { libc::open(p.as_ptr(), libc::O_RDONLY) },
            "open",
        )?))
    }
}

impl Bench for Fstat {
    fn run(&mut self, iters: u64) -> Result<Work> {
        // SAFETY: zeroed stat buffer, our fd.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let fd = self.0.as_raw_fd();
        for _ in 0..iters {
            check(unsafe { libc::fstat(fd, &mut st) } as i64, "fstat")?;
        }
        Ok(Work {
            ops: iters,
            bytes: 0,
        })
    }
}

struct OpenClose(CString);

impl OpenClose {
    fn new(c: &Ctx) -> Result<Self> {
        Ok(Self(work_file(c)?))
    }
}

impl Bench for OpenClose {
    fn run(&mut self, iters: u64) -> Result<Work> {
        for _ in 0..iters {
            // SAFETY: valid path; the fd is closed right away.
            let fd = check(
                unsafe { libc::open(self.0.as_ptr(), libc::O_RDONLY) } as i64,
                "open",
            )?;
            check(unsafe { libc::close(fd as i32) } as i64, "close")?;
        }
        Ok(Work {
            ops: iters,
            bytes: 0,
        })
    }
}
