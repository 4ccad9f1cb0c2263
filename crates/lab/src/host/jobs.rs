//! The cells of a matrix, decided before any boots: a job for each cell a
//! guest runs, and at once a result for each a kernel cannot run.
use std::{
    path::Path,
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use anyhow::Result;

use crate::guest_plan::USER_WORKLOAD;
use crate::{
    guest_plan::GuestPlan,
    host::buildkit::{self, BuildKit},
    host::cell::{self, CellJob},
    host::kconfig::KernelConfig,
    host::nginx::{self, Nginx},
    plan::{Plan, PlannedCell, Recorded},
    results::{CellResult, CellStatus, ResultsDir, RunOptions, CELL_SCHEMA},
    spec,
};
use base::error::usage;
use model::bench::WorkloadProgram;
use model::options::LabOptions;
use vm::{kernel, Machine};

/// The workload's own programs, fetched once per run: nginx for the `web`
/// ops, the compiler and sources for `build`.
pub struct Extras {
    web: bool,
    nginx: Option<Nginx>,
    kit: Option<BuildKit>,
    /// The user's --workload program: its bytes, read once and checked
    /// against the sha256 the run recorded (what every guest gets).
    workload: Option<Arc<[u8]>>,
}

impl Extras {
    pub fn ensure(options: &LabOptions, cache: &Path) -> Result<Self> {
        let ops = options.ops.as_str();
        let workload = options
            .workload
            .as_ref()
            .map(checked_workload)
            .transpose()?;
        let web = bench::needs_web_server(ops)?;
        let nginx = if web {
            Some(nginx::ensure(cache)?)
        } else {
            None
        };
        let kit = if bench::needs_build_kit(ops)? {
            Some(buildkit::ensure(cache)?)
        } else {
            None
        };
        Ok(Self {
            web,
            nginx,
            kit,
            workload,
        })
    }
}

/// The --workload program, if it is still what the run recorded (a plan
/// file or a rerun may come long after).
fn checked_workload(w: &WorkloadProgram) -> Result<Arc<[u8]>> {
    let bytes = std::fs::read(&w.path).map_err(|e| usage(format!("--workload {}: {e}", w.path)))?;
    let now = base::digest::sha256_hex(&bytes);
    if now != w.sha256 {
        return Err(usage(format!(
            "--workload {} changed since the run recorded it (sha256 {} now, {} then): restore it or start a new run",
            w.path, now, w.sha256
        )));
    }
    Ok(bytes.into())
}

/// The jobs to boot, with the result each starts from, and the cells
/// decided without a guest (already written).
pub struct Cells {
    pub jobs: Vec<(CellJob, CellResult)>,
    pub decided: Vec<CellResult>,
}

/// Each planned cell as a job, or as a result when its kernel cannot run it.
pub fn lay_out(plan: &Plan, extras: &Extras, dir: &ResultsDir) -> Result<Cells> {
    let kconfs = plan
        .kernels
        .iter()
        .map(|k| KernelConfig::read(&k.config, &k.release))
        .collect::<Result<Vec<_>>>()?;
    let mut cells = Cells {
        jobs: Vec::new(),
        decided: Vec::new(),
    };
    let mut untraced: Vec<usize> = Vec::new();
    for cell in &plan.cells {
        let (k, kconf) = (&plan.kernels[cell.kernel], &kconfs[cell.kernel]);
        let c = &plan.configs[cell.config];
        let machine = machine_of(plan, cell, c);
        let seq = cells.jobs.len() + cells.decided.len();
        // A kernel without the framework has no hook to trace: bench only.
        let traced = plan.traced(cell.draw) && kconf.enabled("CONFIG_SECURITY");
        if plan.traced(cell.draw) && !traced && !untraced.contains(&cell.kernel) {
            untraced.push(cell.kernel);
            base::say!(
                "lsmpmon: {} has no LSM framework (built without CONFIG_SECURITY): its cells run untraced",
                k.series
            );
        }
        let options = run_options(&plan.options, &machine, traced);
        let mut base = base_result(k, c, &options, seq);
        base.plan = plan.tag.plan.clone();
        base.task = plan.tag.task.clone();
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
                let guest = GuestPlan {
                    config: c.name.clone(),
                    spec: c.spec.clone(),
                    matrix: plan.access.clone(),
                    bench_args: bench_args(&plan.options),
                    trace: traced,
                    expected_lsms: kconf.expected_lsms(c.spec.lsm.as_deref()),
                    web_server: extras.web,
                };
                cells.jobs.push((job(guest, k, c, machine, extras), base));
            }
        }
    }
    Ok(cells)
}

/// A run's guest boots its draw (with a TPM where the configuration needs
/// one); a rerun's boots as its cell recorded.
fn machine_of(plan: &Plan, cell: &PlannedCell, c: &spec::Config) -> Machine {
    let mut m = machine(&plan.options, cell.cpus, plan.recorded.as_ref());
    if plan.recorded.is_none() {
        m.rtc = model::draw::rtc_of_draw(cell.draw);
        if c.spec.proof.tpm {
            m = m.with_tpm();
        }
    }
    m
}

fn job(
    plan: GuestPlan,
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
        user_workload: extras.workload.clone(),
    }
}

fn bench_args(args: &LabOptions) -> Vec<String> {
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
    if let Some(w) = &args.workload {
        v.extend([
            "--workload".into(),
            USER_WORKLOAD.into(),
            "--workload-timeout".into(),
            w.timeout_s.to_string(),
        ]);
    }
    v
}

pub fn machine(args: &LabOptions, cpus: u32, recorded: Option<&Recorded>) -> Machine {
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

/// What the cell records: the run's options, this draw's tracing, its guest.
pub fn run_options(args: &LabOptions, m: &Machine, traced: bool) -> RunOptions {
    RunOptions {
        lab: LabOptions {
            trace: traced,
            memory_mb: m.memory_mb,
            ..args.clone()
        },
        accel: "tcg".into(),
        icount: m.icount.clone(),
        rtc: m.rtc.clone(),
        kaslr: m.kaslr,
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
    let host = model::provenance::collect();
    CellResult {
        schema: CELL_SCHEMA.into(),
        id: cell_id(k, c, options.cpus, now, seq, &host.hostname),
        status: CellStatus::Failed,
        reason: None,
        kernel: cell::kernel_ref(k),
        config: cell::config_ref(c),
        options: options.clone(),
        time: if options.icount == "off" {
            model::TimeMode::Real
        } else {
            model::TimeMode::Virtual
        },
        lsmpmon_version: env!("CARGO_PKG_VERSION").into(),
        lsmpmon_commit: base::version::commit().map(String::from),
        lsmpmon_sha256: base::version::executable_sha256().map(String::from),
        hostname: host.hostname,
        host_cpu: bench::cpu_model(),
        started_unix_s: now.as_secs(),
        wall_s: 0.0,
        stages: Vec::new(),
        bytes_added: 0,
        log_dir: String::new(),
        guest: None,
        web_server: None,
        compiler: None,
        plan: None,
        task: None,
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
