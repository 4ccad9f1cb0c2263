//! The accounting identity's inputs: for each op of a traced cell, the
//! hook calls and the module calls its runs made (the difference of two
//! `trace ctl dump`s around the op, under `bench --timed-name`), and how
//! many runs that was. A hook's own time (the `security_*` function: the
//! framework's dispatch, stubs and every module) is the whole hook; the
//! modules' functions are its part that each module spends.
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
    /// Each hook (its `security_*` function) called during those runs;
    /// None in cells made before the whole hook was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<Vec<HookCalls>>,
}

/// A hook's `security_*` function: its calls and their time during one op.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct HookCalls {
    pub hook: String,
    pub function: String,
    /// Every call (timed or switched out).
    pub calls: u64,
    /// The timed calls, and their time (probe pairs inside already out).
    pub count: u64,
    pub sum_ns: u64,
}

impl HookCalls {
    pub fn net_ns(&self, floor_ns: f64) -> f64 {
        net_ns(self.calls, self.count, self.sum_ns, floor_ns)
    }
}

/// Time per call of the timed calls less the probe floor (never below
/// zero), times every call.
fn net_ns(calls: u64, count: u64, sum_ns: u64, floor_ns: f64) -> f64 {
    if count == 0 {
        return 0.0;
    }
    let per_call = (sum_ns as f64 / count as f64 - floor_ns).max(0.0);
    per_call * calls as f64
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
        net_ns(self.calls, self.count, self.sum_ns, floor_ns)
    }
}

type Key = (String, String);

/// A row's (calls, timed, sum) between two dumps; None if a figure went down.
type Delta = (u64, u64, u64);

fn delta(before: Option<&HookResult>, after: &HookResult) -> Option<Delta> {
    let (c0, n0, s0) = before.map_or((0, 0, 0), |b| (b.calls, b.count, b.sum_ns));
    Some((
        after.calls.checked_sub(c0)?,
        after.count.checked_sub(n0)?,
        after.sum_ns.checked_sub(s0)?,
    ))
}

fn reset(op: &str, function: &str) -> anyhow::Error {
    anyhow::anyhow!("{function}'s figures went down during {op}: the trace was reset")
}

/// The module rows of a dump by (module, function).
fn modules(t: Option<&TraceResult>) -> BTreeMap<Key, &HookResult> {
    t.map(|t| {
        t.per_lsm
            .iter()
            .map(|h| ((h.lsm.clone(), h.stats.function.clone()), &h.stats))
            .collect()
    })
    .unwrap_or_default()
}

/// The hook rows of a dump by (hook, function).
fn hooks(t: Option<&TraceResult>) -> BTreeMap<Key, &HookResult> {
    t.map(|t| {
        t.hooks
            .iter()
            .map(|h| ((h.hook.clone(), h.function.clone()), h))
            .collect()
    })
    .unwrap_or_default()
}

impl OpCalls {
    /// What happened between two cumulative dumps of one trace (`before`
    /// none: from the start). Refused if a figure went down between them
    /// (the trace was reset).
    pub fn between(
        op: &str,
        ops_run: u64,
        before: Option<&TraceResult>,
        after: &TraceResult,
    ) -> anyhow::Result<Self> {
        let (before_modules, before_hooks) = (modules(before), hooks(before));
        let mut calls = Vec::new();
        for h in &after.per_lsm {
            let key = (h.lsm.clone(), h.stats.function.clone());
            let s = &h.stats;
            let (n, timed, sum_ns) = delta(before_modules.get(&key).copied(), s)
                .ok_or_else(|| reset(op, &s.function))?;
            if n > 0 {
                calls.push(ModuleCalls {
                    lsm: h.lsm.clone(),
                    hook: s.hook.clone(),
                    function: s.function.clone(),
                    calls: n,
                    count: timed,
                    sum_ns,
                });
            }
        }
        let mut hook_calls = Vec::new();
        for h in &after.hooks {
            let key = (h.hook.clone(), h.function.clone());
            let (n, timed, sum_ns) =
                delta(before_hooks.get(&key).copied(), h).ok_or_else(|| reset(op, &h.function))?;
            if n > 0 {
                hook_calls.push(HookCalls {
                    hook: h.hook.clone(),
                    function: h.function.clone(),
                    calls: n,
                    count: timed,
                    sum_ns,
                });
            }
        }
        Ok(OpCalls {
            op: op.into(),
            ops_run,
            calls,
            hooks: Some(hook_calls),
        })
    }

