//! Where each cell of a plan stands: queued or running (the engine's
//! queue), passed, not applicable or failed (its newest result), or ended
//! without a result (cancelled, killed: the task's log says).
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{
    engine::{Engine, Queued, Task},
    plan_file::{PlanCell, PlanFile},
    record::Submissions,
    tagged,
};
use crate::results::{CellResult, CellStatus};
use base::text;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    NotRun,
    Pending,
    Running,
    Passed,
    NotApplicable,
    Failed,
    /// Its task ended and left no result.
    NoResult,
    /// Submitted, no result yet, and the engine could not be asked.
    Unknown,
}

impl State {
    pub fn settled(self) -> bool {
        !matches!(self, State::Pending | State::Running | State::Unknown)
    }

    /// Passed or not applicable: nothing to run again.
    pub fn done(self) -> bool {
        matches!(self, State::Passed | State::NotApplicable)
    }
}

pub struct CellState {
    pub cell: PlanCell,
    pub state: State,
    /// Its newest result (the one the state comes from, when it does).
    pub result: Option<CellResult>,
    /// The engine's log of the task that last ran it.
    pub log: Option<PathBuf>,
    /// The engine's id of that task (`41_3`).
    pub task_id: Option<String>,
    /// Where it runs (the queue) or ran (its result); none if not known.
    pub node: Option<String>,
    /// Times the engine requeued its task (the queue's count while queued
    /// or running, else its result's).
    pub restarts: u32,
    /// Submissions of the cell beyond the first (`lab submit --resume`).
    pub resubmitted: usize,
}

/// The cells' states, and why the engine's queue could not be read (the
/// states then come from the cells on disk alone).
pub struct Collected {
    pub states: Vec<CellState>,
    pub queue_unknown: Option<String>,
    /// The files under `cells/` that could not be read as cells (garbage,
    /// a FIFO, a directory, a link, unreadable), one line each: a cell
    /// counted as not run may be one of them.
    pub unreadable: Vec<String>,
}

/// How many unreadable files `unreadable_lines` names one by one.
pub const MAX_NAMED: usize = 10;

/// The engine's queued and running tasks of every job of the record.
fn queue(record: Option<&Submissions>, engine: Option<&dyn Engine>) -> Result<Vec<Task>> {
    let mut queued = Vec::new();
    if let (Some(r), Some(e)) = (record, engine) {
        for job in &r.jobs {
            queued.extend(e.queued(job)?);
        }
    }
    Ok(queued)
}

/// Every cell's state, in the plan's order.
pub fn collect(
    plan: &PlanFile,
    record: Option<&Submissions>,
    engine: Option<&dyn Engine>,
) -> Result<Collected> {
    let (queued, queue_unknown) = match queue(record, engine) {
        Ok(q) => (q, None),
        Err(e) => (Vec::new(), Some(base::error::one_line(&e))),
    };
    let (cells, unreadable) = tagged::read_all(&plan.paths.results)?;
    let newest = |index: usize| {
        cells
            .iter()
            .rev()
            .find(|c| {
                c.plan()
                    .is_some_and(|p| p.id == plan.id && p.index == index)
            })
            .map(|c| c.cell.clone())
    };
    let states = plan
        .cells
        .iter()
        .map(|cell| {
            let job = record.and_then(|r| r.last_job(cell.index));
            let result = newest(cell.index);
            let task = queued.iter().find(|t| t.index == cell.index);
            let submitted = job.map(|j| j.submitted_unix_s);
            let mut s = state(submitted, result.as_ref(), task.map(|t| t.state));
            if s == State::NoResult && queue_unknown.is_some() {
                s = State::Unknown;
            }
            let ran = result.as_ref().and_then(|r| r.task.as_ref());
            let ran = ran.filter(|_| s.settled());
            CellState {
                cell: cell.clone(),
                state: s,
                log: job.zip(engine).map(|(j, e)| e.log_path(j, cell.index)),
                task_id: job.zip(engine).map(|(j, e)| e.task_id(j, cell.index)),
                node: task
                    .and_then(|t| t.node.clone())
                    .or_else(|| ran.map(|t| t.node.clone())),
                restarts: task.map_or(ran.map_or(0, |t| t.restarts), |t| t.restarts),
                resubmitted: record.map_or(0, |r| r.jobs_of(cell.index).saturating_sub(1)),
                result,
            }
        })
        .collect();
    Ok(Collected {
        states,
        queue_unknown,
        unreadable,
    })
}

