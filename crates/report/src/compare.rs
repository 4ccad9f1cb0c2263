//! `lsmpmon compare A B`: every figure two runs share, its change and a
//! verdict. Virtual time is deterministic, so a change beyond its stated
//! determinism (0.5 %) is real. Real time drifts between runs, which the
//! samples of one run cannot show: with one run a side the verdict is
//! "cannot tell"; with several (A and B each a directory of single
//! results) each run is one observation, and a Mann-Whitney U test on the
//! runs' figures decides.
use anyhow::Result;

use super::forms::{floor, latest, timed, trace};
use super::input::{ops, Run};
use base::error::usage;
use base::stats::{self, median, overhead_pct, runs_verdict, verdict, VIRTUAL_DETERMINISM_PCT};
use base::table::{fmt_num, fmt_signed, Cell, Row, Table};
use model::compare::Change;
use model::provenance::TimeMode;
use model::trace::HookResult;

const HIST_SAMPLE_CAP: usize = 20_000;

/// What is compared: one run a side (a lab cell by kernel and
/// configuration, or one result each), or in real time several single
/// results a side, repeated runs of one measurement.
pub struct Pair<'a> {
    pub a: Vec<&'a Run>,
    pub b: Vec<&'a Run>,
}

impl<'a> Pair<'a> {
    fn one(a: &'a Run, b: &'a Run) -> Self {
        Self {
            a: vec![a],
            b: vec![b],
        }
    }

    fn first(&self) -> (&'a Run, &'a Run) {
        (self.a[0], self.b[0])
    }

    fn passed(&self) -> bool {
        self.a.iter().chain(&self.b).all(|r| r.passed())
    }
}

/// Several single results a side, all in real time: repeated runs.
fn repeated(a: &[Run], b: &[Run]) -> bool {
    a.len() + b.len() > 2
        && a.iter()
            .chain(b)
            .all(|r| !r.from_lab && r.time == TimeMode::Real)
}

/// Pairs of runs to compare: the one run of each side, the repeated runs
/// of each side, or lab cells by (kernel, configuration).
pub fn pair<'a>(a: &'a [Run], b: &'a [Run]) -> Result<Vec<Pair<'a>>> {
    if let ([x], [y]) = (a, b) {
        return Ok(vec![Pair::one(x, y)]);
    }
    if repeated(a, b) {
        return Ok(vec![Pair {
            a: a.iter().collect(),
            b: b.iter().collect(),
        }]);
    }
    // The newest cell per (kernel, configuration, draw), as report's
    // tables take; a configuration's draws are one side of its pair.
    let gb = by_cell(latest(b));
    let pairs: Vec<Pair> = by_cell(latest(a))
        .into_iter()
        .filter_map(|xs| {
            let ys = gb
                .iter()
                .find(|ys| ys[0].kernel == xs[0].kernel && ys[0].config == xs[0].config)?;
            Some(Pair {
                a: xs,
                b: ys.clone(),
            })
        })
        .collect();
    if pairs.is_empty() {
        return Err(usage(
            "A and B share no (kernel, configuration): nothing to compare",
        ));
    }
    Ok(pairs)
}

/// Runs grouped by (kernel, configuration): a group is a cell's draws, its
/// passed ones where any passed (a failed draw leaves the others).
fn by_cell(runs: Vec<&Run>) -> Vec<Vec<&Run>> {
    let mut groups: Vec<Vec<&Run>> = Vec::new();
    for r in runs {
        match groups
            .iter_mut()
            .find(|g| g[0].kernel == r.kernel && g[0].config == r.config)
        {
            Some(g) => g.push(r),
            None => groups.push(vec![r]),
        }
    }
    for g in groups.iter_mut().filter(|g| g.iter().any(|r| r.passed())) {
        g.retain(|r| r.passed());
    }
    groups
}

/// Lab cells in virtual time with several draws a side: each draw repeats
/// exactly, so what separates A from B is the layout, judged by draws.
fn drawn(p: &Pair) -> bool {
    let lab_virtual = |r: &&Run| r.from_lab && r.time == TimeMode::Virtual;
    p.a.len().max(p.b.len()) > 1 && p.a.iter().chain(&p.b).all(lab_virtual)
}

