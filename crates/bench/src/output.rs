//! The result on standard output: a table or JSON, then the comparison with
//! the baseline, through `base::output` (a reader that went away ends it
//! quietly; a full disk is one line and exit 1).

use anyhow::Result;

use super::baseline::Baseline;
use super::compare;
use super::result::BenchResult;
use base::table::{Cell, Row, Table};

/// Prints the result (and the comparison with the baseline).
pub fn print(result: &BenchResult, json: bool, baseline: Option<&Baseline>) -> Result<()> {
    let out = if json {
        serde_json::to_string_pretty(result)? + "\n"
    } else {
        table(result)
    };
    base::output::stdout(&out)?;
    if let Some((base, forced)) = baseline {
        let text = compare::render(&compare::rows(base, result), forced);
        if json {
            base::output::stderr(&text);
        } else {
            base::output::stdout(&format!("\n{text}"))?;
        }
    }
    Ok(())
}

fn table(r: &BenchResult) -> String {
    use std::fmt::Write;
    let p = &r.provenance.base;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "lsmpmon bench on {} ({}, {} time), lsm={}{}; {} samples of {}",
        p.kernel_release,
        p.environment,
        p.time,
        p.active_lsms.join(","),
        if r.landlock.is_some() {
            ", inside a Landlock ruleset"
        } else {
            ""
        },
        r.options.samples,
        match r.options.iterations {
            Some(n) => format!("{n} ops"),
            None => format!(">= {} ms", r.options.sample_ms),
        }
    );
    let t = Table {
        form: base::form::Form::Bench,
        title: "per op".into(),
        kernel: p.kernel_release.clone(),
        notes: Vec::new(),
        header: ["op", "unit", "median", "min", "max", "spread"]
            .map(String::from)
            .to_vec(),
        rows: r.results.iter().map(row).collect(),
    };
    let _ = writeln!(s, "{}", base::table::plain(&t));
    for f in &r.failed {
        let what = if f.interrupted { "stopped" } else { "FAILED" };
        let _ = writeln!(s, "{} {what}: {}", f.op, f.reason);
    }
    s
}

fn row(o: &super::runner::OpResult) -> Row {
    Row {
        label: o.op.clone(),
        cells: vec![
            Cell::text(o.unit.name()),
            Cell::fixed(o.summary.median, 2),
            Cell::fixed(o.summary.min, 2),
            Cell::fixed(o.summary.max, 2),
            Cell::text(format!("{:.1} %", o.summary.spread_pct)),
        ],
    }
}
