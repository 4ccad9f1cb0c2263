//! How the hooks are timed: the first attach method the running kernel
//! offers, in the order of [`FAMILIES`] (multi session → kprobe session →
//! kprobe multi → session → fentry/fexit → kprobe/kretprobe). Each method
//! passed over is recorded with its reason. `auto` weighs what the trace is
//! for: the multi-links (and the session programs) attach every hook fast but
//! cost more per call than fentry/fexit (BENCHMARKS.md, 'Cost per traced call'), so a long trace
//! (`--duration` of at least [`LONG_TRACE_S`]) or `--weigh per-call` (the
//! lab's cells) takes fentry/fexit.
use std::sync::LazyLock;

use anyhow::Result;
use clap::builder::PossibleValue;

use super::family::{AttachTypes, Family};
use super::offer::Offer;
use super::registry::FAMILIES;
use base::error::usage;

const AUTO_HELP: &str =
    "The first the kernel offers (multi session, kprobe session, kprobe multi, \
    session, fentry/fexit, kprobe); a trace with --duration of 120 s or more (or --weigh per-call) \
    skips those that attach fast but cost more per call.";

/// `trace --method`: `auto`, or one method by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodArg(Option<&'static Family>);

impl MethodArg {
    pub const AUTO: MethodArg = MethodArg(None);

    pub fn is_auto(self) -> bool {
        self.0.is_none()
    }

    /// The method asked for by name.
    pub fn family(self) -> Option<&'static Family> {
        self.0
    }

    /// Its `--method` value.
    pub fn name(self) -> &'static str {
        self.0.map_or("auto", |f| f.arg)
    }
}

impl clap::ValueEnum for MethodArg {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: LazyLock<Vec<MethodArg>> = LazyLock::new(|| {
            let named = FAMILIES.iter().map(|f| MethodArg(Some(*f)));
            std::iter::once(MethodArg::AUTO).chain(named).collect()
        });
        &ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self.0 {
            None => PossibleValue::new("auto").help(AUTO_HELP),
            Some(f) => PossibleValue::new(f.arg).help(f.help),
        })
    }
}

/// The method taken, with the attach types it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chosen {
    pub family: &'static Family,
    pub attach: AttachTypes,
}

impl Chosen {
    pub fn name(self) -> &'static str {
        self.family.name
    }
}

pub use model::NotUsed;

/// A trace of at least this many seconds weighs per-call cost over attach
/// time. On 7.3 the session multi-link costs ≈ 150 virtual ns more per call
/// than fentry/fexit and attaches every hook ≈ 12 s sooner: at a busy CPU's
/// million hook calls a second that is 0.15 s per second traced, the attach
/// time saved after ≈ 80 s. On 6.12 the kprobe session link costs ≈ 550-750
/// more per call and saves ≈ 42 s of attach and release: overtaken after ≈ 55-75 s
/// at a million calls a second, far later at the rates most systems see.
pub const LONG_TRACE_S: f64 = 120.0;

/// What `auto` weighs (`--weigh`, else the trace's expected length).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Weigh {
    /// Attach and release time: the multi-links where the kernel has them (a short trace, `serve`/`top` starting up).
    AttachTime,
    /// Cost per call: fentry/fexit where the kernel has it (a trace of `--duration` of 120 s or more, a measurement).
    PerCall,
}

/// What `auto` weighs, and what decided it (named in `probe.method_why`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Weighed {
    pub weigh: Weigh,
    pub because: &'static str,
}

impl Weigh {
    /// `asked` (`--weigh`), else by the trace's expected length; `--sample`
    /// (serve's default) is for probes that stay, which weigh cost per call.
    pub fn of(asked: Option<Weigh>, duration_s: Option<f64>, sampled: bool) -> Weighed {
        let (weigh, because) = match (asked, duration_s) {
            (Some(Weigh::PerCall), _) => (Weigh::PerCall, "--weigh per-call"),
            (Some(Weigh::AttachTime), _) => (Weigh::AttachTime, "--weigh attach-time"),
            (None, Some(d)) if d >= LONG_TRACE_S => (Weigh::PerCall, "--duration of 120 s or more"),
            (None, _) if sampled => (
                Weigh::PerCall,
                "--sample or --timing-windows (serve's default): probes that stay, whose cost per call adds up",
            ),
            (None, _) => (
                Weigh::AttachTime,
                "no --duration of 120 s or more and no --weigh, or serve/top",
            ),
        };
        Weighed { weigh, because }
    }
}

