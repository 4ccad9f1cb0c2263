//! The integrity-measurement paper's kernel-module measurement: loading a
//! small module of the kernel's own package (`TEST_MODULE_DIR`), timed, and
//! unloading it, untimed. Two ways in:
//! - `finit_module` of a file: IMA's MODULE_CHECK measures the file and keeps
//!   that it did, as for mmap: `cached` (clean, measured), `rehash`
//!   (rewritten with the same bytes) and `extend` (new bytes each op);
//! - `init_module` of a buffer, the paper's way ("measured before
//!   relocation… no clean hits but only the cases SHA1 or SHA1+extend"):
//!   where IMA measures it (a CRITICAL_DATA rule, label `modules`), every
//!   load hashes the buffer; `buffer_rehash` loads the same bytes (digest
//!   already listed), `buffer_extend` new bytes each op.
//!
//! Every load takes the module without its signature and with an 8-byte
//! tag appended (the op's sequence number, from the boot's nanoseconds when
//! the op was made, so that no two ops load the same bytes): only the tag
//! differs between the extend ops' loads. The kernel loads a module without
//! a signature when it does not enforce them (Debian's, booted without
//! Secure Boot).
//!
//! The module files are owned by `MODULE_FILE_OWNER`: opening one to read
//! it would otherwise be measured by a `FILE_CHECK mask=MAY_READ` rule
//! before finit_module, which would then find it measured. lsmpmon's IMA
//! policies exclude that owner from FILE_CHECK.
use std::{
    ffi::CString,
    os::fd::{AsRawFd, OwnedFd},
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    time::Instant,
};

use anyhow::{bail, Context, Result};

use super::ima::{check_pcr10, close, cpath, ListState};
use crate::clock::{clock_overhead_ns, with_one_clock_pair};
use crate::op::{group, Bench, Ctx, OpDef, Unit, Work};
use crate::op_names;
use crate::sys::fd::{check, owned};
use model::provenance::TEST_MODULE_DIR;

/// The owner of the module files (IMA's `fowner=`), no one else's uid.
pub const MODULE_FILE_OWNER: u32 = 4242;
/// What the kernel appends to a signed module, last.
const SIG_MARKER: &[u8] = b"~Module signature appended~\n";
/// `struct module_signature`, between the signature and the marker; its
/// last 4 bytes are the signature's length, big-endian.
const SIG_INFO_BYTES: usize = 12;

pub fn ops() -> Vec<OpDef> {
    use Case::{Cached, Extend, Rehash};
    use Way::{Buffer, File};
    group(
        "ima",
        Unit::NsPerOp,
        &[
            (op_names::IMA_MODULE_CACHED, |c| make(c, File, Cached)),
            (op_names::IMA_MODULE_REHASH, |c| make(c, File, Rehash)),
            (op_names::IMA_MODULE_EXTEND, |c| make(c, File, Extend)),
            (op_names::IMA_MODULE_BUFFER_REHASH, |c| {
                make(c, Buffer, Rehash)
            }),
            (op_names::IMA_MODULE_BUFFER_EXTEND, |c| {
                make(c, Buffer, Extend)
            }),
        ],
    )
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Way {
    /// finit_module of a file (MODULE_CHECK).
    File,
    /// init_module of a buffer (CRITICAL_DATA, label `modules`).
    Buffer,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Case {
    Cached,
    Rehash,
    Extend,
}

struct Module {
    dir: PathBuf,
    way: Way,
    case: Case,
    /// The unsigned module, then the 8-byte tag.
    bytes: Vec<u8>,
    name: CString,
    /// The file finit_module loads (File).
    path: PathBuf,
    /// The op's sequence number, the tag of its next load.
    seq: u64,
    /// A load succeeded and its unload has not: `Drop` unloads it, so that
    /// an op that failed midway leaves the next op a kernel without it.
    loaded: bool,
    /// Whether the first load added a measurement: IMA measures this way in.
    measured: bool,
    clock_ns: f64,
    timed_ns: f64,
}

fn make(c: &Ctx, way: Way, case: Case) -> Result<Box<dyn Bench>> {
    let (file, signed) = test_module()?;
    let mut bytes = unsigned(&signed).to_vec();
    bytes.extend_from_slice(&0u64.to_le_bytes());
    let seq = first_seq();
    let mut m = Module {
        dir: c.dir.clone(),
        way,
        case,
        bytes,
        name: module_name(&file)?,
        path: c.dir.join(file_name(seq)),
        seq,
        loaded: false,
        measured: false,
        clock_ns: clock_overhead_ns(),
        timed_ns: 0.0,
    };
    m.tag();
    if way == Way::File {
        m.write_file(true)?;
        m.refuse_measure_at_open()?;
    }
    // The first load is measured where a policy says so; every later one
    // is then the case's.
    let before = ListState::read();
    m.timed_load()?;
    m.unload()?;
    m.measured = ListState::read().entries > before.entries;
    Ok(Box::new(m))
}

/// The one `.ko` in the guest's test-module directory and its bytes.
fn test_module() -> Result<(PathBuf, Vec<u8>)> {
    let entries = std::fs::read_dir(TEST_MODULE_DIR).map_err(|e| {
        anyhow::anyhow!(
            "{TEST_MODULE_DIR}: {e}: this kernel has no module to load (lsmpmon keeps one from \
             a Debian kernel's modules when it fetches the kernel: kernels lsmpmon builds, bzImages \
             given by path and cache entries fetched before lsmpmon kept one have none; \
             `lsmpmon vm cache --clean --all` fetches those again)"
        )
    })?;
    let mut found = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "ko"));
    let file = found
        .next()
        .with_context(|| format!("no .ko file in {TEST_MODULE_DIR}"))?;
    let bytes = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
    Ok((file, bytes))
}

