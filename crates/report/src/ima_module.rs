//! The integrity-measurement paper's kernel-module measurement from lab
//! cells that ran the `ima_module_*` ops: one module load's latency by way
//! in (a file through finit_module, a buffer through init_module) and case,
//! with IMA's share over `none`, beside the paper's finding that a module
//! measured in memory has no clean hit. One table per kernel.
use super::forms::{by_kernel, drawn_cell, draws, latest, median, missing, op, time_mode};
use super::input::{Run, BASELINE};
use base::form::Form;
use base::papers;
use base::table::{Cell, Row, Table};
use bench::op_names;

/// (our op, case label, what the paper's load_module measurement did).
const CASES: &[(&str, &str, &str)] = &[
    (
        op_names::IMA_MODULE_CACHED,
        "finit_module, cached (clean, measured)",
        "no such case: no clean hit",
    ),
    (
        op_names::IMA_MODULE_REHASH,
        "finit_module, rehash (rewritten, digest listed)",
        "SHA1",
    ),
    (
        op_names::IMA_MODULE_EXTEND,
        "finit_module, extend (new bytes)",
        "SHA1+extend",
    ),
    (
        op_names::IMA_MODULE_BUFFER_REHASH,
        "init_module buffer, same bytes (digest listed)",
        "SHA1",
    ),
    (
        op_names::IMA_MODULE_BUFFER_EXTEND,
        "init_module buffer, extend (new bytes)",
        "SHA1+extend",
    ),
];

fn median_us(r: &Run, name: &str) -> Option<f64> {
    median(r, name).map(|m| m / 1e3)
}

fn has_module_ops(r: &Run) -> bool {
    CASES.iter().any(|(name, ..)| op(r, name).is_some())
}

pub fn tables(runs: &[Run], order: &[String]) -> Vec<Table> {
    let every = latest(runs);
    let mut out = Vec::new();
    for (kernel, cols) in by_kernel(runs, order) {
        // Failed cells are columns too, where another cell loaded modules.
        let measured: Vec<&Run> = cols
            .iter()
            .copied()
            .filter(|c| c.measured.is_some() && (has_module_ops(c) || !c.passed()))
            .collect();
        if !measured.iter().any(|c| has_module_ops(c)) {
            continue;
        }
        let base = cols
            .iter()
            .copied()
            .find(|c| c.config == BASELINE && c.passed() && has_module_ops(c));
        out.push(table(&kernel.to_string(), &every, &measured, base));
    }
    out
}

fn table(kernel: &str, every: &[&Run], cols: &[&Run], base: Option<&Run>) -> Table {
    let mut header = vec!["case".to_string()];
    for c in cols {
        header.push(format!("{} µs", c.config));
        header.push(format!("{} − none µs", c.config));
    }
    header.push("paper's load_module".into());
    let base_us = |name: &str| base.and_then(|b| over_draws_us(every, b, name));
    let mut rows: Vec<Row> = CASES
        .iter()
        .map(|&(name, label, paper)| {
            let mut cells = Vec::new();
            for c in cols {
                cells.extend(case_cells(every, c, name, base));
            }
            cells.push(Cell::text(paper));
            Row {
                label: label.into(),
                cells,
            }
        })
        .collect();
    let mut reference = Vec::new();
    for _ in cols {
        reference.push(base_us(CASES[0].0).map_or(Cell::missing("no none cell"), Cell::value));
        reference.push(Cell::missing("–"));
    }
    reference.push(Cell::missing("–"));
    rows.push(Row {
        label: "reference (none, finit_module)".into(),
        cells: reference,
    });
    Table {
        form: Form::ImaModule,
        title: format!(
            "IMA module-load measurement, {} ({}), kernel {kernel}",
            module_size(cols, base),
            papers::cite(&papers::IMA, "§ Performance Evaluation")
        ),
        kernel: kernel.into(),
        notes: notes(cols),
        header,
        rows,
    }
}

/// The bytes one load gave the kernel, from the ops' own proof of work.
fn module_size(cols: &[&Run], base: Option<&Run>) -> String {
    let per_load = cols.iter().copied().chain(base).find_map(|c| {
        CASES.iter().find_map(|(name, ..)| {
            let o = op(c, name)?;
            (o.proof_ops > 0).then(|| o.proof_bytes / o.proof_ops)
        })
    });
    match per_load {
        Some(b) => format!("a {b}-byte module"),
        None => "the kernel's test module".into(),
    }
}

/// The median over `r`'s draws of `name`, µs.
fn over_draws_us(every: &[&Run], r: &Run, name: &str) -> Option<f64> {
    let mut figures: Vec<f64> = draws(every, r)
        .iter()
        .filter_map(|d| median_us(d, name))
        .collect();
    if figures.is_empty() {
        figures.extend(median_us(r, name));
    }
    (!figures.is_empty()).then(|| base::stats::median(&figures))
}

