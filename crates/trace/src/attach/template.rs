//! A loaded probe program as a template: the BPF object is loaded once, then
//! its relocated instructions are loaded again per hook with that hook's
//! constants patched in, the kernel's kfuncs called, and that hook as target.
use std::os::fd::{FromRawFd, OwnedFd};

use anyhow::{bail, Result};
use libbpf_sys::bpf_insn;

use super::super::kfuncs::Kfuncs;
use super::consts::{patch_sites, HookConsts};
use crate::intf::lsmpmon_patch::{
    LSMPMON_PATCH_HOOK_ID, LSMPMON_PATCH_MULTI, LSMPMON_PATCH_SESSION,
};

/// `BPF_JMP | BPF_CALL`, and its src_reg for a kfunc call.
const CALL: u8 = 0x85;
const PSEUDO_KFUNC_CALL: u8 = 2;

/// How a program copy is attached to its hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Fentry,
    Fexit,
    /// One program at entry and exit (BPF_TRACE_FSESSION, whose value the
    /// running kernel's BTF gives: libbpf 1.1 does not know it).
    Session(u32),
    /// One session program for many functions, attached by one multi-link
    /// (BPF_TRACE_FSESSION_MULTI, its value in the kernel's BTF).
    SessionMulti(u32),
    /// --count-only's one fexit program for many functions, attached by one
    /// multi-link (BPF_TRACE_FEXIT_MULTI, its value in the kernel's BTF).
    FexitMulti(u32),
    /// --timing-windows' entry program for many functions, attached by one
    /// multi-link during each window (BPF_TRACE_FENTRY_MULTI).
    FentryMulti(u32),
    /// The fallback for kernels without bpf_get_func_ret() (before 5.17).
    Kprobe,
    Kretprobe,
    /// One kprobe program for every hook's entry, and one for every hook's
    /// return, each attached by one link (BPF_TRACE_KPROBE_MULTI, 5.18+).
    KprobeMulti,
    KretprobeMulti,
    /// One kprobe program run at every hook's entry and return, by one link
    /// (BPF_TRACE_KPROBE_SESSION, 6.10+, its value in the kernel's BTF).
    KprobeSession(u32),
}

impl Kind {
    /// The program type, and the name the kernel shows for each copy.
    fn program(self) -> (libbpf_sys::bpf_prog_type, &'static std::ffi::CStr) {
        match self {
            Kind::Fentry => (libbpf_sys::BPF_PROG_TYPE_TRACING, c"lsmpmon_entry"),
            Kind::Fexit => (libbpf_sys::BPF_PROG_TYPE_TRACING, c"lsmpmon_exit"),
            Kind::Session(_) => (libbpf_sys::BPF_PROG_TYPE_TRACING, c"lsmpmon_session"),
            Kind::SessionMulti(_) => (libbpf_sys::BPF_PROG_TYPE_TRACING, c"lsmpmon_multi"),
            Kind::FexitMulti(_) => (libbpf_sys::BPF_PROG_TYPE_TRACING, c"lsmpmon_count"),
            Kind::FentryMulti(_) => (libbpf_sys::BPF_PROG_TYPE_TRACING, c"lsmpmon_window"),
            Kind::Kprobe => (libbpf_sys::BPF_PROG_TYPE_KPROBE, c"lsmpmon_kentry"),
            Kind::Kretprobe => (libbpf_sys::BPF_PROG_TYPE_KPROBE, c"lsmpmon_kexit"),
            Kind::KprobeMulti => (libbpf_sys::BPF_PROG_TYPE_KPROBE, c"lsmpmon_kmentry"),
            Kind::KretprobeMulti => (libbpf_sys::BPF_PROG_TYPE_KPROBE, c"lsmpmon_kmexit"),
            Kind::KprobeSession(_) => (libbpf_sys::BPF_PROG_TYPE_KPROBE, c"lsmpmon_ksession"),
        }
    }
}

