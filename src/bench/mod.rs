//! `lsmpmon bench`: LMbench/Unixbench-class microbenchmarks with honest
//! statistics, on the host (real time) or in a guest (virtual time).
mod compare;
pub mod forker;
pub mod landlock;
mod ops;
pub(crate) use ops::ima::HASH_SIZES as IMA_HASH_SIZES;
mod runner;
mod stats;
mod workdir;

pub use ops::{build, web};

use std::{
    path::PathBuf,
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

use anyhow::{Context, Result};
use clap::Args;

use crate::base::error::usage;
use crate::model::bench::{BenchOptions, BenchProvenance, BenchResult, BENCH_SCHEMA};

/// Significance level of `--compare`'s real-time test (as `lsmpmon compare`'s default).
const COMPARE_ALPHA: f64 = 0.01;

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Operations and groups: syscall, files, ipc, proc, yield, bw, lmbench (all of those), ima, paper
    /// (LSMPMON, Table 3; embedded SELinux, Tables 1-2), or op names, comma-separated.
    #[arg(long, default_value = "paper", value_parser = crate::base::parse::list)]
    pub ops: String,
    /// Where file operations run: each op gets a fresh private directory
    /// DIR/<op>.XXXXXX, removed after; DIR is left as it was (made 0700 and
    /// removed if missing). Refused if another user could change it. Keep it
    /// identical across compared runs: path depth changes LSM costs.
    #[arg(long, default_value = "/tmp/lsmpmon-bench")]
    pub dir: PathBuf,
    /// Samples per operation (the median is reported).
    #[arg(long, default_value_t = 11, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=10_000))]
    pub samples: usize,
    /// Minimum duration of one sample; iterations grow until it is reached.
    #[arg(long, default_value_t = 10.0, value_parser = crate::base::parse::sample_ms)]
    pub sample_ms: f64,
    /// Operations per sample, fixed instead of grown to --sample-ms: the yield
    /// group's rounds (the pseudo multi-process paper times 100 000 and 1 000 000).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub iterations: Option<u64>,
    /// Pin the benchmark to this CPU.
    #[arg(long, value_parser = crate::base::parse::cpu)]
    pub cpu: Option<usize>,
    /// Bytes mapped by the mmap op.
    #[arg(long, default_value_t = 64 * 1024, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1 << 30))]
    pub mmap_bytes: usize,
    /// Map executable in the mmap op (what IMA's MMAP_CHECK measures).
    #[arg(long)]
    pub prot_exec: bool,
    /// Descriptors watched by select_file and select_tcp (at most 1000: select() stops at 1024).
    #[arg(long, default_value_t = 100, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1000))]
    pub select_fds: usize,
    /// Processes in the ctx op's token ring (lat_ctx's #procs).
    #[arg(long, default_value_t = 2, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(2..=64))]
    pub ctx_procs: usize,
    /// KiB each ctx process sums per hop (lat_ctx's -s).
    #[arg(long, default_value_t = 0, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=65536))]
    pub ctx_size: usize,
    /// Run inside a Landlock ruleset (allowing the work directory and what the ops need).
    #[arg(long)]
    pub landlock: bool,
    /// Machine-readable output (schema/bench.schema.json).
    #[arg(long)]
    pub json: bool,
    /// Compare with an earlier --json result: `value (+x %)` per op.
    #[arg(long, value_name = "BASE.json")]
    pub compare: Option<PathBuf>,
    /// Compare even if the baseline comes from another kernel, mode or machine (flagged).
    #[arg(long, requires = "compare")]
    pub force: bool,
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

fn provenance() -> BenchProvenance {
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let boot_params = cmdline
        .split_whitespace()
        .filter(|p| {
            [
                "lsm=",
                "security=",
                "selinux=",
                "enforcing=",
                "apparmor=",
                "ima",
                "evm",
                "lockdown=",
            ]
            .iter()
            .any(|k| p.starts_with(k))
        })
        .map(String::from)
        .collect();
    let cpu_model = cpu_model();
    let clocksource =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .unwrap_or_default()
            .trim()
            .to_string();
    BenchProvenance {
        base: crate::model::provenance::collect(),
        boot_params,
        cpu_model,
        clocksource,
        online_cpus: online_cpus(),
    }
}

/// CPUs online, from the kernel's own list ("0-1,3"); 1 if unreadable.
fn online_cpus() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| cpu_list_len(s.trim()))
        .unwrap_or(1)
}

/// How many CPUs a kernel CPU list names: "0", "0-1", "0-3,6".
fn cpu_list_len(list: &str) -> Option<usize> {
    list.split(',')
        .map(|part| match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                b.checked_sub(a).map(|d| d + 1)
            }
            None => part.parse::<usize>().ok().map(|_| 1),
        })
        .sum()
}

pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_default()
}

