//! The traced run op by op (`lab per-op PLAN`, hidden; the command a cell's
//! `trace --comm` runs): each op in its own confined workload, measured
//! under the workload's own name and set up under another (`bench
//! --untimed-name`), then the trace's statistics dumped through `trace
//! ctl`; the difference of two dumps is that op's module calls (the
//! accounting identity's calls per op). Prints the ops' bench result as
//! one, as `bench --json` does; writes the calls to `OP_CALLS`.
use std::{
    fs,
    path::Path,
    time::{Duration, Instant},
};

use anyhow::{bail, Context, Result};

use super::workload::{bench_args, workload};
use crate::guest_plan::{GuestPlan, WORKLOAD};
use base::task_name;
use model::{account::OpCalls, bench::BenchResult, trace::TraceResult};
use trace::ctl;

/// What the workload's setup between runs is called (not traced).
pub const UNTIMED_NAME: &str = "lsmpmon-setup";
/// Where the guest finds the op calls after the trace.
pub const OP_CALLS: &str = "/tmp/lsmpmon-lab-op-calls.json";
/// Op groups whose work runs in other programs or threads named otherwise
/// (fork and exec children, nginx, the compiler, yielding threads): a
/// trace by name does not see it, so they get no calls per op.
const NOT_BY_NAME: &[&str] = &["proc", "web", "build", "yield"];
/// How long an op's helpers may take to go after it (parent-death signal).
const HELPERS_GONE: Duration = Duration::from_secs(3);

/// The name the trace must filter on: the workload's own, from its exec.
pub fn traced_comm() -> String {
    task_name::of_exec(WORKLOAD)
}

pub fn main(plan_path: &Path) -> Result<i32> {
    let what = || format!("reading {}", plan_path.display());
    let plan: GuestPlan =
        serde_json::from_slice(&fs::read(plan_path).with_context(what)?).with_context(what)?;
    let tracer = std::os::unix::process::parent_id();
    let spec = ops_of(&plan);
    let mut before = dump(tracer)?;
    if before.options.comm.as_deref() != Some(traced_comm().as_str()) {
        bail!(
            "lab per-op runs under `lsmpmon trace --comm {}` only (its parent's trace filters on {:?})",
            traced_comm(),
            before.options.comm
        );
    }
    let (mut merged, mut calls, mut failed) = (None::<BenchResult>, Vec::new(), 0);
    for op in bench::op_names(&spec)? {
        let bench = one_op(&plan, op);
        let after = dump(tracer)?;
        match bench {
            Ok(b) => {
                calls.push(op_calls(op, &b, &before, &after)?);
                match merged.as_mut() {
                    Some(m) => m.results.extend(b.results),
                    None => merged = Some(b),
                }
            }
            Err(e) => {
                base::say!("lab: traced {op} FAILED: {}", base::error::one_line(&e));
                failed += 1;
            }
        }
        before = after;
    }
    fs::write(OP_CALLS, serde_json::to_vec(&calls)?).context("writing the op calls")?;
    if let Some(m) = merged.as_mut() {
        m.options.ops = spec;
        base::output::line(&serde_json::to_string(m)?)?;
    }
    Ok(if failed == 0 && merged.is_some() {
        0
    } else {
        1
    })
}

/// The op's share of the trace; none for ops whose work a name does not follow.
fn op_calls(
    op: &str,
    b: &BenchResult,
    before: &TraceResult,
    after: &TraceResult,
) -> Result<OpCalls> {
    let by_name = b
        .results
        .iter()
        .all(|r| !NOT_BY_NAME.contains(&r.group.as_str()));
    if !by_name {
        return Ok(OpCalls {
            op: op.into(),
            ops_run: 0,
            calls: Vec::new(),
            hooks: None,
        });
    }
    let ops_run = b.results.iter().filter_map(|r| r.ops_run).sum();
    OpCalls::between(op, ops_run, Some(before), after)
}

fn ops_of(plan: &GuestPlan) -> String {
    let mut args = plan.bench_args.iter();
    while let Some(a) = args.next() {
        if a == "--ops" {
            if let Some(v) = args.next() {
                return v.clone();
            }
        }
    }
    "paper".into()
}

/// One op, confined, measured under the workload's name; returns once its
/// helpers are gone too (their last calls are the op's).
fn one_op(plan: &GuestPlan, op: &str) -> Result<BenchResult> {
    let args = op_args(bench_args(plan, true), op);
    let out = workload(plan, true, &args)
        .output()
        .context("starting the benchmark")?;
    wait_gone(&traced_comm());
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        // The op's own failure says more than the bench's summary after it.
        let why = stderr
            .lines()
            .find_map(|l| l.split_once(" FAILED: ").map(|x| x.1))
            .or(stderr.lines().last())
            .unwrap_or("");
        bail!("{why} ({})", out.status);
    }
    serde_json::from_slice(&out.stdout).context("reading the benchmark's JSON")
}

/// The bench's command line for `op` alone, under the untimed name.
fn op_args<'a>(mut args: Vec<&'a str>, op: &'a str) -> Vec<&'a str> {
    if op != bench::workload::OP {
        // Another op's run must not gain the workload (bench adds its op
        // whenever it is given a program).
        drop_option(&mut args, "--workload");
        drop_option(&mut args, "--workload-timeout");
    }
    match args.iter().position(|a| *a == "--ops") {
        Some(i) if i + 1 < args.len() => args[i + 1] = op,
        _ => args.extend(["--ops", op]),
    }
    args.extend(["--untimed-name", UNTIMED_NAME]);
    args
}

/// Removes `option` and its value from a command line.
fn drop_option(args: &mut Vec<&str>, option: &str) {
    if let Some(i) = args.iter().position(|a| *a == option) {
        args.drain(i..(i + 2).min(args.len()));
    }
}

/// Waits (at most `HELPERS_GONE`) until no process is named `comm`.
fn wait_gone(comm: &str) {
    let t = Instant::now();
    while t.elapsed() < HELPERS_GONE && named(comm) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn named(comm: &str) -> bool {
    let Ok(procs) = fs::read_dir("/proc") else {
        return false;
    };
    procs
        .flatten()
        .any(|p| fs::read_to_string(p.path().join("comm")).is_ok_and(|c| c.trim_end() == comm))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_op_runs_alone_and_only_the_workload_op_gets_the_program() {
        let all = [
            "bench",
            "--ops",
            "null,workload",
            "--workload",
            "/w",
            "--workload-timeout",
            "9",
            "--samples",
            "1",
        ];
        let null = op_args(all.to_vec(), "null");
        assert_eq!(
            null,
            [
                "bench",
                "--ops",
                "null",
                "--samples",
                "1",
                "--untimed-name",
                UNTIMED_NAME
            ]
        );
        let w = op_args(all.to_vec(), "workload");
        assert_eq!(
            &w[..7],
            [
                "bench",
                "--ops",
                "workload",
                "--workload",
                "/w",
                "--workload-timeout",
                "9"
            ]
        );
    }
}
