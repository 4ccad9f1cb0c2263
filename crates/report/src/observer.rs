//! The observer effect: each lab cell's ops under `trace --per-lsm` (the run
//! behind Table 4) over the same ops untraced (Table 3), one column per cell.
use super::input::Run;
use base::table::{Cell, Row, Table};
use lab::host::observer::{effects, times, OpEffect};

/// One table over every run with both a traced and an untraced benchmark;
/// none where no run has both.
pub fn table(runs: &[Run]) -> Option<Table> {
    let cells: Vec<(&Run, Vec<OpEffect>)> = runs
        .iter()
        .filter_map(|r| Some((r, effects(r.bench.as_ref()?, r.traced_bench.as_ref()?))))
        .filter(|(_, e)| !e.is_empty())
        .collect();
    let (first, _) = cells.first()?;
    let mut ops: Vec<&str> = Vec::new();
    for (_, e) in &cells {
        for o in e {
            if !ops.contains(&o.op.as_str()) {
                ops.push(&o.op);
            }
        }
    }
    let mut header = vec!["op".to_string()];
    header.extend(
        cells
            .iter()
            .map(|(r, _)| format!("{} ({})", r.config, r.kernel)),
    );
    let rows = ops
        .iter()
        .map(|op| Row {
            label: op.to_string(),
            cells: cells
                .iter()
                .map(|(_, e)| match e.iter().find(|x| x.op == *op) {
                    Some(x) => Cell::text(times(x.ratio)),
                    None => Cell::missing("not in both runs"),
                })
                .collect(),
        })
        .collect();
    Some(Table {
        form: base::form::Form::Observer,
        title: "observer effect: each op under trace over untraced (×1.47 = 47 % slower)".into(),
        kernel: first.kernel.to_string(),
        notes: vec![format!(
            "{} time; traced: one sample per op under `trace --per-lsm` (every LSM hook and \
             each active LSM's own functions timed, the run behind Table 4); untraced: the \
             median of Table 3's samples. MB/s ops: untraced over traced, so above 1 is slower there too.",
            first.time
        )],
        header,
        rows,
    })
}
