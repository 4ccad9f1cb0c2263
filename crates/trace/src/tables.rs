//! A trace result's own tables (LSMPMON's per-hook table, per LSM, per
//! syscall), so that `trace` and `report` print the same.
use base::papers;
use base::table::{Cell, Row, Table};
use model::hook_stat::{self, HookStat};
use model::{HookResult, TimeMode, TraceResult};

fn unit(t: &TraceResult) -> &'static str {
    if t.provenance.time == TimeMode::Virtual {
        "virtual ns"
    } else {
        "ns"
    }
}

fn n(v: u64) -> Cell {
    Cell::value(v as f64)
}

fn stat_header(stats: &[HookStat]) -> Vec<String> {
    std::iter::once("hook")
        .chain(stats.iter().map(|s| s.column))
        .map(String::from)
        .collect()
}

/// One row a hook, one cell a statistic (what it shows where the hook has none).
fn stat_rows(stats: &[HookStat], hooks: &[&HookResult]) -> Vec<Row> {
    hooks
        .iter()
        .map(|h| Row {
            label: h.hook.clone(),
            cells: stats
                .iter()
                .map(|s| match (s.value)(h) {
                    Some(v) => Cell::value(v),
                    None => Cell::missing((s.missing)(h)),
                })
                .collect(),
        })
        .collect()
}

/// The hooks with calls, in the trace's order.
pub fn called_hooks(t: &TraceResult) -> Vec<&HookResult> {
    t.hooks.iter().filter(|h| h.calls > 0).collect()
}

/// LSMPMON's table (the LSMPMON paper's Fig. 3): min / max / ave / count / cs_count per hook.
pub fn hooks(t: &TraceResult, hooks: &[&HookResult], what: &str) -> Table {
    if t.options.count_only {
        return counts(t, hooks, what);
    }
    let u = unit(t);
    let floor = match (t.probe.floor_ns, t.options.subtract_floor) {
        (Some(f), true) => format!("probe floor {f:.0} {u} subtracted"),
        (Some(f), false) => format!("probe floor {f:.0} {u} not subtracted"),
        (None, _) => "no probe floor measured".into(),
    };
    let stats: &[HookStat] = match (&t.options.sample_every, &t.options.timing_windows) {
        (Some(_), _) => &hook_stat::SAMPLED_TABLE,
        (None, Some(_)) => &hook_stat::WINDOWED_TABLE,
        (None, None) => &hook_stat::TABLE,
    };
    let sampled = match t.options.timing_note() {
        Some(note) => format!("; sampled: {note}, the rest counted as untimed"),
        None => String::new(),
    };
    Table {
        form: base::form::Form::Hooks,
        title: format!(
            "per hook ({}){what} ({u}; cs_count = calls switched out, not timed{sampled})",
            papers::cite(&papers::LSMPMON, "Fig. 3")
        ),
        kernel: t.provenance.kernel_release.clone(),
        notes: vec![format!(
            "{} time; {floor}; probe {}.",
            t.provenance.time, t.probe.method
        )],
        header: stat_header(stats),
        rows: stat_rows(stats, hooks),
    }
}

/// `--count-only`: calls and their returns per hook, nothing timed.
fn counts(t: &TraceResult, hooks: &[&HookResult], what: &str) -> Table {
    Table {
        form: base::form::Form::Hooks,
        title: format!("per hook, calls only{what} (--count-only: nothing timed)"),
        kernel: t.provenance.kernel_release.clone(),
        notes: vec![format!(
            "{} time; probe {}.",
            t.provenance.time, t.probe.method
        )],
        header: stat_header(&hook_stat::COUNT_TABLE),
        rows: stat_rows(&hook_stat::COUNT_TABLE, hooks),
    }
}

