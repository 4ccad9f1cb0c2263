//! A matrix resolved into its cells, written as a plan: what the cells run
//! (kernel packages, configuration hashes, options, lsmpmon's version; its
//! sha256 is the plan id) and, per cell, one command that runs exactly it.
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::files;
use crate::base::error::usage;
use crate::lab::{args::RunArgs, matrix, results::KernelRef};
use crate::vm::{cache::sha256_hex, kernel};

pub const PLAN_SCHEMA: &str = "lsmpmon.lab-plan/1";

/// Everything that decides a cell's figures: its sha256 is the plan id.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Matrix {
    pub lsmpmon_version: String,
    pub kernels: Vec<KernelRef>,
    pub configs: Vec<ConfigId>,
    pub cpus: Vec<u32>,
    pub options: Options,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ConfigId {
    pub name: String,
    /// sha256 over the configuration directory (names and contents).
    pub hash: String,
}

/// The run options of `lab run` that reach a cell.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Options {
    pub flavour: String,
    pub ops: String,
    pub samples: u32,
    pub sample_ms: u32,
    pub iterations: Option<u64>,
    pub trace: bool,
    pub bench_dir: String,
    pub timeout_s: u64,
    pub memory_mb: u32,
}

/// Where the cells find their inputs and put their results: not part of
/// the id (the same matrix on another machine is the same plan).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Paths {
    pub config_dirs: Vec<PathBuf>,
    pub cache_dir: PathBuf,
    pub mirror: Option<String>,
    pub results: PathBuf,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PlanCell {
    pub index: usize,
    pub kernel: String,
    pub config: String,
    /// The guest's CPUs and memory: what a task asks its engine for.
    pub cpus: u32,
    pub memory_mb: u32,
    /// Runs exactly this cell into the plan's results directory.
    pub command: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Plan {
    pub schema: String,
    pub id: String,
    pub matrix: Matrix,
    pub paths: Paths,
    pub cells: Vec<PlanCell>,
}

impl Plan {
    /// The first 12 hex digits of the id: a name for directories and jobs.
    pub fn short_id(&self) -> &str {
        &self.id[..12.min(self.id.len())]
    }

    pub fn kernel(&self, series: &str) -> Option<&KernelRef> {
        self.matrix.kernels.iter().find(|k| k.series == series)
    }

    /// The cells' commands for the plan kept at `plan_path`.
    pub fn place(&mut self, plan_path: &Path) -> Result<()> {
        self.cells = cells(&self.matrix, &self.paths, &std::path::absolute(plan_path)?)?;
        Ok(())
    }

    pub fn write(&self, path: &Path) -> Result<()> {
        files::write_json(path, self)
    }

    /// A plan as written, refused when its schema is not this one's or its
    /// matrix no longer hashes to its id (edited by hand).
    pub fn read(path: &Path) -> Result<Self> {
        let plan: Plan = files::read_json(path, "a lab plan")?;
        if plan.schema != PLAN_SCHEMA {
            return Err(usage(format!(
                "{}: schema {} (this lsmpmon reads {PLAN_SCHEMA})",
                path.display(),
                plan.schema
            )));
        }
        if plan_id(&plan.matrix)? != plan.id {
            return Err(usage(format!(
                "{}: its matrix does not hash to its id (edited?): make a new plan with `lab plan`",
                path.display()
            )));
        }
        Ok(plan)
    }
}

/// Resolves `args` as `lab run` does (names, kernels fetched into the
/// cache), cells in `lab run`'s order: kernel, configuration, CPU count.
/// `plan_path` is where the plan will be written (the commands name it).
pub fn make(args: &RunArgs, plan_path: &Path) -> Result<Plan> {
    let m = matrix::resolve(args)?;
    let cache_dir = std::path::absolute(args.cache.path())?;
    let mut kernels = Vec::new();
    for series in &m.kernels {
        let k = kernel::ensure(&cache_dir, series, &args.flavour, args.mirror.as_deref())?;
        kernels.push(k.reference());
    }
    let matrix = Matrix {
        lsmpmon_version: env!("CARGO_PKG_VERSION").into(),
        kernels,
        configs: m
            .configs
            .iter()
            .map(|c| ConfigId {
                name: c.name.clone(),
                hash: c.hash.clone(),
            })
            .collect(),
        cpus: m.cpus.clone(),
        options: options(args),
    };
    let paths = Paths {
        config_dirs: args
            .config_dirs
            .iter()
            .map(std::path::absolute)
            .collect::<std::io::Result<_>>()?,
        cache_dir,
        mirror: args.mirror.clone(),
        results: std::path::absolute(&args.results)?,
    };
    let mut plan = Plan {
        schema: PLAN_SCHEMA.into(),
        id: plan_id(&matrix)?,
        matrix,
        paths,
        cells: Vec::new(),
    };
    plan.place(plan_path)?;
    Ok(plan)
}

fn options(args: &RunArgs) -> Options {
    Options {
        flavour: args.flavour.clone(),
        ops: args.ops.clone(),
        samples: args.samples,
        sample_ms: args.sample_ms,
        iterations: args.iterations,
        trace: args.trace,
        bench_dir: args.bench_dir.clone(),
        timeout_s: args.timeout_s,
        memory_mb: args.memory_mb,
    }
}

fn cells(matrix: &Matrix, paths: &Paths, plan_path: &Path) -> Result<Vec<PlanCell>> {
    let exe = std::env::current_exe()?;
    let mut out = Vec::new();
    for k in &matrix.kernels {
        for c in &matrix.configs {
            for &cpus in &matrix.cpus {
                let index = out.len();
                out.push(PlanCell {
                    index,
                    kernel: k.series.clone(),
                    config: c.name.clone(),
                    cpus,
                    memory_mb: matrix.options.memory_mb,
                    command: command(&exe, plan_path, index, &paths.results),
                });
            }
        }
    }
    Ok(out)
}

pub fn command(exe: &Path, plan_path: &Path, index: usize, results: &Path) -> Vec<String> {
    vec![
        exe.display().to_string(),
        "lab".into(),
        "cell".into(),
        plan_path.display().to_string(),
        index.to_string(),
        "--results".into(),
        results.display().to_string(),
    ]
}

pub fn plan_id(matrix: &Matrix) -> Result<String> {
    Ok(sha256_hex(&serde_json::to_vec(matrix)?))
}

/// The arguments of `lab run` for one cell of the plan, into `results`.
pub fn run_args(plan: &Plan, cell: &PlanCell, results: &Path, cache_dir: &Path) -> RunArgs {
    let o = &plan.matrix.options;
    RunArgs {
        kernels: cell.kernel.clone(),
        flavour: o.flavour.clone(),
        configs: cell.config.clone(),
        config_dirs: plan.paths.config_dirs.clone(),
        cpus: cell.cpus.to_string(),
        ops: o.ops.clone(),
        samples: o.samples,
        sample_ms: o.sample_ms,
        iterations: o.iterations,
        trace: o.trace,
        bench_dir: o.bench_dir.clone(),
        jobs: Some(1),
        timeout_s: o.timeout_s,
        results: results.to_path_buf(),
        memory_mb: cell.memory_mb,
        cache: crate::vm::CacheDir {
            cache_dir: Some(cache_dir.to_path_buf()),
        },
        mirror: plan.paths.mirror.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(series: &str, sha: &str) -> KernelRef {
        KernelRef {
            series: series.into(),
            flavour: "cloud".into(),
            package: format!("linux-image-{series}"),
            package_version: "1".into(),
            deb_sha256: sha.into(),
            release: format!("{series}.0-1-cloud-amd64"),
            packages: Vec::new(),
            image_sha256: String::new(),
            path: None,
        }
    }

    fn matrix() -> Matrix {
        Matrix {
            lsmpmon_version: "0.0.0".into(),
            kernels: vec![kernel("6.1", "aa"), kernel("6.12", "bb")],
            configs: ["none", "tomoyo"]
                .map(|n| ConfigId {
                    name: n.into(),
                    hash: format!("{n}-hash"),
                })
                .into(),
            cpus: vec![1, 2],
            options: Options {
                flavour: "cloud".into(),
                ops: "null,stat".into(),
                samples: 3,
                sample_ms: 10,
                iterations: None,
                trace: false,
                bench_dir: "/tmp/lsmpmon-bench".into(),
                timeout_s: 1800,
                memory_mb: 1024,
            },
        }
    }

    fn paths() -> Paths {
        Paths {
            config_dirs: Vec::new(),
            cache_dir: "/c".into(),
            mirror: None,
            results: "/r".into(),
        }
    }

    #[test]
    fn cells_come_in_lab_run_order_each_with_its_own_command() {
        let cells = cells(&matrix(), &paths(), Path::new("/p/plan.json")).unwrap();
        let order: Vec<(&str, &str, u32)> = cells
            .iter()
            .map(|c| (c.kernel.as_str(), c.config.as_str(), c.cpus))
            .collect();
        assert_eq!(
            order[..3],
            [("6.1", "none", 1), ("6.1", "none", 2), ("6.1", "tomoyo", 1)]
        );
        assert_eq!(order.len(), 8);
        assert_eq!(cells[5].index, 5);
        assert_eq!(
            cells[5].command[1..],
            ["lab", "cell", "/p/plan.json", "5", "--results", "/r"]
        );
    }

    #[test]
    fn the_id_changes_with_anything_that_decides_a_figure_and_nothing_else() {
        let base = plan_id(&matrix()).unwrap();
        assert_eq!(base.len(), 64);
        let changed = |f: &dyn Fn(&mut Matrix)| {
            let mut m = matrix();
            f(&mut m);
            plan_id(&m).unwrap()
        };
        assert_ne!(changed(&|m| m.kernels[1].deb_sha256 = "cc".into()), base);
        assert_ne!(changed(&|m| m.configs[0].hash = "x".into()), base);
        assert_ne!(changed(&|m| m.options.samples = 4), base);
        assert_ne!(changed(&|m| m.options.bench_dir = "/tmp/x".into()), base);
        assert_ne!(changed(&|m| m.lsmpmon_version = "0.0.1".into()), base);
        assert_eq!(changed(&|_| ()), base);
    }

    #[test]
    fn an_edited_plan_is_refused() {
        let dir = std::env::temp_dir().join(format!("lsmpmon-plan-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("plan.json");
        let m = matrix();
        let mut plan = Plan {
            schema: PLAN_SCHEMA.into(),
            id: plan_id(&m).unwrap(),
            cells: cells(&m, &paths(), &path).unwrap(),
            matrix: m,
            paths: paths(),
        };
        plan.write(&path).unwrap();
        assert_eq!(Plan::read(&path).unwrap(), plan);
        plan.matrix.options.samples = 99;
        plan.write(&path).unwrap();
        let err = Plan::read(&path).unwrap_err().to_string();
        assert!(err.contains("does not hash to its id"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
