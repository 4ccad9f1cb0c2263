//! The one attacher, in the manner of retsnoop's mass attacher: `new` (the
//! chosen method) → `prepare` (which programs the BPF object loads) → `load`
//! (the templates every hook's copies are made from) → `attach` (every hook,
//! then the calibration probe) → `free` (detach). The probes start recording
//! only when the trace opens its gate (session.rs), after all are attached.
//!
//! The attacher owns the method: which one (choose.rs, in the order of
//! registry.rs), the fallback when the kernel refuses a batch, and
//! which hooks a method cannot probe. Each attach method is one file with an
//! implementation of [`interface::Method`] and its `FAMILY` declaration:
//! multi session (multi.rs), kprobe session and kprobe multi (kmulti.rs),
//! session (session.rs), fentry/fexit (fentry.rs), kprobe/kretprobe
//! (kprobe.rs). Callers learn which one ran only from [`Attacher::report`],
//! the result's `probe.method`.
pub mod choose;
mod consts;
mod count;
mod detach;
mod family;
mod fentry;
mod interface;
mod kmulti;
mod kprobe;
mod kretprobe;
mod link;
mod multi;
mod multi_link;
pub mod offer;
mod perf;
mod probe;
mod registry;
mod session;
mod template;

use std::time::{Duration, Instant};

use anyhow::{Context, Result};

pub use consts::{HookConsts, ProbeOptions};
pub use detach::DetachMode;
pub use probe::{Skipped, Target};

pub use family::Family;
pub use fentry::FAMILY as FENTRY;
pub use kprobe::FAMILY as KPROBE;
pub use registry::FAMILIES;

use self::choose::{Choice, Chosen, MethodArg, NotUsed};
use self::count::CountOnly;
use self::family::Build;
use self::interface::Method;
use self::kretprobe::ReturnProbes;
use self::probe::Probe;
use self::template::{Kind, Template};
use super::hooks::{Excluded, Hook};
use super::kfuncs::Kfuncs;
use super::refused::refused;
use super::skel::OpenLsmpmonSkel;
use libbpf_rs::skel::OpenSkel;

/// What attaching every hook gave.
pub struct Attached {
    /// Hooks with probes (a multi-link's one probe serves them all).
    pub hooks_attached: usize,
    pub failed: Vec<Excluded>,
    pub attach_ms: f64,
}

/// What the result says about the method that ran.
pub struct MethodReport {
    pub method: String,
    /// The methods passed over, with their reasons.
    pub not_used: Vec<NotUsed>,
    /// Why `auto` took it (choose.rs), unless the kernel refused it.
    pub why: Option<String>,
    /// Why the figures cost more than they would with the usual method.
    pub fallback: Option<String>,
    pub kretprobe_maxactive: Option<u32>,
}

pub struct Attacher {
    choice: Chosen,
    /// BPF_TRACE_FEXIT_MULTI's value where --count-only can use it.
    fexit_multi: Option<u32>,
    why: Option<String>,
    not_used: Vec<NotUsed>,
    asked: MethodArg,
    options: ProbeOptions,
    kfuncs: Kfuncs,
    /// The kprobe fallback's return probes, made before anything is attached.
    returns: Option<ReturnProbes>,
    /// After `load`: the method the hooks get (the fallback after a refusal).
    method: Option<Box<dyn Method>>,
    /// The kernel refused the method's batch: (its name, why).
    refused: Option<(&'static str, String)>,
    probes: Vec<Probe>,
    calibration: Option<Probe>,
    /// --timing-windows on 7.x: every hook's entry in one multi-link.
    window_link: Option<multi_link::MultiEntry>,
    /// ... and the calibration probe's entry, by a multi-link of its own.
    calibration_link: Option<multi_link::MultiEntry>,
}

impl Attacher {
    /// For `choice` (asked for as `asked`), with probes compiled with `options`.
    pub fn new(choice: Choice, asked: MethodArg, options: ProbeOptions, kfuncs: Kfuncs) -> Self {
        let returns = choice
            .method
            .family
            .is(&kprobe::FAMILY)
            .then(kprobe::prepare)
            .flatten();
        Self {
            choice: choice.method,
            fexit_multi: choice.fexit_multi,
            why: choice.why,
            not_used: choice.not_used,
            asked,
            options,
            kfuncs,
            returns,
            method: None,
            refused: None,
            probes: Vec::new(),
            calibration: None,
            window_link: None,
            calibration_link: None,
        }
    }

    pub fn options(&self) -> ProbeOptions {
        self.options
    }

    /// --timing-windows.
    fn windowed(&self) -> bool {
        self.options.sample_every == crate::intf::lsmpmon_limits::LSMPMON_SAMPLE_WINDOWED
    }

