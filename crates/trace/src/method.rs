//! How the hooks are timed: the first attach method the running kernel
//! offers, in the order multi session → kprobe session → kprobe multi →
//! session → fentry/fexit → kprobe/kretprobe. Each method passed over is
//! recorded with its reason. `auto` weighs what the trace is for: the
//! multi-links (and the session programs) attach every hook fast but cost
//! more per call than fentry/fexit (BENCHMARKS.md §1), so a long trace
//! (`--duration` of at least [`LONG_TRACE_S`]) or `--weigh per-call` (the
//! lab's cells) takes fentry/fexit.
use anyhow::Result;

use super::btf::KernelBtf;
use super::kfuncs::Kfuncs;
use base::error::usage;

/// `trace --method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MethodArg {
    /// The first the kernel offers (multi session, kprobe session, kprobe multi, session, fentry/fexit, kprobe); a trace with --duration of 120 s or more (or --weigh per-call) skips those that attach fast but cost more per call.
    Auto,
    /// One session program for every hook, one link (BPF_TRACE_FSESSION_MULTI); refused where the kernel lacks it.
    MultiSession,
    /// One kprobe program run at every hook's entry and return, one link (BPF_TRACE_KPROBE_SESSION, 6.10+, CONFIG_FPROBE); refused where the kernel lacks it.
    KprobeSession,
    /// One kprobe program for every hook's entry and one for its return, one link each (BPF_TRACE_KPROBE_MULTI, 5.18+, CONFIG_FPROBE); refused where the kernel lacks it.
    KprobeMulti,
    /// One session program per hook (BPF_TRACE_FSESSION); refused where the kernel lacks it.
    Session,
    /// An fentry and an fexit program per hook.
    FentryFexit,
    /// A kprobe and a kretprobe perf event per hook, on any kernel: on 6.1 every hook attaches in about 3 s and is released in about 10 s (fentry/fexit: 5 and 33), at about 2.4 times the cost per call.
    Kprobe,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// BPF_TRACE_FSESSION_MULTI, then BPF_TRACE_FSESSION (for a fallback to
    /// one program per hook), with their values in this kernel's enum bpf_attach_type.
    MultiSession {
        multi: u32,
        session: u32,
    },
    /// BPF_TRACE_KPROBE_SESSION (its value in this kernel's enum
    /// bpf_attach_type), one link for every hook.
    KprobeSession(u32),
    /// BPF_TRACE_KPROBE_MULTI, an entry and a return link for every hook.
    KprobeMulti,
    /// BPF_TRACE_FSESSION, with its value in this kernel's enum bpf_attach_type.
    Session(u32),
    FentryFexit,
    /// Kernels before 5.17 (no bpf_get_func_ret()), or `--method kprobe`.
    Kprobe,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::MultiSession { .. } => "multi session",
            Method::KprobeSession(_) => "kprobe session",
            Method::KprobeMulti => "kprobe multi",
            Method::Session(_) => "session",
            Method::FentryFexit => "fentry/fexit",
            Method::Kprobe => "kprobe/kretprobe",
        }
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
    /// `asked` (`--weigh`), else by the trace's expected length.
    pub fn of(asked: Option<Weigh>, duration_s: Option<f64>) -> Weighed {
        let (weigh, because) = match (asked, duration_s) {
            (Some(Weigh::PerCall), _) => (Weigh::PerCall, "--weigh per-call"),
            (Some(Weigh::AttachTime), _) => (Weigh::AttachTime, "--weigh attach-time"),
            (None, Some(d)) if d >= LONG_TRACE_S => (Weigh::PerCall, "--duration of 120 s or more"),
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

const WHY_MULTI: &str = "one multi-link attaches every hook in about 50 ms instead of about 12 s, \
    at about 150 virtual ns more per call than fentry/fexit (BENCHMARKS.md §1; --method fentry-fexit)";
const WHY_FENTRY: &str = "fentry/fexit costs less per call than the multi-links (about 150 virtual \
    ns less than the session multi-link on 7.3, 550-750 less than the kprobe session on 6.12) and 80 \
    less than one session per hook; its slower attach and release (seconds, one trampoline per \
    hook) are paid once";
const WHY_KPROBE_MULTI: &str = "one kprobe link for every hook attaches in about 50 ms instead of \
    about 6.6 s and is released in about 0.2 s instead of 36 s (one grace period per link, not one \
    per hook), at about 550-750 virtual ns more per call than fentry/fexit on 6.12 \
    (BENCHMARKS.md §1; --method fentry-fexit)";
const PER_CALL_REASON: &str = "dearer per call than fentry/fexit";

pub struct Choice {
    pub method: Method,
    /// Why `auto` took it, where the kernel offered a choice.
    pub why: Option<String>,
    /// BPF_TRACE_FEXIT_MULTI's value, with the multi session method only:
    /// --count-only's multi-link.
    pub fexit_multi: Option<u32>,
    /// The methods before it in the order, with their reasons.
    pub not_used: Vec<NotUsed>,
}

/// What this kernel offers, read from its BTF and release.
pub struct Offer {
    /// BPF_TRACE_FSESSION_MULTI's value, if the kernel has it.
    pub fsession_multi: Option<u32>,
    /// BPF_TRACE_FEXIT_MULTI's value, if the kernel has it.
    pub fexit_multi: Option<u32>,
    /// BPF_TRACE_FSESSION's value, if the kernel has it and its kfuncs.
    pub fsession: Option<u32>,
    /// kprobe.multi links (BPF_TRACE_KPROBE_MULTI and CONFIG_FPROBE).
    pub kprobe_multi: bool,
    /// BPF_TRACE_KPROBE_SESSION's value, with kprobe.multi and the session kfuncs.
    pub kprobe_session: Option<u32>,
    /// bpf_get_func_ret() (5.17), which fexit probes need.
    pub func_ret: bool,
}

/// A function only a kernel built with CONFIG_FPROBE has: without it the
/// kernel knows BPF_TRACE_KPROBE_MULTI (its UAPI enum) but refuses every
/// such link (EOPNOTSUPP). Debian's 6.1 cloud kernel is built without it.
pub const FPROBE_FUNCTION: &str = "register_fprobe_ips";

impl Offer {
    pub fn read(kbtf: &KernelBtf, kfuncs: &Kfuncs, release: (u32, u32)) -> Self {
        let session_kfuncs =
            kfuncs.has("bpf_session_cookie") && kfuncs.has("bpf_session_is_return");
        let kprobe_multi = kbtf.attach_types.contains_key("BPF_TRACE_KPROBE_MULTI")
            && kbtf.funcs.contains_key(FPROBE_FUNCTION);
        Self {
            fsession_multi: kbtf.attach_types.get("BPF_TRACE_FSESSION_MULTI").copied(),
            fexit_multi: kbtf.attach_types.get("BPF_TRACE_FEXIT_MULTI").copied(),
            fsession: kbtf
                .attach_types
                .get("BPF_TRACE_FSESSION")
                .copied()
                .filter(|_| session_kfuncs),
            kprobe_multi,
            kprobe_session: kbtf
                .attach_types
                .get("BPF_TRACE_KPROBE_SESSION")
                .copied()
                .filter(|_| kprobe_multi && session_kfuncs),
            // libbpf cannot probe helpers of tracing programs (they need an
            // attach target), so the version decides; Debian does not backport it.
            func_ret: release >= (5, 17),
        }
    }
}

pub fn choose(offer: &Offer, arg: MethodArg, w: Weighed) -> Result<Choice> {
    if arg == MethodArg::Kprobe {
        let not_used = [
            "multi session",
            "kprobe session",
            "kprobe multi",
            "session",
            "fentry/fexit",
        ]
        .map(|m| passed(m, "not asked for (--method kprobe)"))
        .to_vec();
        return Ok(Choice::of(Method::Kprobe, None, not_used));
    }
    let per_call = arg == MethodArg::Auto && w.weigh == Weigh::PerCall && offer.func_ret;
    let dearer = w.why(PER_CALL_REASON);
    let multi_reason = match (offer.fsession_multi, offer.fsession, arg) {
        (Some(_), Some(_), MethodArg::Auto) if per_call => dearer.as_str(),
        (Some(multi), Some(session), MethodArg::Auto | MethodArg::MultiSession) => {
            return Ok(Choice {
                method: Method::MultiSession { multi, session },
                fexit_multi: offer.fexit_multi,
                why: (arg == MethodArg::Auto).then(|| w.why(WHY_MULTI)),
                not_used: Vec::new(),
            })
        }
        (_, _, MethodArg::MultiSession) => {
            return Err(usage(
                "--method multi-session: this kernel has no multi-link session programs \
                 (BPF_TRACE_FSESSION_MULTI, BPF_TRACE_FSESSION and the session kfuncs): \
                 use --method auto",
            ))
        }
        (Some(_), Some(_), _) => "not asked for (--method)",
        (Some(_), None, _) => "the kernel has BPF_TRACE_FSESSION_MULTI but no session kfuncs",
        (None, _, _) => "the kernel has no BPF_TRACE_FSESSION_MULTI",
    };
    let mut not_used = vec![passed("multi session", multi_reason)];
    let per_call_reason = per_call.then_some(dearer.as_str());
    if let Some(method) = kprobe_links(offer, arg, per_call_reason, &mut not_used)? {
        let why = (arg == MethodArg::Auto).then(|| w.why(WHY_KPROBE_MULTI));
        return Ok(Choice::of(method, why.as_deref(), not_used));
    }
    let session_reason = match (offer.fsession, arg) {
        (Some(_), MethodArg::Auto) if per_call => dearer.as_str(),
        (Some(t), MethodArg::Auto | MethodArg::Session | MethodArg::MultiSession) => {
            return Ok(Choice::of(Method::Session(t), None, not_used))
        }
        (None, MethodArg::Session | MethodArg::MultiSession) => {
            return Err(usage(
                "--method session: this kernel has no session programs \
                 (BPF_TRACE_FSESSION and the kfuncs bpf_session_cookie, bpf_session_is_return): \
                 use --method auto",
            ))
        }
        (
            Some(_),
            MethodArg::FentryFexit
            | MethodArg::KprobeMulti
            | MethodArg::KprobeSession
            | MethodArg::Kprobe,
        ) => "not asked for (--method fentry-fexit)",
        (None, _) => "the kernel has no BPF_TRACE_FSESSION (with bpf_session_cookie)",
    };
    not_used.push(passed("session", session_reason));
    if offer.func_ret {
        let weighed = offer.fsession.is_some() || offer.kprobe_multi;
        let why = (per_call && weighed).then(|| w.why(WHY_FENTRY));
        return Ok(Choice::of(Method::FentryFexit, why.as_deref(), not_used));
    }
    not_used.push(passed(
        "fentry/fexit",
        "the kernel lacks bpf_get_func_ret() (5.17)",
    ));
    Ok(Choice::of(Method::Kprobe, None, not_used))
}

impl Choice {
    /// A method without a counting multi-link.
    fn of(method: Method, why: Option<&str>, not_used: Vec<NotUsed>) -> Self {
        Self {
            method,
            why: why.map(String::from),
            fexit_multi: None,
            not_used,
        }
    }
}

fn passed(method: &str, reason: &str) -> NotUsed {
    NotUsed {
        method: method.into(),
        reason: reason.into(),
    }
}

/// kprobe session, then kprobe multi: the one chosen (with auto, why), each
/// passed over added to `not_used` with its reason; refused where asked for
/// by name and missing.
/// `per_call`: auto weighs cost per call, with that reason.
fn kprobe_links(
    offer: &Offer,
    arg: MethodArg,
    per_call: Option<&str>,
    not_used: &mut Vec<NotUsed>,
) -> Result<Option<Method>> {
    let dearer = per_call.unwrap_or_default();
    let session_reason = match (offer.kprobe_session, arg) {
        (Some(_), MethodArg::Auto) if per_call.is_some() => dearer,
        (Some(t), MethodArg::Auto | MethodArg::KprobeSession) => {
            return Ok(Some(Method::KprobeSession(t)))
        }
        (None, MethodArg::KprobeSession) => {
            return Err(usage(
                "--method kprobe-session: this kernel has no kprobe sessions \
                 (BPF_TRACE_KPROBE_SESSION, 6.10, with CONFIG_FPROBE and the session kfuncs): \
                 use --method auto",
            ))
        }
        (Some(_), _) => "not asked for (--method)",
        (None, _) => {
            "the kernel has no kprobe sessions (BPF_TRACE_KPROBE_SESSION with CONFIG_FPROBE)"
        }
    };
    not_used.push(passed("kprobe session", session_reason));
    let multi_reason = match (offer.kprobe_multi, arg) {
        (true, MethodArg::Auto) if per_call.is_some() => dearer,
        (true, MethodArg::Auto | MethodArg::KprobeMulti) => return Ok(Some(Method::KprobeMulti)),
        (false, MethodArg::KprobeMulti) => {
            return Err(usage(
                "--method kprobe-multi: this kernel has no kprobe.multi links \
                 (BPF_TRACE_KPROBE_MULTI, 5.18, with CONFIG_FPROBE): use --method auto",
            ))
        }
        (true, _) => "not asked for (--method)",
        (false, _) => {
            "the kernel has no kprobe.multi links (BPF_TRACE_KPROBE_MULTI with CONFIG_FPROBE)"
        }
    };
    not_used.push(passed("kprobe multi", multi_reason));
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(multi: Option<u32>, fsession: Option<u32>, func_ret: bool) -> Offer {
        Offer {
            fsession_multi: multi,
            fexit_multi: multi.map(|m| m + 1),
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
        let c = choose(&offer(Some(61), Some(58), true), MethodArg::Auto, SHORT).unwrap();
        assert_eq!(
            c.method,
            Method::MultiSession {
                multi: 61,
                session: 58
            }
        );
        assert!(c.not_used.is_empty());

        let c = choose(&offer(None, Some(58), true), MethodArg::Auto, SHORT).unwrap();
        assert_eq!(c.method, Method::Session(58));
        assert!(c.not_used[0].reason.contains("no BPF_TRACE_FSESSION_MULTI"));

        let c = choose(&offer(None, None, true), MethodArg::Auto, SHORT).unwrap();
        assert_eq!(c.method, Method::FentryFexit);
        let names: Vec<&str> = c.not_used.iter().map(|n| n.method.as_str()).collect();
        assert_eq!(
            names,
            ["multi session", "kprobe session", "kprobe multi", "session"]
        );
        assert!(c.not_used[2].reason.contains("CONFIG_FPROBE"));

        let c = choose(&offer(None, None, false), MethodArg::Auto, SHORT).unwrap();
        assert_eq!(c.method, Method::Kprobe);
        assert_eq!(c.not_used.len(), 5);
    }

    #[test]
    fn kprobes_are_used_where_asked_for_even_with_fexit_at_hand() {
        for o in [offer(Some(61), Some(58), true), offer(None, None, true)] {
            let c = choose(&o, MethodArg::Kprobe, LONG).unwrap();
            assert_eq!((c.method, c.why), (Method::Kprobe, None));
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
            MethodArg::FentryFexit,
            SHORT,
        )
        .unwrap();
        assert_eq!(c.method, Method::FentryFexit);
        assert!(c.not_used[3].reason.contains("--method fentry-fexit"));
        let c = choose(&offer(Some(61), Some(58), true), MethodArg::Session, SHORT).unwrap();
        assert_eq!(c.method, Method::Session(58));
        assert!(c.not_used[0].reason.contains("not asked for"));
        assert!(choose(&offer(None, None, true), MethodArg::Session, SHORT).is_err());
        assert!(choose(&offer(None, Some(58), true), MethodArg::MultiSession, SHORT).is_err());
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
        let short = choose(&o, MethodArg::Auto, SHORT).unwrap();
        assert_eq!(short.method, Method::KprobeSession(56));
        assert!(short.why.unwrap().contains("attach time"));
        let names: Vec<&str> = short.not_used.iter().map(|n| n.method.as_str()).collect();
        assert_eq!(names, ["multi session"]);
        // Without sessions (5.18 .. 6.9): the kprobe.multi link pair.
        let pair = choose(&kprobe_offer(None), MethodArg::Auto, SHORT).unwrap();
        assert_eq!(pair.method, Method::KprobeMulti);
        assert!(pair.not_used[1].reason.contains("no kprobe sessions"));
        let long = choose(&o, MethodArg::Auto, LONG).unwrap();
        assert_eq!(long.method, Method::FentryFexit);
        assert!(long.why.unwrap().contains("cost per call"));
        for n in &long.not_used[1..3] {
            assert!(n.reason.contains("cost per call"), "{}", n.reason);
        }
        // Asked for by name: used whatever the trace's length, or refused.
        let asked = choose(&o, MethodArg::KprobeMulti, LONG).unwrap();
        assert_eq!((asked.method, asked.why), (Method::KprobeMulti, None));
        assert!(asked.not_used[1].reason.contains("not asked for"));
        let fentry = choose(&o, MethodArg::FentryFexit, SHORT).unwrap();
        assert!(fentry.not_used[2].reason.contains("not asked for"));
        let none = offer(None, None, true);
        assert!(choose(&none, MethodArg::KprobeMulti, SHORT).is_err());
        assert!(choose(&kprobe_offer(None), MethodArg::KprobeSession, SHORT).is_err());
        // Where the session multi-link exists (7.x), it comes first.
        let both = Offer {
            kprobe_multi: true,
            kprobe_session: Some(56),
            ..offer(Some(61), Some(58), true)
        };
        let c = choose(&both, MethodArg::Auto, SHORT).unwrap();
        assert!(matches!(c.method, Method::MultiSession { .. }));
    }

    #[test]
    fn auto_weighs_attach_time_for_short_traces_and_cost_per_call_for_long_ones() {
        assert_eq!(Weigh::of(None, None).weigh, Weigh::AttachTime);
        assert_eq!(Weigh::of(None, Some(60.0)).weigh, Weigh::AttachTime);
        let long = Weigh::of(None, Some(LONG_TRACE_S));
        assert_eq!(long.weigh, Weigh::PerCall);
        assert!(long.because.contains("--duration"));
        // --weigh wins over the length either way, and is named as the reason.
        let asked = Weigh::of(Some(Weigh::PerCall), None);
        assert_eq!(
            (asked.weigh, asked.because),
            (Weigh::PerCall, "--weigh per-call")
        );
        let short_asked = Weigh::of(Some(Weigh::AttachTime), Some(600.0));
        assert_eq!(short_asked.weigh, Weigh::AttachTime);
        assert!(!short_asked.because.contains("--duration"));
        let o = Offer {
            kprobe_multi: true,
            kprobe_session: Some(56),
            ..offer(Some(61), Some(58), true)
        };
        let short = choose(&o, MethodArg::Auto, SHORT).unwrap();
        assert_eq!(short.fexit_multi, Some(62));
        assert!(short.why.unwrap().contains("attach time"));
        let long = choose(&o, MethodArg::Auto, LONG).unwrap();
        assert_eq!(long.method, Method::FentryFexit);
        assert!(long.why.unwrap().contains("cost per call"));
        let reasons: Vec<&str> = long.not_used.iter().map(|n| n.reason.as_str()).collect();
        assert!(
            reasons.iter().all(|r| r.contains("cost per call")),
            "{reasons:?}"
        );
        // Asked for by name, or nothing to weigh: as before.
        let asked = choose(&o, MethodArg::MultiSession, LONG).unwrap();
        assert!(matches!(asked.method, Method::MultiSession { .. }) && asked.why.is_none());
        let plain = choose(&offer(None, None, true), MethodArg::Auto, LONG).unwrap();
        assert_eq!(plain.method, Method::FentryFexit);
        assert!(plain.why.is_none());
    }
}
