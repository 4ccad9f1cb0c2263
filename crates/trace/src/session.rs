//! One running trace: the loaded programs, what is attached, and turning the
//! BPF maps into a result at any moment (final, --interval, `trace ctl dump`).
use std::{
    collections::BTreeMap,
    os::fd::AsFd,
    time::{Duration, Instant},
};

use anyhow::Result;

use super::attach::{Attacher, Skipped};
use super::skel::LsmpmonSkel;
use super::windows::{Estimate, Timed, Windows};
use super::{arrays, cgroups, collect, cpu_stats::CpuStats, hooks::Hook};
use crate::intf::{
    lsmpmon_hook_stats, lsmpmon_limits as lim, lsmpmon_syscall_cell, lsmpmon_syscall_time,
};
use model::{ProbeInfo, TraceOptions, TraceResult, TRACE_SCHEMA};

/// The counters at the last `trace ctl reset`: later snapshots subtract them.
/// Nothing is zeroed under the probes' feet (a probe adding to a sum while
/// user space clears it would bring the old sum back), and the probe floor,
/// measured before tracing starts, survives.
#[derive(Default)]
pub struct Baseline {
    stats: Vec<lsmpmon_hook_stats>,
    cells: Cells,
    times: Times,
    misses: Vec<Skipped>,
    cgroups: cgroups::Cells,
    /// --timing-windows: each row's time estimate, settled at the reset.
    estimates: Vec<Option<Estimate>>,
}

type Cells = BTreeMap<(u32, u32), lsmpmon_syscall_cell>;
type Times = BTreeMap<u32, lsmpmon_syscall_time>;

/// Every counter as the probes left it (monotonic, never cleared).
struct Raw {
    stats: Vec<lsmpmon_hook_stats>,
    cells: Cells,
    times: Times,
    /// Probe runs the kernel skipped, per attached probe.
    misses: Vec<Skipped>,
    cgroups: cgroups::Cells,
}

pub struct Session<'obj> {
    pub skel: LsmpmonSkel<'obj>,
    pub stats: CpuStats,
    pub hooks: Vec<Hook>,
    pub attacher: Attacher,
    pub probe: ProbeInfo,
    pub options: TraceOptions,
    pub provenance: model::Provenance,
    pub enabled_at: Option<Instant>,
    pub elapsed: Duration,
    pub baseline: Baseline,
    /// --by cgroup: names, and which cgroups have rows of their own.
    pub cgroups: cgroups::Cgroups,
    /// --timing-windows: when the entries are attached, and the estimates.
    pub windows: Option<Windows>,
    /// --timing-windows: the calls since the last window valued at each
    /// hook's mean (the trace's end) rather than left for the next window.
    pub settle_windows: bool,
}

