//! Getting a trace ready: which functions to probe, the BPF object opened,
//! sized and loaded with the filters in its read-only data, the context
//! probes attached, and one probe pair per hook.
use std::{mem::MaybeUninit, time::Instant};

use anyhow::{Context, Result};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{MapCore, OpenObject};

use super::attach::{self, HookConsts, Kind, Pair, ProbeOptions, Probes, Template};
use super::bpf::*;
use super::hooks::{self, Excluded, Hook};
use super::method::{Method, MethodArg};
use super::{btf, calibrate, cgroup_id, cpu_stats, fixed_bytes, refused, TraceArgs};
use crate::base::intf::{lsmpmon_hook_meta, lsmpmon_limits as lim};

/// The functions to probe: the selected hooks, then (with --per-lsm) each
/// active module's implementation of them.
pub struct Plan {
    pub hooks: Vec<Hook>,
    pub excluded: Vec<Excluded>,
    /// Hooks without an object argument (for --object).
    pub not_filterable: Vec<String>,
    /// Hooks whose modules' functions could not be traced (--per-lsm).
    pub unmapped: Vec<Excluded>,
}

pub fn plan(args: &TraceArgs, discovery: hooks::Discovery, kbtf: &btf::KernelBtf) -> Result<Plan> {
    let mut hooks = discovery.hooks;
    let not_filterable = hooks
        .iter()
        .filter(|h| h.object.is_none())
        .map(|h| h.name.clone())
        .collect();
    let mut unmapped = Vec::new();
    if args.per_lsm {
        let (impls, skipped) = hooks::lsm_targets(kbtf, &hooks)?;
        eprintln!(
            "lsmpmon: --per-lsm: {} LSM implementations of {} hooks{}",
            impls.len(),
            hooks.len(),
            if skipped.is_empty() {
                String::new()
            } else {
                format!(", {} not traceable", skipped.len())
            }
        );
        hooks.extend(impls);
        unmapped = skipped;
    }
    Ok(Plan {
        hooks,
        excluded: discovery.excluded,
        not_filterable,
        unmapped,
    })
}

/// The filters, as read-only data the verifier sees (it prunes what is off).
fn set_filters(ro: &mut types::rodata, args: &TraceArgs) -> Result<()> {
    ro.self_tgid = std::process::id();
    if let Some(pid) = args.pid {
        ro.filter_tgid = pid;
    }
    if let Some(uid) = args.uid {
        ro.filter_uid_on = 1;
        ro.filter_uid = uid;
    }
    if let Some(cg) = &args.cgroup {
        ro.filter_cgroup_id = cgroup_id(cg)?;
    }
    if let Some(comm) = &args.comm {
        ro.filter_comm_on = 1;
        ro.filter_comm = fixed_bytes::<{ lim::LSMPMON_COMM_LEN as usize }>("--comm", comm)?;
    }
    if let Some(obj) = &args.object {
        ro.filter_object_on = 1;
        ro.filter_object = fixed_bytes::<{ lim::LSMPMON_OBJ_NAME_LEN as usize }>("--object", obj)?;
    }
    ro.filters_on = (args.uid.is_some()
        || args.cgroup.is_some()
        || args.comm.is_some()
        || args.object.is_some()) as u8;
    Ok(())
}

