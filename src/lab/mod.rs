//! `lsmpmon lab`: every secure OS with a real, enforcing policy, kernel by
//! kernel, in throwaway guests: boot, set up, prove, bench untraced, bench
//! under `trace --per-lsm`, footprint; one result file per cell, the papers'
//! Table 3 and Table 4 forms over them.
pub mod access;
mod buildkit;
mod cell;
pub mod footprint;
pub mod guest;
pub mod nginx;
mod plan;
mod progress;
pub mod proof;
pub mod results;
pub mod spec;
mod swtpm;
pub mod webserver;

use std::{
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};

use crate::base::error::{usage, EXIT_FAILURE, EXIT_OK};
use crate::model::TimeMode;
use crate::vm::{self, kernel, Machine};
use cell::CellJob;
use results::{CellResult, CellStatus, ResultsDir, RunOptions, CELL_SCHEMA};

pub const DEFAULT_CONFIGS: &str = "none,selinux-mini,apparmor,tomoyo,landlock,ima,bpf-lsm";

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct LabCommand {
    #[command(subcommand)]
    pub sub: Option<LabSub>,
    /// `lsmpmon lab [OPTIONS]` is `lab run --trace [OPTIONS]`: the main job.
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Subcommand, Debug)]
pub enum LabSub {
    /// Run kernels × configurations × ops; each cell proves its policy first.
    Run(RunArgs),
    /// Repeat one cell from its result's own provenance (kernel, configuration, options).
    Rerun(RerunArgs),
    /// Print the tables of a results directory (cells from any machine).
    Tables(TablesArgs),
    /// (guest) run one cell: setup, proof, bench, trace.
    #[command(hide = true)]
    Guest { plan: PathBuf },
    /// (guest) apply the configuration's confinement, then exec COMMAND.
    #[command(hide = true)]
    Confine {
        plan: PathBuf,
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// (guest, as the workload) try the access matrix, print the outcomes.
    #[command(hide = true)]
    Access {
        plan: PathBuf,
        #[arg(long)]
        landlock: bool,
    },
    /// (guest) start nginx serving the `web` ops' file mix on the loopback.
    #[command(hide = true)]
    WebServer {
        #[arg(long, default_value = nginx::GUEST_BINARY)]
        nginx: PathBuf,
    },
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Kernel series, comma-separated: 5.10, 6.1, 6.12, 7.3 (the names `vm run` knows).
    #[arg(long, default_value = "6.1", value_name = "LIST")]
    pub kernels: String,
    #[arg(long, default_value = "cloud")]
    pub flavour: String,
    /// Configurations (directories under configs/ or a --config-dir), comma-separated.
    #[arg(long, default_value = DEFAULT_CONFIGS, value_name = "LIST")]
    pub configs: String,
    /// More configuration directories (searched first). Repeatable.
    #[arg(long = "config-dir", value_name = "DIR")]
    pub config_dirs: Vec<PathBuf>,
    /// Guest CPU counts, comma-separated (1 to 8): one cell per kernel,
    /// configuration and CPU count.
    #[arg(long, default_value = "1", value_name = "LIST")]
    pub cpus: String,
    /// Benchmark operations and groups, as `bench --ops` (`web`: nginx in the
    /// guest, loaded by 8/16/24/32 clients).

    #[arg(long, default_value = "paper")]
    pub ops: String,
    /// Samples per op for the untraced run (the median is reported; bench's default).
    #[arg(long, default_value_t = 11, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub samples: u32,
    /// Minimum length of one sample, guest milliseconds.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub sample_ms: u32,
    /// Operations per sample, fixed (bench --iterations; e.g. the sched_yield rounds).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub iterations: Option<u64>,
    /// Also run the ops under `trace --per-lsm` (the Table 4 form).
    #[arg(long)]
    pub trace: bool,
    /// Where the benchmark's files live in the guest (`bench --dir`; its
    /// parents are made). Path depth changes what path-based modules cost:
    /// only cells with the same directory are compared.
    #[arg(long, default_value = results::DEFAULT_BENCH_DIR, value_name = "DIR", value_parser = absolute_dir)]
    pub bench_dir: String,
    /// Guests at once (default: the number of CPUs).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: Option<u32>,
    /// Wall-clock seconds before a cell's guest is killed.
    #[arg(long = "timeout", default_value_t = 1800, value_parser = clap::value_parser!(u64).range(10..=86_400))]
    pub timeout_s: u64,
    /// Results directory (created; cells accumulate, newest per cell wins in tables).
    #[arg(long, default_value = "lab-results")]
    pub results: PathBuf,
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(256..=65_536))]
    pub memory_mb: u32,
    #[command(flatten)]
    pub cache: vm::CacheDir,
    /// Debian archive to fetch kernels from. Default: this machine's apt sources.
    #[arg(long, env = "LSMPMON_MIRROR", value_name = "URL")]
    pub mirror: Option<String>,
}

