//! The LSMPMON paper's Tables 6 and 7: for one syscall, each hook's sum,
//! count and average, kernels side by side, and the sum of the averages
//! (what the syscall pays in LSM hooks per call).
use super::forms::{flag_fallback, floor, missing, time_mode, trace};
use super::input::Run;
use crate::base::papers;
use crate::base::table::{Cell, Row, Table};
use crate::model::trace::{SyscallResult, TraceResult};

const DEFAULT_SYSCALLS: usize = 3;
/// The syscalls of the paper's own Tables 6 (close) and 7 (creat), shown
/// first wherever the traces saw them.
const PAPER_SYSCALLS: &[&str] = &["close", "creat"];

/// Columns compared side by side: a lab configuration across kernels, or
/// the single trace results together.
fn groups<'a>(runs: &[&'a Run]) -> Vec<(String, Vec<&'a Run>)> {
    let mut out: Vec<(String, Vec<&'a Run>)> = Vec::new();
    for r in runs.iter().filter(|r| trace(r).is_some() || !r.passed()) {
        let key = if r.from_lab {
            r.config.clone()
        } else {
            String::new()
        };
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(r),
            None => out.push((key, vec![r])),
        }
    }
    // One column a kernel: its traced draw (a configuration's other draws,
    // or its not-applicable cells, would repeat the kernel).
    for (_, runs) in out.iter_mut().filter(|(k, _)| !k.is_empty()) {
        let mut kept: Vec<&Run> = Vec::new();
        for r in runs.iter() {
            match kept.iter_mut().find(|k| k.kernel == r.kernel) {
                Some(k) if trace(k).is_none() && trace(r).is_some() => *k = r,
                Some(_) => {}
                None => kept.push(r),
            }
        }
        *runs = kept;
    }
    // A lab configuration on one kernel only has nothing to set side by side.
    out.retain(|(k, v)| k.is_empty() || v.len() > 1);
    out
}

fn syscall<'a>(t: &'a TraceResult, name: &str) -> Option<&'a SyscallResult> {
    t.syscalls.iter().find(|s| s.syscall == name)
}

/// The syscalls with the most hook time over the group's traces.
fn busiest(cols: &[&Run]) -> Vec<String> {
    let mut sums: Vec<(String, f64)> = Vec::new();
    for t in cols.iter().filter_map(|c| trace(c)) {
        for s in &t.syscalls {
            let v = s.hook_sum_ns as f64;
            match sums.iter_mut().find(|(x, _)| *x == s.syscall) {
                Some((_, t)) => *t += v,
                None => sums.push((s.syscall.clone(), v)),
            }
        }
    }
    sums.sort_by(|a, b| b.1.total_cmp(&a.1));
    sums.into_iter()
        .take(DEFAULT_SYSCALLS)
        .map(|s| s.0)
        .collect()
}

/// (sum µs, count, ave µs) of `hook` in `sys`, the probe floor taken out.
fn figures(t: &TraceResult, sys: &str, hook: &str) -> Option<(f64, f64, f64)> {
    let h = syscall(t, sys)?.hooks.iter().find(|h| h.hook == hook)?;
    let count = h.count as f64;
    let fl = floor(t);
    let sum = (h.sum_ns as f64 - fl * count).max(0.0);
    let ave = (h.ave_ns - fl).max(0.0);
    Some((sum / 1e3, count, ave / 1e3))
}