/// A result written since the cell's last submission counts first, then
/// the queue; a submitted cell that is neither ended without a result.
fn state(submitted_s: Option<u64>, result: Option<&CellResult>, queued: Option<Queued>) -> State {
    let fresh = result.filter(|r| submitted_s.is_none_or(|s| r.started_unix_s >= s));
    match (fresh, queued, submitted_s) {
        (Some(r), _, _) => of_result(r),
        (None, Some(Queued::Pending), _) => State::Pending,
        (None, Some(Queued::Running), _) => State::Running,
        (None, None, Some(_)) => State::NoResult,
        (None, None, None) => State::NotRun,
    }
}

fn of_result(r: &CellResult) -> State {
    match r.status {
        CellStatus::Passed => State::Passed,
        CellStatus::NotApplicable => State::NotApplicable,
        _ => State::Failed,
    }
}

/// `plan 5711051fbd14: 4 cells: 1 pending, 1 running, 2 passed, 0 failed`
/// (not applicable, without result, not run and unreadable cell files when
/// there are any).
pub fn summary(plan: &PlanFile, collected: &Collected) -> String {
    let states = &collected.states;
    let n = |s: State| states.iter().filter(|c| c.state == s).count();
    let mut line = format!(
        "plan {}: {} cells: {} pending, {} running, {} passed, {} failed",
        plan.short_id(),
        states.len(),
        n(State::Pending),
        n(State::Running),
        n(State::Passed),
        n(State::Failed) + n(State::NoResult),
    );
    let requeued = states
        .iter()
        .filter(|c| !c.state.settled() && c.restarts > 0)
        .count();
    if requeued > 0 {
        line.push_str(&format!(", {requeued} requeued"));
    }
    for (s, what) in [
        (State::NotApplicable, "not applicable"),
        (State::NoResult, "of them without a result"),
        (State::NotRun, "not run"),
        (State::Unknown, "submitted, queue unknown"),
    ] {
        if n(s) > 0 {
            line.push_str(&format!(", {} {what}", n(s)));
        }
    }
    let bad = collected.unreadable.len();
    if bad > 0 {
        let missing = n(State::NotRun) + n(State::NoResult) + n(State::Unknown);
        line.push_str(&format!(
            ", {bad} unreadable cell file{} (below{})",
            if bad == 1 { "" } else { "s" },
            if missing > 0 {
                ": a cell counted as not run or without a result may be one of them"
            } else {
                ""
            }
        ));
    }
    line
}

/// The unreadable files under `results/cells`, each in one escaped line
/// (at most [`MAX_NAMED`], then how many more), with what to do.
pub fn unreadable_lines(collected: &Collected, results: &Path) -> Vec<String> {
    let bad = &collected.unreadable;
    let mut lines: Vec<String> = bad
        .iter()
        .take(MAX_NAMED)
        .map(|b| format!("unreadable cell file: {}", text::one_line(b, 400)))
        .collect();
    if bad.len() > MAX_NAMED {
        lines.push(format!(
            "… and {} more unreadable files in {}",
            bad.len() - MAX_NAMED,
            text::one_line(&results.join("cells").display().to_string(), 400)
        ));
    }
    if !bad.is_empty() {
        lines.push(
            "move each file that is not a cell out of cells/; a cell of this plan's whose file is unreadable is run again by `lab submit --resume`"
                .into(),
        );
    }
    lines
}

