//! `lsmpmon compare A B`: every figure two runs share, its change and a
//! verdict. Virtual time is deterministic, so a change beyond its stated
//! determinism (0.5 %) is real; real time gets a Mann-Whitney U test on the
//! recorded samples (bench) or the calls' histogram (trace).
use anyhow::Result;
use serde::Serialize;
use serde_json::Value;

use super::forms::{bench_medians, floor, latest, overhead_pct, trace};
use super::input::{Origin, Run};
use super::stats;
use crate::base::error::usage;
use crate::base::table::{Cell, Row, Table};

/// What virtual time repeats to across boots (LAB-FACTS; BENCHMARKS §2).
pub const VIRTUAL_DETERMINISM_PCT: f64 = 0.5;
const HIST_SAMPLE_CAP: usize = 20_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Faster,
    Slower,
    WithinNoise,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::WithinNoise => "within noise",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Change {
    pub kernel: String,
    pub run: String,
    pub figure: String,
    pub unit: String,
    pub a: f64,
    pub b: f64,
    /// Positive = B slower than A (for MB/s: less bandwidth).
    pub overhead_pct: f64,
    pub verdict: Verdict,
    /// "exact (±0.5 %)" or "Mann-Whitney p=…".
    pub test: String,
    pub p_value: Option<f64>,
}

/// The fields where two runs' origins differ ("kernel_release: A x vs B y").
pub fn mismatches(a: &Origin, b: &Origin) -> Vec<String> {
    let fields = [
        ("kernel_release", &a.kernel_release, &b.kernel_release),
        ("environment", &a.environment, &b.environment),
        ("time", &a.time, &b.time),
        ("hostname", &a.hostname, &b.hostname),
        ("cpu_model", &a.cpu_model, &b.cpu_model),
    ];
    fields
        .iter()
        .filter(|(_, x, y)| x != y)
        .map(|(f, x, y)| format!("{f}: {x} vs {y}"))
        .collect()
}

/// Pairs of runs to compare: by (kernel, configuration), or the one run
/// of each side.
pub fn pair<'a>(a: &'a [Run], b: &'a [Run]) -> Result<Vec<(&'a Run, &'a Run)>> {
    if let ([x], [y]) = (a, b) {
        return Ok(vec![(x, y)]);
    }
    // The newest cell per (kernel, configuration), as report's tables take.
    let (la, lb) = (latest(a), latest(b));
    let pairs: Vec<(&Run, &Run)> = la
        .iter()
        .filter_map(|(key, x)| lb.get(key).map(|y| (*x, *y)))
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
        for m in mismatches(&a.origin, &b.origin) {
            diffs.push(format!("{} on {}: {m}", a.config, a.kernel));
        }
        if a.like_key != b.like_key {
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

fn samples(run: &Run, op: &str) -> Vec<f64> {
    run.bench
        .as_ref()
        .and_then(|b| b["results"].as_array())
        .and_then(|rs| rs.iter().find(|r| r["op"] == op))
        .and_then(|r| r["samples"].as_array())
        .map(|s| s.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default()
}

fn hist_samples(h: &Value) -> Vec<f64> {
    let buckets: Vec<(f64, u64)> = h["hist"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| Some((b["low_ns"].as_f64()?, b["count"].as_u64()?)))
        .collect();
    stats::from_histogram(&buckets, HIST_SAMPLE_CAP)
}

/// The verdict on a change of `overhead` percent, and how it was reached.
pub fn verdict(
    virtual_time: bool,
    overhead: f64,
    sa: &[f64],
    sb: &[f64],
    alpha: f64,
) -> (Verdict, String, Option<f64>) {
    let direction = if overhead > 0.0 {
        Verdict::Slower
    } else {
        Verdict::Faster
    };
    if virtual_time {
        let v = if overhead.abs() <= VIRTUAL_DETERMINISM_PCT {
            Verdict::WithinNoise
        } else {
            direction
        };
        return (v, format!("exact (±{VIRTUAL_DETERMINISM_PCT} %)"), None);
    }
    match stats::mann_whitney_p(sa, sb) {
        Some(p) => {
            let v = if p < alpha && overhead != 0.0 {
                direction
            } else {
                Verdict::WithinNoise
            };
            let shown = if p >= 0.001 {
                format!("{p:.3}")
            } else {
                format!("{p:.1e}")
            };
            (v, format!("Mann-Whitney p={shown}"), Some(p))
        }
        None => (Verdict::WithinNoise, "no samples: untested".into(), None),
    }
}

fn bench_changes(a: &Run, b: &Run, alpha: f64, out: &mut Vec<Change>) {
    let bm = bench_medians(b);
    for (op, unit, va) in bench_medians(a) {
        let Some((_, _, vb)) = bm.iter().find(|r| r.0 == op) else {
            continue;
        };
        let overhead = overhead_pct(&unit, va, *vb);
        let (v, test, p) = verdict(
            a.time == "virtual",
            overhead,
            &samples(a, &op),
            &samples(b, &op),
            alpha,
        );
        out.push(Change {
            kernel: a.kernel.clone(),
            run: a.config.clone(),
            figure: format!("bench {op}"),
            unit,
            a: va,
            b: *vb,
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
    let hooks = |t: &Value| t["hooks"].as_array().cloned().unwrap_or_default();
    let hb = hooks(tb);
    for h in hooks(ta) {
        let Some(g) = hb.iter().find(|g| g["hook"] == h["hook"]) else {
            continue;
        };
        let (Some(xa), Some(xb)) = (
            super::forms::timed(&h, floor(ta)),
            super::forms::timed(g, floor(tb)),
        ) else {
            continue;
        };
        let (Some(ra), Some(rb)) = (super::forms::timed(&h, 0.0), super::forms::timed(g, 0.0))
        else {
            continue;
        };
        if xa <= 0.0 || ra <= 0.0 {
            continue;
        }
        let overhead = overhead_pct("ns", xa, xb);
        // Virtual time repeats the time per call, probe floor included, to
        // 0.5 %: judged on that, not on the small figure left after the floor.
        let (v, test, p) = verdict(
            a.time == "virtual",
            overhead_pct("ns", ra, rb),
            &hist_samples(&h),
            &hist_samples(g),
            alpha,
        );
        out.push(Change {
            kernel: a.kernel.clone(),
            run: a.config.clone(),
            figure: format!("hook {}", h["hook"].as_str().unwrap_or("?")),
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
            let mut k: Vec<&str> = pairs.iter().map(|(a, _)| a.kernel.as_str()).collect();
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
