//! The one plan the lab runs. `resolve` is the only place that checks what a
//! run asks for, loads and hashes its configurations and fetches its
//! kernels; `execute` runs a plan's cells and never sees how it was asked.
//! `lab run` resolves and executes; `lab plan` resolves and writes;
//! `lab cell` and `lab rerun` make the plan of one cell from a plan file or
//! a cell's own record and execute it.
use std::path::PathBuf;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::spec;
use base::error::usage;
use model::{draw::MAX_DRAWS, options::LabOptions};
use vm::{self, kernel, kernel::Kernel};

/// More cells than this is not a lab a machine or a cluster finishes.
pub const MAX_CELLS: usize = 10_000;

/// What a run asks for, as typed lists (the command line splits them).
#[derive(Debug, Clone)]
pub struct Request {
    pub kernels: Vec<String>,
    pub flavour: String,
    pub configs: Vec<String>,
    pub cpus: Vec<u32>,
    pub options: LabOptions,
    pub draws: Draws,
    pub paths: Paths,
}

/// Layout draws per cell, and how many of them are traced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Draws {
    /// The first draw's number (a plan's cell runs its one draw).
    pub first: u32,
    pub count: u32,
    /// With tracing: only draws below this are traced (None: every draw).
    pub traced: Option<u32>,
}

impl Draws {
    pub const ONE: Draws = Draws {
        first: 0,
        count: 1,
        traced: None,
    };

    /// Whether draw `draw` of a run that traces (`trace`) is traced.
    pub fn is_traced(&self, trace: bool, draw: u32) -> bool {
        trace && self.traced.is_none_or(|n| draw < n)
    }

    /// A matrix's `--trace-draws` within its `--draws`: tracing more draws
    /// than a cell runs cannot be what was meant.
    pub fn traced_within(count: u32, traced: Option<u32>) -> Result<(), String> {
        match traced {
            Some(t) if t > count => Err(format!(
                "--trace-draws {t} is more than --draws {count}: give at most {count}, or leave --trace-draws out to trace every draw"
            )),
            _ => Ok(()),
        }
    }
}

/// Where the cells find their inputs and put their results: not part of a
/// plan's id (the same matrix on another machine is the same plan).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Paths {
    pub config_dirs: Vec<PathBuf>,
    pub cache_dir: PathBuf,
    pub mirror: Option<String>,
    pub results: PathBuf,
}

/// A rerun's guest settings, as its cell recorded them (a run's guests
/// come from `Machine::deterministic` and their draw).
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub icount: String,
    pub rtc: String,
    pub kaslr: bool,
}

/// Every cell a run executes, with what it needs resolved.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The Debian kernel flavour asked for.
    pub flavour: String,
    /// Fetched into the cache, once each.
    pub kernels: Vec<Kernel>,
    /// Loaded and hashed.
    pub configs: Vec<spec::Config>,
    pub access: spec::AccessMatrix,
    pub options: LabOptions,
    pub draws: Draws,
    pub paths: Paths,
    pub cells: Vec<PlannedCell>,
    pub recorded: Option<Recorded>,
    /// What its cells are tagged with when a plan file's cell runs alone.
    pub tag: CellTag,
}

/// A plan file's cell run by `lab cell`: which plan and cell, and the
/// batch engine's task running it (if one does).
#[derive(Debug, Clone, Default)]
pub struct CellTag {
    pub plan: Option<model::cell::PlanRef>,
    pub task: Option<model::cell::BatchTask>,
}

/// One cell: indexes into the plan's kernels and configurations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlannedCell {
    pub kernel: usize,
    pub config: usize,
    pub cpus: u32,
    pub draw: u32,
}

impl Plan {
    /// Whether draw `draw` of a cell is traced.
    pub fn traced(&self, draw: u32) -> bool {
        self.draws.is_traced(self.options.trace, draw)
    }

    pub fn config_names(&self) -> Vec<String> {
        self.configs.iter().map(|c| c.name.clone()).collect()
    }

    pub fn kernel_series(&self) -> Vec<String> {
        self.kernels.iter().map(|k| k.series.clone()).collect()
    }
}

/// A request whose names, options and configurations were checked, its
/// kernels not yet fetched: what can be refused without a download is.
pub struct Checked {
    req: Request,
    configs: Vec<spec::Config>,
    access: spec::AccessMatrix,
}

impl Checked {
    pub fn configs(&self) -> &[spec::Config] {
        &self.configs
    }

