//! `lab submit`: a plan (new, or one to resume) submitted to an engine as
//! arrays of cells, then watched until every task has ended; `lab status`
//! is the same watch, once.
use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use anyhow::Result;

use super::{
    engine::{Array, Engine},
    nodes,
    plan_file::{self, PlanFile},
    record::Submissions,
    registry,
    status::{self, CellState, State},
};
use crate::{
    host::{jobs::Extras, outcome::RunOutcome},
    plan::{resolve, Request},
    results::ResultsDir,
};
use base::{error::usage, secure_fs};

pub struct SubmitOptions {
    /// A plan to submit again (its cells without a passed result).
    pub resume: Option<PathBuf>,
    pub wait: bool,
    pub poll: Duration,
}

/// How a watched plan ended: the tables' outcome, and its cells whose task
/// left no result.
pub struct Settled {
    pub outcome: RunOutcome,
    pub plan_path: PathBuf,
    pub without_result: usize,
}

pub fn submit(
    req: &Request,
    engine: &dyn Engine,
    engine_name: &str,
    opts: &SubmitOptions,
) -> Result<Option<Settled>> {
    engine.check()?;
    let (plan, plan_path) = match &opts.resume {
        Some(p) => (PlanFile::read(p)?, std::path::absolute(p)?),
        None => new_plan(req)?,
    };
    Extras::ensure(&plan.matrix.options, &plan.paths.cache_dir)?;
    let mut record = Submissions::read(&plan_path, &plan.id)?
        .unwrap_or_else(|| Submissions::new(&plan.id, engine_name));
    if record.engine != engine_name {
        return Err(usage(format!(
            "plan {} was submitted to {}: resume it there",
            plan.short_id(),
            record.engine
        )));
    }
    let collected = status::collect(&plan, Some(&record), Some(engine))?;
    for line in status::unreadable_lines(&collected, &plan.paths.results) {
        base::say!("lsmpmon: {line}");
    }
    // Not knowing what is queued, a submission could run cells twice.
    if let Some(why) = collected.queue_unknown {
        return Err(usage(why));
    }
    let states = collected.states;
    let to_run: Vec<&CellState> = states
        .iter()
        .filter(|c| c.state.settled() && !c.state.done())
        .collect();
    if to_run.is_empty() {
        base::say!("lsmpmon: every cell of the plan has passed or is queued: nothing to submit");
    }
    let dir = batch_dir(&plan)?;
    for (cpus, memory_mb, cells) in groups(&to_run) {
        let array = Array {
            plan: &plan,
            plan_path: &plan_path,
            cells,
            cpus,
            memory_mb,
            dir: &dir,
        };
        let job = engine.submit(&array)?;
        base::say!(
            "lsmpmon: job {}: cells {:?} of plan {} ({})",
            job.id,
            job.cells,
            plan.short_id(),
            plan_path.display()
        );
        record.jobs.push(job);
        record.write(&plan_path)?;
    }
    if !opts.wait {
        base::say!(
            "lsmpmon: `lsmpmon lab status {}` shows their progress",
            plan_path.display()
        );
        return Ok(None);
    }
    watch(&plan, plan_path, &record, engine, opts.poll).map(Some)
}

/// `RESULTS/batch/<id>/`: where the engine's script and the tasks' logs
/// go, whether the plan is new or resumed from a file elsewhere (the
/// directory the plan file is in may be anyone's, or read-only).
fn batch_dir(plan: &PlanFile) -> Result<PathBuf> {
    let results = ResultsDir::open(&plan.paths.results)?;
    let batch = std::path::absolute(results.root.join("batch"))?;
    secure_fs::private_dir(&batch)?;
    let dir = batch.join(plan.short_id());
    secure_fs::private_dir(&dir)?;
    Ok(dir)
}

