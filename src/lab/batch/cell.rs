//! `lab cell PLAN INDEX`: one cell of a plan, run as `lab run` runs it,
//! into a results directory, its result tagged with the plan. Refused when
//! this lsmpmon, the configuration or the kernel package is not the plan's.
use std::path::Path;

use anyhow::Result;

use super::{
    plan::Plan,
    tagged::{self, PlanRef, TaggedCell},
};
use crate::base::error::usage;
use crate::lab::{results::CellResult, run::run_matrix, spec, RunOutcome};
use crate::vm::kernel;

/// `results` and `cache_dir` default to the plan's.
pub fn run(
    plan_path: &Path,
    index: usize,
    results: Option<&Path>,
    cache_dir: Option<&Path>,
) -> Result<RunOutcome> {
    let plan = Plan::read(plan_path)?;
    let Some(cell) = plan.cells.get(index) else {
        return Err(usage(format!(
            "{}: no cell {index} (the plan has {}: 0 to {})",
            plan_path.display(),
            plan.cells.len(),
            plan.cells.len().saturating_sub(1)
        )));
    };
    check_version(&plan)?;
    let config = spec::load(&cell.config, &spec::search_path(&plan.paths.config_dirs))?;
    let planned = plan.matrix.configs.iter().find(|c| c.name == cell.config);
    if planned.is_none_or(|c| c.hash != config.hash) {
        return Err(usage(format!(
            "configuration {} changed since the plan was made: make a new plan",
            cell.config
        )));
    }
    let cache_dir = cache_dir.unwrap_or(&plan.paths.cache_dir);
    let o = &plan.matrix.options;
    let k = kernel::ensure(
        cache_dir,
        &cell.kernel,
        &o.flavour,
        plan.paths.mirror.as_deref(),
    )?;
    if plan.kernel(&cell.kernel).map(|r| &r.deb_sha256) != Some(&k.deb_sha256) {
        return Err(usage(format!(
            "kernel {}: the cache's package ({} {}) is not the plan's: make a new plan",
            cell.kernel, k.package, k.package_version
        )));
    }
    let results = results.unwrap_or(&plan.paths.results);
    let args = super::plan::run_args(&plan, cell, results, cache_dir);
    let mut outcome = run_matrix(&args, None)?;
    let tag = PlanRef {
        id: plan.id.clone(),
        index,
    };
    let failed = outcome.cells.iter().find_map(|c| {
        let tagged = TaggedCell {
            cell: CellResult {
                plan: Some(tag.clone()),
                ..c.clone()
            },
            file: Default::default(),
        };
        tagged::write(results, &tagged).err()
    });
    if let Some(e) = failed {
        outcome.write_failed(e.context("recording the plan in the cell"));
    }
    Ok(outcome)
}

fn check_version(plan: &Plan) -> Result<()> {
    let mine = env!("CARGO_PKG_VERSION");
    if plan.matrix.lsmpmon_version != mine {
        return Err(usage(format!(
            "the plan is for lsmpmon {}, this is {mine}: run its cells with that version or make a new plan",
            plan.matrix.lsmpmon_version
        )));
    }
    Ok(())
}
