//! What every attach method makes: a hook's attached probes ([`Probe`]),
//! from a [`Target`].
use std::os::fd::{AsRawFd, OwnedFd};

use super::consts::{HookConsts, ProbeOptions};
use super::link::tracing_link;
use super::template::Template;
use crate::hooks::Hook;

/// The hook id of the one probe a multi-link makes: it is every hook's.
pub const ALL_HOOKS: u32 = u32::MAX;

/// A kernel function to probe: its constants and BTF id.
#[derive(Clone)]
pub struct Target<'a> {
    pub consts: HookConsts,
    pub btf_id: u32,
    pub returns_int: bool,
    pub function: &'a str,
}

impl<'a> Target<'a> {
    /// Hook `hook`, number `hook_id` in the statistics.
    pub fn hook(hook_id: u32, hook: &'a Hook, options: ProbeOptions) -> Self {
        // A module's own function (--per-lsm) is no hook call of a cgroup.
        let options = ProbeOptions {
            by_cgroup: options.by_cgroup && hook.lsm.is_none(),
            ..options
        };
        Self {
            consts: HookConsts::new(hook_id, hook.args, hook.returns_int, options),
            btf_id: hook.btf_id,
            returns_int: hook.returns_int,
            function: &hook.function,
        }
    }
}

/// One hook's loaded and attached programs: an entry and an exit program,
/// or one session program; for a multi-link, every hook's one program.
pub struct Probe {
    /// [`ALL_HOOKS`] for a multi-link.
    pub hook_id: u32,
    progs: Vec<OwnedFd>,
    /// One per program, but for a side LSMPMON_TEST_SKIP_PROBE left unattached.
    links: Vec<OwnedFd>,
    /// --timing-windows: the entry (`progs[0]`), attached only during a window.
    window: Option<WindowEntry>,
}

/// An entry program attached and released by the timing windows.
struct WindowEntry {
    attach_type: u32,
    link: Option<OwnedFd>,
}

impl Probe {
    pub fn new(hook_id: u32, prog: OwnedFd, link: OwnedFd) -> Self {
        Self {
            hook_id,
            progs: vec![prog],
            links: vec![link],
            window: None,
        }
    }

    /// Several programs and their links (a kprobe.multi entry and return link).
    pub fn with(hook_id: u32, progs: Vec<OwnedFd>, links: Vec<OwnedFd>) -> Self {
        Self {
            hook_id,
            progs,
            links,
            window: None,
        }
    }

    /// An fentry/fexit pair whose exit (`exit_link`) stays attached and
    /// whose entry (`progs[0]`) is attached only during timing windows.
    pub fn windowed(
        hook_id: u32,
        progs: Vec<OwnedFd>,
        exit_link: OwnedFd,
        attach_type: u32,
    ) -> Self {
        Self {
            hook_id,
            progs,
            links: vec![exit_link],
            window: Some(WindowEntry {
                attach_type,
                link: None,
            }),
        }
    }

    /// Attaches (`open`) or releases the window's entry; Ok(false) if it
    /// already was so, or this probe has none.
    pub fn set_window(&mut self, open: bool) -> Result<bool, String> {
        let Some(w) = self.window.as_mut() else {
            return Ok(false);
        };
        match (open, w.link.is_some()) {
            (true, false) => {
                w.link = Some(tracing_link(&self.progs[0], w.attach_type)?);
                Ok(true)
            }
            (false, true) => {
                w.link = None;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Runs the kernel skipped (recursion), every program together.
    pub fn recursion_misses(&self) -> u64 {
        self.progs.iter().map(recursion_misses).sum()
    }

    /// (links, programs): what detaching closes, links first.
    pub fn into_fds(mut self) -> (Vec<OwnedFd>, Vec<OwnedFd>) {
        let window = self.window.and_then(|w| w.link);
        self.links.extend(window);
        (self.links, self.progs)
    }
}

/// Probe runs the kernel skipped for one probe.
#[derive(Debug, Clone, Copy, Default)]
pub struct Skipped {
    /// [`ALL_HOOKS`] for a multi-link.
    pub hook_id: u32,
    /// A BPF program was already running on the CPU.
    pub recursion: u64,
    /// kretprobes: every instance was taken (kprobe_profile's nmissed).
    pub lost_returns: u64,
}

/// Which program of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Entry,
    Exit,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Entry => "entry",
            Side::Exit => "exit",
        }
    }
}

/// An entry and an exit copy for `target`, loaded, then each attached by
/// `attach` (fentry/fexit, kprobe/kretprobe).
pub fn pair(
    target: &Target,
    entry: &Template,
    exit: &Template,
    attach: impl Fn(Side, &Template, &OwnedFd) -> Result<OwnedFd, String>,
) -> Result<Probe, String> {
    let progs = vec![
        entry.load(target.consts, target.btf_id)?,
        exit.load(target.consts, target.btf_id)?,
    ];
    let mut links = Vec::with_capacity(2);
    for (side, t, prog) in [
        (Side::Entry, entry, &progs[0]),
        (Side::Exit, exit, &progs[1]),
    ] {
        if skipped_by_test(side.name(), target.function) {
            base::say!(
                "lsmpmon: test: {} probe of {} left unattached",
                side.name(),
                target.function
            );
            continue;
        }
        links.push(attach(side, t, prog)?);
    }
    Ok(Probe {
        hook_id: target.consts.hook_id,
        progs,
        links,
        window: None,
    })
}

/// Fault injection for the tests: `LSMPMON_TEST_SKIP_PROBE=entry:FUNC,exit:FUNC`
/// leaves that probe of FUNC unattached, as if the kernel skipped it on every
/// call (it does so on recursion), to prove a lost entry or exit costs no
/// figure but that call's.
fn skipped_by_test(side: &str, function: &str) -> bool {
    std::env::var("LSMPMON_TEST_SKIP_PROBE").is_ok_and(|v| {
        v.split(',')
            .any(|item| item.split_once(':') == Some((side, function)))
    })
}

/// Programs the kernel skipped because a BPF program was already running on
/// that CPU (`recursion_misses`, 5.12+).
pub fn recursion_misses(prog: &OwnedFd) -> u64 {
    let mut info = libbpf_sys::bpf_prog_info::default();
    let mut len = std::mem::size_of::<libbpf_sys::bpf_prog_info>() as u32;
    // libbpf-rs reads program info only while iterating every program.
    // SAFETY: info is a zeroed out-buffer of `len` bytes; prog is a live fd.
    let err = unsafe { libbpf_sys::bpf_prog_get_info_by_fd(prog.as_raw_fd(), &mut info, &mut len) };
    if err != 0 {
        return 0;
    }
    info.recursion_misses
}