#[derive(Args, Debug)]
pub struct RerunArgs {
    /// A cell result (results/cells/*.json).
    pub result: PathBuf,
    /// Where to write the new cell (default: the directory the result is in).
    #[arg(long)]
    pub results: Option<PathBuf>,
    #[arg(long = "config-dir", value_name = "DIR")]
    pub config_dirs: Vec<PathBuf>,
    /// Run even if the configuration or kernel package changed since (recorded).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub cache: vm::CacheDir,
    #[arg(long, env = "LSMPMON_MIRROR", value_name = "URL")]
    pub mirror: Option<String>,
}

#[derive(Args, Debug)]
pub struct TablesArgs {
    /// Results directory.
    #[arg(default_value = "lab-results")]
    pub dir: PathBuf,
    /// text, markdown or json.
    #[arg(long, default_value = "text", value_parser = ["text", "markdown", "json"])]
    pub format: String,
}

pub fn main(cmd: LabCommand) -> Result<i32> {
    match cmd.sub {
        None => {
            let mut args = cmd.run;
            args.trace = true;
            run(&args)
        }
        Some(LabSub::Run(args)) => run(&args),
        Some(LabSub::Rerun(args)) => rerun(&args),
        Some(LabSub::Tables(args)) => show_tables(&args),
        Some(LabSub::Guest { plan }) => guest::main(&plan),
        Some(LabSub::Confine { plan, command }) => guest::confine(&plan, &command),
        Some(LabSub::Access { plan, landlock }) => guest::access(&plan, landlock),
        Some(LabSub::WebServer { nginx }) => webserver::main(&nginx),
    }
}

/// Comma-separated names, in order, each once.
fn split_list(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        if !out.iter().any(|o| o == w) {
            out.push(w.to_string());
        }
    }
    out
}

/// `--cpus 1,2`: each count once, 1 to MAX_CPUS.
fn cpu_counts(s: &str) -> Result<Vec<u32>> {
    let counts = split_list(s)
        .iter()
        .map(|w| match w.parse::<u32>() {
            Ok(n) if (1..=vm::MAX_CPUS).contains(&n) => Ok(n),
            _ => Err(usage(format!(
                "--cpus {s}: '{w}' is not a CPU count from 1 to {}",
                vm::MAX_CPUS
            ))),
        })
        .collect::<Result<Vec<u32>>>()?;
    if counts.is_empty() {
        return Err(usage("--cpus is empty"));
    }
    Ok(counts)
}

/// What one matrix needs, checked before anything boots.
struct Matrix {
    kernels: Vec<String>,
    cpus: Vec<u32>,
    configs: Vec<spec::Config>,
    access: spec::Matrix,
}

fn resolve(args: &RunArgs) -> Result<Matrix> {
    let kernels = split_list(&args.kernels);
    if kernels.is_empty() {
        return Err(usage("--kernels is empty"));
    }
    for k in &kernels {
        if !kernel::known_series().contains(&k.as_str()) {
            return Err(usage(format!(
                "unknown kernel '{k}': use one of {}",
                kernel::known_series().join(", ")
            )));
        }
    }
    let dirs = spec::search_path(&args.config_dirs);
    for d in &args.config_dirs {
        if !d.is_dir() {
            return Err(usage(format!(
                "--config-dir {}: not a directory",
                d.display()
            )));
        }
    }
    let names = split_list(&args.configs);
    if names.is_empty() {
        return Err(usage("--configs is empty"));
    }
    let configs = names
        .iter()
        .map(|n| spec::load(n, &dirs))
        .collect::<Result<Vec<_>>>()?;
    crate::bench::check_ops(&args.ops, args.iterations)?;
    Ok(Matrix {
        kernels,
        cpus: cpu_counts(&args.cpus)?,
        configs,
        access: spec::load_matrix()?,
    })
}

