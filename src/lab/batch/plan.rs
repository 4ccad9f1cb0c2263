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
/// A plan of MAX_CELLS cells is ≈ 4 MiB.
const MAX_PLAN_BYTES: u64 = 16 << 20;

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
    /// Layout draws per cell (absent: one, as plans made before draws).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub draws: u32,
    /// With trace: only the first N draws traced (absent: every draw).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_draws: Option<u32>,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn is_zero(n: &u32) -> bool {
    *n == 0
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
    /// Its layout draw (0 to the matrix's draws − 1).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub draw: u32,
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

impl PlanCell {
    /// `6.1 none (1 CPU, 1024 MiB, draw 0)`.
    pub fn describe(&self) -> String {
        format!(
            "{} {} ({} CPU, {} MiB, draw {})",
            self.kernel, self.config, self.cpus, self.memory_mb, self.draw
        )
    }
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
        let plan: Plan = files::read_json_max(path, "a lab plan", MAX_PLAN_BYTES)?;
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
        plan.check().map_err(|why| {
            usage(format!(
                "{}: {why} (edited?): make a new plan with `lab plan`",
                path.display()
            ))
        })?;
        Ok(plan)
    }

    /// The cells are the matrix's, in its order (the id covers the matrix
    /// only: a cell edited on its own would run under the plan's id), and
    /// the matrix is within what `lab run` accepts.
    fn check(&self) -> std::result::Result<(), String> {
        self.matrix.check()?;
        let expected =
            cells(&self.matrix, &self.paths, Path::new("")).map_err(|e| e.to_string())?;
        if expected.len() != self.cells.len() {
            return Err(format!(
                "{} cells where its matrix makes {}",
                self.cells.len(),
                expected.len()
            ));
        }
        let key = |c: &PlanCell| {
            let k = (c.kernel.clone(), c.config.clone());
            (c.index, k, c.cpus, c.memory_mb, c.draw)
        };
        let bad = expected
            .iter()
            .zip(&self.cells)
            .find(|(e, c)| key(e) != key(c));
        match bad {
            Some((e, c)) => Err(format!(
                "cell {} is {} where its matrix makes {}",
                c.index,
                c.describe(),
                e.describe()
            )),
            None => Ok(()),
        }
    }
}

/// More cells than this is not a lab a machine or a cluster finishes.
pub const MAX_CELLS: usize = 10_000;

impl Matrix {
    /// The limits `lab run`'s options have, and a bounded number of cells.
    pub fn check(&self) -> std::result::Result<(), String> {
        let o = &self.options;
        let n = self.kernels.len() * self.configs.len() * self.cpus.len() * o.draws as usize;
        let checks = [
            (
                !(1..=crate::model::draw::MAX_DRAWS).contains(&o.draws),
                format!("{} draws: 1 to {}", o.draws, crate::model::draw::MAX_DRAWS),
            ),
            (n == 0, "no cells".to_string()),
            (n > MAX_CELLS, format!("{n} cells, more than {MAX_CELLS}")),
            (
                self.cpus.iter().any(|c| !(1..=8).contains(c)),
                format!("CPU counts {:?}: 1 to 8", self.cpus),
            ),
            (
                !(256..=65_536).contains(&o.memory_mb),
                format!("memory {} MiB: 256 to 65 536", o.memory_mb),
            ),
            (
                !(1..=1000).contains(&o.samples),
                format!("{} samples: 1 to 1000", o.samples),
            ),
            (
                !(1..=10_000).contains(&o.sample_ms),
                format!("sample {} ms: 1 to 10 000", o.sample_ms),
            ),
            (
                !(10..=86_400).contains(&o.timeout_s),
                format!("timeout {} s: 10 to 86 400", o.timeout_s),
            ),
        ];
        if let Some((_, why)) = checks.into_iter().find(|(bad, _)| *bad) {
            return Err(why);
        }
        let twice = |names: Vec<String>| {
            let mut seen = std::collections::BTreeSet::new();
            names.into_iter().find(|n| !seen.insert(n.clone()))
        };
        let kernels = self.kernels.iter().map(|k| k.series.clone()).collect();
        let configs = self.configs.iter().map(|c| c.name.clone()).collect();
        let cpus = self.cpus.iter().map(|c| c.to_string()).collect();
        for (what, names) in [
            ("kernel", kernels),
            ("configuration", configs),
            ("CPU count", cpus),
        ] {
            if let Some(n) = twice(names) {
                return Err(format!("{what} {n} twice: its cells would run twice"));
            }
        }
        crate::lab::args::bench_dir(&o.bench_dir).map_err(|e| format!("bench directory: {e}"))?;
        Ok(())
    }
}

/// Resolves `args` as `lab run` does (names, kernels fetched into the
/// cache), cells in `lab run`'s order: kernel, configuration, CPU count.
/// `plan_path` is where the plan will be written (the commands name it).
pub fn make(args: &RunArgs, plan_path: &Path) -> Result<Plan> {
    let m = matrix::resolve(args)?;
    let n = m.kernels.len() * m.configs.len() * m.cpus.len() * args.draws as usize;
    if n > MAX_CELLS {
        return Err(usage(format!(
            "{n} cells (kernels × configurations × CPU counts × draws): at most {MAX_CELLS} a plan; split it"
        )));
    }
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
        draws: args.draws,
        trace_draws: args.trace_draws,
    }
}