impl Session<'_> {
    pub fn set_enabled(&mut self, on: bool) {
        if let Some(bss) = self.skel.maps.bss_data.as_deref_mut() {
            // SAFETY: the .bss map is mmapped and shared with the BPF programs.
            unsafe { std::ptr::write_volatile(&mut bss.enabled, on as u32) };
        }
        match (on, self.enabled_at) {
            (true, None) => self.enabled_at = Some(Instant::now()),
            (false, Some(t)) => {
                self.elapsed += t.elapsed();
                self.enabled_at = None;
            }
            _ => {}
        }
    }

    /// Tells the probes what a nested probe pair costs (0: nothing is taken out).
    pub fn set_nested_cost(&mut self, pair_cost_ns: Option<f64>) {
        let ns = pair_cost_ns.unwrap_or(0.0).round() as u64;
        self.write_bss(|b| &mut b.nested_cost_ns, ns);
    }

    /// --timing-windows: attaches or releases entries as the windows say
    /// (a few milliseconds at most: called from the caller's loop).
    pub fn tick_windows(&mut self) {
        let Some(w) = self.windows.as_mut() else {
            return;
        };
        let stats = &self.stats;
        w.tick(&mut self.attacher, || timed_rows(stats), Instant::now());
        let timing = w.timing();
        self.write_bss(|b| &mut b.window_timing, timing as u8);
    }

    /// --timing-windows: each stats row's time estimate (`settled`: the
    /// calls since the last window valued at the hook's mean).
    fn estimates(&self, settled: bool) -> Vec<Option<Estimate>> {
        let Some(w) = &self.windows else {
            return Vec::new();
        };
        match settled {
            true => w.settled(&timed_rows(&self.stats)),
            // No second reading of the counters (a scrape's): one row a
            // hook, and the calibration probe's.
            false => (0..=self.hooks.len()).map(|i| w.estimate(i)).collect(),
        }
    }

    fn elapsed_ns(&self) -> u64 {
        let running = self.enabled_at.map(|t| t.elapsed()).unwrap_or_default();
        (self.elapsed + running).as_nanos() as u64
    }

    fn n_cells(&self) -> u32 {
        self.hooks.len() as u32 * lim::LSMPMON_SYSCALL_SLOTS
    }

    /// Starts the statistics afresh: the counters so far become the
    /// baseline; min and max restart (a probe racing this may keep one
    /// older extreme).
    pub fn reset(&mut self) -> Result<()> {
        let raw = self.raw(true)?;
        self.baseline = Baseline {
            stats: raw.stats,
            cells: raw.cells,
            times: raw.times,
            misses: raw.misses,
            cgroups: raw.cgroups,
            // Settled: the calls before the reset are valued now, not by
            // the next window's close.
            estimates: self.estimates(true),
        };
        self.stats.restart_extremes();
        self.elapsed = Duration::ZERO;
        if self.enabled_at.is_some() {
            self.enabled_at = Some(Instant::now());
        }
        Ok(())
    }

    /// The probe floor, from the calibration probe's runs before tracing
    /// started (it records nothing after).
    pub fn measure_floor(&mut self) {
        let calib = &self.stats.sum()[self.hooks.len()];
        if self.attacher.calibrated() && calib.count > 0 {
            self.probe.floor_ns = Some(calib.sum_ns as f64 / calib.count as f64);
            self.probe.floor_samples = calib.count;
        }
    }

    /// `--sample`: what the exit's test for an open frame adds inside a
    /// timed call, from the calibration probe's floor with that test and
    /// without (`measure_floor`); taken out of every sampled call's time.
    pub fn measure_sample_skew(&mut self, comm: Option<&str>) {
        let (Some(floor), true) = (self.probe.floor_ns, self.attacher.calibrated()) else {
            return;
        };
        // A session's exit tests its cookie, which the floor already holds.
        if self.books_by_cookie() {
            return;
        }
        let row = self.hooks.len();
        let before = self.stats.sum()[row];
        self.write_bss(|b| &mut b.calibrate_skew, 1);
        let ran = super::calibrate::runs(&self.skel.progs.test_run_driver, comm);
        self.write_bss(|b| &mut b.calibrate_skew, 0);
        let after = self.stats.sum()[row];
        let timed = after.count.saturating_sub(before.count);
        if !ran || timed == 0 {
            return;
        }
        let with_test = after.sum_ns.saturating_sub(before.sum_ns) as f64 / timed as f64;
        let skew = (with_test - floor).max(0.0);
        self.probe.sample_skew_ns = Some(skew);
        self.write_bss(|b| &mut b.sample_skew_ns, skew.round() as u64);
    }

    /// `--sample`: the cost of a probe pair nested in a timed call, which is
    /// timed for that call's sake and booked as untimed: the pair cost plus
    /// what the calibration probe's test runs take longer when booked so
    /// (with the exit's test) than when timed. The entry's test is not in it.
    pub fn measure_forced_pair(&mut self, comm: Option<&str>) -> Option<f64> {
        let pair = self.probe.pair_cost_ns?;
        // A session's calibration entry books its call by its cookie, not by
        // calibrate_forced: the pair cost is all there is to measure.
        if !self.attacher.calibrated() || self.books_by_cookie() {
            return None;
        }
        let timed = super::calibrate::test_run_ns(&self.skel.progs.test_run_driver, comm)?;
        self.write_bss(|b| &mut b.calibrate_forced, 1);
        self.write_bss(|b| &mut b.calibrate_skew, 1);
        let forced = super::calibrate::test_run_ns(&self.skel.progs.test_run_driver, comm);
        self.write_bss(|b| &mut b.calibrate_skew, 0);
        self.write_bss(|b| &mut b.calibrate_forced, 0);
        Some(pair + forced? - timed)
    }

    /// The fentry session multi-link: its entry and exit share a cookie,
    /// which says whether the call is timed (no frame test, no forced frame).
    fn books_by_cookie(&self) -> bool {
        self.probe.method.contains("session") && !self.probe.method.contains("kprobe")
    }

    /// Writes `v` to a field of the probes' .bss (shared, mmapped).
    fn write_bss<T>(&mut self, field: impl FnOnce(&mut super::skel::types::bss) -> &mut T, v: T) {
        if let Some(bss) = self.skel.maps.bss_data.as_deref_mut() {
            // SAFETY: as in set_enabled().
            unsafe { std::ptr::write_volatile(field(bss), v) };
        }
    }

    /// --timing-windows: the time estimate of a group of rows (one hook's
    /// callers), since the last reset.
    fn estimate_of(
        &self,
        group: &[usize],
        estimates: &[Option<Estimate>],
        subtract: Option<f64>,
    ) -> Option<u64> {
        let mut total = None;
        for &i in group {
            if let Some(e) = estimates.get(i).copied().flatten() {
                let before = self.baseline.estimates.get(i).copied().flatten();
                *total.get_or_insert(0) += e.since(before, subtract.unwrap_or(0.0));
            }
        }
        total
    }

    /// The counters now; the per-syscall cells (a map read of hooks × 512
    /// entries, most of a reading's cost) only `with_cells`.
    fn raw(&self, with_cells: bool) -> Result<Raw> {
        let stats = self.stats.sum();
        let misses = self.attacher.misses();
        let cgroups = match self.options.by_cgroup {
            true => cgroups::read(self.skel.maps.cgroup_cells.as_fd())?,
            false => cgroups::Cells::new(),
        };
        let mut cells = Cells::new();
        if !with_cells {
            return Ok(Raw {
                stats,
                cells,
                times: Times::new(),
                misses,
                cgroups,
            });
        }
        let mut add_cell = |hook: u32, slot: u32, count: u64, sum_ns: u64| {
            let c = cells.entry((hook, slot)).or_default();
            c.count += count;
            c.sum_ns += sum_ns;
        };
        arrays::for_each::<lsmpmon_syscall_cell>(
            self.skel.maps.syscall_cells.as_fd(),
            self.n_cells(),
            |k, v| {
                if v.count > 0 {
                    add_cell(
                        k / lim::LSMPMON_SYSCALL_SLOTS,
                        k % lim::LSMPMON_SYSCALL_SLOTS,
                        v.count,
                        v.sum_ns,
                    );
                }
            },
        )?;
        self.stats.pending(&mut add_cell);
        let mut times = Times::new();
        if self.options.syscall_time {
            arrays::for_each::<lsmpmon_syscall_time>(
                self.skel.maps.syscall_time.as_fd(),
                lim::LSMPMON_SYSCALL_SLOTS,
                |k, v| {
                    let e = times.entry(k).or_default();
                    e.sum_ns += v.sum_ns;
                    e.count += v.count;
                    e.hook_ns += v.hook_ns;
                },
            )?;
        }
        Ok(Raw {
            stats,
            cells,
            times,
            misses,
            cgroups,
        })
    }

    /// The counters since the last reset.
    fn since_reset(&self, with_cells: bool) -> Result<Raw> {
        let mut raw = self.raw(with_cells)?;
        let b = &self.baseline;
        for (s, old) in raw.stats.iter_mut().zip(&b.stats) {
            collect::sub_stats(s, old);
        }
        for (key, old) in &b.cells {
            if let Some(c) = raw.cells.get_mut(key) {
                c.count -= old.count.min(c.count);
                c.sum_ns -= old.sum_ns.min(c.sum_ns);
            }
        }
        raw.cells.retain(|_, c| c.count > 0);
        for (key, old) in &b.times {
            if let Some(t) = raw.times.get_mut(key) {
                t.count -= old.count.min(t.count);
                t.sum_ns -= old.sum_ns.min(t.sum_ns);
                t.hook_ns -= old.hook_ns.min(t.hook_ns);
            }
        }
        cgroups::since(&mut raw.cgroups, &b.cgroups);
        for (m, old) in raw.misses.iter_mut().zip(&b.misses) {
            m.recursion -= old.recursion.min(m.recursion);
            m.lost_returns -= old.lost_returns.min(m.lost_returns);
        }
        Ok(raw)
    }

    /// The probe floor, when the user asked for it to be taken out.
    fn floor_to_subtract(&self) -> Option<f64> {
        self.options
            .subtract_floor
            .then_some(self.probe.floor_ns)
            .flatten()
    }

    /// Each CPU's hooks (module functions left out) as measured since
    /// attach, resets not taken out: for `serve`, which refuses them.
    pub fn per_cpu(&self) -> Vec<Vec<model::HookResult>> {
        let subtract = self.floor_to_subtract();
        let groups = collect::row_groups(&self.hooks);
        (0..self.stats.cpus())
            .map(|cpu| {
                let rows = self.stats.cpu_rows(cpu);
                (groups.iter())
                    .filter(|g| self.hooks[g[0]].lsm.is_none())
                    .map(|g| collect::group_result(&self.hooks, g, &rows, subtract, false))
                    .collect()
            })
            .collect()
    }

    /// Everything measured so far (since the last reset), as a result.
    pub fn snapshot(&mut self) -> Result<TraceResult> {
        self.snapshot_with(true)
    }

    /// As `snapshot`, with the per-syscall breakdown only `with_syscalls`
    /// (`serve` and `top` read often and mostly do without it).
    pub fn snapshot_with(&mut self, with_syscalls: bool) -> Result<TraceResult> {
        let Raw {
            mut stats,
            cells,
            times,
            misses,
            cgroups,
        } = self.since_reset(with_syscalls)?;
        // A probe the kernel skipped is a dropped call of its hook.
        // (A multi-link's misses are every hook's: counted in the total only.)
        for m in &misses {
            if let Some(s) = stats.get_mut(m.hook_id as usize) {
                s.dropped += m.recursion + m.lost_returns;
            }
        }
        self.probe.recursion_misses = misses.iter().map(|m| m.recursion).sum();
        if self.probe.kretprobe_maxactive.is_some() {
            self.probe.kretprobe_missed = Some(misses.iter().map(|m| m.lost_returns).sum());
        }
        let subtract = self.floor_to_subtract();
        let estimates = self.estimates(self.settle_windows);
        if let (Some(w), Some(o)) = (&self.windows, self.options.timing_windows.as_mut()) {
            o.closed = w.closed;
            o.entry_changes = w.changes;
            o.changing_ms = w.changing.as_secs_f64() * 1e3;
        }
        let mut hooks = Vec::new();
        let mut per_lsm = Vec::new();
        for g in collect::row_groups(&self.hooks) {
            let full = !self.options.lean;
            let mut r = collect::group_result(&self.hooks, &g, &stats, subtract, full);
            if self.options.count_only {
                collect::untimed(&mut r);
            }
            r.time_estimate_ns = self.estimate_of(&g, &estimates, subtract);
            let h = &self.hooks[g[0]];
            match &h.lsm {
                None => hooks.push(r),
                Some(lsm) => {
                    for other in &h.also {
                        let mut shared = r.clone();
                        shared.hook = other.clone();
                        per_lsm.push(model::LsmHookResult {
                            lsm: lsm.clone(),
                            stats: shared,
                        });
                    }
                    per_lsm.push(model::LsmHookResult {
                        lsm: lsm.clone(),
                        stats: r,
                    });
                }
            }
        }
        let times = self.options.syscall_time.then_some(times);
        // Module functions' and the calibration probe's rows are no hook calls.
        let lost_calls = (stats.iter().zip(&self.hooks))
            .filter(|(_, h)| h.lsm.is_none())
            .map(|(s, _)| s.cgroup_lost_calls)
            .sum();
        let cgroups = self.options.by_cgroup.then(|| {
            let b = &mut self.cgroups;
            b.breakdown(&cgroups, &self.hooks, lost_calls, subtract)
        });
        Ok(TraceResult {
            schema: TRACE_SCHEMA.into(),
            provenance: self.provenance.clone(),
            options: self.options.clone(),
            probe: self.probe.clone(),
            elapsed_ns: self.elapsed_ns(),
            hooks,
            per_lsm,
            syscalls: collect::syscalls(&self.hooks, &cells, times.as_ref(), subtract),
            cgroups,
        })
    }
}

/// Every stats row's calls and timed calls, as the windows read them.
fn timed_rows(stats: &CpuStats) -> Vec<Timed> {
    stats.sum().iter().map(Timed::from).collect()
}
