//! One `lsmpmon bench` run: check what was asked, calibrate every op in its
//! own directory, take the samples round-robin, print the result; the exit
//! status says what failed or that the run was interrupted.
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

use super::args::BenchArgs;
use super::baseline::check_baseline;
use super::clock::clock_overhead_ns;
use super::interrupt::Stop;
use super::op::{Ctx, OpDef};
use super::result::{BenchResult, SCHEMA};
use super::runner::{self, OpResult, Prepared};
use super::workdir::WorkDir;
use super::{host, landlock, ops, output, sys};
use base::error::one_line;
use model::bench::{BenchOptions, FailedOp, PathShape};

/// What went wrong during a run.
#[derive(Default)]
struct Outcome {
    /// Every op that gave no figures, with why (in the result too).
    failed: Vec<FailedOp>,
    /// SIGINT or SIGTERM came: ops failing from then on failed because of it.
    interrupted: bool,
}

impl Outcome {
    /// The exit: 0, or one line saying what failed or that the run stopped.
    fn verdict(&self) -> Result<i32> {
        let names: Vec<&str> = self
            .failed
            .iter()
            .filter(|f| !f.interrupted)
            .map(|f| f.op.as_str())
            .collect();
        let failed = || format!("{} op(s) failed: {}", names.len(), names.join(", "));
        match (self.interrupted, names.is_empty()) {
            (false, true) => Ok(0),
            (false, false) => Err(anyhow!(failed())).context("bench"),
            (true, true) => Err(anyhow!("interrupted (partial results printed)")),
            (true, false) => Err(anyhow!(
                "interrupted (partial results printed); before that {}",
                failed()
            )),
        }
    }
}

/// The path the workload's runs run: a private copy of the bytes read, or,
/// where a confined bench (a lab cell's path-based policy) may not write or
/// run one, the program read and hashed, by its path.
fn workload_copy(p: &ops::workload::Program, work: &mut WorkDir) -> std::path::PathBuf {
    work.op_dir("workload-program")
        .and_then(|d| p.install(&d))
        .unwrap_or_else(|e| {
            base::say!(
                "bench: the workload runs from {} (no private copy: {}); a change to it during the run is not seen",
                p.real.display(),
                one_line(&e)
            );
            p.real.clone()
        })
}

pub fn main(mut args: BenchArgs) -> Result<i32> {
    args.ops = ops::with_workload(&args.ops, args.workload.is_some())?;
    // Read and hashed once; the runs run a private copy of these bytes.
    let program = match &args.workload {
        Some(p) => Some(ops::workload::Program::read(p).map_err(base::error::usage)?),
        None => None,
    };
    if let Some(p) = &program {
        args.workload_sha256 = Some(p.sha256.clone());
        args.workload = Some(p.real.clone());
    }
    let selected = ops::select(&args.ops)?;
    if let Some(name) = &args.untimed_name {
        sys::timed_name::set(name);
    }
    ops::check_iterations(&selected, args.iterations)?;
    let mut provenance = host::provenance();
    let baseline = check_baseline(&args, &selected, &provenance)?;
    let stop = Stop::on_signals()?;
    let mut work = WorkDir::open(&args.dir)?;
    if let Some(p) = &program {
        args.workload_copy = Some(workload_copy(p, &mut work));
    }
    // Before Landlock: making a cgroup writes below /sys.
    let cgroup = program.as_ref().map(|_| sys::cgroup::make());
    provenance.workload_contained = cgroup.as_ref().map(|c| match c {
        Ok(c) => c.kind.clone(),
        Err(why) => {
            base::say!("bench: the workload runs without a cgroup of its own: {why}");
            format!("none: {why}")
        }
    });
    let workload_cgroup = cgroup.and_then(Result::ok).map(std::sync::Arc::new);
    if let Some(cpu) = args.cpu {
        host::pin(cpu)?;
    }
    let landlock = if args.landlock {
        let info =
            landlock::enter_with(work.root(), work.made_root(), args.workload_copy.as_deref())?;
        base::say!("bench: Landlock ABI {} enforcing: {}", info.abi, info.proof);
        Some(info)
    } else {
        None
    };
    let started = Instant::now();
    let clock_ns = clock_overhead_ns();
    let mut run = Run {
        clock_ns,
        // Waiting costs an idle guest in virtual time nothing; a host's
        // real-time samples are noisier than what it removes.
        settle: provenance.base.time == model::TimeMode::Virtual,
        stop: &stop,
        outcome: Outcome::default(),
        workload_cgroup,
    };
    let results = run.measure(&selected, &mut work, &args)?;
    run.outcome.interrupted |= stop.requested();
    let wall_s = started.elapsed().as_secs_f64();
    let dir_path = PathShape::of_dir(&args.dir);
    drop(work);
    let result = BenchResult {
        schema: SCHEMA.into(),
        provenance,
        options: BenchOptions {
            dir_path: Some(dir_path),
            settled: run.settle,
            ..args.options()
        },
        clock_overhead_ns: clock_ns,
        landlock,
        results,
        failed: run.outcome.failed.clone(),
        wall_s,
    };
    output::print(&result, args.json, baseline.as_ref())?;
    run.outcome.verdict()
}

