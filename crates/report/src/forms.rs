//! The papers' tables from runs: the Table 3 form (operations ×
//! configurations: value and % over the baseline), the Table 4 form (hooks ×
//! configurations: floor-subtracted ns per call) and the footprint.
use super::input::{ops, Run, BASELINE};
use base::papers;
use base::stats::overhead_pct;
use base::table::{Cell, Row, Table};
use model::bench::{OpResult, Unit};
use model::cell::CellStatus;
use model::identity::KernelId;
use model::provenance::TimeMode;
use model::trace::{HookResult, TraceResult};

/// The hooks of the LSMPMON paper's Table 4 (dentry_open is file_open today).
pub const PAPER_HOOKS: &[&str] = &[
    "path_mknod",
    "path_unlink",
    "path_truncate",
    "inode_init_security",
    "inode_create",
    "inode_unlink",
    "inode_permission",
    "file_open",
];
const TOP_HOOKS: usize = 10;

/// The newest run per (kernel, configuration, layout draw), ordered by the
/// kernel's label, the configuration and the draw.
pub fn latest(runs: &[Run]) -> Vec<&Run> {
    let mut out: Vec<&Run> = Vec::new();
    for r in runs {
        match out
            .iter_mut()
            .find(|o| o.kernel == r.kernel && o.config == r.config && o.draw == r.draw)
        {
            Some(o) if o.started_unix_s <= r.started_unix_s => *o = r,
            Some(_) => {}
            None => out.push(r),
        }
    }
    out.sort_by_cached_key(|r| (r.kernel.to_string(), r.config.clone(), r.draw));
    out
}

/// The passed draws of `of`'s kernel and configuration among `runs`
/// (`latest`'s), in draw order: only those measured as `of` was (kernel
/// package, samples, clock, …): draws measured otherwise are not pooled.
pub fn draws<'a>(runs: &[&'a Run], of: &Run) -> Vec<&'a Run> {
    runs.iter()
        .filter(|r| r.kernel == of.kernel && r.config == of.config && r.passed())
        .filter(|r| r.alike == of.alike)
        .copied()
        .collect()
}

/// A table per kernel that `table` fills (kernel label, its runs in
/// `order`, every run's latest draw), none where it returns None.
pub fn per_kernel(
    runs: &[Run],
    order: &[String],
    table: impl Fn(&str, &[&Run], &[&Run]) -> Option<Table>,
) -> Vec<Table> {
    let every_draw = latest(runs);
    by_kernel(runs, order)
        .into_iter()
        .filter_map(|(k, cols)| table(&k.to_string(), &cols, &every_draw))
        .collect()
}

/// The kernels in first-seen order and, for each, its runs in `order`
/// (configurations not in `order` follow in first-seen order).
pub fn by_kernel<'a>(runs: &'a [Run], order: &[String]) -> Vec<(KernelId, Vec<&'a Run>)> {
    let latest = latest(runs);
    let mut kernels: Vec<&KernelId> = Vec::new();
    let mut configs: Vec<String> = order.to_vec();
    for r in runs {
        if !kernels.contains(&&r.kernel) {
            kernels.push(&r.kernel);
        }
        if !configs.contains(&r.config) {
            configs.push(r.config.clone());
        }
    }
    kernels
        .into_iter()
        .map(|k| {
            let cols = configs
                .iter()
                .filter_map(|c| {
                    // One column a configuration: its first passed draw
                    // stands for it (the Table 3 form reads every draw).
                    let mine = || latest.iter().filter(|r| r.kernel == *k && r.config == *c);
                    mine()
                        .find(|r| r.passed() && r.trace.is_some())
                        .or_else(|| mine().find(|r| r.passed()))
                        .or_else(|| mine().next())
                        .copied()
                })
                .collect();
            (k.clone(), cols)
        })
        .collect()
}

