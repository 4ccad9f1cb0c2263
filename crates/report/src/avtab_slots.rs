//! The avtab's hash slots against the policy search (the embedded-SELinux
//! paper's Table 11): at one rule count, each slot count the cells' kernels
//! gave the rules table (its own avtab line), how the rules filled it, and
//! the time of one access decision computed from the policy (`compute_av`,
//! no AVC), over the draws, against the cell with the most slots.
use super::forms::{drawn_cell, draws, latest, median, time_mode};
use super::input::Run;
use base::form::Form;
use base::papers;
use base::table::{Cell, Row, Table};
use bench::op_names;
use model::cell::{AvtabEval, AvtabFigures};

/// The op that times a decision.
pub const OP: &str = op_names::COMPUTE_AV;
/// The rule count of the paper's Table 11.
const PAPER_RULES: u64 = 8188;
/// The paper's Table 11 at 8 188 rules: (slots, longest chain, seconds for
/// 10 000 calls of security_compute_av).
const PAPER: &[(u64, u64, f64)] = &[
    (8192, 13, 9.67),
    (4096, 21, 9.65),
    (2048, 35, 9.68),
    (1024, 64, 9.78),
];

/// A cell that timed decisions with the kernel's own avtab line.
fn point(r: &Run) -> Option<(AvtabEval, &AvtabFigures)> {
    let avtab = r.footprint.as_ref()?.avtab.as_ref()?;
    median(r, OP)?;
    Some((avtab.kernel_rules?, avtab))
}

/// One table per kernel and rule count whose cells timed `compute_av` at
/// two or more slot counts.
pub fn tables(runs: &[Run]) -> Vec<Table> {
    let every = latest(runs);
    let mut groups: Vec<(String, u64, Vec<&Run>)> = Vec::new();
    for r in every.iter().copied() {
        let Some((own, _)) = point(r) else { continue };
        let key = (r.kernel.to_string(), own.entries);
        match groups.iter_mut().find(|g| (g.0.clone(), g.1) == key) {
            Some(g) if !g.2.iter().any(|c| c.config == r.config) => g.2.push(r),
            Some(_) => {}
            None => groups.push((key.0, key.1, vec![r])),
        }
    }
    groups
        .into_iter()
        .filter(|g| g.2.len() >= 2)
        .map(|(kernel, rules, mut cols)| {
            cols.sort_by_key(|r| std::cmp::Reverse(point(r).map(|p| p.0.slots)));
            table(&kernel, &cols, &every, rules)
        })
        .collect()
}