    /// The programs the hooks' copies are made from: the method's, or
    /// --count-only's.
    fn programs(&self) -> [&'static str; 2] {
        match self.options.count_only {
            true => [COUNT_PROGRAM; 2],
            false => (self.choice.family.programs)(self.options),
        }
    }

    /// Only the programs of this method are loaded (and relocated); tracing
    /// programs are relocated against `function`, any traceable one.
    pub fn prepare(&self, open: &mut OpenLsmpmonSkel, function: &str) -> Result<()> {
        let wanted = self.programs();
        for mut prog in open.open_object_mut().progs_mut() {
            let name = prog.name().to_string_lossy().into_owned();
            if !name.starts_with(HOOK_PROGRAM_PREFIX) {
                continue;
            }
            if prog.prog_type() == libbpf_rs::ProgramType::Tracing {
                prog.set_attach_target(0, Some(function.to_string()))?;
            }
            let window_entry = name == fentry::WINDOW_ENTRY && self.windowed();
            prog.set_autoload(wanted.contains(&name.as_str()) || window_entry);
        }
        if !self.choice.family.syscall_time {
            // Task storage (5.11) only serves --syscall-time, refused for kprobes.
            open.maps.task_ctx.set_autocreate(false)?;
        }
        Ok(())
    }

    /// The templates, from the loaded programs.
    pub fn load(&mut self, object: &libbpf_rs::Object) -> Result<()> {
        let kfuncs = &self.kfuncs;
        let template = |name: &str, kind| {
            let prog = object
                .progs()
                .find(|p| p.name() == name)
                .with_context(|| format!("the BPF object has no program {name}"))?;
            Template::new(prog.insns(), kind, kfuncs)
        };
        let programs = self.programs();
        if self.options.count_only {
            let multi = self
                .fexit_multi
                .map(|m| template(programs[0], Kind::FexitMulti(m)));
            self.method = Some(Box::new(CountOnly {
                single: template(programs[0], Kind::Fexit)?,
                multi: multi.transpose()?,
            }));
            return Ok(());
        }
        let method = (self.choice.family.build)(Build {
            attach: self.choice.attach,
            template: &template,
            programs,
            returns: self.returns.take(),
            auto: self.asked.is_auto(),
            windowed: self.windowed(),
        })?;
        self.method = Some(method);
        Ok(())
    }

    fn method(&self) -> Result<&dyn Method> {
        self.method
            .as_deref()
            .context("the probes' templates are not loaded")
    }

    /// Every hook, in one batch where the method has one; if the kernel
    /// refuses the batch (one function it will not trace refuses them all),
    /// one by one with the method's fallback.
    pub fn attach(&mut self, hooks: &[Hook]) -> Result<Attached> {
        let targets: Vec<Target> = hooks
            .iter()
            .enumerate()
            .map(|(i, h)| Target::hook(i as u32, h, self.options))
            .collect();
        let method = self.method()?;
        let unprobeable = method.unprobeable(&targets);
        if unprobeable.is_empty() {
            return self.attach_probeable(&targets, hooks);
        }
        let mut failed = Vec::new();
        let mut keep = vec![true; hooks.len()];
        for (i, reason) in unprobeable {
            keep[i] = false;
            failed.push(Excluded {
                hook: hooks[i].name.clone(),
                reason,
            });
        }
        let (targets, hooks): (Vec<Target>, Vec<Hook>) = targets
            .into_iter()
            .zip(hooks)
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|((t, h), _)| (t, h.clone()))
            .unzip();
        let mut attached = self.attach_probeable(&targets, &hooks)?;
        attached.failed.splice(0..0, failed);
        Ok(attached)
    }

    fn attach_probeable(&mut self, targets: &[Target], hooks: &[Hook]) -> Result<Attached> {
        let method = self.method()?;
        base::say!(
            "lsmpmon: attaching {} {} ...",
            hooks.len(),
            method.describe()
        );
        let start = Instant::now();
        let reason = match method.attach_batch(targets) {
            None => return self.attach_each(targets, hooks, start),
            Some(Ok(probe)) => {
                let attach_ms = start.elapsed().as_secs_f64() * 1e3;
                base::say!(
                    "lsmpmon: {} hooks attached in {attach_ms:.0} ms",
                    hooks.len()
                );
                self.probes = vec![probe];
                return Ok(Attached {
                    hooks_attached: hooks.len(),
                    failed: Vec::new(),
                    attach_ms,
                });
            }
            Some(Err(reason)) => reason,
        };
        if reason.contains("Operation not permitted") {
            return Err(refused("attaching", &reason));
        }
        let refused_name = method.name();
        let fallback = method.fallback().filter(|_| self.asked.is_auto());
        let Some(fallback) = fallback else {
            // Asked for by name (--method multi-session, kprobe-multi): no quiet substitute.
            return Err(anyhow::anyhow!(
                "--method: the kernel refused the {refused_name} link ({reason}): \
                 use --method auto"
            ));
        };
        base::say!(
            "lsmpmon: the kernel refused the multi-link ({reason}): {} one by one",
            fallback.describe()
        );
        self.refused = Some((refused_name, reason));
        base::say!(
            "lsmpmon: attaching {} {} ...",
            hooks.len(),
            fallback.describe()
        );
        self.method = Some(fallback);
        let mut attached = self.attach_each(targets, hooks, Instant::now())?;
        // The refused attempt took time too.
        attached.attach_ms = start.elapsed().as_secs_f64() * 1e3;
        Ok(attached)
    }