/// Checks an `--ops` list (the lab validates before booting anything).
pub fn check_ops(spec: &str, iterations: Option<u64>) -> Result<()> {
    check_iterations(&ops::select(spec)?, iterations)
}

/// `--iterations` fixes the rounds of the yield group's ops (the pseudo
/// multi-process paper's N). Other ops grow theirs to --sample-ms: a fixed
/// count could ask a file op for a billion files.
fn check_iterations(selected: &[ops::OpDef], iterations: Option<u64>) -> Result<()> {
    let Some(n) = iterations else {
        return Ok(());
    };
    match selected.iter().find(|o| o.group != ops::YIELD_GROUP) {
        Some(o) => Err(usage(format!(
            "--iterations {n} applies to the yield group's ops only, not {}: select --ops yield (or its ops)",
            o.name
        ))),
        None => Ok(()),
    }
}

/// Whether an `--ops` list holds a `web` op (the guest then needs nginx).
pub fn needs_web_server(spec: &str) -> Result<bool> {
    Ok(ops::select(spec)?.iter().any(|o| o.group == "web"))
}

/// Whether an `--ops` list holds a `build` op (the guest then needs tcc).
pub fn needs_build_kit(spec: &str) -> Result<bool> {
    Ok(ops::select(spec)?.iter().any(|o| o.group == "build"))
}

/// The SIGINT/SIGTERM handlers: the runs stop at the next check and the
/// work directory is removed on the way out.
fn catch_signals() {
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
}

fn pin(cpu: usize) -> Result<()> {
    // SAFETY: cpu_set_t manipulation for this thread; cpu < CPU_SETSIZE (checked by the parser).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(usage(format!(
                "cannot pin to CPU {cpu}: {}",
                std::io::Error::last_os_error()
            )));
        }
    }
    Ok(())
}

/// The baseline and its mismatches (`--force`), checked before anything runs.
fn check_baseline(
    args: &BenchArgs,
    selected: &[ops::OpDef],
    provenance: &BenchProvenance,
) -> Result<Option<(BenchResult, Vec<String>)>> {
    let Some(path) = &args.compare else {
        return Ok(None);
    };
    let base = compare::read_baseline(path)?;
    let forced = compare::check_comparable(&base, provenance, args.force)?;
    let names: Vec<&str> = selected.iter().map(|d| d.name).collect();
    compare::check_ops(&base, &names)?;
    Ok(Some((base, forced)))
}

fn options(args: &BenchArgs) -> BenchOptions {
    BenchOptions {
        ops: args.ops.clone(),
        dir: args.dir.display().to_string(),
        samples: args.samples,
        sample_ms: args.sample_ms,
        iterations: args.iterations,
        cpu: args.cpu,
        mmap_bytes: args.mmap_bytes,
        prot_exec: args.prot_exec,
        select_fds: args.select_fds,
        ctx_procs: args.ctx_procs,
        ctx_size_kib: args.ctx_size,
        landlock: args.landlock,
    }
}

/// Calibrates each op in its own fresh directory; failures are recorded.
fn prepare_all<'a>(
    selected: &'a [ops::OpDef],
    work: &mut workdir::WorkDir,
    args: &BenchArgs,
    clock_ns: f64,
    failed: &mut Vec<&'a str>,
) -> Result<Vec<runner::Prepared<'a>>> {
    let method = runner::Method {
        sample: Duration::from_secs_f64(args.sample_ms / 1e3),
        fixed_iterations: args.iterations,
    };
    let mut prepared = Vec::new();
    for (i, def) in selected.iter().enumerate() {
        if STOP.load(Ordering::SeqCst) {
            break;
        }
        let ctx = ops::Ctx {
            dir: work.op_dir(def.name)?,
            mmap_bytes: args.mmap_bytes,
            prot_exec: args.prot_exec,
            select_fds: args.select_fds,
            ctx_procs: args.ctx_procs,
            ctx_size_kib: args.ctx_size,
        };
        eprintln!(
            "bench: calibrating [{}/{}] {}",
            i + 1,
            selected.len(),
            def.name
        );
        match runner::prepare(def, &ctx, &method, clock_ns) {
            Ok(p) => prepared.push(p),
            Err(e) => {
                eprintln!(
                    "bench: {} FAILED: {}",
                    def.name,
                    crate::base::error::one_line(&e)
                );
                failed.push(def.name);
            }
        }
    }
    Ok(prepared)
}

/// Round-robin samples of every prepared op; a failing op is dropped.
fn sample_rounds<'a>(
    prepared: &mut Vec<runner::Prepared<'a>>,
    samples: usize,
    clock_ns: f64,
    failed: &mut Vec<&'a str>,
) {
    for round in 0..samples {
        if STOP.load(Ordering::SeqCst) {
            eprintln!("bench: interrupted after {round} of {samples} sample rounds");
            return;
        }
        eprintln!("bench: sample round {}/{samples}", round + 1);
        let mut i = 0;
        while i < prepared.len() {
            match prepared[i].sample(clock_ns) {
                Ok(()) => i += 1,
                Err(e) => {
                    let p = prepared.remove(i);
                    eprintln!(
                        "bench: {} FAILED: {}",
                        p.def.name,
                        crate::base::error::one_line(&e)
                    );
                    failed.push(p.def.name);
                }
            }
        }
    }
}

