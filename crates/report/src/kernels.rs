//! The Table 5 form across kernels (LSMPMON, Table 5: one kernel's file
//! operations and their increase, set against an older kernel's): for each
//! configuration measured on two kernels or more, its ops × kernels, each
//! figure with its % over `none` on the same kernel package, and what
//! changed in the kernel between them that is known to move LSM costs.
use super::forms;
use super::input::{Run, BASELINE};
use base::table::{Cell, Row, Table};
use base::{papers, stats};
use model::bench::Unit;
use model::identity::KernelId;

/// Changes in the kernel that move what a configuration's tables show: the
/// release that brought each, and the configurations (by name prefix) whose
/// Table 5 form names it.
const CHANGES: &[((u32, u32), &[&str], &str)] = &[
    (
        (5, 13),
        &["landlock"],
        "5.13 added Landlock (Debian's 5.10 has none: its cell is not applicable)",
    ),
    (
        (6, 9),
        &["ima"],
        "6.9 made IMA and EVM LSMs of their own (listed in /sys/kernel/security/lsm, called through the LSM hooks rather than from the VFS directly)",
    ),
    (
        (6, 12),
        &["none"],
        "6.12 calls LSM hooks through static calls: a hook passes one static-key slot per module built in (a NOP while the slot is off) and calls each enabled module directly, where 6.1 walked a list of the enabled modules' function pointers. Virtual time counts instructions, so a hook no module implements costs a few ns more from 6.12 on (the median below, from the Table 4 form's `none` column)",
    ),
];

/// One Table 5 form per configuration that ran on two kernels or more.
pub fn tables(runs: &[Run], order: &[String]) -> Vec<Table> {
    let per_kernel = forms::by_kernel(runs, order);
    if per_kernel.len() < 2 {
        return Vec::new();
    }
    let mut configs: Vec<&str> = Vec::new();
    for (_, cols) in &per_kernel {
        for c in cols.iter().filter(|c| c.from_lab) {
            if !configs.contains(&c.config.as_str()) {
                configs.push(&c.config);
            }
        }
    }
    let every_draw = forms::latest(runs);
    configs
        .into_iter()
        .filter_map(|config| table(config, &per_kernel, &every_draw))
        .collect()
}

/// A kernel's run of the configuration and that kernel's baseline.
struct Column<'a> {
    kernel: &'a KernelId,
    run: &'a Run,
    base: Option<&'a Run>,
}