/// One line per cell in one of `which` states (failed, without a result):
/// by its cell, with its logs.
pub fn problems(states: &[CellState], which: &[State], results: &Path) -> Vec<String> {
    states
        .iter()
        .filter(|c| which.contains(&c.state))
        .map(|c| {
            let what = match (&c.state, &c.result) {
                (State::Failed, Some(r)) => format!(
                    "{}: {} (guest log: {})",
                    r.status,
                    r.reason.as_deref().unwrap_or(""),
                    r.log_path(results).display()
                ),
                _ => "its task ended without a result (cancelled or killed)".into(),
            };
            let log = c
                .log
                .as_ref()
                .map(|l| format!(" (task log: {})", l.display()))
                .unwrap_or_default();
            format!("cell {}, {}: {what}{log}", c.cell.index, c.cell.describe())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(status: CellStatus, started: u64) -> CellResult {
        let mut r: CellResult = serde_json::from_str(include_str!(
            "../../../../tests/fixtures/report/lab/cells/6.1-cloud__none__1795500718528-17793-0-vm.json"
        ))
        .unwrap();
        r.status = status;
        r.started_unix_s = started;
        r
    }

    #[test]
    fn a_fresh_result_then_the_queue_then_no_result() {
        let passed = result(CellStatus::Passed, 100);
        let failed = result(CellStatus::Failed, 100);
        assert_eq!(state(None, None, None), State::NotRun);
        assert_eq!(state(None, Some(&passed), None), State::Passed);
        assert_eq!(state(Some(50), Some(&failed), None), State::Failed);
        // Resubmitted after the failure: the old result no longer counts.
        assert_eq!(
            state(Some(200), Some(&failed), Some(Queued::Pending)),
            State::Pending
        );
        assert_eq!(state(Some(200), Some(&failed), None), State::NoResult);
        assert_eq!(state(Some(50), None, Some(Queued::Running)), State::Running);
        // Finished between the queue's answer and the results' read.
        assert_eq!(
            state(Some(50), Some(&passed), Some(Queued::Running)),
            State::Passed
        );
        let na = result(CellStatus::NotApplicable, 100);
        assert!(state(None, Some(&na), None).done());
        assert!(!State::NoResult.done() && State::NoResult.settled());
    }

    /// Garbage, a FIFO (nobody writing it: not waited on), a directory, a
    /// link and a name with an escape sequence under `cells/`: each named
    /// (escaped, at most MAX_NAMED, then how many more) and counted apart
    /// from the cells not run.
    #[test]
    fn unreadable_cell_files_are_named_and_counted() {
        let d = std::env::temp_dir().join(format!("lsmpmon-status-bad-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let cells = d.join("cells");
        std::fs::create_dir_all(cells.join("b-dir.json")).unwrap();
        std::fs::write(cells.join("\u{1b}[2K.json"), "{").unwrap();
        let fifo = std::ffi::CString::new(
            cells
                .join("a-fifo.json")
                .into_os_string()
                .into_encoded_bytes(),
        )
        .unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        std::os::unix::fs::symlink("/etc/passwd", cells.join("c-link.json")).unwrap();
        std::fs::write(cells.join("d-garbage.json"), "garbage").unwrap();
        for i in 0..10 {
            std::fs::write(cells.join(format!("g{i:02}.json")), "[]").unwrap();
        }
        let plan = super::super::plan_file::for_tests(&d, &d.join("plan.json"));
        let collected = collect(&plan, None, None).unwrap();
        assert_eq!(collected.unreadable.len(), 15);
        let line = summary(&plan, &collected);
        assert!(
            line.ends_with(", 8 not run, 15 unreadable cell files (below: a cell counted as not run or without a result may be one of them)"),
            "{line}"
        );
        let lines = unreadable_lines(&collected, &d);
        assert_eq!(lines.len(), MAX_NAMED + 2, "{lines:#?}");
        for (i, what) in [
            "\\u{1b}[2K.json: not a JSON result",
            "a-fifo.json: not a regular file",
            "b-dir.json: not a regular file",
            "c-link.json is a symbolic link",
            "d-garbage.json: not a JSON result",
        ]
        .iter()
        .enumerate()
        {
            assert!(lines[i].contains(what), "{i}: {what}: {}", lines[i]);
        }
        assert!(lines.iter().all(|l| !l.contains('\u{1b}')), "{lines:#?}");
        assert_eq!(
            lines[MAX_NAMED],
            format!("… and 5 more unreadable files in {}", cells.display())
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}