/// A new plan of `req` in `RESULTS/batch/<id>/plan.json`, refused when
/// that plan was submitted before.
fn new_plan(req: &Request) -> Result<(PlanFile, PathBuf)> {
    let results = ResultsDir::open(&req.paths.results)?;
    let mut plan = plan_file::of_plan(&resolve(req)?, Path::new("plan.json"))?;
    let batch = std::path::absolute(results.root.join("batch"))?;
    secure_fs::private_dir(&batch)?;
    let dir = batch.join(plan.short_id());
    let path = dir.join("plan.json");
    if super::record::path(&path).exists() {
        return Err(usage(format!(
            "plan {} was submitted before: `lsmpmon lab submit --slurm --resume {}` submits its cells that have not passed",
            plan.short_id(),
            path.display()
        )));
    }
    secure_fs::private_dir(&dir)?;
    plan.place(&path)?;
    plan.write(&path)?;
    Ok((plan, path))
}

/// Cells asking for the same CPUs and memory, in the plan's order.
fn groups(cells: &[&CellState]) -> Vec<(u32, u32, Vec<usize>)> {
    let mut out: Vec<(u32, u32, Vec<usize>)> = Vec::new();
    for c in cells {
        let key = (c.cell.cpus, c.cell.memory_mb);
        match out.iter_mut().find(|g| (g.0, g.1) == key) {
            Some(g) => g.2.push(c.cell.index),
            None => out.push((key.0, key.1, vec![c.cell.index])),
        }
    }
    out
}

/// A progress line whenever the counts change, until no task is queued or
/// running; then the cells without a result, by cell.
fn watch(
    plan: &PlanFile,
    plan_path: PathBuf,
    record: &Submissions,
    engine: &dyn Engine,
    poll: Duration,
) -> Result<Settled> {
    let mut last = String::new();
    let states = loop {
        let collected = status::collect(plan, Some(record), Some(engine))?;
        let mut line = status::summary(plan, &collected);
        let states = collected.states;
        if let Some(why) = collected.queue_unknown {
            line.push_str(&format!(" ({why})"));
        }
        if line != last {
            base::say!("lab: {line}");
            last = line;
        }
        if states.iter().all(|c| c.state.settled()) {
            break states;
        }
        std::thread::sleep(poll);
    };
    // The failed cells are listed with the tables, as `lab run` lists them.
    let without = status::problems(&states, &[State::NoResult], &plan.paths.results);
    for line in &without {
        base::say!("lsmpmon: {line}");
    }
    Ok(Settled {
        outcome: outcome(plan, &states),
        without_result: without.len(),
        plan_path,
    })
}

/// The plan's newest cells as a run's outcome; the index rebuilt (tasks
/// writing it at once may each have missed the other's cell).
fn outcome(plan: &PlanFile, states: &[CellState]) -> RunOutcome {
    let mut o = RunOutcome {
        results: plan.paths.results.clone(),
        configs: plan.matrix.configs.iter().map(|c| c.name.clone()).collect(),
        kernels: plan
            .matrix
            .kernels
            .iter()
            .map(|k| k.series.clone())
            .collect(),
        cells: states.iter().filter_map(|c| c.result.clone()).collect(),
        interrupted: false,
        stopped: None,
        write_error: None,
    };
    if let Err(e) = ResultsDir::open(&o.results).and_then(|d| d.write_index()) {
        o.write_failed(e.context("writing index.json (the cells are kept)"));
    }
    o
}

/// `lab status PLAN`: the summary and every failed cell; true when every
/// task has ended and every cell passed or is not applicable.
pub fn status(plan_path: &Path) -> Result<(Vec<String>, bool)> {
    let plan = PlanFile::read(plan_path)?;
    let record = Submissions::read(plan_path, &plan.id)?;
    let engine = record
        .as_ref()
        .map(|r| registry::by_name(&r.engine))
        .transpose()?;
    let collected = status::collect(&plan, record.as_ref(), engine.as_deref())?;
    let mut lines = vec![status::summary(&plan, &collected)];
    lines.extend(status::unreadable_lines(&collected, &plan.paths.results));
    let states = collected.states;
    lines.extend(nodes::per_node(&states));
    lines.extend(nodes::moved(&states));
    if let Some(why) = collected.queue_unknown {
        lines.push(format!(
            "the queue could not be read, so these states come from the cells on disk alone: {why}"
        ));
    }
    lines.extend(status::problems(
        &states,
        &[State::Failed, State::NoResult],
        &plan.paths.results,
    ));
    Ok((lines, states.iter().all(|c| c.state.done())))
}
