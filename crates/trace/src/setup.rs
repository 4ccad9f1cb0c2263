//! Getting a trace ready: which functions to probe, the BPF object opened,
//! sized and loaded with the filters in its read-only data (and the
//! attacher's programs), the context probes attached.
use std::mem::MaybeUninit;

use anyhow::{Context, Result};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{MapCore, OpenObject};

use super::args::EngineArgs;
use super::attach::Attacher;
use super::filter_values::{cgroup_id, fixed_bytes};
use super::hooks::{self, Excluded, Hook};
use super::refused::refused;
use super::skel::*;
use super::{btf, calibrate, cpu_stats};
use crate::intf::{lsmpmon_hook_meta, lsmpmon_limits as lim};

/// The functions to probe: the selected hooks, then (with --per-lsm) each
/// active module's implementation of them.
pub struct Plan {
    pub hooks: Vec<Hook>,
    pub excluded: Vec<Excluded>,
    /// Hooks without an object argument (for --object).
    pub not_filterable: Vec<String>,
    /// Hooks whose modules' functions could not be traced (--per-lsm).
    pub unmapped: Vec<Excluded>,
    /// --per-lsm: every hook each LSM implements.
    pub implemented: Vec<model::trace::LsmHooks>,
    /// How the hooks' callers were found.
    pub source: model::HookSource,
}

pub fn plan(args: &EngineArgs, discovery: hooks::Discovery, kbtf: &btf::KernelBtf) -> Result<Plan> {
    let mut hooks = discovery.hooks;
    let not_filterable = hooks
        .iter()
        .filter(|h| h.object.is_none())
        .map(|h| h.name.clone())
        .collect();
    let mut unmapped = Vec::new();
    let mut implemented = Vec::new();
    if args.per_lsm {
        // The inventory only describes: a kernel whose tables cannot be read
        // whole still gets its trace.
        implemented = hooks::implemented(kbtf).unwrap_or_else(|e| {
            base::say!("lsmpmon: --per-lsm: the hook inventory is not recorded: {e:#}");
            Vec::new()
        });
        let (impls, skipped) = hooks::lsm_targets(kbtf, &hooks)?;
        base::say!(
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
        implemented,
        source: discovery.source,
    })
}

/// The filters, as read-only data the verifier sees (it prunes what is off).
fn set_filters(ro: &mut types::rodata, args: &EngineArgs) -> Result<()> {
    ro.self_tgid = std::process::id();
    ro.sampling = args.sampled() as u8;
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
    args.check_with_interrupts()?;
    ro.with_interrupts = args.with_interrupts as u8;
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
    args: &EngineArgs,
    hooks: &[Hook],
    kbtf: &btf::KernelBtf,
    attacher: &Attacher,
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
    // Preallocated: without --by cgroup, one unused cell.
    let cgroup_cells = match args.by_cgroup {
        true => lim::LSMPMON_MAX_CGROUP_CELLS,
        false => 1,
    };
    open.maps.cgroup_cells.set_max_entries(cgroup_cells)?;
    attacher.prepare(&mut open, &hooks[0].function)?;
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