/// Prints the result (and the comparison); the exit status says what failed.
fn report(
    args: &BenchArgs,
    result: &BenchResult,
    baseline: Option<&(BenchResult, Vec<String>)>,
    failed: &[&str],
) -> Result<i32> {
    let out = if args.json {
        serde_json::to_string_pretty(result)? + "\n"
    } else {
        table(result)
    };
    print!("{out}");
    if let Some((base, forced)) = baseline {
        let text = compare::render(&compare::rows(base, result, COMPARE_ALPHA), forced);
        if args.json {
            eprint!("{text}");
        } else {
            print!("\n{text}");
        }
    }
    if !failed.is_empty() {
        return Err(anyhow::anyhow!(
            "{} op(s) failed: {}",
            failed.len(),
            failed.join(", ")
        ))
        .context("bench");
    }
    if STOP.load(Ordering::SeqCst) {
        return Err(anyhow::anyhow!("interrupted (partial results printed)"));
    }
    Ok(0)
}

pub fn main(args: BenchArgs) -> Result<i32> {
    let selected = ops::select(&args.ops)?;
    check_iterations(&selected, args.iterations)?;
    let provenance = provenance();
    let baseline = check_baseline(&args, &selected, &provenance)?;
    catch_signals();
    let mut work = workdir::WorkDir::open(&args.dir)?;
    if let Some(cpu) = args.cpu {
        pin(cpu)?;
    }
    let landlock = if args.landlock {
        let info = landlock::enter(work.root())?;
        eprintln!("bench: Landlock ABI {} enforcing: {}", info.abi, info.proof);
        Some(info)
    } else {
        None
    };
    let started = Instant::now();
    let clock_ns = runner::clock_overhead_ns();
    let mut failed = Vec::new();
    let mut prepared = prepare_all(&selected, &mut work, &args, clock_ns, &mut failed)?;
    sample_rounds(&mut prepared, args.samples, clock_ns, &mut failed);
    let mut results = Vec::new();
    for p in prepared.into_iter().filter(|p| p.sampled()) {
        let r = p.result()?;
        eprintln!(
            "bench: {:<15} {:>12.2} {} (spread {:.1} %)",
            r.op,
            r.summary.median,
            r.unit.name(),
            r.summary.spread_pct
        );
        results.push(r);
    }
    let wall_s = started.elapsed().as_secs_f64();
    drop(work);
    let result = BenchResult {
        schema: BENCH_SCHEMA.into(),
        provenance,
        options: options(&args),
        clock_overhead_ns: clock_ns,
        landlock,
        results,
        wall_s,
    };
    report(&args, &result, baseline.as_ref(), &failed)
}

fn table(r: &BenchResult) -> String {
    use crate::base::table::{Cell, Row, Table};
    use std::fmt::Write;
    let p = &r.provenance.base;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "lsmpmon bench on {} ({}, {} time), lsm={}{}; {} samples of {}",
        p.kernel_release,
        p.environment,
        p.time,
        p.active_lsms.join(","),
        if r.landlock.is_some() {
            ", inside a Landlock ruleset"
        } else {
            ""
        },
        r.options.samples,
        match r.options.iterations {
            Some(n) => format!("{n} ops"),
            None => format!(">= {} ms", r.options.sample_ms),
        }
    );
    let t = Table {
        form: "bench".into(),
        title: "per op".into(),
        kernel: p.kernel_release.clone(),
        notes: Vec::new(),
        header: ["op", "unit", "median", "min", "max", "spread"]
            .map(String::from)
            .to_vec(),
        rows: r
            .results
            .iter()
            .map(|o| Row {
                label: o.op.clone(),
                cells: vec![
                    Cell::text(o.unit.name()),
                    Cell::fixed(o.summary.median, 2),
                    Cell::fixed(o.summary.min, 2),
                    Cell::fixed(o.summary.max, 2),
                    Cell::text(format!("{:.1} %", o.summary.spread_pct)),
                ],
            })
            .collect(),
    };
    let _ = writeln!(s, "{}", crate::base::table::plain(&t));
    s
}

#[cfg(test)]
mod tests {
    use super::cpu_list_len;

    #[test]
    fn cpu_lists_are_counted() {
        assert_eq!(cpu_list_len("0"), Some(1));
        assert_eq!(cpu_list_len("0-1"), Some(2));
        assert_eq!(cpu_list_len("0-3,6"), Some(5));
        assert_eq!(cpu_list_len("3-1"), None);
        assert_eq!(cpu_list_len(""), None);
    }
}