/// Opens the BPF object, sizes its maps for `hooks` and this machine's CPUs,
/// and loads the programs this kernel and these options need.
pub fn load<'obj>(
    open_object: &'obj mut MaybeUninit<OpenObject>,
    args: &TraceArgs,
    hooks: &[Hook],
    kbtf: &btf::KernelBtf,
    method: Method,
    options: ProbeOptions,
) -> Result<LsmpmonSkel<'obj>> {
    let mut open = LsmpmonSkelBuilder::default()
        .open(open_object)
        .map_err(|e| refused("opening the BPF object", &e))?;
    let ro = open
        .maps
        .rodata_data
        .as_deref_mut()
        .context("BPF object has no .rodata")?;
    set_filters(ro, args)?;
    let stat_rows = hooks.len() as u32 + 1;
    ro.stat_rows = stat_rows;
    open.maps
        .cpus
        .set_max_entries(super::arrays::possible_cpus() as u32)?;
    open.maps
        .cpus
        .set_value_size(cpu_stats::value_size(stat_rows))?;
    open.maps
        .syscall_cells
        .set_max_entries(hooks.len() as u32 * lim::LSMPMON_SYSCALL_SLOTS)?;
    // Only the templates of the method in use are loaded (and relocated).
    let (pair, session, kprobe) = (
        method == Method::FentryFexit,
        matches!(method, Method::Session(_) | Method::MultiSession { .. }),
        method == Method::Kprobe,
    );
    let template_target = hooks[0].function.clone();
    let progs = &mut open.progs;
    for p in [
        &mut progs.hook_entry,
        &mut progs.hook_exit,
        &mut progs.hook_entry_np,
        &mut progs.hook_exit_np,
        &mut progs.hook_empty,
        &mut progs.hook_session,
    ] {
        p.set_attach_target(0, Some(template_target.clone()))?;
        p.set_autoload(false);
    }
    match (pair, options.empty, options.no_preempt) {
        (true, true, _) => progs.hook_empty.set_autoload(true),
        (true, false, false) => {
            progs.hook_entry.set_autoload(true);
            progs.hook_exit.set_autoload(true);
        }
        (true, false, true) => {
            progs.hook_entry_np.set_autoload(true);
            progs.hook_exit_np.set_autoload(true);
        }
        _ => {}
    }
    progs.hook_session.set_autoload(session);
    open.progs.hook_kentry.set_autoload(kprobe);
    open.progs.hook_kexit.set_autoload(kprobe);
    if kprobe {
        // Task storage (5.11) only serves --syscall-time, refused for kprobes.
        open.maps.task_ctx.set_autocreate(false)?;
    }
    open.progs
        .test_run_driver
        .set_autoload(kbtf.funcs.contains_key(calibrate::FUNCTION));
    open.progs.sys_enter.set_autoload(args.syscall_time);
    open.progs.sys_exit.set_autoload(args.syscall_time);
    open.load()
        .map_err(|e| refused("loading the BPF programs", &e))
}

/// The tracepoint probes that tell what a call belongs to: context switches
/// and interrupt handlers.
pub fn attach_context(skel: &mut LsmpmonSkel) -> Result<()> {
    let attach = |prog: &libbpf_rs::ProgramMut, what: &str| {
        prog.attach()
            .map_err(|e| refused(&format!("attaching the {what} tracepoint probe"), &e))
    };
    let progs = &skel.progs;
    let links = [
        attach(&progs.on_switch, "sched_switch")?,
        attach(&progs.on_softirq_entry, "softirq_entry")?,
        attach(&progs.on_softirq_exit, "softirq_exit")?,
        attach(&progs.on_irq_entry, "irq_handler_entry")?,
        attach(&progs.on_irq_exit, "irq_handler_exit")?,
    ];
    let [switch, softirq_entry, softirq_exit, irq_entry, irq_exit] = links;
    skel.links.on_switch = Some(switch);
    skel.links.on_softirq_entry = Some(softirq_entry);
    skel.links.on_softirq_exit = Some(softirq_exit);
    skel.links.on_irq_entry = Some(irq_entry);
    skel.links.on_irq_exit = Some(irq_exit);
    Ok(())
}

/// The loaded programs every hook's copies are made from, for `method`.
pub fn probes(
    skel: &LsmpmonSkel,
    method: Method,
    options: ProbeOptions,
    kfuncs: &attach::Kfuncs,
) -> Result<Probes> {
    let t = |p: &libbpf_rs::Program, kind| Template::new(p.insns(), kind, kfuncs);
    let progs = &skel.progs;
    Ok(match method {
        Method::Session(attach_type) => {
            Probes::Session(t(&progs.hook_session, Kind::Session(attach_type))?)
        }
        Method::MultiSession { multi, session } => Probes::MultiSession {
            multi: t(&progs.hook_session, Kind::SessionMulti(multi))?,
            single: t(&progs.hook_session, Kind::Session(session))?,
        },
        Method::FentryFexit if options.empty => Probes::Pair(
            t(&progs.hook_empty, Kind::Fentry)?,
            t(&progs.hook_empty, Kind::Fexit)?,
        ),
        Method::FentryFexit if options.no_preempt => Probes::Pair(
            t(&progs.hook_entry_np, Kind::Fentry)?,
            t(&progs.hook_exit_np, Kind::Fexit)?,
        ),
        Method::FentryFexit => Probes::Pair(
            t(&progs.hook_entry, Kind::Fentry)?,
            t(&progs.hook_exit, Kind::Fexit)?,
        ),
        Method::Kprobe => Probes::Pair(
            t(&progs.hook_kentry, Kind::Kprobe)?,
            t(&progs.hook_kexit, Kind::Kretprobe)?,
        ),
    })
}