    /// --timing-windows: the entries' multi-link where the method and
    /// kernel have one (tried once now); else each hook gets its own entry.
    fn prepare_window_link(&mut self, targets: &[Target]) {
        if !self.windowed() {
            return;
        }
        let Some(method) = self.method.as_mut() else {
            return;
        };
        match method.window_entries(targets) {
            Some(Ok(m)) => self.window_link = Some(m),
            Some(Err(e)) => {
                base::say!("lsmpmon: warning: the kernel refused the timing windows' multi-link ({e}): each hook's entry in turn");
                method.drop_window_link();
            }
            None => {}
        }
    }

    /// One probe per hook; a hook that fails is reported, unless the
    /// kernel refuses the first one (then it refuses them all: lockdown).
    fn attach_each(
        &mut self,
        targets: &[Target],
        hooks: &[Hook],
        start: Instant,
    ) -> Result<Attached> {
        self.prepare_window_link(targets);
        let method = self.method()?;
        let mut probes = Vec::with_capacity(targets.len());
        let mut failed = Vec::new();
        for (i, (target, hook)) in targets.iter().zip(hooks).enumerate() {
            match method.attach(target) {
                Ok(p) => probes.push(p),
                Err(reason) if i == 0 && reason.contains("Operation not permitted") => {
                    return Err(refused("attaching", &reason));
                }
                Err(reason) => failed.push(Excluded {
                    hook: hook.name.clone(),
                    reason,
                }),
            }
        }
        let attach_ms = start.elapsed().as_secs_f64() * 1e3;
        if probes.is_empty() {
            anyhow::bail!(
                "no hook could be attached (first failure: {})",
                failed.first().map(|f| f.reason.as_str()).unwrap_or("?")
            );
        }
        base::say!(
            "lsmpmon: {} {} attached in {attach_ms:.0} ms{}",
            probes.len(),
            method.describe(),
            if failed.is_empty() {
                String::new()
            } else {
                format!(", {} failed", failed.len())
            }
        );
        self.probes = probes;
        if let Some(m) = self.window_link.as_mut() {
            let hooks: Vec<u32> = self.probes.iter().map(|p| p.hook_id).collect();
            m.keep(&hooks);
        }
        Ok(Attached {
            hooks_attached: self.probes.len(),
            failed,
            attach_ms,
        })
    }

    /// The calibration probe (calibrate.rs), with the method the hooks got;
    /// false if it could not be attached.
    pub fn attach_calibration(&mut self, target: &Target) -> bool {
        let Ok(method) = self.method() else {
            return false;
        };
        let windowed = self.window_link.is_some();
        match method
            .attach_window_calibration(target)
            .filter(|_| windowed)
        {
            Some(Ok((probe, entry))) => {
                self.calibration = Some(probe);
                self.calibration_link = Some(entry);
            }
            _ => self.calibration = method.attach(target).ok(),
        }
        self.calibration.is_some()
    }

    pub fn calibrated(&self) -> bool {
        self.calibration.is_some()
    }

    /// --timing-windows: attaches (`open`) or releases the hooks' entries,
    /// from hook `from` on, until `budget` is spent; the next hook to do
    /// (`probes().len()` when all are done), and the entries the kernel
    /// refused.
    pub fn step_window(
        &mut self,
        open: bool,
        only: &[usize],
        from: usize,
        budget: Duration,
    ) -> (usize, Vec<String>) {
        if let Some(m) = self.window_link.as_mut() {
            // Refused now (it was made once at attach): this window times
            // nothing, the next tries again.
            let refused = m.set(open).err();
            return (only.len(), refused.into_iter().collect());
        }
        let start = Instant::now();
        let mut refused = Vec::new();
        let mut i = from;
        while i < only.len() && start.elapsed() < budget {
            if let Some(p) = self.probes.get_mut(only[i]) {
                if let Err(e) = p.set_window(open) {
                    refused.push(e);
                }
            }
            i += 1;
        }
        (i, refused)
    }

    /// --timing-windows: one link opens every hook's entry at once (7.x).
    pub fn window_by_link(&self) -> bool {
        self.window_link.is_some()
    }

    /// Each probe's hook id (its statistics row), in probe order.
    pub fn probe_hooks(&self) -> Vec<u32> {
        self.probes.iter().map(|p| p.hook_id).collect()
    }