/// The verdict over draws: slower or faster only when established (its
/// interval excludes 0 and it exceeds A's own spread over its draws).
fn draws_verdict(higher_is_better: bool, a: &[f64], b: &[f64]) -> stats::Judged {
    let Some(c) = base::draws::change(higher_is_better, a, b) else {
        // The run column counts the draws; this figure may be in fewer
        // (only the traced draws time hooks).
        return (
            stats::Verdict::CannotTell,
            format!(
                "{} vs {} draws have this figure: A needs 2 or more to judge against",
                a.len(),
                b.len()
            ),
            None,
        );
    };
    let v = match (c.established, c.pct > 0.0) {
        (false, _) => stats::Verdict::WithinNoise,
        (true, true) => stats::Verdict::Slower,
        (true, false) => stats::Verdict::Faster,
    };
    let test = format!(
        "{} draws vs {}: [{}, {}] %, layout floor {} %",
        a.len(),
        b.len(),
        fmt_signed(c.low_pct, 1),
        fmt_signed(c.high_pct, 1),
        fmt_num(c.floor_pct, 1)
    );
    (v, test, None)
}

/// Refuses runs measured in different places unless `force`; returns the
/// differences that `force` let through.
/// Every run of a side is checked against the other side's first run, and
/// that one against every run of this side: repeated runs are alike too.
pub fn check_origins(pairs: &[Pair], force: bool) -> Result<Vec<String>> {
    let mut diffs: Vec<String> = Vec::new();
    let checked = pairs.iter().flat_map(|p| {
        let (a0, b0) = p.first();
        let against_b0 = p.a.iter().map(move |a| (*a, b0));
        against_b0.chain(p.b.iter().skip(1).map(move |b| (a0, *b)))
    });
    let mut note = |d: String| {
        // Repeated runs would say the same difference once per run.
        if !diffs.contains(&d) {
            diffs.push(d);
        }
    };
    for (a, b) in checked {
        for m in a.origin.mismatches(&b.origin) {
            note(format!("{} on {}: {m}", a.config, a.kernel));
        }
        let shapes = a.bench.as_ref().zip(b.bench.as_ref());
        if let Some(m) =
            shapes.and_then(|(x, y)| x.options.path_shape().mismatch(y.options.path_shape()))
        {
            note(format!("{} on {}: {m}", a.config, a.kernel));
        }
        if a.alike != b.alike {
            note(format!(
                "{} on {}: measured otherwise (kernel package or release, samples, sample length, QEMU options)",
                a.config, a.kernel
            ));
        }
        if a.time != b.time {
            return Err(usage(format!(
                "{} on {}: A is {} time and B {} time: they cannot be compared",
                a.config, a.kernel, a.time, b.time
            )));
        }
    }
    if !diffs.is_empty() && !force {
        return Err(usage(format!(
            "A and B were measured in different places ({}): compare like with like, or pass --force",
            diffs.join("; ")
        )));
    }
    Ok(diffs)
}

/// A and B measured by different lsmpmon builds (as `lab merge` refuses
/// without --force): a build is a draw of the guest's layout and its own
/// benchmark code, so a change may be the build's.
pub fn builds_warning(a: &[Run], b: &[Run]) -> Option<String> {
    let (ba, bb) = (builds(a), builds(b));
    if ba == bb && ba.len() <= 1 {
        return None;
    }
    Some(format!(
        "WARNING: A and B were measured by different lsmpmon builds ({} in A, {} in B): a change may be the build's; compare results of one build",
        ba.join(", "),
        bb.join(", ")
    ))
}

/// The builds that measured `runs`, each once.
fn builds(runs: &[Run]) -> Vec<&str> {
    let mut v: Vec<&str> = runs.iter().map(|r| r.build.as_str()).collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn samples<'a>(run: &'a Run, op: &str) -> &'a [f64] {
    ops(run)
        .iter()
        .find(|r| r.op == op)
        .map_or(&[], |r| &r.samples)
}