/// Each LSM's own average per hook (the LSMPMON paper's Table 4); N/A where
/// the LSM has no implementation of the hook.
pub fn per_lsm(t: &TraceResult, hooks: &[&HookResult]) -> Table {
    let mut lsms: Vec<&str> = Vec::new();
    for r in &t.per_lsm {
        if !lsms.contains(&r.lsm.as_str()) {
            lsms.push(&r.lsm);
        }
    }
    Table {
        form: base::form::Form::PerLsm,
        title: format!(
            "per LSM (average {} of each module's own implementation)",
            unit(t)
        ),
        kernel: t.provenance.kernel_release.clone(),
        notes: Vec::new(),
        header: std::iter::once("hook".to_string())
            .chain(lsms.iter().map(|l| l.to_string()))
            .collect(),
        rows: hooks
            .iter()
            .map(|h| Row {
                label: h.hook.clone(),
                cells: lsms
                    .iter()
                    .map(|l| {
                        t.per_lsm
                            .iter()
                            .find(|r| r.lsm == *l && r.stats.hook == h.hook)
                            .map_or(Cell::missing("N/A"), |r| {
                                Cell::value(r.stats.ave_ns.round())
                            })
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// Hook time attributed to the caller's syscall: a total row per syscall,
/// then its hooks (at most `per_syscall`).
pub fn per_syscall(t: &TraceResult, top: Option<usize>, per_syscall: usize) -> Table {
    let all = &t.syscalls;
    let k = top.unwrap_or(all.len()).min(all.len());
    let mut rows = Vec::new();
    for s in &all[..k] {
        let share = match (s.total_ns, s.lsm_share) {
            (Some(tot), Some(sh)) => format!(
                "(all hooks) of {tot} in the syscall, {:.1} % in LSM hooks",
                sh * 100.0
            ),
            _ => "(all hooks)".into(),
        };
        rows.push(Row {
            label: s.syscall.clone(),
            cells: vec![
                Cell::text(share),
                n(s.hook_count),
                n(s.hook_sum_ns),
                Cell::missing(""),
            ],
        });
        for h in s.hooks.iter().take(per_syscall) {
            rows.push(Row {
                label: String::new(),
                cells: vec![
                    Cell::text(&h.hook),
                    n(h.count),
                    n(h.sum_ns),
                    Cell::value(h.ave_ns.round()),
                ],
            });
        }
    }
    Table {
        form: base::form::Form::PerSyscall,
        title: format!(
            "per syscall (hook time attributed to the caller's syscall, {}{})",
            unit(t),
            match t.options.timing_note() {
                Some(note) => format!("; the timed calls only: {note}"),
                None => String::new(),
            }
        ),
        kernel: t.provenance.kernel_release.clone(),
        notes: Vec::new(),
        header: ["syscall", "hook", "count", "sum", "ave"]
            .map(String::from)
            .to_vec(),
        rows,
    }
}

/// `--by cgroup`: a total row per cgroup, most calls first, then its hooks
/// (at most `per_cgroup`).
pub fn per_cgroup(
    t: &TraceResult,
    b: &model::CgroupBreakdown,
    top: Option<usize>,
    per_cgroup: usize,
) -> Table {
    let all = &b.cgroups;
    let k = top.unwrap_or(all.len()).min(all.len());
    let timed = !t.options.count_only;
    let figures = |c: &model::CgroupCalls| {
        let ave = (timed && c.timed > 0).then(|| c.sum_ns as f64 / c.timed as f64);
        vec![
            n(c.calls),
            if timed {
                n(c.sum_ns)
            } else {
                Cell::missing("")
            },
            ave.map_or(Cell::missing(""), |a| Cell::value(a.round())),
            n(c.deny),
        ]
    };
    let mut rows = Vec::new();
    for g in &all[..k] {
        let mut cells = vec![Cell::text("(all hooks)")];
        cells.extend(figures(&g.total));
        rows.push(Row {
            label: g.cgroup.clone(),
            cells,
        });
        for h in g.hooks.iter().take(per_cgroup) {
            let mut cells = vec![Cell::text(&h.hook)];
            cells.extend(figures(&h.calls));
            rows.push(Row {
                label: String::new(),
                cells,
            });
        }
    }
    let mut notes = Vec::new();
    if b.folded_cgroups > 0 {
        notes.push(format!(
            "{} cgroups beyond --max-cgroups {} are in (other)",
            b.folded_cgroups, b.max_cgroups
        ));
    }
    if b.lost_calls > 0 {
        notes.push(format!(
            "{} calls in no row: the probes' table of cgroup cells was full",
            b.lost_calls
        ));
    }
    Table {
        form: base::form::Form::PerCgroup,
        title: format!(
            "per cgroup (hook calls by the cgroup of the task making them, {})",
            unit(t)
        ),
        kernel: t.provenance.kernel_release.clone(),
        notes,
        header: ["cgroup", "hook", "calls", "sum", "ave", "deny"]
            .map(String::from)
            .to_vec(),
        rows,
    }
}
