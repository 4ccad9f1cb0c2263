//! One link for every hook (BPF_TRACE_FSESSION_MULTI, 7.x): one session
//! program, loaded once, and one link naming each hook's BTF id with a cookie
//! (enum lsmpmon_multi_cookie) from which the program takes the per-hook
//! constants a copy would have patched in. libbpf 1.1 does not know this link,
//! so it is made with the bpf syscall itself.
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::family::{Build, Family};
use super::interface::Method;
use super::probe::{Probe, Target, ALL_HOOKS};
use super::session::Session;
use super::template::{Kind, Template};
use crate::intf::lsmpmon_multi_cookie::{LSMPMON_MULTI_HOOK_MASK, LSMPMON_MULTI_RETURNS_INT};

const WHY_MULTI: &str = "one multi-link attaches every hook in about 50 ms instead of about 12 s, \
    at about 150 virtual ns more per call than fentry/fexit (BENCHMARKS.md §1; --method fentry-fexit)";

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

/// One copy of multi-link program `multi` and one link for all `targets`.
pub fn link_all(multi: &Template, targets: &[Target]) -> Result<Probe, String> {
    let first = targets.first().ok_or("no hook to attach")?;
    let prog = multi.load(first.consts, 0)?;
    let link = link(&prog, multi.attach_type(), &functions(targets))?;
    Ok(Probe::new(ALL_HOOKS, prog, link))
}

/// Each target's (BTF id, cookie), as a multi-link names them.
fn functions(targets: &[Target]) -> Vec<(u32, u64)> {
    let mut ids: Vec<(u32, u64)> = targets
        .iter()
        .map(|h| (h.btf_id, cookie(h.consts.hook_id, h.returns_int)))
        .collect();
    // Fault injection for the tests: a BTF id twice, which the kernel refuses.
    if std::env::var_os("LSMPMON_TEST_REFUSE_MULTI").is_some() {
        ids.extend(ids.first().copied());
    }
    ids
}

/// --timing-windows on 7.x: one entry program for every hook, loaded once,
/// and its multi-link, made when a window opens and dropped when it closes
/// (tens of ms for every hook, where one trampoline at a time takes ≈ 20).
pub struct MultiEntry {
    prog: OwnedFd,
    attach_type: u32,
    targets: Vec<(u32, u64)>,
    link: Option<OwnedFd>,
}

impl MultiEntry {
    /// Loads the program and makes and drops the link once, so that a
    /// kernel refusing it is known before the first window.
    pub fn load(template: &Template, targets: &[Target]) -> Result<Self, String> {
        let first = targets.first().ok_or("no hook to attach")?;
        let mut entry = Self {
            prog: template.load(first.consts, 0)?,
            attach_type: template.attach_type(),
            targets: functions(targets),
            link: None,
        };
        entry.set(true)?;
        entry.set(false)?;
        Ok(entry)
    }

    /// Makes (`open`) or drops the link; Ok(false) if it already was so.
    pub fn set(&mut self, open: bool) -> Result<bool, String> {
        match (open, self.link.is_some()) {
            (true, false) => {
                self.link = Some(link(&self.prog, self.attach_type, &self.targets)?);
                Ok(true)
            }
            (false, true) => {
                self.link = None;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Keeps only the hooks `attached` (an entry without its exit would
    /// leave its frames open).
    pub fn keep(&mut self, attached: &[u32]) {
        let hook = |c: u64| (c & LSMPMON_MULTI_HOOK_MASK as u64) as u32;
        self.targets.retain(|t| attached.contains(&hook(t.1)));
    }

    /// Probe runs the kernel skipped (recursion).
    pub fn recursion_misses(&self) -> u64 {
        super::probe::recursion_misses(&self.prog)
    }

    /// (link, program) for detaching.
    pub fn into_fds(self) -> (Option<OwnedFd>, OwnedFd) {
        (self.link, self.prog)
    }
}

/// `union bpf_attr` as BPF_LINK_CREATE reads it for a tracing multi-link
/// (the 7.x UAPI: link_create.tracing_multi after prog_fd, target_fd,
/// attach_type and flags).
#[repr(C)]
struct LinkCreateMulti {
    prog_fd: u32,
    target_fd: u32,
    attach_type: u32,
    flags: u32,
    /// User pointers: `cnt` BTF ids (u32) and `cnt` cookies (u64).
    ids: u64,
    cookies: u64,
    cnt: u32,
    pad: u32,
}

/// The cookie that tells the program which hook called it.
pub fn cookie(hook_id: u32, returns_int: bool) -> u64 {
    let returns = if returns_int {
        LSMPMON_MULTI_RETURNS_INT as u64
    } else {
        0
    };
    (hook_id & LSMPMON_MULTI_HOOK_MASK) as u64 | returns
}

/// One link attaching `prog` to every function in `targets` (BTF id, cookie).
fn link(prog: &OwnedFd, attach_type: u32, targets: &[(u32, u64)]) -> Result<OwnedFd, String> {
    let ids: Vec<u32> = targets.iter().map(|t| t.0).collect();
    let cookies: Vec<u64> = targets.iter().map(|t| t.1).collect();
    let attr = LinkCreateMulti {
        prog_fd: prog.as_raw_fd() as u32,
        target_fd: 0,
        attach_type,
        flags: 0,
        ids: ids.as_ptr() as u64,
        cookies: cookies.as_ptr() as u64,
        cnt: ids.len() as u32,
        pad: 0,
    };
    // SAFETY: attr and the arrays it points to outlive the call; the kernel
    // reads size_of::<LinkCreateMulti>() bytes of attr.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            libbpf_sys::BPF_LINK_CREATE,
            &attr as *const LinkCreateMulti,
            std::mem::size_of::<LinkCreateMulti>() as u32,
        )
    };
    if fd < 0 {
        return Err(format!(
            "multi-link of {} functions: {}",
            ids.len(),
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_carries_the_hook_and_whether_it_returns_int() {
        assert_eq!(cookie(7, false), 7);
        assert_eq!(cookie(7, true), 7 | 0x10000);
        // Every hook id lsmpmon can trace fits the cookie.
        let max = crate::intf::lsmpmon_limits::LSMPMON_MAX_HOOKS - 1;
        assert_eq!(cookie(max, false), max as u64);
        assert_eq!(std::mem::size_of::<LinkCreateMulti>(), 40);
    }
}
