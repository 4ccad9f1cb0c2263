//! What a result must satisfy to be shown, checked as it is read: figures a
//! table divides by or draws are finite and in order (min ≤ average ≤ max,
//! a median inside its samples), and a cell that says it passed has a proof
//! that passed. Counts cannot be negative and time modes are known: the
//! types already refuse those. A result that fails is refused whole.
use super::bench::{BenchOptions, BenchResult, OpResult};
use super::cell::{CellResult, CellStatus, Memory, RunOptions};
use super::compare::CompareResult;
use super::index::Index;
use super::provenance::KernelRef;
use super::report::ReportResult;
use super::trace::{HookResult, SyscallHook, TraceResult};

/// No probe pair costs a second: a floor beyond it is not a measurement.
pub const MAX_FLOOR_NS: f64 = 1e9;

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
    if o.samples.is_empty() {
        return Err(format!("{name}: samples is empty"));
    }
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
    // The mean may differ from a bound by the last bit when all samples are equal.
    let slack = 1e-9 * s.max.abs();
    if !(s.mean.is_finite() && s.min - slack <= s.mean && s.mean <= s.max + slack) {
        return Err(format!(
            "{name}: mean {} is outside min {} to max {}",
            s.mean, s.min, s.max
        ));
    }
    for (field, x) in [("cov_pct", s.cov_pct), ("spread_pct", s.spread_pct)] {
        if !time(x) {
            return Err(format!("{name}: {field} {x} is negative"));
        }
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

fn bench_options(o: &BenchOptions) -> Result<(), String> {
    recorded_options(o.samples, o.sample_ms)
}

fn recorded_options(samples: usize, sample_ms: f64) -> Result<(), String> {
    if samples == 0 {
        return Err("options.samples is 0".into());
    }
    if !positive(sample_ms) {
        return Err(format!("options.sample_ms {sample_ms} is not positive"));
    }
    Ok(())
}

impl Check for BenchResult {
    fn check(&self) -> Result<(), String> {
        bench_options(&self.options)?;
        for (field, x) in [
            ("clock_overhead_ns", self.clock_overhead_ns),
            ("wall_s", self.wall_s),
        ] {
            if !time(x) {
                return Err(format!("{field} {x} is negative"));
            }
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(o) = self.results.iter().find(|o| !seen.insert(&o.op)) {
            return Err(format!("{}: the op is given twice", o.op));
        }
        self.results.iter().try_for_each(op)
    }
}

/// `sum` and `ave × count` agree up to rounding `sum` to whole nanoseconds.
fn sum_fits(sum_ns: u64, ave_ns: f64, count: u64) -> bool {
    let product = ave_ns * count as f64;
    (sum_ns as f64 - product).abs() <= 1.0 + 1e-9 * product.abs()
}

fn hook(h: &HookResult) -> Result<(), String> {
    if !time(h.ave_ns) {
        return Err(format!(
            "hook {}: ave_ns {} is not a time",
            h.hook, h.ave_ns
        ));
    }
    let name = &h.hook;
    if h.calls != h.count.saturating_add(h.cs_count) {
        return Err(format!(
            "hook {name}: calls {} is not count {} + cs_count {}",
            h.calls, h.count, h.cs_count
        ));
    }
    let returned = [h.allow, h.deny, h.error, h.value]
        .iter()
        .map(|x| x.unwrap_or(0) as u128)
        .sum::<u128>();
    if returned > h.calls as u128 {
        return Err(format!(
            "hook {name}: allow + deny + error + value {returned} is more than calls {}",
            h.calls
        ));
    }
    if let Some(b) = h.hist.iter().find(|b| b.low_ns > b.high_ns) {
        return Err(format!(
            "hook {name}: histogram bucket low_ns {} is above high_ns {}",
            b.low_ns, b.high_ns
        ));
    }
    if !sum_fits(h.sum_ns, h.ave_ns, h.count) {
        return Err(format!(
            "hook {name}: sum_ns {} is not ave_ns {} × count {}",
            h.sum_ns, h.ave_ns, h.count
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
        if let Some(f) = self.probe.floor_ns.filter(|f| *f > MAX_FLOOR_NS) {
            return Err(format!(
                "probe.floor_ns {f} is beyond 1 s: not the cost of a probe pair"
            ));
        }
        if let Some(k) = &self.provenance.kernel {
            kernel(k)?;
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
            if let Some(h) = s.hooks.iter().find(|h| !syscall_hook_fits(h)) {
                return Err(format!(
                    "syscall {}, hook {}: ave_ns {} is not sum_ns {} / count {}",
                    s.syscall, h.hook, h.ave_ns, h.sum_ns, h.count
                ));
            }
        }
        Ok(())
    }
}

fn syscall_hook_fits(h: &SyscallHook) -> bool {
    h.count > 0 && sum_fits(h.sum_ns, h.ave_ns, h.count)
}

/// A Debian series names a cache directory: a plain name, never a path.
fn kernel(k: &KernelRef) -> Result<(), String> {
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '.' || c == '-';
    let s = &k.series;
    if s.is_empty() || !s.chars().all(plain) || s.chars().all(|c| c == '.') {
        return Err(format!(
            "kernel.series {s:?} is not a series name (letters, digits, '.' and '-')"
        ));
    }
    Ok(())
}

fn memory(when: &str, m: &Memory) -> Result<(), String> {
    if m.used_kib > m.total_kib {
        return Err(format!(
            "guest.footprint.{when}: used_kib {} is more than total_kib {}",
            m.used_kib, m.total_kib
        ));
    }
    Ok(())
}

fn run_options(o: &RunOptions) -> Result<(), String> {
    recorded_options(o.lab.samples, o.lab.sample_ms)
}

/// What every cell must satisfy, whatever its status.
fn cell_record(c: &CellResult) -> Result<(), String> {
    if c.id.is_empty() || c.id.starts_with('.') || c.id.contains(['/', '\0']) {
        return Err(format!("id {:?} is not a file name", c.id));
    }
    // `logs/<id>` below its results directory (merge copies it from there);
    // older cells named it as given to --results, absolute or not.
    let tail = format!("logs/{}", c.id);
    let climbs = c.log_dir.split('/').any(|p| p == "..");
    if climbs || !(c.log_dir.is_empty() || c.log_dir.ends_with(&tail)) {
        return Err(format!(
            "log_dir {:?} is not <results>/logs/<id>",
            c.log_dir
        ));
    }
    kernel(&c.kernel)?;
    run_options(&c.options)?;
    if !time(c.wall_s) {
        return Err(format!("wall_s {} is negative", c.wall_s));
    }
    for st in &c.stages {
        if !time(st.wall_s) {
            return Err(format!(
                "stage {}: wall_s {} is negative",
                st.name, st.wall_s
            ));
        }
        if let Some(g) = st.guest_ms.filter(|g| !time(*g)) {
            return Err(format!("stage {}: guest_ms {g} is negative", st.name));
        }
    }
    let Some(g) = &c.guest else { return Ok(()) };
    if let Some(st) = g.stages.iter().find(|st| !time(st.guest_ms)) {
        return Err(format!(
            "guest stage {}: guest_ms {} is negative",
            st.name, st.guest_ms
        ));
    }
    if let Some(p) = g.proof.as_ref().filter(|p| p.kind != c.config.proof) {
        return Err(format!(
            "guest.proof.kind {} is not the {} its configuration proves",
            p.kind, c.config.proof
        ));
    }
    if let Some(f) = &g.footprint {
        memory("before_setup", &f.before_setup)?;
        memory("after_setup", &f.after_setup)?;
    }
    Ok(())
}

/// A kernel's recorded sizes: each part's sum must be a size (a build of
/// more than 1 TiB is no kernel lsmpmon made).
fn image_sizes(i: &crate::ImageSizes) -> Result<(), String> {
    const MAX_BYTES: u64 = 1 << 40;
    let parts = std::iter::once(("vmlinux", &i.vmlinux))
        .chain(i.parts.iter().map(|(n, p)| (n.as_str(), p)));
    for (name, p) in parts {
        let sum = [p.text_bytes, p.data_bytes, p.bss_bytes]
            .iter()
            .try_fold(0u64, |a, b| a.checked_add(*b));
        if sum.is_none_or(|s| s > MAX_BYTES) {
            return Err(format!(
                "kernel.image: {name}'s sizes are not those of a kernel ({p:?})"
            ));
        }
    }
    if i.bzimage_bytes > MAX_BYTES {
        return Err(format!(
            "kernel.image: a bzImage of {} bytes",
            i.bzimage_bytes
        ));
    }
    Ok(())
}

/// A cell that did not pass shows no figures: only a passed one's are checked.
impl Check for CellResult {
    fn check(&self) -> Result<(), String> {
        cell_record(self)?;
        if let Some(i) = &self.kernel.image {
            image_sizes(i)?;
        }
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

#[cfg(test)]
mod tests {
    use super::image_sizes;
    use crate::{ImageSizes, SectionSizes};

    #[test]
    fn image_sizes_that_overflow_or_are_no_kernel_are_refused() {
        let part = |t: u64| SectionSizes {
            text_bytes: t,
            data_bytes: 10,
            bss_bytes: 0,
        };
        let mut i = ImageSizes {
            fragment_sha256: "f".into(),
            source_patch_sha256: None,
            bzimage_bytes: 3_600_000,
            vmlinux: part(10_000_000),
            parts: [("security".to_string(), part(50_000))].into(),
        };
        assert_eq!(image_sizes(&i), Ok(()));
        i.parts.insert("security".into(), part(u64::MAX));
        assert!(image_sizes(&i).unwrap_err().contains("security"));
        i.parts.clear();
        i.vmlinux = part(1 << 41);
        assert!(image_sizes(&i).is_err());
    }
}
