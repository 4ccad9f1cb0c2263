//! What a result must satisfy to be shown, checked as it is read: figures a
//! table divides by or draws are finite and in order (min ≤ average ≤ max,
//! a median inside its samples), and a cell that says it passed has a proof
//! that passed. Counts cannot be negative and time modes are known: the
//! types already refuse those. Every figure lies within physical bounds (an
//! op takes at least a nanosecond and less than an hour, a module's calls
//! during an op fit in that hour), so any ratio a form derives from two
//! checked figures is finite. A result that fails is refused whole.
use super::account::OpCalls;
use super::bench::{BenchOptions, BenchResult, OpResult, Unit};
use super::cell::{CellResult, CellStatus, Memory, RunOptions};
use super::compare::CompareResult;
use super::index::Index;
use super::provenance::KernelRef;
use super::report::ReportResult;
use super::trace::{HookResult, SyscallHook, TraceResult};

/// No probe pair costs a second: a floor beyond it is not a measurement.
pub const MAX_FLOOR_NS: f64 = 1e9;
/// No operation lsmpmon times (a system call at the least) takes less than
/// a nanosecond.
pub const MIN_NS_PER_OP: f64 = 1.0;
/// An hour: no op, hook call or request of a benchmark lasts that long.
pub const MAX_NS: f64 = 3.6e12;
/// Bandwidth: a byte a second at the least, a petabyte a second at most.
pub const MIN_MB_PER_S: f64 = 1e-6;
pub const MAX_MB_PER_S: f64 = 1e9;
/// A time per call left after the probe floor is 0 or at least this (an
/// attosecond): a smaller one is no measurement, and a ratio over it would
/// not be finite.
pub const MIN_NS_PER_CALL: f64 = 1e-9;
/// Memory a guest reports, KiB (4 TiB).
pub const MAX_KIB: u64 = 1 << 32;

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

/// A duration within an hour (a latency, a subtracted overhead).
fn bounded_time(x: f64) -> bool {
    time(x) && x < MAX_NS
}

/// A time per call after the floor: 0, or within [MIN_NS_PER_CALL, MAX_NS).
fn call_time(x: f64) -> bool {
    x == 0.0 || (MIN_NS_PER_CALL..MAX_NS).contains(&x)
}

/// What an op's figures in `unit` must lie within, and how a refusal names it.
fn op_bounds(unit: Unit) -> (f64, f64, &'static str) {
    match unit {
        Unit::NsPerOp => (MIN_NS_PER_OP, MAX_NS, "1 ns to 1 h per op"),
        Unit::MBps => (MIN_MB_PER_S, MAX_MB_PER_S, "1 B/s to 1 PB/s"),
    }
}

