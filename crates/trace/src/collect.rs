//! Turns the per-CPU BPF maps into results: LSMPMON's per-hook statistics,
//! histograms and the hook x syscall table.
use std::collections::BTreeMap;

use super::hooks::Hook;
use crate::intf::{
    lsmpmon_hook_stats, lsmpmon_limits as lim, lsmpmon_syscall_cell, lsmpmon_syscall_time,
};
use model::{Bucket, HookResult, SyscallHook, SyscallResult};

include!(concat!(env!("OUT_DIR"), "/syscall_names.rs"));

/// The name of a per-syscall slot, and its syscall number if it is one.
pub fn syscall_name(slot: u32) -> (String, Option<u32>) {
    match slot {
        0 => return ("(none)".into(), None),
        lim::LSMPMON_SLOT_IRQ => return ("(irq)".into(), None),
        lim::LSMPMON_SLOT_SOFTIRQ => return ("(softirq)".into(), None),
        _ => {}
    }
    let nr = slot - 1;
    let name = SYSCALL_NAMES
        .iter()
        .find(|(n, _)| *n == nr)
        .map(|(_, s)| s.to_string())
        .unwrap_or_else(|| format!("syscall_{nr}"));
    (name, Some(nr))
}

/// The per-syscall cell a probe's `pend_slot` goes to (as `cell_slot()` in
/// the BPF program): a syscall's, "(none)" beyond the table, or an interrupt's.
pub fn cell_slot(pend_slot: u32) -> u32 {
    const IRQ: u32 = lim::LSMPMON_SLOT_IRQ_MARK | lim::LSMPMON_SLOT_IRQ;
    const SOFTIRQ: u32 = lim::LSMPMON_SLOT_IRQ_MARK | lim::LSMPMON_SLOT_SOFTIRQ;
    match pend_slot {
        s if s < lim::LSMPMON_SLOT_IRQ => s,
        IRQ => lim::LSMPMON_SLOT_IRQ,
        SOFTIRQ => lim::LSMPMON_SLOT_SOFTIRQ,
        _ => 0,
    }
}

pub fn add_stats(acc: &mut lsmpmon_hook_stats, v: &lsmpmon_hook_stats) {
    acc.count += v.count;
    acc.sum_ns += v.sum_ns;
    if v.min_ns != 0 && (acc.min_ns == 0 || v.min_ns < acc.min_ns) {
        acc.min_ns = v.min_ns;
    }
    acc.max_ns = acc.max_ns.max(v.max_ns);
    acc.cs_count += v.cs_count;
    acc.deny += v.deny;
    acc.error += v.error;
    acc.value += v.value;
    acc.dropped += v.dropped;
    acc.nested += v.nested;
    acc.cgroup_lost_calls += v.cgroup_lost_calls;
    acc.untimed += v.untimed;
    for (a, b) in acc.hist.iter_mut().zip(v.hist.iter()) {
        *a += b;
    }
}

/// `acc` less the counters of `old`, an earlier reading of the same row
/// (min and max are not counters: they stay).
pub fn sub_stats(acc: &mut lsmpmon_hook_stats, old: &lsmpmon_hook_stats) {
    let sub = |a: &mut u64, b: u64| *a -= b.min(*a);
    sub(&mut acc.count, old.count);
    sub(&mut acc.sum_ns, old.sum_ns);
    sub(&mut acc.cs_count, old.cs_count);
    sub(&mut acc.deny, old.deny);
    sub(&mut acc.error, old.error);
    sub(&mut acc.value, old.value);
    sub(&mut acc.dropped, old.dropped);
    sub(&mut acc.nested, old.nested);
    sub(&mut acc.cgroup_lost_calls, old.cgroup_lost_calls);
    sub(&mut acc.untimed, old.untimed);
    for (a, b) in acc.hist.iter_mut().zip(old.hist.iter()) {
        sub(a, *b);
    }
}

/// Quantile `q` of a hook's timed calls, within the calls' own range.
pub fn quantile(hist: &[Bucket], q: f64, min_ns: u64, max_ns: u64) -> Option<f64> {
    model::hist::quantile(hist, q).map(|v| v.clamp(min_ns as f64, max_ns.max(min_ns) as f64))
}