/// The verifier's reason for a refusal: the log line before its statistics.
fn verifier_verdict(log: &[u8]) -> String {
    let text = String::from_utf8_lossy(log.split(|b| *b == 0).next().unwrap_or_default());
    text.lines()
        .rev()
        .find(|l| {
            !l.is_empty() && !l.starts_with("processed ") && !l.starts_with("verification time")
        })
        .map(|l| format!(" (verifier: {l})"))
        .unwrap_or_default()
}

#[derive(Clone)]
pub struct Template {
    insns: Vec<bpf_insn>,
    kind: Kind,
    kfuncs: Kfuncs,
}

impl Template {
    pub fn new(insns: &[bpf_insn], kind: Kind, kfuncs: &Kfuncs) -> Result<Self> {
        if !patch_sites(insns).any(|(_, m)| m == LSMPMON_PATCH_HOOK_ID) {
            bail!("BPF program has no hook-id placeholder: rebuild lsmpmon");
        }
        Ok(Self {
            insns: insns.to_vec(),
            kind,
            kfuncs: kfuncs.clone(),
        })
    }

    fn instance(&self, consts: HookConsts) -> Vec<bpf_insn> {
        let mut insns = self.insns.clone();
        for (i, marker) in patch_sites(&self.insns) {
            insns[i].imm = match marker {
                LSMPMON_PATCH_SESSION => matches!(
                    self.kind,
                    Kind::Session(_) | Kind::SessionMulti(_) | Kind::KprobeSession(_)
                ) as i32,
                LSMPMON_PATCH_MULTI => matches!(
                    self.kind,
                    Kind::SessionMulti(_)
                        | Kind::FexitMulti(_)
                        | Kind::FentryMulti(_)
                        | Kind::KprobeMulti
                        | Kind::KretprobeMulti
                        | Kind::KprobeSession(_)
                ) as i32,
                _ => consts.value(marker).unwrap_or_default() as i32,
            };
        }
        // Kfunc placeholders become kfunc calls where the kernel has the
        // kfunc; elsewhere they stay in code the constants make dead.
        for insn in insns.iter_mut() {
            if insn.code != CALL || insn.src_reg() != 0 {
                continue;
            }
            if let Some(id) = self.kfuncs.btf_id(insn.imm as u32) {
                insn.set_src_reg(PSEUDO_KFUNC_CALL);
                insn.imm = id as i32;
                insn.off = 0;
            }
        }
        insns
    }

    /// The attach type of its copies (0 for per-hook kprobes).
    pub fn attach_type(&self) -> libbpf_sys::bpf_attach_type {
        match self.kind {
            Kind::Fentry => libbpf_sys::BPF_TRACE_FENTRY,
            Kind::Fexit => libbpf_sys::BPF_TRACE_FEXIT,
            Kind::Session(t)
            | Kind::SessionMulti(t)
            | Kind::FexitMulti(t)
            | Kind::FentryMulti(t) => t,
            Kind::Kprobe | Kind::Kretprobe => 0,
            Kind::KprobeMulti | Kind::KretprobeMulti => libbpf_sys::BPF_TRACE_KPROBE_MULTI,
            Kind::KprobeSession(t) => t,
        }
    }

