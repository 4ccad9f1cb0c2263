//! The traced run op by op (`lab per-op PLAN`, hidden; the command a cell's
//! `trace --comm` runs): each op in its own confined workload, run under
//! the timed name, then the trace's statistics dumped through `trace ctl`;
//! the difference of two dumps is that op's module calls (the accounting
//! identity's calls per op). Prints the ops' bench result as one, as
//! `bench --json` does; writes the calls to `OP_CALLS`.
use std::{fs, path::Path};

use anyhow::{bail, Context, Result};

use super::guest_plan::Plan;
use super::workload::{bench_args, workload};
use crate::model::{account::OpCalls, bench::BenchResult, trace::TraceResult};
use crate::trace::ctl;

/// The task name the workload's timed regions run under (15 bytes at most).
pub const TIMED_NAME: &str = "lsmpmon-timed";
/// Where the guest finds the op calls after the trace.
pub const OP_CALLS: &str = "/tmp/lsmpmon-lab-op-calls.json";

pub fn main(plan_path: &Path) -> Result<i32> {
    let plan: Plan = serde_json::from_slice(&fs::read(plan_path)?)
        .with_context(|| format!("reading {}", plan_path.display()))?;
    let tracer = std::os::unix::process::parent_id();
    let ops = crate::bench::op_names(ops_of(&plan)?)?;
    let mut merged: Option<BenchResult> = None;
    let mut calls = Vec::new();
    let mut before = dump(tracer)?;
    let mut failed = Vec::new();
    for op in ops {
        let bench = match one_op(&plan, op) {
            Ok(b) => b,
            Err(e) => {
                crate::say!(
                    "lab: traced {op} FAILED: {}",
                    crate::base::error::one_line(&e)
                );
                failed.push(op);
                before = dump(tracer)?;
                continue;
            }
        };
        let after = dump(tracer)?;
        let ops_run = bench.results.iter().filter_map(|r| r.ops_run).sum();
        calls.push(OpCalls::between(op, ops_run, Some(&before), &after));
        before = after;
        match merged.as_mut() {
            Some(m) => m.results.extend(bench.results),
            None => merged = Some(bench),
        }
    }
    fs::write(OP_CALLS, serde_json::to_vec(&calls)?).context("writing the op calls")?;
    if let Some(m) = &merged {
        crate::base::output::line(&serde_json::to_string(m)?)?;
    }
    Ok(if failed.is_empty() && merged.is_some() {
        0
    } else {
        1
    })
}

fn ops_of(plan: &Plan) -> Result<&str> {
    let mut args = plan.bench_args.iter();
    while let Some(a) = args.next() {
        if a == "--ops" {
            return args
                .next()
                .map(String::as_str)
                .context("--ops without a value");
        }
    }
    Ok("paper")
}

/// One op, traced, confined, under the timed name.
fn one_op(plan: &Plan, op: &str) -> Result<BenchResult> {
    let mut args = bench_args(plan, true);
    if let Some(i) = args.iter().position(|a| *a == "--ops") {
        args[i + 1] = op;
    }
    args.extend(["--timed-name", TIMED_NAME]);
    let out = workload(plan, true, &args)
        .output()
        .context("starting the benchmark")?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        bail!("{} ({})", stderr.lines().last().unwrap_or(""), out.status);
    }
    serde_json::from_slice(&out.stdout).context("reading the benchmark's JSON")
}

fn dump(tracer: u32) -> Result<TraceResult> {
    let json = ctl::send(Some(tracer), ctl::Action::Dump, true)?;
    serde_json::from_str(&json).with_context(|| {
        format!(
            "reading the trace's dump: {}",
            json.lines().next().unwrap_or("")
        )
    })
}
