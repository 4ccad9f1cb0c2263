//! fentry/fexit: an entry and an exit program per hook (5.5; the exit reads
//! the return with bpf_get_func_ret(), 5.17).
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::family::{Build, Family};
use super::interface::Method;
use super::probe::{self, Probe, Target};
use super::template::{Kind, Template};

const WHY_FENTRY: &str = "fentry/fexit costs less per call than the multi-links (about 150 virtual \
    ns less than the session multi-link on 7.3, 550-750 less than the kprobe session on 6.12) and 80 \
    less than one session per hook; its slower attach and release (seconds, one trampoline per \
    hook) are paid once";

pub static FAMILY: Family = Family {
    name: "fentry/fexit",
    arg: "fentry-fexit",
    help: "An fentry and an fexit program per hook (5.17+: the exit reads the return with bpf_get_func_ret()); refused where the kernel lacks it.",
    offered: |o| match o.func_ret {
        true => Ok([0, 0]),
        false => Err("the kernel lacks bpf_get_func_ret() (5.17)"),
    },
    refused_missing: "--method fentry-fexit: this kernel lacks bpf_get_func_ret() (5.17): \
        use --method auto or kprobe",
    dearer_per_call: false,
    why_auto: Some(WHY_FENTRY),
    counts: true,
    counts_by_multi_link: false,
    syscall_time: true,
    programs: |o| match (o.empty, o.no_preempt) {
        (true, _) => ["hook_empty"; 2],
        (false, true) => ["hook_entry_np", "hook_exit_np"],
        (false, false) => ["hook_entry", "hook_exit"],
    },
    build: |b: Build| {
        let [entry, exit] = b.programs;
        Ok(Box::new(FentryFexit {
            entry: (b.template)(entry, Kind::Fentry)?,
            exit: (b.template)(exit, Kind::Fexit)?,
        }))
    },
};

pub struct FentryFexit {
    pub entry: Template,
    pub exit: Template,
}

impl Method for FentryFexit {
    fn name(&self) -> &'static str {
        "fentry/fexit"
    }

    fn describe(&self) -> &'static str {
        "fentry/fexit probe pairs"
    }

    fn attach(&self, target: &Target) -> Result<Probe, String> {
        probe::pair(target, &self.entry, &self.exit, |_, t, prog| {
            tracing_link(prog, t.attach_type())
        })
    }
}

/// A link for tracing program `prog`, loaded with its target (fentry, fexit,
/// session). The bpf() syscall itself: libbpf-rs links whole objects' programs only.
pub fn tracing_link(prog: &OwnedFd, attach_type: u32) -> Result<OwnedFd, String> {
    // SAFETY: a live program fd, no target fd, NULL options.
    let fd =
        unsafe { libbpf_sys::bpf_link_create(prog.as_raw_fd(), 0, attach_type, std::ptr::null()) };
    if fd < 0 {
        return Err(format!(
            "attach: {}",
            std::io::Error::from_raw_os_error(-fd)
        ));
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
