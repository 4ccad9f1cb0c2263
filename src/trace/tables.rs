//! A trace result's own tables (LSMPMON's per-hook table, per LSM, per
//! syscall), built from its JSON so that `trace` and `report` print the same.
use serde_json::Value;

use crate::base::papers;
use crate::base::table::{Cell, Row, Table};

fn unit(t: &Value) -> &'static str {
    if t["provenance"]["time"] == "virtual" {
        "virtual ns"
    } else {
        "ns"
    }
}

fn kernel(t: &Value) -> String {
    t["provenance"]["kernel_release"]
        .as_str()
        .unwrap_or("")
        .into()
}

fn n(v: &Value) -> Cell {
    v.as_f64().map_or(Cell::missing("–"), Cell::value)
}

/// -EACCES/-EPERM returns; "n/a" where the return is not a decision, "-" for void hooks.
fn deny_cell(h: &Value) -> Cell {
    match (h["deny"].as_u64(), h["not_a_decision"].is_string()) {
        (Some(d), _) => Cell::value(d as f64),
        (None, true) => Cell::missing("n/a"),
        (None, false) => Cell::missing("-"),
    }
}

/// The hooks with calls, in the trace's order.
pub fn called_hooks(t: &Value) -> Vec<&Value> {
    t["hooks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|h| h["calls"].as_u64().unwrap_or(0) > 0)
        .collect()
}

/// LSMPMON's table (the LSMPMON paper's Fig. 3): min / max / ave / count / cs_count per hook.
pub fn hooks(t: &Value, hooks: &[&Value], what: &str) -> Table {
    let u = unit(t);
    let floor = match (
        t["probe"]["floor_ns"].as_f64(),
        t["options"]["subtract_floor"].as_bool(),
    ) {
        (Some(f), Some(true)) => format!("probe floor {f:.0} {u} subtracted"),
        (Some(f), _) => format!("probe floor {f:.0} {u} not subtracted"),
        (None, _) => "no probe floor measured".into(),
    };
    Table {
        form: "hooks".into(),
        title: format!(
            "per hook ({}){what} ({u}; cs_count = calls switched out, not timed)",
            papers::cite(&papers::LSMPMON, "Fig. 3")
        ),
        kernel: kernel(t),
        notes: vec![format!(
            "{} time; {floor}; probe {}.",
            t["provenance"]["time"].as_str().unwrap_or("?"),
            t["probe"]["method"].as_str().unwrap_or("?")
        )],
        header: [
            "hook", "min", "max", "ave", "count", "cs_count", "deny", "dropped",
        ]
        .map(String::from)
        .to_vec(),
        rows: hooks
            .iter()
            .map(|h| Row {
                label: h["hook"].as_str().unwrap_or("?").into(),
                cells: vec![
                    n(&h["min_ns"]),
                    n(&h["max_ns"]),
                    h["ave_ns"]
                        .as_f64()
                        .map_or(Cell::missing("–"), |a| Cell::value(a.round())),
                    n(&h["count"]),
                    n(&h["cs_count"]),
                    deny_cell(h),
                    n(&h["dropped"]),
                ],
            })
            .collect(),
    }
}

/// Each LSM's own average per hook (the LSMPMON paper's Table 4); N/A where
/// the LSM has no implementation of the hook.
pub fn per_lsm(t: &Value, hooks: &[&Value]) -> Table {
    let rows = t["per_lsm"].as_array().cloned().unwrap_or_default();
    let mut lsms: Vec<String> = Vec::new();
    for l in rows.iter().filter_map(|r| r["lsm"].as_str()) {
        if !lsms.iter().any(|x| x == l) {
            lsms.push(l.to_string());
        }
    }
    Table {
        form: "per_lsm".into(),
        title: format!(
            "per LSM (average {} of each module's own implementation)",
            unit(t)
        ),
        kernel: kernel(t),
        notes: Vec::new(),
        header: std::iter::once("hook".to_string())
            .chain(lsms.iter().cloned())
            .collect(),
        rows: hooks
            .iter()
            .map(|h| Row {
                label: h["hook"].as_str().unwrap_or("?").into(),
                cells: lsms
                    .iter()
                    .map(|l| {
                        rows.iter()
                            .find(|r| r["lsm"] == l.as_str() && r["hook"] == h["hook"])
                            .and_then(|r| r["ave_ns"].as_f64())
                            .map_or(Cell::missing("N/A"), |a| Cell::value(a.round()))
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// Hook time attributed to the caller's syscall: a total row per syscall,
/// then its hooks (at most `per_syscall`).
pub fn per_syscall(t: &Value, top: Option<usize>, per_syscall: usize) -> Table {
    let all = t["syscalls"].as_array().cloned().unwrap_or_default();
    let k = top.unwrap_or(all.len()).min(all.len());
    let mut rows = Vec::new();
    for s in &all[..k] {
        let share = match (s["total_ns"].as_u64(), s["lsm_share"].as_f64()) {
            (Some(tot), Some(sh)) => format!(
                "(all hooks) of {tot} in the syscall, {:.1} % in LSM hooks",
                sh * 100.0
            ),
            _ => "(all hooks)".into(),
        };
        let name = s["syscall"].as_str().unwrap_or("?");
        rows.push(Row {
            label: name.into(),
            cells: vec![
                Cell::text(share),
                n(&s["hook_count"]),
                n(&s["hook_sum_ns"]),
                Cell::missing(""),
            ],
        });
        for h in s["hooks"]
            .as_array()
            .into_iter()
            .flatten()
            .take(per_syscall)
        {
            rows.push(Row {
                label: String::new(),
                cells: vec![
                    Cell::text(h["hook"].as_str().unwrap_or("?")),
                    n(&h["count"]),
                    n(&h["sum_ns"]),
                    h["ave_ns"]
                        .as_f64()
                        .map_or(Cell::missing("–"), |a| Cell::value(a.round())),
                ],
            });
        }
    }
    Table {
        form: "per_syscall".into(),
        title: format!(
            "per syscall (hook time attributed to the caller's syscall, {})",
            unit(t)
        ),
        kernel: kernel(t),
        notes: Vec::new(),
        header: ["syscall", "hook", "count", "sum", "ave"]
            .map(String::from)
            .to_vec(),
        rows,
    }
}
