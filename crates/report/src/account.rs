//! The accounting identity, LSMPMON's reason to exist: an op's overhead
//! over `none` against what its hooks spent in it — Σ over the hooks'
//! `security_*` functions of calls per op × net time per call, in the
//! configuration less in `none` (the framework's dispatch, stubs and every
//! module), split into the part the added modules spend in their own
//! functions and the rest; from the traced run op by op. Explained within
//! ×0.5 … ×1.5 the identity holds; an established overhead outside it is
//! flagged (⚑): something other than the hooks moves that figure.
use super::forms::{self, baseline, draws, median, missing};
use super::input::{ops, Run};
use base::papers;
use base::table::{Cell, Row, Table, EXPLAINED_RANGE};
use model::{account::OpCalls, bench::Unit};

/// The op's median over the run's draws (ns per op).
fn drawn_median(every_draw: &[&Run], c: &Run, op: &str) -> Option<f64> {
    let v: Vec<f64> = draws(every_draw, c)
        .iter()
        .filter_map(|r| median(r, op))
        .collect();
    (!v.is_empty()).then(|| base::stats::median(&v))
}

/// The modules `c` adds over the baseline: those it measures, and those
/// active in it but not in the baseline (Debian's default stack adds
/// several); capability is in every kernel.
pub fn added_modules(c: &Run, base: &Run) -> Vec<String> {
    let mut m = c.measured_lsms.clone();
    for l in &c.active_lsms {
        if l != "capability" && !base.active_lsms.contains(l) && !m.contains(l) {
            m.push(l.clone());
        }
    }
    m
}

/// The op's calls in `c`'s draw traced op by op, and that trace's probe floor.
fn traced_calls<'a>(every_draw: &[&'a Run], c: &Run, op: &str) -> Option<(&'a OpCalls, f64)> {
    let traced = draws(every_draw, c)
        .into_iter()
        .find(|r| !r.op_calls.is_empty())?;
    let t = forms::trace(traced)?;
    let calls = traced.op_calls.iter().find(|o| o.op == op)?;
    Some((calls, forms::floor(t)))
}

/// What the hooks explain of an op's overhead, ns per op: the whole hooks'
/// time in `c` less in the baseline (dispatch, stubs and every module), and
/// the part the modules `c` adds spend in their own functions. Cells made
/// before hook rows were recorded give the modules' part alone.
struct Explanation {
    hooks_ns: Option<f64>,
    modules_ns: f64,
}

fn explained(every_draw: &[&Run], c: &Run, base: &Run, op: &str) -> Option<Explanation> {
    let (calls, floor) = traced_calls(every_draw, c, op)?;
    let modules_ns = calls.module_ns_per_op(&added_modules(c, base), floor)?;
    let hooks_ns = traced_calls(every_draw, base, op).and_then(|(b, base_floor)| {
        Some(calls.hooks_ns_per_op(floor)? - b.hooks_ns_per_op(base_floor)?)
    });
    Some(Explanation {
        hooks_ns,
        modules_ns,
    })
}

/// An op the traced run ran but could not count by name (its work runs
/// in children, threads or servers of other names).
fn counted_elsewhere(every_draw: &[&Run], c: &Run, op: &str) -> bool {
    draws(every_draw, c)
        .iter()
        .flat_map(|r| &r.op_calls)
        .any(|o| o.op == op && o.ops_run == 0)
}

fn cell(every_draw: &[&Run], c: &Run, base: &Run, op: &str) -> Cell {
    if let Some(m) = missing(c) {
        return m;
    }
    let (Some(v), Some(b)) = (
        drawn_median(every_draw, c, op),
        drawn_median(every_draw, base, op),
    ) else {
        return Cell::missing("not run");
    };
    let Some(e) = explained(every_draw, c, base, op) else {
        return Cell::missing(if counted_elsewhere(every_draw, c, op) {
            "runs under other names"
        } else {
            "not traced op by op"
        });
    };
    let established = forms::drawn_cell(every_draw, c, op, Some(base))
        .is_some_and(|cell| matches!(cell, Cell::Drawn { change: Some(ch), .. } if ch.established));
    use base::table::unsigned_zero;
    Cell::Explained {
        explained_ns: unsigned_zero(e.hooks_ns.unwrap_or(e.modules_ns)),
        modules_ns: e.hooks_ns.map(|_| unsigned_zero(e.modules_ns)),
        overhead_ns: unsigned_zero(v - b),
        established,
    }
}

