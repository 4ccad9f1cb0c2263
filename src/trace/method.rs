//! How the hooks are timed: the first attach method the running kernel
//! offers, in the order multi session → session → fentry/fexit →
//! kprobe/kretprobe. Each method passed over is recorded with its reason.
use anyhow::Result;

use super::btf::KernelBtf;
use super::kfuncs::Kfuncs;
use crate::base::error::usage;

/// `trace --method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MethodArg {
    /// The first the kernel offers (multi session, session, fentry/fexit, kprobe).
    Auto,
    /// One session program for every hook, one link (BPF_TRACE_FSESSION_MULTI); refused where the kernel lacks it.
    MultiSession,
    /// One session program per hook (BPF_TRACE_FSESSION); refused where the kernel lacks it.
    Session,
    /// An fentry and an fexit program per hook.
    FentryFexit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// BPF_TRACE_FSESSION_MULTI, then BPF_TRACE_FSESSION (for a fallback to
    /// one program per hook), with their values in this kernel's enum bpf_attach_type.
    MultiSession {
        multi: u32,
        session: u32,
    },
    /// BPF_TRACE_FSESSION, with its value in this kernel's enum bpf_attach_type.
    Session(u32),
    FentryFexit,
    /// Kernels before 5.17 (no bpf_get_func_ret()).
    Kprobe,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::MultiSession { .. } => "multi session",
            Method::Session(_) => "session",
            Method::FentryFexit => "fentry/fexit",
            Method::Kprobe => "kprobe/kretprobe",
        }
    }
}

pub use crate::model::NotUsed;

pub struct Choice {
    pub method: Method,
    /// The methods before it in the order, with their reasons.
    pub not_used: Vec<NotUsed>,
}

/// What this kernel offers, read from its BTF and release.
pub struct Offer {
    /// BPF_TRACE_FSESSION_MULTI's value, if the kernel has it.
    pub fsession_multi: Option<u32>,
    /// BPF_TRACE_FSESSION's value, if the kernel has it and its kfuncs.
    pub fsession: Option<u32>,
    /// bpf_get_func_ret() (5.17), which fexit probes need.
    pub func_ret: bool,
}

impl Offer {
    pub fn read(kbtf: &KernelBtf, kfuncs: &Kfuncs, release: (u32, u32)) -> Self {
        let session_kfuncs =
            kfuncs.has("bpf_session_cookie") && kfuncs.has("bpf_session_is_return");
        Self {
            fsession_multi: kbtf.attach_types.get("BPF_TRACE_FSESSION_MULTI").copied(),
            fsession: kbtf
                .attach_types
                .get("BPF_TRACE_FSESSION")
                .copied()
                .filter(|_| session_kfuncs),
            // libbpf cannot probe helpers of tracing programs (they need an
            // attach target), so the version decides; Debian does not backport it.
            func_ret: release >= (5, 17),
        }
    }
}

pub fn choose(offer: &Offer, arg: MethodArg) -> Result<Choice> {
    let multi_reason = match (offer.fsession_multi, offer.fsession, arg) {
        (Some(multi), Some(session), MethodArg::Auto | MethodArg::MultiSession) => {
            return Ok(Choice {
                method: Method::MultiSession { multi, session },
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
    let mut not_used = vec![NotUsed {
        method: "multi session".into(),
        reason: multi_reason.into(),
    }];
    let session_reason = match (offer.fsession, arg) {
        (Some(t), MethodArg::Auto | MethodArg::Session | MethodArg::MultiSession) => {
            return Ok(Choice {
                method: Method::Session(t),
                not_used,
            })
        }
        (None, MethodArg::Session | MethodArg::MultiSession) => {
            return Err(usage(
                "--method session: this kernel has no session programs \
                 (BPF_TRACE_FSESSION and the kfuncs bpf_session_cookie, bpf_session_is_return): \
                 use --method auto",
            ))
        }
        (Some(_), MethodArg::FentryFexit) => "not asked for (--method fentry-fexit)",
        (None, _) => "the kernel has no BPF_TRACE_FSESSION (with bpf_session_cookie)",
    };
    not_used.push(NotUsed {
        method: "session".into(),
        reason: session_reason.into(),
    });
    if offer.func_ret {
        return Ok(Choice {
            method: Method::FentryFexit,
            not_used,
        });
    }
    not_used.push(NotUsed {
        method: "fentry/fexit".into(),
        reason: "the kernel lacks bpf_get_func_ret() (5.17)".into(),
    });
    Ok(Choice {
        method: Method::Kprobe,
        not_used,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(multi: Option<u32>, fsession: Option<u32>, func_ret: bool) -> Offer {
        Offer {
            fsession_multi: multi,
            fsession,
            func_ret,
        }
    }

    #[test]
    fn the_order_is_multi_session_session_fentry_kprobe() {
        let c = choose(&offer(Some(61), Some(58), true), MethodArg::Auto).unwrap();
        assert_eq!(
            c.method,
            Method::MultiSession {
                multi: 61,
                session: 58
            }
        );
        assert!(c.not_used.is_empty());

        let c = choose(&offer(None, Some(58), true), MethodArg::Auto).unwrap();
        assert_eq!(c.method, Method::Session(58));
        assert!(c.not_used[0].reason.contains("no BPF_TRACE_FSESSION_MULTI"));

        let c = choose(&offer(None, None, true), MethodArg::Auto).unwrap();
        assert_eq!(c.method, Method::FentryFexit);
        let names: Vec<&str> = c.not_used.iter().map(|n| n.method.as_str()).collect();
        assert_eq!(names, ["multi session", "session"]);

        let c = choose(&offer(None, None, false), MethodArg::Auto).unwrap();
        assert_eq!(c.method, Method::Kprobe);
        assert_eq!(c.not_used.len(), 3);
    }

    #[test]
    fn a_method_asked_for_is_used_or_refused() {
        let c = choose(&offer(Some(61), Some(58), true), MethodArg::FentryFexit).unwrap();
        assert_eq!(c.method, Method::FentryFexit);
        assert!(c.not_used[1].reason.contains("--method fentry-fexit"));
        let c = choose(&offer(Some(61), Some(58), true), MethodArg::Session).unwrap();
        assert_eq!(c.method, Method::Session(58));
        assert!(c.not_used[0].reason.contains("not asked for"));
        assert!(choose(&offer(None, None, true), MethodArg::Session).is_err());
        assert!(choose(&offer(None, Some(58), true), MethodArg::MultiSession).is_err());
    }
}
