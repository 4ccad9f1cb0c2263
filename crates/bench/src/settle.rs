//! Work an op leaves to the kernel for later — the RCU callbacks that free
//! the inodes and dentries a file op removed, hundreds a sample — runs in
//! softirq during whatever is timed next. Sampled round-robin, an op was
//! charged for the ops before it: stat on 6.1 took 4 379 ns alone and
//! 4 601 ns after create_10k's samples, but the same 4 379 ns in a later
//! process after them (deterministic guest, one binary). Before each sample
//! the bench therefore waits, asleep, until no RCU softirq has run for a
//! quiet window (an idle guest in virtual time waits no host time for it),
//! bounded so that a host whose other work never lets RCU rest waits a
//! little only; and again after an op's untimed prepare (a delete op's
//! files are created before its timed unlinks: a cost planted in file
//! creation showed on delete_0k, +1.8 %, until it did).
use std::{thread::sleep, time::Duration};

/// No RCU softirq on any CPU for this long: nothing left to run.
const QUIET: Duration = Duration::from_millis(8);
/// At most this many windows before a sample.
const MAX_WINDOWS: u32 = 25;

/// How a settle ended: the windows slept, and whether the last was quiet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settled {
    pub windows: u32,
    pub quiet: bool,
}

/// Sleeps until RCU's softirqs have stopped (or the bound); at once where
/// /proc/softirqs cannot be read.
pub fn settle() -> Settled {
    settle_with(rcu_softirqs, || sleep(QUIET))
}

fn settle_with(mut count: impl FnMut() -> Option<u64>, mut wait: impl FnMut()) -> Settled {
    let Some(mut before) = count() else {
        return Settled {
            windows: 0,
            quiet: false,
        };
    };
    for windows in 1..=MAX_WINDOWS {
        wait();
        let Some(after) = count() else {
            return Settled {
                windows,
                quiet: false,
            };
        };
        if after == before {
            return Settled {
                windows,
                quiet: true,
            };
        }
        before = after;
    }
    Settled {
        windows: MAX_WINDOWS,
        quiet: false,
    }
}

/// RCU softirqs run so far, summed over CPUs.
fn rcu_softirqs() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/softirqs").ok()?;
    parse_rcu(&text)
}

fn parse_rcu(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.trim_start().starts_with("RCU:"))?;
    let counts = line.split_whitespace().skip(1).map(str::parse::<u64>);
    counts.sum::<Result<u64, _>>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rcu_line_is_summed_over_cpus_and_anything_else_is_none() {
        let text = "                    CPU0       CPU1\n       TIMER:  143657  106165\n         RCU:     352350     369026\n";
        assert_eq!(parse_rcu(text), Some(721_376));
        assert_eq!(parse_rcu("TIMER: 1 2\n"), None);
        assert_eq!(parse_rcu("RCU: 1 x\n"), None);
    }

    #[test]
    fn it_waits_until_a_window_passes_without_rcu_and_no_longer() {
        // Softirqs at 10, 14, 15, then nothing: quiet after the fourth window.
        let mut seq = [10, 14, 15, 15, 15].into_iter();
        let mut waits = 0;
        let s = settle_with(|| seq.next(), || waits += 1);
        assert_eq!(
            s,
            Settled {
                windows: 3,
                quiet: true
            }
        );
        assert_eq!(waits, 3);
        // Never quiet: bounded.
        let mut n = 0;
        let s = settle_with(
            || {
                n += 1;
                Some(n)
            },
            || {},
        );
        assert_eq!(
            s,
            Settled {
                windows: MAX_WINDOWS,
                quiet: false
            }
        );
        // No /proc/softirqs: no wait at all.
        let mut waited = false;
        let s = settle_with(|| None, || waited = true);
        assert!(!s.quiet && s.windows == 0 && !waited);
    }
}
