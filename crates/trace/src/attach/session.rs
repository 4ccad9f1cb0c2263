//! Session programs (BPF_TRACE_FSESSION, 7.x): one program per hook that
//! runs at its entry and at its exit.
use super::family::{Build, Family};
use super::interface::Method;
use super::link::tracing_link;
use super::probe::{Probe, Target};
use super::template::{Kind, Template};

pub static FAMILY: Family = Family {
    name: "session",
    arg: "session",
    help: "One session program per hook (BPF_TRACE_FSESSION); refused where the kernel lacks it.",
    offered: |o| {
        o.fsession
            .map(|t| [t, 0])
            .ok_or("the kernel has no BPF_TRACE_FSESSION (with bpf_session_cookie)")
    },
    refused_missing: "--method session: this kernel has no session programs \
        (BPF_TRACE_FSESSION and the kfuncs bpf_session_cookie, bpf_session_is_return): \
        use --method auto",
    dearer_per_call: true,
    why_auto: None,
    counts: true,
    counts_by_multi_link: false,
    syscall_time: true,
    programs: |_| ["hook_session"; 2],
    build: |b: Build| {
        let template = (b.template)(b.programs[0], Kind::Session(b.attach[0]))?;
        Ok(Box::new(Session { template }))
    },
};

pub struct Session {
    pub template: Template,
}

impl Method for Session {
    fn name(&self) -> &'static str {
        "session"
    }

    fn describe(&self) -> &'static str {
        "session probes"
    }

    fn attach(&self, target: &Target) -> Result<Probe, String> {
        let prog = self.template.load(target.consts, target.btf_id)?;
        let link = tracing_link(&prog, self.template.attach_type())?;
        Ok(Probe::new(target.consts.hook_id, prog, link))
    }
}