fn cells(matrix: &Matrix, paths: &Paths, plan_path: &Path) -> Result<Vec<PlanCell>> {
    let exe = std::env::current_exe()?;
    let mut out = Vec::new();
    for k in &matrix.kernels {
        for c in &matrix.configs {
            for (cpus, draw) in matrix
                .cpus
                .iter()
                .flat_map(|&n| (0..matrix.options.draws).map(move |d| (n, d)))
            {
                let index = out.len();
                out.push(PlanCell {
                    index,
                    kernel: k.series.clone(),
                    config: c.name.clone(),
                    cpus,
                    memory_mb: matrix.options.memory_mb,
                    draw,
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
        trace_draws: o.trace_draws,
        bench_dir: o.bench_dir.clone(),
        jobs: Some(1),
        timeout_s: o.timeout_s,
        results: results.to_path_buf(),
        memory_mb: cell.memory_mb,
        draws: 1,
        first_draw: cell.draw,
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
                draws: 1,
                trace_draws: None,
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
        assert!(cells.iter().all(|c| c.draw == 0));
        // Draws are the innermost dimension: one cell each.
        let mut m = matrix();
        m.options.draws = 3;
        let drawn = super::cells(&m, &paths(), Path::new("/p/plan.json")).unwrap();
        assert_eq!(drawn.len(), 24);
        let first: Vec<(u32, u32)> = drawn[..4].iter().map(|c| (c.cpus, c.draw)).collect();
        assert_eq!(first, [(1, 0), (1, 1), (1, 2), (2, 0)]);
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
        assert_ne!(changed(&|m| m.options.trace_draws = Some(1)), base);
        assert_eq!(changed(&|_| ()), base);
    }

    /// `--trace-draws N` reaches each cell: draws below N are traced, the
    /// others bench only; without it every draw of a traced plan is.
    #[test]
    fn only_the_first_trace_draws_of_a_cell_are_traced() {
        let plan_of = |trace_draws| {
            let mut m = matrix();
            m.options.draws = 3;
            m.options.trace = true;
            m.options.trace_draws = trace_draws;
            Plan {
                schema: PLAN_SCHEMA.into(),
                id: plan_id(&m).unwrap(),
                cells: cells(&m, &paths(), Path::new("/p/plan.json")).unwrap(),
                matrix: m,
                paths: paths(),
            }
        };
        let traced = |plan: &Plan| -> Vec<bool> {
            plan.cells[..3]
                .iter()
                .map(|c| run_args(plan, c, Path::new("/r"), Path::new("/c")).traced(c.draw))
                .collect()
        };
        assert_eq!(traced(&plan_of(Some(1))), [true, false, false]);
        assert_eq!(traced(&plan_of(Some(2))), [true, true, false]);
        assert_eq!(traced(&plan_of(None)), [true, true, true]);
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

    /// A plan whose cells were edited (each of the ways issue 34 found), or
    /// whose matrix was edited and re-hashed beyond the limits.
    #[test]
    fn a_plan_with_edited_cells_or_limits_is_refused() {
        let dir = std::env::temp_dir().join(format!("lsmpmon-plan-cells-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("plan.json");
        let m = matrix();
        let good = Plan {
            schema: PLAN_SCHEMA.into(),
            id: plan_id(&m).unwrap(),
            cells: cells(&m, &paths(), &path).unwrap(),
            matrix: m,
            paths: paths(),
        };
        let refused = |f: &dyn Fn(&mut Plan), expect: &str| {
            let mut p = good.clone();
            f(&mut p);
            p.id = plan_id(&p.matrix).unwrap();
            p.write(&path).unwrap();
            let err = Plan::read(&path).unwrap_err().to_string();
            assert!(err.contains(expect), "{expect}: {err}");
        };
        refused(&|p| p.cells[0].cpus = 2, "cell 0 is 6.1 none (2 CPU");
        refused(&|p| p.cells[1].memory_mb = 1, "(2 CPU, 1 MiB, draw 0)");
        refused(&|p| p.cells[1].draw = 3, "draw 3) where");
        refused(&|p| p.matrix.options.draws = 0, "0 draws: 1 to 64");
        refused(&|p| p.matrix.cpus = vec![1, 1], "CPU count 1 twice");
        refused(
            &|p| p.matrix.configs[1].name = "none".into(),
            "configuration none twice",
        );
        refused(&|p| p.cells[1].index = 0, "cell 0 is");
        refused(&|p| p.cells[2].config = "nonexistent".into(), "nonexistent");
        refused(&|p| drop(p.cells.pop()), "7 cells where its matrix makes 8");
        refused(&|p| p.matrix.options.memory_mb = 1, "memory 1 MiB");
        refused(&|p| p.matrix.cpus = vec![0], "CPU counts");
        refused(
            &|p| p.matrix.options.bench_dir = "/proc/x".into(),
            "guest mounts",
        );
        refused(
            &|p| {
                p.matrix.cpus = (1..=8).collect();
                p.matrix.configs = (0..1300)
                    .map(|i| ConfigId {
                        name: format!("c{i}"),
                        hash: String::new(),
                    })
                    .collect();
            },
            "20800 cells, more than 10000",
        );
        good.write(&path).unwrap();
        assert_eq!(Plan::read(&path).unwrap(), good);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
