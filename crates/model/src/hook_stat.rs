//! Each per-hook statistic declared once: its name, the trace table's
//! column, its help and unit, and how it is read from a [`HookResult`].
//! `trace`'s per-hook table and `serve`'s metric families are made from
//! these declarations; adding a statistic is adding one here and naming it
//! in the list of each view that shows it.
use super::trace::HookResult;

/// What a statistic counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatUnit {
    /// Calls: a count.
    Calls,
    /// Nanoseconds (virtual in a guest); exported in seconds.
    Nanoseconds,
}

/// Which probes a statistic needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Every trace has it, `--count-only` too.
    Counting,
    /// Only traces that time the calls (not `--count-only`).
    Timing,
}

#[derive(Debug, Clone, Copy)]
pub struct HookStat {
    /// Its name in metric families (`lsmpmon_hook_<name>_total`).
    pub name: &'static str,
    /// Its column in the trace's per-hook table (LSMPMON's Fig. 3 names).
    pub column: &'static str,
    pub help: &'static str,
    pub unit: StatUnit,
    pub needs: Needs,
    /// None: this hook has no such figure (a void hook's denials).
    pub value: fn(&HookResult) -> Option<f64>,
    /// What a table shows where the hook has no such figure.
    pub missing: fn(&HookResult) -> &'static str,
}

fn dash(_: &HookResult) -> &'static str {
    "-"
}

pub const CALLS: HookStat = HookStat {
    name: "calls",
    column: "calls",
    help: "Calls, timed or not.",
    unit: StatUnit::Calls,
    needs: Needs::Counting,
    value: |h| Some(h.calls as f64),
    missing: dash,
};

pub const TIMED_CALLS: HookStat = HookStat {
    name: "timed_calls",
    column: "count",
    help: "Calls without a context switch: the timed ones.",
    unit: StatUnit::Calls,
    needs: Needs::Timing,
    value: |h| Some(h.count as f64),
    missing: dash,
};

pub const SWITCHED_CALLS: HookStat = HookStat {
    name: "switched_calls",
    column: "cs_count",
    help: "Calls during which the task was switched out (kept out of the timing).",
    unit: StatUnit::Calls,
    needs: Needs::Timing,
    value: |h| Some(h.cs_count as f64),
    missing: dash,
};

pub const UNTIMED_CALLS: HookStat = HookStat {
    name: "untimed_calls",
    column: "untimed",
    help: "Calls counted but not timed (--sample N: one call in N is timed; --timing-windows: calls outside the windows).",
    unit: StatUnit::Calls,
    needs: Needs::Timing,
    value: |h| Some(h.untimed as f64),
    missing: dash,
};

pub const TIME: HookStat = HookStat {
    name: "time",
    column: "time",
    help: "Time in the timed calls (less the probe floor with --subtract-floor).",
    unit: StatUnit::Nanoseconds,
    needs: Needs::Timing,
    value: |h| Some(h.sum_ns as f64),
    missing: dash,
};

pub const TIME_ESTIMATE: HookStat = HookStat {
    name: "time_estimate",
    column: "est_time",
    help: "Every call's time, estimated at each timing window's close: the calls since the hook's last estimate × that window's mean (--timing-windows).",
    unit: StatUnit::Nanoseconds,
    needs: Needs::Timing,
    value: |h| h.time_estimate_ns.map(|v| v as f64),
    missing: dash,
};

pub const DROPPED_CALLS: HookStat = HookStat {
    name: "dropped_calls",
    column: "dropped",
    help: "Calls not measured: hook stack full, probe skipped by the kernel, impossible delta.",
    unit: StatUnit::Calls,
    needs: Needs::Counting,
    value: |h| Some(h.dropped as f64),
    missing: dash,
};

pub const MIN: HookStat = HookStat {
    name: "min",
    column: "min",
    help: "The fastest timed call.",
    unit: StatUnit::Nanoseconds,
    needs: Needs::Timing,
    value: |h| Some(h.min_ns as f64),
    missing: dash,
};

pub const MAX: HookStat = HookStat {
    name: "max",
    column: "max",
    help: "The slowest timed call.",
    unit: StatUnit::Nanoseconds,
    needs: Needs::Timing,
    value: |h| Some(h.max_ns as f64),
    missing: dash,
};

pub const AVE: HookStat = HookStat {
    name: "ave",
    column: "ave",
    help: "The timed calls' mean.",
    unit: StatUnit::Nanoseconds,
    needs: Needs::Timing,
    value: |h| Some(h.ave_ns.round()),
    missing: dash,
};

pub const P50: HookStat = HookStat {
    name: "duration_p50",
    column: "p50",
    help:
        "The timed calls' median, from the probes' histogram (16 buckets an octave: within 3.2 %).",
    unit: StatUnit::Nanoseconds,
    needs: Needs::Timing,
    value: |h| h.p50_ns.map(|v| v as f64),
    missing: dash,
};

