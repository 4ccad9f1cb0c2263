//! The other papers' tables, where the results hold their figures: the
//! sched_yield hand-over between processes and between threads (pseudo
//! multi-process, Table 3).
use super::forms::{bench_medians, figure_row, time_mode};
use super::input::Run;
use super::table::Table;
use crate::papers;

/// The paper's own totals (µs for 100 000 and 1 000 000 rounds) give these ratios.
const PAPER_RATIOS: &str = "224 670.5 / 158 294.4 µs = 1.42× at 100 000 rounds, 1.81× at 1 000 000";

fn median(r: &Run, op: &str) -> Option<f64> {
    bench_medians(r)
        .into_iter()
        .find(|m| m.0 == op)
        .map(|m| m.2)
}

/// Processes vs threads handing the CPU back and forth with sched_yield.
pub fn yield_table(runs: &[&Run]) -> Option<Table> {
    let cols: Vec<&Run> = runs
        .iter()
        .copied()
        .filter(|r| median(r, "yield_proc").is_some() && median(r, "yield_thread").is_some())
        .collect();
    if cols.is_empty() {
        return None;
    }
    let row = |label: &str, f: &dyn Fn(&Run) -> Option<f64>| figure_row(label, &cols, f);
    Some(Table {
        form: "yield".into(),
        title: format!(
            "sched_yield between processes and between threads ({})",
            papers::cite(&papers::PSEUDO_MULTIPROCESS, "Table 3")
        ),
        kernel: cols
            .iter()
            .map(|c| c.kernel.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        notes: vec![
            format!("{} time; median ns per hand-over (one context switch), bench ops yield_proc and yield_thread.", time_mode(&cols)),
            format!("The paper: {PAPER_RATIOS}. Its effect is the page-table switch and TLB refill between address spaces, which instruction-counted virtual time does not price: compare host real-time runs."),
        ],
        header: std::iter::once("figure".to_string())
            .chain(cols.iter().map(|c| format!("{} ({})", c.config, c.kernel)))
            .collect(),
        rows: vec![
            row("processes (ns per hand-over)", &|c| median(c, "yield_proc")),
            row("threads (ns per hand-over)", &|c| median(c, "yield_thread")),
            row("processes ÷ threads", &|c| {
                Some(median(c, "yield_proc")? / median(c, "yield_thread")?)
            }),
        ],
    })
}
