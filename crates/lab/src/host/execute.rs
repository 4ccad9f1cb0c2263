//! `execute`: a plan's cells run and recorded. Everything that can be
//! refused is refused before the first cell is recorded: tools, the
//! results directory and its room.
use anyhow::Result;

use crate::spec::Config;
use crate::{
    host::jobs::{self, Extras},
    host::outcome::RunOutcome,
    host::preflight,
    host::progress::Progress,
    host::schedule,
    host::space,
    plan::Plan,
    results::ResultsDir,
};
use vm::interrupt::ExitNow;

/// The host's tools for `configs`, and the results directory with room for
/// cells: `lab run` checks them before it fetches a kernel, `execute` again.
pub fn prepare(configs: &[Config], results: &std::path::Path) -> Result<ResultsDir> {
    preflight::check(configs)?;
    let dir = ResultsDir::open(results)?;
    space::check(&dir.root)?;
    Ok(dir)
}

/// `guests`: how many at once (default: the number of CPUs). `fetching`
/// was taken before the plan was resolved: until the first guest boots, a
/// signal ends lsmpmon at once; from then on it stops the guests and keeps
/// the finished cells.
pub fn execute(plan: &Plan, guests: Option<u32>, fetching: ExitNow) -> Result<RunOutcome> {
    let dir = prepare(&plan.configs, &plan.paths.results)?;
    execute_in(dir, plan, guests, fetching)
}

/// `execute` into a results directory `prepare` already opened (`lab run`
/// prepares before it fetches the kernels).
pub fn execute_in(
    dir: ResultsDir,
    plan: &Plan,
    guests: Option<u32>,
    fetching: ExitNow,
) -> Result<RunOutcome> {
    let extras = Extras::ensure(&plan.options, &plan.paths.cache_dir)?;
    let cells = jobs::lay_out(plan, &extras, &dir)?;
    let cancel = fetching.into_stop_flag()?;
    let progress = Progress::new(cells.jobs.len() + cells.decided.len(), cells.decided.len());
    for r in &cells.decided {
        progress.finished(r);
    }
    let ran = schedule::run_jobs(cells.jobs, guests, &dir, &progress, &cancel);
    progress.done();
    let mut outcome = RunOutcome {
        results: dir.root.clone(),
        configs: plan.config_names(),
        kernels: plan.kernel_series(),
        cells: cells.decided.into_iter().chain(ran.cells).collect(),
        interrupted: cancel.load(std::sync::atomic::Ordering::SeqCst),
        stopped: ran.stopped,
        write_error: ran.write_error,
    };
    if let Err(e) = dir.write_index() {
        outcome.write_failed(e.context("writing index.json (the cells are kept)"));
    }
    Ok(outcome)
}