pub const P99: HookStat = HookStat {
    name: "duration_p99",
    column: "p99",
    help: "The timed calls' 99th percentile, from the probes' histogram (16 buckets an octave: within 3.2 %).",
    unit: StatUnit::Nanoseconds,
    needs: Needs::Timing,
    value: |h| h.p99_ns.map(|v| v as f64),
    missing: dash,
};

pub const DENIED_CALLS: HookStat = HookStat {
    name: "denied_calls",
    column: "deny",
    help: "Calls that returned -EACCES or -EPERM (hooks whose return is an access decision).",
    unit: StatUnit::Calls,
    needs: Needs::Counting,
    value: |h| h.deny.map(|d| d as f64),
    // "n/a" where the return is not a decision, "-" for void hooks.
    missing: |h| {
        if h.not_a_decision.is_some() {
            "n/a"
        } else {
            "-"
        }
    },
};

pub const ALLOWED_CALLS: HookStat = HookStat {
    name: "allowed_calls",
    column: "allow",
    help: "Calls that returned 0 (hooks whose return is an access decision).",
    unit: StatUnit::Calls,
    needs: Needs::Counting,
    value: |h| h.allow.map(|v| v as f64),
    missing: dash,
};

pub const ERROR_CALLS: HookStat = HookStat {
    name: "error_calls",
    column: "error",
    help: "Calls of an int hook that returned another negative value.",
    unit: StatUnit::Calls,
    needs: Needs::Counting,
    value: |h| h.error.map(|v| v as f64),
    missing: dash,
};

pub const VALUE_CALLS: HookStat = HookStat {
    name: "value_calls",
    column: "value",
    help: "Calls of an int hook that returned a positive value.",
    unit: StatUnit::Calls,
    needs: Needs::Counting,
    value: |h| h.value.map(|v| v as f64),
    missing: dash,
};

/// The counters `serve` exports for every hook and module function, in order
/// (before its returns and histogram families, which have labels of their own).
pub const COUNTERS: [HookStat; 5] = [CALLS, TIMED_CALLS, SWITCHED_CALLS, TIME, DROPPED_CALLS];

/// The trace's per-hook table (LSMPMON's Fig. 3): min / max / ave / count / cs_count, deny, dropped.
pub const TABLE: [HookStat; 9] = [
    MIN,
    MAX,
    AVE,
    P50,
    P99,
    TIMED_CALLS,
    SWITCHED_CALLS,
    DENIED_CALLS,
    DROPPED_CALLS,
];

/// The same table under `--sample N`: the untimed calls too.
pub const SAMPLED_TABLE: [HookStat; 10] = [
    MIN,
    MAX,
    AVE,
    P50,
    P99,
    TIMED_CALLS,
    SWITCHED_CALLS,
    UNTIMED_CALLS,
    DENIED_CALLS,
    DROPPED_CALLS,
];

/// The same table under `--timing-windows`: the untimed calls and every call's estimated time.
pub const WINDOWED_TABLE: [HookStat; 11] = [
    MIN,
    MAX,
    AVE,
    P50,
    P99,
    TIMED_CALLS,
    SWITCHED_CALLS,
    UNTIMED_CALLS,
    TIME_ESTIMATE,
    DENIED_CALLS,
    DROPPED_CALLS,
];

/// The same table under `--count-only`: calls and what they returned.
pub const COUNT_TABLE: [HookStat; 6] = [
    CALLS,
    ALLOWED_CALLS,
    DENIED_CALLS,
    ERROR_CALLS,
    VALUE_CALLS,
    DROPPED_CALLS,
];

impl HookStat {
    /// The figure as a metric counts it: calls as they are, time in seconds.
    pub fn metric_value(&self, h: &HookResult) -> Option<f64> {
        let v = (self.value)(h)?;
        Some(match self.unit {
            StatUnit::Calls => v,
            StatUnit::Nanoseconds => v / 1e9,
        })
    }

    /// `<prefix>_<name>_total` (`_seconds_total` for time).
    pub fn counter_name(&self, prefix: &str) -> String {
        match self.unit {
            StatUnit::Calls => format!("{prefix}_{}_total", self.name),
            StatUnit::Nanoseconds => format!("{prefix}_{}_seconds_total", self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_columns_are_each_used_once() {
        let all = [
            CALLS,
            TIMED_CALLS,
            SWITCHED_CALLS,
            UNTIMED_CALLS,
            TIME,
            TIME_ESTIMATE,
            DROPPED_CALLS,
            MIN,
            MAX,
            AVE,
            DENIED_CALLS,
            ALLOWED_CALLS,
            ERROR_CALLS,
            VALUE_CALLS,
        ];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a.name, b.name);
                assert_ne!(a.column, b.column);
            }
        }
        assert_eq!(
            TIME.counter_name("lsmpmon_hook"),
            "lsmpmon_hook_time_seconds_total"
        );
        assert_eq!(CALLS.counter_name("x"), "x_calls_total");
    }
}
