//! `--timing-windows ON/EVERY`: the hooks' exits stay attached and count
//! every call; every EVERY seconds their entries are attached, left to
//! settle ([`SETTLE`]), then time every call that begins in the next ON
//! seconds, and are released. The entries stay attached for longer than
//! ON (the attach, the settle, the release), but time calls only for ON.
//! Between windows a call costs about what `--count-only` costs (BENCHMARKS.md,
//! 'Cost per traced call'). At each window's close each hook's time is estimated: the calls
//! since its last estimate × the window's mean, so the estimate never
//! decreases (a Prometheus counter).
//!
//! Attaching or releasing an entry rebuilds its hook's trampoline (≈ 20
//! virtual ms on 6.1, ≈ 15 of them CPU): the entries are attached and released
//! a few at a time, one at least and then until [`STEP_BUDGET`] is spent per
//! tick, so that the caller's loop (serve's scrapes, trace ctl) keeps
//! answering. On 7.x one multi-link opens every entry at once.
use std::time::{Duration, Instant};

use super::attach::Attacher;
use crate::intf::lsmpmon_hook_stats;

/// How long one tick may spend attaching or releasing entries.
pub const STEP_BUDGET: Duration = Duration::from_millis(5);
/// How long the entries stay attached before a window times calls (at most
/// half the window): right after an attach, the kernel routes calls through
/// a slower path for a while (7.3: ≈ 2.4 % of a 0.5 s window's calls of a
/// hook with a nested one read 230 ns slower; calibrate.rs saw 20 ms and
/// more, never after 300 ms).
pub const SETTLE: Duration = Duration::from_millis(300);

/// Where the windows stand.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Next window opens at this instant.
    Waiting(Instant),
    /// Attaching entries, from this probe on.
    Opening(usize),
    /// Every entry attached, not timing until this instant ([`SETTLE`]).
    Settling(Instant),
    /// Every entry attached and timing until this instant.
    Open(Instant),
    /// Releasing entries, from this probe on.
    Closing(usize),
    /// Every entry released: the window's figures are to be read.
    Closed,
}

/// One hook's timed calls and their time (a row of the probes' statistics).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timed {
    pub calls: u64,
    pub timed: u64,
    pub sum_ns: u64,
}

impl From<&lsmpmon_hook_stats> for Timed {
    fn from(s: &lsmpmon_hook_stats) -> Self {
        Self {
            calls: s.count + s.cs_count + s.untimed,
            timed: s.count,
            sum_ns: s.sum_ns,
        }
    }
}

/// A hook's estimated time: `calls` valued at their windows' means, `ns` in all.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Estimate {
    pub calls: u64,
    pub ns: f64,
}

impl Estimate {
    /// Since `before` (a reset), less `floor_ns` a call (--subtract-floor).
    pub fn since(self, before: Option<Estimate>, floor_ns: f64) -> u64 {
        let b = before.unwrap_or_default();
        let calls = self.calls.saturating_sub(b.calls) as f64;
        (self.ns - b.ns - floor_ns * calls).max(0.0).round() as u64
    }
}

pub struct Windows {
    on: Duration,
    settle: Duration,
    every: Duration,
    phase: Phase,
    /// When the current (or last) window began opening.
    opened_at: Instant,
    /// Windows closed so far.
    pub closed: u64,
    /// Per row: the counters when the current window began opening.
    at_open: Vec<Timed>,
    /// The probes (indexes) this window attaches: the hooks called since
    /// the last window began (a hook never called has nothing to time, and
    /// each entry attached one at a time costs its trampoline's rebuild).
    opened: Vec<usize>,
    /// Per row: the calls already in `estimate_ns`.
    estimated_calls: Vec<u64>,
    estimate_ns: Vec<f64>,
    /// Entries the kernel refused to attach (the first few reasons).
    pub refused: Vec<String>,
    /// Entries attached or released, and the time it took.
    pub changes: u64,
    pub changing: Duration,
}

