//! The answer first: for each headline op, configuration × kernel, the
//! change over `none` with its interval and verdict (the HTML colours it
//! as a heat map). The per-kernel tables follow.
use super::forms::{self, baseline, by_kernel, drawn_cell, latest, op_cell};
use super::input::{self, Run};
use base::table::{Cell, Row, Table};
use bench::op_names;

/// The ops the overview shows: a file lookup, an open, a create, a
/// socket round trip (the papers' headline figures).
pub const HEADLINE_OPS: &[&str] = &[
    op_names::STAT,
    op_names::OPEN_CLOSE,
    op_names::CREATE_0K,
    op_names::UNIX,
];

/// One table per headline op that some run measured; none without lab
/// cells of more than one configuration.
pub fn tables(runs: &[Run], order: &[String]) -> Vec<Table> {
    let every_draw = latest(runs);
    let kernels = by_kernel(runs, order);
    let configs: Vec<String> = kernels
        .iter()
        .flat_map(|(_, cols)| cols.iter().map(|c| c.config.clone()))
        .fold(Vec::new(), |mut v, c| {
            if !v.contains(&c) {
                v.push(c);
            }
            v
        });
    if !runs.iter().all(|r| r.from_lab) || configs.len() < 2 {
        return Vec::new();
    }
    HEADLINE_OPS
        .iter()
        .filter(|op| runs.iter().any(|r| forms::median(r, op).is_some()))
        .map(|op| table(op, &kernels, &configs, &every_draw))
        .collect()
}

fn table(
    op: &str,
    kernels: &[(model::identity::KernelId, Vec<&Run>)],
    configs: &[String],
    every_draw: &[&Run],
) -> Table {
    let rows = configs
        .iter()
        .filter(|c| *c != input::BASELINE)
        .map(|config| Row {
            label: config.clone(),
            cells: kernels
                .iter()
                .map(|(_, cols)| {
                    let Some(c) = cols.iter().find(|c| c.config == *config) else {
                        return Cell::missing("not run");
                    };
                    let base = baseline(cols);
                    drawn_cell(every_draw, c, op, base).unwrap_or_else(|| {
                        let b = base.and_then(|b| Some((b, forms::median(b, op)?)));
                        op_cell(c, op, b)
                    })
                })
                .collect(),
        })
        .collect();
    Table {
        form: base::form::Form::Overview,
        title: format!("Overview: {op} (µs) and its change over `{}`, configuration × kernel", input::BASELINE),
        kernel: String::new(),
        notes: vec![format!(
            "The median over layout draws and its change over `{}` on the same kernel, with its interval; only a change marked with a plain percentage is established (its interval excludes 0 and it exceeds the kernel's layout floor); \"layout noise\", \"within layout floor\" and \"two layout modes\" (a side's draws fall into two groups and the change does not hold against each) are not results. Each kernel's Table 3 form below has every op.",
            input::BASELINE
        )],
        header: std::iter::once("configuration".to_string())
            .chain(kernels.iter().map(|(k, _)| k.to_string()))
            .collect(),
        rows,
    }
}