/// `full`: histogram and allow/deny were recorded (not --lean).
pub fn hook_result(
    hook: &Hook,
    s: &lsmpmon_hook_stats,
    floor_ns: Option<f64>,
    full: bool,
) -> HookResult {
    let floor = floor_ns.unwrap_or(0.0);
    let sub = |v: u64| (v as f64 - floor).max(0.0).round() as u64;
    let ave = if s.count > 0 {
        s.sum_ns as f64 / s.count as f64
    } else {
        0.0
    };
    let calls = s.count + s.cs_count + s.untimed;
    let returns = full && hook.returns_int;
    let decision = returns && hook.not_a_decision.is_none();
    let allowed = calls.saturating_sub(s.deny + s.error + s.value);
    let mut hist = super::hist::buckets(&s.hist);
    // The last bucket also took every slower call.
    if let Some(last) = hist.last_mut().filter(|b| b.high_ns <= s.max_ns) {
        last.high_ns = s.max_ns + 1;
    }
    let q = |q| quantile(&hist, q, s.min_ns, s.max_ns).map(|v| sub(v.round() as u64));
    HookResult {
        hook: hook.name.clone(),
        function: hook.function.clone(),
        callers: Vec::new(),
        also_runs: Vec::new(),
        calls,
        count: s.count,
        cs_count: s.cs_count,
        min_ns: sub(s.min_ns),
        max_ns: sub(s.max_ns),
        ave_ns: if s.count > 0 {
            (ave - floor).max(0.0)
        } else {
            0.0
        },
        sum_ns: (s.sum_ns as f64 - floor * s.count as f64).max(0.0).round() as u64,
        p50_ns: q(0.50),
        p99_ns: q(0.99),
        allow: decision.then_some(allowed),
        deny: decision.then_some(s.deny),
        error: returns.then_some(s.error),
        value: returns.then_some(s.value),
        not_a_decision: hook.not_a_decision.filter(|_| returns).map(String::from),
        dropped: s.dropped,
        nested_probes: s.nested,
        untimed: s.untimed,
        time_estimate_ns: None,
        hist,
    }
}

/// The stats rows reported as one, in row order: a hook's callers together
/// (one row a hook), each LSM function alone.
pub fn row_groups(hooks: &[Hook]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut of_hook: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, h) in hooks.iter().enumerate() {
        if h.lsm.is_some() {
            groups.push(vec![i]);
            continue;
        }
        match of_hook.get(h.name.as_str()) {
            Some(&g) => groups[g].push(i),
            None => {
                of_hook.insert(&h.name, groups.len());
                groups.push(vec![i]);
            }
        }
    }
    groups
}

/// One hook's figures from all its callers' rows: the counters summed (a
/// call of any caller is a call of the hook); allow/deny only if each
/// caller returns the int it decided.
pub fn group_result(
    hooks: &[Hook],
    group: &[usize],
    stats: &[lsmpmon_hook_stats],
    floor_ns: Option<f64>,
    full: bool,
) -> HookResult {
    let first = &hooks[group[0]];
    let mut s = stats[group[0]];
    let mut hook = first.clone();
    for &i in &group[1..] {
        add_stats(&mut s, &stats[i]);
        hook.returns_int &= hooks[i].returns_int;
        for a in &hooks[i].also_runs {
            if !hook.also_runs.contains(a) {
                hook.also_runs.push(a.clone());
            }
        }
    }
    let mut r = hook_result(&hook, &s, floor_ns, full);
    if group.len() > 1 {
        r.callers = group.iter().map(|&i| hooks[i].function.clone()).collect();
    }
    r.also_runs = hook.also_runs;
    r
}

/// A --count-only hook: its probe counted every call in `count`, and timed
/// none of them.
pub fn untimed(r: &mut HookResult) {
    r.count = 0;
    r.sum_ns = 0;
    r.ave_ns = 0.0;
    r.p50_ns = None;
    r.p99_ns = None;
    r.hist.clear();
}

