//! The constants patched into each hook's copy of the probes (PATCHED() in
//! bpf/core.bpf.h): the hook id, where its statistics go, and the options.
use libbpf_sys::bpf_insn;

use super::super::cpu_stats;
use crate::intf::lsmpmon_limits::LSMPMON_SAMPLE_WINDOWED;
use crate::intf::lsmpmon_patch::{
    LSMPMON_PATCH_BY_CGROUP, LSMPMON_PATCH_CALIBRATION, LSMPMON_PATCH_EMPTY, LSMPMON_PATCH_HOOK_ID,
    LSMPMON_PATCH_LEAN, LSMPMON_PATCH_MULTI, LSMPMON_PATCH_NO_PREEMPT, LSMPMON_PATCH_RET_SLOT,
    LSMPMON_PATCH_SAMPLE, LSMPMON_PATCH_SESSION, LSMPMON_PATCH_STATS_OFF,
    LSMPMON_PATCH_SYSCALL_TIME,
};

/// `BPF_LD | BPF_IMM | BPF_DW`: PATCHED()'s 64-bit immediate, two slots: the
/// value in the first slot's imm, the marker in the second's.
pub const LD_IMM64: u8 = 0x18;

/// The per-hook constants patched into each copy of the programs.
#[derive(Debug, Clone, Copy)]
pub struct HookConsts {
    pub hook_id: u32,
    /// 1 + the number of arguments for int hooks, 0 for void hooks.
    pub ret_slot: u32,
    /// Where the hook's statistics start in its CPU's value.
    pub stats_off: u32,
    pub calibration: bool,
    pub options: ProbeOptions,
}

/// Options compiled into every copy (the verifier drops what they turn off).
#[derive(Debug, Clone, Copy, Default)]
pub struct ProbeOptions {
    pub lean: bool,
    pub syscall_time: bool,
    /// Probes run with preemption disabled (preemptible kernels).
    pub no_preempt: bool,
    /// Programs that return at once (--empty-probes, a benchmark).
    pub empty: bool,
    /// One fexit program per call that counts calls and returns (--count-only).
    pub count_only: bool,
    /// Every call also counted in its task's cgroup (--by cgroup).
    pub by_cgroup: bool,
    /// One call in N timed (--sample N); 0 or 1: every call.
    pub sample_every: u32,
}

impl HookConsts {
    pub fn new(hook_id: u32, args: usize, returns_int: bool, options: ProbeOptions) -> Self {
        Self {
            hook_id,
            ret_slot: if returns_int { args as u32 + 1 } else { 0 },
            stats_off: cpu_stats::stats_offset(hook_id),
            calibration: false,
            options,
        }
    }

    /// --timing-windows, for a hook's copies (the calibration probe's pair
    /// stays attached: it measures a timed call).
    pub fn windowed(&self) -> bool {
        self.options.sample_every == LSMPMON_SAMPLE_WINDOWED && !self.calibration
    }

    /// The value for marker `marker` (enum lsmpmon_patch).
    pub fn value(&self, marker: u32) -> Option<u32> {
        match marker {
            LSMPMON_PATCH_HOOK_ID => Some(self.hook_id),
            LSMPMON_PATCH_RET_SLOT => Some(self.ret_slot),
            LSMPMON_PATCH_STATS_OFF => Some(self.stats_off),
            LSMPMON_PATCH_CALIBRATION => Some(self.calibration as u32),
            LSMPMON_PATCH_LEAN => Some(self.options.lean as u32),
            LSMPMON_PATCH_SYSCALL_TIME => Some(self.options.syscall_time as u32),
            LSMPMON_PATCH_NO_PREEMPT => Some(self.options.no_preempt as u32),
            LSMPMON_PATCH_EMPTY => Some(self.options.empty as u32),
            LSMPMON_PATCH_BY_CGROUP => Some(self.options.by_cgroup as u32),
            LSMPMON_PATCH_SAMPLE => Some(self.options.sample_every),
            // Set by the template's kind (Template::instance).
            LSMPMON_PATCH_SESSION | LSMPMON_PATCH_MULTI => Some(0),
            _ => None,
        }
    }
}

/// The instructions that carry a patched constant, with their markers.
pub fn patch_sites(insns: &[bpf_insn]) -> impl Iterator<Item = (usize, u32)> + '_ {
    let probe = HookConsts::new(0, 0, false, ProbeOptions::default());
    insns.windows(2).enumerate().filter_map(move |(i, w)| {
        let marker = w[1].imm as u32;
        (w[0].code == LD_IMM64 && w[1].code == 0 && probe.value(marker).is_some())
            .then_some((i, marker))
    })
}
