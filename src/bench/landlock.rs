//! `--landlock`: run the operations inside a Landlock ruleset, a real secure
//! OS on any host where the LSM is active. The ruleset is proved to enforce
//! (a denied file creation) before anything is measured.
use std::{ffi::CString, os::fd::AsRawFd, path::Path};

use crate::base::error::usage;
use crate::model::bench::LandlockInfo;
use anyhow::{bail, Result};

const SYS_CREATE_RULESET: libc::c_long = 444;
const SYS_ADD_RULE: libc::c_long = 445;
const SYS_RESTRICT_SELF: libc::c_long = 446;
const CREATE_RULESET_VERSION: u32 = 1;
const RULE_PATH_BENEATH: u32 = 1;

const EXECUTE: u64 = 1 << 0;
const WRITE_FILE: u64 = 1 << 1;
const READ_FILE: u64 = 1 << 2;
const READ_DIR: u64 = 1 << 3;

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
}

#[repr(C, packed)]
struct PathBeneath {
    allowed_access: u64,
    parent_fd: i32,
}

/// All filesystem rights the kernel's Landlock ABI knows.
fn handled_for(abi: u32) -> u64 {
    let mut bits = (1u64 << 13) - 1; // ABI 1: EXECUTE .. MAKE_SYM
    if abi >= 2 {
        bits |= 1 << 13; // REFER
    }
    if abi >= 3 {
        bits |= 1 << 14; // TRUNCATE
    }
    if abi >= 5 {
        bits |= 1 << 15; // IOCTL_DEV
    }
    bits
}

fn add_rule(ruleset: i32, path: &Path, access: u64) -> Result<()> {
    let Ok(dir) = std::fs::File::open(path) else {
        return Ok(()); // absent on this system: nothing to allow
    };
    let attr = PathBeneath {
        allowed_access: access,
        parent_fd: dir.as_raw_fd(),
    };
    // SAFETY: valid ruleset fd and attribute.
    let r = unsafe {
        libc::syscall(
            SYS_ADD_RULE,
            ruleset,
            RULE_PATH_BENEATH,
            &attr as *const PathBeneath,
            0,
        )
    };
    if r < 0 {
        bail!(
            "landlock_add_rule {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// Confines this process (and what it forks) to `work_dir` plus read and
/// execute access to the system, then proves a write elsewhere is denied.
pub fn enter(work_dir: &Path) -> Result<LandlockInfo> {
    // SAFETY: version query: NULL attribute, size 0.
    let abi = unsafe {
        libc::syscall(
            SYS_CREATE_RULESET,
            std::ptr::null::<RulesetAttr>(),
            0,
            CREATE_RULESET_VERSION,
        )
    };
    if abi < 0 {
        return Err(usage(format!(
            "--landlock: Landlock is not available here ({}): boot with lsm=...,landlock",
            std::io::Error::last_os_error()
        )));
    }
    let abi = abi as u32;
    let handled = handled_for(abi);
    let attr = RulesetAttr {
        handled_access_fs: handled,
    };
    // SAFETY: valid attribute of the ABI 1 size.
    let ruleset = unsafe {
        libc::syscall(
            SYS_CREATE_RULESET,
            &attr as *const RulesetAttr,
            std::mem::size_of::<RulesetAttr>(),
            0,
        )
    } as i32;
    if ruleset < 0 {
        bail!(
            "landlock_create_ruleset: {}",
            std::io::Error::last_os_error()
        );
    }
    let read_exec = EXECUTE | READ_FILE | READ_DIR;
    add_rule(ruleset, work_dir, handled)?;
    for sys in [
        "/bin", "/sbin", "/usr", "/lib", "/lib64", "/etc", "/proc", "/sys",
    ] {
        add_rule(ruleset, Path::new(sys), read_exec)?;
    }
    // lsmpmon itself, wherever it lies: the fork ops' helper is lsmpmon re-executed.
    if let Ok(exe) = std::env::current_exe() {
        add_rule(ruleset, &exe, EXECUTE | READ_FILE)?;
    }
    add_rule(
        ruleset,
        Path::new("/dev"),
        READ_FILE | WRITE_FILE | READ_DIR | (handled & (1 << 15)),
    )?;
    // SAFETY: plain prctl and syscalls on our own ruleset.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            bail!("PR_SET_NO_NEW_PRIVS: {}", std::io::Error::last_os_error());
        }
        if libc::syscall(SYS_RESTRICT_SELF, ruleset, 0) != 0 {
            bail!(
                "landlock_restrict_self: {}",
                std::io::Error::last_os_error()
            );
        }
        libc::close(ruleset);
    }
    // Proof: creating a file next to the work directory must be denied.
    let outside = work_dir
        .parent()
        .unwrap_or(Path::new("/"))
        .join(format!("lsmpmon-landlock-probe-{}", std::process::id()));
    let c = CString::new(outside.to_string_lossy().as_bytes())?;
    // SAFETY: valid path.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_WRONLY,
            0o600,
        )
    };
    if fd >= 0 {
        // SAFETY: our fd.
        unsafe { libc::close(fd) };
        let _ = std::fs::remove_file(&outside);
        bail!(
            "Landlock did not enforce: {} could be created",
            outside.display()
        );
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() != Some(libc::EACCES) {
        bail!(
            "Landlock proof inconclusive: creating {} failed with {err}, not EACCES",
            outside.display()
        );
    }
    Ok(LandlockInfo {
        abi,
        handled_access_fs: handled,
        proof: format!("creating {} was denied (EACCES)", outside.display()),
    })
}
