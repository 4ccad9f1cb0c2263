//! kprobe/kretprobe: the fallback for kernels without bpf_get_func_ret()
//! (before 5.17), and `--method kprobe` on any kernel (on 6.1 it attaches and
//! releases faster than fentry/fexit, at 2.4× the cost per call: BENCHMARKS.md,
//! 'Attach and release'). Entries through the kprobe PMU; returns through tracefs
//! events with lsmpmon's own maxactive (kretprobe.rs), or the PMU where
//! tracefs is missing.
use std::{collections::HashMap, ffi::CString, os::fd::OwnedFd};

use super::family::{Build, Family};
use super::interface::Method;
use super::kretprobe::{self, Removal, ReturnProbes};
use super::perf;
use super::probe::{self, Probe, Side, Target};
use super::template::{Kind, Template};

pub static FAMILY: Family = Family {
    name: "kprobe/kretprobe",
    arg: "kprobe",
    help: "A kprobe and a kretprobe perf event per hook, on any kernel: on 6.1 every hook attaches in about 3 s and is released in about 10 s (fentry/fexit: 5 and 33), at about 2.4 times the cost per call.",
    offered: |_| Ok([0, 0]),
    refused_missing: "",
    dearer_per_call: false,
    why_auto: None,
    counts: false,
    counts_by_multi_link: false,
    syscall_time: false,
    // --empty-probes times the kprobe.multi links' empty program.
    programs: |o| match o.empty {
        true => super::kmulti::EMPTY,
        false => ["hook_kentry", "hook_kexit"],
    },
    build: |b: Build| {
        let [entry, exit] = b.programs;
        Ok(Box::new(Kprobe::new(
            (b.template)(entry, Kind::Kprobe)?,
            (b.template)(exit, Kind::Kretprobe)?,
            b.returns,
            b.auto,
        )))
    },
};

pub struct Kprobe {
    entry: Template,
    exit: Template,
    returns: Option<ReturnProbes>,
    /// Taken because the kernel lacks fexit's bpf_get_func_ret() (not asked for).
    fallback: bool,
}

/// Before anything is attached (and the trace guard looks for other
/// probes): this trace's return probes, and the stale ones removed.
pub fn prepare() -> Option<ReturnProbes> {
    let returns = ReturnProbes::new();
    if returns.is_none() {
        base::say!("lsmpmon: warning: no tracefs kprobe_events: return probes keep the kernel's default maxactive, and returns lost while tasks sleep in a hook are not counted");
    }
    // A SIGKILLed trace's return probes would count as another tool's.
    kretprobe::remove_stale();
    returns
}

impl Kprobe {
    /// `returns`: return probes through tracefs (else the kprobe PMU's);
    /// `fallback`: not asked for (`--method kprobe`) but all the kernel offers.
    pub fn new(
        entry: Template,
        exit: Template,
        returns: Option<ReturnProbes>,
        fallback: bool,
    ) -> Self {
        Self {
            entry,
            exit,
            returns,
            fallback,
        }
    }
}

impl Method for Kprobe {
    fn name(&self) -> &'static str {
        "kprobe/kretprobe"
    }

    fn describe(&self) -> &'static str {
        "kprobe/kretprobe probe pairs"
    }

    fn attach(&self, target: &Target) -> Result<Probe, String> {
        let function = target.function;
        probe::pair(target, &self.entry, &self.exit, |side, _, prog| {
            match (side, &self.returns) {
                (Side::Exit, Some(returns)) => {
                    returns.attach(prog, function, target.consts.hook_id)
                }
                (side, _) => pmu_event(prog, function, side == Side::Exit),
            }
        })
    }

    fn note(&self) -> Option<&'static str> {
        self.fallback.then_some(
            "kernel lacks bpf_get_func_ret() (5.17): kprobe/kretprobe fallback, costlier probes",
        )
    }

    fn lost_returns(&self) -> HashMap<u32, u64> {
        self.returns
            .as_ref()
            .map(ReturnProbes::missed)
            .unwrap_or_default()
    }

    fn maxactive(&self) -> Option<u32> {
        self.returns.as_ref()?.maxactive()
    }

    fn after_detach(&self) -> Option<Removal> {
        self.returns.as_ref()?.removal()
    }
}

/// The kprobe PMU's type and the config bit that makes a return probe.
fn kprobe_pmu() -> Result<(u32, u32), String> {
    let read = |p: &str| std::fs::read_to_string(p).map_err(|e| format!("{p}: {e}"));
    let ty = read("/sys/bus/event_source/devices/kprobe/type")?
        .trim()
        .parse()
        .map_err(|e| format!("kprobe PMU type: {e}"))?;
    // "config:0": the bit that makes it a return probe.
    let bit = read("/sys/bus/event_source/devices/kprobe/format/retprobe")?
        .trim()
        .trim_start_matches("config:")
        .parse()
        .map_err(|e| format!("kprobe retprobe bit: {e}"))?;
    Ok((ty, bit))
}

/// A kprobe (or kretprobe) perf event of the PMU on `function` running `prog`.
fn pmu_event(prog: &OwnedFd, function: &str, ret: bool) -> Result<OwnedFd, String> {
    let (pmu, retbit) = kprobe_pmu()?;
    let name = CString::new(function).map_err(|e| e.to_string())?;
    let mut attr = libbpf_sys::perf_event_attr {
        type_: pmu,
        size: std::mem::size_of::<libbpf_sys::perf_event_attr>() as u32,
        config: if ret { 1 << retbit } else { 0 },
        ..Default::default()
    };
    // `name` lives until perf::attach has returned.
    attr.__bindgen_anon_3.kprobe_func = name.as_ptr() as u64;
    perf::attach(&attr, prog, "kprobe")
}