fn hist_samples(h: &HookResult) -> Vec<f64> {
    let buckets: Vec<(f64, u64)> = h.hist.iter().map(|b| (b.low_ns as f64, b.count)).collect();
    stats::from_histogram(&buckets, HIST_SAMPLE_CAP)
}

/// The figure each run of a side gives, one observation a run (runs
/// without it left out).
fn per_run<T>(runs: &[&Run], figure: impl Fn(&Run) -> Option<T>) -> Vec<T> {
    runs.iter().filter_map(|r| figure(r)).collect()
}

/// The run column: the run compared, or how many runs a side.
fn run_label(p: &Pair) -> String {
    match (p.a.len(), p.b.len()) {
        (1, 1) => p.a[0].config.clone(),
        (n1, n2) if drawn(p) => format!("{} ({n1} vs {n2} draws)", p.a[0].config),
        (n1, n2) => format!("{n1} vs {n2} runs"),
    }
}

fn bench_changes(p: &Pair, alpha: f64, out: &mut Vec<Change>) {
    let (a, b) = p.first();
    for oa in ops(a) {
        let op = oa.op.as_str();
        let median_of = |r: &Run| ops(r).iter().find(|o| o.op == op).map(|o| o.summary.median);
        let (ma, mb) = (per_run(&p.a, median_of), per_run(&p.b, median_of));
        if mb.is_empty() {
            continue;
        }
        let (va, vb) = (median(&ma), median(&mb));
        let overhead = overhead_pct(oa.unit.higher_is_better(), va, vb);
        let (v, test, p_value) = if p.a.len() == 1 && p.b.len() == 1 {
            verdict(
                a.time == TimeMode::Virtual,
                overhead,
                samples(a, op),
                samples(b, op),
            )
        } else if drawn(p) {
            draws_verdict(oa.unit.higher_is_better(), &ma, &mb)
        } else {
            runs_verdict(overhead, &ma, &mb, alpha)
        };
        out.push(Change {
            kernel: a.kernel.to_string(),
            run: run_label(p),
            figure: format!("bench {op}"),
            unit: oa.unit.name().to_string(),
            a: va,
            b: vb,
            overhead_pct: overhead,
            verdict: v,
            test,
            p_value,
        });
    }
}

/// A hook's time per call in a run: without the probe floor (shown), and
/// with it (judged: virtual time repeats that to 0.5 %, not the small
/// figure left after the floor).
fn hook_times(r: &Run, hook: &str) -> Option<(f64, f64)> {
    let t = trace(r)?;
    let h = t.hooks.iter().find(|h| h.hook == hook)?;
    Some((timed(h, floor(t))?, timed(h, 0.0)?))
}

fn trace_changes(p: &Pair, alpha: f64, out: &mut Vec<Change>) {
    let (a, b) = p.first();
    let Some(ta) = trace(a) else {
        return;
    };
    for h in &ta.hooks {
        let times = |r: &Run| hook_times(r, &h.hook);
        let (ta_all, tb_all) = (per_run(&p.a, times), per_run(&p.b, times));
        if tb_all.is_empty() || times(a).is_none() {
            continue;
        }
        let shown = |t: &[(f64, f64)]| median(&t.iter().map(|x| x.0).collect::<Vec<_>>());
        let raw: [Vec<f64>; 2] = [&ta_all, &tb_all].map(|t| t.iter().map(|x| x.1).collect());
        let (xa, xb, ra, rb) = (
            shown(&ta_all),
            shown(&tb_all),
            median(&raw[0]),
            median(&raw[1]),
        );
        if xa <= 0.0 || ra <= 0.0 {
            continue;
        }
        let overhead = overhead_pct(false, xa, xb);
        let judged = overhead_pct(false, ra, rb);
        let (v, test, p_value) = match (p.a.len(), p.b.len(), trace(b)) {
            (1, 1, Some(tb)) => {
                let g = tb.hooks.iter().find(|g| g.hook == h.hook);
                let sb = g.map(hist_samples).unwrap_or_default();
                verdict(a.time == TimeMode::Virtual, judged, &hist_samples(h), &sb)
            }
            _ if drawn(p) => draws_verdict(false, &raw[0], &raw[1]),
            _ => runs_verdict(judged, &raw[0], &raw[1], alpha),
        };
        out.push(Change {
            kernel: a.kernel.to_string(),
            run: run_label(p),
            figure: format!("hook {}", h.hook),
            unit: "ns/call".into(),
            a: xa,
            b: xb,
            overhead_pct: overhead,
            verdict: v,
            test,
            p_value,
        });
    }
}

