//! What a batch engine does for the lab: take an array of a plan's cells
//! (one task a cell, each running the cell's own command), say which tasks
//! are still queued or running, and where a task's log is. Everything else
//! (the plan, progress from the cells' results, resume) is the engine's
//! neighbours' job, so another engine is one small adapter.
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::plan_file::PlanFile;

/// A task still in the engine's queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queued {
    Pending,
    Running,
}

/// A task of a job the engine still holds, by its cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    pub index: usize,
    pub state: Queued,
    /// The node running it (none while pending).
    pub node: Option<String>,
    /// Times the engine requeued it (a lost node, an operator's requeue).
    pub restarts: u32,
}

/// Cells asking for the same resources, submitted together.
pub struct Array<'a> {
    pub plan: &'a PlanFile,
    pub plan_path: &'a Path,
    pub cells: Vec<usize>,
    pub cpus: u32,
    pub memory_mb: u32,
    /// The plan's directory: the engine's script and the tasks' logs go here.
    pub dir: &'a Path,
}

/// One submitted array, as the submission record keeps it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Job {
    pub id: String,
    pub cells: Vec<usize>,
    pub submitted_unix_s: u64,
    pub log_dir: PathBuf,
}

pub trait Engine {
    /// Refuses (one line, exit 2) when the engine cannot be used from here.
    fn check(&self) -> Result<()>;
    fn submit(&self, array: &Array) -> Result<Job>;
    /// The job's tasks still queued or running.
    fn queued(&self, job: &Job) -> Result<Vec<Task>>;
    fn log_path(&self, job: &Job, index: usize) -> PathBuf;
    /// A task's id as the engine's own commands take it (`41_3`).
    fn task_id(&self, job: &Job, index: usize) -> String;
}
