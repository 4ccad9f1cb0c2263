//! Session programs (BPF_TRACE_FSESSION, 7.x): one program per hook that
//! runs at its entry and at its exit.
use super::fentry::tracing_link;
use super::interface::Method;
use super::probe::{Probe, Target};
use super::template::Template;

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
