//! Room in the results directory. A cell is not booted where its logs and
//! result cannot be kept, and when a cell failed because the host could not
//! write what its guest said, the cause is named: QEMU drops serial output
//! it cannot write, so such a guest otherwise looks as if it had crashed.
use std::{fs, io::Write, os::unix::fs::OpenOptionsExt, path::Path};

use anyhow::{Context, Result};
use indicatif::HumanBytes;

use base::{error::usage, secure_fs::euid};

/// What one cell may write under the results directory: its logs (the
/// console, the guest's report, the configuration's copy) and its result.
/// A traced cell's report is a few MiB and is kept twice (log and result).
pub const CELL_BYTES: u64 = 16 << 20;

/// Bytes this user can still write on the file system holding `dir` (root
/// may use the blocks reserved for it).
pub fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    let s = rustix::fs::statvfs(dir)?;
    let blocks = if euid() == 0 { s.f_bfree } else { s.f_bavail };
    Ok(blocks.saturating_mul(s.f_frsize))
}

/// Refuses (one line: how much, where) when `dir` has no room for a cell.
pub fn check(dir: &Path) -> Result<()> {
    let free =
        free_bytes(dir).with_context(|| format!("reading the free space of {}", dir.display()))?;
    if free >= CELL_BYTES {
        return Ok(());
    }
    Err(usage(format!(
        "{}: {} free, a cell needs {} (its logs and result): free some space or choose another directory with --results",
        dir.display(),
        HumanBytes(free),
        HumanBytes(CELL_BYTES)
    )))
}

/// The reason to record when a cell failed for want of room: the error says
/// ENOSPC, or its log directory cannot take a small write now.
pub fn out_of_space(log_dir: &Path, err: &anyhow::Error) -> Option<String> {
    let said = err
        .chain()
        .filter_map(|e| e.downcast_ref::<std::io::Error>())
        .any(is_enospc);
    if !said && !probe_fails(log_dir) {
        return None;
    }
    let free = free_bytes(log_dir).map_or("?".into(), |b| HumanBytes(b).to_string());
    Some(format!(
        "no space left on device (ENOSPC) in {} ({free} free): the host could not keep the guest's output",
        log_dir.display()
    ))
}

pub fn is_enospc(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT))
}

/// Whether a page-sized write into `dir` fails with ENOSPC.
fn probe_fails(dir: &Path) -> bool {
    let probe = dir.join(".lsmpmon-space-probe");
    let written = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o600)
        .open(&probe)
        .and_then(|mut f| f.write_all(&[0; 4096]).and_then(|()| f.sync_all()));
    let _ = fs::remove_file(&probe);
    written.is_err_and(|e| is_enospc(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enospc_in_the_error_is_named_as_the_cause() {
        let dir = std::env::temp_dir();
        let full = anyhow::Error::from(std::io::Error::from_raw_os_error(libc::ENOSPC))
            .context("writing console.log");
        let why = out_of_space(&dir, &full).unwrap();
        assert!(
            why.contains("ENOSPC") && why.contains(&*dir.to_string_lossy()),
            "{why}"
        );
        // Another failure, with room to write: not a space problem.
        let other = anyhow::anyhow!("guest stopped before its command finished (kernel panic?)");
        assert_eq!(out_of_space(&dir, &other), None);
    }

    #[test]
    fn room_is_what_a_cell_needs() {
        assert!(free_bytes(Path::new("/nonexistent-lsmpmon")).is_err());
        let free = free_bytes(&std::env::temp_dir()).unwrap();
        assert_eq!(check(&std::env::temp_dir()).is_ok(), free >= CELL_BYTES);
    }
}