impl Weighed {
    /// "auto weighs cost per call (--weigh per-call): TAIL".
    fn why(&self, tail: &str) -> String {
        let what = match self.weigh {
            Weigh::AttachTime => "attach time",
            Weigh::PerCall => "cost per call",
        };
        format!("auto weighs {what} ({}): {tail}", self.because)
    }
}

const PER_CALL_REASON: &str = "dearer per call than fentry/fexit";

#[derive(Debug)]
pub struct Choice {
    pub method: Chosen,
    /// Why `auto` took it, where the kernel offered a choice.
    pub why: Option<String>,
    /// BPF_TRACE_FEXIT_MULTI's value, with the multi session method only:
    /// --count-only's multi-link.
    pub fexit_multi: Option<u32>,
    /// The methods before it in the order, with their reasons.
    pub not_used: Vec<NotUsed>,
}

/// What the trace needs of its method beyond timing each call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Wants {
    /// `--count-only`: one counting fexit program.
    pub count_only: bool,
    /// `--syscall-time`: fentry tracing of the syscall.
    pub syscall_time: bool,
    /// `--timing-windows`: fentry programs attached and released during the
    /// trace (fentry/fexit only).
    pub windows: bool,
}

impl Wants {
    /// Why `family` cannot serve this trace (asked for by name, and not).
    fn lacking(self, family: &Family) -> Option<(&'static str, &'static str)> {
        if self.count_only && !family.counts {
            return Some((
                "--count-only has no kprobe program: use --method auto or fentry-fexit",
                "no counting program (--count-only)",
            ));
        }
        if self.windows && !family.is(&super::fentry::FAMILY) {
            return Some((
                "--timing-windows attaches fentry programs in its windows: use --method auto or fentry-fexit",
                "no fentry programs to attach in windows (--timing-windows)",
            ));
        }
        if self.syscall_time && !family.syscall_time {
            return Some((
                "--syscall-time needs fentry tracing: use --method auto or fentry-fexit",
                "no syscall timing (--syscall-time)",
            ));
        }
        None
    }

    /// When no method the kernel offers can serve this trace.
    fn unmet(self) -> &'static str {
        if self.windows {
            return "--timing-windows needs kernel 5.17 or later (fentry/fexit): use --sample N instead";
        }
        match self.count_only {
            true => "--count-only needs kernel 5.17 or later (fexit tracing): trace without it",
            false => "--syscall-time needs kernel 5.17 or later (fentry tracing)",
        }
    }
}

pub fn choose(offer: &Offer, arg: MethodArg, w: Weighed, wants: Wants) -> Result<Choice> {
    let per_call = arg.is_auto() && w.weigh == Weigh::PerCall && offer.func_ret;
    let dearer = w.why(PER_CALL_REASON);
    let not_asked = format!("not asked for (--method {})", arg.name());
    let mut not_used = Vec::new();
    let mut weighed_out = false;
    for family in FAMILIES {
        let asked = arg.family().is_some_and(|a| a.is(family));
        if !arg.is_auto() && !asked {
            not_used.push(passed(family.name, &not_asked));
            continue;
        }
        if let Some((refusal, reason)) = wants.lacking(family) {
            if asked {
                return Err(usage(refusal));
            }
            not_used.push(passed(family.name, reason));
            continue;
        }
        match (family.offered)(offer) {
            Ok(_) if per_call && family.dearer_per_call => {
                not_used.push(passed(family.name, &dearer));
                weighed_out = true;
            }
            Ok(attach) => {
                let weighed = family.dearer_per_call || weighed_out;
                let why = family.why_auto.filter(|_| arg.is_auto() && weighed);
                return Ok(Choice {
                    method: Chosen { family, attach },
                    why: why.map(|tail| w.why(tail)),
                    fexit_multi: offer.fexit_multi.filter(|_| family.counts_by_multi_link),
                    not_used,
                });
            }
            // Before 5.17 no method counts or times syscalls: say so, not "use kprobe".
            Err(_) if asked && wants != Wants::default() && !offer.func_ret => {
                return Err(usage(wants.unmet()))
            }
            Err(_) if asked => return Err(usage(family.refused_missing)),
            Err(reason) => not_used.push(passed(family.name, reason)),
        }
    }
    // Only a trace no method could serve gets here: the last method
    // (kprobe/kretprobe) is on every kernel.
    Err(usage(wants.unmet()))
}

