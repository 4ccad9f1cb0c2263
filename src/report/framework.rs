//! The LSM framework alone (the LSM framework paper's comparison: a kernel
//! without LSM against the same kernel with the framework and only the
//! default module) and what it costs release by release: lsmpmon's builds
//! without CONFIG_SECURITY (`<series>-nolsm`) against its builds of the same
//! source and options with the framework (booted as `none`: capability
//! only), and against Debian's build of the release.
use super::forms::{self, draws, kernel_floor_pct, median, ops, BASELINE};
use super::input::Run;
use crate::base::draws::change_over_floor;
use crate::base::form::Form;
use crate::base::papers;
use crate::base::stats::overhead_pct;
use crate::base::table::{Cell, Row, Table};
use crate::model::bench::Unit;
use crate::model::identity::KernelId;

/// The flavour of lsmpmon's kernels built without the framework.
pub const NO_LSM: &str = "nolsm";

/// A no-LSM kernel's `none` and what is set against it on the same release
/// and CPU count.
struct Family<'a> {
    release: String,
    cpus: u32,
    base: &'a Run,
    /// Own builds of the same source first, then Debian's.
    others: Vec<&'a Run>,
}

pub fn tables(runs: &[Run]) -> Vec<Table> {
    let every = forms::latest(runs);
    let families = families(&every);
    let mut out: Vec<Table> = families.iter().map(|f| table(f, &every)).collect();
    if let Some(t) = releases(&families, &every) {
        out.push(t);
    }
    out
}

/// (release, flavour, cpus) of a lab kernel.
fn parts(k: &KernelId) -> Option<(&str, &str, u32)> {
    match k {
        KernelId::Lab {
            series,
            flavour,
            cpus,
        } => Some((series, flavour, *cpus)),
        KernelId::Single { .. } => None,
    }
}

/// The release a lab series belongs to: "6.1" of "6.1-smack" and of "6.1".
fn release_of(series: &str) -> &str {
    series.split('-').next().unwrap_or(series)
}

fn families<'a>(every: &[&'a Run]) -> Vec<Family<'a>> {
    let nones: Vec<&Run> = every
        .iter()
        .filter(|r| r.config == BASELINE && r.passed())
        .copied()
        .collect();
    let mut out: Vec<Family> = Vec::new();
    for base in &nones {
        let Some((series, NO_LSM, cpus)) = parts(&base.kernel) else {
            continue;
        };
        let release = release_of(series).to_string();
        if out.iter().any(|f| f.release == release && f.cpus == cpus) {
            continue;
        }
        let mut others: Vec<&Run> = Vec::new();
        for r in &nones {
            let Some((s, flavour, c)) = parts(&r.kernel) else {
                continue;
            };
            let same_release = release_of(s) == release && c == cpus && flavour != NO_LSM;
            if same_release && !others.iter().any(|o| o.kernel == r.kernel) {
                others.push(r);
            }
        }
        // The same source first: it differs from the base by the framework alone.
        others.sort_by_key(|r| (r.kernel.series() == release, r.kernel.to_string()));
        out.push(Family {
            release,
            cpus,
            base,
            others,
        });
    }
    out
}

/// One op's change of `c` over the no-LSM base, with the interval its
/// draws give where both sides were drawn; the two kernels' layout floors
/// decide whether it is established.
fn change(every: &[&Run], base: &Run, c: &Run, op: &str, unit: Unit) -> Cell {
    let figures = |of: &Run| -> Vec<f64> {
        draws(every, of)
            .iter()
            .filter_map(|r| median(r, op))
            .collect()
    };
    let (b, v) = (figures(base), figures(c));
    let shown = |x: f64| if unit == Unit::NsPerOp { x / 1e3 } else { x };
    if v.is_empty() {
        return Cell::missing("not run");
    }
    let alike = base.alike.but_kernel() == c.alike.but_kernel();
    if b.len() >= 2 && v.len() >= 2 && alike {
        let floor = kernel_floor_pct(every, base, op).max(kernel_floor_pct(every, c, op));
        return Cell::Drawn {
            value: shown(crate::base::stats::median(&v)),
            draws: v.len(),
            spread_pct: crate::base::draws::spread_pct(&v),
            change: change_over_floor(unit.higher_is_better(), &b, &v, floor),
        };
    }
    let (bm, vm) = (
        crate::base::stats::median(&b),
        crate::base::stats::median(&v),
    );
    Cell::Value {
        value: shown(vm),
        pct: (alike && !b.is_empty()).then(|| overhead_pct(unit.higher_is_better(), bm, vm)),
        mark: None,
    }
}

fn op_names(runs: &[&Run]) -> Vec<(String, Unit)> {
    let mut names: Vec<(String, Unit)> = Vec::new();
    for r in runs {
        for o in ops(r) {
            if !names.iter().any(|(n, _)| *n == o.op) {
                names.push((o.op.clone(), o.unit));
            }
        }
    }
    names
}