/// The module without its appended signature, if it has one.
fn unsigned(ko: &[u8]) -> &[u8] {
    let Some(rest) = ko.strip_suffix(SIG_MARKER) else {
        return ko;
    };
    let Some(info) = rest.len().checked_sub(SIG_INFO_BYTES).map(|at| &rest[at..]) else {
        return ko;
    };
    let sig_bytes = u32::from_be_bytes([info[8], info[9], info[10], info[11]]) as usize;
    match (rest.len() - SIG_INFO_BYTES).checked_sub(sig_bytes) {
        Some(end) => &rest[..end],
        None => ko,
    }
}

/// `crc-itu-t.ko` → `crc_itu_t`, the name the kernel gives the module.
fn module_name(file: &Path) -> Result<CString> {
    let stem = file
        .file_stem()
        .and_then(|s| s.to_str())
        .context("the test module's file name is not UTF-8")?;
    Ok(CString::new(stem.replace('-', "_"))?)
}

/// Fixed-width names: every case loads a path of the same length.
fn file_name(seq: u64) -> String {
    format!("module{seq:020}.ko")
}

/// CLOCK_BOOTTIME in ns.
fn first_seq() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: fills our struct.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

impl Module {
    /// Sets the tag to the op's sequence number.
    fn tag(&mut self) {
        let at = self.bytes.len() - 8;
        self.bytes[at..].copy_from_slice(&self.seq.to_le_bytes());
    }

    /// Writes `bytes` to `path` (a new file when `create`) owned by
    /// `MODULE_FILE_OWNER`, and closes it: the last writer gone, IMA
    /// measures the file again at its next load.
    fn write_file(&self, create: bool) -> Result<()> {
        let p = cpath(&self.path)?;
        let mut flags = libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        if create {
            flags |= libc::O_CREAT | libc::O_EXCL;
        }
        // SAFETY: valid path; the fd is closed below.
        let fd = owned(unsafe { libc::open(p.as_ptr(), flags, 0o600) }, "open")?;
        // SAFETY: our buffer and fd.
        let w = unsafe {
            libc::pwrite(
                fd.as_raw_fd(),
                self.bytes.as_ptr().cast(),
                self.bytes.len(),
                0,
            )
        };
        if w != self.bytes.len() as isize {
            bail!(
                "short write of the module ({w} of {} bytes)",
                self.bytes.len()
            );
        }
        if create {
            // SAFETY: our fd.
            let r = unsafe { libc::fchown(fd.as_raw_fd(), MODULE_FILE_OWNER, 0) };
            check(r as i64, "fchown")?;
            std::fs::set_permissions(&self.path, std::fs::Permissions::from_mode(0o600))?;
        }
        close(fd)
    }