fn passed(method: &str, reason: &str) -> NotUsed {
    NotUsed {
        method: method.into(),
        reason: reason.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{fentry, kmulti, kprobe, multi, session};
    use super::*;

    #[allow(non_snake_case)]
    fn MultiSession(multi_: u32, session_: u32) -> Chosen {
        Chosen {
            family: &multi::FAMILY,
            attach: [multi_, session_],
        }
    }

    fn chosen(family: &'static Family, attach: u32) -> Chosen {
        Chosen {
            family,
            attach: [attach, 0],
        }
    }

    fn by_name(family: &'static Family) -> MethodArg {
        MethodArg(Some(family))
    }

    fn offer(multi: Option<u32>, fsession: Option<u32>, func_ret: bool) -> Offer {
        Offer {
            fsession_multi: multi,
            fexit_multi: multi.map(|m| m + 1),
            fentry_multi: None,
            fsession,
            kprobe_multi: false,
            kprobe_session: None,
            func_ret,
        }
    }

    const SHORT: Weighed = Weighed {
        weigh: Weigh::AttachTime,
        because: "a short trace",
    };
    const LONG: Weighed = Weighed {
        weigh: Weigh::PerCall,
        because: "--weigh per-call",
    };

    #[test]
    fn the_order_is_multi_session_session_fentry_kprobe() {
        let c = choose(
            &offer(Some(61), Some(58), true),
            MethodArg::AUTO,
            SHORT,
            Wants::default(),
        )
        .unwrap();
        assert_eq!(c.method, MultiSession(61, 58));
        assert!(c.not_used.is_empty());

        let c = choose(
            &offer(None, Some(58), true),
            MethodArg::AUTO,
            SHORT,
            Wants::default(),
        )
        .unwrap();
        assert_eq!(c.method, chosen(&session::FAMILY, 58));
        assert!(c.not_used[0].reason.contains("no BPF_TRACE_FSESSION_MULTI"));

        let c = choose(
            &offer(None, None, true),
            MethodArg::AUTO,
            SHORT,
            Wants::default(),
        )
        .unwrap();
        assert_eq!(c.method, chosen(&fentry::FAMILY, 0));
        let names: Vec<&str> = c.not_used.iter().map(|n| n.method.as_str()).collect();
        assert_eq!(
            names,
            ["multi session", "kprobe session", "kprobe multi", "session"]
        );
        assert!(c.not_used[2].reason.contains("CONFIG_FPROBE"));

        let c = choose(
            &offer(None, None, false),
            MethodArg::AUTO,
            SHORT,
            Wants::default(),
        )
        .unwrap();
        assert_eq!(c.method, chosen(&kprobe::FAMILY, 0));
        assert_eq!(c.not_used.len(), 5);
    }

    #[test]
    fn kprobes_are_used_where_asked_for_even_with_fexit_at_hand() {
        for o in [offer(Some(61), Some(58), true), offer(None, None, true)] {
            let c = choose(&o, by_name(&kprobe::FAMILY), LONG, Wants::default()).unwrap();
            assert_eq!((c.method, c.why), (chosen(&kprobe::FAMILY, 0), None));
            assert_eq!(c.not_used.len(), 5);
            assert!(c
                .not_used
                .iter()
                .all(|n| n.reason.contains("--method kprobe")));
        }
    }

    #[test]
    fn a_method_asked_for_is_used_or_refused() {
        let c = choose(
            &offer(Some(61), Some(58), true),
            by_name(&fentry::FAMILY),
            SHORT,
            Wants::default(),
        )
        .unwrap();
        assert_eq!(c.method, chosen(&fentry::FAMILY, 0));
        assert!(c.not_used[3].reason.contains("--method fentry-fexit"));
        let c = choose(
            &offer(Some(61), Some(58), true),
            by_name(&session::FAMILY),
            SHORT,
            Wants::default(),
        )
        .unwrap();
        assert_eq!(c.method, chosen(&session::FAMILY, 58));
        assert!(c.not_used[0].reason.contains("not asked for"));
        assert!(choose(
            &offer(None, None, true),
            by_name(&session::FAMILY),
            SHORT,
            Wants::default()
        )
        .is_err());
        assert!(choose(
            &offer(None, Some(58), true),
            by_name(&multi::FAMILY),
            SHORT,
            Wants::default()
        )
        .is_err());
    }

    /// 6.12: kprobe.multi and kprobe sessions, no tracing session programs.
    fn kprobe_offer(session: Option<u32>) -> Offer {
        Offer {
            kprobe_multi: true,
            kprobe_session: session,
            ..offer(None, None, true)
        }
    }

    #[test]
    fn kprobe_links_come_after_the_session_multi_link_and_are_weighed() {
        let o = kprobe_offer(Some(56));
        let short = choose(&o, MethodArg::AUTO, SHORT, Wants::default()).unwrap();
        assert_eq!(short.method, chosen(&kmulti::SESSION, 56));
        assert!(short.why.unwrap().contains("attach time"));
        let names: Vec<&str> = short.not_used.iter().map(|n| n.method.as_str()).collect();
        assert_eq!(names, ["multi session"]);
        // Without sessions (5.18 .. 6.9): the kprobe.multi link pair.
        let pair = choose(
            &kprobe_offer(None),
            MethodArg::AUTO,
            SHORT,
            Wants::default(),
        )
        .unwrap();
        assert_eq!(pair.method, chosen(&kmulti::PAIR, 0));
        assert!(pair.not_used[1].reason.contains("no kprobe sessions"));
        let long = choose(&o, MethodArg::AUTO, LONG, Wants::default()).unwrap();
        assert_eq!(long.method, chosen(&fentry::FAMILY, 0));
        assert!(long.why.unwrap().contains("cost per call"));
        for n in &long.not_used[1..3] {
            assert!(n.reason.contains("cost per call"), "{}", n.reason);
        }
        // Asked for by name: used whatever the trace's length, or refused.
        let asked = choose(&o, by_name(&kmulti::PAIR), LONG, Wants::default()).unwrap();
        assert_eq!((asked.method, asked.why), (chosen(&kmulti::PAIR, 0), None));
        assert!(asked.not_used[1].reason.contains("not asked for"));
        let fentry = choose(&o, by_name(&fentry::FAMILY), SHORT, Wants::default()).unwrap();
        assert!(fentry.not_used[2].reason.contains("not asked for"));
        let none = offer(None, None, true);
        assert!(choose(&none, by_name(&kmulti::PAIR), SHORT, Wants::default()).is_err());
        assert!(choose(
            &kprobe_offer(None),
            by_name(&kmulti::SESSION),
            SHORT,
            Wants::default()
        )
        .is_err());
        // Where the session multi-link exists (7.x), it comes first.
        let both = Offer {
            kprobe_multi: true,
            kprobe_session: Some(56),
            ..offer(Some(61), Some(58), true)
        };
        let c = choose(&both, MethodArg::AUTO, SHORT, Wants::default()).unwrap();
        assert!(c.method.family.is(&multi::FAMILY));
    }

    #[test]
    fn auto_weighs_attach_time_for_short_traces_and_cost_per_call_for_long_ones() {
        assert_eq!(Weigh::of(None, None, false).weigh, Weigh::AttachTime);
        assert_eq!(Weigh::of(None, Some(60.0), false).weigh, Weigh::AttachTime);
        let long = Weigh::of(None, Some(LONG_TRACE_S), false);
        assert_eq!(long.weigh, Weigh::PerCall);
        assert!(long.because.contains("--duration"));
        // --weigh wins over the length either way, and is named as the reason.
        let asked = Weigh::of(Some(Weigh::PerCall), None, false);
        assert_eq!(
            (asked.weigh, asked.because),
            (Weigh::PerCall, "--weigh per-call")
        );
        let short_asked = Weigh::of(Some(Weigh::AttachTime), Some(600.0), true);
        assert_eq!(short_asked.weigh, Weigh::AttachTime);
        assert!(!short_asked.because.contains("--duration"));
        // Sampled timing (serve's default) stays: cost per call, unless told.
        let sampled = Weigh::of(None, Some(5.0), true);
        assert_eq!(sampled.weigh, Weigh::PerCall);
        assert!(sampled.because.contains("--sample"));
        let o = Offer {
            kprobe_multi: true,
            kprobe_session: Some(56),
            ..offer(Some(61), Some(58), true)
        };
        let short = choose(&o, MethodArg::AUTO, SHORT, Wants::default()).unwrap();
        assert_eq!(short.fexit_multi, Some(62));
        assert!(short.why.unwrap().contains("attach time"));
        let long = choose(&o, MethodArg::AUTO, LONG, Wants::default()).unwrap();
        assert_eq!(long.method, chosen(&fentry::FAMILY, 0));
        assert!(long.why.unwrap().contains("cost per call"));
        let reasons: Vec<&str> = long.not_used.iter().map(|n| n.reason.as_str()).collect();
        assert!(
            reasons.iter().all(|r| r.contains("cost per call")),
            "{reasons:?}"
        );
        // Asked for by name, or nothing to weigh: as before.
        let asked = choose(&o, by_name(&multi::FAMILY), LONG, Wants::default()).unwrap();
        assert!(asked.method.family.is(&multi::FAMILY) && asked.why.is_none());
        let plain = choose(
            &offer(None, None, true),
            MethodArg::AUTO,
            LONG,
            Wants::default(),
        )
        .unwrap();
        assert_eq!(plain.method, chosen(&fentry::FAMILY, 0));
        assert!(plain.why.is_none());
    }

    #[test]
    fn what_the_trace_wants_passes_over_methods_that_cannot_serve_it() {
        let count = Wants {
            count_only: true,
            ..Wants::default()
        };
        // 6.12: the kprobe links have no counting program, fentry/fexit counts.
        let c = choose(&kprobe_offer(Some(56)), MethodArg::AUTO, SHORT, count).unwrap();
        assert_eq!(c.method, chosen(&fentry::FAMILY, 0));
        assert!(
            c.not_used[1].reason.contains("--count-only"),
            "{:?}",
            c.not_used
        );
        assert!(
            c.not_used[2].reason.contains("--count-only"),
            "{:?}",
            c.not_used
        );
        // Asked for by name: refused in one line.
        let e = choose(&kprobe_offer(None), by_name(&kmulti::PAIR), SHORT, count).unwrap_err();
        assert!(e.to_string().contains("has no kprobe program"), "{e}");
        // Before 5.17 nothing counts or times syscalls: the version is the reason.
        let old = offer(None, None, false);
        let e = choose(&old, MethodArg::AUTO, SHORT, count).unwrap_err();
        assert!(e.to_string().contains("needs kernel 5.17"), "{e}");
        let syscall = Wants {
            syscall_time: true,
            ..Wants::default()
        };
        let e = choose(&old, by_name(&fentry::FAMILY), SHORT, syscall).unwrap_err();
        assert!(e.to_string().contains("needs kernel 5.17"), "{e}");
        // A method the kernel lacks on 5.17+ is refused for what it lacks.
        let e = choose(
            &offer(None, None, true),
            by_name(&multi::FAMILY),
            SHORT,
            count,
        )
        .unwrap_err();
        assert!(e.to_string().contains("no multi-link session"), "{e}");
        // Without such needs, fentry/fexit asked for before 5.17 is refused
        // and names what to do.
        let e = choose(&old, by_name(&fentry::FAMILY), SHORT, Wants::default()).unwrap_err();
        assert!(e.to_string().contains("use --method auto or kprobe"), "{e}");
        let k = choose(&old, MethodArg::AUTO, SHORT, Wants::default()).unwrap();
        assert_eq!(k.method, chosen(&kprobe::FAMILY, 0));
    }

    /// Timing windows attach fentry programs: auto takes fentry/fexit even
    /// where a multi-link is offered, another method by name is refused, and
    /// a kernel without fentry/fexit is told to sample instead.
    #[test]
    fn timing_windows_take_fentry_fexit_or_say_why_not() {
        let windows = Wants {
            windows: true,
            ..Wants::default()
        };
        let c = choose(
            &offer(Some(55), Some(56), true),
            MethodArg::AUTO,
            SHORT,
            windows,
        )
        .unwrap();
        assert_eq!(c.method, chosen(&fentry::FAMILY, 0));
        assert!(c
            .not_used
            .iter()
            .any(|n| n.reason.contains("--timing-windows")));
        let e = choose(
            &offer(Some(55), Some(56), true),
            by_name(&multi::FAMILY),
            SHORT,
            windows,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("use --method auto or fentry-fexit"),
            "{e}"
        );
        let e = choose(&offer(None, None, false), MethodArg::AUTO, SHORT, windows).unwrap_err();
        assert!(e.to_string().contains("use --sample N"), "{e}");
    }
}
