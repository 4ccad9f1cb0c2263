//! `--compare BASE.json`: each op as the LSMPMON paper's Table 3 prints it,
//! `value (+x %)`, with changes inside the noise marked, and a baseline from
//! another kernel, mode or machine refused (or, with --force, flagged).
use anyhow::{Context, Result};
use serde_json::Value;

use super::{BenchProvenance, BenchResult};
use crate::base::error::usage;
use crate::base::table::{plain, Cell, Row, Table};
use crate::report::input::Origin;

pub struct CompareRow {
    pub op: String,
    pub unit: String,
    pub base: f64,
    pub value: f64,
    /// Positive = slower (more ns/op, or fewer MB/s).
    pub overhead_pct: f64,
    pub within_noise: bool,
    /// How the verdict was reached ("exact (±0.5 %)", "Mann-Whitney p=…").
    pub test: String,
}

/// Refuses a baseline that was not measured where `cur` is (checked before
/// anything runs); returns the mismatches when `force` lets it through.
pub fn check_comparable(base: &Value, cur: &BenchProvenance, force: bool) -> Result<Vec<String>> {
    if base["schema"] != super::SCHEMA {
        return Err(usage(format!(
            "baseline is not an lsmpmon bench result (schema {}, expected {})",
            base["schema"],
            super::SCHEMA
        )));
    }
    let then = Origin::from_provenance(&base["provenance"])
        .map_err(|e| usage(format!("baseline is malformed: {e}")))?;
    let now = Origin::from_provenance(&serde_json::to_value(cur)?)
        .map_err(|e| anyhow::anyhow!("this run's provenance: {e}"))?;
    // The same like-with-like rule as `lsmpmon compare` (baseline first).
    let diffs = crate::report::compare::mismatches(&then, &now);
    if !diffs.is_empty() && !force {
        return Err(usage(format!(
            "baseline was measured elsewhere ({}): compare like with like, or pass --force",
            diffs.join("; ")
        )));
    }
    Ok(diffs)
}

/// Refuses a baseline that has none of the selected ops (or no results).
pub fn check_ops(base: &Value, selected: &[&str]) -> Result<()> {
    let ops: Vec<&str> = base["results"]
        .as_array()
        .map(|r| r.iter().filter_map(|o| o["op"].as_str()).collect())
        .unwrap_or_default();
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

/// One row per op present in both results, with `lsmpmon compare`'s verdict:
/// virtual time exact against its determinism, real time a Mann-Whitney U
/// test of the two runs' samples.
pub fn rows(base: &Value, cur: &BenchResult, alpha: f64) -> Result<Vec<CompareRow>> {
    let base_ops = base["results"]
        .as_array()
        .context("baseline has no results")?;
    let mut out = Vec::new();
    for r in &cur.results {
        let Some(b) = base_ops.iter().find(|b| b["op"] == r.op.as_str()) else {
            continue;
        };
        let bm = b["median"].as_f64().context("baseline median")?;
        let base_samples: Vec<f64> = b["samples"]
            .as_array()
            .map(|s| s.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        let v = r.summary.median;
        let overhead = crate::report::forms::overhead_pct(r.unit.name(), bm, v);
        let (verdict, test, _) = crate::report::compare::verdict(
            cur.provenance.base.time == "virtual",
            overhead,
            &base_samples,
            &r.samples,
            alpha,
        );
        out.push(CompareRow {
            op: r.op.clone(),
            unit: r.unit.name().to_string(),
            base: bm,
            value: v,
            overhead_pct: overhead,
            within_noise: verdict == crate::report::compare::Verdict::WithinNoise,
            test,
        });
    }
    Ok(out)
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
        form: "bench_compare".into(),
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
                    Cell::text(format!("{:.2} ({:+.1} %)", r.value, r.overhead_pct)),
                    Cell::text(if r.within_noise {
                        "~noise"
                    } else if r.overhead_pct > 0.0 {
                        "slower"
                    } else {
                        "faster"
                    }),
                    Cell::text(&r.test),
                ],
            })
            .collect(),
    };
    s + &plain(&t) + "\n"
}