impl Windows {
    /// Windows of `on_s` seconds every `every_s` seconds; the first opens
    /// after `on_s` (the hooks called by then are the ones it times).
    pub fn new(on_s: f64, every_s: f64, rows: usize, now: Instant) -> Self {
        let on = Duration::from_secs_f64(on_s);
        Self {
            on,
            settle: SETTLE.min(on / 2),
            every: Duration::from_secs_f64(every_s),
            phase: Phase::Waiting(now + on),
            opened_at: now,
            closed: 0,
            at_open: vec![Timed::default(); rows],
            opened: Vec::new(),
            estimated_calls: vec![0; rows],
            estimate_ns: vec![0.0; rows],
            refused: Vec::new(),
            changes: 0,
            changing: Duration::ZERO,
        }
    }

    /// Moves the windows on: attaches or releases entries within
    /// [`STEP_BUDGET`], reading the counters (`read`) when a window begins
    /// and when it has closed.
    pub fn tick(&mut self, attacher: &mut Attacher, read: impl Fn() -> Vec<Timed>, now: Instant) {
        self.phase = match self.phase {
            Phase::Waiting(at) if now >= at => {
                self.opened_at = now;
                let counters = read();
                self.opened = called_since(&attacher.probe_hooks(), &counters, &self.at_open);
                self.at_open = counters;
                self.step(attacher, true, 0)
            }
            Phase::Opening(from) => self.step(attacher, true, from),
            Phase::Settling(until) if now >= until => Phase::Open(now + self.on),
            // The gate closes (session.rs) a tick before any entry is released.
            Phase::Open(until) if now >= until => Phase::Closing(0),
            Phase::Closing(from) => self.step(attacher, false, from),
            phase => phase,
        };
        if self.phase == Phase::Closed {
            self.close(&read());
            let next = (self.opened_at + self.every).max(now);
            self.phase = Phase::Waiting(next);
        }
    }

    fn step(&mut self, attacher: &mut Attacher, open: bool, from: usize) -> Phase {
        let started = Instant::now();
        let (next, refused) = attacher.step_window(open, &self.opened, from, STEP_BUDGET);
        self.changing += started.elapsed();
        self.changes += match attacher.window_by_link() {
            true => 1,
            false => next.saturating_sub(from) as u64,
        };
        for r in refused {
            if self.refused.len() < 8 {
                base::say!("lsmpmon: warning: a timing window's entry was refused: {r}");
                self.refused.push(r);
            }
        }
        let done = next >= self.opened.len();
        match (open, done) {
            (true, false) => Phase::Opening(next),
            (true, true) => Phase::Settling(Instant::now() + self.settle),
            (false, false) => Phase::Closing(next),
            (false, true) => Phase::Closed,
        }
    }

    /// Are the entries to time the calls they see now (the window is open
    /// and settled)? Outside, an attached entry leaves its call untimed.
    pub fn timing(&self) -> bool {
        matches!(self.phase, Phase::Open(_))
    }

    /// A window has closed: each hook timed in it gets its calls since its
    /// last estimate at this window's mean. A hook not timed in this window
    /// keeps its calls for the next one that times it.
    fn close(&mut self, now: &[Timed]) {
        self.closed += 1;
        for (i, (n, o)) in now.iter().zip(&self.at_open).enumerate() {
            let timed = n.timed.saturating_sub(o.timed);
            if timed == 0 {
                continue;
            }
            let mean_ns = n.sum_ns.saturating_sub(o.sum_ns) as f64 / timed as f64;
            let calls = n.calls.saturating_sub(self.estimated_calls[i]);
            self.estimate_ns[i] += calls as f64 * mean_ns;
            self.estimated_calls[i] = n.calls;
        }
    }

    /// Row `i`'s estimate so far: its calls valued, and their time in ns;
    /// None before a window timed any of its calls.
    pub fn estimate(&self, i: usize) -> Option<Estimate> {
        let calls = *self.estimated_calls.get(i)?;
        (calls > 0).then(|| Estimate {
            calls,
            ns: self.estimate_ns[i],
        })
    }

    /// The estimates as they would stand if every call not yet estimated ran
    /// at its hook's mean over every timed call so far (a trace's end).
    pub fn settled(&self, now: &[Timed]) -> Vec<Option<Estimate>> {
        now.iter()
            .enumerate()
            .map(|(i, n)| {
                let done = self.estimate(i).unwrap_or_default();
                let rest = n.calls.saturating_sub(done.calls);
                match n.timed {
                    0 => self.estimate(i),
                    t => Some(Estimate {
                        calls: done.calls + rest,
                        ns: done.ns + rest as f64 * (n.sum_ns as f64 / t as f64),
                    }),
                }
            })
            .collect()
    }
}