/// What the probes look up per hook (the --object filter's argument).
pub fn write_hook_meta(skel: &LsmpmonSkel, hooks: &[Hook]) -> Result<()> {
    for (i, h) in hooks.iter().enumerate() {
        let (kind, arg) = h.object.unwrap_or((0, 0));
        let meta = lsmpmon_hook_meta {
            obj_kind: kind as u8,
            obj_arg: arg,
            returns_int: h.returns_int as u8,
            pad: 0,
        };
        // SAFETY: lsmpmon_hook_meta is plain data.
        let bytes = unsafe {
            std::slice::from_raw_parts(&meta as *const _ as *const u8, std::mem::size_of_val(&meta))
        };
        skel.maps
            .hook_meta
            .update(&(i as u32).to_ne_bytes(), bytes, libbpf_rs::MapFlags::ANY)?;
    }
    Ok(())
}

pub struct Attached {
    pub pairs: Vec<Pair>,
    /// Hooks with probes (a multi-link's one pair serves them all).
    pub hooks_attached: usize,
    pub failed: Vec<Excluded>,
    pub attach_ms: f64,
    /// The multi-link was refused: one session program per hook instead, and why.
    pub multi_refused: Option<String>,
}

/// Every hook with one multi-link; if the kernel refuses it (one function it
/// will not trace refuses them all), one session program per hook instead.
pub fn attach_hooks(
    probes: &Probes,
    asked: MethodArg,
    hooks: &[Hook],
    options: ProbeOptions,
) -> Result<Attached> {
    let Probes::MultiSession { multi, single } = probes else {
        return attach_each(probes, hooks, options);
    };
    eprintln!(
        "lsmpmon: attaching {} {} ...",
        hooks.len(),
        probes.describe()
    );
    let start = Instant::now();
    let targets: Vec<attach::Target> = hooks
        .iter()
        .enumerate()
        .map(|(i, h)| attach::Target {
            consts: HookConsts::new(i as u32, h.args, h.returns_int, options),
            btf_id: h.btf_id,
            returns_int: h.returns_int,
        })
        .collect();
    match attach::attach_multi(multi, &targets) {
        Ok(pair) => {
            let attach_ms = start.elapsed().as_secs_f64() * 1e3;
            eprintln!(
                "lsmpmon: {} hooks attached in {attach_ms:.0} ms",
                hooks.len()
            );
            Ok(Attached {
                pairs: vec![pair],
                hooks_attached: hooks.len(),
                failed: Vec::new(),
                attach_ms,
                multi_refused: None,
            })
        }
        Err(reason) if reason.contains("Operation not permitted") => {
            Err(refused("attaching", &reason))
        }
        // Asked for by name (--method multi-session): no quiet substitute.
        Err(reason) if asked == MethodArg::MultiSession => Err(anyhow::anyhow!(
            "--method multi-session: the kernel refused the multi-link session program ({reason}): \
             use --method auto or session"
        )),
        Err(reason) => {
            eprintln!("lsmpmon: the kernel refused the multi-link ({reason}): one session program per hook");
            let single = Probes::Session(single.clone());
            let mut attached = attach_each(&single, hooks, options)?;
            attached.multi_refused = Some(reason);
            // The refused attempt took time too.
            attached.attach_ms = start.elapsed().as_secs_f64() * 1e3;
            Ok(attached)
        }
    }
}

/// One probe pair per hook; a hook that fails is reported, unless the
/// kernel refuses the first one (then it refuses them all: lockdown).
fn attach_each(probes: &Probes, hooks: &[Hook], options: ProbeOptions) -> Result<Attached> {
    let what = probes.describe();
    eprintln!("lsmpmon: attaching {} {what} ...", hooks.len());
    let start = Instant::now();
    let mut pairs = Vec::with_capacity(hooks.len());
    let mut failed = Vec::new();
    for (i, h) in hooks.iter().enumerate() {
        let consts = HookConsts::new(i as u32, h.args, h.returns_int, options);
        match probes.attach(consts, h.btf_id, &h.function) {
            Ok(p) => pairs.push(p),
            Err(reason) if i == 0 && reason.contains("Operation not permitted") => {
                return Err(refused("attaching", &reason));
            }
            Err(reason) => failed.push(Excluded {
                hook: h.name.clone(),
                reason,
            }),
        }
    }
    let attach_ms = start.elapsed().as_secs_f64() * 1e3;
    if pairs.is_empty() {
        anyhow::bail!(
            "no hook could be attached (first failure: {})",
            failed.first().map(|f| f.reason.as_str()).unwrap_or("?")
        );
    }
    eprintln!(
        "lsmpmon: {} {what} attached in {attach_ms:.0} ms{}",
        pairs.len(),
        if failed.is_empty() {
            String::new()
        } else {
            format!(", {} failed", failed.len())
        }
    );
    Ok(Attached {
        hooks_attached: pairs.len(),
        pairs,
        failed,
        attach_ms,
        multi_refused: None,
    })
}
