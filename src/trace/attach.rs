//! Attaching one fentry/fexit pair per hook without loading one BPF object per
//! hook: the object is loaded once, then its relocated instructions are loaded
//! again per hook with the hook id patched in and that hook as attach target.
use std::{
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
    thread,
    time::Instant,
};

use anyhow::{bail, Result};
use libbpf_sys::bpf_insn;

use super::cpu_stats;
use crate::base::intf::lsmpmon_kfunc::{
    LSMPMON_KFUNC_PREEMPT_DISABLE, LSMPMON_KFUNC_PREEMPT_ENABLE, LSMPMON_KFUNC_SESSION_COOKIE,
    LSMPMON_KFUNC_SESSION_IS_RETURN,
};
use crate::base::intf::lsmpmon_patch::{
    LSMPMON_PATCH_CALIBRATION, LSMPMON_PATCH_EMPTY, LSMPMON_PATCH_HOOK_ID, LSMPMON_PATCH_LEAN,
    LSMPMON_PATCH_MULTI, LSMPMON_PATCH_NO_PREEMPT, LSMPMON_PATCH_RET_SLOT, LSMPMON_PATCH_SESSION,
    LSMPMON_PATCH_STATS_OFF, LSMPMON_PATCH_SYSCALL_TIME,
};

/// `BPF_LD | BPF_IMM | BPF_DW`: PATCHED()'s 64-bit immediate, two slots: the
/// value in the first slot's imm, the marker in the second's.
const LD_IMM64: u8 = 0x18;

/// The per-hook constants patched into each copy of the programs.
#[derive(Debug, Clone, Copy)]
pub struct HookConsts {
    pub hook_id: u32,
    /// 1 + the number of arguments for int hooks, 0 for void hooks.
    pub ret_slot: u32,
    /// Where the hook's statistics start in its CPU's value.
    pub stats_off: u32,
    pub calibration: bool,
    pub options: ProbeOptions,
}

/// Options compiled into every copy (the verifier drops what they turn off).
#[derive(Debug, Clone, Copy, Default)]
pub struct ProbeOptions {
    pub lean: bool,
    pub syscall_time: bool,
    /// Probes run with preemption disabled (preemptible kernels).
    pub no_preempt: bool,
    /// Programs that return at once (--empty-probes, a benchmark).
    pub empty: bool,
}

impl HookConsts {
    pub fn new(hook_id: u32, args: usize, returns_int: bool, options: ProbeOptions) -> Self {
        Self {
            hook_id,
            ret_slot: if returns_int { args as u32 + 1 } else { 0 },
            stats_off: cpu_stats::stats_offset(hook_id),
            calibration: false,
            options,
        }
    }

    /// The value for marker `marker` (enum lsmpmon_patch).
    fn value(&self, marker: u32) -> Option<u32> {
        match marker {
            LSMPMON_PATCH_HOOK_ID => Some(self.hook_id),
            LSMPMON_PATCH_RET_SLOT => Some(self.ret_slot),
            LSMPMON_PATCH_STATS_OFF => Some(self.stats_off),
            LSMPMON_PATCH_CALIBRATION => Some(self.calibration as u32),
            LSMPMON_PATCH_LEAN => Some(self.options.lean as u32),
            LSMPMON_PATCH_SYSCALL_TIME => Some(self.options.syscall_time as u32),
            LSMPMON_PATCH_NO_PREEMPT => Some(self.options.no_preempt as u32),
            LSMPMON_PATCH_EMPTY => Some(self.options.empty as u32),
            // Set by the template's kind (Template::instance).
            LSMPMON_PATCH_SESSION | LSMPMON_PATCH_MULTI => Some(0),
            _ => None,
        }
    }
}

