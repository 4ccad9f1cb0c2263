//! `lab run`: a matrix from its options to its recorded cells. Everything
//! that can be refused is refused before the first cell is recorded:
//! names, tools, the results directory and its room.
use anyhow::Result;

use super::{
    args::RunArgs,
    jobs::{self, Extras, Recorded},
    matrix, preflight,
    progress::Progress,
    results::ResultsDir,
    schedule, space, RunOutcome,
};
use crate::vm::interrupt;

pub fn run(args: &RunArgs) -> Result<RunOutcome> {
    run_matrix(args, None)
}

/// A matrix whose guests run as `recorded` says (a rerun), or as a run's do.
pub(super) fn run_matrix(args: &RunArgs, recorded: Option<&Recorded>) -> Result<RunOutcome> {
    let m = matrix::resolve(args)?;
    preflight::check(&m.configs)?;
    let dir = ResultsDir::open(&args.results)?;
    space::check(&dir.root)?;
    // Until the first guest boots (the fetches), a signal ends lsmpmon at
    // once; from then on it stops the guests and keeps the finished cells.
    let fetching = interrupt::exit_now()?;
    let extras = Extras::ensure(&args.ops, &args.cache.path())?;
    let cells = jobs::plan(args, &m, &extras, &dir, recorded)?;
    let cancel = fetching.into_stop_flag()?;
    let progress = Progress::new(cells.jobs.len() + cells.decided.len(), cells.decided.len());
    for r in &cells.decided {
        progress.finished(r);
    }
    let ran = schedule::run_jobs(cells.jobs, args.jobs, &dir, &progress, &cancel);
    progress.done();
    let mut outcome = RunOutcome {
        results: dir.root.clone(),
        configs: m.config_names(),
        kernels: m.kernels,
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
