//! `lsmpmon compare A B`: every figure two runs share, its change and a
//! verdict. Virtual time is deterministic, so a change beyond its stated
//! determinism (0.5 %) is real; real time gets a Mann-Whitney U test on the
//! recorded samples (bench) or the calls' histogram (trace).
use anyhow::Result;

use super::forms::{floor, latest, ops, timed, trace};
use super::input::Run;
use crate::base::error::usage;
use crate::base::stats::{self, overhead_pct, verdict, VIRTUAL_DETERMINISM_PCT};
use crate::base::table::{Cell, Row, Table};
use crate::model::compare::Change;
use crate::model::provenance::TimeMode;
use crate::model::trace::HookResult;

const HIST_SAMPLE_CAP: usize = 20_000;

/// Pairs of runs to compare: by (kernel, configuration), or the one run
/// of each side.
pub fn pair<'a>(a: &'a [Run], b: &'a [Run]) -> Result<Vec<(&'a Run, &'a Run)>> {
    if let ([x], [y]) = (a, b) {
        return Ok(vec![(x, y)]);
    }
    // The newest cell per (kernel, configuration), as report's tables take.
    let lb = latest(b);
    let pairs: Vec<(&Run, &Run)> = latest(a)
        .into_iter()
        .filter_map(|x| {
            lb.iter()
                .find(|y| y.kernel == x.kernel && y.config == x.config)
                .map(|y| (x, *y))
        })
        .collect();
    if pairs.is_empty() {
        return Err(usage(
            "A and B share no (kernel, configuration): nothing to compare",
        ));
    }
    Ok(pairs)
}

/// Refuses runs measured in different places unless `force`; returns the
/// differences that `force` let through.
pub fn check_origins(pairs: &[(&Run, &Run)], force: bool) -> Result<Vec<String>> {
    let mut diffs = Vec::new();
    for (a, b) in pairs {
        for m in a.origin.mismatches(&b.origin) {
            diffs.push(format!("{} on {}: {m}", a.config, a.kernel));
        }
        if a.alike != b.alike {
            diffs.push(format!(
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

fn bench_changes(a: &Run, b: &Run, alpha: f64, out: &mut Vec<Change>) {
    for oa in ops(a) {
        let Some(ob) = ops(b).iter().find(|r| r.op == oa.op) else {
            continue;
        };
        let (va, vb) = (oa.summary.median, ob.summary.median);
        let overhead = overhead_pct(oa.unit.higher_is_better(), va, vb);
        let (v, test, p) = verdict(
            a.time == TimeMode::Virtual,
            overhead,
            samples(a, &oa.op),
            samples(b, &oa.op),
            alpha,
        );
        out.push(Change {
            kernel: a.kernel.to_string(),
            run: a.config.clone(),
            figure: format!("bench {}", oa.op),
            unit: oa.unit.name().to_string(),
            a: va,
            b: vb,
            overhead_pct: overhead,
            verdict: v,
            test,
            p_value: p,
        });
    }
}

fn trace_changes(a: &Run, b: &Run, alpha: f64, out: &mut Vec<Change>) {
    let (Some(ta), Some(tb)) = (trace(a), trace(b)) else {
        return;
    };
    for h in &ta.hooks {
        let Some(g) = tb.hooks.iter().find(|g| g.hook == h.hook) else {
            continue;
        };
        let (Some(xa), Some(xb)) = (timed(h, floor(ta)), timed(g, floor(tb))) else {
            continue;
        };
        let (Some(ra), Some(rb)) = (timed(h, 0.0), timed(g, 0.0)) else {
            continue;
        };
        if xa <= 0.0 || ra <= 0.0 {
            continue;
        }
        let overhead = overhead_pct(false, xa, xb);
        // Virtual time repeats the time per call, probe floor included, to
        // 0.5 %: judged on that, not on the small figure left after the floor.
        let (v, test, p) = verdict(
            a.time == TimeMode::Virtual,
            overhead_pct(false, ra, rb),
            &hist_samples(h),
            &hist_samples(g),
            alpha,
        );
        out.push(Change {
            kernel: a.kernel.to_string(),
            run: a.config.clone(),
            figure: format!("hook {}", h.hook),
            unit: "ns/call".into(),
            a: xa,
            b: xb,
            overhead_pct: overhead,
            verdict: v,
            test,
            p_value: p,
        });
    }
}

/// Every figure the pairs share.
pub fn changes(pairs: &[(&Run, &Run)], alpha: f64) -> Vec<Change> {
    let mut out = Vec::new();
    for (a, b) in pairs {
        if !a.passed() || !b.passed() {
            continue;
        }
        bench_changes(a, b, alpha, &mut out);
        trace_changes(a, b, alpha, &mut out);
    }
    out
}

pub fn table(changes: &[Change], pairs: &[(&Run, &Run)], forced: &[String]) -> Table {
    let mut notes = vec![
        format!("Positive = B slower than A (for MB/s rows: less bandwidth). Virtual time: a change beyond ±{VIRTUAL_DETERMINISM_PCT} % (its determinism across boots) is real; a hook is judged on its time per call with the probe floor (the change shown is without it). Real time: Mann-Whitney U on the recorded samples (bench) or on the calls' log2 histogram (trace hooks, coarse: 2× buckets)."),
    ];
    for (a, b) in pairs.iter().filter(|(a, b)| !a.passed() || !b.passed()) {
        notes.push(format!(
            "{} on {}: not compared (A {:?}, B {:?})",
            a.config, a.kernel, a.status, b.status
        ));
    }
    if !forced.is_empty() {
        notes.push(format!(
            "WARNING: measured in different places (--force): {}",
            forced.join("; ")
        ));
    }
    Table {
        form: "compare".into(),
        title: "compare: A → B".into(),
        kernel: {
            let mut k: Vec<String> = pairs.iter().map(|(a, _)| a.kernel.to_string()).collect();
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
                    Cell::text(crate::base::table::fmt_pct(c.overhead_pct, 2)),
                    Cell::text(c.verdict.word()),
                    Cell::text(&c.test),
                ],
            })
            .collect(),
    }
}