/// The verifier's reason for a refusal: the log line before its statistics.
fn verifier_verdict(log: &[u8]) -> String {
    let text = String::from_utf8_lossy(log.split(|b| *b == 0).next().unwrap_or_default());
    text.lines()
        .rev()
        .find(|l| {
            !l.is_empty() && !l.starts_with("processed ") && !l.starts_with("verification time")
        })
        .map(|l| format!(" (verifier: {l})"))
        .unwrap_or_default()
}

/// The instructions that carry a patched constant, with their markers.
fn patch_sites(insns: &[bpf_insn]) -> impl Iterator<Item = (usize, u32)> + '_ {
    let probe = HookConsts::new(0, 0, false, ProbeOptions::default());
    insns.windows(2).enumerate().filter_map(move |(i, w)| {
        let marker = w[1].imm as u32;
        (w[0].code == LD_IMM64 && w[1].code == 0 && probe.value(marker).is_some())
            .then_some((i, marker))
    })
}

/// How a program copy is attached to its hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Fentry,
    Fexit,
    /// One program at entry and exit (BPF_TRACE_FSESSION, whose value the
    /// running kernel's BTF gives: libbpf 1.1 does not know it).
    Session(u32),
    /// One session program for many functions, attached by one multi-link
    /// (BPF_TRACE_FSESSION_MULTI, its value in the kernel's BTF).
    SessionMulti(u32),
    /// The fallback for kernels without bpf_get_func_ret() (before 5.17).
    Kprobe,
    Kretprobe,
}

/// `BPF_JMP | BPF_CALL`, and its src_reg for a kfunc call.
const CALL: u8 = 0x85;
const PSEUDO_KFUNC_CALL: u8 = 2;

/// The running kernel's BTF ids of the kfuncs the probes may call, by their
/// placeholder (enum lsmpmon_kfunc); a kfunc the kernel lacks is absent.
#[derive(Debug, Clone, Default)]
pub struct Kfuncs(Vec<(u32, u32)>);

impl Kfuncs {
    /// (placeholder, kernel function name).
    pub const ALL: &'static [(u32, &'static str)] = &[
        (LSMPMON_KFUNC_PREEMPT_DISABLE, "bpf_preempt_disable"),
        (LSMPMON_KFUNC_PREEMPT_ENABLE, "bpf_preempt_enable"),
        (LSMPMON_KFUNC_SESSION_IS_RETURN, "bpf_session_is_return"),
        (LSMPMON_KFUNC_SESSION_COOKIE, "bpf_session_cookie"),
    ];

    pub fn resolve(kbtf: &super::btf::KernelBtf) -> Self {
        Self(
            Self::ALL
                .iter()
                .filter_map(|(marker, name)| kbtf.funcs.get(*name).map(|f| (*marker, f.btf_id)))
                .collect(),
        )
    }

    pub fn has(&self, name: &str) -> bool {
        Self::ALL
            .iter()
            .any(|(m, n)| *n == name && self.0.iter().any(|(k, _)| k == m))
    }

    fn btf_id(&self, marker: u32) -> Option<u32> {
        self.0.iter().find(|(m, _)| *m == marker).map(|(_, id)| *id)
    }
}

#[derive(Clone)]
pub struct Template {
    insns: Vec<bpf_insn>,
    kind: Kind,
    kfuncs: Kfuncs,
}

impl Template {
    pub fn new(insns: &[bpf_insn], kind: Kind, kfuncs: &Kfuncs) -> Result<Self> {
        if !patch_sites(insns).any(|(_, m)| m == LSMPMON_PATCH_HOOK_ID) {
            bail!("BPF program has no hook-id placeholder: rebuild lsmpmon");
        }
        Ok(Self {
            insns: insns.to_vec(),
            kind,
            kfuncs: kfuncs.clone(),
        })
    }

