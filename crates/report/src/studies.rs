//! The other papers' tables, where the results hold their figures: the
//! sched_yield hand-over between processes and between threads (pseudo
//! multi-process, Table 3).
use super::forms::{figure_row, median, op, time_mode};
use super::input::Run;
use base::papers;
use base::table::Table;
use bench::op_names;

/// The paper's Table 3: µs for N rounds on Linux (two processes) and on its
/// system (two tasks in one address space).
const PAPER_TOTALS_US: [(u64, f64, f64); 2] = [
    (100_000, 224_670.5, 158_294.4),
    (1_000_000, 2_295_291.8, 1_264_861.5),
];

/// Rounds per sample where the run fixed them (`bench --iterations`): the
/// paper times the whole program for a given number of rounds.
fn rounds(r: &Run) -> Option<u64> {
    r.bench.as_ref()?.options.iterations
}

/// Total µs of the median sample of `op`'s fixed-rounds run.
fn total_us(r: &Run, op: &str) -> Option<f64> {
    Some(median(r, op)? * rounds(r)? as f64 / 1e3)
}

/// Median over paired samples (taken round-robin, so sample i of each op
/// ran back to back) of processes ÷ threads.
fn paired_ratio(r: &Run) -> Option<f64> {
    let samples = |name: &str| -> Option<&[f64]> { Some(&op(r, name)?.samples) };
    let (p, t) = (
        samples(op_names::YIELD_ROUNDS_PROC)?,
        samples(op_names::YIELD_ROUNDS_THREAD)?,
    );
    if p.is_empty() || p.len() != t.len() {
        return None;
    }
    let mut ratios: Vec<f64> = p.iter().zip(t).map(|(p, t)| p / t).collect();
    ratios.sort_by(f64::total_cmp);
    Some(ratios[ratios.len() / 2])
}

fn paper(r: &Run) -> Option<(f64, f64)> {
    if !has_pair(
        r,
        op_names::YIELD_ROUNDS_PROC,
        op_names::YIELD_ROUNDS_THREAD,
    ) {
        return None;
    }
    let n = rounds(r)?;
    PAPER_TOTALS_US
        .iter()
        .find(|p| p.0 == n)
        .map(|p| (p.1, p.2))
}

/// Hook calls the traced run saw inside sched_yield (a traced run that saw
/// none has no such syscall row: 0).
fn hooks_in_yield(r: &Run) -> Option<f64> {
    let trace = r.trace.as_ref()?;
    // --lean records no per-syscall cells: its silence proves nothing.
    if trace.options.lean {
        return None;
    }
    Some(
        trace
            .syscalls
            .iter()
            .filter(|s| s.syscall == "sched_yield")
            .map(|s| s.hook_count as f64)
            .fold(0.0, |a, n| a + n),
    )
}

fn has_pair(r: &Run, a: &str, b: &str) -> bool {
    median(r, a).is_some() && median(r, b).is_some()
}

/// Processes vs threads switching with sched_yield: the paper's form (total
/// µs for N rounds of its own program) where a run fixed the rounds, and the
/// per-switch hand-over figures.
pub fn yield_table(runs: &[&Run]) -> Option<Table> {
    let cols: Vec<&Run> = runs
        .iter()
        .copied()
        .filter(|r| {
            has_pair(r, op_names::YIELD_PROC, op_names::YIELD_THREAD)
                || has_pair(
                    r,
                    op_names::YIELD_ROUNDS_PROC,
                    op_names::YIELD_ROUNDS_THREAD,
                )
        })
        .collect();
    if cols.is_empty() {
        return None;
    }
    let row = |label: &str, f: &dyn Fn(&Run) -> Option<f64>| figure_row(label, &cols, f);
    let ratio = |c: &Run, a: &str, b: &str| Some(median(c, a)? / median(c, b)?);
    Some(Table {
        form: base::form::Form::Yield,
        title: format!(
            "sched_yield between processes and between threads ({})",
            papers::cite(&papers::PSEUDO_MULTIPROCESS, "Table 3")
        ),
        kernel: cols
            .iter()
            .map(|c| c.kernel.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        notes: vec![
            format!("{} time. Rounds: the paper's program (both tasks call sched_yield in a loop, pinned to one CPU; bench ops yield_rounds_proc/_thread with --iterations N = rounds); the total is the median sample's, µs, and includes creating and reaping the second task, as the paper's program does (at 100 000 rounds ≈ 0.05 %). Hand-over: one explicit turn passed (one context switch), median ns (yield_proc/_thread).", time_mode(&cols)),
            "Paired ratio: the median over samples taken back to back of processes ÷ threads. The paper's columns: Linux (two processes) and its system (two tasks in one address space), Core i7-3820QM, Linux 4.4, for the same number of rounds.".into(),
            "LSM hook calls in sched_yield: every hook call the traced run (trace --per-lsm around the same ops) counted in that syscall; – where not traced.".into(),
            "The paper's effect is the page-table switch and TLB refill between address spaces, which instruction-counted virtual time does not price: compare host real-time runs.".into(),
        ],
        header: std::iter::once("figure".to_string())
            .chain(cols.iter().map(|c| format!("{} ({})", c.config, c.kernel)))
            .collect(),
        rows: vec![
            row("rounds", &|c| rounds(c).map(|n| n as f64)),
            row("processes, N rounds (µs)", &|c| total_us(c, op_names::YIELD_ROUNDS_PROC)),
            row("threads, N rounds (µs)", &|c| total_us(c, op_names::YIELD_ROUNDS_THREAD)),
            row("processes ÷ threads (paired)", &paired_ratio),
            row("the paper: Linux, N rounds (µs)", &|c| paper(c).map(|p| p.0)),
            row("the paper: one address space (µs)", &|c| paper(c).map(|p| p.1)),
            row("the paper: ratio", &|c| paper(c).map(|p| p.0 / p.1)),
            row("processes (ns per hand-over)", &|c| median(c, op_names::YIELD_PROC)),
            row("threads (ns per hand-over)", &|c| median(c, op_names::YIELD_THREAD)),
            row("processes ÷ threads (hand-over)", &|c| {
                ratio(c, op_names::YIELD_PROC, op_names::YIELD_THREAD)
            }),
            row("LSM hook calls in sched_yield (traced run)", &hooks_in_yield),
        ],
    })
}
