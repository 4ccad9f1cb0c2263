//! The room for new descriptors under `RLIMIT_NOFILE`. An op never asks
//! for a bigger hard limit (a container's root, or any user, may not raise
//! it): it fits what it finds, raising only the soft limit toward the hard
//! one (which needs no capability), and only while it needs the room.
use anyhow::{bail, Result};

use super::fd::check;

/// Descriptors left for what else the process opens meanwhile (a directory
/// listing, a clock, the output).
pub const SPARE_FDS: u64 = 16;

/// The descriptor limits and how many descriptors the process holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Room {
    pub soft: u64,
    /// The hard limit, or the kernel's `fs.nr_open` when that is lower
    /// (no soft limit can be set above it).
    pub hard: u64,
    pub held: u64,
}

impl Room {
    /// The limits and descriptors of this process now.
    pub fn now() -> Result<Self> {
        let lim = get()?;
        Ok(Self {
            soft: lim.rlim_cur,
            hard: effective_hard(lim.rlim_max, nr_open()),
            held: held(),
        })
    }

    /// How many more descriptors fit once the soft limit is raised to the
    /// hard one, the spare kept.
    pub fn most(&self) -> u64 {
        self.hard.saturating_sub(self.held + SPARE_FDS)
    }

    /// The soft limit `n` more descriptors need, or None when they fit
    /// under the one there is.
    fn soft_for(&self, n: u64) -> Option<u64> {
        let need = self.held + n + SPARE_FDS;
        (need > self.soft).then_some(need)
    }
}

/// The hard limit as far as the kernel lets it count.
fn effective_hard(rlim_max: u64, nr_open: Option<u64>) -> u64 {
    nr_open.map_or(rlim_max, |n| rlim_max.min(n))
}

/// The most descriptors the kernel lets a process hold (`fs.nr_open`).
pub fn nr_open() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// Descriptors this process holds (the listing's own one included: it
/// errs on the side of room left over).
fn held() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64)
}

fn get() -> Result<libc::rlimit> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid rlimit to fill.
    check(
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }.into(),
        "getrlimit",
    )?;
    Ok(lim)
}

fn set(lim: &libc::rlimit) -> Result<()> {
    // SAFETY: a valid rlimit; a soft limit at most the hard one needs no
    // capability.
    check(
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, lim) }.into(),
        "setrlimit",
    )?;
    Ok(())
}

/// The soft limit as it was before `fit` raised it, put back when dropped:
/// the other ops and the programs they start run with the limit they were
/// given. Putting back only ever lowers it, so that of two raises ended
/// in either order the last to end leaves it as it was.
#[derive(Debug)]
pub struct Raised {
    was: libc::rlimit,
}

impl Drop for Raised {
    fn drop(&mut self) {
        if let Ok(now) = get() {
            if now.rlim_cur > self.was.rlim_cur {
                let _ = set(&libc::rlimit {
                    rlim_cur: self.was.rlim_cur,
                    rlim_max: now.rlim_max,
                });
            }
        }
    }
}

/// Makes room for `n` more descriptors: nothing when they fit, else the
/// soft limit raised toward the hard one until they do (None: nothing was
/// raised). An error when even the hard limit has no room for them.
pub fn fit(n: u64) -> Result<Option<Raised>> {
    let lim = get()?;
    let room = Room {
        soft: lim.rlim_cur,
        hard: effective_hard(lim.rlim_max, nr_open()),
        held: held(),
    };
    if n > room.most() {
        bail!(
            "{n} descriptors do not fit beside the {} held under this process's hard limit of {}",
            room.held,
            room.hard
        );
    }
    let Some(soft) = room.soft_for(n) else {
        return Ok(None);
    };
    set(&libc::rlimit {
        rlim_cur: soft,
        rlim_max: lim.rlim_max,
    })?;
    Ok(Some(Raised { was: lim }))
}

/// The calls of one timed batch for an op that holds a descriptor per call
/// until the batch ends: `most`, or fewer when the limit leaves less room.
/// An error when not one descriptor fits.
pub fn batch_calls(op: &str, most: u64) -> Result<u64> {
    let room = Room::now()?;
    match room.most().min(most) {
        0 => bail!(
            "{op}: no descriptor is free beside the {} held under this process's hard limit of {}: run it with a higher `ulimit -Hn`",
            room.held,
            room.hard
        ),
        n => Ok(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_room_keeps_the_spare_and_the_held_ones() {
        let r = Room {
            soft: 64,
            hard: 1024,
            held: 20,
        };
        assert_eq!(r.most(), 1024 - 20 - SPARE_FDS);
        assert_eq!(r.soft_for(28), None);
        assert_eq!(r.soft_for(29), Some(65));
        let full = Room { held: 1020, ..r };
        assert_eq!(full.most(), 0);
    }

    #[test]
    fn nr_open_bounds_an_infinite_hard_limit() {
        assert_eq!(effective_hard(libc::RLIM_INFINITY, Some(1 << 20)), 1 << 20);
        assert_eq!(effective_hard(1024, Some(1 << 20)), 1024);
        assert_eq!(effective_hard(1024, None), 1024);
    }
}
