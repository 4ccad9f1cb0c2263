//! The cells of a matrix, decided before any boots: a job for each cell a
//! guest runs, and at once a result for each a kernel cannot run.
use std::{
    path::Path,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use anyhow::Result;

use super::{
    args::RunArgs,
    buildkit::{self, BuildKit},
    cell::{self, CellJob},
    guest_plan::Plan,
    matrix::Matrix,
    nginx::{self, Nginx},
    plan::KernelConfig,
    results::{CellResult, CellStatus, ResultsDir, RunOptions, CELL_SCHEMA},
    spec,
};
use crate::vm::{kernel, Machine};

/// The workload's own programs, fetched once per run: nginx for the `web`
/// ops, the compiler and sources for `build`.
pub struct Extras {
    web: bool,
    nginx: Option<Nginx>,
    kit: Option<BuildKit>,
}

impl Extras {
    pub fn ensure(ops: &str, cache: &Path) -> Result<Self> {
        let web = crate::bench::needs_web_server(ops)?;
        let nginx = if web {
            Some(nginx::ensure(cache)?)
        } else {
            None
        };
        let kit = if crate::bench::needs_build_kit(ops)? {
            Some(buildkit::ensure(cache)?)
        } else {
            None
        };
        Ok(Self { web, nginx, kit })
    }
}

/// A rerun's guest settings, as its cell recorded them (a run's come from
/// `Machine::deterministic`).
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub icount: String,
    pub rtc: String,
    pub kaslr: bool,
}

/// The jobs to boot, with the result each starts from, and the cells
/// decided without a guest (already written).
pub struct Cells {
    pub jobs: Vec<(CellJob, CellResult)>,
    pub decided: Vec<CellResult>,
}

/// Fetches each kernel and lays out its cells, kernel by kernel.
pub fn plan(
    args: &RunArgs,
    m: &Matrix,
    extras: &Extras,
    dir: &ResultsDir,
    recorded: Option<&Recorded>,
) -> Result<Cells> {
    let cache = args.cache.path();
    let mut cells = Cells {
        jobs: Vec::new(),
        decided: Vec::new(),
    };
    for series in &m.kernels {
        let k = kernel::ensure(&cache, series, &args.flavour, args.mirror.as_deref())?;
        let kconf = KernelConfig::read(&k.config, &k.release)?;
        let (first, n) = (args.first_draw, args.draws);
        for (c, &cpus, draw) in m.configs.iter().flat_map(|c| {
            m.cpus
                .iter()
                .flat_map(move |cpus| (first..first + n).map(move |d| (c, cpus, d)))
        }) {
            let mut machine = machine(args, cpus, recorded);
            if recorded.is_none() {
                machine.rtc = crate::model::draw::rtc_of_draw(draw);
            }
            if recorded.is_none() && c.spec.proof.tpm {
                machine = machine.with_tpm();
            }
            let seq = cells.jobs.len() + cells.decided.len();
            let mut options = run_options(args, &machine);
            options.trace = args.traced(draw);
            let mut base = base_result(&k, c, &options, seq);
            base.web_server = extras.nginx.as_ref().map(|n| n.package.clone());
            base.compiler = extras.kit.as_ref().map(|k| k.compiler.clone());
            match kconf.not_applicable(c) {
                Some(why) => {
                    base.status = CellStatus::NotApplicable;
                    base.reason = Some(why);
                    dir.write_cell(&base)?;
                    cells.decided.push(base);
                }
                None => {
                    let plan = Plan {
                        config: c.name.clone(),
                        spec: c.spec.clone(),
                        matrix: m.access.clone(),
                        bench_args: bench_args(args),
                        trace: args.traced(draw),
                        expected_lsms: kconf.expected_lsms(c.spec.lsm.as_deref()),
                        web_server: extras.web,
                    };
                    cells.jobs.push((job(plan, &k, c, machine, extras), base));
                }
            }
        }
    }
    Ok(cells)
}

fn job(
    plan: Plan,
    k: &kernel::Kernel,
    c: &spec::Config,
    machine: Machine,
    extras: &Extras,
) -> CellJob {
    CellJob {
        plan,
        kernel: k.clone(),
        config: c.clone(),
        machine,
        nginx: extras.nginx.as_ref().map(|n| n.binary.clone()),
        build_files: extras
            .kit
            .as_ref()
            .map(|k| k.files.clone())
            .unwrap_or_default(),
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

pub fn machine(args: &RunArgs, cpus: u32, recorded: Option<&Recorded>) -> Machine {
    let mut m = Machine::deterministic(Duration::from_secs(args.timeout_s));
    m.memory_mb = args.memory_mb;
    m.cpus = cpus;
    if let Some(r) = recorded {
        m.icount = r.icount.clone();
        m.rtc = r.rtc.clone();
        m.kaslr = r.kaslr;
    }
    m
}

pub fn run_options(args: &RunArgs, m: &Machine) -> RunOptions {
    RunOptions {
        ops: args.ops.clone(),
        samples: args.samples as usize,
        sample_ms: args.sample_ms as f64,
        iterations: args.iterations,
        trace: args.trace,
        memory_mb: m.memory_mb,
        accel: "tcg".into(),
        icount: m.icount.clone(),
        rtc: m.rtc.clone(),
        kaslr: m.kaslr,
        timeout_s: args.timeout_s,
        bench_dir: args.bench_dir.clone(),
        cpus: m.cpus,
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
    CellResult {
        schema: CELL_SCHEMA.into(),
        id: cell_id(k, c, options.cpus, now, seq, &host.hostname),
        status: CellStatus::Failed,
        reason: None,
        kernel: cell::kernel_ref(k),
        config: cell::config_ref(c),
        options: options.clone(),
        time: if options.icount == "off" {
            crate::model::TimeMode::Real
        } else {
            crate::model::TimeMode::Virtual
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
        plan: None,
    }
}

/// `<series>-<flavour>__<config>[__c<cpus>]__<ms>-<pid>-<seq>-<host>`.
fn cell_id(
    k: &kernel::Kernel,
    c: &spec::Config,
    cpus: u32,
    now: Duration,
    seq: usize,
    hostname: &str,
) -> String {
    let safe_host: String = hostname
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
    let cpus = match cpus {
        1 => String::new(),
        n => format!("__c{n}"),
    };
    format!(
        "{}-{}__{}{cpus}__{}-{}-{seq}-{}",
        k.series,
        k.flavour,
        c.name,
        now.as_millis(),
        std::process::id(),
        safe_host
    )
}