    fn instance(&self, consts: HookConsts) -> Vec<bpf_insn> {
        let mut insns = self.insns.clone();
        for (i, marker) in patch_sites(&self.insns) {
            insns[i].imm = match marker {
                LSMPMON_PATCH_SESSION => {
                    matches!(self.kind, Kind::Session(_) | Kind::SessionMulti(_)) as i32
                }
                LSMPMON_PATCH_MULTI => matches!(self.kind, Kind::SessionMulti(_)) as i32,
                _ => consts.value(marker).unwrap_or_default() as i32,
            };
        }
        // Kfunc placeholders become kfunc calls where the kernel has the
        // kfunc; elsewhere they stay in code the constants make dead.
        for insn in insns.iter_mut() {
            if insn.code != CALL || insn.src_reg() != 0 {
                continue;
            }
            if let Some(id) = self.kfuncs.btf_id(insn.imm as u32) {
                insn.set_src_reg(PSEUDO_KFUNC_CALL);
                insn.imm = id as i32;
                insn.off = 0;
            }
        }
        insns
    }

    fn attach_type(&self) -> libbpf_sys::bpf_attach_type {
        match self.kind {
            Kind::Fentry => libbpf_sys::BPF_TRACE_FENTRY,
            Kind::Fexit => libbpf_sys::BPF_TRACE_FEXIT,
            Kind::Session(t) | Kind::SessionMulti(t) => t,
            Kind::Kprobe | Kind::Kretprobe => 0,
        }
    }

    /// Loads a copy for `hook_id` aimed at the kernel function with BTF id `btf_id`.
    pub fn load(&self, consts: HookConsts, btf_id: u32) -> Result<OwnedFd, String> {
        let insns = self.instance(consts);
        // A multi-link program names no function (the kernel gives it a
        // placeholder's); its link names them all.
        let tracing = matches!(self.kind, Kind::Fentry | Kind::Fexit | Kind::Session(_));
        let mut opts = libbpf_sys::bpf_prog_load_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_prog_load_opts>() as _,
            expected_attach_type: self.attach_type(),
            attach_btf_id: if tracing { btf_id } else { 0 },
            ..Default::default()
        };
        let (prog_type, name) = match self.kind {
            Kind::Fentry => (libbpf_sys::BPF_PROG_TYPE_TRACING, c"lsmpmon_entry"),
            Kind::Fexit => (libbpf_sys::BPF_PROG_TYPE_TRACING, c"lsmpmon_exit"),
            Kind::Session(_) => (libbpf_sys::BPF_PROG_TYPE_TRACING, c"lsmpmon_session"),
            Kind::SessionMulti(_) => (libbpf_sys::BPF_PROG_TYPE_TRACING, c"lsmpmon_multi"),
            Kind::Kprobe => (libbpf_sys::BPF_PROG_TYPE_KPROBE, c"lsmpmon_kentry"),
            Kind::Kretprobe => (libbpf_sys::BPF_PROG_TYPE_KPROBE, c"lsmpmon_kexit"),
        };
        let load = |opts: &mut libbpf_sys::bpf_prog_load_opts| {
            // SAFETY: insns and opts outlive the call; the name is NUL-terminated.
            unsafe {
                libbpf_sys::bpf_prog_load(
                    prog_type,
                    name.as_ptr(),
                    c"GPL".as_ptr(),
                    insns.as_ptr(),
                    insns.len() as _,
                    opts,
                )
            }
        };
        let fd = load(&mut opts);
        if fd < 0 {
            // Again with the verifier's log, for its verdict (the last lines).
            let mut log = vec![0u8; 1 << 20];
            opts.log_buf = log.as_mut_ptr() as *mut _;
            opts.log_size = log.len() as u32;
            opts.log_level = 1;
            let _ = load(&mut opts);
            return Err(format!(
                "load: {}{}",
                std::io::Error::from_raw_os_error(-fd),
                verifier_verdict(&log)
            ));
        }
        // SAFETY: fd is a fresh descriptor we own.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    pub fn attach(&self, prog: &OwnedFd, function: &str, hook_id: u32) -> Result<OwnedFd, String> {
        match self.kind {
            Kind::SessionMulti(_) => Err("attach: a multi-link program (attach_multi)".into()),
            Kind::Fentry | Kind::Fexit | Kind::Session(_) => {
                // SAFETY: valid prog fd; NULL opts.
                let fd = unsafe {
                    libbpf_sys::bpf_link_create(
                        prog.as_raw_fd(),
                        0,
                        self.attach_type(),
                        std::ptr::null(),
                    )
                };
                if fd < 0 {
                    return Err(format!(
                        "attach: {}",
                        std::io::Error::from_raw_os_error(-fd)
                    ));
                }
                // SAFETY: as above.
                Ok(unsafe { OwnedFd::from_raw_fd(fd) })
            }
            // lsmpmon's own maxactive where tracefs lets it set one.
            Kind::Kretprobe if super::kretprobe::usable() => {
                super::kretprobe::attach(prog, function, hook_id)
            }
            Kind::Kprobe | Kind::Kretprobe => {
                kprobe_attach(prog, function, self.kind == Kind::Kretprobe)
            }
        }
    }
}

