//! What an attach method is ([`Family`]): what `--method` and the result
//! call it, what the kernel must offer for it, how `auto` weighs it, its
//! programs and how its probes are built ([`Build`]). The methods declare
//! theirs; registry.rs lists them.
use anyhow::Result;

use super::consts::ProbeOptions;
use super::interface::Method;
use super::kretprobe::ReturnProbes;
use super::offer::Offer;
use super::template::{Kind, Template};

/// The attach types a method needs: their values in this kernel's enum
/// bpf_attach_type (libbpf 1.1 knows none of the newer ones), 0 where unused.
pub type AttachTypes = [u32; 2];

pub struct Family {
    /// What the result (`probe.method`) calls it.
    pub name: &'static str,
    /// Its `--method` value.
    pub arg: &'static str,
    /// `--method`'s help for it.
    pub help: &'static str,
    /// What the kernel offers of it, or why it does not.
    pub offered: fn(&Offer) -> Result<AttachTypes, &'static str>,
    /// Asked for by name where the kernel lacks it: this refusal.
    pub refused_missing: &'static str,
    /// Attaches fast but costs more per call than fentry/fexit: `auto`
    /// passes over it when weighing cost per call.
    pub dearer_per_call: bool,
    /// Why `auto` took it, where that was a choice.
    pub why_auto: Option<&'static str>,
    /// It can run --count-only's counting program (a tracing method).
    pub counts: bool,
    /// Its --count-only probe is one fexit multi-link where the kernel has
    /// BPF_TRACE_FEXIT_MULTI.
    pub counts_by_multi_link: bool,
    /// It can time the syscall a hook runs for (--syscall-time).
    pub syscall_time: bool,
    /// Its programs in bpf/ for these options: [entry, exit] (a session
    /// program is both).
    pub programs: fn(ProbeOptions) -> [&'static str; 2],
    /// Its probes, from its programs' templates.
    pub build: fn(Build) -> Result<Box<dyn Method>>,
}

impl Family {
    pub fn is(&self, other: &Family) -> bool {
        self.name == other.name
    }
}

impl PartialEq for Family {
    fn eq(&self, other: &Family) -> bool {
        self.is(other)
    }
}

impl Eq for Family {}

impl std::fmt::Debug for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// What a family's probes are built from.
pub struct Build<'a> {
    pub attach: AttachTypes,
    /// A program's template, by its name, attached as `Kind`.
    pub template: &'a dyn Fn(&str, Kind) -> Result<Template>,
    /// Its programs, as `Family::programs` gave them.
    pub programs: [&'static str; 2],
    /// The kprobe method's return probes, made before anything is attached.
    pub returns: Option<ReturnProbes>,
    /// Taken by `auto`, not asked for by name.
    pub auto: bool,
    /// --timing-windows: entries attached only during windows.
    pub windowed: bool,
}