    /// The plan: each kernel fetched into the cache, once.
    pub fn fetch(self) -> Result<Plan> {
        let req = self.req;
        let cache = std::path::absolute(&req.paths.cache_dir)?;
        let kernels = req
            .kernels
            .iter()
            .map(|s| kernel::ensure(&cache, s, &req.flavour, req.paths.mirror.as_deref()))
            .collect::<Result<Vec<_>>>()?;
        let cells = cells(kernels.len(), self.configs.len(), &req.cpus, req.draws);
        Ok(Plan {
            flavour: req.flavour.clone(),
            kernels,
            configs: self.configs,
            access: self.access,
            options: req.options.clone(),
            draws: req.draws,
            paths: Paths {
                cache_dir: cache,
                ..req.paths.clone()
            },
            cells,
            recorded: None,
            tag: CellTag::default(),
        })
    }
}

/// Checks the request and loads its configurations (nothing is fetched).
/// In the order `lab run` always checked them: kernels, configuration
/// directories and names, ops, options, CPU counts and draws.
pub fn check(req: &Request) -> Result<Checked> {
    check_kernels(req)?;
    let dirs = spec::search_path_checked(&req.paths.config_dirs)?;
    if req.configs.is_empty() {
        return Err(usage("--configs is empty"));
    }
    let configs = req
        .configs
        .iter()
        .map(|n| spec::load(n, &dirs))
        .collect::<Result<Vec<_>>>()?;
    bench::check_ops(&req.options.ops, req.options.iterations)?;
    req.options
        .check()
        .map_err(|e| usage(format!("options: {e}")))?;
    check_counts(req)?;
    check_size(req)?;
    Ok(Checked {
        req: req.clone(),
        configs,
        access: spec::load_access_matrix()?,
    })
}

/// `check`, then `fetch`: for `lab plan` and `lab submit`, which boot nothing
/// here (`lab run` checks the host between the two).
pub fn resolve(req: &Request) -> Result<Plan> {
    check(req)?.fetch()
}

/// Kernel, configuration, CPU count, draw: `lab run`'s order.
pub fn cells(kernels: usize, configs: usize, cpus: &[u32], draws: Draws) -> Vec<PlannedCell> {
    let mut out = Vec::new();
    for kernel in 0..kernels {
        for config in 0..configs {
            for &n in cpus {
                for draw in draws.first..draws.first + draws.count {
                    out.push(PlannedCell {
                        kernel,
                        config,
                        cpus: n,
                        draw,
                    });
                }
            }
        }
    }
    out
}

fn check_kernels(req: &Request) -> Result<()> {
    if req.kernels.is_empty() {
        return Err(usage("--kernels is empty"));
    }
    if let Some(k) = req.kernels.iter().find(|k| !known_series(k)) {
        return Err(usage(format!(
            "unknown kernel '{k}': use one of {}",
            kernel::known_series().join(", ")
        )));
    }
    Ok(())
}

fn check_counts(req: &Request) -> Result<()> {
    if req.cpus.is_empty() || req.cpus.iter().any(|n| !(1..=vm::MAX_CPUS).contains(n)) {
        return Err(usage(format!(
            "--cpus {:?}: CPU counts from 1 to {}",
            req.cpus,
            vm::MAX_CPUS
        )));
    }
    let d = req.draws;
    let traced_ok = d.traced.is_none_or(|n| (1..=MAX_DRAWS).contains(&n));
    if !(1..=MAX_DRAWS).contains(&d.count) || !traced_ok {
        return Err(usage(format!("draws: 1 to {MAX_DRAWS}")));
    }
    Ok(())
}

/// A series lsmpmon fetches or builds (never a path: a recorded or planned
/// kernel names a series, and only `vm run` boots a file of the user's).
pub fn known_series(series: &str) -> bool {
    kernel::known_series().contains(&series)
}

fn check_size(req: &Request) -> Result<()> {
    let n = req.kernels.len() * req.configs.len() * req.cpus.len() * req.draws.count as usize;
    if n > MAX_CELLS {
        return Err(usage(format!(
            "{n} cells (kernels × configurations × CPU counts × draws): at most {MAX_CELLS} a run or plan; split it"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_come_in_lab_run_order_draws_innermost() {
        let draws = Draws {
            first: 0,
            count: 3,
            traced: None,
        };
        let c = cells(2, 2, &[1, 2], draws);
        assert_eq!(c.len(), 24);
        let first: Vec<(usize, u32, u32)> =
            c[..4].iter().map(|c| (c.config, c.cpus, c.draw)).collect();
        assert_eq!(first, [(0, 1, 0), (0, 1, 1), (0, 1, 2), (0, 2, 0)]);
        assert_eq!((c[12].kernel, c[12].config), (1, 0));
        // A plan's cell runs its own draw.
        let one = cells(
            1,
            1,
            &[1],
            Draws {
                first: 4,
                count: 1,
                traced: Some(1),
            },
        );
        assert_eq!(one[0].draw, 4);
    }
}
