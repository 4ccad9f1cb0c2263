//! What `top` shows: each hook's figures over the last interval, from two
//! snapshots of the trace engine (counters since start or reset; a later
//! reset only makes a delta smaller, never negative).
use std::collections::HashMap;

use model::{HookResult, TraceResult};

/// One hook (or, with --per-lsm, one module's function) over the interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub hook: String,
    /// The module, for a module's own function (--per-lsm).
    pub lsm: Option<String>,
    pub calls_per_s: f64,
    /// Per timed call in the interval; None without timed calls.
    pub ave_ns: Option<f64>,
    /// The 99th percentile in the interval, from the probes' histogram.
    pub p99_ns: Option<u64>,
    /// None for hooks whose return is not an access decision.
    pub deny_per_s: Option<f64>,
    /// Time in the hook / the interval (over every CPU: may pass 1).
    pub share: f64,
    pub time_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Time,
    Calls,
    Ave,
    P99,
    Deny,
    Name,
}

impl SortKey {
    pub const ALL: [SortKey; 6] = [
        SortKey::Time,
        SortKey::Calls,
        SortKey::Ave,
        SortKey::P99,
        SortKey::Deny,
        SortKey::Name,
    ];

    pub fn next(self) -> SortKey {
        let i = Self::ALL.iter().position(|k| *k == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }

    pub fn name(self) -> &'static str {
        match self {
            SortKey::Time => "time",
            SortKey::Calls => "calls/s",
            SortKey::Ave => "avg",
            SortKey::P99 => "p99",
            SortKey::Deny => "deny/s",
            SortKey::Name => "name",
        }
    }
}

fn row(before: Option<&HookResult>, now: &HookResult, lsm: Option<&str>, interval_s: f64) -> Row {
    let d = |f: fn(&HookResult) -> u64| f(now).saturating_sub(before.map(f).unwrap_or(0));
    let timed = d(|h| h.count);
    let time_ns = d(|h| h.sum_ns);
    let hist = model::hist::since(&now.hist, before.map_or(&[], |b| &b.hist));
    Row {
        hook: now.hook.clone(),
        lsm: lsm.map(String::from),
        calls_per_s: d(|h| h.calls) as f64 / interval_s,
        ave_ns: (timed > 0).then(|| time_ns as f64 / timed as f64),
        p99_ns: model::hist::quantile(&hist, 0.99).map(|v| v.round() as u64),
        deny_per_s: now
            .deny
            .map(|_| d(|h| h.deny.unwrap_or(0)) as f64 / interval_s),
        share: time_ns as f64 / (interval_s * 1e9),
        time_ns,
    }
}

/// Every hook's row over the `interval_s` seconds between two snapshots.
pub fn rows(before: &TraceResult, now: &TraceResult, interval_s: f64) -> Vec<Row> {
    let interval_s = interval_s.max(1e-3);
    let hooks: HashMap<&str, &HookResult> =
        before.hooks.iter().map(|h| (h.hook.as_str(), h)).collect();
    let functions: HashMap<(&str, &str), &HookResult> = before
        .per_lsm
        .iter()
        .map(|l| ((l.stats.function.as_str(), l.stats.hook.as_str()), &l.stats))
        .collect();
    let mut out: Vec<Row> = now
        .hooks
        .iter()
        .map(|h| row(hooks.get(h.hook.as_str()).copied(), h, None, interval_s))
        .collect();
    out.extend(now.per_lsm.iter().map(|l| {
        let key = (l.stats.function.as_str(), l.stats.hook.as_str());
        row(
            functions.get(&key).copied(),
            &l.stats,
            Some(&l.lsm),
            interval_s,
        )
    }));
    out
}

/// The rows whose hook or module contains `filter`, sorted by `key`
/// (largest first; by name alphabetically), then by name.
pub fn shown(rows: &[Row], key: SortKey, filter: &str) -> Vec<Row> {
    let mut v: Vec<Row> = rows
        .iter()
        .filter(|r| {
            filter.is_empty()
                || r.hook.contains(filter)
                || r.lsm.as_deref().is_some_and(|l| l.contains(filter))
        })
        .cloned()
        .collect();
    let f = |r: &Row| -> f64 {
        match key {
            SortKey::Time | SortKey::Name => r.time_ns as f64,
            SortKey::Calls => r.calls_per_s,
            SortKey::Ave => r.ave_ns.unwrap_or(-1.0),
            SortKey::P99 => r.p99_ns.map(|v| v as f64).unwrap_or(-1.0),
            SortKey::Deny => r.deny_per_s.unwrap_or(-1.0),
        }
    };
    v.sort_by(|a, b| {
        let by = if key == SortKey::Name {
            std::cmp::Ordering::Equal
        } else {
            f(b).total_cmp(&f(a))
        };
        by.then_with(|| a.hook.cmp(&b.hook))
            .then_with(|| a.lsm.cmp(&b.lsm))
    });
    v
}

/// Every cgroup's row (all hooks together) over the interval, with
/// --by cgroup: which cgroup pays for the hooks. No p99 (a cgroup's calls
/// have no histogram of their own).
pub fn cgroup_rows(before: &TraceResult, now: &TraceResult, interval_s: f64) -> Vec<Row> {
    let interval_s = interval_s.max(1e-3);
    let Some(now) = &now.cgroups else {
        return Vec::new();
    };
    let old: HashMap<(&str, Option<u64>), &model::CgroupCalls> = before
        .cgroups
        .iter()
        .flat_map(|b| &b.cgroups)
        .map(|g| ((g.cgroup.as_str(), g.id), &g.total))
        .collect();
    now.cgroups
        .iter()
        .map(|g| {
            let o = old
                .get(&(g.cgroup.as_str(), g.id))
                .copied()
                .cloned()
                .unwrap_or_default();
            let d = |f: fn(&model::CgroupCalls) -> u64| f(&g.total).saturating_sub(f(&o));
            let (timed, time_ns) = (d(|c| c.timed), d(|c| c.sum_ns));
            Row {
                hook: g.cgroup.clone(),
                lsm: None,
                calls_per_s: d(|c| c.calls) as f64 / interval_s,
                ave_ns: (timed > 0).then(|| time_ns as f64 / timed as f64),
                p99_ns: None,
                deny_per_s: Some(d(|c| c.deny) as f64 / interval_s),
                share: time_ns as f64 / (interval_s * 1e9),
                time_ns,
            }
        })
        .collect()
}
