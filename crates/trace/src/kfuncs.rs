//! The kernel functions (kfuncs) lsmpmon's probes may call, as the running
//! kernel's BTF has them: each is absent on a kernel that lacks it.
use super::btf::KernelBtf;
use crate::intf::lsmpmon_kfunc::{
    LSMPMON_KFUNC_PREEMPT_DISABLE, LSMPMON_KFUNC_PREEMPT_ENABLE, LSMPMON_KFUNC_SESSION_COOKIE,
    LSMPMON_KFUNC_SESSION_IS_RETURN,
};

/// The running kernel's BTF ids of the kfuncs, by their placeholder in the
/// probes' code (enum lsmpmon_kfunc).
#[derive(Debug, Clone, Default)]
pub struct Kfuncs(Vec<(u32, u32)>);

impl Kfuncs {
    /// (placeholder, kernel function name).
    pub const ALL: &'static [(u32, &'static str)] = &[
        (LSMPMON_KFUNC_PREEMPT_DISABLE, "bpf_preempt_disable"),
        (LSMPMON_KFUNC_PREEMPT_ENABLE, "bpf_preempt_enable"),
        (LSMPMON_KFUNC_SESSION_IS_RETURN, "bpf_session_is_return"),
        (LSMPMON_KFUNC_SESSION_COOKIE, "bpf_session_cookie"),
    ];

    pub fn resolve(kbtf: &KernelBtf) -> Self {
        Self(
            Self::ALL
                .iter()
                .filter_map(|(marker, name)| kbtf.funcs.get(*name).map(|f| (*marker, f.btf_id)))
                .collect(),
        )
    }

    /// (placeholder, BTF id) pairs, as `resolve` finds them on a kernel.
    #[cfg(test)]
    pub fn from_ids(ids: Vec<(u32, u32)>) -> Self {
        Self(ids)
    }

    pub fn has(&self, name: &str) -> bool {
        Self::ALL
            .iter()
            .any(|(m, n)| *n == name && self.0.iter().any(|(k, _)| k == m))
    }

    /// The BTF id of the kfunc whose placeholder is `marker`.
    pub fn btf_id(&self, marker: u32) -> Option<u32> {
        self.0.iter().find(|(m, _)| *m == marker).map(|(_, id)| *id)
    }
}