/// The identity for one kernel: ns-per-op ops × the configurations beside
/// the baseline; None where no run was traced op by op.
pub fn table(kernel: &str, cols: &[&Run], every_draw: &[&Run]) -> Option<Table> {
    let base = baseline(cols)?;
    if !cols.iter().any(|c| !c.op_calls.is_empty()) {
        return None;
    }
    let others: Vec<&Run> = cols
        .iter()
        .filter(|c| c.config != base.config)
        .copied()
        .collect();
    let ops: Vec<String> = ops(base)
        .iter()
        .filter(|o| o.unit == Unit::NsPerOp)
        .map(|o| o.op.clone())
        .collect();
    let traced: Vec<&Run> = cols.iter().flat_map(|c| draws(every_draw, c)).collect();
    let interrupts = interrupts_note(&traced);
    let rows = ops
        .iter()
        .map(|op| Row {
            label: format!("{op} (µs)"),
            cells: others
                .iter()
                .map(|c| cell(every_draw, c, base, op))
                .collect(),
        })
        .collect();
    Some(Table {
        form: base::form::Form::Account,
        title: format!(
            "Explained by hooks ({}'s accounting): hook time per op against the overhead over `{}`, kernel {kernel}",
            papers::cite(&papers::LSMPMON, "Table 4"),
            base.config
        ),
        kernel: kernel.into(),
        notes: vec![
            format!(
                "Each cell: what the hooks spend per op in the configuration less in `{}` — Σ over every hook's security_* function of calls per op × time per call (probe floor out): the framework's dispatch, its stubs and every module — and, in brackets, the part of it the modules the configuration adds (those it measures, and those active in it but not in the baseline) spend in their own functions; from each side's traced draw, where each op ran in its own workload, traced only while it ran (bench --untimed-name, trace --comm){}; then \"of\" the op's untraced overhead over `{}` (medians over draws), and their ratio. Cells traced before hook rows were recorded show the modules' functions alone, without brackets. Not counted: hooks in interrupt context that ran while no task of the op's was current{}, and IMA before 6.9, which the VFS calls directly, not through LSM hooks; a hook called inside another hook is counted in both. ⚑: an established overhead (Table 3 form) explained below ×{} or above ×{}: the hooks do not account for it (the layout, the harness, or work outside the hooks). An overhead within layout noise has no ratio.",
                base.config, interrupts.0, base.config, interrupts.1, EXPLAINED_RANGE.0, EXPLAINED_RANGE.1
            ),
        ],
        header: std::iter::once("operation".to_string())
            .chain(others.iter().map(|c| c.config.clone()))
            .collect(),
        rows,
    })
}

/// What the traces say of interrupt handlers' hooks: (counted, not counted).
fn interrupts_note(runs: &[&Run]) -> (&'static str, &'static str) {
    let traces = runs.iter().filter_map(|r| forms::trace(r));
    let (mut with, mut without) = (false, false);
    for t in traces {
        if t.options.with_interrupts {
            with = true;
        } else {
            without = true;
        }
    }
    match (with, without) {
        (true, false) => (
            ", with every hook an interrupt handler ran on top of it (trace --with-interrupts: a loopback packet's receive, but also an RCU callback or a timer that fell in it)",
            "",
        ),
        (true, true) => (
            ", and where traced with --with-interrupts every hook an interrupt handler ran on top of it (a loopback packet's receive, an RCU callback, a timer)",
            " (in traces without --with-interrupts, every interrupt's: tcp and udp's receive half)",
        ),
        _ => ("", " (these traces: every interrupt's, tcp and udp's receive half among them)"),
    }
}

/// The identity for every kernel that has a run traced op by op.
pub fn tables(runs: &[Run], order: &[String]) -> Vec<Table> {
    forms::per_kernel(runs, order, table)
}