/// The paper's syscalls the traces saw, then the busiest others.
fn default_syscalls(cols: &[&Run]) -> Vec<String> {
    let seen = |name: &str| {
        cols.iter()
            .filter_map(|c| trace(c))
            .any(|t| syscall(t, name).is_some_and(|s| s.hook_count > 0))
    };
    let mut out: Vec<String> = PAPER_SYSCALLS
        .iter()
        .filter(|s| seen(s))
        .map(|s| s.to_string())
        .collect();
    for s in busiest(cols) {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

fn hooks_of(cols: &[&Run], sys: &str) -> Vec<String> {
    let mut hooks: Vec<(String, f64)> = Vec::new();
    for t in cols.iter().filter_map(|c| trace(c)) {
        for h in syscall(t, sys).into_iter().flat_map(|s| &s.hooks) {
            let v = h.sum_ns as f64;
            match hooks.iter_mut().find(|(x, _)| *x == h.hook) {
                Some((_, s)) => *s = s.max(v),
                None => hooks.push((h.hook.clone(), v)),
            }
        }
    }
    hooks.sort_by(|a, b| b.1.total_cmp(&a.1));
    hooks.into_iter().map(|h| h.0).collect()
}

fn column_name(c: &Run, group: &str) -> String {
    if group.is_empty() {
        format!("{} ({})", c.config, c.kernel)
    } else {
        c.kernel.to_string()
    }
}

fn cells_for(c: &Run, hook: &str, f: Option<(f64, f64, f64)>) -> Vec<Cell> {
    if let Some(m) = missing(c) {
        return vec![m.clone(), m.clone(), m];
    }
    let Some(t) = trace(c) else {
        return vec![Cell::missing("no trace"); 3];
    };
    let traced = t.hooks.iter().any(|h| h.hook == hook);
    if !traced {
        // Not a hook of this kernel, or not selected for the trace.
        return vec![Cell::missing("not traced"); 3];
    }
    // The 5.10 kprobe fallback: marked, to be compared within its kernel only.
    let k = |v: f64| flag_fallback(c, Cell::value(v));
    match f {
        Some((sum, count, ave)) => vec![k(sum), Cell::value(count), k(ave)],
        None => vec![Cell::missing("not called"); 3],
    }
}

/// The paper's last row: the hooks' averages added up (its "average sum").
fn sum_of_averages(c: &Run, sys: &str, hooks: &[String]) -> Vec<Cell> {
    let dash = || Cell::missing("–");
    if let Some(m) = missing(c) {
        return vec![dash(), dash(), m];
    }
    let Some(t) = trace(c) else {
        return vec![dash(), dash(), Cell::missing("no trace")];
    };
    let total: f64 = hooks
        .iter()
        .filter_map(|h| figures(t, sys, h).map(|f| f.2))
        .sum();
    vec![dash(), dash(), flag_fallback(c, Cell::value(total))]
}

fn table(group: &str, cols: &[&Run], sys: &str) -> Table {
    let hooks = hooks_of(cols, sys);
    let mut rows: Vec<Row> = hooks
        .iter()
        .map(|h| Row {
            label: h.clone(),
            cells: cols
                .iter()
                .flat_map(|c| cells_for(c, h, trace(c).and_then(|t| figures(t, sys, h))))
                .collect(),
        })
        .collect();
    rows.push(Row {
        label: "sum of averages".into(),
        cells: cols
            .iter()
            .flat_map(|c| sum_of_averages(c, sys, &hooks))
            .collect(),
    });
    let mut header = vec!["hook".to_string()];
    for c in cols {
        let n = column_name(c, group);
        header.extend([format!("{n} sum"), format!("{n} count"), format!("{n} ave")]);
    }
    let what = if group.is_empty() {
        "traces".to_string()
    } else {
        format!("configuration {group}")
    };
    Table {
        form: crate::base::form::Form::Table6_7,
        title: format!(
            "Tables 6/7 form ({}): LSM hooks in {sys}, {what}, kernels side by side (µs)",
            papers::cite(&papers::LSMPMON, "Tables 6, 7")
        ),
        kernel: cols
            .iter()
            .map(|c| c.kernel.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        notes: vec![format!(
            "{} time. Hook calls attributed to the syscall the task was in; sum and ave with the probe floor taken out (k: kprobe/kretprobe fallback before 5.17, its own floor taken out too, but a kprobe pair disturbs a call more than fentry/fexit: compare it within its kernel only); nested hooks are counted in both. Sum of averages: the hooks' per-call averages added up, as the paper's “average sum” (a hook may run several times in one {sys}, or not in every one: divide a hook's sum by the syscall's calls for its cost per {sys}).",
            time_mode(cols)
        )],
        header,
        rows,
    }
}

/// Tables 6/7 for the given syscalls, or each group's busiest ones.
pub fn tables(runs: &[&Run], syscalls: &[String]) -> Vec<Table> {
    let mut out = Vec::new();
    for (group, cols) in groups(runs) {
        let chosen = if syscalls.is_empty() {
            default_syscalls(&cols)
        } else {
            syscalls.to_vec()
        };
        for sys in chosen {
            let t = table(&group, &cols, &sys);
            if t.rows.len() > 1 {
                out.push(t);
            } else if !syscalls.is_empty() {
                crate::say!("lsmpmon: no traced hook ran in syscall {sys}: no Tables 6/7 for it");
            }
        }
    }
    out
}
