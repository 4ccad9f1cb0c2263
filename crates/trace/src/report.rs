//! The readable forms of a trace: LSMPMON's per-hook table, the per-syscall
//! table and funclatency-style histograms.
use std::fmt::Write;

use clap::ValueEnum;

use super::tables as trace_tables;
use base::table;
use model::{Excluded, HookResult, TraceResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SortKey {
    /// Total time (sum of timed calls), largest first.
    Sum,
    Calls,
    Ave,
    Max,
    /// Hook name.
    Name,
}

pub fn sort_hooks(hooks: &mut [&HookResult], key: SortKey) {
    hooks.sort_by(|a, b| match key {
        SortKey::Sum => b.sum_ns.cmp(&a.sum_ns),
        SortKey::Calls => b.calls.cmp(&a.calls),
        SortKey::Ave => b.ave_ns.total_cmp(&a.ave_ns),
        SortKey::Max => b.max_ns.cmp(&a.max_ns),
        SortKey::Name => a.hook.cmp(&b.hook),
    });
}

pub struct View {
    pub sort: SortKey,
    pub top: Option<usize>,
    pub hist: bool,
}

pub fn text(r: &TraceResult, view: &View) -> String {
    let mut out = String::new();
    let unit = if r.provenance.time == model::TimeMode::Virtual {
        "virtual ns"
    } else {
        "ns"
    };
    probe_lines(&mut out, r, unit);
    let mut hooks: Vec<&HookResult> = r.hooks.iter().filter(|h| h.calls > 0).collect();
    sort_hooks(&mut hooks, view.sort);
    let shown = view.top.unwrap_or(hooks.len()).min(hooks.len());
    // One renderer for every table lsmpmon prints (report's).
    let rows = &hooks[..shown];
    let _ = writeln!(out, "\n{}", table::plain(&trace_tables::hooks(r, rows, "")));
    hook_notes(&mut out, &hooks, shown);
    if view.hist {
        for h in &hooks[..shown] {
            histogram(&mut out, h, unit);
        }
    }
    if !r.per_lsm.is_empty() {
        let _ = writeln!(out, "\n{}", table::plain(&trace_tables::per_lsm(r, rows)));
        if !r.probe.unmapped.is_empty() {
            let _ = writeln!(out, "not traced: {}", listed(&r.probe.unmapped));
        }
    }
    let _ = writeln!(
        out,
        "\n{}",
        table::plain(&trace_tables::per_syscall(r, view.top, 8))
    );
    if let Some(b) = &r.cgroups {
        let t = trace_tables::per_cgroup(r, b, view.top, 8);
        let _ = writeln!(out, "\n{}", table::plain(&t));
    }
    out
}

/// "hook (reason), ..."
fn listed(items: &[Excluded]) -> String {
    items
        .iter()
        .map(|f| format!("{} ({})", f.hook, f.reason))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What was traced, and how: the lines above the tables.
fn probe_lines(out: &mut String, r: &TraceResult, unit: &str) {
    let p = &r.probe;
    let _ = writeln!(
        out,
        "lsmpmon trace: {} of {} probes attached on {} ({}), lsm={}; {:.3} s traced",
        p.hooks_attached,
        p.hooks_found,
        r.provenance.kernel_release,
        r.provenance.environment,
        r.provenance.active_lsms.join(","),
        r.elapsed_ns as f64 / 1e9
    );
    let floor = match p.floor_ns {
        Some(f) if r.options.subtract_floor => format!("{f:.0} {unit}, subtracted"),
        Some(f) => format!("{f:.0} {unit}, not subtracted (--subtract-floor)"),
        None => "not measured".into(),
    };
    let nested: u64 = r.hooks.iter().map(|h| h.nested_probes).sum::<u64>()
        + r.per_lsm.iter().map(|l| l.stats.nested_probes).sum::<u64>();
    let pair = match p.pair_cost_ns {
        Some(c) => match p.nested_cost_ns {
            Some(n) if (n - c).abs() >= 0.5 => format!(
                "pair cost {c:.0} {unit}, a nested pair {n:.0} {unit} taken out {nested} times"
            ),
            _ => format!("pair cost {c:.0} {unit}, taken out {nested} times (nested probes)"),
        },
        None if nested > 0 => {
            format!("pair cost not measured: {nested} nested probe pairs are in the figures")
        }
        None => "pair cost not measured".into(),
    };
    let _ = writeln!(
        out,
        "probe: {}, floor {floor}; {pair}; attach {:.0} ms",
        p.method, p.attach_ms
    );
    for n in &p.not_used {
        let _ = writeln!(out, "not used: {} ({})", n.method, n.reason);
    }
    if let Some(pre) = &p.preemption {
        let _ = writeln!(out, "preemption: {pre}");
    }
    if let Some(note) = r.options.timing_note() {
        let skew = match p.sample_skew_ns {
            Some(s) => format!("its exit's test, {s:.0} {unit}, taken out of each timed call"),
            None => "no exit test to take out (a session's cookie) or not measured".into(),
        };
        let _ = writeln!(out, "sampled: {note}, every call counted; {skew}");
    }
    if let Some(n) = p.kretprobe_maxactive {
        let _ = writeln!(
            out,
            "kretprobes: {n} calls of one hook in progress at once; {} returns lost (in dropped)",
            p.kretprobe_missed.unwrap_or(0)
        );
    }
    if !p.failed.is_empty() {
        let _ = writeln!(out, "not attached: {}", listed(&p.failed));
    }
}

/// The lines under the hook table: values that are not decisions, rows cut by --top.
fn hook_notes(out: &mut String, hooks: &[&HookResult], shown: usize) {
    let values: Vec<&str> = hooks[..shown]
        .iter()
        .filter(|h| h.not_a_decision.is_some())
        .map(|h| h.hook.as_str())
        .collect();
    if !values.is_empty() {
        let _ = writeln!(
            out,
            "deny n/a: the return is not an access decision ({}; see --json not_a_decision)",
            values.join(", ")
        );
    }
    if shown < hooks.len() {
        let _ = writeln!(
            out,
            "... {} more hooks with calls (--top, --json)",
            hooks.len() - shown
        );
    }
}

/// One line a power of two, as funclatency prints (the JSON keeps the
/// 16 buckets of each).
fn histogram(out: &mut String, h: &HookResult, unit: &str) {
    let octaves = model::hist::octaves(&h.hist);
    let max = octaves.iter().map(|b| b.count).max().unwrap_or(0).max(1);
    let _ = writeln!(out, "\n{} ({unit}):", h.hook);
    let _ = writeln!(out, "{:>20} : {:<9} distribution", "low -> high", "count");
    for b in &octaves {
        let stars = (b.count * 40).div_ceil(max) as usize;
        let _ = writeln!(
            out,
            "{:>9} -> {:<8} : {:<9} |{:<40}|",
            b.low_ns,
            b.high_ns - 1,
            b.count,
            "*".repeat(stars)
        );
    }
}
