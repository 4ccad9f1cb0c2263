//! The one attacher, in the manner of retsnoop's mass attacher: `new` (the
//! chosen method) → `prepare` (which programs the BPF object loads) → `load`
//! (the templates every hook's copies are made from) → `attach` (every hook,
//! then the calibration probe) → `free` (detach). The probes start recording
//! only when the trace opens its gate (session.rs), after all are attached.
//!
//! Each attach method is one implementation of [`interface::Method`]:
//! multi session (multi.rs), kprobe multi (kmulti.rs), session (session.rs),
//! fentry/fexit (fentry.rs), kprobe/kretprobe (kprobe.rs). Callers learn which one ran only from
//! [`Attacher::report`], the result's `probe.method`.
mod consts;
mod count;
mod detach;
mod fentry;
mod interface;
mod kmulti;
mod kprobe;
mod kretprobe;
mod multi;
mod perf;
mod probe;
mod session;
mod template;

use std::time::Instant;

use anyhow::{Context, Result};

pub use consts::{HookConsts, ProbeOptions};
pub use detach::DetachMode;
pub use probe::{Skipped, Target};

use self::count::CountOnly;
use self::fentry::FentryFexit;
use self::interface::Method;
use self::kmulti::{KprobeMulti, Programs};
use self::kprobe::Kprobe;
use self::kretprobe::ReturnProbes;
use self::multi::MultiSession;
use self::probe::Probe;
use self::session::Session;
use self::template::{Kind, Template};
use super::hooks::{Excluded, Hook};
use super::kfuncs::Kfuncs;
use super::method::{Choice, Method as Chosen, MethodArg, NotUsed};
use super::refused::refused;
use super::skel::{LsmpmonProgs, OpenLsmpmonSkel};

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
    /// Why `auto` took it (method.rs), unless the kernel refused it.
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
}

