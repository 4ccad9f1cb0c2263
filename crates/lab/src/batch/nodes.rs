//! Where a plan's cells run and ran: one line per node (its running tasks
//! by the engine's id, its passed and failed cells), and one line per cell
//! the engine requeued or that was submitted again.
use std::collections::BTreeMap;

use super::status::{CellState, State};

/// `node node1: 1 running (7_3), 2 passed, 0 failed`, by node name.
pub fn per_node(states: &[CellState]) -> Vec<String> {
    let mut nodes: BTreeMap<&str, Vec<&CellState>> = BTreeMap::new();
    for c in states {
        if let Some(n) = c.node.as_deref() {
            nodes.entry(n).or_default().push(c);
        }
    }
    nodes
        .into_iter()
        .map(|(node, cells)| {
            let n = |s: &[State]| cells.iter().filter(|c| s.contains(&c.state)).count();
            let running: Vec<&str> = cells
                .iter()
                .filter(|c| c.state == State::Running)
                .filter_map(|c| c.task_id.as_deref())
                .collect();
            let mut line = format!("node {node}: {} running", running.len());
            if !running.is_empty() {
                line.push_str(&format!(" ({})", running.join(", ")));
            }
            line.push_str(&format!(
                ", {} passed, {} failed",
                n(&[State::Passed]),
                n(&[State::Failed, State::NoResult])
            ));
            if n(&[State::NotApplicable]) > 0 {
                line.push_str(&format!(", {} not applicable", n(&[State::NotApplicable])));
            }
            line
        })
        .collect()
}

/// One line per cell whose task the engine requeued (a lost node) or that
/// was submitted again (`--resume`): what it is now, where, as which task.
pub fn moved(states: &[CellState]) -> Vec<String> {
    states
        .iter()
        .filter(|c| c.restarts > 0 || c.resubmitted > 0)
        .map(|c| {
            let mut how = Vec::new();
            if c.restarts > 0 {
                how.push(format!("requeued by the engine {} time(s)", c.restarts));
            }
            if c.resubmitted > 0 {
                how.push(format!("resubmitted {} time(s)", c.resubmitted));
            }
            let now = match c.state {
                State::Pending => "pending",
                State::Running => "running",
                State::Passed => "passed",
                State::NotApplicable => "not applicable",
                State::Failed => "failed",
                State::NoResult => "ended without a result",
                State::NotRun | State::Unknown => "state unknown",
            };
            let place = c
                .node
                .as_deref()
                .map(|n| format!(" on {n}"))
                .unwrap_or_default();
            let task = c
                .task_id
                .as_deref()
                .map(|t| format!(" (task {t})"))
                .unwrap_or_default();
            format!(
                "cell {}, {}: {}; {now}{place}{task}",
                c.cell.index,
                c.cell.describe(),
                how.join(", ")
            )
        })
        .collect()
}
