//! fentry/fexit: an entry and an exit program per hook (5.5; the exit reads
//! the return with bpf_get_func_ret(), 5.17).
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::interface::Method;
use super::probe::{self, Probe, Target};
use super::template::Template;

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
