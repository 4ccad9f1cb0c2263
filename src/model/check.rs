//! What a result must satisfy to be shown, checked as it is read: figures a
//! table divides by or draws are finite and in order (min ≤ average ≤ max,
//! a median inside its samples), and a cell that says it passed has a proof
//! that passed. Counts cannot be negative and time modes are known: the
//! types already refuse those. A result that fails is refused whole.
use super::bench::{BenchResult, OpResult};
use super::cell::{CellResult, CellStatus};
use super::compare::CompareResult;
use super::index::Index;
use super::report::ReportResult;
use super::trace::{HookResult, TraceResult};

pub trait Check {
    /// Why the result cannot be shown, if it cannot.
    fn check(&self) -> Result<(), String>;
}

fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

fn time(x: f64) -> bool {
    x.is_finite() && x >= 0.0
}

fn op(o: &OpResult) -> Result<(), String> {
    let s = &o.summary;
    let name = &o.op;
    if !positive(s.median) {
        return Err(format!(
            "{name}: median {} is not a positive number",
            s.median
        ));
    }
    if let Some(bad) = o.samples.iter().find(|x| !positive(**x)) {
        return Err(format!("{name}: sample {bad} is not a positive number"));
    }
    if !(s.min <= s.median && s.median <= s.max) {
        return Err(format!(
            "{name}: min {} ≤ median {} ≤ max {} does not hold",
            s.min, s.median, s.max
        ));
    }
    let lowest = o.samples.iter().copied().fold(f64::INFINITY, f64::min);
    let highest = o.samples.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let inside = lowest <= s.median && s.median <= highest;
    if !o.samples.is_empty() && !inside {
        return Err(format!(
            "{name}: median {} is outside its samples ({lowest} to {highest})",
            s.median
        ));
    }
    if let Some(l) = &o.latency {
        let p = [l.p50_ns, l.p90_ns, l.p99_ns, l.max_ns];
        if !p.iter().all(|x| time(*x)) || p.windows(2).any(|w| w[0] > w[1]) {
            return Err(format!(
                "{name}: latency p50 ≤ p90 ≤ p99 ≤ max does not hold ({p:?})"
            ));
        }
    }
    Ok(())
}

impl Check for BenchResult {
    fn check(&self) -> Result<(), String> {
        self.results.iter().try_for_each(op)
    }
}

fn hook(h: &HookResult) -> Result<(), String> {
    if !time(h.ave_ns) {
        return Err(format!(
            "hook {}: ave_ns {} is not a time",
            h.hook, h.ave_ns
        ));
    }
    let (min, max) = (h.min_ns as f64, h.max_ns as f64);
    if h.count > 0 && !(min <= h.ave_ns && h.ave_ns <= max) {
        return Err(format!(
            "hook {}: min_ns {} ≤ ave_ns {} ≤ max_ns {} does not hold",
            h.hook, h.min_ns, h.ave_ns, h.max_ns
        ));
    }
    Ok(())
}

impl Check for TraceResult {
    fn check(&self) -> Result<(), String> {
        if let Some(f) = self.probe.floor_ns.filter(|f| !time(*f)) {
            return Err(format!("probe floor {f} is not a time"));
        }
        self.hooks
            .iter()
            .chain(self.per_lsm.iter().map(|l| &l.stats))
            .try_for_each(hook)?;
        for s in &self.syscalls {
            if let Some(h) = s.hooks.iter().find(|h| !time(h.ave_ns)) {
                return Err(format!(
                    "syscall {}, hook {}: ave_ns {} is not a time",
                    s.syscall, h.hook, h.ave_ns
                ));
            }
        }
        Ok(())
    }
}

/// A cell that did not pass shows no figures: only a passed one's are checked.
impl Check for CellResult {
    fn check(&self) -> Result<(), String> {
        if self.status != CellStatus::Passed {
            return Ok(());
        }
        let guest = self.guest.as_ref();
        if !guest
            .and_then(|g| g.proof.as_ref())
            .is_some_and(|p| p.passed)
        {
            return Err("status passed, but its proof did not pass (or is missing)".into());
        }
        let Some(g) = guest else { return Ok(()) };
        g.bench.iter().try_for_each(Check::check)?;
        g.traced_bench.iter().try_for_each(Check::check)?;
        g.trace.iter().try_for_each(Check::check)
    }
}

impl Check for Index {
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
}

impl Check for ReportResult {
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
}

impl Check for CompareResult {
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
}
