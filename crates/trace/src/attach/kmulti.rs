//! kprobe.multi (5.18+, CONFIG_FPROBE): one kprobe program for every hook's
//! entry and one for every hook's return, each attached by one link
//! (BPF_TRACE_KPROBE_MULTI; the return link with BPF_F_KPROBE_MULTI_RETURN)
//! that names the hooks' functions and gives each a cookie (its statistics
//! row and whether it returns int, as the session multi-link's). The kernel
//! registers one fprobe (one ftrace_ops) per link, so attaching every hook
//! is one ftrace update per side, and releasing it one grace period per
//! side, instead of one trampoline per hook (fentry/fexit).
use std::collections::HashSet;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::family::{Build, Family};
use super::interface::Method;
use super::kretprobe::mounted_tracefs;
use super::link::cookie;
use super::probe::{Probe, Target, ALL_HOOKS};
use super::template::{Kind, Template};

const WHY_KPROBE_MULTI: &str = "one kprobe link for every hook attaches in about 50 ms instead of \
    about 6.6 s and is released in about 0.2 s instead of 36 s (one grace period per link, not one \
    per hook), at about 550-750 virtual ns more per call than fentry/fexit on 6.12 \
    (BENCHMARKS.md, 'Cost per traced call'; --method fentry-fexit)";

/// The kprobe program --empty-probes times the links with.
pub(super) const EMPTY: [&str; 2] = ["hook_kmempty"; 2];

pub static SESSION: Family = Family {
    name: "kprobe session",
    arg: "kprobe-session",
    help: "One kprobe program run at every hook's entry and return, one link (BPF_TRACE_KPROBE_SESSION, 6.10+, CONFIG_FPROBE); refused where the kernel lacks it.",
    offered: |o| {
        o.kprobe_session.map(|t| [t, 0]).ok_or(
            "the kernel has no kprobe sessions (BPF_TRACE_KPROBE_SESSION with CONFIG_FPROBE)",
        )
    },
    refused_missing: "--method kprobe-session: this kernel has no kprobe sessions \
        (BPF_TRACE_KPROBE_SESSION, 6.10, with CONFIG_FPROBE and the session kfuncs): \
        use --method auto",
    dearer_per_call: true,
    why_auto: Some(WHY_KPROBE_MULTI),
    counts: false,
    counts_by_multi_link: false,
    syscall_time: true,
    programs: |o| if o.empty { EMPTY } else { ["hook_ksession"; 2] },
    build: |b: Build| {
        let session = (b.template)(b.programs[0], Kind::KprobeSession(b.attach[0]))?;
        Ok(Box::new(KprobeMulti {
            programs: Programs::Session(session),
            batch: true,
        }))
    },
};

pub static PAIR: Family = Family {
    name: "kprobe multi",
    arg: "kprobe-multi",
    help: "One kprobe program for every hook's entry and one for its return, one link each (BPF_TRACE_KPROBE_MULTI, 5.18+, CONFIG_FPROBE); refused where the kernel lacks it.",
    offered: |o| match o.kprobe_multi {
        true => Ok([0, 0]),
        false => Err("the kernel has no kprobe.multi links (BPF_TRACE_KPROBE_MULTI with CONFIG_FPROBE)"),
    },
    refused_missing: "--method kprobe-multi: this kernel has no kprobe.multi links \
        (BPF_TRACE_KPROBE_MULTI, 5.18, with CONFIG_FPROBE): use --method auto",
    dearer_per_call: true,
    why_auto: Some(WHY_KPROBE_MULTI),
    counts: false,
    counts_by_multi_link: false,
    syscall_time: true,
    programs: |o| if o.empty { EMPTY } else { ["hook_kmentry", "hook_kmexit"] },
    build: |b: Build| {
        let [entry, exit] = b.programs;
        let programs = Programs::Pair {
            entry: (b.template)(entry, Kind::KprobeMulti)?,
            exit: (b.template)(exit, Kind::KretprobeMulti)?,
        };
        Ok(Box::new(KprobeMulti {
            programs,
            batch: true,
        }))
    },
};

/// The programs the links run.
#[derive(Clone)]
pub enum Programs {
    /// An entry program and a return program, one link each.
    Pair { entry: Template, exit: Template },
    /// One kprobe session program (BPF_TRACE_KPROBE_SESSION, 6.10+) run at
    /// the entry and at the return, by one link.
    Session(Template),
}

pub struct KprobeMulti {
    pub programs: Programs,
    /// One link (pair) for all hooks; false: one per hook (the fallback
    /// when the kernel refuses the batch: one function it cannot probe
    /// refuses them all).
    pub batch: bool,
}