fn table(kernel: &str, cols: &[&Run], every: &[&Run], rules: u64) -> Table {
    let base = cols[0];
    let rows = cols
        .iter()
        .map(|c| {
            let (own, _) = point(c).expect("filtered to points");
            let mean_chain = own.chain_length_squared_sum as f64 / own.entries.max(1) as f64;
            let paper = PAPER
                .iter()
                .find(|p| rules == PAPER_RULES && p.0 == own.slots);
            Row {
                label: c.config.clone(),
                cells: vec![
                    Cell::value(own.slots as f64),
                    Cell::value(own.slots_used as f64),
                    Cell::value(own.longest_chain as f64),
                    Cell::fixed(mean_chain, 2),
                    decision(every, c, base),
                    paper.map_or(Cell::missing("–"), |p| Cell::value(p.1 as f64)),
                    paper.map_or(Cell::missing("–"), |p| Cell::fixed(p.2, 2)),
                ],
            }
        })
        .collect();
    Table {
        form: Form::AvtabSlots,
        title: format!(
            "The avtab's hash slots against the policy search at {rules} rules ({}), kernel {kernel}",
            papers::cite(&papers::EMBEDDED_SELINUX, "Table 11")
        ),
        kernel: kernel.into(),
        notes: vec![
            "Slots, slots used, longest chain: the kernel's own avtab line for the rules table (CONFIG_SECURITY_SELINUX_DEBUG); mean chain: Σ chain length² ÷ entries, the length of the chain an entry sits in, on average.".into(),
            format!("compute_av: {} time, µs per access decision asked through /sys/fs/selinux/access (open, write, read, close; security_compute_av_user → context_struct_compute_av, no AVC), each a lookup for every pair of the two types' own type and up to 8 attributes (up to 81 keys); median over the draws [interval], change over {} (the most slots), established only beyond the kernel's layout floor.", time_mode(cols), base.config),
            "Paper: the same rule count on Linux 2.6.24 (an embedded board), seconds for 10 000 calls of security_compute_av from SELinux's start; its slot counts were 8 192, 4 096, 2 048 and 1 024.".into(),
        ],
        header: [
            "configuration",
            "slots",
            "slots used",
            "longest chain",
            "mean chain",
            "compute_av (µs)",
            "paper: longest chain",
            "paper: s per 10 000 calls",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// The decision's time over `c`'s draws, its change over `base`'s.
fn decision(every: &[&Run], c: &Run, base: &Run) -> Cell {
    let b = (!std::ptr::eq(c, base) && c.alike == base.alike).then_some(base);
    drawn_cell(every, c, OP, b).unwrap_or_else(|| {
        let one = |r: &Run| draws(every, r).iter().find_map(|d| median(d, OP));
        match (one(c), b.and_then(one)) {
            (None, _) => Cell::missing("not run"),
            (Some(ns), base_ns) => Cell::Value {
                value: ns / 1e3,
                pct: base_ns.map(|bn| base::stats::overhead_pct(false, bn, ns)),
                mark: None,
            },
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_runs::run;
    use base::table::Cell;
    use model::cell::Footprint;

    /// A cell of `config` whose kernel gave `rules` entries `slots` slots,
    /// drawn `draw`, deciding in `ns`.
    fn cell(config: &str, rules: u64, slots: u64, draw: u32, ns: f64) -> Run {
        let mut r = run(
            "7.3-selinux",
            "avtab",
            1,
            config,
            &[(OP, ns), (op_names::STAT, 900.0)],
        );
        r.draw = draw;
        let own = AvtabEval {
            entries: rules,
            slots,
            slots_used: slots.min(rules),
            longest_chain: 3,
            chain_length_squared_sum: rules * 2,
        };
        r.footprint = Some(Footprint {
            avtab: Some(AvtabFigures {
                kernel_rules: Some(own),
                ..Default::default()
            }),
            ..Default::default()
        });
        r
    }

    #[test]
    fn slot_counts_of_one_rule_count_are_rows_most_slots_first() {
        let mut runs = Vec::new();
        for draw in 0..3 {
            let d = f64::from(draw);
            runs.push(cell("avtab-1024", 8188, 1024, draw, 60_000.0 + d));
            runs.push(cell("avtab-8192", 8188, 8192, draw, 40_000.0 + d));
            runs.push(cell("avtab-512", 8188, 512, draw, 70_000.0 + d));
        }
        // Another rule count: its own table, without the paper's figures;
        // a cell without the kernel's own line: left out.
        runs.push(cell("small-32", 75, 32, 0, 1_000.0));
        runs.push(cell("small-1024", 75, 1024, 0, 900.0));
        let mut unproved = cell("unproved", 8188, 4096, 0, 1.0);
        unproved.footprint = None;
        runs.push(unproved);
        let t = tables(&runs);
        assert_eq!(t.len(), 2);
        let small = t.iter().find(|t| t.title.contains("at 75 rules")).unwrap();
        assert_eq!(small.rows[0].label, "small-1024");
        assert!(matches!(small.rows[0].cells[6], Cell::Missing { .. }));
        let t: Vec<&Table> = t.iter().filter(|t| t.title.contains("8188")).collect();
        let labels: Vec<&str> = t[0].rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["avtab-8192", "avtab-1024", "avtab-512"]);
        assert!(t[0].title.contains("8188 rules"), "{}", t[0].title);
        // The paper's row for the same slot count, none for others.
        assert!(matches!(t[0].rows[0].cells[6], Cell::Fixed { value, .. } if value == 9.67));
        assert!(matches!(t[0].rows[2].cells[6], Cell::Missing { .. }));
        match &t[0].rows[1].cells[4] {
            Cell::Drawn {
                value,
                draws,
                change,
                ..
            } => {
                assert_eq!((*value, *draws), (60.001, 3));
                let c = change.as_ref().expect("a change over the 8192-slot cell");
                assert!((c.pct - 50.0).abs() < 0.01 && c.established, "{c:?}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn one_slot_count_alone_is_no_table() {
        assert!(tables(&[cell("avtab", 8188, 2048, 0, 1.0)]).is_empty());
    }
}
