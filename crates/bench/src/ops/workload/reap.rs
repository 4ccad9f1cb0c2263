//! What a workload leaves outside its process group (a new session): the
//! bench adopts it as a subreaper during a sample and kills it after.
use std::{
    fs,
    time::{Duration, Instant},
};

use anyhow::{bail, Context, Result};

/// Whether orphans of what the bench starts become the bench's children
/// (so that the op can find and kill what left the workload's group).
pub fn subreaper(on: bool) -> Result<()> {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, on as libc::c_ulong) } != 0 {
        bail!(
            "prctl(PR_SET_CHILD_SUBREAPER): {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// How long killing what the workload left behind may take.
const KILL_ADOPTED: Duration = Duration::from_secs(10);

/// Kills and reaps what the workload left behind outside its group: the
/// bench's children that were not there before the sample (the op's own
/// child is reaped by then; only one op samples at a time). Fails if some
/// still live at the deadline (one that forks faster than it is killed).
pub fn kill_adopted(before: &[libc::pid_t]) -> Result<()> {
    let me = std::process::id().to_string();
    let deadline = Instant::now() + KILL_ADOPTED;
    loop {
        let mut adopted = children_of(&me)?;
        adopted.retain(|p| !before.contains(p));
        if adopted.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!(
                "the workload left {} processes that could not be killed in {} s (pids {:?})",
                adopted.len(),
                KILL_ADOPTED.as_secs(),
                adopted
            );
        }
        for pid in &adopted {
            // SAFETY: our own child, unreaped (its pid cannot be reused).
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        for pid in adopted {
            // SAFETY: reaping our own child.
            unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        }
    }
}

/// The pids whose parent is `ppid`, from /proc.
pub fn children_of(ppid: &str) -> Result<Vec<libc::pid_t>> {
    let entries = fs::read_dir("/proc").context("listing /proc for the workload's processes")?;
    Ok(entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|pid| {
            fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                // The fields after the command name: state, ppid, …
                s.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1).map(|p| p == ppid))
                    .unwrap_or(false)
            })
        })
        .collect())
}
