//! `lsmpmon trace`: LSMPMON on eBPF. Times every LSM hook of the running
//! kernel with fentry/fexit programs; per hook, per syscall, filtered.
mod answer;
pub mod args;
pub mod arrays;
pub mod attach;
pub mod btf;
mod calibrate;
pub mod callers;
pub mod cgroups;
pub mod collect;
mod command;
mod cpu_stats;
pub mod ctl;
mod filter_values;
mod guard;
pub mod hist;
pub mod hook_table;
pub mod hooks;
pub mod intf;
pub mod kernel_mem;
pub mod kfuncs;
pub mod live;
pub mod lsm_tables;
mod preempt;
mod refused;
pub mod report;
pub mod returns;
mod session;
mod setup;
pub mod site_tables;
mod skel;
pub mod tables;
pub mod text_refs;
mod windows;

use std::{
    mem::MaybeUninit,
    os::fd::AsFd,
    time::{Duration, Instant},
};

use anyhow::{Context, Result};
use libbpf_rs::{skel::Skel, OpenObject};

use crate::intf::lsmpmon_limits as lim;
use attach::{choose, offer, Attacher, HookConsts, ProbeOptions, Target};
use base::error::usage;
use base::output::stdout;
use cpu_stats::CpuStats;
use kfuncs::Kfuncs;
use model::{ProbeInfo, TraceOptions, TraceResult};
use report::View;
use session::Session;

pub use args::{EngineArgs, TraceArgs, TraceCommand, TraceSub};

pub fn main(cmd: TraceCommand) -> Result<i32> {
    match cmd.ctl {
        Some(TraceSub::Ctl { action, pid, json }) => {
            stdout(&ctl::send(pid, action, json)?)?;
            Ok(0)
        }
        None => run(&cmd.args),
    }
}

fn check_root() -> Result<()> {
    // SAFETY: plain query.
    if unsafe { libc::geteuid() } != 0 {
        return Err(usage(
            "lsmpmon trace needs root (CAP_BPF and CAP_PERFMON): run it with sudo",
        ));
    }
    Ok(())
}

fn discover(args: &EngineArgs) -> Result<(hooks::Discovery, btf::KernelBtf)> {
    let all = args.per_lsm;
    let mut kbtf = btf::KernelBtf::load(
        |n| {
            all || n.starts_with("security_")
                || n.starts_with("bpf_lsm_")
                || n == calibrate::FUNCTION
                || n == offer::FPROBE_FUNCTION
                || Kfuncs::ALL.iter().any(|(_, k)| *k == n)
        },
        lsm_tables::STRUCTS,
    )?;
    let mut d = hooks::discover(&mut kbtf)?;
    d.hooks = hooks::select(d.hooks, &args.hooks)?;
    if d.hooks.len() >= lim::LSMPMON_MAX_HOOKS as usize {
        return Err(usage(format!(
            "{} hooks selected; lsmpmon handles at most {}",
            d.hooks.len(),
            lim::LSMPMON_MAX_HOOKS - 1
        )));
    }
    Ok((d, kbtf))
}

fn list_hooks(d: &hooks::Discovery) -> String {
    let method = serde_json::to_value(d.source.method).unwrap_or_default();
    let mut out = format!(
        "# callers found by {}: {}\n",
        method.as_str().unwrap_or("?"),
        d.source.detail
    );
    let mut inside: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for h in &d.hooks {
        let obj = if h.object.is_some() { "object" } else { "-" };
        out += &format!("{:<32} {:<40} {obj}\n", h.name, h.function);
        for a in &h.also_runs {
            inside.entry(a).or_default().push(&h.function);
        }
    }
    for (hook, functions) in inside {
        if !d.hooks.iter().any(|h| h.name == hook) {
            out += &format!(
                "{hook:<32} (inside {}: timed there)\n",
                functions.join(", ")
            );
        }
    }
    for e in &d.excluded {
        out += &format!("# excluded {}: {}\n", e.hook, e.reason);
    }
    out
}

/// Raises the descriptor limits to what attaching needs, never lowering
/// either (the command that runs under this trace inherits them).
fn raise_nofile(needed: u64) {
    let mut cur = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid pointers; a refusal leaves the old limit (attach then
    // reports EMFILE).
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut cur) != 0 {
            return;
        }
        let want = needed.max(65536);
        let lim = libc::rlimit {
            rlim_cur: want.max(cur.rlim_cur),
            rlim_max: want.max(cur.rlim_max),
        };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
            cur.rlim_cur = cur.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &cur);
        }
    }
}

fn render(r: &TraceResult, args: &TraceArgs, compact: bool) -> Result<String> {
    if args.json {
        let mut s = if compact {
            serde_json::to_string(r)?
        } else {
            serde_json::to_string_pretty(r)?
        };
        s.push('\n');
        Ok(s)
    } else {
        Ok(report::text(
            r,
            &View {
                sort: args.sort,
                top: args.top,
                hist: args.hist,
            },
        ))
    }
}