/// The probes (indexes into `hooks`, each probe's row) whose hooks were
/// called between `before` and `now`.
fn called_since(hooks: &[u32], now: &[Timed], before: &[Timed]) -> Vec<usize> {
    let calls = |rows: &[Timed], r: u32| rows.get(r as usize).map_or(0, |t| t.calls);
    (0..hooks.len())
        .filter(|&i| calls(now, hooks[i]) > calls(before, hooks[i]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn windows() -> Windows {
        Windows::new(1.0, 10.0, 2, Instant::now())
    }

    fn t(calls: u64, timed: u64, sum_ns: u64) -> Timed {
        Timed {
            calls,
            timed,
            sum_ns,
        }
    }

    /// The calls since a hook's last estimate are valued at the window's
    /// mean, not the mean since attach: a hook that got slower shows it.
    #[test]
    fn each_close_values_the_new_calls_at_that_windows_mean() {
        let mut w = windows();
        w.at_open = vec![t(0, 0, 0), t(0, 0, 0)];
        w.close(&[t(1000, 100, 10_000), t(50, 0, 0)]);
        assert_eq!(w.estimate(0).unwrap().ns, 100_000.0); // 1000 calls × 100 ns
        assert_eq!(w.estimate(1), None); // not timed: its calls wait
        w.at_open = vec![t(5000, 100, 10_000), t(60, 0, 0)];
        w.close(&[t(6000, 200, 40_000), t(80, 10, 500)]);
        // 5000 new calls at (40000 - 10000) / 100 = 300 ns.
        let e = w.estimate(0).unwrap();
        assert_eq!((e.calls, e.ns), (6000, 100_000.0 + 5000.0 * 300.0));
        // Hook 1's 80 calls, kept since the first window, at 50 ns.
        assert_eq!(w.estimate(1).unwrap().ns, 80.0 * 50.0);
        assert_eq!(w.closed, 2);
        // Less a floor of 10 ns a call, since a reset at the first close.
        let first = Estimate {
            calls: 1000,
            ns: 100_000.0,
        };
        assert_eq!(e.since(Some(first), 10.0), 5000 * 300 - 5000 * 10);
    }

    /// An estimate only grows, whatever the windows' means do.
    #[test]
    fn estimates_never_decrease() {
        let mut w = windows();
        let mut last = 0.0;
        let mut c = t(0, 0, 0);
        for (k, mean) in [900u64, 10, 500, 1, 0, 40].iter().enumerate() {
            w.at_open = vec![c, c];
            c = t(c.calls + 100 * k as u64, c.timed + 10, c.sum_ns + 10 * mean);
            w.close(&[c, c]);
            let now = w.estimate(0).unwrap_or_default().ns;
            assert!(now >= last);
            last = now;
        }
    }

    /// Only the hooks called since the last window get their entry attached.
    #[test]
    fn a_window_attaches_the_entries_of_the_hooks_called_since_the_last() {
        let before = [t(10, 0, 0), t(5, 0, 0), t(0, 0, 0), t(3, 0, 0)];
        let now = [t(10, 0, 0), t(9, 0, 0), t(1, 0, 0), t(3, 0, 0)];
        // Probes for rows 3, 1, 2 and 0 (a failed hook leaves a gap).
        assert_eq!(called_since(&[3, 1, 2, 0], &now, &before), vec![1, 2]);
        // A row the counters do not have is never called.
        assert_eq!(called_since(&[9], &now, &before), Vec::<usize>::new());
    }

    /// A trace's end values the calls after the last close at the mean of
    /// every timed call.
    #[test]
    fn settling_values_the_rest_at_the_overall_mean() {
        let mut w = windows();
        w.at_open = vec![t(0, 0, 0), t(0, 0, 0)];
        w.close(&[t(100, 10, 1000), t(0, 0, 0)]);
        let s = w.settled(&[t(300, 20, 4000), t(7, 0, 0)]);
        let first = Estimate {
            calls: 300,
            ns: 100.0 * 100.0 + 200.0 * 200.0,
        };
        // A hook never timed has no estimate, not 0.
        assert_eq!(s, vec![Some(first), None]);
    }
}