/// Every table the runs can fill, kernel by kernel.
pub fn all(runs: &[Run], order: &[String]) -> Vec<Table> {
    let mut out = Vec::new();
    let every_draw = latest(runs);
    for (k, cols) in by_kernel(runs, order) {
        let k = k.to_string();
        if cols.iter().any(|c| !ops(c).is_empty()) {
            out.push(table3(&k, &cols, &every_draw));
        }
        if cols.iter().any(|c| trace(c).is_some()) {
            out.push(table4(&k, &cols));
        }
        // A lab kernel always gets its footprint: a cell that could not be
        // measured says there why (not applicable, proof failed, …).
        if cols.iter().any(|c| c.from_lab || c.footprint.is_some()) {
            out.push(footprint(&k, &cols, &every_draw));
        }
    }
    out
}

pub fn missing(c: &Run) -> Option<Cell> {
    let why = match c.status {
        CellStatus::Passed => return None,
        CellStatus::NotApplicable => "not applicable",
        CellStatus::ProofFailed => "proof failed",
        CellStatus::Failed => "failed",
        CellStatus::Interrupted => "interrupted",
    };
    Some(Cell::missing(why))
}

fn header(cols: &[&Run], first: &str) -> Vec<String> {
    std::iter::once(first.to_string())
        .chain(cols.iter().map(|c| c.config.clone()))
        .collect()
}

/// The op's result, if the run measured it.
pub fn op<'a>(c: &'a Run, op: &str) -> Option<&'a OpResult> {
    ops(c).iter().find(|o| o.op == op)
}

/// Every op the runs measured, in first-seen order, with its unit.
pub fn op_names(runs: &[&Run]) -> Vec<(String, Unit)> {
    let mut names: Vec<(String, Unit)> = Vec::new();
    for o in runs.iter().flat_map(|r| ops(r)) {
        if !names.iter().any(|(n, _)| *n == o.op) {
            names.push((o.op.clone(), o.unit));
        }
    }
    names
}

/// How a row names an op's unit: ns per op are shown as µs.
pub fn unit_label(unit: Unit) -> &'static str {
    if unit == Unit::NsPerOp {
        "µs"
    } else {
        unit.name()
    }
}

/// (major, minor) of a release string ("6.12.57+deb13-cloud-amd64", "7.3").
pub fn version(release: &str) -> Option<(u32, u32)> {
    let mut nums = release.split(['.', '-', '+']).map(str::parse::<u32>);
    Some((nums.next()?.ok()?, nums.next()?.ok()?))
}

/// The median of `op`, if the run measured it.
pub fn median(c: &Run, name: &str) -> Option<f64> {
    op(c, name).map(|o| o.summary.median)
}

/// The kernel's baseline: the run named `none`, else (single results, not
/// lab cells) the first one given.
pub fn baseline<'a>(cols: &[&'a Run]) -> Option<&'a Run> {
    let named = cols.iter().find(|c| c.config == BASELINE);
    let first = cols.first().filter(|c| !c.from_lab);
    named.or(first).copied().filter(|c| c.passed())
}

pub fn op_cell(c: &Run, name: &str, base: Option<(&Run, f64)>) -> Cell {
    if let Some(m) = missing(c) {
        return m;
    }
    let Some(o) = op(c, name) else {
        return Cell::missing("not run");
    };
    let v = o.summary.median;
    let shown = if o.unit == Unit::NsPerOp { v / 1e3 } else { v };
    let pct = base
        .filter(|(b, _)| b.config != c.config && b.alike == c.alike)
        .map(|(_, b)| overhead_pct(o.unit.higher_is_better(), b, v));
    Cell::Value {
        value: shown,
        pct,
        mark: None,
    }
}

