//! A lab results directory's index (schema `lsmpmon.lab-index/1`), rebuilt
//! from whatever cell files are there.
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::cell::CellStatus;

pub const INDEX_SCHEMA: &str = "lsmpmon.lab-index/1";

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Index {
    pub schema: String,
    pub cells: Vec<IndexEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct IndexEntry {
    pub id: String,
    pub file: String,
    pub kernel: String,
    pub config: String,
    pub status: CellStatus,
    pub reason: Option<String>,
    pub hostname: String,
    pub started_unix_s: u64,
}
