//! Every attach method declared once, in `auto`'s order: what `--method`
//! and the result call it, what the kernel must offer for it, how `auto`
//! weighs it, its programs and how its probes are built. Adding a method is
//! a file with its [`Method`] implementation and its `FAMILY`, its `mod` line
//! in attach/mod.rs and its line in [`FAMILIES`]; a method that needs a kernel
//! feature no other method reads also adds that feature to choose.rs's
//! `Offer`, and its programs go in a bpf/ file of their own.
use anyhow::Result;

use super::choose::Offer;
use super::consts::ProbeOptions;
use super::interface::Method;
use super::kretprobe::ReturnProbes;
use super::template::{Kind, Template};
use super::{fentry, kmulti, kprobe, multi, session};

/// `auto`'s order: the first the kernel offers, unless weighed out.
pub static FAMILIES: [&Family; 6] = [
    &multi::FAMILY,
    &kmulti::SESSION,
    &kmulti::PAIR,
    &session::FAMILY,
    &fentry::FAMILY,
    &kprobe::FAMILY,
];

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
