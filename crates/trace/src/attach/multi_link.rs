//! Probes made by one multi-link for many hooks: every hook's one program
//! ([`link_all`]), and --timing-windows' entries ([`MultiEntry`]).
use std::os::fd::OwnedFd;

use super::link::{cookie, multi_link};
use super::probe::{self, Probe, Target, ALL_HOOKS};
use super::template::Template;
use crate::intf::lsmpmon_multi_cookie::LSMPMON_MULTI_HOOK_MASK;

/// One copy of multi-link program `multi` and one link for all `targets`.
pub fn link_all(multi: &Template, targets: &[Target]) -> Result<Probe, String> {
    let first = targets.first().ok_or("no hook to attach")?;
    let prog = multi.load(first.consts, 0)?;
    let link = multi_link(&prog, multi.attach_type(), &functions(targets))?;
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
                self.link = Some(multi_link(&self.prog, self.attach_type, &self.targets)?);
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
        probe::recursion_misses(&self.prog)
    }

    /// (link, program) for detaching.
    pub fn into_fds(self) -> (Option<OwnedFd>, OwnedFd) {
        (self.link, self.prog)
    }
}