fn column_name(f: &Family, r: &Run) -> String {
    let what = if r.kernel.series() == f.release {
        "Debian's build"
    } else {
        "framework + capability, same source"
    };
    format!("{} ({what})", r.kernel)
}

fn table(f: &Family, every: &[&Run]) -> Table {
    let cols: Vec<&Run> = std::iter::once(f.base)
        .chain(f.others.iter().copied())
        .collect();
    let rows = op_names(&cols)
        .into_iter()
        .map(|(op, unit)| Row {
            label: format!("{op} ({})", unit_label(unit)),
            cells: cols
                .iter()
                .map(|c| change(every, f.base, c, &op, unit))
                .collect(),
        })
        .collect();
    let mut header = vec![
        "operation".to_string(),
        format!("{} (no LSM framework)", f.base.kernel),
    ];
    header.extend(f.others.iter().map(|r| column_name(f, r)));
    Table {
        form: Form::Framework,
        title: format!(
            "The LSM framework alone ({}): kernel {} on {} CPU{}",
            papers::cite(&papers::LSM, "2.5.15 against 2.5.15-lsm"),
            f.release,
            f.cpus,
            if f.cpus == 1 { "" } else { "s" }
        ),
        kernel: f.base.kernel.to_string(),
        notes: vec![
            format!(
                "Every column is the `{BASELINE}` configuration (booted with lsm=capability). {} is lsmpmon's build of {} without CONFIG_SECURITY (and what needs it: the security_* hooks are empty inline functions, fanotify has no permission events); the own build beside it is the same source and options with the framework, so their difference is the framework with the capability module alone. Debian's build adds its other options (-O2 where lsmpmon's tinyconfig builds use -Os, lockdown as an early LSM, and from 6.9 IMA and EVM as LSMs).",
                f.base.kernel, f.release
            ),
            format!(
                "{} time; medians over layout draws; a change is over the no-framework kernel, with its interval, and established only where the interval excludes 0 and the change exceeds both kernels' layout floors (each the widest spread a configuration shows over its own draws on that kernel); positive = slower.",
                forms::time_mode(&cols)
            ),
        ],
        header,
        rows,
    }
}

fn unit_label(unit: Unit) -> &'static str {
    if unit == Unit::NsPerOp {
        "µs"
    } else {
        unit.name()
    }
}

/// Per family: the median over ops of each column's change, and how many
/// ops' changes are established: the framework's cost per release.
fn releases(families: &[Family], every: &[&Run]) -> Option<Table> {
    if families.is_empty() {
        return None;
    }
    let rows = families
        .iter()
        .flat_map(|f| f.others.iter().map(move |c| (f, *c)))
        .map(|(f, c)| {
            let ops = op_names(&[f.base, c]);
            let changes: Vec<Cell> = ops
                .iter()
                .map(|(op, unit)| change(every, f.base, c, op, *unit))
                .collect();
            let pcts: Vec<f64> = changes.iter().filter_map(pct_of).collect();
            let established = changes
                .iter()
                .filter(|x| matches!(x, Cell::Drawn { change: Some(d), .. } if d.established))
                .count();
            let cell = |v: Option<f64>| v.map_or(Cell::missing("–"), |v| Cell::fixed(v, 1));
            Row {
                label: column_name(f, c) + &format!(", {} CPU", f.cpus),
                cells: vec![
                    cell((!pcts.is_empty()).then(|| crate::base::stats::median(&pcts))),
                    cell(pcts.iter().copied().reduce(f64::min)),
                    cell(pcts.iter().copied().reduce(f64::max)),
                    Cell::text(format!("{established} of {}", pcts.len())),
                ],
            }
        })
        .collect();
    Some(Table {
        form: Form::FrameworkReleases,
        title: format!(
            "The LSM framework's cost release by release ({})",
            papers::cite(&papers::LSM, "2.5.15 against 2.5.15-lsm")
        ),
        kernel: String::new(),
        notes: vec![
            "Each row: one kernel's `none` against lsmpmon's no-framework build of the same release and CPU count, over the ops both ran: the median, least and greatest change in %, and how many changes are established over the layout floor (the framework form's rule). From 6.9 on a hook is a static call per module slot (a NOP while the slot is off) where 6.1 walked a list of function pointers; set the rows of 6.1 and 7.3 side by side to see what that changed.".into(),
        ],
        header: ["kernel", "median %", "least %", "greatest %", "established"]
            .map(String::from)
            .to_vec(),
        rows,
    })
}

fn pct_of(c: &Cell) -> Option<f64> {
    match c {
        Cell::Drawn {
            change: Some(d), ..
        } => Some(d.pct),
        Cell::Value { pct, .. } => *pct,
        _ => None,
    }
}