impl Method for KprobeMulti {
    fn name(&self) -> &'static str {
        match (&self.programs, self.batch) {
            (Programs::Pair { .. }, true) => "kprobe multi",
            (Programs::Pair { .. }, false) => "kprobe multi, one link pair per hook",
            (Programs::Session(_), true) => "kprobe session",
            (Programs::Session(_), false) => "kprobe session, one link per hook",
        }
    }

    fn describe(&self) -> &'static str {
        match (&self.programs, self.batch) {
            (Programs::Pair { .. }, true) => "hooks with one kprobe.multi link pair",
            (Programs::Pair { .. }, false) => "kprobe.multi link pairs",
            (Programs::Session(_), true) => "hooks with one kprobe session link",
            (Programs::Session(_), false) => "kprobe session links",
        }
    }

    fn attach(&self, target: &Target) -> Result<Probe, String> {
        let mut probe = self.link_all(std::slice::from_ref(target))?;
        probe.hook_id = target.consts.hook_id;
        Ok(probe)
    }

    fn attach_batch(&self, targets: &[Target]) -> Option<Result<Probe, String>> {
        self.batch.then(|| self.link_all(targets))
    }

    fn unprobeable(&self, targets: &[Target]) -> Vec<(usize, String)> {
        let Some(text) = mounted_tracefs()
            .and_then(|d| std::fs::read_to_string(d.join("available_filter_functions")).ok())
        else {
            return Vec::new();
        };
        unprobeable(targets.iter().map(|t| t.function), &text)
    }

    fn fallback(&self) -> Option<Box<dyn Method>> {
        self.batch.then(|| {
            Box::new(KprobeMulti {
                programs: self.programs.clone(),
                batch: false,
            }) as Box<dyn Method>
        })
    }
}

impl KprobeMulti {
    /// One copy of each program, and its link for all `targets`.
    fn link_all(&self, targets: &[Target]) -> Result<Probe, String> {
        let first = targets.first().ok_or("no hook to attach")?;
        let mut names = targets
            .iter()
            .map(|t| CString::new(t.function).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        let mut cookies: Vec<u64> = targets
            .iter()
            .map(|t| cookie(t.consts.hook_id, t.returns_int))
            .collect();
        // Fault injection for the tests: a function twice, which the kernel refuses.
        if std::env::var_os("LSMPMON_TEST_REFUSE_MULTI").is_some() {
            names.push(names[0].clone());
            cookies.push(cookies[0]);
        }
        let sides: Vec<(&Template, bool)> = match &self.programs {
            Programs::Pair { entry, exit } => vec![(entry, false), (exit, true)],
            Programs::Session(session) => vec![(session, false)],
        };
        let (mut progs, mut links) = (Vec::new(), Vec::new());
        for (template, returns) in sides {
            let prog = template.load(first.consts, 0)?;
            links.push(link(
                &prog,
                template.attach_type(),
                &names,
                &cookies,
                returns,
            )?);
            progs.push(prog);
        }
        Ok(Probe::with(ALL_HOOKS, progs, links))
    }
}

/// One kprobe.multi link running `prog` at the entry (or the return) of
/// every function in `names`, each with its cookie. The kernel resolves the
/// names through kallsyms and refuses the whole link if one is not a
/// function ftrace can probe.
fn link(
    prog: &OwnedFd,
    attach_type: u32,
    names: &[CString],
    cookies: &[u64],
    returns: bool,
) -> Result<OwnedFd, String> {
    let mut syms: Vec<*const libc::c_char> = names.iter().map(|n| n.as_ptr()).collect();
    let mut opts = libbpf_sys::bpf_link_create_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_link_create_opts>() as _,
        ..Default::default()
    };
    opts.__bindgen_anon_1.kprobe_multi =
        libbpf_sys::bpf_link_create_opts__bindgen_ty_1__bindgen_ty_2 {
            flags: if returns {
                libbpf_sys::BPF_F_KPROBE_MULTI_RETURN
            } else {
                0
            },
            cnt: syms.len() as u32,
            syms: syms.as_mut_ptr(),
            addrs: std::ptr::null(),
            cookies: cookies.as_ptr(),
        };
    // SAFETY: opts, the names and cookies it points to outlive the call,
    // which only reads them; prog is a live program fd.
    let fd = unsafe { libbpf_sys::bpf_link_create(prog.as_raw_fd(), 0, attach_type, &opts) };
    if fd < 0 {
        let side = if returns { "return " } else { "" };
        return Err(format!(
            "kprobe.multi {side}link of {} functions: {}",
            names.len(),
            std::io::Error::from_raw_os_error(-fd)
        ));
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The functions (by index) that are not in ftrace's
/// `available_filter_functions`: the kernel resolves a kprobe.multi link's
/// names through kallsyms to functions ftrace can patch, and refuses the
/// whole link (ESRCH) if one is not.
fn unprobeable<'a>(
    functions: impl Iterator<Item = &'a str>,
    available_filter_functions: &str,
) -> Vec<(usize, String)> {
    let probeable: HashSet<&str> = available_filter_functions
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    functions
        .enumerate()
        .filter(|(_, f)| !probeable.contains(f))
        .map(|(i, f)| {
            (
                i,
                format!("{f} is not in ftrace's available_filter_functions (kprobe.multi resolves names through kallsyms)"),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn functions_ftrace_cannot_patch_are_found_before_linking() {
        let available = "security_file_open\nselinux_file_open\nfoo_mod_fn [foo]\n";
        let found = unprobeable(
            ["security_file_open", "apparmor_file_open", "foo_mod_fn"].into_iter(),
            available,
        );
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, 1);
        assert!(found[0].1.contains("apparmor_file_open"), "{found:?}");
    }
}