    /// Loads a copy for `consts.hook_id` aimed at the kernel function with BTF id `btf_id`.
    pub fn load(&self, consts: HookConsts, btf_id: u32) -> Result<OwnedFd, String> {
        let insns = self.instance(consts);
        // A multi-link program names no function (the kernel gives it a
        // placeholder's); its link names them all.
        let tracing = matches!(self.kind, Kind::Fentry | Kind::Fexit | Kind::Session(_));
        let mut opts = libbpf_sys::bpf_prog_load_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_prog_load_opts>() as _,
            expected_attach_type: self.attach_type(),
            attach_btf_id: if tracing { btf_id } else { 0 },
            ..Default::default()
        };
        let (prog_type, name) = self.kind.program();
        // The bpf() syscall itself: libbpf-rs loads whole objects only.
        let load = |opts: &mut libbpf_sys::bpf_prog_load_opts| {
            // SAFETY: insns and opts (and the log buffer it may point to)
            // outlive the call; the names are NUL-terminated.
            unsafe {
                libbpf_sys::bpf_prog_load(
                    prog_type,
                    name.as_ptr(),
                    c"GPL".as_ptr(),
                    insns.as_ptr(),
                    insns.len() as _,
                    opts,
                )
            }
        };
        let fd = load(&mut opts);
        if fd < 0 {
            // Again with the verifier's log, for its verdict (the last lines).
            let mut log = vec![0u8; 1 << 20];
            opts.log_buf = log.as_mut_ptr() as *mut _;
            opts.log_size = log.len() as u32;
            opts.log_level = 1;
            let _ = load(&mut opts);
            return Err(format!(
                "load: {}{}",
                std::io::Error::from_raw_os_error(-fd),
                verifier_verdict(&log)
            ));
        }
        // SAFETY: bpf_prog_load returned a fresh descriptor that nothing else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

#[cfg(test)]
mod tests {
    use super::super::consts::{ProbeOptions, LD_IMM64};
    use super::*;
    use crate::intf::lsmpmon_kfunc::{
        LSMPMON_KFUNC_PREEMPT_DISABLE, LSMPMON_KFUNC_PREEMPT_ENABLE, LSMPMON_KFUNC_SESSION_COOKIE,
        LSMPMON_KFUNC_SESSION_IS_RETURN,
    };

    fn insn(code: u8, imm: i32) -> bpf_insn {
        bpf_insn {
            code,
            imm,
            ..Default::default()
        }
    }

    /// A template: the hook id and session markers, then a placeholder call
    /// of each kfunc, then a real helper call (bpf_ktime_get_ns, 5).
    fn template() -> Vec<bpf_insn> {
        let mut v = Vec::new();
        for marker in [LSMPMON_PATCH_HOOK_ID, LSMPMON_PATCH_SESSION] {
            v.push(insn(LD_IMM64, 0));
            v.push(insn(0, marker as i32));
        }
        for (marker, _) in Kfuncs::ALL {
            v.push(insn(CALL, *marker as i32));
        }
        v.push(insn(CALL, 5));
        v
    }

    #[test]
    fn copies_get_their_constants_and_the_kernels_kfuncs() {
        // A kernel with the preemption kfuncs only (6.10 .. before sessions).
        let kfuncs = Kfuncs::from_ids(vec![
            (LSMPMON_KFUNC_PREEMPT_DISABLE, 1001),
            (LSMPMON_KFUNC_PREEMPT_ENABLE, 1002),
        ]);
        assert!(kfuncs.has("bpf_preempt_disable") && !kfuncs.has("bpf_session_cookie"));
        let t = Template::new(&template(), Kind::Fentry, &kfuncs).unwrap();
        let consts = HookConsts::new(7, 2, true, ProbeOptions::default());
        let copy = t.instance(consts);
        assert_eq!((copy[0].imm, copy[2].imm), (7, 0), "hook id, not a session");
        let calls: Vec<(u8, i32)> = copy[4..].iter().map(|i| (i.src_reg(), i.imm)).collect();
        assert_eq!(
            calls,
            [
                (PSEUDO_KFUNC_CALL, 1001),
                (PSEUDO_KFUNC_CALL, 1002),
                (0, LSMPMON_KFUNC_SESSION_IS_RETURN as i32),
                (0, LSMPMON_KFUNC_SESSION_COOKIE as i32),
                (0, 5)
            ]
        );
        // A session copy says so in its constant.
        let s = Template::new(&template(), Kind::Session(58), &kfuncs).unwrap();
        assert_eq!(s.instance(consts)[2].imm, 1);
        assert_eq!(s.attach_type(), 58);
        // No hook-id placeholder: not a template lsmpmon built.
        assert!(Template::new(&template()[2..], Kind::Fentry, &kfuncs).is_err());
    }
}