fn run(args: &RunArgs) -> Result<i32> {
    let m = resolve(args)?;
    let dir = ResultsDir::open(&args.results)?;
    let cache = args.cache.path();
    let cancel = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second signal exits at once (the guests die with lsmpmon).
        signal_hook::flag::register_conditional_shutdown(sig, 1, Arc::clone(&cancel))
            .and_then(|_| signal_hook::flag::register(sig, Arc::clone(&cancel)))
            .context("installing signal handlers")?;
    }
    let web = crate::bench::needs_web_server(&args.ops)?;
    let nginx = if web {
        Some(nginx::ensure(&cache)?)
    } else {
        None
    };
    let kit = if crate::bench::needs_build_kit(&args.ops)? {
        Some(buildkit::ensure(&cache)?)
    } else {
        None
    };
    let mut jobs = Vec::new();
    let mut cells_done: Vec<CellResult> = Vec::new();
    for series in &m.kernels {
        let k = kernel::ensure(&cache, series, &args.flavour, args.mirror.as_deref())?;
        let kconf = plan::KernelConfig::read(&k.config, &k.release)?;
        for (c, &cpus) in m
            .configs
            .iter()
            .flat_map(|c| m.cpus.iter().map(move |n| (c, n)))
        {
            let options = run_options(args, cpus);
            let mut base = base_result(&k, c, &options, jobs.len() + cells_done.len());
            base.web_server = nginx.as_ref().map(|n| n.package.clone());
            base.compiler = kit.as_ref().map(|k| k.compiler.clone());
            if let Some(why) = kconf.not_applicable(c) {
                let mut r = base;
                r.status = CellStatus::NotApplicable;
                r.reason = Some(why);
                dir.write_cell(&r)?;
                cells_done.push(r);
                continue;
            }
            jobs.push((
                CellJob {
                    plan: guest::Plan {
                        config: c.name.clone(),
                        spec: c.spec.clone(),
                        matrix: m.access.clone(),
                        bench_args: bench_args(args),
                        trace: args.trace,
                        expected_lsms: kconf.expected_lsms(c.spec.lsm.as_deref()),
                        web_server: web,
                    },
                    kernel: k.clone(),
                    config: c.clone(),
                    machine: machine(args, cpus),
                    nginx: nginx.as_ref().map(|n| n.binary.clone()),
                    build_files: kit.as_ref().map(|k| k.files.clone()).unwrap_or_default(),
                },
                base,
            ));
        }
    }
    let total = jobs.len() + cells_done.len();
    let progress = progress::Progress::new(total, cells_done.len());
    for r in &cells_done {
        progress.finished(r);
    }
    let (finished, write_err) = run_jobs(jobs, args.jobs, &dir, &progress, &cancel);
    cells_done.extend(finished);
    progress.done();
    dir.write_index()?;
    // Interrupted before any cell finished: no tables, only the interruption.
    if !(cancel.load(Ordering::SeqCst) && cells_done.is_empty()) {
        report(
            &dir,
            &m.configs.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
            &m.kernels,
        )?;
    }
    if let Some(e) = write_err {
        return Err(e.context("writing a cell result (the others are kept)"));
    }
    summarize(&cells_done, &dir, &cancel)
}

