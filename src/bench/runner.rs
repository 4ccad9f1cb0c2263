//! The method (after lmbench, done better): grow the iteration count until one
//! sample lasts long enough, warm up, take N samples, report the median and
//! spread, subtract the clock's own cost. Any error fails the operation.
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::ops::{Bench, Ctx, OpDef, Unit};
use super::stats::{summarize, Summary};

pub struct Method {
    pub samples: usize,
    pub sample: Duration,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct OpResult {
    pub op: String,
    pub group: String,
    pub unit: Unit,
    /// Iterations per sample, grown until a sample lasted --sample-ms.
    pub iterations: u64,
    pub samples: Vec<f64>,
    #[serde(flatten)]
    pub summary: Summary,
    /// What the op proved it did over all samples (operations, bytes).
    pub proof_ops: u64,
    pub proof_bytes: u64,
}

/// Cost of one pair of clock reads, ns (median of many).
pub fn clock_overhead_ns() -> f64 {
    let mut v: Vec<f64> = (0..1001)
        .map(|_| {
            let a = Instant::now();
            let b = Instant::now();
            (b - a).as_nanos() as f64
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn timed(b: &mut dyn Bench, iters: u64, clock_ns: f64) -> Result<(f64, super::ops::Work)> {
    b.prepare(iters)?;
    let start = Instant::now();
    let work = b.run(iters)?;
    let elapsed = start.elapsed().as_nanos() as f64 - clock_ns;
    b.finish()?;
    // Ops that work in pairs (ring hops, two yielding tasks) may round up.
    if work.ops < iters || work.ops > iters + 1 {
        bail!("did {} operations of the {iters} asked", work.ops);
    }
    Ok((elapsed.max(1.0), work))
}

pub fn measure(def: &OpDef, ctx: &Ctx, m: &Method, clock_ns: f64) -> Result<OpResult> {
    let mut b = (def.make)(ctx).with_context(|| format!("setting up {}", def.name))?;
    let target = m.sample.as_nanos() as f64;
    // Grow until a sample lasts long enough.
    let mut iters = 1u64;
    loop {
        let (el, _) = timed(b.as_mut(), iters, clock_ns)?;
        if el >= target || iters >= 1 << 30 {
            break;
        }
        let scale = (target / el * 1.2).clamp(2.0, 16.0);
        iters = ((iters as f64) * scale).ceil() as u64;
    }
    timed(b.as_mut(), iters, clock_ns)?; // warm-up
    let mut samples = Vec::with_capacity(m.samples);
    let (mut ops, mut bytes) = (0, 0);
    for _ in 0..m.samples {
        let (el, work) = timed(b.as_mut(), iters, clock_ns)?;
        ops += work.ops;
        bytes += work.bytes;
        samples.push(match def.unit {
            Unit::NsPerOp => el / work.ops as f64,
            Unit::MBps => work.bytes as f64 / el * 1e3,
        });
    }
    if def.unit == Unit::MBps && bytes == 0 {
        bail!("moved no bytes");
    }
    Ok(OpResult {
        op: def.name.into(),
        group: def.group.into(),
        unit: def.unit,
        iterations: iters,
        summary: summarize(&samples),
        samples,
        proof_ops: ops,
        proof_bytes: bytes,
    })
}