/// What the steps of a run share: the clock's cost, the stop request and
/// what went wrong so far.
struct Run<'s> {
    clock_ns: f64,
    /// Wait for the deferred work earlier samples left before each sample.
    settle: bool,
    stop: &'s Stop,
    outcome: Outcome,
    workload_cgroup: Option<std::sync::Arc<sys::cgroup::Cgroup>>,
}

impl<'a> Run<'_> {
    fn op_failed(&mut self, name: &str, e: &anyhow::Error) {
        let reason = one_line(e);
        let interrupted = self.stop.requested();
        if interrupted {
            base::say!("bench: {name} stopped: {reason}");
            self.outcome.interrupted = true;
        } else {
            base::say!("bench: {name} FAILED: {reason}");
        }
        self.outcome.failed.push(FailedOp {
            op: name.into(),
            reason,
            interrupted,
        });
    }

    /// Calibrates, samples and summarises every selected op.
    fn measure(
        &mut self,
        selected: &'a [OpDef],
        work: &mut WorkDir,
        args: &BenchArgs,
    ) -> Result<Vec<OpResult>> {
        let mut prepared = self.prepare_all(selected, work, args)?;
        self.sample_rounds(&mut prepared, args.samples);
        let mut results = Vec::new();
        for p in prepared.into_iter().filter(|p| p.sampled()) {
            let r = p.result()?;
            base::say!(
                "bench: {:<15} {:>12.2} {} (spread {:.1} %)",
                r.op,
                r.summary.median,
                r.unit.name(),
                r.summary.spread_pct
            );
            results.push(r);
        }
        Ok(results)
    }

    /// Calibrates each op in its own fresh directory; failures are recorded.
    fn prepare_all(
        &mut self,
        selected: &'a [OpDef],
        work: &mut WorkDir,
        args: &BenchArgs,
    ) -> Result<Vec<Prepared<'a>>> {
        let method = runner::Method {
            sample: Duration::from_secs_f64(args.sample_ms / 1e3),
            fixed_iterations: args.iterations,
        };
        let mut prepared = Vec::new();
        for (i, def) in selected.iter().enumerate() {
            if self.stop.requested() {
                break;
            }
            let ctx = Ctx {
                dir: work.op_dir(def.name)?,
                mmap_bytes: args.mmap_bytes,
                prot_exec: args.prot_exec,
                select_fds: args.select_fds,
                ctx_procs: args.ctx_procs,
                ctx_size_kib: args.ctx_size,
                workload: args.workload_copy.clone(),
                workload_timeout_s: args.workload_timeout_s,
                workload_cgroup: self.workload_cgroup.clone(),
            };
            base::say!(
                "bench: calibrating [{}/{}] {}",
                i + 1,
                selected.len(),
                def.name
            );
            match runner::prepare(def, &ctx, &method, self.clock_ns) {
                Ok(p) => prepared.push(p),
                Err(e) => self.op_failed(def.name, &e),
            }
        }
        Ok(prepared)
    }

    /// Round-robin samples of every prepared op; a failing op is dropped.
    fn sample_rounds(&mut self, prepared: &mut Vec<Prepared<'a>>, samples: usize) {
        for round in 0..samples {
            if self.stop.requested() {
                base::say!("bench: interrupted after {round} of {samples} sample rounds");
                return;
            }
            base::say!("bench: sample round {}/{samples}", round + 1);
            let mut i = 0;
            while i < prepared.len() {
                if self.stop.requested() {
                    base::say!("bench: interrupted in sample round {}/{samples}", round + 1);
                    return;
                }
                if self.settle {
                    super::settle::settle();
                }
                match prepared[i].sample(self.clock_ns, self.settle) {
                    Ok(()) => i += 1,
                    Err(e) => {
                        let p = prepared.remove(i);
                        self.op_failed(p.def.name, &e);
                    }
                }
            }
        }
    }
}