/// A trace in stages: discover the hooks → choose the attach method → load
/// → attach → run and watch → collect, render and release (`finish`).
pub fn run(args: &TraceArgs) -> Result<i32> {
    args.engine.check_with_interrupts()?;
    check_root()?;
    let (discovery, kbtf) = discover(&args.engine)?;
    let engine = EngineArgs {
        expected_s: args.duration,
        by_cgroup: args.by.contains(&args::TraceBy::Cgroup),
        ..args.engine.clone()
    };
    if args.list_hooks {
        stdout(&list_hooks(&discovery))?;
        return Ok(0);
    }
    let mut open_object = MaybeUninit::uninit();
    let (mut session, _guard) =
        attach_all(&mut open_object, &engine, &args.command, discovery, &kbtf)?;
    let server = ctl::Server::start()
        .map_err(|e| {
            let why = base::error::one_line(&e);
            base::say!("lsmpmon: warning: no trace ctl for this trace: {why}");
        })
        .ok();
    let status = watch(&mut session, args, server.as_ref())?;
    session.set_enabled(false);
    finish(session, args, status)
}

/// Chooses the method, takes the guard, loads, attaches, calibrates and
/// opens the ready gate: a session recording from here on. The guard is held
/// until the probes are released.
fn attach_all<'obj>(
    open_object: &'obj mut MaybeUninit<OpenObject>,
    args: &EngineArgs,
    command: &[String],
    discovery: hooks::Discovery,
    kbtf: &btf::KernelBtf,
) -> Result<(Session<'obj>, guard::Guard)> {
    if args.by_cgroup && args.lean {
        return Err(usage(
            "--by cgroup counts each call's return in its cgroup, which --lean does not read: drop one of them",
        ));
    }
    let plan = setup::plan(args, discovery, kbtf)?;
    let kfuncs = Kfuncs::resolve(kbtf);
    let choice = choose_method(args, kbtf, &kfuncs)?;
    let preemptible =
        preempt::check(kfuncs.has("bpf_preempt_disable") && kfuncs.has("bpf_preempt_enable"))?;
    let options = ProbeOptions {
        lean: args.lean,
        syscall_time: args.syscall_time,
        no_preempt: preemptible.is_some(),
        empty: args.empty_probes,
        count_only: args.count_only,
        by_cgroup: args.by_cgroup,
        sample_every: match args.timing_windows {
            Some(_) => lim::LSMPMON_SAMPLE_WINDOWED,
            None => args.sample_every().unwrap_or(1),
        },
    };
    let attacher = Attacher::new(choice, args.method, options, kfuncs);

    command::catch_signals()?;
    raise_nofile(plan.hooks.len() as u64 * 4 + 256);
    let mut functions: Vec<String> = plan.hooks.iter().map(|h| h.function.clone()).collect();
    functions.push(calibrate::FUNCTION.into());
    let guard = guard::acquire(&functions, args.allow_other_probes, &command::stopped)?;

    let mut session = start(open_object, args, kbtf, plan, attacher, &guard)?;
    session.options.command = command.to_vec();
    session.probe.preemption = preemptible
        .map(|m| format!("{m}: the probes run with preemption disabled (bpf_preempt_disable)"));
    session.measure_floor();
    if args.sampled() {
        session.measure_sample_skew(args.comm.as_deref());
    }
    session.probe.nested_cost_ns = nested_cost(&mut session, args);
    session.set_nested_cost(session.probe.nested_cost_ns);
    // The ready gate: nothing is recorded until every hook is attached.
    session.set_enabled(true);
    if let Some((on_s, every_s)) = args.timing_windows {
        let rows = session.hooks.len() + 1; // and the calibration probe's
        session.windows = Some(windows::Windows::new(on_s, every_s, rows, Instant::now()));
    }
    Ok((session, guard))
}

/// What a probe pair nested in a timed call adds to its time. Every call is
/// timed: the pair cost. Under --timing-windows a nested call is timed as
/// any other, and its exit's test for a frame (the skew) runs too. Under
/// --sample it is booked as untimed: that pair, measured with its exit's
/// test. Its entry's test is not in it, and adding the skew for it took
/// 16–27 ns too many out of a hook with a nested one (7.3, BENCHMARKS.md, 'serve's own cost').
fn nested_cost(session: &mut Session, args: &EngineArgs) -> Option<f64> {
    let pair_ns = session.probe.pair_cost_ns?;
    let skew_ns = session.probe.sample_skew_ns.unwrap_or(0.0);
    if args.timing_windows.is_some() {
        return Some(pair_ns + skew_ns);
    }
    if !args.sampled() {
        return Some(pair_ns);
    }
    let forced_ns = session.measure_forced_pair(args.comm.as_deref());
    Some(forced_ns.unwrap_or(pair_ns + skew_ns))
}