/// From <linux/perf_event.h> (not in the libc crate).
pub(super) const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_SET_BPF: libc::c_ulong = 0x4004_2408;

fn kprobe_pmu() -> Result<(u32, u32), String> {
    let read = |p: &str| std::fs::read_to_string(p).map_err(|e| format!("{p}: {e}"));
    let ty = read("/sys/bus/event_source/devices/kprobe/type")?
        .trim()
        .parse()
        .map_err(|e| format!("kprobe PMU type: {e}"))?;
    // "config:0": the bit that makes it a return probe.
    let bit = read("/sys/bus/event_source/devices/kprobe/format/retprobe")?
        .trim()
        .trim_start_matches("config:")
        .parse()
        .map_err(|e| format!("kprobe retprobe bit: {e}"))?;
    Ok((ty, bit))
}

/// A kprobe (or kretprobe) perf event on `function` running `prog`.
fn kprobe_attach(prog: &OwnedFd, function: &str, ret: bool) -> Result<OwnedFd, String> {
    let (pmu, retbit) = kprobe_pmu()?;
    let name = std::ffi::CString::new(function).map_err(|e| e.to_string())?;
    let mut attr = libbpf_sys::perf_event_attr {
        type_: pmu,
        size: std::mem::size_of::<libbpf_sys::perf_event_attr>() as u32,
        config: if ret { 1 << retbit } else { 0 },
        ..Default::default()
    };
    attr.__bindgen_anon_3.kprobe_func = name.as_ptr() as u64;
    // SAFETY: attr and name outlive the syscall; pid -1 / cpu 0 is a
    // system-wide kprobe event, as libbpf opens it.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const libbpf_sys::perf_event_attr,
            -1,
            0,
            -1,
            PERF_FLAG_FD_CLOEXEC,
        )
    } as i32;
    if fd < 0 {
        return Err(format!(
            "perf_event_open kprobe: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: fresh descriptor we own.
    let event = unsafe { OwnedFd::from_raw_fd(fd) };
    run_on_event(&event, prog)?;
    Ok(event)
}

/// Makes perf event `event` run `prog`, and enables it.
pub(super) fn run_on_event(event: &OwnedFd, prog: &OwnedFd) -> Result<(), String> {
    let fd = event.as_raw_fd();
    // SAFETY: perf ioctls on our own event fd.
    unsafe {
        if libc::ioctl(fd, PERF_EVENT_IOC_SET_BPF as _, prog.as_raw_fd()) < 0
            || libc::ioctl(fd, PERF_EVENT_IOC_ENABLE as _, 0) < 0
        {
            return Err(format!(
                "attach kprobe: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// One hook's loaded and attached probes: an fentry/fexit (kprobe/kretprobe)
/// pair, or one session program (`exit` None).
pub struct Pair {
    pub hook_id: u32,
    pub entry: OwnedFd,
    pub exit: Option<OwnedFd>,
    /// None only where LSMPMON_TEST_SKIP_PROBE left a side unattached.
    entry_link: Option<OwnedFd>,
    exit_link: Option<OwnedFd>,
}

impl Pair {
    /// Runs the kernel skipped (recursion), both programs together.
    pub fn recursion_misses(&self) -> u64 {
        recursion_misses(&self.entry) + self.exit.as_ref().map_or(0, recursion_misses)
    }
}

/// The programs every hook's copies are made from, by attach method.
pub enum Probes {
    /// fentry + fexit, or kprobe + kretprobe.
    Pair(Template, Template),
    /// One session program (BPF_TRACE_FSESSION).
    Session(Template),
    /// One session program for every hook, one link; `single` makes one
    /// copy per hook where the multi-link is refused.
    MultiSession { multi: Template, single: Template },
}

/// The hook id of the one "pair" a multi-link makes: it is every hook's.
pub const ALL_HOOKS: u32 = u32::MAX;

/// A hook to attach: its constants and BTF id.
pub struct Target {
    pub consts: HookConsts,
    pub btf_id: u32,
    pub returns_int: bool,
}

impl Probes {
    /// What the progress lines call them.
    pub fn describe(&self) -> &'static str {
        match self {
            Probes::Pair(t, _) if t.kind == Kind::Kprobe => "kprobe/kretprobe probe pairs",
            Probes::Pair(..) => "fentry/fexit probe pairs",
            Probes::Session(_) => "session probes",
            Probes::MultiSession { .. } => "hooks with one session multi-link",
        }
    }

    /// What replaces a refused multi-link: one session program per hook.
    pub fn without_multi(self) -> Probes {
        match self {
            Probes::MultiSession { single, .. } => Probes::Session(single),
            other => other,
        }
    }

    /// Loads this hook's copies and attaches them.
    pub fn attach(&self, consts: HookConsts, btf_id: u32, function: &str) -> Result<Pair, String> {
        match self {
            Probes::Pair(entry, exit) => attach_pair(entry, exit, consts, btf_id, function),
            Probes::Session(t) => {
                let prog = t.load(consts, btf_id)?;
                let link = t.attach(&prog, function, consts.hook_id)?;
                Ok(Pair {
                    hook_id: consts.hook_id,
                    entry: prog,
                    exit: None,
                    entry_link: Some(link),
                    exit_link: None,
                })
            }
            Probes::MultiSession { multi, .. } => {
                let target = Target {
                    consts,
                    btf_id,
                    returns_int: consts.ret_slot > 0,
                };
                let mut pair = attach_multi(multi, &[target])?;
                pair.hook_id = consts.hook_id;
                Ok(pair)
            }
        }
    }
}

/// One copy of the multi-link program and one link for all `targets`.
pub fn attach_multi(t: &Template, targets: &[Target]) -> Result<Pair, String> {
    let Kind::SessionMulti(attach_type) = t.kind else {
        return Err("not a multi-link template".into());
    };
    let first = targets.first().ok_or("no hook to attach")?;
    let prog = t.load(first.consts, 0)?;
    let mut cookies: Vec<(u32, u64)> = targets
        .iter()
        .map(|h| {
            (
                h.btf_id,
                super::multi::cookie(h.consts.hook_id, h.returns_int),
            )
        })
        .collect();
    // Fault injection for the tests: a BTF id twice, which the kernel refuses.
    if std::env::var_os("LSMPMON_TEST_REFUSE_MULTI").is_some() {
        cookies.push(cookies[0]);
    }
    let link = super::multi::link(&prog, attach_type, &cookies)?;
    Ok(Pair {
        hook_id: ALL_HOOKS,
        entry: prog,
        exit: None,
        entry_link: Some(link),
        exit_link: None,
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

fn attach_pair(
    entry: &Template,
    exit: &Template,
    consts: HookConsts,
    btf_id: u32,
    function: &str,
) -> Result<Pair, String> {
    let entry_prog = entry.load(consts, btf_id)?;
    let exit_prog = exit.load(consts, btf_id)?;
    let attach = |t: &Template, prog: &OwnedFd, side: &str| {
        if skipped_by_test(side, function) {
            eprintln!("lsmpmon: test: {side} probe of {function} left unattached");
            return Ok(None);
        }
        t.attach(prog, function, consts.hook_id).map(Some)
    };
    let entry_link = attach(entry, &entry_prog, "entry")?;
    let exit_link = attach(exit, &exit_prog, "exit")?;
    Ok(Pair {
        hook_id: consts.hook_id,
        entry: entry_prog,
        exit: Some(exit_prog),
        entry_link,
        exit_link,
    })
}

/// Programs the kernel skipped because a BPF program was already running on
/// that CPU (`recursion_misses`, 5.12+).
pub fn recursion_misses(prog: &OwnedFd) -> u64 {
    let mut info = libbpf_sys::bpf_prog_info::default();
    let mut len = std::mem::size_of::<libbpf_sys::bpf_prog_info>() as u32;
    // SAFETY: info is a properly sized out-buffer.
    let err = unsafe { libbpf_sys::bpf_prog_get_info_by_fd(prog.as_raw_fd(), &mut info, &mut len) };
    if err != 0 {
        return 0;
    }
    info.recursion_misses
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DetachMode {
    /// Hand the links to a child process that releases them after lsmpmon
    /// exits (probes are already disabled by the gate).
    Background,
    /// Release every link before exiting, however long the kernel takes.
    Wait,
}

/// Detaches every pair; returns how long lsmpmon waited, in milliseconds.
///
/// Each hook's trampoline is unregistered from ftrace when its last link goes,
/// and the kernel (6.1 and later) waits for two RCU-tasks grace periods under
/// a global mutex each time: about 125 ms per hook, in series, whatever we do.
/// `Background` therefore gives the links to a child that outlives us.
pub fn detach_all(pairs: Vec<Pair>, mode: DetachMode) -> f64 {
    let start = Instant::now();
    let mut links = Vec::with_capacity(pairs.len() * 2);
    let mut progs = Vec::with_capacity(pairs.len() * 2);
    for p in pairs {
        links.extend(p.entry_link);
        links.extend(p.exit_link);
        progs.push(p.entry);
        progs.extend(p.exit);
    }
    if mode == DetachMode::Background && release_in_child(&links) {
        // Our copies only drop references; the child holds the links.
        drop(links);
        drop(progs);
        return start.elapsed().as_secs_f64() * 1e3;
    }
    let threads = links.len().clamp(1, 64);
    let chunk = links.len().div_ceil(threads).max(1);
    let mut handles = Vec::new();
    while !links.is_empty() {
        let part: Vec<OwnedFd> = links.drain(..chunk.min(links.len())).collect();
        handles.push(thread::spawn(move || drop(part)));
    }
    for h in handles {
        let _ = h.join();
    }
    if let Some(removal) = super::kretprobe::removal() {
        removal.run();
    }
    drop(progs);
    start.elapsed().as_secs_f64() * 1e3
}

/// What `ps` shows for the release child, instead of the trace's command line.
const RELEASE_NAME: &[u8] = b"lsmpmon: releasing probes\0";

/// Names the release child (comm and command line). Raw syscalls only. The
/// kernel reads a command line from anonymous memory only, hence the page.
fn name_release_child() {
    // SAFETY: an anonymous page of our own, then prctl on it; failures leave the old name.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, c"lsmpmon-release".as_ptr());
        let page = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if page == libc::MAP_FAILED {
            return;
        }
        std::ptr::copy_nonoverlapping(RELEASE_NAME.as_ptr(), page as *mut u8, RELEASE_NAME.len());
        let start = page as libc::c_ulong;
        let end = start + RELEASE_NAME.len() as libc::c_ulong;
        // The kernel wants start <= end after each call: whichever order works.
        for (opt, addr) in [
            (libc::PR_SET_MM_ARG_END, end),
            (libc::PR_SET_MM_ARG_START, start),
            (libc::PR_SET_MM_ARG_END, end),
        ] {
            libc::prctl(libc::PR_SET_MM, opt, addr, 0, 0);
        }
    }
}

/// Forks a child that closes `links` one by one and exits. Returns false if
/// the fork failed (the caller then detaches in the foreground).
fn release_in_child(links: &[OwnedFd]) -> bool {
    let fds: Vec<i32> = links.iter().map(|l| l.as_raw_fd()).collect();
    let removal = super::kretprobe::removal();
    // SAFETY: the child only calls async-signal-safe functions (open, dup2,
    // close, setsid, _exit) before exiting.
    unsafe {
        match libc::fork() {
            -1 => false,
            0 => {
                libc::setsid();
                super::guard::mark_release();
                name_release_child();
                let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
                for std_fd in 0..3 {
                    libc::dup2(null, std_fd);
                }
                for fd in fds {
                    libc::close(fd);
                }
                if let Some(r) = &removal {
                    r.run();
                }
                libc::_exit(0)
            }
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insn(code: u8, imm: i32) -> bpf_insn {
        bpf_insn {
            code,
            imm,
            ..Default::default()
        }
    }

    /// A template: the hook id and session markers, then a placeholder call
    /// of each kfunc, then a real helper call (bpf_ktime_get_ns, 5).
    fn template() -> Vec<bpf_insn> {
        let mut v = Vec::new();
        for marker in [LSMPMON_PATCH_HOOK_ID, LSMPMON_PATCH_SESSION] {
            v.push(insn(LD_IMM64, 0));
            v.push(insn(0, marker as i32));
        }
        for (marker, _) in Kfuncs::ALL {
            v.push(insn(CALL, *marker as i32));
        }
        v.push(insn(CALL, 5));
        v
    }

    #[test]
    fn copies_get_their_constants_and_the_kernels_kfuncs() {
        // A kernel with the preemption kfuncs only (6.10 .. before sessions).
        let kfuncs = Kfuncs(vec![
            (LSMPMON_KFUNC_PREEMPT_DISABLE, 1001),
            (LSMPMON_KFUNC_PREEMPT_ENABLE, 1002),
        ]);
        assert!(kfuncs.has("bpf_preempt_disable") && !kfuncs.has("bpf_session_cookie"));
        let t = Template::new(&template(), Kind::Fentry, &kfuncs).unwrap();
        let consts = HookConsts::new(7, 2, true, ProbeOptions::default());
        let copy = t.instance(consts);
        assert_eq!((copy[0].imm, copy[2].imm), (7, 0), "hook id, not a session");
        let calls: Vec<(u8, i32)> = copy[4..].iter().map(|i| (i.src_reg(), i.imm)).collect();
        assert_eq!(
            calls,
            [
                (PSEUDO_KFUNC_CALL, 1001),
                (PSEUDO_KFUNC_CALL, 1002),
                (0, LSMPMON_KFUNC_SESSION_IS_RETURN as i32),
                (0, LSMPMON_KFUNC_SESSION_COOKIE as i32),
                (0, 5)
            ]
        );
        // A session copy says so in its constant.
        let s = Template::new(&template(), Kind::Session(58), &kfuncs).unwrap();
        assert_eq!(s.instance(consts)[2].imm, 1);
        assert_eq!(s.attach_type(), 58);
        // No hook-id placeholder: not a template lsmpmon built.
        assert!(Template::new(&template()[2..], Kind::Fentry, &kfuncs).is_err());
    }
}
