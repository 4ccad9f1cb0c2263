//! The LSMPMON paper's Tables 6 and 7: for one syscall, each hook's sum,
//! count and average, kernels side by side, and the sum of the averages
//! (what the syscall pays in LSM hooks per call).
use super::forms::{flag_fallback, floor, missing, time_mode, trace};
use super::input::Run;
use base::papers;
use base::table::{Cell, Row, Table};
use model::trace::{SyscallResult, TraceResult};

const DEFAULT_SYSCALLS: usize = 3;
/// The syscalls of the paper's own Tables 6 (close) and 7 (creat), shown
/// first wherever the traces saw them.
const PAPER_SYSCALLS: &[&str] = &["close", "creat"];

/// Columns compared side by side: a lab configuration across kernels, or
/// the single trace results together.
/// Each group's columns, and every run of it (the traced draws a column
/// leaves out are named in the table's notes).
type Group<'a> = (String, Vec<&'a Run>, Vec<&'a Run>);

fn groups<'a>(runs: &[&'a Run]) -> Vec<Group<'a>> {
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
    let mut out: Vec<Group> = out.into_iter().map(|(k, v)| (k, v.clone(), v)).collect();
    // One column a kernel: its traced draw (a configuration's other draws,
    // or its not-applicable cells, would repeat the kernel).
    for (_, runs, _) in out.iter_mut().filter(|(k, _, _)| !k.is_empty()) {
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
    out.retain(|(k, v, _)| k.is_empty() || v.len() > 1);
    out
}

/// For each column whose kernel has other traced draws in `all`: which
/// draw is shown, and the sum of averages over every traced draw.
fn draw_notes(cols: &[&Run], all: &[&Run], sys: &str, hooks: &[String]) -> Vec<String> {
    let total = |r: &Run| -> Option<f64> {
        let t = trace(r)?;
        Some(
            hooks
                .iter()
                .filter_map(|h| figures(t, sys, h).map(|f| f.2))
                .sum(),
        )
    };
    cols.iter()
        .filter_map(|c| {
            // Draws of this very cell: its kernel, configuration, identity and ops.
            let ops = |r: &Run| -> Vec<String> {
                super::input::ops(r).iter().map(|o| o.op.clone()).collect()
            };
            let traced: Vec<&Run> = super::forms::draws(all, c)
                .into_iter()
                .filter(|r| trace(r).is_some() && ops(r) == ops(c))
                .collect();
            if traced.len() < 2 {
                return None;
            }
            let sums: Vec<f64> = traced.iter().filter_map(|r| total(r)).collect();
            let (lo, hi) = sums
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(*v), b.max(*v)));
            Some(format!(
                "{}: draw {} of {} traced draws shown; their sums of averages for {sys}: {lo:.3} … {hi:.3} µs.",
                c.kernel,
                c.draw,
                traced.len()
            ))
        })
        .collect()
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

fn table(group: &str, cols: &[&Run], all: &[&Run], sys: &str) -> Table {
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
        form: base::form::Form::Table6_7,
        title: format!(
            "Tables 6/7 form ({}): LSM hooks in {sys}, {what}, kernels side by side (µs)",
            papers::cite(&papers::LSMPMON, "Tables 6, 7")
        ),
        kernel: cols
            .iter()
            .map(|c| c.kernel.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        notes: std::iter::once(format!(
            "{} time. Hook calls attributed to the syscall the task was in; sum and ave with the probe floor taken out (k: kprobe/kretprobe fallback before 5.17, its own floor taken out too, but a kprobe pair disturbs a call more than fentry/fexit: compare it within its kernel only); nested hooks are counted in both. Sum of averages: the hooks' per-call averages added up, as the paper's “average sum” (a hook may run several times in one {sys}, or not in every one: divide a hook's sum by the syscall's calls for its cost per {sys}).",
            time_mode(cols)
        ))
        .chain(draw_notes(cols, all, sys, &hooks))
        .collect(),
        header,
        rows,
    }
}

/// How many known names a refusal lists.
const NAMES_LISTED: usize = 24;