/// Loads the BPF object, attaches every probe and calibrates: a session
/// ready to open its gate.
fn start<'obj>(
    open_object: &'obj mut MaybeUninit<OpenObject>,
    args: &EngineArgs,
    kbtf: &btf::KernelBtf,
    plan: setup::Plan,
    mut attacher: Attacher,
    guard: &guard::Guard,
) -> Result<Session<'obj>> {
    let mut skel = setup::load(open_object, args, &plan.hooks, kbtf, &attacher)?;
    let stats = CpuStats::map(
        skel.maps.cpus.as_fd(),
        arrays::possible_cpus(),
        plan.hooks.len() as u32 + 1,
        // The probes count calls themselves: no histogram to sum.
        args.lean || args.count_only,
    )?;
    // Before any hook: context switches and interrupt handlers change what a call belongs to.
    setup::attach_context(&mut skel)?;
    attacher.load(skel.object())?;
    setup::write_hook_meta(&skel, &plan.hooks)?;
    let attached = attacher.attach(&plan.hooks)?;
    // The floor is measured with the method the hooks got (a count has no time).
    let calibrated = kbtf
        .funcs
        .get(calibrate::FUNCTION)
        .filter(|_| !args.count_only);
    let pair_cost_ns = calibrated.and_then(|f| {
        let consts = HookConsts::new(
            plan.hooks.len() as u32,
            f.params.len(),
            true,
            attacher.options(),
        );
        let target = Target {
            consts: HookConsts {
                calibration: true,
                ..consts
            },
            btf_id: f.btf_id,
            returns_int: true,
            function: calibrate::FUNCTION,
        };
        calibrate::run(&skel.progs.test_run_driver, args.comm.as_deref(), || {
            attacher.attach_calibration(&target)
        })
    });
    if args.syscall_time {
        skel.links.sys_enter = Some(skel.progs.sys_enter.attach()?);
        skel.links.sys_exit = Some(skel.progs.sys_exit.attach()?);
    }
    let probe = probe_info(args, &plan, &attached, &attacher, pair_cost_ns, guard);
    Ok(Session {
        skel,
        stats,
        probe,
        hooks: plan.hooks,
        attacher,
        options: trace_options(args),
        provenance: model::provenance::collect(),
        enabled_at: None,
        elapsed: Duration::ZERO,
        baseline: Default::default(),
        cgroups: cgroups::Cgroups::new(args.max_cgroups),
        windows: None,
        settle_windows: false,
    })
}

/// The attach method (attach/choose.rs), and what the kprobe fallback needs.
fn choose_method(
    args: &EngineArgs,
    kbtf: &btf::KernelBtf,
    kfuncs: &Kfuncs,
) -> Result<choose::Choice> {
    let offer = offer::Offer::read(kbtf, kfuncs, kernel_version());
    if args.weigh.is_some() && !args.method.is_auto() {
        return Err(usage(
            "--weigh only applies to --method auto: drop --weigh or --method",
        ));
    }
    // The method is in the result (probe.method, the text's probe line): a
    // trace refused a moment later prints its one line and nothing else.
    let weigh = choose::Weigh::of(args.weigh, args.expected_s, args.sampled());
    let wants = choose::Wants {
        count_only: args.count_only,
        syscall_time: args.syscall_time,
        windows: args.timing_windows.is_some(),
    };
    let choice = choose::choose(&offer, args.method, weigh, wants)?;
    if choice.method.family.is(&attach::KPROBE) && args.method.is_auto() {
        base::say!("lsmpmon: this kernel lacks bpf_get_func_ret() (5.17): falling back to kprobe/kretprobe");
    }
    Ok(choice)
}

fn probe_info(
    args: &EngineArgs,
    plan: &setup::Plan,
    attached: &attach::Attached,
    attacher: &Attacher,
    pair_cost_ns: Option<f64>,
    guard: &guard::Guard,
) -> ProbeInfo {
    let method = attacher.report();
    ProbeInfo {
        method: method.method,
        not_used: method.not_used,
        method_why: method.why,
        fallback: method.fallback,
        preemption: None,
        floor_ns: None,
        pair_cost_ns,
        sample_skew_ns: None,
        nested_cost_ns: None,
        floor_samples: 0,
        hooks_found: plan.hooks.len(),
        hooks_attached: attached.hooks_attached,
        attach_ms: attached.attach_ms,
        detach_ms: None,
        detach_mode: format!("{:?}", args.detach).to_lowercase(),
        failed: attached.failed.clone(),
        excluded: plan.excluded.clone(),
        not_filterable: if args.object.is_some() {
            plan.not_filterable.clone()
        } else {
            Vec::new()
        },
        unmapped: plan.unmapped.clone(),
        recursion_misses: 0,
        kretprobe_maxactive: method.kretprobe_maxactive,
        kretprobe_missed: None,
        other_probes: guard.other_probes.clone(),
        implemented: plan.implemented.clone(),
        hook_source: Some(plan.source.clone()),
    }
}

