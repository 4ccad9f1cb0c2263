//! The committed layout floor: per kernel and op, how far the `none`
//! configuration's draws alone spread, pooled over every committed run and
//! build that measured them. A run of one draw a side (the main job) is
//! judged against it: a change is established only beyond what a change of
//! layout alone moved that op on that kernel.
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const FLOOR_SCHEMA: &str = "lsmpmon.floor/1";

/// Fewer draws than this give no reference: their spread understates the
/// floor too often.
pub const MIN_REFERENCE_DRAWS: usize = 5;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FloorTable {
    pub schema: String,
    /// The results directories the floor was made from.
    pub made_from: Vec<String>,
    pub floors: Vec<OpFloor>,
    /// Per kernel, how often the one-draw-a-side rule calls a difference
    /// between two draws of `none` established.
    #[serde(default)]
    pub error_rates: Vec<RuleErrorRate>,
}

/// The one-draw-a-side rule's false-positive rate on one kernel, measured
/// leave-two-out: every ordered pair of committed draws of `none` (and its
/// twins) of an op, judged against the floor the other draws give.
/// Pairs share draws, so they are not independent comparisons: the rate
/// is what the committed draws show, not a bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RuleErrorRate {
    pub series: String,
    pub flavour: String,
    pub cpus: u32,
    /// Ordered pairs of draws judged, over every op with a floor.
    pub comparisons: usize,
    /// Of them, established (|change| above the floor of the rest).
    pub false_positives: usize,
    /// false_positives / comparisons, percent.
    pub rate_pct: f64,
    /// The ops whose pairs were ever established, with their count.
    pub by_op: Vec<(String, usize)>,
}

/// One kernel's floor for one op.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OpFloor {
    pub series: String,
    pub flavour: String,
    pub cpus: u32,
    pub op: String,
    /// (max − min) / min of the draws' medians, percent.
    pub floor_pct: f64,
    /// Draws of `none` pooled (each a boot with its own layout).
    pub draws: usize,
    /// Distinct lsmpmon builds among them (a build is one more draw).
    pub builds: usize,
    /// The kernel packages' versions the draws ran.
    pub kernel_versions: Vec<String>,
    /// Only draws whose samples waited for earlier samples' deferred work;
    /// false: every draw, older ones too (an upper bound of the floor).
    #[serde(default)]
    pub settled: bool,
}

impl FloorTable {
    /// The rule's false-positive rate measured on that kernel's draws.
    pub fn error_rate(&self, series: &str, flavour: &str, cpus: u32) -> Option<&RuleErrorRate> {
        self.error_rates
            .iter()
            .find(|r| r.series == series && r.flavour == flavour && r.cpus == cpus)
    }

    /// The floor of `op` on that kernel, if enough draws measured it.
    pub fn get(&self, series: &str, flavour: &str, cpus: u32, op: &str) -> Option<&OpFloor> {
        self.floors.iter().find(|f| {
            f.series == series
                && f.flavour == flavour
                && f.cpus == cpus
                && f.op == op
                && f.draws >= MIN_REFERENCE_DRAWS
        })
    }
}
