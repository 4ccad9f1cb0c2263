//! `lab cell PLAN INDEX`: one cell of a plan, run as `lab run` runs it,
//! into a results directory, its result tagged with the plan. Refused when
//! this lsmpmon, the configuration or the kernel package is not the plan's.
use std::path::Path;

use anyhow::Result;

use super::{
    plan_file::{PlanCell, PlanFile},
    registry, requeue,
    tagged::PlanRef,
};
use crate::{
    host::execute::execute,
    host::outcome::RunOutcome,
    plan::{CellTag, Paths, Plan, PlannedCell},
    spec,
};
use base::error::usage;
use vm::kernel;

/// `results` and `cache_dir` default to the plan's.
pub fn run(
    plan_path: &Path,
    index: usize,
    results: Option<&Path>,
    cache_dir: Option<&Path>,
) -> Result<RunOutcome> {
    let fetching = vm::interrupt::exit_now()?;
    let file = PlanFile::read(plan_path)?;
    let Some(cell) = file.cells.get(index) else {
        return Err(usage(format!(
            "{}: no cell {index} (the plan has {}: 0 to {})",
            plan_path.display(),
            file.cells.len(),
            file.cells.len().saturating_sub(1)
        )));
    };
    check_version(&file)?;
    let results = results.unwrap_or(&file.paths.results);
    let cache_dir = cache_dir.unwrap_or(&file.paths.cache_dir);
    let tag = CellTag {
        plan: Some(PlanRef {
            id: file.id.clone(),
            index,
        }),
        task: registry::this_task(),
    };
    if let Some(done) =
        requeue::earlier_run(results, tag.plan.as_ref().unwrap(), tag.task.as_ref())?
    {
        base::say!(
            "lsmpmon: cell {index} passed in this task's earlier run ({}): not run again",
            done.id
        );
        return Ok(RunOutcome {
            results: results.to_path_buf(),
            configs: vec![done.config.name.clone()],
            kernels: vec![done.kernel.series.clone()],
            cells: vec![done],
            interrupted: false,
            stopped: None,
            write_error: None,
        });
    }
    let mut plan = plan_of_cell(&file, cell, results, cache_dir)?;
    // Tagged from its first write: a task killed between two writes would
    // leave a cell that names no plan.
    plan.tag = tag;
    execute(&plan, Some(1), fetching)
}

/// The one-cell plan of a plan file's cell: its configuration as the plan
/// hashed it, its kernel package as the plan recorded it (fetched once).
fn plan_of_cell(
    file: &PlanFile,
    cell: &PlanCell,
    results: &Path,
    cache_dir: &Path,
) -> Result<Plan> {
    let config = spec::load(
        &cell.config,
        &spec::search_path_checked(&file.paths.config_dirs)?,
    )?;
    let planned = file.matrix.configs.iter().find(|c| c.name == cell.config);
    if planned.is_none_or(|c| c.hash != config.hash) {
        return Err(usage(format!(
            "configuration {} changed since the plan was made: make a new plan",
            cell.config
        )));
    }
    let flavour = &file.matrix.flavour;
    let mirror = file.paths.mirror.clone();
    let k = kernel::ensure(cache_dir, &cell.kernel, flavour, mirror.as_deref())?;
    if file.kernel(&cell.kernel).map(|r| &r.deb_sha256) != Some(&k.deb_sha256) {
        return Err(usage(format!(
            "kernel {}: the cache's package ({} {}) is not the plan's: make a new plan",
            cell.kernel, k.package, k.package_version
        )));
    }
    Ok(Plan {
        flavour: flavour.clone(),
        kernels: vec![k],
        configs: vec![config],
        access: spec::load_access_matrix()?,
        options: file.matrix.options.clone(),
        draws: file.draws_of(cell),
        paths: Paths {
            config_dirs: file.paths.config_dirs.clone(),
            cache_dir: cache_dir.to_path_buf(),
            mirror,
            results: results.to_path_buf(),
        },
        cells: vec![PlannedCell {
            kernel: 0,
            config: 0,
            cpus: cell.cpus,
            draw: cell.draw,
        }],
        recorded: None,
        tag: CellTag::default(),
    })
}

fn check_version(plan: &PlanFile) -> Result<()> {
    let mine = env!("CARGO_PKG_VERSION");
    if plan.matrix.lsmpmon_version != mine {
        return Err(usage(format!(
            "the plan is for lsmpmon {}, this is {mine}: run its cells with that version or make a new plan",
            plan.matrix.lsmpmon_version
        )));
    }
    Ok(())
}