/// The op's figure over the column's draws (`every_draw`: `latest`'s runs):
/// None where neither it nor its baseline has two draws (its one cell is
/// the figure, as before draws); one draw beside a drawn baseline is
/// judged against the baseline's draws.
pub fn drawn_cell(every_draw: &[&Run], c: &Run, name: &str, base: Option<&Run>) -> Option<Cell> {
    let figures = |of: &Run| -> Vec<f64> {
        draws(every_draw, of)
            .iter()
            .filter_map(|r| median(r, name))
            .collect()
    };
    let mine = figures(c);
    let base_draws = base.map_or(0, |b| draws(every_draw, b).len());
    if missing(c).is_some() || mine.is_empty() {
        return None;
    }
    let unit = op(c, name)?.unit;
    let shown = |v: f64| if unit == Unit::NsPerOp { v / 1e3 } else { v };
    if mine.len().max(base_draws) < 2 {
        if !c.from_lab {
            return None;
        }
        // One draw a side: judged against the kernel's committed floor, or
        // no change shown where there is none to judge it by.
        let change = base
            .filter(|b| b.config != c.config && b.alike == c.alike)
            .and_then(|b| figures(b).first().copied())
            .zip(super::floor::reference(&c.kernel, name))
            .and_then(|(b, f)| {
                base::draws::against_reference(unit.higher_is_better(), b, mine[0], f.floor_pct)
            });
        return Some(Cell::Drawn {
            value: shown(mine[0]),
            draws: 1,
            spread_pct: 0.0,
            change,
        });
    }
    let value = base::stats::median(&mine);
    let floor = kernel_floor_pct(every_draw, c, name);
    let change = base
        .filter(|b| b.config != c.config && b.alike == c.alike)
        .and_then(|b| {
            base::draws::change_over_floor(unit.higher_is_better(), &figures(b), &mine, floor)
        });
    Some(Cell::Drawn {
        value: shown(value),
        draws: mine.len(),
        spread_pct: base::draws::spread_pct(&mine),
        change,
    })
}

/// The layout floor of `of`'s kernel for `op`: the widest spread any
/// configuration measured alike on that kernel shows over its own draws.
pub fn kernel_floor_pct(every_draw: &[&Run], of: &Run, op: &str) -> f64 {
    let mut configs: Vec<&str> = Vec::new();
    for r in every_draw
        .iter()
        .filter(|r| r.kernel == of.kernel && r.alike == of.alike)
    {
        if !configs.contains(&r.config.as_str()) {
            configs.push(&r.config);
        }
    }
    configs
        .iter()
        .filter_map(|config| {
            let v: Vec<f64> = every_draw
                .iter()
                .filter(|r| {
                    r.kernel == of.kernel
                        && r.config == *config
                        && r.alike == of.alike
                        && r.passed()
                })
                .filter_map(|r| median(r, op))
                .collect();
            (v.len() >= 2).then(|| base::draws::spread_pct(&v))
        })
        .fold(0.0, f64::max)
}