/// Every figure the pairs share.
pub fn changes(pairs: &[Pair], alpha: f64) -> Vec<Change> {
    let mut out = Vec::new();
    for p in pairs.iter().filter(|p| p.passed()) {
        bench_changes(p, alpha, &mut out);
        trace_changes(p, alpha, &mut out);
    }
    out
}

/// A and B traced by different attach methods: their hook times carry
/// different probe costs (a kprobe against an fentry/fexit pair, a 7.3
/// multi-link against fentry/fexit: BENCHMARKS.md, 'Cost per traced call').
fn method_note((a, b): (&Run, &Run)) -> Option<String> {
    let method = |r: &Run| Some(r.trace.as_ref()?.probe.method.clone());
    let (ma, mb) = (method(a)?, method(b)?);
    (ma != mb).then(|| {
        format!(
            "{} on {}: traced with {ma} in A and {mb} in B: hook times include different probe costs (BENCHMARKS.md, 'Cost per traced call')",
            a.config, a.kernel
        )
    })
}

pub fn table(changes: &[Change], pairs: &[Pair], forced: &[String]) -> Table {
    let mut notes = vec![
        format!("Positive = B slower than A (for MB/s rows: less bandwidth). Virtual time: a change beyond ±{VIRTUAL_DETERMINISM_PCT} % (its determinism across boots) is real; a hook is judged on its time per call with the probe floor (the change shown is without it). Real time: each run is one observation, and a Mann-Whitney U test on the runs' medians (bench) or times per call (trace hooks) decides; A and B are then directories of repeated single results, and A, B show the median over the runs."),
    ];
    if changes
        .iter()
        .any(|c| c.test.starts_with("one run a side;"))
    {
        notes.push("Real time, one run a side: cannot tell. One run's samples share whatever drift that run met, so they cannot separate a change from drift between runs (the within-run p is shown for information only); give each side several runs.".into());
    }
    for (a, b) in pairs.iter().filter(|p| !p.passed()).map(Pair::first) {
        notes.push(format!(
            "{} on {}: not compared (A {}, B {})",
            a.config, a.kernel, a.status, b.status
        ));
    }
    notes.extend(pairs.iter().map(Pair::first).filter_map(method_note));
    if !forced.is_empty() {
        notes.push(format!(
            "WARNING: measured in different places (--force): {}",
            forced.join("; ")
        ));
    }
    Table {
        form: base::form::Form::Compare,
        title: "compare: A → B".into(),
        kernel: {
            let mut k: Vec<String> = pairs.iter().map(|p| p.a[0].kernel.to_string()).collect();
            k.dedup();
            k.join(", ")
        },
        notes,
        header: [
            "figure", "kernel", "run", "unit", "A", "B", "change", "verdict", "test",
        ]
        .map(String::from)
        .to_vec(),
        rows: changes
            .iter()
            .map(|c| Row {
                label: c.figure.clone(),
                cells: vec![
                    Cell::text(&c.kernel),
                    Cell::text(&c.run),
                    Cell::text(&c.unit),
                    Cell::value(c.a),
                    Cell::value(c.b),
                    Cell::text(base::table::fmt_pct(c.overhead_pct, 2)),
                    Cell::text(c.verdict.word()),
                    Cell::text(&c.test),
                ],
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Draws whose interval bounds round to zero print "0.0", never "-0.0".
    #[test]
    fn an_interval_of_draws_has_no_negative_zero() {
        let (v, test, _) = draws_verdict(false, &[100.0, 100.00001, 100.0], &[100.0, 100.0]);
        assert_eq!(v, stats::Verdict::WithinNoise);
        assert!(!test.contains("-0.0"), "{test}");
        assert!(test.contains("[0.0, 0.0] %"), "{test}");
    }
}
