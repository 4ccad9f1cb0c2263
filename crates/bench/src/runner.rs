//! The method (after lmbench, done better): grow the iteration count until one
//! sample lasts long enough, warm up, take N samples, report the median and
//! spread, subtract the clock's own cost. Any error fails the operation.
//! Samples are taken round-robin across the selected ops, so that a slow
//! phase of the machine touches every op a little instead of one op wholly.
//! An op that holds a descriptor per op (close, creat) is timed in batches
//! that fit the descriptor limit: only the batches' runs are timed, each
//! less one clock-read pair, and their sum over the sample's ops is the
//! figure, as one run's would be.
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::interrupt::requested_now;
use super::op::{Bench, Ctx, OpDef, Unit, Work};
use super::stats::summarize;
use super::sys::timed_name;
pub use model::bench::{Latency, OpResult};

pub struct Method {
    /// Minimum duration of one sample.
    pub sample: Duration,
    /// Operations per sample, fixed: no calibration, one warm-up sample.
    pub fixed_iterations: Option<u64>,
}

/// One sample: its timed nanoseconds (less one clock-read pair per timed
/// run), what the op did, and the most ops of one timed run when the op
/// works in batches.
struct Timed {
    elapsed_ns: f64,
    work: Work,
    batch: Option<u64>,
}

/// Runs the op `iters` times, counting what it did into `ran` (the ops a
/// trace of the timed name sees). An op with a batch limit runs them as
/// batches, each prepared and finished untimed; the sample's time is the
/// sum of the batches' timed runs.
/// `settle`: wait after each untimed prepare until the kernel's deferred
/// work is done (see `settle`), so that what the prepare left (hundreds of
/// files created before a delete op's timed unlinks) is not timed.
fn timed(
    b: &mut dyn Bench,
    iters: u64,
    clock_ns: f64,
    ran: &mut u64,
    settle: bool,
) -> Result<Timed> {
    let batch = b.batch_limit()?.map(|n| n.clamp(1, iters));
    let mut t = Timed {
        elapsed_ns: 0.0,
        work: Work::default(),
        batch,
    };
    let mut left = iters;
    while left > 0 {
        let n = batch.map_or(left, |most| most.min(left));
        let (el, work) = timed_run(b, n, clock_ns, ran, settle)?;
        t.elapsed_ns += el;
        t.work.ops += work.ops;
        t.work.bytes += work.bytes;
        left -= n;
    }
    Ok(t)
}

/// One timed run of `iters` ops between the op's untimed prepare and finish.
fn timed_run(
    b: &mut dyn Bench,
    iters: u64,
    clock_ns: f64,
    ran: &mut u64,
    settle: bool,
) -> Result<(f64, Work)> {
    b.prepare(iters)?;
    if settle {
        crate::settle::settle();
    }
    let (work, elapsed) = timed_name::timed(|| {
        let start = Instant::now();
        let work = b.run(iters);
        (work, start.elapsed().as_nanos() as f64)
    });
    let work = work?;
    *ran += work.ops;
    let elapsed = b.child_timed_ns().unwrap_or(elapsed) - clock_ns;
    b.finish()?;
    // Ops that work in rounds (ring hops, two yielding tasks) may round up.
    if work.ops < iters || work.ops > iters + MAX_ROUND_UP {
        bail!("did {} operations of the {iters} asked", work.ops);
    }
    Ok((elapsed.max(1.0), work))
}

/// An op calibrated and warmed up, collecting samples.
pub struct Prepared<'a> {
    pub def: &'a OpDef,
    bench: Box<dyn Bench>,
    iters: u64,
    overhead_ns: Option<f64>,
    samples: Vec<f64>,
    latencies_ns: Vec<f64>,
    ops: u64,
    bytes: u64,
    /// Every op run, calibration and warm-up included.
    ops_run: u64,
    /// The smallest batch a sample was timed in (ops with a batch limit).
    batch_calls: Option<u64>,
}

const MAX_ITERS: u64 = 1 << 30;
/// A ring of --ctx-procs processes rounds its hops up to whole rounds.
const MAX_ROUND_UP: u64 = 63;

