//! A plan's submissions, kept beside the plan (`jobs.json`): which engine,
//! which arrays, which cells each ran.
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::{engine::Job, files};
use base::error::usage;

pub const RECORD_SCHEMA: &str = "lsmpmon.lab-submissions/1";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Submissions {
    pub schema: String,
    pub plan_id: String,
    pub engine: String,
    pub jobs: Vec<Job>,
}

impl Submissions {
    pub fn new(plan_id: &str, engine: &str) -> Self {
        Self {
            schema: RECORD_SCHEMA.into(),
            plan_id: plan_id.into(),
            engine: engine.into(),
            jobs: Vec::new(),
        }
    }

    /// The newest job that ran cell `index`.
    pub fn last_job(&self, index: usize) -> Option<&Job> {
        self.jobs.iter().rev().find(|j| j.cells.contains(&index))
    }

    /// How many submissions included cell `index`.
    pub fn jobs_of(&self, index: usize) -> usize {
        self.jobs
            .iter()
            .filter(|j| j.cells.contains(&index))
            .count()
    }

    pub fn write(&self, plan_path: &Path) -> Result<()> {
        files::write_json(&path(plan_path), self)
    }

    /// The record beside the plan, if it was ever submitted.
    pub fn read(plan_path: &Path, plan_id: &str) -> Result<Option<Self>> {
        let p = path(plan_path);
        if !p.exists() {
            return Ok(None);
        }
        let r: Submissions = files::read_json(&p, "a record of submissions")?;
        if r.schema != RECORD_SCHEMA || r.plan_id != plan_id {
            return Err(usage(format!(
                "{}: not this plan's submissions (schema {}, plan {})",
                p.display(),
                r.schema,
                r.plan_id
            )));
        }
        Ok(Some(r))
    }
}

pub fn path(plan_path: &Path) -> PathBuf {
    plan_path.with_file_name("jobs.json")
}
