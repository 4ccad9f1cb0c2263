//! A resolved plan written as a file: what its cells run (kernel packages,
//! configuration hashes, options, lsmpmon's version; their sha256 is the
//! plan id) and, per cell, one command that runs exactly it.
use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::files;
use crate::{
    plan::{self, Draws, Paths, Plan, MAX_CELLS},
    results::KernelRef,
};
use base::error::usage;
use model::{draw::MAX_DRAWS, options::LabOptions};
use vm::cache::sha256_hex;

/// 2: the options are the cells' own (`LabOptions`); flavour and draws are the matrix's.
pub const PLAN_SCHEMA: &str = "lsmpmon.lab-plan/2";
/// A plan of MAX_CELLS cells is ≈ 4 MiB.
const MAX_PLAN_BYTES: u64 = 16 << 20;

/// Everything that decides a cell's figures: its sha256 is the plan id.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Matrix {
    pub lsmpmon_version: String,
    pub flavour: String,
    pub kernels: Vec<KernelRef>,
    pub configs: Vec<ConfigId>,
    pub cpus: Vec<u32>,
    /// Layout draws per cell.
    pub draws: u32,
    /// With trace: only the first N draws traced (absent: every draw).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_draws: Option<u32>,
    pub options: LabOptions,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ConfigId {
    pub name: String,
    /// sha256 over the configuration directory (names and contents).
    pub hash: String,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
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

/// A plan as a file: `lab plan` writes it, `lab submit` submits its cells,
/// `lab cell` runs one of them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PlanFile {
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

impl PlanFile {
    /// The first 12 hex digits of the id: a name for directories and jobs.
    pub fn short_id(&self) -> &str {
        &self.id[..12.min(self.id.len())]
    }

    /// A cell runs its one draw, traced as the plan's first N are.
    pub fn draws_of(&self, cell: &PlanCell) -> Draws {
        Draws {
            first: cell.draw,
            count: 1,
            traced: self.matrix.trace_draws,
        }
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
        let plan: PlanFile = files::read_json_max(path, "a lab plan", MAX_PLAN_BYTES)?;
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

impl Matrix {
    /// The limits `lab run`'s options have, and a bounded number of cells.
    pub fn check(&self) -> std::result::Result<(), String> {
        let n = self.kernels.len() * self.configs.len() * self.cpus.len() * self.draws as usize;
        let traced_ok = self
            .trace_draws
            .is_none_or(|t| (1..=self.draws).contains(&t));
        let checks = [
            (
                !(1..=MAX_DRAWS).contains(&self.draws) || !traced_ok,
                format!(
                    "{} draws ({:?} traced): 1 to {MAX_DRAWS}",
                    self.draws, self.trace_draws
                ),
            ),
            (n == 0, "no cells".to_string()),
            (n > MAX_CELLS, format!("{n} cells, more than {MAX_CELLS}")),
            (
                self.cpus.iter().any(|c| !(1..=vm::MAX_CPUS).contains(c)),
                format!("CPU counts {:?}: 1 to {}", self.cpus, vm::MAX_CPUS),
            ),
        ];
        if let Some((_, why)) = checks.into_iter().find(|(bad, _)| *bad) {
            return Err(why);
        }
        self.options.check()?;
        if let Some(k) = self.kernels.iter().find(|k| !plan::known_series(&k.series)) {
            return Err(format!(
                "kernel series '{}' is not one lsmpmon fetches",
                k.series
            ));
        }
        bench::check_ops(&self.options.ops, self.options.iterations)
            .map_err(|e| format!("ops: {}", base::error::one_line(&e)))?;
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
        Ok(())
    }
}

/// The file of a resolved plan, its cells' commands naming `plan_path`
/// (where it will be written).
pub fn of_plan(plan: &Plan, plan_path: &Path) -> Result<PlanFile> {
    let matrix = Matrix {
        lsmpmon_version: env!("CARGO_PKG_VERSION").into(),
        flavour: plan.flavour.clone(),
        kernels: plan.kernels.iter().map(|k| k.reference()).collect(),
        configs: plan
            .configs
            .iter()
            .map(|c| ConfigId {
                name: c.name.clone(),
                hash: c.hash.clone(),
            })
            .collect(),
        cpus: cpus_of(plan),
        draws: plan.draws.count,
        trace_draws: plan.draws.traced,
        options: plan.options.clone(),
    };
    let paths = Paths {
        config_dirs: plan
            .paths
            .config_dirs
            .iter()
            .map(std::path::absolute)
            .collect::<std::io::Result<_>>()?,
        cache_dir: std::path::absolute(&plan.paths.cache_dir)?,
        mirror: plan.paths.mirror.clone(),
        results: std::path::absolute(&plan.paths.results)?,
    };
    let mut file = PlanFile {
        schema: PLAN_SCHEMA.into(),
        id: plan_id(&matrix)?,
        matrix,
        paths,
        cells: Vec::new(),
    };
    file.place(plan_path)?;
    Ok(file)
}

/// The plan's CPU counts in their order (a resolved plan's cells cover each).
fn cpus_of(plan: &Plan) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    for c in &plan.cells {
        if !out.contains(&c.cpus) {
            out.push(c.cpus);
        }
    }
    out
}

fn cells(matrix: &Matrix, paths: &Paths, plan_path: &Path) -> Result<Vec<PlanCell>> {
    let exe = std::env::current_exe()?;
    let draws = Draws {
        first: 0,
        count: matrix.draws,
        traced: matrix.trace_draws,
    };
    let planned = plan::cells(
        matrix.kernels.len(),
        matrix.configs.len(),
        &matrix.cpus,
        draws,
    );
    Ok(planned
        .iter()
        .enumerate()
        .map(|(index, c)| PlanCell {
            index,
            kernel: matrix.kernels[c.kernel].series.clone(),
            config: matrix.configs[c.config].name.clone(),
            cpus: c.cpus,
            memory_mb: matrix.options.memory_mb,
            draw: c.draw,
            command: command(&exe, plan_path, index, &paths.results),
        })
        .collect())
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

/// A plan of 6.1 and 6.12 × none and tomoyo × 1 and 2 CPUs (8 cells)
/// whose results go to `results`, kept at `plan_path`.
#[cfg(test)]
pub(crate) fn for_tests(results: &Path, plan_path: &Path) -> PlanFile {
    let matrix = tests::matrix();
    let paths = Paths {
        results: results.to_path_buf(),
        ..tests::paths()
    };
    PlanFile {
        schema: PLAN_SCHEMA.into(),
        id: plan_id(&matrix).unwrap(),
        cells: cells(&matrix, &paths, plan_path).unwrap(),
        matrix,
        paths,
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
            image: None,
        }
    }

    pub(super) fn matrix() -> Matrix {
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
            flavour: "cloud".into(),
            draws: 1,
            trace_draws: None,
            options: LabOptions {
                ops: "null,stat".into(),
                workload: None,
                samples: 3,
                sample_ms: 10.0,
                iterations: None,
                trace: false,
                bench_dir: "/tmp/lsmpmon-bench".into(),
                timeout_s: 1800,
                memory_mb: 1024,
            },
        }
    }

    pub(super) fn paths() -> Paths {
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
        m.draws = 3;
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
        assert_ne!(changed(&|m| m.trace_draws = Some(1)), base);
        assert_eq!(changed(&|_| ()), base);
    }

    /// `--trace-draws N` reaches each cell: draws below N are traced, the
    /// others bench only; without it every draw of a traced plan is.
    #[test]
    fn only_the_first_trace_draws_of_a_cell_are_traced() {
        let plan_of = |trace_draws| {
            let mut m = matrix();
            m.draws = 3;
            m.options.trace = true;
            m.trace_draws = trace_draws;
            PlanFile {
                schema: PLAN_SCHEMA.into(),
                id: plan_id(&m).unwrap(),
                cells: cells(&m, &paths(), Path::new("/p/plan.json")).unwrap(),
                matrix: m,
                paths: paths(),
            }
        };
        let traced = |plan: &PlanFile| -> Vec<bool> {
            plan.cells[..3]
                .iter()
                .map(|c| plan.draws_of(c).is_traced(true, c.draw))
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
        let mut plan = PlanFile {
            schema: PLAN_SCHEMA.into(),
            id: plan_id(&m).unwrap(),
            cells: cells(&m, &paths(), &path).unwrap(),
            matrix: m,
            paths: paths(),
        };
        plan.write(&path).unwrap();
        assert_eq!(PlanFile::read(&path).unwrap(), plan);
        plan.matrix.options.samples = 99;
        plan.write(&path).unwrap();
        let err = PlanFile::read(&path).unwrap_err().to_string();
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
        let good = PlanFile {
            schema: PLAN_SCHEMA.into(),
            id: plan_id(&m).unwrap(),
            cells: cells(&m, &paths(), &path).unwrap(),
            matrix: m,
            paths: paths(),
        };
        let refused = |f: &dyn Fn(&mut PlanFile), expect: &str| {
            let mut p = good.clone();
            f(&mut p);
            p.id = plan_id(&p.matrix).unwrap();
            p.write(&path).unwrap();
            let err = PlanFile::read(&path).unwrap_err().to_string();
            assert!(err.contains(expect), "{expect}: {err}");
        };
        refused(&|p| p.cells[0].cpus = 2, "cell 0 is 6.1 none (2 CPU");
        refused(&|p| p.cells[1].memory_mb = 1, "(2 CPU, 1 MiB, draw 0)");
        refused(&|p| p.cells[1].draw = 3, "draw 3) where");
        refused(&|p| p.matrix.draws = 0, "0 draws (None traced): 1 to 64");
        refused(&|p| p.matrix.cpus = vec![1, 1], "CPU count 1 twice");
        refused(
            &|p| p.matrix.configs[1].name = "none".into(),
            "configuration none twice",
        );
        refused(&|p| p.cells[1].index = 0, "cell 0 is");
        refused(&|p| p.cells[2].config = "nonexistent".into(), "nonexistent");
        refused(&|p| drop(p.cells.pop()), "7 cells where its matrix makes 8");
        refused(&|p| p.matrix.options.memory_mb = 1, "memory 1 MiB");
        refused(
            &|p| p.matrix.kernels[0].series = "/tmp/own.deb".into(),
            "kernel series '/tmp/own.deb' is not one lsmpmon fetches",
        );
        refused(&|p| p.matrix.options.ops = "bogus".into(), "ops: ");
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
        assert_eq!(PlanFile::read(&path).unwrap(), good);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
