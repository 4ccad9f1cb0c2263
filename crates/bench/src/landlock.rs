//! `--landlock`: run the operations inside a Landlock ruleset, a real secure
//! OS on any host where the LSM is active. The ruleset is proved to enforce
//! (a denied file creation) before anything is measured.
use std::path::Path;

use anyhow::{bail, Context, Result};
use landlock::{
    make_bitflags, Access, AccessFs, BitFlags, LandlockStatus, PathBeneath, PathFd,
    RestrictionStatus, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, ABI,
};
use model::bench::LandlockInfo;

use base::error::usage;

/// The rights the ruleset handles: every filesystem right up to ABI 5
/// (IOCTL_DEV), as far as the kernel knows them (best effort: a 6.1 kernel,
/// ABI 2, handles those up to REFER).
const HANDLED_UP_TO: ABI = ABI::V5;

/// What the system's directories allow: reading and executing.
const READ_EXEC: BitFlags<AccessFs> = make_bitflags!(AccessFs::{Execute | ReadFile | ReadDir});

const SYSTEM_DIRS: &[&str] = &[
    "/bin", "/sbin", "/usr", "/lib", "/lib64", "/etc", "/proc", "/sys",
];

/// Confines this process (and what it forks) to `work_dir` plus read and
/// execute access to the system, then proves a write elsewhere is denied.
pub fn enter(work_dir: &Path) -> Result<LandlockInfo> {
    enter_with(work_dir, false, None)
}

/// As `enter`; `made_by_bench`: bench made `work_dir` and removes it at
/// the end, which needs the right to remove a directory in its parent;
/// `program`: the --workload program, wherever it lies, may run.
pub fn enter_with(
    work_dir: &Path,
    made_by_bench: bool,
    program: Option<&Path>,
) -> Result<LandlockInfo> {
    let status = ruleset(work_dir, made_by_bench, program)?
        .restrict_self()
        .context("landlock_restrict_self")?;
    let (abi, effective) = kernel_abi(&status)?;
    let handled = AccessFs::from_all(HANDLED_UP_TO) & AccessFs::from_all(effective);
    let proof = prove(work_dir)?;
    Ok(LandlockInfo {
        abi,
        handled_access_fs: handled.bits(),
        proof,
    })
}

/// The ruleset: all of `work_dir`, the system to read and execute,
/// lsmpmon itself and the fork ops' helper (wherever they lie) and the
/// devices the ops use.
fn ruleset(work_dir: &Path, made_by_bench: bool, program: Option<&Path>) -> Result<RulesetCreated> {
    let all = AccessFs::from_all(HANDLED_UP_TO);
    let mut ruleset = Ruleset::default()
        .handle_access(all)
        .context("landlock_create_ruleset")?
        .create()
        .context("landlock_create_ruleset")?;
    ruleset = allow(ruleset, work_dir, all)?;
    if made_by_bench {
        // Removing it at the end (rmdir) is a right on its parent.
        if let Some(parent) = work_dir.parent() {
            ruleset = allow(ruleset, parent, AccessFs::RemoveDir.into())?;
        }
    }
    for dir in SYSTEM_DIRS {
        ruleset = allow(ruleset, Path::new(dir), READ_EXEC)?;
    }
    let programs = std::env::current_exe().ok().into_iter();
    let user = program.map(Path::to_path_buf);
    for program in programs.chain(super::forker::helper_path()).chain(user) {
        ruleset = allow(ruleset, &program, AccessFs::Execute | AccessFs::ReadFile)?;
    }
    let devices = make_bitflags!(AccessFs::{ReadFile | WriteFile | ReadDir | IoctlDev});
    allow(ruleset, Path::new("/dev"), devices)
}

/// A rule for `path` and what is below it; none if it is absent here.
fn allow(
    ruleset: RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
) -> Result<RulesetCreated> {
    let Ok(fd) = PathFd::new(path) else {
        return Ok(ruleset); // absent on this system: nothing to allow
    };
    ruleset
        .add_rule(PathBeneath::new(fd, access))
        .with_context(|| format!("landlock_add_rule {}", path.display()))
}

/// The kernel's Landlock ABI (as it reports it) and the one the crate used.
fn kernel_abi(status: &RestrictionStatus) -> Result<(u32, ABI)> {
    match status.landlock {
        LandlockStatus::Available {
            effective_abi,
            kernel_abi,
        } => Ok((
            kernel_abi.unwrap_or(effective_abi as i32) as u32,
            effective_abi,
        )),
        LandlockStatus::NotEnabled => Err(usage(
            "--landlock: Landlock is not available here (not enabled: EOPNOTSUPP): boot with lsm=...,landlock",
        )),
        LandlockStatus::NotImplemented => Err(usage(
            "--landlock: Landlock is not available here (not built in: ENOSYS): boot with lsm=...,landlock",
        )),
    }
}

/// Proof: creating a file next to the work directory must be denied.
fn prove(work_dir: &Path) -> Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let outside = work_dir
        .parent()
        .unwrap_or(Path::new("/"))
        .join(format!("lsmpmon-landlock-probe-{}", std::process::id()));
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&outside);
    match created {
        Ok(_) => {
            let _ = std::fs::remove_file(&outside);
            bail!(
                "Landlock did not enforce: {} could be created",
                outside.display()
            )
        }
        Err(e) if e.raw_os_error() == Some(libc::EACCES) => Ok(format!(
            "creating {} was denied (EACCES)",
            outside.display()
        )),
        Err(e) => bail!(
            "Landlock proof inconclusive: creating {} failed with {e}, not EACCES",
            outside.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bits the raw syscalls handled, ABI by ABI.
    #[test]
    fn handled_rights_are_those_of_the_kernels_abi_up_to_ioctl_dev() {
        let handled = |abi| (AccessFs::from_all(HANDLED_UP_TO) & AccessFs::from_all(abi)).bits();
        assert_eq!(handled(ABI::V1), (1 << 13) - 1);
        assert_eq!(handled(ABI::V2), (1 << 14) - 1);
        assert_eq!(handled(ABI::V3), (1 << 15) - 1);
        assert_eq!(handled(ABI::V4), (1 << 15) - 1);
        for abi in [ABI::V5, ABI::V7, ABI::V10] {
            assert_eq!(handled(abi), (1 << 16) - 1);
        }
    }
}