/// Names given to `--syscalls` that no trace in `runs` recorded are
/// refused, with the names the traces did record (a typo would otherwise
/// give no table and no reason).
pub fn check_names(runs: &[Run], asked: &[String]) -> Result<(), String> {
    let mut known: Vec<&str> = runs
        .iter()
        .filter_map(trace)
        .flat_map(|t| t.syscalls.iter().map(|s| s.syscall.as_str()))
        .collect();
    known.sort_unstable();
    known.dedup();
    let unknown: Vec<&str> = asked
        .iter()
        .map(String::as_str)
        .filter(|a| !known.contains(a))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let listed = match known.len() {
        0 => "none: the results hold no per-syscall trace".to_string(),
        n if n > NAMES_LISTED => format!("{}, … ({n} in all)", known[..NAMES_LISTED].join(", ")),
        _ => known.join(", "),
    };
    Err(format!(
        "--syscalls {}: not a syscall the traces recorded; they recorded {listed}",
        unknown.join(",")
    ))
}

/// Tables 6/7 for the given syscalls, or each group's busiest ones.
pub fn tables(runs: &[&Run], syscalls: &[String]) -> Vec<Table> {
    let mut out = Vec::new();
    for (group, cols, all) in groups(runs) {
        let chosen = if syscalls.is_empty() {
            default_syscalls(&cols)
        } else {
            syscalls.to_vec()
        };
        for sys in chosen {
            let t = table(&group, &cols, &all, &sys);
            if t.rows.len() > 1 {
                out.push(t);
            } else if !syscalls.is_empty() {
                base::say!("lsmpmon: no traced hook ran in syscall {sys}: no Tables 6/7 for it");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_runs::run;

    fn traced(draw: u32, scale: f64) -> Run {
        let mut t: TraceResult = serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/report/trace-6.1.json"
        )))
        .unwrap();
        for s in &mut t.syscalls {
            for h in &mut s.hooks {
                h.ave_ns *= scale;
                h.sum_ns = (h.sum_ns as f64 * scale) as u64;
            }
        }
        let mut r = run("6.1", "cloud", 1, "selinux-mini", &[("stat", 1000.0)]);
        (r.trace, r.draw) = (Some(t), draw);
        r
    }

    /// A configuration traced in three draws on one kernel: one column, and
    /// a note naming the draw shown and the other draws' range, so no
    /// traced draw is dropped unsaid.
    #[test]
    fn traced_draws_left_out_of_a_column_are_named_with_their_range() {
        let mut other = traced(0, 1.0);
        other.kernel = model::identity::KernelId::Lab {
            series: "7.3".into(),
            flavour: "cloud".into(),
            cpus: 1,
        };
        // The same kernel and configuration measuring other ops (the AVC
        // sweep's one run per N) is another cell, not a draw.
        let mut other_ops = traced(0, 3.0);
        if let Some(b) = other_ops.bench.as_mut() {
            b.results[0].op = "avc_open_16".into();
        }
        let runs = [
            traced(0, 1.0),
            traced(1, 1.5),
            traced(2, 2.0),
            other_ops,
            other,
        ];
        let refs: Vec<&Run> = runs.iter().collect();
        let t = tables(&refs, &["read".to_string()]);
        assert_eq!(t.len(), 1);
        // Two kernels, three columns each.
        assert_eq!(t[0].header.len(), 1 + 2 * 3);
        let notes: Vec<&String> = t[0]
            .notes
            .iter()
            .filter(|n| n.contains("traced draws"))
            .collect();
        assert_eq!(notes.len(), 1, "{:?}", t[0].notes);
        assert!(
            notes[0].contains("draw 0 of 3 traced draws shown"),
            "{}",
            notes[0]
        );
        let sum_of = |scale: f64| {
            let r = traced(0, scale);
            let hooks = hooks_of(&[&r], "read");
            hooks
                .iter()
                .filter_map(|h| figures(r.trace.as_ref().unwrap(), "read", h).map(|f| f.2))
                .sum::<f64>()
        };
        let want = format!("{:.3} … {:.3} µs", sum_of(1.0), sum_of(2.0));
        assert!(notes[0].contains(&want), "{} vs {want}", notes[0]);
    }
}