/// The one-draw rule's measured false-positive rate on each kernel among
/// `cols` (empty where none is committed).
fn error_rate_note(cols: &[&Run]) -> String {
    let mut seen: Vec<&model::identity::KernelId> = Vec::new();
    let mut parts = Vec::new();
    for c in cols {
        if seen.contains(&&c.kernel) {
            continue;
        }
        seen.push(&c.kernel);
        if let Some(r) = super::floor::error_rate(&c.kernel) {
            parts.push(format!(
                "{}: {} % ({} of {})",
                c.kernel, r.rate_pct, r.false_positives, r.comparisons
            ));
        }
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(
        " This rule's false-positive rate, measured on the committed draws of `none` and its twins (each pair of draws of an op judged against the floor of the others): {}.",
        parts.join("; ")
    )
}

/// How the Table 3 form's figures were drawn: one sentence for its notes.
fn draws_note(every_draw: &[&Run], cols: &[&Run]) -> String {
    let counts: Vec<usize> = cols.iter().map(|c| draws(every_draw, c).len()).collect();
    let most = counts.iter().copied().max().unwrap_or(0);
    if most < 2 {
        return format!("One layout draw a configuration: each change is judged against the kernel's committed layout floor for the op (what {} or more layout draws of `none` alone spread, results/floor.json): shown with the interval change ± floor, established only beyond it; a change below it reads \"layout noise\" or \"within layout floor\". Where no floor is committed for the kernel and op no change is shown; run with --draws for changes judged by their own draws.{}", model::floor::MIN_REFERENCE_DRAWS, error_rate_note(cols));
    }
    let base = cols.iter().find(|c| c.config == BASELINE);
    let one_draw_base = if base.is_some_and(|b| draws(every_draw, b).len() == 1) {
        " A baseline of one draw has no floor: beside it a drawn column shows no change."
    } else {
        ""
    };
    format!(
        "Medians over layout draws (up to {most} a configuration; each draw one boot with its own recorded clock, each exactly repeatable; draws measured otherwise than a column's first are not pooled). A change is shown with its interval (bootstrap 95 % of the change of medians from {} draws a side, else the range over every pair of draws) and as established only when the interval excludes 0 and the change exceeds the kernel's layout floor for the op (the widest spread any configuration on that kernel shows over its own draws, at least virtual time's {} %); otherwise it reads \"within layout floor\" (the interval excludes 0) or \"layout noise\" with its interval.{one_draw_base}",
        base::draws::BOOTSTRAP_FROM,
        base::stats::VIRTUAL_DETERMINISM_PCT
    )
}

pub fn table3(kernel: &str, cols: &[&Run], every_draw: &[&Run]) -> Table {
    let base = baseline(cols);
    let mut names: Vec<(&str, Unit)> = Vec::new();
    for c in cols {
        for o in ops(c) {
            if !names.iter().any(|(n, _)| *n == o.op) {
                names.push((&o.op, o.unit));
            }
        }
    }
    let rows = names
        .iter()
        .map(|(name, unit)| {
            let base_v = base.and_then(|b| Some((b, median(b, name)?)));
            Row {
                label: format!("{name} ({})", unit_label(*unit)),
                cells: cols
                    .iter()
                    .map(|c| {
                        drawn_cell(every_draw, c, name, base)
                            .unwrap_or_else(|| op_cell(c, name, base_v))
                    })
                    .collect(),
            }
        })
        .collect();
    let base_name = base.map_or("(no passed baseline)".to_string(), |b| {
        format!("`{}`", b.config)
    });
    Table {
        form: base::form::Form::Table3,
        title: format!(
            "Table 3 form ({}; {}): operations × configurations, kernel {kernel}",
            papers::cite(&papers::LSMPMON, "Table 3"),
            papers::cite(&papers::EMBEDDED_SELINUX, "Tables 1-2"),
        ),
        kernel: kernel.into(),
        notes: vec![
            format!(
                "{} time; median of each op; untraced; (x %) over {base_name}, only where measured alike: same kernel package (lab) or release and host (single results), samples, time mode; positive = slower (for MB/s rows: less bandwidth).",
                time_mode(cols)
            ),
            draws_note(every_draw, cols),
        ],
        header: header(cols, "operation"),
        rows,
    }
}

pub fn time_mode(cols: &[&Run]) -> String {
    let mut modes: Vec<TimeMode> = cols.iter().map(|c| c.time).collect();
    modes.sort();
    modes.dedup();
    match modes.as_slice() {
        [TimeMode::Virtual] => "Virtual (QEMU TCG -icount: 1 ns ≈ one guest instruction)".into(),
        [TimeMode::Real] => "Real (host clock)".into(),
        _ => format!(
            "Mixed ({}) —  compare within one mode only",
            modes.iter().map(|m| m.name()).collect::<Vec<_>>().join("/")
        ),
    }
}

pub fn trace(c: &Run) -> Option<&TraceResult> {
    c.trace.as_ref()
}

/// The probe floor to take out of a trace's figures (0 when the trace
/// already subtracted it, or has none).
pub fn floor(t: &TraceResult) -> f64 {
    if t.options.subtract_floor {
        return 0.0;
    }
    t.probe.floor_ns.unwrap_or(0.0)
}

pub fn timed(r: &HookResult, floor_ns: f64) -> Option<f64> {
    if r.count == 0 {
        return None;
    }
    Some((r.ave_ns - floor_ns).max(0.0))
}

/// `hook`'s cost in run `c`: its modules' own functions, or (no module of
/// its own) the security_* hook itself.
pub fn hook_cost(c: &Run, hook: &str) -> Option<Cell> {
    if let Some(m) = missing(c) {
        return Some(m);
    }
    let t = trace(c)?;
    let fl = floor(t);
    let Some(h) = t.hooks.iter().find(|h| h.hook == hook) else {
        return Some(Cell::missing("not traced"));
    };
    if c.measured_lsms.is_empty() {
        let nested = t
            .per_lsm
            .iter()
            .any(|r| r.stats.hook == hook && r.stats.count > 0);
        if below_floor(h, fl) {
            return Some(Cell::missing(BELOW_FLOOR));
        }
        return timed(h, fl).map(|v| Cell::Value {
            value: v,
            pct: None,
            mark: Some(if nested { "h*".into() } else { "h".into() }),
        });
    }
    let rows: Vec<&HookResult> = t
        .per_lsm
        .iter()
        .filter(|r| r.stats.hook == hook && c.measured_lsms.contains(&r.lsm))
        .map(|r| &r.stats)
        .collect();
    if rows.is_empty() {
        return Some(not_probed(t, hook, &c.measured_lsms).unwrap_or_else(|| Cell::missing("N/A")));
    }
    if rows.iter().all(|r| r.count == 0) {
        return Some(Cell::missing("not called"));
    }
    if rows.iter().all(|r| below_floor(r, fl)) {
        return Some(Cell::missing(BELOW_FLOOR));
    }
    Some(Cell::value(rows.iter().filter_map(|r| timed(r, fl)).sum()))
}

/// A measured module's implementation of `hook` that the trace found but
/// could not probe, with the reason (not in BTF, not traceable): never N/A.
fn not_probed(t: &TraceResult, hook: &str, lsms: &[String]) -> Option<Cell> {
    t.probe.unmapped.iter().find_map(|u| {
        let (h, lsm) = u.hook.strip_suffix(')')?.split_once(" (")?;
        (h == hook && lsms.iter().any(|l| l == lsm))
            .then(|| Cell::missing(format!("not probed: {}", u.reason)))
    })
}

/// What a call costs when it measures no more than the empty probe pair.
pub const BELOW_FLOOR: &str = "≤ floor";

/// A timed row whose average is within a nanosecond of the floor or under
/// it: indistinguishable from an empty function, not a cost of 0.
pub fn below_floor(r: &HookResult, floor_ns: f64) -> bool {
    floor_ns > 0.0 && r.count > 0 && r.ave_ns < floor_ns + 1.0
}

/// The kprobe fallback (kernels before 5.17) has no floor to subtract: its
/// figures carry the kprobe pair's own cost and are flagged.
/// Each fallback column's probe floor (None: it measured none).
fn fallback_floors(cols: &[&Run]) -> Vec<Option<f64>> {
    cols.iter()
        .filter(|c| fallback(c))
        .filter_map(|c| trace(c))
        .map(|t| {
            (floor(t) > 0.0 || t.options.subtract_floor).then(|| t.probe.floor_ns.unwrap_or(0.0))
        })
        .collect()
}

/// What `k` means, as the fallback columns were measured: their floor
/// (an empty kprobe pair's) subtracted where they measured one.
fn fallback_note(floors: &[Option<f64>]) -> Option<String> {
    if floors.is_empty() {
        return None;
    }
    let measured: Vec<f64> = floors.iter().flatten().copied().collect();
    let head = "k: kprobe/kretprobe fallback (kernel before 5.17)";
    Some(if measured.len() == floors.len() {
        let (lo, hi) = base::draws::extent(&measured);
        let range = if (hi - lo).abs() < 0.5 {
            format!("{lo:.0}")
        } else {
            format!("{lo:.0}-{hi:.0}")
        };
        format!("{head}: its own probe floor ({range} ns, an empty kprobe pair) is subtracted, but a kprobe pair disturbs a call more than fentry/fexit; compare k figures within their kernel only.")
    } else {
        format!("{head}: no probe floor was measured for some of these columns, so their figures include the kprobe pair's own cost; compare k figures within their kernel only.")
    })
}

pub fn fallback(c: &Run) -> bool {
    trace(c).is_some_and(|t| t.probe.fallback.is_some())
}

/// A figure of a kprobe-fallback trace, marked `k` (after any mark it has).
pub fn flag_fallback(c: &Run, cell: Cell) -> Cell {
    match cell {
        Cell::Value { value, pct, mark } if fallback(c) => Cell::Value {
            value,
            pct,
            mark: Some(mark.map_or("k".into(), |m| format!("{m} k"))),
        },
        other => other,
    }
}

/// The paper's hooks, then those where the modules spent most time.
pub fn table4_hooks(cols: &[&Run]) -> Vec<String> {
    let mut hooks: Vec<String> = PAPER_HOOKS.iter().map(|s| s.to_string()).collect();
    let mut costs: Vec<(String, f64)> = Vec::new();
    for c in cols {
        let Some(t) = trace(c) else { continue };
        for r in &t.per_lsm {
            if c.measured_lsms.contains(&r.lsm) {
                if let Some(v) = timed(&r.stats, floor(t)) {
                    costs.push((r.stats.hook.clone(), v * r.stats.count as f64));
                }
            }
        }
    }
    costs.sort_by(|a, b| b.1.total_cmp(&a.1));
    for (h, _) in costs {
        if hooks.len() >= PAPER_HOOKS.len() + TOP_HOOKS {
            break;
        }
        if !hooks.contains(&h) {
            hooks.push(h);
        }
    }
    hooks
}

pub fn table4(kernel: &str, cols: &[&Run]) -> Table {
    let untraced = Cell::missing("not traced");
    let rows: Vec<Row> = table4_hooks(cols)
        .iter()
        .map(|h| Row {
            label: h.clone(),
            cells: cols
                .iter()
                .map(|c| {
                    let cell = hook_cost(c, h).unwrap_or_else(|| {
                        Cell::missing(if trace(c).is_none() {
                            "no trace"
                        } else {
                            "not called"
                        })
                    });
                    flag_fallback(c, cell)
                })
                .collect(),
        })
        // A hook no run traced (a single trace of a few hooks) is no row.
        .filter(|r: &Row| r.cells.iter().any(|c| *c != untraced))
        .collect();
    let unit = if cols.iter().all(|c| c.time == TimeMode::Virtual) {
        "virtual ns"
    } else {
        "ns"
    };
    let k_floors = fallback_floors(cols);
    let floor_note = if k_floors.contains(&None) {
        "probe floor subtracted, none for k"
    } else {
        "probe floor subtracted"
    };
    Table {
        form: base::form::Form::Table4,
        title: format!(
            "Table 4 form ({}): LSM hooks × configurations, kernel {kernel} ({unit} per call, {floor_note})",
            papers::cite(&papers::LSMPMON, "Table 4")
        ),
        kernel: kernel.into(),
        notes: [
            format!("{} time. Each module's own implementation of the hook (trace --per-lsm), summed over its functions; N/A: the module does not implement the hook; not probed: it does, but the trace could not attach to it (the reason given).", time_mode(cols)),
            format!("h: no module of its own (none; ima before 6.9, where it is not an LSM): the security_* hook itself. h*: includes lsmpmon's probe on a nested module function (capability's), so it overstates. {BELOW_FLOOR}: within 1 ns of the empty probe pair or under it."),
            format!("Hooks: those of {} ({}), then the {TOP_HOOKS} where the modules spent most time (average × calls) during the benchmark.", papers::cite(&papers::LSMPMON, "Table 4"), PAPER_HOOKS.join(", ")),
        ].into_iter().chain(fallback_note(&k_floors)).collect(),
        header: header(cols, "hook"),
        rows,
    }
}

/// A row of one figure per run: why not, where the run did not pass; "–"
/// where it has no such figure.
pub fn figure_row(label: &str, cols: &[&Run], f: &dyn Fn(&Run) -> Option<f64>) -> Row {
    Row {
        label: label.into(),
        cells: cols
            .iter()
            .map(|c| missing(c).unwrap_or_else(|| f(c).map_or(Cell::missing("–"), Cell::value)))
            .collect(),
    }
}

/// A − B of used memory over the draws of both: the median of the pairs'
/// differences with their range (draws move it by MiB); None where neither
/// side has two draws.
fn drawn_a_minus_b(every_draw: &[&Run], c: &Run, base: &Run) -> Option<Cell> {
    let used = |of: &Run| -> Vec<f64> {
        draws(every_draw, of)
            .iter()
            .filter_map(|r| Some(r.footprint.as_ref()?.after_setup.used_kib as f64))
            .collect()
    };
    let (mine, theirs) = (used(c), used(base));
    if mine.is_empty() || theirs.is_empty() || mine.len().max(theirs.len()) < 2 {
        return None;
    }
    let diffs: Vec<f64> = mine
        .iter()
        .flat_map(|m| theirs.iter().map(move |b| m - b))
        .collect();
    let (lo, hi) = base::draws::extent(&diffs);
    let value = base::stats::median(&mine) - base::stats::median(&theirs);
    Some(Cell::Value {
        value,
        pct: None,
        mark: Some(format!(
            "[{}, {}], {}×{} draws",
            base::table::fmt_signed(lo, 0),
            base::table::fmt_signed(hi, 0),
            mine.len(),
            theirs.len()
        )),
    })
}

pub fn footprint(kernel: &str, cols: &[&Run], every_draw: &[&Run]) -> Table {
    let base_run = baseline(cols);
    let base = base_run
        .and_then(|c| c.footprint.as_ref())
        .map(|f| f.after_setup.used_kib as f64);
    let alike = |c: &Run| base_run.is_some_and(|b| b.alike == c.alike);
    let row = |label: &str, f: &dyn Fn(&Run) -> Option<f64>| figure_row(label, cols, f);
    Table {
        form: base::form::Form::Footprint,
        title: format!(
            "Footprint ({}), kernel {kernel}",
            papers::cite(&papers::EMBEDDED_SELINUX, "Tables 8, 9, 11")
        ),
        kernel: kernel.into(),
        notes: vec![format!(
            "memory: MemTotal − MemFree − Buffers − Cached − SReclaimable after setup, KiB (cells from this version: after sync and dropping the caches, read until two reads agree within 64 KiB); A − B is minus `{BASELINE}` on the same kernel package and options (– where `{BASELINE}` did not pass or was measured otherwise); with draws, the median's difference and [the range over every pair of draws] — one draw of A − B moves by MiB with the layout. LSM slab caches: KiB in the slab caches named after a module (avtab, avc, sidtab, ebitmap, hashtab, aa_, tomoyo, landlock, iint, smack, …; a module's kmalloc memory is not among them; – for cells made before). Added: bytes of files, programs and libraries the configuration puts in the guest. Cells that record the per-CPU free lists (`per_cpu_free_kib`) count their pages as free; older cells count them as used, which alone moves a boot's figure by MiB on 6.12 (see the atlas in BENCHMARKS.md)."
        )],
        header: header(cols, "figure"),
        rows: vec![
            row("memory used (KiB)", &|c| {
                c.footprint.as_ref().map(|f| f.after_setup.used_kib as f64)
            }),
            {
                let mut r = row("A − B (KiB)", &|c| {
                    let used = c.footprint.as_ref()?.after_setup.used_kib as f64;
                    alike(c).then_some(used - base?)
                });
                for (cell, c) in r.cells.iter_mut().zip(cols) {
                    let drawn = base_run
                        .filter(|b| alike(c) && missing(c).is_none() && b.config != c.config)
                        .and_then(|b| drawn_a_minus_b(every_draw, c, b));
                    if let Some(d) = drawn {
                        *cell = d;
                    }
                }
                r
            },
            row("LSM slab caches (KiB)", &|c| {
                c.footprint.as_ref()?.lsm_slab_kib().map(|k| k as f64)
            }),
            row("setup added (KiB)", &|c| {
                let f = c.footprint.as_ref()?;
                Some(f.after_setup.used_kib as f64 - f.before_setup.used_kib as f64)
            }),
            row("policy (bytes)", &|c| {
                c.footprint.as_ref().map(|f| f.policy_bytes as f64)
            }),
            row("added to guest (bytes)", &|c| c.bytes_added.map(|b| b as f64)),
        ],
    }
}