fn run_jobs(
    jobs: Vec<(CellJob, CellResult)>,
    n: Option<u32>,
    dir: &ResultsDir,
    progress: &progress::Progress,
    cancel: &AtomicBool,
) -> (Vec<CellResult>, Option<anyhow::Error>) {
    let n = n
        .map(|n| n as usize)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .min(jobs.len().max(1));
    let queue = Mutex::new(jobs.into_iter());
    let done = Mutex::new(Vec::new());
    let write_err: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..n {
            s.spawn(|| loop {
                if cancel.load(Ordering::SeqCst) {
                    break;
                }
                let next = lock(&queue).next();
                let Some((job, mut base)) = next else { break };
                let log_dir = dir.log_dir(&base.id);
                base.log_dir = log_dir.display().to_string();
                let label = match job.machine.cpus {
                    1 => format!("{} {}", job.kernel.series, job.config.name),
                    n => format!("{} {} {n}cpu", job.kernel.series, job.config.name),
                };
                let line = progress.start(&label);
                let r = cell::run(&job, base, &log_dir, &|l| line.update(l), cancel);
                progress.finished(&r);
                if r.status == CellStatus::Interrupted {
                    continue;
                }
                // One writer at a time: the index is rebuilt from every cell.
                let mut done = lock(&done);
                if let Err(e) = dir
                    .write_cell(&r)
                    .and_then(|_| dir.write_index().map(|_| ()))
                {
                    eprintln!(
                        "lsmpmon: cell {}: cannot write its result: {}",
                        r.id,
                        crate::base::error::one_line(&e)
                    );
                    *lock(&write_err) = Some(e);
                }
                done.push(r);
            });
        }
    });
    (
        done.into_inner().unwrap_or_else(|p| p.into_inner()),
        write_err.into_inner().unwrap_or_else(|p| p.into_inner()),
    )
}

/// A poisoned lock still guards valid data here (a panicking cell thread
/// cannot leave a half-pushed Vec).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn summarize(cells: &[CellResult], dir: &ResultsDir, cancel: &AtomicBool) -> Result<i32> {
    let bad: Vec<&CellResult> = cells
        .iter()
        .filter(|c| matches!(c.status, CellStatus::Failed | CellStatus::ProofFailed))
        .collect();
    for c in &bad {
        eprintln!(
            "lsmpmon: cell {} {} ({} CPU): {:?}: {} (log: {})",
            c.kernel.series,
            c.config.name,
            c.options.cpus,
            c.status,
            c.reason.as_deref().unwrap_or(""),
            c.log_dir
        );
    }
    eprintln!("lsmpmon: results in {}", dir.root.display());
    if cancel.load(Ordering::SeqCst) {
        return Err(crate::base::error::with_code(
            EXIT_FAILURE,
            format!(
                "interrupted: {} finished cell(s) kept in {}",
                cells.len(),
                dir.root.display()
            ),
        ));
    }
    if !bad.is_empty() {
        return Err(crate::base::error::with_code(
            EXIT_FAILURE,
            format!("{} of {} cell(s) failed (above)", bad.len(), cells.len()),
        ));
    }
    Ok(EXIT_OK)
}

/// Prints the tables for this run's kernels and configurations; writes all
/// of them (every cell in the directory) as Markdown and JSON.
fn report(dir: &ResultsDir, order: &[String], kernels: &[String]) -> Result<()> {
    use crate::base::table;
    use crate::report::{forms::BASELINE, input};
    let runs = input::load(std::slice::from_ref(&dir.root), true)?;
    // This run's cells, with the baseline's from the directory for the percentages.
    let mut shown: Vec<String> = order.to_vec();
    if !shown.iter().any(|c| c == BASELINE) {
        shown.insert(0, BASELINE.to_string());
    }
    let mine: Vec<input::Run> = runs
        .iter()
        .filter(|r| kernels.iter().any(|k| k == r.kernel.series()) && shown.contains(&r.config))
        .cloned()
        .collect();
    print!(
        "{}",
        table::text(&crate::report::tables(&mine, &shown, &[]))
    );
    let all = crate::report::tables(&runs, order, &[]);
    results::write_atomic(&dir.root.join("tables.md"), &table::markdown(&all))?;
    let inputs = [dir.root.display().to_string()];
    let warnings = input::warnings(&runs);
    results::write_atomic(
        &dir.root.join("tables.json"),
        &crate::report::json(&all, &runs, &inputs, &warnings)?,
    )?;
    Ok(())
}