/// The hook x syscall table, largest hook time first.
pub fn syscalls(
    hooks: &[Hook],
    cells: &BTreeMap<(u32, u32), lsmpmon_syscall_cell>,
    times: Option<&BTreeMap<u32, lsmpmon_syscall_time>>,
    floor_ns: Option<f64>,
) -> Vec<SyscallResult> {
    let floor = floor_ns.unwrap_or(0.0);
    // A hook's callers in one row.
    let mut by_hook: BTreeMap<(u32, &str), (u64, u64)> = BTreeMap::new();
    for ((hook_id, slot), c) in cells {
        if c.count == 0 {
            continue;
        }
        let Some(hook) = hooks.get(*hook_id as usize).filter(|h| h.lsm.is_none()) else {
            continue;
        };
        let cell = by_hook.entry((*slot, hook.name.as_str())).or_default();
        cell.0 += c.count;
        cell.1 += c.sum_ns;
    }
    let mut by_slot: BTreeMap<u32, Vec<SyscallHook>> = BTreeMap::new();
    for ((slot, hook), (count, sum_ns)) in by_hook {
        let sum = (sum_ns as f64 - floor * count as f64).max(0.0);
        by_slot.entry(slot).or_default().push(SyscallHook {
            hook: hook.to_string(),
            count,
            sum_ns: sum.round() as u64,
            ave_ns: sum / count as f64,
        });
    }
    let mut out: Vec<SyscallResult> = by_slot
        .into_iter()
        .map(|(slot, mut rows)| {
            rows.sort_by(|a, b| b.sum_ns.cmp(&a.sum_ns).then(a.hook.cmp(&b.hook)));
            let (syscall, nr) = syscall_name(slot);
            let t = times.and_then(|t| t.get(&slot));
            let total = t.map(|t| t.sum_ns);
            SyscallResult {
                syscall,
                nr,
                hook_sum_ns: rows.iter().map(|r| r.sum_ns).sum(),
                hook_count: rows.iter().map(|r| r.count).sum(),
                total_ns: total,
                calls: t.map(|t| t.count),
                lsm_share: t
                    .filter(|t| t.sum_ns > 0)
                    .map(|t| t.hook_ns as f64 / t.sum_ns as f64),
                hooks: rows,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.hook_sum_ns
            .cmp(&a.hook_sum_ns)
            .then(a.syscall.cmp(&b.syscall))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_stay_within_the_calls_range() {
        let hist = super::super::hist::buckets(&{
            let mut c = vec![0u64; super::super::hist::BUCKETS];
            c[super::super::hist::bucket_of(300)] = 10;
            c
        });
        // The bucket is [288, 304): read alone, its middle; its calls were all 300 ns.
        assert_eq!(quantile(&hist, 0.5, 0, u64::MAX), Some(296.0));
        assert_eq!(quantile(&hist, 0.5, 300, 300), Some(300.0));
        assert_eq!(quantile(&[], 0.5, 0, 0), None);
    }

    #[test]
    fn per_cpu_values_sum_with_min_of_nonzero() {
        let mut acc = lsmpmon_hook_stats::default();
        let a = lsmpmon_hook_stats {
            count: 2,
            sum_ns: 300,
            min_ns: 100,
            max_ns: 200,
            ..Default::default()
        };
        let empty = lsmpmon_hook_stats::default();
        let b = lsmpmon_hook_stats {
            count: 1,
            sum_ns: 50,
            min_ns: 50,
            max_ns: 50,
            cs_count: 3,
            ..Default::default()
        };
        for v in [&a, &empty, &b] {
            add_stats(&mut acc, v);
        }
        assert_eq!(
            (acc.count, acc.sum_ns, acc.min_ns, acc.max_ns, acc.cs_count),
            (3, 350, 50, 200, 3)
        );
    }

    #[test]
    fn floor_is_subtracted_and_calls_include_switched() {
        let hook = Hook {
            name: "inode_create".into(),
            function: "security_inode_create".into(),
            btf_id: 0,
            object: None,
            returns_int: true,
            not_a_decision: None,
            args: 2,
            lsm: None,
            also: Vec::new(),
            also_runs: Vec::new(),
        };
        let s = lsmpmon_hook_stats {
            count: 4,
            sum_ns: 4000,
            min_ns: 900,
            max_ns: 1200,
            cs_count: 1,
            deny: 2,
            ..Default::default()
        };
        let r = hook_result(&hook, &s, Some(200.0), true);
        assert_eq!(r.calls, 5);
        assert_eq!(r.ave_ns, 800.0);
        assert_eq!((r.min_ns, r.max_ns, r.sum_ns), (700, 1000, 3200));
        assert_eq!((r.allow, r.deny), (Some(3), Some(2)));
    }

    fn caller(hook: &str, function: &str, returns_int: bool) -> Hook {
        Hook {
            name: hook.into(),
            function: function.into(),
            returns_int,
            ..Hook::default()
        }
    }

    #[test]
    fn a_hooks_callers_are_one_row_and_modules_stay_apart() {
        let hooks = [
            caller("xfrm_decode_session", "security_xfrm_decode_session", true),
            caller("file_open", "security_file_open", true),
            Hook {
                lsm: Some("selinux".into()),
                ..caller("file_open", "selinux_file_open", true)
            },
            // A void caller of the same hook: no allow/deny for the row.
            Hook {
                also_runs: vec!["sk_getsecid".into()],
                ..caller("xfrm_decode_session", "security_skb_classify_flow", false)
            },
        ];
        let groups = row_groups(&hooks);
        assert_eq!(groups, [vec![0, 3], vec![1], vec![2]]);
        let row = |count, sum_ns, min_ns, max_ns, deny| lsmpmon_hook_stats {
            count,
            sum_ns,
            min_ns,
            max_ns,
            deny,
            ..Default::default()
        };
        let stats = [
            row(3, 900, 200, 400, 1),
            row(0, 0, 0, 0, 0),
            row(0, 0, 0, 0, 0),
            row(1, 100, 100, 100, 0),
        ];
        let r = group_result(&hooks, &groups[0], &stats, None, true);
        assert_eq!((r.calls, r.sum_ns, r.min_ns, r.max_ns), (4, 1000, 100, 400));
        assert_eq!(r.ave_ns, 250.0);
        assert_eq!(r.function, "security_xfrm_decode_session");
        assert_eq!(
            r.callers,
            ["security_xfrm_decode_session", "security_skb_classify_flow"]
        );
        assert_eq!(r.also_runs, ["sk_getsecid"]);
        assert_eq!((r.allow, r.deny), (None, None));
        let one = group_result(&hooks, &groups[1], &stats, None, true);
        assert!(one.callers.is_empty() && one.also_runs.is_empty());
        assert_eq!(one.allow, Some(0));
    }

    #[test]
    fn a_hooks_callers_share_one_syscall_row() {
        let hooks = [
            caller("xfrm_decode_session", "security_xfrm_decode_session", true),
            caller("xfrm_decode_session", "security_skb_classify_flow", false),
            Hook {
                lsm: Some("selinux".into()),
                ..caller("xfrm_decode_session", "selinux_xfrm_decode_session", true)
            },
        ];
        let cell = |count, sum_ns| lsmpmon_syscall_cell { count, sum_ns };
        let cells: BTreeMap<(u32, u32), lsmpmon_syscall_cell> = [
            ((0, 45), cell(2, 300)),
            ((1, 45), cell(1, 200)),
            ((2, 45), cell(3, 90)),
        ]
        .into_iter()
        .collect();
        let out = syscalls(&hooks, &cells, None, Some(50.0));
        assert_eq!(out.len(), 1);
        let rows = &out[0].hooks;
        assert_eq!(rows.len(), 1, "{rows:?}");
        // 3 calls, 500 ns less a 50 ns floor each; the module's not counted.
        assert_eq!((rows[0].count, rows[0].sum_ns), (3, 350));
    }

    #[test]
    fn syscall_slots_map_to_names() {
        assert_eq!(syscall_name(0).0, "(none)");
        assert_eq!(syscall_name(4), ("close".to_string(), Some(3)));
        assert_eq!(
            syscall_name(lim::LSMPMON_SLOT_SOFTIRQ),
            ("(softirq)".into(), None)
        );
        assert_eq!(syscall_name(lim::LSMPMON_SLOT_IRQ), ("(irq)".into(), None));
    }

    #[test]
    fn pending_slots_go_to_their_cells() {
        // open(2) is syscall 2, slot 3; a syscall number past the table is "(none)".
        assert_eq!(cell_slot(3), 3);
        assert_eq!(cell_slot(lim::LSMPMON_SLOT_IRQ), 0);
        assert_eq!(cell_slot(0x4000_0001), 0);
        let marked = |s| lim::LSMPMON_SLOT_IRQ_MARK | s;
        assert_eq!(
            cell_slot(marked(lim::LSMPMON_SLOT_IRQ)),
            lim::LSMPMON_SLOT_IRQ
        );
        assert_eq!(
            cell_slot(marked(lim::LSMPMON_SLOT_SOFTIRQ)),
            lim::LSMPMON_SLOT_SOFTIRQ
        );
        assert_eq!(cell_slot(marked(3)), 0);
    }
}
