//! One link for every hook (BPF_TRACE_FSESSION_MULTI, 7.x): one session
//! program, loaded once, and one link naming each hook's BTF id with a cookie
//! (enum lsmpmon_multi_cookie) from which the program takes the per-hook
//! constants a copy would have patched in. libbpf 1.1 does not know this link,
//! so it is made with the bpf syscall itself.
use super::family::{Build, Family};
use super::interface::Method;
use super::multi_link::link_all;
use super::probe::{Probe, Target};
use super::session::Session;
use super::template::{Kind, Template};

const WHY_MULTI: &str = "one multi-link attaches every hook in about 50 ms instead of about 12 s, \
    at about 150 virtual ns more per call than fentry/fexit (BENCHMARKS.md, 'Cost per traced call'; --method fentry-fexit)";

pub static FAMILY: Family = Family {
    name: "multi session",
    arg: "multi-session",
    help: "One session program for every hook, one link (BPF_TRACE_FSESSION_MULTI); refused where the kernel lacks it.",
    offered: |o| match (o.fsession_multi, o.fsession) {
        (Some(multi), Some(session)) => Ok([multi, session]),
        (Some(_), None) => Err("the kernel has BPF_TRACE_FSESSION_MULTI but no session kfuncs"),
        (None, _) => Err("the kernel has no BPF_TRACE_FSESSION_MULTI"),
    },
    refused_missing: "--method multi-session: this kernel has no multi-link session programs \
        (BPF_TRACE_FSESSION_MULTI, BPF_TRACE_FSESSION and the session kfuncs): use --method auto",
    dearer_per_call: true,
    why_auto: Some(WHY_MULTI),
    counts: true,
    counts_by_multi_link: true,
    syscall_time: true,
    programs: |_| ["hook_session"; 2],
    build,
};

/// The multi-link, and one session per hook where the kernel refuses it.
fn build(b: Build) -> anyhow::Result<Box<dyn Method>> {
    let [multi, session] = b.attach;
    Ok(Box::new(MultiSession {
        multi: (b.template)(b.programs[0], Kind::SessionMulti(multi))?,
        single: (b.template)(b.programs[0], Kind::Session(session))?,
    }))
}

pub struct MultiSession {
    pub multi: Template,
    /// One session program per hook, where the multi-link is refused.
    pub single: Template,
}

impl Method for MultiSession {
    fn name(&self) -> &'static str {
        "multi session"
    }

    fn describe(&self) -> &'static str {
        "hooks with one session multi-link"
    }

    fn attach(&self, target: &Target) -> Result<Probe, String> {
        let mut probe = link_all(&self.multi, std::slice::from_ref(target))?;
        probe.hook_id = target.consts.hook_id;
        Ok(probe)
    }

    fn attach_batch(&self, targets: &[Target]) -> Option<Result<Probe, String>> {
        Some(link_all(&self.multi, targets))
    }

    fn fallback(&self) -> Option<Box<dyn Method>> {
        Some(Box::new(Session {
            template: self.single.clone(),
        }))
    }
}