impl Attacher {
    /// For `choice` (asked for as `asked`), with probes compiled with `options`.
    pub fn new(choice: Choice, asked: MethodArg, options: ProbeOptions, kfuncs: Kfuncs) -> Self {
        let returns = (choice.method == Chosen::Kprobe)
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
        }
    }

    pub fn options(&self) -> ProbeOptions {
        self.options
    }

    /// Only the programs of this method are loaded (and relocated); tracing
    /// programs are relocated against `function`, any traceable one.
    pub fn prepare(&self, open: &mut OpenLsmpmonSkel, function: &str) -> Result<()> {
        let wanted = sources(self.choice, self.options);
        for source in Source::ALL {
            let prog = source.open_program(open);
            if source.tracing() {
                prog.set_attach_target(0, Some(function.to_string()))?;
            }
            prog.set_autoload(wanted.contains(&source));
        }
        if self.choice == Chosen::Kprobe {
            // Task storage (5.11) only serves --syscall-time, refused for kprobes.
            open.maps.task_ctx.set_autocreate(false)?;
        }
        Ok(())
    }

    /// The templates, from the loaded programs.
    pub fn load(&mut self, progs: &LsmpmonProgs) -> Result<()> {
        let [entry, exit] = sources(self.choice, self.options);
        let t = |s: Source, kind| Template::new(s.program(progs).insns(), kind, &self.kfuncs);
        if self.options.count_only {
            let multi = self.fexit_multi.map(|m| t(entry, Kind::FexitMulti(m)));
            self.method = Some(Box::new(CountOnly {
                single: t(entry, Kind::Fexit)?,
                multi: multi.transpose()?,
            }));
            return Ok(());
        }
        let method: Box<dyn Method> = match self.choice {
            Chosen::MultiSession { multi, session } => Box::new(MultiSession {
                multi: t(entry, Kind::SessionMulti(multi))?,
                single: t(entry, Kind::Session(session))?,
            }),
            Chosen::KprobeMulti => Box::new(KprobeMulti {
                programs: Programs::Pair {
                    entry: t(entry, Kind::KprobeMulti)?,
                    exit: t(exit, Kind::KretprobeMulti)?,
                },
                batch: true,
            }),
            Chosen::KprobeSession(attach_type) => Box::new(KprobeMulti {
                programs: Programs::Session(t(entry, Kind::KprobeSession(attach_type))?),
                batch: true,
            }),
            Chosen::Session(attach_type) => Box::new(Session {
                template: t(entry, Kind::Session(attach_type))?,
            }),
            Chosen::FentryFexit => Box::new(FentryFexit {
                entry: t(entry, Kind::Fentry)?,
                exit: t(exit, Kind::Fexit)?,
            }),
            Chosen::Kprobe => Box::new(Kprobe::new(
                t(entry, Kind::Kprobe)?,
                t(exit, Kind::Kretprobe)?,
                self.returns.take(),
                self.asked == MethodArg::Auto,
            )),
        };
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
        let fallback = method.fallback().filter(|_| self.asked == MethodArg::Auto);
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

    /// One probe per hook; a hook that fails is reported, unless the
    /// kernel refuses the first one (then it refuses them all: lockdown).
    fn attach_each(
        &mut self,
        targets: &[Target],
        hooks: &[Hook],
        start: Instant,
    ) -> Result<Attached> {
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
        Ok(Attached {
            hooks_attached: self.probes.len(),
            failed,
            attach_ms,
        })
    }

    /// The calibration probe (calibrate.rs), with the method the hooks got;
    /// false if it could not be attached.
    pub fn attach_calibration(&mut self, target: &Target) -> bool {
        self.calibration = self.method().ok().and_then(|m| m.attach(target).ok());
        self.calibration.is_some()
    }

    pub fn calibrated(&self) -> bool {
        self.calibration.is_some()
    }

    /// Probe runs the kernel skipped so far, per hook probe (not the calibration's).
    pub fn misses(&self) -> Vec<Skipped> {
        let lost = self.method().map(|m| m.lost_returns()).unwrap_or_default();
        self.probes
            .iter()
            .map(|p| Skipped {
                hook_id: p.hook_id,
                recursion: p.recursion_misses(),
                lost_returns: lost.get(&p.hook_id).copied().unwrap_or(0),
            })
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
        let removal = self.method.as_ref().and_then(|m| m.after_detach());
        detach::release(links, progs, removal, mode)
    }
}

/// The skeleton's programs the copies can be made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Entry,
    Exit,
    EntryNoPreempt,
    ExitNoPreempt,
    Empty,
    Session,
    Count,
    KprobeEntry,
    KprobeExit,
    KmultiEntry,
    KmultiExit,
    KmultiEmpty,
    Ksession,
}

impl Source {
    const ALL: [Source; 13] = [
        Source::Entry,
        Source::Exit,
        Source::EntryNoPreempt,
        Source::ExitNoPreempt,
        Source::Empty,
        Source::Session,
        Source::Count,
        Source::KprobeEntry,
        Source::KprobeExit,
        Source::KmultiEntry,
        Source::KmultiExit,
        Source::KmultiEmpty,
        Source::Ksession,
    ];

    fn tracing(self) -> bool {
        !matches!(
            self,
            Source::KprobeEntry
                | Source::KprobeExit
                | Source::KmultiEntry
                | Source::KmultiExit
                | Source::KmultiEmpty
                | Source::Ksession
        )
    }

    fn open_program<'a, 'obj>(
        self,
        open: &'a mut OpenLsmpmonSkel<'obj>,
    ) -> &'a mut libbpf_rs::OpenProgramMut<'obj> {
        let p = &mut open.progs;
        match self {
            Source::Entry => &mut p.hook_entry,
            Source::Exit => &mut p.hook_exit,
            Source::EntryNoPreempt => &mut p.hook_entry_np,
            Source::ExitNoPreempt => &mut p.hook_exit_np,
            Source::Empty => &mut p.hook_empty,
            Source::Session => &mut p.hook_session,
            Source::Count => &mut p.hook_count,
            Source::KprobeEntry => &mut p.hook_kentry,
            Source::KprobeExit => &mut p.hook_kexit,
            Source::KmultiEntry => &mut p.hook_kmentry,
            Source::KmultiExit => &mut p.hook_kmexit,
            Source::KmultiEmpty => &mut p.hook_kmempty,
            Source::Ksession => &mut p.hook_ksession,
        }
    }