    fn open_read(&self) -> Result<OwnedFd> {
        let p = cpath(&self.path)?;
        // SAFETY: valid path.
        let fd = unsafe {
            libc::open(
                p.as_ptr(),
                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        owned(fd, "open the module")
    }

    fn unload(&mut self) -> Result<()> {
        // SAFETY: a NUL-terminated name.
        let r = unsafe {
            libc::syscall(
                libc::SYS_delete_module,
                self.name.as_ptr(),
                libc::O_NONBLOCK,
            )
        };
        check(r, "delete_module").with_context(|| format!("unloading module {:?}", self.name))?;
        self.loaded = false;
        Ok(())
    }

    /// Before one op, untimed: the file rewritten (rehash) or new bytes.
    fn before_op(&mut self) -> Result<()> {
        match (self.way, self.case) {
            (_, Case::Cached) | (Way::Buffer, Case::Rehash) => Ok(()),
            (Way::File, Case::Rehash) => self.write_file(false),
            (way, Case::Extend) => {
                self.seq += 1;
                self.tag();
                if way == Way::File {
                    std::fs::remove_file(&self.path)
                        .with_context(|| format!("removing {}", self.path.display()))?;
                    self.path = self.dir.join(file_name(self.seq));
                    self.write_file(true)?;
                }
                Ok(())
            }
        }
    }

    /// One timed load: the file opened (untimed: its own hooks are not the
    /// load's) and closed again after.
    fn timed_load(&mut self) -> Result<f64> {
        let (ns, r, fd) = match self.way {
            Way::File => {
                let fd = self.open_read()?;
                let t = Instant::now();
                let r = finit_module(&fd);
                (t.elapsed().as_nanos() as f64, r, Some(fd))
            }
            Way::Buffer => {
                let t = Instant::now();
                let r = init_module(&self.bytes);
                (t.elapsed().as_nanos() as f64, r, None)
            }
        };
        r.with_context(|| format!("loading module {:?}", self.name))?;
        self.loaded = true;
        if let Some(fd) = fd {
            close(fd)?;
        }
        Ok(ns)
    }

    /// Opening a module file to read it must not measure it: with a policy
    /// that does, finit_module would find every file measured already.
    fn refuse_measure_at_open(&self) -> Result<()> {
        let before = ListState::read().entries;
        close(self.open_read()?)?;
        if ListState::read().entries > before {
            bail!(
                "IMA measured the module file when it was opened for reading: its policy needs \
                 `dont_measure func=FILE_CHECK fowner={MODULE_FILE_OWNER}` before its FILE_CHECK \
                 rules (as lsmpmon's ima configurations have)"
            );
        }
        Ok(())
    }

    /// Proof of work: the entries `iters` loads added are the case's, and a
    /// TPM saw them.
    fn check_list(&self, iters: u64, before: &ListState) -> Result<()> {
        let after = ListState::read();
        let (Some(a), Some(b)) = (after.entries, before.entries) else {
            return Ok(()); // no IMA in this kernel
        };
        let added = a.saturating_sub(b);
        let want = match self.case {
            Case::Extend if self.measured => iters,
            _ => 0,
        };
        if added != want {
            bail!(
                "IMA listed {added} new measurement(s) over {iters} {:?} {:?} load(s), not {want} \
                 (a violation entry?)",
                self.way,
                self.case
            );
        }
        check_pcr10(before, &after, added)
    }
}

fn finit_module(fd: &OwnedFd) -> Result<()> {
    let empty = c"";
    // SAFETY: our fd and an empty parameter string.
    let r = unsafe { libc::syscall(libc::SYS_finit_module, fd.as_raw_fd(), empty.as_ptr(), 0) };
    loaded(r, "finit_module")
}

fn init_module(image: &[u8]) -> Result<()> {
    let empty = c"";
    // SAFETY: our buffer, its length and an empty parameter string.
    let r = unsafe {
        libc::syscall(
            libc::SYS_init_module,
            image.as_ptr(),
            image.len(),
            empty.as_ptr(),
        )
    };
    loaded(r, "init_module")
}

fn loaded(r: libc::c_long, call: &str) -> Result<()> {
    if r == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EEXIST) => {
            bail!("{call}: {e}: the module is loaded already (by the guest's own programs?)")
        }
        Some(libc::EPERM) => {
            bail!("{call}: {e}: loading modules needs root and a kernel that allows it")
        }
        Some(libc::EKEYREJECTED) => {
            bail!("{call}: {e}: the kernel enforces module signatures; lsmpmon loads its module unsigned")
        }
        _ => bail!("{call}: {e}"),
    }
}

impl Bench for Module {
    fn run(&mut self, iters: u64) -> Result<Work> {
        let before = ListState::read();
        let mut timed_ns = 0.0;
        for _ in 0..iters {
            self.before_op()?;
            timed_ns += self.timed_load()?;
            self.unload()?;
        }
        self.check_list(iters, &before)?;
        self.timed_ns = with_one_clock_pair(timed_ns, iters, self.clock_ns);
        Ok(Work {
            ops: iters,
            bytes: iters * self.bytes.len() as u64,
        })
    }

    fn child_timed_ns(&self) -> Option<f64> {
        Some(self.timed_ns)
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        if self.loaded {
            let _ = self.unload();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_is_stripped_and_an_unsigned_module_kept_whole() {
        let body = b"\x7fELF body".to_vec();
        let sig = vec![0xaa; 300];
        let mut signed = body.clone();
        signed.extend_from_slice(&sig);
        let mut info = [0u8; SIG_INFO_BYTES];
        info[8..].copy_from_slice(&(sig.len() as u32).to_be_bytes());
        signed.extend_from_slice(&info);
        signed.extend_from_slice(SIG_MARKER);
        assert_eq!(unsigned(&signed), &body[..]);
        assert_eq!(unsigned(&body), &body[..]);
        // A length past the start: not a signature lsmpmon understands.
        let mut bad = b"x".to_vec();
        bad.extend_from_slice(&info);
        bad.extend_from_slice(SIG_MARKER);
        assert_eq!(unsigned(&bad), &bad[..]);
        assert_eq!(unsigned(SIG_MARKER), SIG_MARKER);
    }

    #[test]
    fn the_kernel_names_a_module_with_underscores() {
        let n = module_name(Path::new("/lib/lsmpmon/modules/crc-itu-t.ko")).unwrap();
        assert_eq!(n.to_str().unwrap(), "crc_itu_t");
    }
}