/// The options as the result records them; `command` is filled in by the caller.
fn trace_options(args: &EngineArgs) -> TraceOptions {
    TraceOptions {
        hooks: args.hooks.clone(),
        command: Vec::new(),
        comm: args.comm.clone(),
        pid: args.pid,
        uid: args.uid,
        cgroup: args.cgroup.clone(),
        object: args.object.clone(),
        with_interrupts: args.with_interrupts,
        subtract_floor: args.subtract_floor,
        syscall_time: args.syscall_time,
        lean: args.lean,
        count_only: args.count_only,
        per_lsm: args.per_lsm,
        by_cgroup: args.by_cgroup,
        sample_every: args.sample_every(),
        timing_windows: args
            .timing_windows
            .map(|(on_s, every_s)| model::TimingWindows {
                on_s,
                every_s,
                closed: 0,
                entry_changes: 0,
                changing_ms: 0.0,
            }),
    }
}

/// Reads the result, releases the probes and prints; COMMAND's failure is ours.
fn finish(mut session: Session, args: &TraceArgs, status: Option<i32>) -> Result<i32> {
    // Read everything before detaching: detaching cannot lose a measurement.
    session.settle_windows = true;
    let mut result = session.snapshot()?;
    if result.options.timing_windows.is_some_and(|w| w.closed == 0) {
        base::say!("lsmpmon: warning: no timing window closed in this trace (the first opens after ON seconds): calls were counted, few or none timed");
    }
    base::say!("lsmpmon: detaching ...");
    result.probe.detach_ms = Some(session.attacher.free(args.engine.detach));
    base::say!(
        "lsmpmon: detached in {:.0} ms",
        result.probe.detach_ms.unwrap_or(0.0)
    );
    let text = render(&result, args, args.interval.is_some())?;
    match &args.output {
        Some(path) => base::secure_fs::write_no_follow(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?,
        None => stdout(&text)?,
    }
    Ok(match status {
        Some(code) if code != 0 => {
            base::say!("lsmpmon: the traced command exited with status {code}");
            base::error::EXIT_FAILURE
        }
        _ => 0,
    })
}

/// Can `--timing-windows` run here with `method`? It needs fentry/fexit,
/// which needs bpf_get_func_ret() (5.17, as attach/choose.rs decides).
pub fn timing_windows_possible(method: choose::MethodArg) -> bool {
    let fentry = method.family().is_none_or(|f| f.is(&attach::FENTRY));
    fentry && kernel_version() >= (5, 17)
}

/// (major, minor) of the running kernel.
fn kernel_version() -> (u32, u32) {
    let release = model::provenance::collect().kernel_release;
    let mut nums = release
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse::<u32>().ok());
    (nums.next().unwrap_or(0), nums.next().unwrap_or(0))
}

/// Runs until COMMAND exits, --duration passes or a signal arrives; serves
/// `trace ctl` and --interval meanwhile. Returns COMMAND's exit status.
fn watch(s: &mut Session, args: &TraceArgs, server: Option<&ctl::Server>) -> Result<Option<i32>> {
    let mut child = command::Traced::spawn(&args.command, args.json && args.output.is_none())?;
    let start = Instant::now();
    let mut next_print = args.interval.map(|i| start + Duration::from_secs_f64(i));
    if child.is_none() && args.duration.is_none() {
        base::say!("lsmpmon: tracing; Ctrl-C to stop");
    }
    loop {
        // A signal goes on to COMMAND, whose exit then ends the trace.
        match child.as_mut() {
            Some(c) => {
                if let Some(status) = c.poll()? {
                    return Ok(Some(status));
                }
            }
            None if command::stopped() => return Ok(None),
            None => {}
        }
        if let Some(d) = args.duration {
            if start.elapsed() >= Duration::from_secs_f64(d) {
                if let Some(c) = child.as_mut() {
                    c.kill();
                }
                return Ok(None);
            }
        }
        if let (Some(at), Some(i)) = (next_print, args.interval) {
            if Instant::now() >= at {
                let snap = s.snapshot()?;
                stdout(&render(&snap, args, true)?)?;
                next_print = Some(at + Duration::from_secs_f64(i));
            }
        }
        if let Some(req) = server.and_then(|srv| srv.poll()) {
            let view = View {
                sort: args.sort,
                top: args.top,
                hist: args.hist,
            };
            answer::answer(s, req, &view, answer::Reset::Allowed)?;
        }
        s.tick_windows();
        std::thread::sleep(Duration::from_millis(20));
    }
}
