//! The integrity-measurement paper's microbenchmarks (its Tables 1-3):
//! mmap + munmap with PROT_EXEC (IMA's MMAP_CHECK) and open + read + close
//! (FILE_CHECK, modern IMA's user-level measurement) of a small file that IMA
//! finds measured and clean (`cached`), changed since its measurement
//! (`rehash`: hashed again, its digest already listed, nothing extended) or
//! new (`extend`: hashed, a new list entry, PCR 10 extended when there is a
//! TPM); and `rehash` by file size (the hashing cost).
//!
//! Each op is timed alone, so that making the file dirty or new before it
//! stays outside the timed region. Under a configuration without an IMA
//! policy the same ops are the reference.
use std::{
    ffi::CString,
    os::fd::{AsRawFd, IntoRawFd, OwnedFd},
    os::unix::ffi::OsStrExt,
    path::{Path, PathBuf},
    time::Instant,
};

use anyhow::{bail, Context, Result};

use crate::clock::{clock_overhead_ns, with_one_clock_pair};
use crate::op::{group, Bench, Ctx, OpDef, Unit, Work};
use crate::op_names;
use crate::sys::fd::{check, owned};

/// Where IMA counts its measurement-list entries (absent without IMA).
const LIST_COUNT: &str = "/sys/kernel/security/ima/runtime_measurements_count";
const PCR10: &str = "/sys/class/tpm/tpm0/pcr-sha256/10";
/// The paper's file for Tables 1 and 2.
const SMALL_FILE_BYTES: usize = 2;

pub fn ops() -> Vec<OpDef> {
    use Access::{Mmap, Read};
    use Case::{Cached, Extend, Rehash};
    group(
        "ima",
        Unit::NsPerOp,
        &[
            (op_names::IMA_MMAP_CACHED, |c| small(c, Mmap, Cached)),
            (op_names::IMA_MMAP_REHASH, |c| small(c, Mmap, Rehash)),
            (op_names::IMA_MMAP_EXTEND, |c| small(c, Mmap, Extend)),
            (op_names::IMA_READ_CACHED, |c| small(c, Read, Cached)),
            (op_names::IMA_READ_REHASH, |c| small(c, Read, Rehash)),
            (op_names::IMA_READ_EXTEND, |c| small(c, Read, Extend)),
            (op_names::IMA_HASH_512, |c| make(c, Mmap, Rehash, 512)),
            (op_names::IMA_HASH_1K, |c| make(c, Mmap, Rehash, 1 << 10)),
            (op_names::IMA_HASH_16K, |c| make(c, Mmap, Rehash, 16 << 10)),
            (op_names::IMA_HASH_128K, |c| {
                make(c, Mmap, Rehash, 128 << 10)
            }),
            (op_names::IMA_HASH_1M, |c| make(c, Mmap, Rehash, 1 << 20)),
        ],
    )
}