    /// Probe runs the kernel skipped so far, per hook probe (not the calibration's).
    pub fn misses(&self) -> Vec<Skipped> {
        let lost = self.method().map(|m| m.lost_returns()).unwrap_or_default();
        let window = self.window_link.as_ref().map(|m| Skipped {
            hook_id: probe::ALL_HOOKS,
            recursion: m.recursion_misses(),
            lost_returns: 0,
        });
        self.probes
            .iter()
            .map(|p| Skipped {
                hook_id: p.hook_id,
                recursion: p.recursion_misses(),
                lost_returns: lost.get(&p.hook_id).copied().unwrap_or(0),
            })
            .chain(window)
            .collect()
    }

    pub fn report(&self) -> MethodReport {
        let method = self.method.as_deref();
        let name = method.map_or(self.choice.name(), |m| m.name());
        let not_used = match &self.refused {
            Some((refused, reason)) => vec![NotUsed {
                method: (*refused).into(),
                reason: format!("the kernel refused the multi-link program: {reason}"),
            }],
            None => self.not_used.clone(),
        };
        MethodReport {
            method: name.into(),
            not_used,
            why: self.why.clone().filter(|_| self.refused.is_none()),
            fallback: method.and_then(|m| m.note()).map(String::from),
            kretprobe_maxactive: method.and_then(|m| m.maxactive()),
        }
    }

    /// Detaches every probe; returns how long lsmpmon waited, in milliseconds.
    pub fn free(&mut self, mode: DetachMode) -> f64 {
        let mut links = Vec::with_capacity(self.probes.len() * 2);
        let mut progs = Vec::with_capacity(self.probes.len() * 2);
        for probe in self.probes.drain(..).chain(self.calibration.take()) {
            let (l, p) = probe.into_fds();
            links.extend(l);
            progs.extend(p);
        }
        for m in self
            .window_link
            .take()
            .into_iter()
            .chain(self.calibration_link.take())
        {
            let (l, p) = m.into_fds();
            links.extend(l);
            progs.push(p);
        }
        let removal = self.method.as_ref().and_then(|m| m.after_detach());
        detach::release(links, progs, removal, mode)
    }
}

/// --count-only's one fexit program, which every tracing method can run.
const COUNT_PROGRAM: &str = "hook_count";

/// The programs hooks' copies are made from are named so in bpf/; the
/// others (calibration, context switches) are always loaded.
const HOOK_PROGRAM_PREFIX: &str = "hook_";

#[cfg(test)]
mod tests {
    use super::consts::ProbeOptions;
    use super::*;
    use crate::skel::LsmpmonSkelBuilder;
    use libbpf_rs::skel::SkelBuilder;

    /// Every program a method names is in the BPF object, whatever the
    /// options, and each method loads only its own.
    #[test]
    fn every_method_names_programs_the_object_has() {
        let mut storage = std::mem::MaybeUninit::uninit();
        let open = LsmpmonSkelBuilder::default().open(&mut storage).unwrap();
        let names: Vec<String> = open
            .open_object()
            .progs()
            .map(|p| p.name().to_string_lossy().into_owned())
            .collect();
        let plain = ProbeOptions::default();
        let np = ProbeOptions {
            no_preempt: true,
            ..plain
        };
        let empty = ProbeOptions { empty: true, ..np };
        for family in FAMILIES {
            for options in [plain, np, empty] {
                for program in (family.programs)(options) {
                    assert!(program.starts_with(HOOK_PROGRAM_PREFIX), "{program}");
                    assert!(names.iter().any(|n| n == program), "{family:?}: {program}");
                }
            }
        }
        assert!(names.iter().any(|n| n == COUNT_PROGRAM));
        assert_eq!(
            (fentry::FAMILY.programs)(np),
            ["hook_entry_np", "hook_exit_np"]
        );
        assert_eq!((fentry::FAMILY.programs)(empty), ["hook_empty"; 2]);
        assert_eq!((kprobe::FAMILY.programs)(empty), ["hook_kmempty"; 2]);
        assert_eq!((multi::FAMILY.programs)(empty), ["hook_session"; 2]);
    }

    #[test]
    fn count_only_loads_the_counting_program_for_any_tracing_method() {
        let count = ProbeOptions {
            count_only: true,
            ..ProbeOptions::default()
        };
        for family in FAMILIES.iter().filter(|f| f.counts) {
            let attacher = Attacher::new(
                Choice {
                    method: Chosen {
                        family,
                        attach: [0, 0],
                    },
                    why: None,
                    fexit_multi: None,
                    not_used: vec![],
                },
                MethodArg::AUTO,
                count,
                Kfuncs::default(),
            );
            assert_eq!(attacher.programs(), [COUNT_PROGRAM; 2]);
        }
    }
}