/// Sets the op up, grows its iteration count until a sample lasts long
/// enough, and runs one warm-up sample.
pub fn prepare<'a>(def: &'a OpDef, ctx: &Ctx, m: &Method, clock_ns: f64) -> Result<Prepared<'a>> {
    let mut bench = (def.make)(ctx).with_context(|| format!("setting up {}", def.name))?;
    let mut ops_run = 0;
    let iters = match m.fixed_iterations {
        Some(n) => {
            timed(bench.as_mut(), n, clock_ns, &mut ops_run, false)?;
            n
        }
        None => calibrate(bench.as_mut(), m, clock_ns, &mut ops_run)?,
    };
    let overhead_ns = bench.overhead_ns()?;
    // Calibration and warm-up requests are not the op's figures.
    bench.take_latencies_ns();
    Ok(Prepared {
        def,
        bench,
        iters,
        overhead_ns,
        samples: Vec::new(),
        latencies_ns: Vec::new(),
        ops: 0,
        bytes: 0,
        ops_run,
        batch_calls: None,
    })
}

/// Grows the iteration count until a sample lasts --sample-ms; the last run
/// is the warm-up.
fn calibrate(bench: &mut dyn Bench, m: &Method, clock_ns: f64, ran: &mut u64) -> Result<u64> {
    let target = m.sample.as_nanos() as f64;
    let grow = |iters: u64, el: f64| {
        let scale = (target / el * 1.2).clamp(2.0, 16.0);
        ((iters as f64) * scale).ceil() as u64
    };
    let mut iters = bench.whole_iterations(1);
    loop {
        if requested_now() {
            bail!("interrupted");
        }
        let el = timed(bench, iters, clock_ns, ran, false)?.elapsed_ns;
        if el < target && iters < MAX_ITERS {
            iters = bench.whole_iterations(grow(iters, el));
            continue;
        }
        // The warm-up sample must confirm the count: one slow first run (a
        // cold cache, a first connection) is not the op's cost, and would
        // leave samples far shorter than --sample-ms.
        if requested_now() {
            bail!("interrupted");
        }
        let again = timed(bench, iters, clock_ns, ran, false)?.elapsed_ns;
        if again >= target / 2.0 || iters >= MAX_ITERS {
            return Ok(iters);
        }
        iters = bench.whole_iterations(grow(iters, again));
    }
}

impl Prepared<'_> {
    /// Takes one timed sample.
    pub fn sample(&mut self, clock_ns: f64, settle: bool) -> Result<()> {
        let Timed {
            elapsed_ns: el,
            work,
            batch,
        } = timed(
            self.bench.as_mut(),
            self.iters,
            clock_ns,
            &mut self.ops_run,
            settle,
        )?;
        self.batch_calls = match (self.batch_calls, batch) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.ops += work.ops;
        self.bytes += work.bytes;
        self.latencies_ns.extend(self.bench.take_latencies_ns());
        self.samples.push(match self.def.unit {
            Unit::NsPerOp => el / work.ops as f64 - self.overhead_ns.unwrap_or(0.0),
            Unit::MBps => work.bytes as f64 / el * 1e3,
        });
        Ok(())
    }

    pub fn sampled(&self) -> bool {
        !self.samples.is_empty()
    }

    pub fn result(mut self) -> Result<OpResult> {
        if self.def.unit == Unit::MBps && self.bytes == 0 {
            bail!("{} moved no bytes", self.def.name);
        }
        let avc = self.bench.avc()?;
        Ok(OpResult {
            op: self.def.name.into(),
            group: self.def.group.into(),
            unit: self.def.unit,
            iterations: self.iters,
            summary: summarize(&self.samples),
            samples: self.samples,
            proof_ops: self.ops,
            proof_bytes: self.bytes,
            ops_run: timed_name::is_set().then_some(self.ops_run),
            batch_calls: self.batch_calls,
            helper_rss_kb: self.bench.helper_rss_kb(),
            helper: self.bench.helper(),
            overhead_ns: self.overhead_ns,
            latency: Latency::of(&self.latencies_ns),
            avc,
        })
    }
}
