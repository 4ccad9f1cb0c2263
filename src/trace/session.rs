//! One running trace: the loaded programs, what is attached, and turning the
//! BPF maps into a result at any moment (final, --interval, `trace ctl dump`).
use std::{
    collections::BTreeMap,
    os::fd::{AsFd, AsRawFd},
    time::{Duration, Instant},
};

use anyhow::Result;

use super::attach::Pair;
use super::bpf::LsmpmonSkel;
use super::{arrays, attach, collect, cpu_stats::CpuStats, hooks::Hook};
use crate::intf::{lsmpmon_limits as lim, lsmpmon_syscall_cell, lsmpmon_syscall_time};
use crate::results::{ProbeInfo, TraceOptions, TraceResult, TRACE_SCHEMA};

pub struct Session<'obj> {
    pub skel: LsmpmonSkel<'obj>,
    pub stats: CpuStats,
    pub hooks: Vec<Hook>,
    pub pairs: Vec<Pair>,
    pub calibration: Option<Pair>,
    pub probe: ProbeInfo,
    pub options: TraceOptions,
    pub provenance: crate::results::Provenance,
    pub enabled_at: Option<Instant>,
    pub elapsed: Duration,
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
        if let Some(bss) = self.skel.maps.bss_data.as_deref_mut() {
            let ns = pair_cost_ns.unwrap_or(0.0).round() as u64;
            // SAFETY: as in set_enabled().
            unsafe { std::ptr::write_volatile(&mut bss.nested_cost_ns, ns) };
        }
    }

    fn elapsed_ns(&self) -> u64 {
        let running = self.enabled_at.map(|t| t.elapsed()).unwrap_or_default();
        (self.elapsed + running).as_nanos() as u64
    }

    fn n_cells(&self) -> u32 {
        self.hooks.len() as u32 * lim::LSMPMON_SYSCALL_SLOTS
    }

    pub fn reset(&mut self) -> Result<()> {
        let maps = &self.skel.maps;
        self.stats.clear();
        arrays::clear::<lsmpmon_syscall_cell>(
            maps.syscall_cells.as_fd().as_raw_fd(),
            self.n_cells(),
        )?;
        arrays::clear::<lsmpmon_syscall_time>(
            maps.syscall_time.as_fd().as_raw_fd(),
            lim::LSMPMON_SYSCALL_SLOTS,
        )?;
        self.elapsed = Duration::ZERO;
        if self.enabled_at.is_some() {
            self.enabled_at = Some(Instant::now());
        }
        Ok(())
    }

    /// Everything measured so far, as a result.
    pub fn snapshot(&mut self) -> Result<TraceResult> {
        // Per hook, and last the calibration probe.
        let mut stats = self.stats.sum();
        // A probe the kernel skipped (recursion) is a dropped call of its hook.
        let mut misses_total = 0;
        for p in &self.pairs {
            let misses = attach::recursion_misses(&p.entry) + attach::recursion_misses(&p.exit);
            stats[p.hook_id as usize].dropped += misses;
            misses_total += misses;
        }
        self.probe.recursion_misses = misses_total;
        let calib = &stats[self.hooks.len()];
        if self.calibration.is_some() && calib.count > 0 {
            self.probe.floor_ns = Some(calib.sum_ns as f64 / calib.count as f64);
            self.probe.floor_samples = calib.count;
        }
        let subtract = self
            .options
            .subtract_floor
            .then_some(self.probe.floor_ns)
            .flatten();
        let mut hooks = Vec::new();
        let mut per_lsm = Vec::new();
        for (i, h) in self.hooks.iter().enumerate() {
            let r = collect::hook_result(h, &stats[i], subtract, !self.options.lean);
            match &h.lsm {
                None => hooks.push(r),
                Some(lsm) => {
                    for other in &h.also {
                        let mut shared = r.clone();
                        shared.hook = other.clone();
                        per_lsm.push(crate::results::LsmHookResult {
                            lsm: lsm.clone(),
                            stats: shared,
                        });
                    }
                    per_lsm.push(crate::results::LsmHookResult {
                        lsm: lsm.clone(),
                        stats: r,
                    });
                }
            }
        }
        let mut cells: BTreeMap<(u32, u32), lsmpmon_syscall_cell> = BTreeMap::new();
        let mut add_cell = |hook: u32, slot: u32, count: u64, sum_ns: u64| {
            let c = cells.entry((hook, slot)).or_default();
            c.count += count;
            c.sum_ns += sum_ns;
        };
        arrays::for_each::<lsmpmon_syscall_cell>(
            self.skel.maps.syscall_cells.as_fd().as_raw_fd(),
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
        let times = if self.options.syscall_time {
            let mut t: BTreeMap<u32, lsmpmon_syscall_time> = BTreeMap::new();
            arrays::for_each::<lsmpmon_syscall_time>(
                self.skel.maps.syscall_time.as_fd().as_raw_fd(),
                lim::LSMPMON_SYSCALL_SLOTS,
                |k, v| {
                    let e = t.entry(k).or_default();
                    e.sum_ns += v.sum_ns;
                    e.count += v.count;
                    e.hook_ns += v.hook_ns;
                },
            )?;
            Some(t)
        } else {
            None
        };
        Ok(TraceResult {
            schema: TRACE_SCHEMA,
            provenance: self.provenance.clone(),
            options: self.options.clone(),
            probe: self.probe.clone(),
            elapsed_ns: self.elapsed_ns(),
            hooks,
            per_lsm,
            syscalls: collect::syscalls(&self.hooks, &cells, times.as_ref(), subtract),
        })
    }
}