/// File sizes of the hashing table with their ops (2 B is `ima_mmap_rehash`).
pub const HASH_SIZES: &[(&str, usize)] = &[
    (op_names::IMA_MMAP_REHASH, SMALL_FILE_BYTES),
    (op_names::IMA_HASH_512, 512),
    (op_names::IMA_HASH_1K, 1 << 10),
    (op_names::IMA_HASH_16K, 16 << 10),
    (op_names::IMA_HASH_128K, 128 << 10),
    (op_names::IMA_HASH_1M, 1 << 20),
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Access {
    /// mmap + munmap, PROT_EXEC, MAP_PRIVATE.
    Mmap,
    /// open O_RDONLY + read the whole file + close.
    Read,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Case {
    Cached,
    Rehash,
    Extend,
}

/// An op on the paper's small file.
fn small(c: &Ctx, access: Access, case: Case) -> Result<Box<dyn Bench>> {
    make(c, access, case, SMALL_FILE_BYTES)
}

fn make(c: &Ctx, access: Access, case: Case, size_bytes: usize) -> Result<Box<dyn Bench>> {
    let mut b = Ima {
        dir: c.dir.clone(),
        access,
        case,
        data: (0..size_bytes).map(|i| b'a' + (i % 26) as u8).collect(),
        fd: None,
        path: PathBuf::new(),
        seq: 0,
        clock_ns: clock_overhead_ns(),
        timed_ns: 0.0,
    };
    if case != Case::Extend {
        // One file, measured once now: cached stays clean, rehash dirties it.
        b.path = b.dir.join(name(0));
        b.create()?;
        b.access_once()?;
    }
    Ok(Box::new(b))
}

/// Fixed-width names: every case looks up a name of the same length.
fn name(seq: u64) -> String {
    format!("m{seq:09}")
}

struct Ima {
    dir: PathBuf,
    access: Access,
    case: Case,
    data: Vec<u8>,
    /// Mmap ops: the file open O_RDWR. Not O_RDONLY: with a `measure
    /// func=FILE_CHECK mask=MAY_READ` rule that open would measure the file
    /// itself, before the mmap under test.
    fd: Option<OwnedFd>,
    path: PathBuf,
    seq: u64,
    /// One pair of clock reads, included in every op's own timing.
    clock_ns: f64,
    timed_ns: f64,
}

impl Ima {
    /// `path` as a new file holding `data`; for mmap ops it stays open read-write.
    fn create(&mut self) -> Result<()> {
        let p = cpath(&self.path)?;
        let flags = libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        let fd = match self.access {
            Access::Mmap => libc::O_RDWR,
            Access::Read => libc::O_WRONLY,
        };
        // SAFETY: valid path; the fd is kept in self or closed below.
        let fd = owned(
            unsafe { libc::open(p.as_ptr(), flags | fd, 0o600) },
            "create",
        )?;
        self.write_all(&fd)?;
        match self.access {
            Access::Mmap => self.fd = Some(fd),
            Access::Read => close(fd)?,
        }
        Ok(())
    }

    fn write_all(&self, fd: &OwnedFd) -> Result<()> {
        // SAFETY: our buffer and fd.
        let w = unsafe {
            libc::pwrite(
                fd.as_raw_fd(),
                self.data.as_ptr().cast(),
                self.data.len(),
                0,
            )
        };
        if w != self.data.len() as isize {
            bail!("short write of a {} byte file ({w})", self.data.len());
        }
        Ok(())
    }

    /// Rewrites the same bytes and closes the last writer: IMA forgets
    /// that the file was measured, but its digest will be the same.
    fn dirty(&mut self) -> Result<()> {
        let p = cpath(&self.path)?;
        let fd = match self.fd.take() {
            Some(fd) => fd,
            // SAFETY: valid path; closed below.
            None => owned(
                unsafe {
                    libc::open(
                        p.as_ptr(),
                        libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                    )
                },
                "open for writing",
            )?,
        };
        self.write_all(&fd)?;
        close(fd)?;
        if self.access == Access::Mmap {
            // SAFETY: valid path; the fd is kept in self.
            let fd = unsafe {
                libc::open(
                    p.as_ptr(),
                    libc::O_RDWR | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                )
            };
            self.fd = Some(owned(fd, "reopen")?);
        }
        Ok(())
    }

    /// The measured access, untimed.
    fn access_once(&mut self) -> Result<()> {
        match self.access {
            Access::Mmap => self.map_unmap(),
            Access::Read => self.open_read_close(),
        }
    }

    fn map_unmap(&mut self) -> Result<()> {
        let fd = self.fd.as_ref().context("no file open to map")?.as_raw_fd();
        let len = self.data.len();
        // SAFETY: a private mapping of our fd, unmapped right away.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_EXEC,
                libc::MAP_PRIVATE,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            bail!("mmap PROT_EXEC: {}", std::io::Error::last_os_error());
        }
        // SAFETY: the mapping made above.
        check(unsafe { libc::munmap(p, len) } as i64, "munmap")?;
        Ok(())
    }

    fn open_read_close(&mut self) -> Result<()> {
        let p = cpath(&self.path)?;
        let mut buf = [0u8; SMALL_FILE_BYTES];
        // SAFETY: valid path; closed below.
        let fd = owned(
            unsafe {
                libc::open(
                    p.as_ptr(),
                    libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                )
            },
            "open for reading",
        )?;
        // SAFETY: our buffer and fd.
        let r = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        close(fd)?;
        if r != self.data.len() as isize || buf[..] != self.data[..] {
            bail!(
                "read {r} bytes of a {} byte file, or other bytes",
                self.data.len()
            );
        }
        Ok(())
    }

    /// Before one op, untimed: a dirty file (rehash) or a new one (extend).
    fn before_op(&mut self) -> Result<()> {
        match self.case {
            Case::Cached => Ok(()),
            Case::Rehash => self.dirty(),
            Case::Extend => {
                self.seq += 1;
                self.path = self.dir.join(name(self.seq));
                self.create()
            }
        }
    }

    /// After one op, untimed: a new file goes (its list entry stays).
    fn after_op(&mut self) -> Result<()> {
        if self.case == Case::Extend {
            if let Some(fd) = self.fd.take() {
                close(fd)?;
            }
            std::fs::remove_file(&self.path)
                .with_context(|| format!("removing {}", self.path.display()))?;
        }
        Ok(())
    }

    /// Proof of work: the list entries `iters` ops added are what the case
    /// implies, and a TPM saw them.
    fn check_list(&self, iters: u64, before: &ListState) -> Result<()> {
        let after = ListState::read();
        let (Some(a), Some(b)) = (after.entries, before.entries) else {
            return Ok(()); // no IMA in this kernel
        };
        let added = a.saturating_sub(b);
        let want_ok = match self.case {
            Case::Cached | Case::Rehash => added == 0,
            // Without a measure policy nothing is listed; with one, every op.
            Case::Extend => added == 0 || added == iters,
        };
        if !want_ok {
            bail!(
                "IMA listed {added} new measurement(s) over {iters} {:?} op(s): not what the case means (a violation entry, or a policy that does not measure these files)",
                self.case
            );
        }
        check_pcr10(before, &after, added)
    }
}

/// With a TPM: it still answers, and `added` new entries changed PCR 10.
pub(super) fn check_pcr10(before: &ListState, after: &ListState, added: u64) -> Result<()> {
    if before.pcr10.is_some() && after.pcr10.is_none() {
        bail!("PCR 10 can no longer be read: the TPM stopped answering");
    }
    if added > 0 && before.pcr10.is_some() && before.pcr10 == after.pcr10 {
        bail!("IMA listed {added} new measurement(s) but PCR 10 did not change");
    }
    Ok(())
}

impl Bench for Ima {
    fn run(&mut self, iters: u64) -> Result<Work> {
        let before = ListState::read();
        let mut timed_ns = 0.0;
        for _ in 0..iters {
            self.before_op()?;
            let t = Instant::now();
            self.access_once()?;
            timed_ns += t.elapsed().as_nanos() as f64;
            self.after_op()?;
        }
        self.check_list(iters, &before)?;
        self.timed_ns = with_one_clock_pair(timed_ns, iters, self.clock_ns);
        Ok(Work {
            ops: iters,
            bytes: iters * self.data.len() as u64,
        })
    }

    fn child_timed_ns(&self) -> Option<f64> {
        Some(self.timed_ns)
    }
}

impl Drop for Ima {
    fn drop(&mut self) {
        self.fd = None;
        if self.case != Case::Extend {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// IMA's entry count and PCR 10, where they exist.
pub(super) struct ListState {
    pub(super) entries: Option<u64>,
    pub(super) pcr10: Option<String>,
}

impl ListState {
    pub(super) fn read() -> Self {
        Self {
            entries: std::fs::read_to_string(LIST_COUNT)
                .ok()
                .and_then(|s| s.trim().parse().ok()),
            pcr10: std::fs::read_to_string(PCR10)
                .ok()
                .map(|s| s.trim().to_string()),
        }
    }
}

pub(super) fn cpath(p: &Path) -> Result<CString> {
    Ok(CString::new(p.as_os_str().as_bytes())?)
}

/// Closes `fd` now, checked: closing the last writer is when IMA forgets
/// a measurement, so a failed close would leave the case unproved.
pub(super) fn close(fd: OwnedFd) -> Result<()> {
    // SAFETY: the descriptor is ours and not used after.
    check(unsafe { libc::close(fd.into_raw_fd()) } as i64, "close")?;
    Ok(())
}
