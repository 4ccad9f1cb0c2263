//! `report --format json` (schema `lsmpmon.report/1`): the tables with the
//! runs they were made from.
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::cell::CellStatus;
use super::provenance::TimeMode;
use base::table::Table;

pub const REPORT_SCHEMA: &str = "lsmpmon.report/1";

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ReportResult {
    pub schema: String,
    pub lsmpmon_version: String,
    /// The paths given, as given.
    pub inputs: Vec<String>,
    pub runs: Vec<RunRef>,
    pub warnings: Vec<String>,
    pub tables: Vec<Table>,
}

/// One run a report read: where from, what it is, whether it passed.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RunRef {
    pub source: String,
    /// As the tables name it ("6.1", "6.1 (amd64) 2cpu", a release).
    pub kernel: String,
    pub config: String,
    pub status: CellStatus,
    pub reason: Option<String>,
    pub time: TimeMode,
}
