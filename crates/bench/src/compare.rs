//! `--compare BASE.json`: each op as the LSMPMON paper's Table 3 prints it,
//! `value (+x %)`, with changes inside the noise marked, and a baseline from
//! another kernel, mode or machine refused (or, with --force, flagged). In
//! real time one run a side cannot tell a change from drift between runs:
//! such rows are marked so, never slower or faster.
use std::path::Path;

use anyhow::Result;

use base::error::usage;
use base::stats::{overhead_pct, verdict, Verdict};
use base::table::{fmt_num, fmt_pct, plain, Cell, Row, Table};
use model::bench::{BenchProvenance, BenchResult, PathShape, BENCH_SCHEMA};
use model::identity::Origin;
use model::provenance::TimeMode;
use model::read::load_as;

pub struct CompareRow {
    pub op: String,
    pub unit: String,
    pub base: f64,
    pub value: f64,
    /// Positive = slower (more ns/op, or fewer MB/s).
    pub overhead_pct: f64,
    pub verdict: Verdict,
    /// How the verdict was reached ("exact (±0.5 %)", "one run a side; …").
    pub test: String,
}

/// The baseline file: a bench result, or one line saying what it is instead.
pub fn read_baseline(path: &Path) -> Result<BenchResult> {
    load_as("baseline", path, BENCH_SCHEMA, "bench")
}

/// Refuses a baseline that was not measured where `cur` is (checked before
/// anything runs); returns the mismatches when `force` lets it through.
pub fn check_comparable(
    base: &BenchResult,
    cur: &BenchProvenance,
    cur_dir: PathShape,
    force: bool,
) -> Result<Vec<String>> {
    // The same like-with-like rule as `lsmpmon compare` (baseline first).
    let mut diffs = Origin::of_bench(&base.provenance).mismatches(&Origin::of_bench(cur));
    diffs.extend(base.options.path_shape().mismatch(cur_dir));
    if !diffs.is_empty() && !force {
        return Err(usage(format!(
            "baseline was measured elsewhere ({}): compare like with like, or pass --force",
            diffs.join("; ")
        )));
    }
    Ok(diffs)
}

/// Refuses a baseline that has none of the selected ops (or no results).
pub fn check_ops(base: &BenchResult, selected: &[&str]) -> Result<()> {
    let ops: Vec<&str> = base.results.iter().map(|o| o.op.as_str()).collect();
    if !selected.iter().any(|s| ops.contains(s)) {
        return Err(usage(format!(
            "the baseline has none of the selected ops (it has: {}): nothing to compare",
            if ops.is_empty() {
                "none".to_string()
            } else {
                ops.join(" ")
            }
        )));
    }
    Ok(())
}

/// One row per op present in both results, with `lsmpmon compare`'s verdict
/// on one run a side: virtual time exact against its determinism, real time
/// "cannot tell".
pub fn rows(base: &BenchResult, cur: &BenchResult) -> Vec<CompareRow> {
    let mut out = Vec::new();
    for r in &cur.results {
        let Some(b) = base.op(&r.op) else {
            continue;
        };
        let v = r.summary.median;
        let overhead = overhead_pct(r.unit.higher_is_better(), b.summary.median, v);
        let (verdict, test, _) = verdict(
            cur.provenance.base.time == TimeMode::Virtual,
            overhead,
            &b.samples,
            &r.samples,
        );
        out.push(CompareRow {
            op: r.op.clone(),
            unit: r.unit.name().to_string(),
            base: b.summary.median,
            value: v,
            overhead_pct: overhead,
            verdict,
            test,
        });
    }
    out
}
pub fn render(rows: &[CompareRow], forced: &[String]) -> String {
    let mut s = String::new();
    if !forced.is_empty() {
        s += &format!(
            "WARNING: baseline measured elsewhere (--force): {}\n",
            forced.join("; ")
        );
    }
    let t = Table {
        form: base::form::Form::BenchCompare,
        title: "against the baseline (overhead: positive = slower)".into(),
        kernel: String::new(),
        notes: Vec::new(),
        header: ["op", "unit", "baseline", "now (overhead)", "noise", "test"]
            .map(String::from)
            .to_vec(),
        rows: rows
            .iter()
            .map(|r| Row {
                label: r.op.clone(),
                cells: vec![
                    Cell::text(&r.unit),
                    Cell::fixed(r.base, 2),
                    Cell::text(format!(
                        "{} ({})",
                        fmt_num(r.value, 2),
                        fmt_pct(r.overhead_pct, 1)
                    )),
                    Cell::text(match r.verdict {
                        Verdict::WithinNoise => "~noise",
                        Verdict::CannotTell => "cannot tell",
                        Verdict::Slower => "slower",
                        Verdict::Faster => "faster",
                    }),
                    Cell::text(&r.test),
                ],
            })
            .collect(),
    };
    s += &plain(&t);
    if rows.iter().any(|r| r.verdict == Verdict::CannotTell) {
        s += "\ncannot tell: in real time one run a side cannot separate a change from drift between runs; \
              write several runs a side (--json > A/1.json, ...) and compare the two directories with `lsmpmon compare A B`\n";
    }
    s + "\n"
}