    fn program<'a, 'obj>(self, p: &'a LsmpmonProgs<'obj>) -> &'a libbpf_rs::ProgramMut<'obj> {
        match self {
            Source::Entry => &p.hook_entry,
            Source::Exit => &p.hook_exit,
            Source::EntryNoPreempt => &p.hook_entry_np,
            Source::ExitNoPreempt => &p.hook_exit_np,
            Source::Empty => &p.hook_empty,
            Source::Session => &p.hook_session,
            Source::Count => &p.hook_count,
            Source::KprobeEntry => &p.hook_kentry,
            Source::KprobeExit => &p.hook_kexit,
            Source::KmultiEntry => &p.hook_kmentry,
            Source::KmultiExit => &p.hook_kmexit,
            Source::KmultiEmpty => &p.hook_kmempty,
            Source::Ksession => &p.hook_ksession,
        }
    }
}

/// The entry and exit programs of `method` (a session program is both).
fn sources(method: Chosen, options: ProbeOptions) -> [Source; 2] {
    match method {
        // The kprobe fallback has no count-only probe (trace refuses it there).
        Chosen::Kprobe if options.empty => [Source::KmultiEmpty; 2],
        Chosen::Kprobe => [Source::KprobeEntry, Source::KprobeExit],
        _ if options.count_only => [Source::Count; 2],
        Chosen::KprobeMulti | Chosen::KprobeSession(_) if options.empty => [Source::KmultiEmpty; 2],
        Chosen::KprobeSession(_) => [Source::Ksession; 2],
        Chosen::KprobeMulti => [Source::KmultiEntry, Source::KmultiExit],
        Chosen::MultiSession { .. } | Chosen::Session(_) => [Source::Session; 2],
        Chosen::FentryFexit if options.empty => [Source::Empty; 2],
        Chosen::FentryFexit if options.no_preempt => {
            [Source::EntryNoPreempt, Source::ExitNoPreempt]
        }
        Chosen::FentryFexit => [Source::Entry, Source::Exit],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_method_loads_only_its_programs() {
        let plain = ProbeOptions::default();
        let np = ProbeOptions {
            no_preempt: true,
            ..plain
        };
        let empty = ProbeOptions { empty: true, ..np };
        let multi = Chosen::MultiSession {
            multi: 61,
            session: 58,
        };
        assert_eq!(sources(multi, empty), [Source::Session; 2]);
        assert_eq!(sources(Chosen::FentryFexit, empty), [Source::Empty; 2]);
        assert_eq!(
            sources(Chosen::FentryFexit, np),
            [Source::EntryNoPreempt, Source::ExitNoPreempt]
        );
        assert_eq!(
            sources(Chosen::FentryFexit, plain),
            [Source::Entry, Source::Exit]
        );
        assert!(sources(Chosen::Kprobe, np).iter().all(|s| !s.tracing()));
        assert_eq!(sources(Chosen::Kprobe, empty), [Source::KmultiEmpty; 2]);
        assert_eq!(
            sources(Chosen::KprobeMulti, plain),
            [Source::KmultiEntry, Source::KmultiExit]
        );
        assert_eq!(
            sources(Chosen::KprobeMulti, empty),
            [Source::KmultiEmpty; 2]
        );
        assert_eq!(
            sources(Chosen::KprobeSession(56), plain),
            [Source::Ksession; 2]
        );
        assert!(sources(Chosen::KprobeMulti, plain)
            .iter()
            .all(|s| !s.tracing()));
        let count = ProbeOptions {
            count_only: true,
            ..np
        };
        assert_eq!(sources(multi, count), [Source::Count; 2]);
        assert_eq!(sources(Chosen::FentryFexit, count), [Source::Count; 2]);
    }
}
