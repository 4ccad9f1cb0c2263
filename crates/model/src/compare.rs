//! `compare --format json` (schema `lsmpmon.compare/1`): every figure two
//! runs share, its change and the verdict on it. Fields in alphabetical
//! order: the order this document has always had.
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use base::stats::Verdict;

pub const COMPARE_SCHEMA: &str = "lsmpmon.compare/1";

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CompareResult {
    /// The earlier run's path.
    pub a: String,
    /// Significance level of the real-time test.
    pub alpha: f64,
    /// The later run's path.
    pub b: String,
    pub changes: Vec<Change>,
    /// Differences between where A and B were measured that --force let through.
    pub forced: Vec<String>,
    pub lsmpmon_version: String,
    pub schema: String,
    /// Virtual time's determinism across boots, percent: smaller changes are noise.
    pub virtual_determinism_pct: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Change {
    pub a: f64,
    pub b: f64,
    /// "bench OP" or "hook HOOK".
    pub figure: String,
    pub kernel: String,
    /// Positive = B slower than A (for MB/s: less bandwidth).
    pub overhead_pct: f64,
    pub p_value: Option<f64>,
    pub run: String,
    /// "exact (±0.5 %)" or "Mann-Whitney p=…".
    pub test: String,
    pub unit: String,
    pub verdict: Verdict,
}