fn show_tables(args: &TablesArgs) -> Result<i32> {
    use crate::base::table;
    use crate::report::input;
    if !args.dir.join("cells").is_dir() {
        return Err(usage(format!(
            "{} is not a lab results directory (no cells/)",
            args.dir.display()
        )));
    }
    let runs = input::load(std::slice::from_ref(&args.dir), true)?;
    let t = crate::report::tables(&runs, &split_list(DEFAULT_CONFIGS), &[]);
    match args.format.as_str() {
        "markdown" => print!("{}", table::markdown(&t)),
        "json" => print!(
            "{}",
            crate::report::json(&t, &runs, &[args.dir.display().to_string()], &[])?
        ),
        _ => print!("{}", table::text(&t)),
    }
    Ok(EXIT_OK)
}

fn rerun(args: &RerunArgs) -> Result<i32> {
    let old: CellResult = crate::model::read::load_as("", &args.result, CELL_SCHEMA, "lab cell")?;
    let results = match &args.results {
        Some(r) => r.clone(),
        None => results_root_of(&args.result)?,
    };
    let dirs = spec::search_path(&args.config_dirs);
    let config = spec::load(&old.config.name, &dirs)?;
    if config.hash != old.config.hash && !args.force {
        return Err(usage(format!(
            "configuration {} changed since the cell ran (hash {}… now {}…): use --force to run the current one",
            old.config.name,
            old.config.hash.chars().take(12).collect::<String>(),
            &config.hash[..12]
        )));
    }
    let cache = args.cache.path();
    let k = kernel::ensure(
        &cache,
        &old.kernel.series,
        &old.kernel.flavour,
        args.mirror.as_deref(),
    )?;
    if k.deb_sha256 != old.kernel.deb_sha256 && !args.force {
        return Err(usage(format!(
            "kernel package changed since the cell ran ({} {} then, {} {} now): use --force",
            old.kernel.package, old.kernel.package_version, k.package, k.package_version
        )));
    }
    // The recorded options go through the same parser as the command line:
    // a hand-edited result gets the same checks (ranges, names).
    let o = &old.options;
    let mut argv: Vec<String> = [
        "rerun",
        "--kernels",
        &old.kernel.series,
        "--flavour",
        &old.kernel.flavour,
        "--configs",
        &old.config.name,
        "--ops",
        &o.ops,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for (flag, value) in [
        ("--samples", o.samples.to_string()),
        ("--sample-ms", o.sample_ms.to_string()),
        ("--timeout", o.timeout_s.to_string()),
        ("--memory-mb", o.memory_mb.to_string()),
        ("--bench-dir", o.bench_dir.clone()),
        ("--cpus", o.cpus.to_string()),
        ("--jobs", "1".to_string()),
    ] {
        argv.extend([flag.to_string(), value]);
    }
    if o.trace {
        argv.push("--trace".into());
    }
    if let Some(n) = o.iterations {
        argv.extend(["--iterations".into(), n.to_string()]);
    }
    let mut run_args = RerunOptions::try_parse_from(&argv)
        .map_err(|e| {
            usage(format!(
                "{}: recorded options are not valid: {}",
                args.result.display(),
                e.to_string().lines().next().unwrap_or("")
            ))
        })?
        .run;
    run_args.config_dirs = args.config_dirs.clone();
    run_args.results = results;
    run_args.cache = args.cache.clone();
    run_args.mirror = args.mirror.clone();
    run(&run_args)
}

#[derive(clap::Parser)]
struct RerunOptions {
    #[command(flatten)]
    run: RunArgs,
}

/// `DIR/cells/X.json` -> DIR.
fn results_root_of(cell: &Path) -> Result<PathBuf> {
    let parent = cell.parent().unwrap_or(Path::new("."));
    if parent.file_name().is_some_and(|n| n == "cells") {
        return Ok(parent.parent().unwrap_or(Path::new(".")).to_path_buf());
    }
    Err(usage(format!(
        "{} is not in a results directory's cells/: give --results DIR",
        cell.display()
    )))
}

/// An absolute guest path without empty, `.` or `..` components.
fn absolute_dir(s: &str) -> std::result::Result<String, String> {
    let ok = s.starts_with('/')
        && s.len() > 1
        && s[1..]
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..");
    if ok {
        Ok(s.to_string())
    } else {
        Err("give an absolute directory such as /tmp/lsmpmon-bench (no '.', '..' or '//')".into())
    }
}

fn bench_args(args: &RunArgs) -> Vec<String> {
    let mut v = vec![
        "--dir".into(),
        args.bench_dir.clone(),
        "--ops".into(),
        args.ops.clone(),
        "--samples".into(),
        args.samples.to_string(),
        "--sample-ms".into(),
        args.sample_ms.to_string(),
    ];
    if let Some(n) = args.iterations {
        v.extend(["--iterations".into(), n.to_string()]);
    }
    v
}

fn machine(args: &RunArgs, cpus: u32) -> Machine {
    let mut m = Machine::deterministic(Duration::from_secs(args.timeout_s));
    m.memory_mb = args.memory_mb;
    m.cpus = cpus;
    if cpus > 1 {
        // QEMU 7.2 never brings a second vCPU up under -icount (see
        // vm::SMP_ICOUNT): such cells run in the emulation's real time.
        m.icount = "off".into();
    }
    m
}

fn run_options(args: &RunArgs, cpus: u32) -> RunOptions {
    let m = machine(args, cpus);
    RunOptions {
        ops: args.ops.clone(),
        samples: args.samples as usize,
        sample_ms: args.sample_ms as f64,
        iterations: args.iterations,
        trace: args.trace,
        memory_mb: m.memory_mb,
        accel: "tcg".into(),
        icount: m.icount,
        rtc: m.rtc,
        kaslr: m.kaslr,
        timeout_s: args.timeout_s,
        bench_dir: args.bench_dir.clone(),
        cpus,
    }
}

/// `seq`: the cell's place in this run, so that ids never collide.
fn base_result(
    k: &kernel::Kernel,
    c: &spec::Config,
    options: &RunOptions,
    seq: usize,
) -> CellResult {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let host = crate::model::provenance::collect();
    let safe_host: String = host
        .hostname
        .chars()
        .map(|ch| {
            if ch.is_ascii_alphanumeric() || ch == '-' {
                ch
            } else {
                '_'
            }
        })
        .collect();
    // The CPU count is part of the cell's identity (`__c2`); one CPU keeps
    // the names cells had before the option existed.
    let cpus = match options.cpus {
        1 => String::new(),
        n => format!("__c{n}"),
    };
    let id = format!(
        "{}-{}__{}{cpus}__{}-{}-{seq}-{}",
        k.series,
        k.flavour,
        c.name,
        now.as_millis(),
        std::process::id(),
        safe_host
    );
    CellResult {
        schema: CELL_SCHEMA.into(),
        id,
        status: CellStatus::Failed,
        reason: None,
        kernel: cell::kernel_ref(k),
        config: cell::config_ref(c),
        options: options.clone(),
        time: if options.icount == "off" {
            TimeMode::Real
        } else {
            TimeMode::Virtual
        },
        lsmpmon_version: env!("CARGO_PKG_VERSION").into(),
        hostname: host.hostname,
        host_cpu: crate::bench::cpu_model(),
        started_unix_s: now.as_secs(),
        wall_s: 0.0,
        stages: Vec::new(),
        bytes_added: 0,
        log_dir: String::new(),
        guest: None,
        web_server: None,
        compiler: None,
    }
}

#[cfg(test)]
mod tests {
    use super::{absolute_dir, cpu_counts};

    #[test]
    fn cpu_counts_are_checked_and_kept_once_in_order() {
        assert_eq!(cpu_counts("2,1,2").unwrap(), [2, 1]);
        for bad in ["0", "9", "two", "", ","] {
            assert!(cpu_counts(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bench_dir_is_an_absolute_plain_path() {
        for ok in ["/tmp/lsmpmon-bench", "/d1", "/d1/d2/d3/d4"] {
            assert_eq!(absolute_dir(ok).as_deref(), Ok(ok));
        }
        for bad in ["", "/", "tmp/x", "/a//b", "/a/../b", "/a/./b", "/a/"] {
            assert!(absolute_dir(bad).is_err(), "{bad:?}");
        }
    }
}