fn table(config: &str, per_kernel: &[(KernelId, Vec<&Run>)], every_draw: &[&Run]) -> Option<Table> {
    let cols: Vec<Column> = per_kernel
        .iter()
        .filter_map(|(k, runs)| {
            let run = runs.iter().find(|r| r.config == config)?;
            Some(Column {
                kernel: k,
                run,
                base: forms::baseline(runs),
            })
        })
        .collect();
    if cols.len() < 2 || !cols.iter().any(|c| c.run.passed()) {
        return None;
    }
    let names = forms::op_names(&cols.iter().map(|c| c.run).collect::<Vec<_>>());
    let rows: Vec<Row> = names
        .iter()
        .map(|(name, unit)| Row {
            label: format!("{name} ({})", forms::unit_label(*unit)),
            cells: cols.iter().map(|c| cell(c, name, every_draw)).collect(),
        })
        .collect();
    let runs: Vec<&Run> = cols.iter().map(|c| c.run).collect();
    let mut notes = vec![format!(
        "{} time; median of each op; untraced; (x %) over `{BASELINE}` on the same kernel package, only where measured alike; positive = slower. Not applicable: the kernel lacks what the configuration needs (its cell says what).",
        forms::time_mode(&runs)
    )];
    notes.extend(largest_change(&cols, &names, &rows));
    notes.extend(changes_between(config, &cols));
    if config == BASELINE {
        notes.extend(bare_hook_costs(&cols));
    }
    Some(Table {
        form: base::form::Form::Table5,
        title: format!(
            "Table 5 form ({}): {config} across kernels",
            papers::cite(&papers::LSMPMON, "Table 5")
        ),
        kernel: cols
            .iter()
            .map(|c| c.kernel.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        notes,
        header: std::iter::once("operation".to_string())
            .chain(cols.iter().map(|c| c.kernel.to_string()))
            .collect(),
        rows,
    })
}

/// Over the column's draws where it has several (as the Table 3 form).
fn cell(c: &Column, op: &str, every_draw: &[&Run]) -> Cell {
    if let Some(drawn) = forms::drawn_cell(every_draw, c.run, op, c.base) {
        return drawn;
    }
    let base = c.base.and_then(|b| Some((b, forms::median(b, op)?)));
    forms::op_cell(c.run, op, base)
}

fn pct(c: &Cell) -> Option<f64> {
    match c {
        Cell::Value { pct, .. } => *pct,
        Cell::Drawn {
            change: Some(d), ..
        } if d.established => Some(d.pct),
        _ => None,
    }
}

/// The op whose overhead moved most between the first and the last kernel
/// that both have one (read from the table's rows, one per op in `names`).
fn largest_change(cols: &[Column], names: &[(String, Unit)], rows: &[Row]) -> Option<String> {
    let mut best: Option<(f64, String)> = None;
    for ((name, _), row) in names.iter().zip(rows) {
        let with: Vec<(&Column, f64)> = cols
            .iter()
            .zip(&row.cells)
            .filter_map(|(c, cell)| Some((c, pct(cell)?)))
            .collect();
        let (Some((first, a)), Some((last, b))) = (with.first(), with.last()) else {
            continue;
        };
        if std::ptr::eq(*first, *last) {
            continue;
        }
        let line = format!(
            "Largest change in overhead: {name} {a:+.1} % on {} → {b:+.1} % on {}.",
            first.kernel, last.kernel
        );
        if best.as_ref().is_none_or(|(d, _)| (b - a).abs() > *d) {
            best = Some(((b - a).abs(), line));
        }
    }
    best.map(|(_, line)| line)
}

/// The median cost of a hook call that no module implements (`none`'s `h`
/// figures without a nested module function), per kernel traced with a
/// probe floor (the kprobe fallback has none to take out).
fn bare_hook_costs(cols: &[Column]) -> Option<String> {
    let parts: Vec<String> = cols
        .iter()
        .filter(|c| c.run.passed() && !forms::fallback(c.run))
        .filter_map(|c| {
            let t = forms::trace(c.run)?;
            let floor_ns = forms::floor(t);
            let nested: Vec<&str> = t
                .per_lsm
                .iter()
                .filter(|r| r.stats.count > 0)
                .map(|r| r.stats.hook.as_str())
                .collect();
            let costs_ns: Vec<f64> = t
                .hooks
                .iter()
                .filter(|h| !nested.contains(&h.hook.as_str()))
                .filter_map(|h| forms::timed(h, floor_ns))
                .collect();
            (!costs_ns.is_empty()).then(|| {
                format!(
                    "{:.1} ns on {} ({} hooks)",
                    stats::median(&costs_ns),
                    c.kernel,
                    costs_ns.len()
                )
            })
        })
        .collect();
    (parts.len() >= 2).then(|| {
        format!(
            "Table 4 form, `{BASELINE}`: the median call of a hook no module implements costs {}.",
            parts.join(", ")
        )
    })
}

/// The framework changes released between the oldest and newest kernel.
fn changes_between(config: &str, cols: &[Column]) -> Vec<String> {
    let versions: Vec<(u32, u32)> = cols
        .iter()
        .filter_map(|c| forms::version(&c.run.origin.kernel_release))
        .collect();
    let (Some(lo), Some(hi)) = (versions.iter().min(), versions.iter().max()) else {
        return Vec::new();
    };
    CHANGES
        .iter()
        .filter(|(v, names, _)| lo < v && v <= hi && names.iter().any(|n| config.starts_with(n)))
        .map(|(_, _, what)| format!("Between these kernels: {what}."))
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::forms::version;

    #[test]
    fn versions_of_debian_releases() {
        assert_eq!(version("6.12.57+deb13-cloud-amd64"), Some((6, 12)));
        assert_eq!(version("5.10.0-32-cloud-amd64"), Some((5, 10)));
        assert_eq!(version("7.3.4+deb13-cloud-amd64"), Some((7, 3)));
        assert_eq!(version("garbage"), None);
    }
}
