//! What the running kernel offers the attach methods, read once from its
//! BTF, kfuncs and release; each method's `Family::offered` reads it.
use crate::btf::KernelBtf;
use crate::kfuncs::Kfuncs;

/// What this kernel offers, read from its BTF and release.
pub struct Offer {
    /// BPF_TRACE_FSESSION_MULTI's value, if the kernel has it.
    pub fsession_multi: Option<u32>,
    /// BPF_TRACE_FEXIT_MULTI's value, if the kernel has it.
    pub fexit_multi: Option<u32>,
    /// BPF_TRACE_FENTRY_MULTI's value (--timing-windows' entries in one link).
    pub fentry_multi: Option<u32>,
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
            fentry_multi: kbtf.attach_types.get("BPF_TRACE_FENTRY_MULTI").copied(),
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
