//! `trace --count-only`: one fexit program per hook call instead of a pair,
//! counting calls and returns and timing nothing. Where the kernel has
//! BPF_TRACE_FEXIT_MULTI (7.x) and the method would be the multi-link, one
//! program and one link serve every hook, as with the session multi-link.
use super::interface::Method;
use super::link::tracing_link;
use super::multi_link::link_all;
use super::probe::{Probe, Target};
use super::template::Template;

pub struct CountOnly {
    /// One copy per hook (fexit).
    pub single: Template,
    /// One copy for every hook, by one multi-link.
    pub multi: Option<Template>,
}

impl Method for CountOnly {
    fn name(&self) -> &'static str {
        if self.multi.is_some() {
            "multi fexit (count only)"
        } else {
            "fexit (count only)"
        }
    }

    fn describe(&self) -> &'static str {
        if self.multi.is_some() {
            "hooks with one counting fexit multi-link"
        } else {
            "counting fexit probes"
        }
    }

    fn attach(&self, target: &Target) -> Result<Probe, String> {
        let prog = self.single.load(target.consts, target.btf_id)?;
        let link = tracing_link(&prog, self.single.attach_type())?;
        Ok(Probe::new(target.consts.hook_id, prog, link))
    }

    fn attach_batch(&self, targets: &[Target]) -> Option<Result<Probe, String>> {
        self.multi.as_ref().map(|m| link_all(m, targets))
    }

    fn fallback(&self) -> Option<Box<dyn Method>> {
        Some(Box::new(CountOnly {
            single: self.single.clone(),
            multi: None,
        }))
    }
}