/// A run's latency (over its draws, with its change and interval over
/// `none` when there are several) and IMA's share (minus `none`).
fn case_cells(every: &[&Run], c: &Run, name: &str, base: Option<&Run>) -> [Cell; 2] {
    if let Some(m) = missing(c) {
        return [m.clone(), m];
    }
    let Some(us) = over_draws_us(every, c, name) else {
        return [Cell::missing("not run"), Cell::missing("–")];
    };
    let share = base
        .and_then(|b| over_draws_us(every, b, name))
        .map_or(Cell::missing("no none cell"), |b| Cell::value(us - b));
    let drawn = drawn_cell(every, c, name, base);
    // A change judged (over draws, or one draw against the committed floor)
    // is shown as such; an extend without a TPM that is not says so.
    if let Some(
        d @ Cell::Drawn {
            change: Some(_), ..
        },
    ) = drawn
    {
        return [d, share];
    }
    let no_tpm = name.ends_with("_extend") && c.measured.as_ref().is_some_and(|m| !m.tpm);
    if no_tpm {
        return [
            Cell::text(format!("{} (no TPM)", base::table::fmt_value(us))),
            share,
        ];
    }
    [drawn.unwrap_or(Cell::value(us)), share]
}

fn notes(cols: &[&Run]) -> Vec<String> {
    vec![
        format!(
            "{} time; median µs of one load, each timed alone (unloading, rewriting the file and \
             opening it are not timed); with draws, the median over them [interval] and the change \
             over `none`, established only beyond the kernel's layout floor. − none: minus the same \
             op on the `none` configuration of the same kernel, IMA's own share. extend (no TPM): \
             listed, not extended.",
            time_mode(cols)
        ),
        "The module is a small library module of the kernel's own package (crc7, else crc-itu-t, \
         else cordic: no init, no exit, no dependency), loaded unsigned with an 8-byte tag \
         appended; only the tag differs between an extend op's loads. finit_module is measured by \
         a `measure func=MODULE_CHECK` rule, and IMA keeps that it measured the file, as for mmap; \
         init_module's buffer is measured by `measure func=CRITICAL_DATA label=modules` on the \
         kernels that have that hook (mainline since 2024: 6.12 and 7.3 here; 5.10 and 6.1 \
         measure no buffer, and their buffer rows equal `none`), hashed at every load in the \
         committed cells (one reduced run on 7.3 saw the same bytes hashed in its first sample \
         only: not explained yet)."
            .into(),
        "The paper measured modules in load_module, in memory before relocation: \"we do not have \
         clean hits but only the cases SHA1 or SHA1+extend\", at about the latency of the mmap \
         hook's (Table 1). It gives no figures of its own for modules."
            .into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Measured;

    /// A run on a kernel without a committed layout floor: one draw a side
    /// is shown as measured, not judged.
    fn run(config: &str, measured: bool, medians: &[(&str, f64)]) -> Run {
        let mut r = crate::test_runs::run("5.4", "cloud", 1, config, medians);
        r.source = config.into();
        r.measured = measured.then(|| Measured {
            tpm: false,
            algo: Some("sha256".into()),
            idled_in_host_time: false,
        });
        r
    }

    /// The figure of a cell: one draw a side on a kernel with a committed
    /// floor is a drawn cell, judged against that floor.
    fn value(c: &Cell) -> f64 {
        match c {
            Cell::Value { value, .. } | Cell::Drawn { value, .. } => *value,
            other => panic!("not a figure: {other:?}"),
        }
    }

    fn text(c: &Cell) -> String {
        match c {
            Cell::Text { text } => text.clone(),
            Cell::Missing { why } => why.clone(),
            other => panic!("not a text: {other:?}"),
        }
    }

    #[test]
    fn each_case_is_over_none_and_an_extend_without_tpm_says_so() {
        let none = run(
            "none",
            false,
            &[
                (op_names::IMA_MODULE_CACHED, 140e3),
                (op_names::IMA_MODULE_REHASH, 141e3),
                (op_names::IMA_MODULE_EXTEND, 142e3),
                (op_names::IMA_MODULE_BUFFER_REHASH, 139e3),
                (op_names::IMA_MODULE_BUFFER_EXTEND, 139e3),
            ],
        );
        let ima = run(
            "ima",
            true,
            &[
                (op_names::IMA_MODULE_CACHED, 141e3),
                (op_names::IMA_MODULE_REHASH, 447e3),
                (op_names::IMA_MODULE_EXTEND, 450e3),
            ],
        );
        let t = tables(&[none, ima], &["none".into(), "ima".into()]);
        assert_eq!(t.len(), 1, "one table, for the kernel with a measured cell");
        assert_eq!(t[0].header[1..3], ["ima µs", "ima − none µs"]);
        let row = |label: &str| {
            t[0].rows
                .iter()
                .find(|r| r.label.starts_with(label))
                .unwrap()
        };
        let rehash = row("finit_module, rehash");
        assert_eq!(value(&rehash.cells[0]), 447.0);
        assert_eq!(value(&rehash.cells[1]), 306.0);
        assert_eq!(text(&rehash.cells[2]), "SHA1");
        assert!(text(&row("finit_module, extend").cells[0]).ends_with("(no TPM)"));
        assert_eq!(text(&row("init_module buffer, same").cells[0]), "not run");
        assert_eq!(value(&row("reference").cells[0]), 140.0);
    }
}
