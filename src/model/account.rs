//! The accounting identity's inputs: for each op of a traced cell, the
//! module calls its runs made (the difference of two `trace ctl dump`s
//! around the op, under `bench --timed-name`), and how many runs that was.
use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::trace::{HookResult, TraceResult};

/// One op's share of a trace.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct OpCalls {
    pub op: String,
    /// Every run of the op under the timed name (calibration and warm-up too).
    pub ops_run: u64,
    /// Each module function called during those runs.
    pub calls: Vec<ModuleCalls>,
}

/// A module's function (`--per-lsm`): its calls and their time during one op.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct ModuleCalls {
    pub lsm: String,
    pub hook: String,
    pub function: String,
    /// Every call (timed or switched out).
    pub calls: u64,
    /// The timed calls, and their time (probe pairs inside already out).
    pub count: u64,
    pub sum_ns: u64,
}

impl ModuleCalls {
    /// Time per call of the timed calls less the probe floor, times every call.
    pub fn net_ns(&self, floor_ns: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let per_call = (self.sum_ns as f64 / self.count as f64 - floor_ns).max(0.0);
        per_call * self.calls as f64
    }
}

type Key = (String, String);

fn totals(t: Option<&TraceResult>) -> BTreeMap<Key, &HookResult> {
    t.map(|t| {
        t.per_lsm
            .iter()
            .map(|h| ((h.lsm.clone(), h.stats.function.clone()), &h.stats))
            .collect()
    })
    .unwrap_or_default()
}

impl OpCalls {
    /// What happened between two cumulative dumps of one trace (`before`
    /// none: from the start).
    pub fn between(
        op: &str,
        ops_run: u64,
        before: Option<&TraceResult>,
        after: &TraceResult,
    ) -> Self {
        let before = totals(before);
        let calls = after
            .per_lsm
            .iter()
            .filter_map(|h| {
                let key = (h.lsm.clone(), h.stats.function.clone());
                let (c0, n0, s0) = before
                    .get(&key)
                    .map_or((0, 0, 0), |b| (b.calls, b.count, b.sum_ns));
                let s = &h.stats;
                let calls = s.calls.saturating_sub(c0);
                (calls > 0).then(|| ModuleCalls {
                    lsm: h.lsm.clone(),
                    hook: s.hook.clone(),
                    function: s.function.clone(),
                    calls,
                    count: s.count.saturating_sub(n0),
                    sum_ns: s.sum_ns.saturating_sub(s0),
                })
            })
            .collect();
        OpCalls {
            op: op.into(),
            ops_run,
            calls,
        }
    }

    /// Module time per run of the op, ns: Σ over the `lsms`' functions of
    /// calls per run × net time per call.
    pub fn module_ns_per_op(&self, lsms: &[String], floor_ns: f64) -> Option<f64> {
        if self.ops_run == 0 {
            return None;
        }
        let sum: f64 = self
            .calls
            .iter()
            .filter(|c| lsms.contains(&c.lsm))
            .map(|c| c.net_ns(floor_ns))
            .sum();
        Some(sum / self.ops_run as f64)
    }
}