    /// The whole hooks' time per run of the op, ns: Σ over every hook of
    /// calls per run × net time per call (dispatch, stubs and every module
    /// in it). None when the op ran no counted run or the cell recorded no
    /// hook rows.
    pub fn hooks_ns_per_op(&self, floor_ns: f64) -> Option<f64> {
        let hooks = self.hooks.as_ref().filter(|_| self.ops_run > 0)?;
        let sum: f64 = hooks.iter().map(|h| h.net_ns(floor_ns)).sum();
        Some(sum / self.ops_run as f64)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::LsmHookResult;

    fn stat(lsm: &str, function: &str, calls: u64, sum_ns: u64) -> LsmHookResult {
        let mut stats: HookResult = serde_json::from_value(serde_json::json!({
            "hook": function.trim_start_matches(lsm).trim_start_matches('_'),
            "function": function, "calls": calls, "count": calls, "cs_count": 0,
            "min_ns": 0, "max_ns": 0, "ave_ns": 0.0, "sum_ns": sum_ns,
            "p50_ns": null, "p99_ns": null, "allow": null, "deny": null,
            "error": null, "value": null, "not_a_decision": null, "dropped": 0,
            "hist": []
        }))
        .unwrap();
        stats.ave_ns = sum_ns as f64 / calls.max(1) as f64;
        LsmHookResult {
            lsm: lsm.into(),
            stats,
        }
    }

    fn dump(rows: Vec<LsmHookResult>) -> TraceResult {
        let f =
            std::path::Path::new(base::SOURCE_TREE).join("tests/fixtures/report/trace-6.1.json");
        let mut t: TraceResult = serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap();
        t.per_lsm = rows;
        t
    }

    #[test]
    fn an_op_owns_only_the_calls_between_its_two_dumps() {
        let before = dump(vec![
            stat("selinux", "selinux_inode_permission", 100, 30_000),
            stat("selinux", "selinux_file_open", 10, 5_000),
        ]);
        let after = dump(vec![
            stat("selinux", "selinux_inode_permission", 500, 150_000),
            stat("selinux", "selinux_file_open", 10, 5_000),
            stat("capability", "cap_task_prctl", 3, 60),
        ]);
        let op = OpCalls::between("stat", 100, Some(&before), &after).unwrap();
        let names: Vec<&str> = op.calls.iter().map(|c| c.function.as_str()).collect();
        // file_open made no call during the op: not the op's.
        assert_eq!(names, ["selinux_inode_permission", "cap_task_prctl"]);
        assert_eq!((op.calls[0].calls, op.calls[0].sum_ns), (400, 120_000));
        // 4 calls per op × (300 ns − a 100 ns floor); capability not asked for.
        let ns = op.module_ns_per_op(&["selinux".into()], 100.0).unwrap();
        assert!((ns - 800.0).abs() < 1e-9, "{ns}");
        // A call faster than the floor costs nothing, not a negative time.
        assert_eq!(
            op.module_ns_per_op(&["capability".into()], 100.0),
            Some(0.0)
        );
        assert_eq!(
            OpCalls::between("x", 0, None, &after)
                .unwrap()
                .module_ns_per_op(&[], 0.0),
            None
        );
        // A reset in between is refused, not read as a smaller op.
        let err = OpCalls::between("x", 1, Some(&after), &before).unwrap_err();
        assert!(err.to_string().contains("reset"), "{err}");
    }

    fn with_hooks(rows: Vec<(&str, u64, u64)>) -> TraceResult {
        let mut t = dump(Vec::new());
        t.hooks = rows
            .into_iter()
            .map(|(hook, calls, sum_ns)| {
                let mut h = stat("", &format!("security_{hook}"), calls, sum_ns).stats;
                h.hook = hook.into();
                h
            })
            .collect();
        t
    }

    #[test]
    fn the_whole_hook_is_its_security_function_between_the_dumps() {
        let before = with_hooks(vec![("inode_getattr", 50, 10_000), ("file_open", 7, 7_000)]);
        let after = with_hooks(vec![
            ("inode_getattr", 250, 60_000),
            ("file_open", 7, 7_000),
            ("file_permission", 100, 15_000),
        ]);
        let op = OpCalls::between("stat", 100, Some(&before), &after).unwrap();
        let hooks = op.hooks.as_ref().unwrap();
        let names: Vec<&str> = hooks.iter().map(|h| h.hook.as_str()).collect();
        assert_eq!(names, ["inode_getattr", "file_permission"]);
        // 2 × (250 − 100) + 1 × (150 − 100) per op: the stub-only dispatch counts.
        let ns = op.hooks_ns_per_op(100.0).unwrap();
        assert!((ns - 350.0).abs() < 1e-9, "{ns}");
        // An op with no hook call has a whole-hook time of zero, not none.
        let idle = OpCalls::between("null", 10, Some(&after), &after).unwrap();
        assert_eq!(idle.hooks_ns_per_op(100.0), Some(0.0));
        // A cell from before hook rows were recorded says so.
        let old: OpCalls = serde_json::from_str(r#"{"op":"stat","ops_run":5,"calls":[]}"#).unwrap();
        assert_eq!(old.hooks_ns_per_op(0.0), None);
        assert!(OpCalls::between("x", 1, Some(&after), &before).is_err());
    }
}