/// Every figure of the op's samples and summary within its unit's bounds.
fn plausible(o: &OpResult) -> Result<(), String> {
    let (low, high, range) = op_bounds(o.unit);
    let s = &o.summary;
    let figures = [("median", s.median), ("min", s.min), ("max", s.max)]
        .into_iter()
        .chain(o.samples.iter().map(|x| ("sample", *x)));
    for (field, x) in figures {
        if !(low..high).contains(&x) {
            return Err(format!(
                "{}: {field} {x:?} {} is outside {range}: not a measurement",
                o.op,
                o.unit.name()
            ));
        }
    }
    if let Some(x) = o.overhead_ns.filter(|x| !bounded_time(*x)) {
        return Err(format!(
            "{}: overhead_ns {x} is not a time under an hour",
            o.op
        ));
    }
    Ok(())
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
    plausible(o)?;
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
        if !p.iter().all(|x| bounded_time(*x)) || p.windows(2).any(|w| w[0] > w[1]) {
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
        if !bounded_time(self.clock_overhead_ns) {
            return Err(format!(
                "clock_overhead_ns {} is beyond an hour: not a clock read",
                self.clock_overhead_ns
            ));
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
    if !call_time(h.ave_ns) {
        return Err(format!(
            "hook {}: ave_ns {:?} is not a time per call (0, or {MIN_NS_PER_CALL} ns to 1 h)",
            h.hook, h.ave_ns
        ));
    }
    let name = &h.hook;
    let times = [
        ("min_ns", Some(h.min_ns)),
        ("max_ns", Some(h.max_ns)),
        ("p50_ns", h.p50_ns),
        ("p99_ns", h.p99_ns),
    ];
    let top_bucket = h.hist.iter().map(|b| b.low_ns).max();
    for (field, x) in times.into_iter().chain([("hist low_ns", top_bucket)]) {
        if let Some(x) = x.filter(|x| *x as f64 >= MAX_NS) {
            return Err(format!(
                "hook {name}: {field} {x} is beyond an hour: not a call's time"
            ));
        }
    }
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
            if let Some(h) = s.hooks.iter().find(|h| !call_time(h.ave_ns)) {
                return Err(format!(
                    "syscall {}, hook {}: ave_ns {:?} is not a time per call",
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

/// One op's module calls (the accounting identity's input): timed calls
/// among the calls, each under an hour, and per run of the op fewer calls
/// than nanoseconds in an hour and less than an hour of module time.
fn op_calls(o: &OpCalls) -> Result<(), String> {
    let op = &o.op;
    let modules = o
        .calls
        .iter()
        .map(|c| (&c.function, c.calls, c.count, c.sum_ns));
    let hooks = o.hooks.iter().flatten();
    let hooks = hooks.map(|h| (&h.function, h.calls, h.count, h.sum_ns));
    for (f, calls, count, sum_ns) in modules.chain(hooks) {
        if count > calls {
            return Err(format!(
                "op_calls {op}, {f}: count {count} is more than calls {calls}"
            ));
        }
        let per_call = sum_ns as f64 / count.max(1) as f64;
        if per_call >= MAX_NS || (count == 0 && sum_ns > 0) {
            return Err(format!(
                "op_calls {op}, {f}: sum_ns {sum_ns} over {count} timed calls is not a call's time"
            ));
        }
    }
    if o.ops_run == 0 {
        return Ok(());
    }
    let runs = o.ops_run as f64;
    let per_run = |calls: f64, ns: f64, what: &str| {
        let (calls, ns) = (calls / runs, ns / runs);
        if calls >= MAX_NS || ns >= MAX_NS {
            return Err(format!(
                "op_calls {op}: {calls:.3e} calls and {ns:.3e} ns of {what} time per run of the op (ops_run {}): not what an op under an hour makes",
                o.ops_run
            ));
        }
        Ok(())
    };
    let sum = |it: &mut dyn Iterator<Item = (f64, f64)>| {
        it.fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1))
    };
    let (calls, ns) = sum(&mut o.calls.iter().map(|c| (c.calls as f64, c.net_ns(0.0))));
    per_run(calls, ns, "module")?;
    let (calls, ns) = sum(&mut o
        .hooks
        .iter()
        .flatten()
        .map(|h| (h.calls as f64, h.net_ns(0.0))));
    per_run(calls, ns, "hook")
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
    if m.total_kib > MAX_KIB {
        return Err(format!(
            "guest.footprint.{when}: total_kib {} is beyond 4 TiB: not a guest's memory",
            m.total_kib
        ));
    }
    if m.used_kib > m.total_kib {
        return Err(format!(
            "guest.footprint.{when}: used_kib {} is more than total_kib {}",
            m.used_kib, m.total_kib
        ));
    }
    Ok(())
}

fn run_options(o: &RunOptions) -> Result<(), String> {
    if o.cpus == 0 {
        return Err("options.cpus 0: a guest has at least one CPU".into());
    }
    // A clock of a draw's form beyond the draws lsmpmon runs would be read
    // as draw 0 and take its place.
    let drawn_base = o
        .rtc
        .split(',')
        .filter_map(|p| p.strip_prefix("base="))
        .find(|b| b.starts_with(&format!("{}T", super::draw::RTC_FIXED_BASE)));
    if drawn_base.is_some_and(|b| super::draw::draw_of_rtc_base(b).is_none()) {
        return Err(format!(
            "options.rtc {:?} is not one of lsmpmon's layout draws (0 to {})",
            o.rtc,
            super::draw::MAX_DRAWS
        ));
    }
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
        if let Some((name, kib)) = f.slab_kib.iter().find(|(_, k)| **k > MAX_KIB) {
            return Err(format!(
                "guest.footprint.slab_kib.{name}: {kib} KiB is beyond 4 TiB: not a slab cache"
            ));
        }
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
        g.op_calls.iter().flatten().try_for_each(op_calls)?;
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
    use super::{image_sizes, op_calls, Check};
    use crate::account::{ModuleCalls, OpCalls};
    use crate::bench::BenchResult;
    use crate::trace::TraceResult;
    use crate::{ImageSizes, SectionSizes};

    fn fixture<T: serde::de::DeserializeOwned>(name: &str) -> T {
        let f = std::path::Path::new(base::SOURCE_TREE)
            .join("tests/fixtures/report")
            .join(name);
        serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap()
    }

    /// Every figure of the bench fixture's first op set to `x`.
    fn bench_at(x: f64) -> BenchResult {
        let mut b: BenchResult = fixture("bench-host.json");
        let o = &mut b.results[0];
        o.samples.iter_mut().for_each(|s| *s = x);
        (
            o.summary.median,
            o.summary.min,
            o.summary.max,
            o.summary.mean,
        ) = (x, x, x, x);
        (o.summary.cov_pct, o.summary.spread_pct) = (0.0, 0.0);
        b
    }

    /// Issue 52 item 4: a median of 5e-324 ns passed (positive) and printed
    /// "+inf %"; 1.7e308 printed 309 digits.
    #[test]
    fn an_op_outside_a_nanosecond_to_an_hour_is_refused() {
        assert_eq!(bench_at(1.0).check(), Ok(()));
        assert_eq!(bench_at(3.5e12).check(), Ok(()));
        for x in [5e-324, 0.5, 3.6e12, 1.7e308] {
            let err = bench_at(x).check().unwrap_err();
            assert!(
                err.contains("null: ") && err.contains("outside 1 ns to 1 h per op"),
                "{x}: {err}"
            );
        }
        // Bandwidth has bounds of its own.
        let mut b = bench_at(5e-324);
        b.results[0].unit = crate::bench::Unit::MBps;
        assert!(b.check().unwrap_err().contains("1 B/s to 1 PB/s"));
    }

    #[test]
    fn a_hook_time_that_no_clock_gives_is_refused() {
        let t: TraceResult = fixture("trace-6.1.json");
        assert_eq!(t.check(), Ok(()));
        let called = t.hooks.iter().position(|h| h.count > 0).unwrap();
        let mut tiny = t.clone();
        let h = &mut tiny.hooks[called];
        (h.ave_ns, h.sum_ns, h.min_ns, h.max_ns) = (5e-324, 0, 0, 1);
        let err = tiny.check().unwrap_err();
        assert!(err.contains("is not a time per call"), "{err}");
        let mut long = t.clone();
        long.hooks[called].max_ns = u64::MAX;
        assert!(long.check().unwrap_err().contains("max_ns"));
    }

    fn calls(calls: u64, count: u64, sum_ns: u64) -> ModuleCalls {
        ModuleCalls {
            lsm: "selinux".into(),
            hook: "inode_permission".into(),
            function: "selinux_inode_permission".into(),
            calls,
            count,
            sum_ns,
        }
    }

    /// Issue 52 item 4: unchecked op_calls printed
    /// "875011800653841865734349761422557184 of 420.2 µs (×2.08e33)".
    #[test]
    fn op_calls_beyond_what_an_op_makes_are_refused() {
        let op = |c: ModuleCalls, ops_run: u64| OpCalls {
            op: "stat".into(),
            ops_run,
            calls: vec![c],
            hooks: None,
        };
        // 4 calls of 300 ns a run: fine.
        assert_eq!(op_calls(&op(calls(400, 400, 120_000), 100)), Ok(()));
        // Counted elsewhere (no run by name): no figure per op to bound.
        assert_eq!(op_calls(&op(calls(400, 400, 120_000), 0)), Ok(()));
        let cases = [
            (op(calls(u64::MAX, 1, 300), 1000), "per run of the op"),
            (op(calls(1, 2, 10), 1), "count 2 is more than calls 1"),
            (op(calls(5, 0, 10), 1), "over 0 timed calls"),
            (op(calls(5, 1, u64::MAX), 1), "is not a call's time"),
        ];
        for (o, want) in cases {
            let err = op_calls(&o).unwrap_err();
            assert!(err.contains(want) && err.contains("op_calls stat"), "{err}");
        }
        // The whole hook's figures are bounded as the modules' are.
        let hook = |n: u64, timed: u64, ns: u64| {
            let mut o = op(calls(400, 400, 120_000), 100);
            o.hooks = Some(vec![crate::account::HookCalls {
                hook: "inode_permission".into(),
                function: "security_inode_permission".into(),
                calls: n,
                count: timed,
                sum_ns: ns,
            }]);
            op_calls(&o)
        };
        assert_eq!(hook(400, 400, 200_000), Ok(()));
        let err = hook(u64::MAX, 1, 300).unwrap_err();
        assert!(err.contains("of hook time per run"), "{err}");
        let err = hook(1, 2, 10).unwrap_err();
        assert!(err.contains("security_inode_permission: count 2"), "{err}");
    }

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
