//! `--by cgroup`: the probes' (cgroup, hook) cells as rows named by the
//! cgroup's path, at most `--max-cgroups` of them, the rest in "(other)".
use std::collections::{BTreeMap, HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::hooks::Hook;
use crate::intf::{lsmpmon_cgroup_cell, lsmpmon_cgroup_key};
use model::{CgroupBreakdown, CgroupCalls, CgroupHook, CgroupResult};

/// Every (cgroup id, hook id) cell, summed over CPUs.
pub type Cells = BTreeMap<(u64, u32), CgroupCalls>;

pub const INTERRUPT: &str = "(interrupt)";
pub const OTHER: &str = "(other)";
pub const REMOVED: &str = "(removed)";

/// The probes' per-CPU cells, summed.
pub fn read(map: std::os::fd::BorrowedFd) -> anyhow::Result<Cells> {
    let mut cells = Cells::new();
    super::arrays::for_each_percpu_hash::<lsmpmon_cgroup_key, lsmpmon_cgroup_cell>(
        map,
        |k, per_cpu| {
            let c = cells.entry((k.cgroup_id, k.hook)).or_default();
            for v in per_cpu {
                c.add(&CgroupCalls {
                    calls: v.calls,
                    timed: v.timed,
                    sum_ns: v.sum_ns,
                    deny: v.deny,
                });
            }
        },
    )?;
    Ok(cells)
}

/// `cells` less an earlier reading of the same cells.
pub fn since(cells: &mut Cells, old: &Cells) {
    for (key, o) in old {
        if let Some(c) = cells.get_mut(key) {
            c.calls -= o.calls.min(c.calls);
            c.timed -= o.timed.min(c.timed);
            c.sum_ns -= o.sum_ns.min(c.sum_ns);
            c.deny -= o.deny.min(c.deny);
        }
    }
    cells.retain(|_, c| c.calls > 0);
}

/// Cgroup ids to paths, and which cgroups have rows of their own. Both last
/// for the session: a cgroup keeps its row (and serve's counters their
/// series) once it has one, and a removed cgroup keeps the name it had.
pub struct Cgroups {
    root: PathBuf,
    names: HashMap<u64, String>,
    /// Ids that were gone at a rescan: none of them makes another.
    missing: HashSet<u64>,
    kept: HashSet<u64>,
    folded: HashSet<u64>,
    max: usize,
}

impl Cgroups {
    pub fn new(max: usize) -> Self {
        Self::under(PathBuf::from("/sys/fs/cgroup"), max)
    }

    pub fn under(root: PathBuf, max: usize) -> Self {
        Self {
            root,
            names: HashMap::new(),
            missing: HashSet::new(),
            kept: HashSet::new(),
            folded: HashSet::new(),
            max,
        }
    }

    /// Learns every cgroup now under the root (a cgroup's id is its
    /// directory's inode number).
    fn rescan(&mut self) {
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(meta) = std::fs::metadata(&dir) else {
                continue;
            };
            // The name a cgroup had when first seen stays (a rename moves no series).
            let name = path_name(&self.root, &dir);
            self.names.entry(meta.ino()).or_insert(name);
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(e.path());
                }
            }
        }
    }

    fn name(&self, id: u64) -> String {
        match id {
            0 => INTERRUPT.into(),
            _ => self
                .names
                .get(&id)
                .cloned()
                .unwrap_or_else(|| REMOVED.into()),
        }
    }

    /// The rows of `cells`: kept cgroups (new ones admitted, most calls
    /// first, while fewer than `max` are kept), then "(other)".
    /// `floor_ns`: taken out of each timed call, as from the hooks' figures.
    pub fn breakdown(
        &mut self,
        cells: &Cells,
        hooks: &[Hook],
        lost_calls: u64,
        floor_ns: Option<f64>,
    ) -> CgroupBreakdown {
        let mut by_cgroup: BTreeMap<u64, Vec<CgroupHook>> = BTreeMap::new();
        for ((id, hook), c) in cells {
            let Some(h) = hooks.get(*hook as usize).filter(|h| h.lsm.is_none()) else {
                continue;
            };
            // A hook's callers in one row.
            let rows = by_cgroup.entry(*id).or_default();
            let calls = as_reported(c, h, floor_ns);
            match rows.iter_mut().find(|r| r.hook == h.name) {
                Some(r) => r.calls.add(&calls),
                None => rows.push(CgroupHook {
                    hook: h.name.clone(),
                    calls,
                }),
            }
        }
        let unknown =
            |id: &u64| *id != 0 && !self.names.contains_key(id) && !self.missing.contains(id);
        let new: Vec<u64> = by_cgroup.keys().copied().filter(unknown).collect();
        if !new.is_empty() {
            self.rescan();
            let gone = new.into_iter().filter(|id| !self.names.contains_key(id));
            self.missing.extend(gone);
        }
        self.admit(&by_cgroup);
        let mut rows = Vec::new();
        let mut other: BTreeMap<String, CgroupCalls> = BTreeMap::new();
        for (id, hooks) in by_cgroup {
            if self.kept.contains(&id) {
                rows.push(row(self.name(id), (id != 0).then_some(id), hooks));
                continue;
            }
            self.folded.insert(id);
            for h in hooks {
                other.entry(h.hook).or_default().add(&h.calls);
            }
        }
        rows.sort_by(|a, b| {
            b.total
                .calls
                .cmp(&a.total.calls)
                .then(a.cgroup.cmp(&b.cgroup))
        });
        if !other.is_empty() {
            let hooks = other
                .into_iter()
                .map(|(hook, calls)| CgroupHook { hook, calls })
                .collect();
            rows.push(row(OTHER.into(), None, hooks));
        }
        CgroupBreakdown {
            max_cgroups: self.max,
            folded_cgroups: self.folded.len(),
            lost_calls,
            cgroups: rows,
        }
    }

    fn admit(&mut self, by_cgroup: &BTreeMap<u64, Vec<CgroupHook>>) {
        let total = |hooks: &[CgroupHook]| hooks.iter().map(|h| h.calls.calls).sum::<u64>();
        let mut new: Vec<(u64, u64)> = by_cgroup
            .iter()
            .filter(|(id, _)| !self.kept.contains(id) && !self.folded.contains(id))
            .map(|(id, hooks)| (*id, total(hooks)))
            .collect();
        new.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        for (id, _) in new {
            if self.kept.len() < self.max {
                self.kept.insert(id);
            }
        }
    }
}

/// A cell as the hook's own figures are reported: net of the floor, and
/// no denials where the hook's return is no access decision.
fn as_reported(c: &CgroupCalls, h: &Hook, floor_ns: Option<f64>) -> CgroupCalls {
    let floor = floor_ns.unwrap_or(0.0) * c.timed as f64;
    let decides = h.returns_int && h.not_a_decision.is_none();
    CgroupCalls {
        sum_ns: (c.sum_ns as f64 - floor).max(0.0).round() as u64,
        deny: if decides { c.deny } else { 0 },
        ..*c
    }
}

fn path_name(root: &Path, dir: &Path) -> String {
    let rel = dir.strip_prefix(root).unwrap_or(dir);
    format!("/{}", rel.display())
}

fn row(cgroup: String, id: Option<u64>, mut hooks: Vec<CgroupHook>) -> CgroupResult {
    hooks.sort_by(|a, b| {
        b.calls
            .sum_ns
            .cmp(&a.calls.sum_ns)
            .then(b.calls.calls.cmp(&a.calls.calls))
            .then(a.hook.cmp(&b.hook))
    });
    let mut total = CgroupCalls::default();
    for h in &hooks {
        total.add(&h.calls);
    }
    CgroupResult {
        cgroup,
        id,
        total,
        hooks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(name: &str) -> Hook {
        Hook {
            name: name.into(),
            function: format!("security_{name}"),
            ..Hook::default()
        }
    }

    fn calls(n: u64) -> CgroupCalls {
        CgroupCalls {
            calls: n,
            timed: n,
            sum_ns: 100 * n,
            deny: 0,
        }
    }

    /// A directory of its own, removed at the end.
    struct Scratch(PathBuf);
    impl Scratch {
        fn new() -> Self {
            let p = std::env::temp_dir().join(format!("lsmpmon-cgroups-{}", std::process::id()));
            std::fs::create_dir_all(&p).unwrap();
            Self(p)
        }
        fn path(&self) -> &Path {
            &self.0
        }
    }
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn cgroups_are_named_by_path_and_bounded_with_the_rest_in_other() {
        let root = Scratch::new();
        let dirs = ["system.slice", "system.slice/a.scope", "b"];
        for d in dirs {
            std::fs::create_dir(root.path().join(d)).unwrap();
        }
        let ino = |d: &str| std::fs::metadata(root.path().join(d)).unwrap().ino();
        let hooks = [hook("file_open"), hook("inode_getattr")];
        let mut cells = Cells::new();
        cells.insert((ino("system.slice/a.scope"), 0), calls(50));
        cells.insert((ino("system.slice/a.scope"), 1), calls(10));
        cells.insert((ino("b"), 0), calls(30));
        cells.insert((ino("system.slice"), 1), calls(5));
        cells.insert((0, 0), calls(2));
        let mut cg = Cgroups::under(root.path().to_path_buf(), 2);
        let b = cg.breakdown(&cells, &hooks, 7, None);
        let names: Vec<(&str, u64)> = b
            .cgroups
            .iter()
            .map(|r| (r.cgroup.as_str(), r.total.calls))
            .collect();
        // The two with most calls kept; the interrupt row and system.slice folded.
        assert_eq!(
            names,
            [("/system.slice/a.scope", 60), ("/b", 30), (OTHER, 7)]
        );
        assert_eq!((b.folded_cgroups, b.lost_calls, b.max_cgroups), (2, 7, 2));
        assert_eq!(b.cgroups[0].hooks[0].hook, "file_open");
        // Membership lasts: a folded cgroup stays folded though it grows,
        // and a removed kept one keeps its name.
        std::fs::remove_dir(root.path().join("b")).unwrap();
        cells.insert((ino("system.slice"), 1), calls(500));
        let b = cg.breakdown(&cells, &hooks, 7, Some(40.0));
        let names: Vec<(&str, u64)> = b
            .cgroups
            .iter()
            .map(|r| (r.cgroup.as_str(), r.total.calls))
            .collect();
        assert_eq!(
            names,
            [("/system.slice/a.scope", 60), ("/b", 30), (OTHER, 502)]
        );
    }

    #[test]
    fn a_hooks_callers_are_one_row_in_a_cgroup() {
        let root = Scratch::new();
        let mut second = hook("xfrm_decode_session");
        second.function = "security_skb_classify_flow".into();
        let hooks = [hook("xfrm_decode_session"), second, hook("file_open")];
        let mut cells = Cells::new();
        cells.insert((0, 0), calls(4));
        cells.insert((0, 1), calls(6));
        cells.insert((0, 2), calls(1));
        let mut cg = Cgroups::under(root.path().to_path_buf(), 2);
        let b = cg.breakdown(&cells, &hooks, 0, None);
        let rows: Vec<(&str, u64, u64)> = b.cgroups[0]
            .hooks
            .iter()
            .map(|h| (h.hook.as_str(), h.calls.calls, h.calls.sum_ns))
            .collect();
        assert_eq!(
            rows,
            [("xfrm_decode_session", 10, 1000), ("file_open", 1, 100)]
        );
        assert_eq!(b.cgroups[0].total.calls, 11);
    }

    #[test]
    fn a_reading_less_an_earlier_one_keeps_only_new_calls() {
        let mut now = Cells::new();
        now.insert((5, 0), calls(10));
        now.insert((6, 0), calls(3));
        let mut old = Cells::new();
        old.insert((5, 0), calls(4));
        old.insert((6, 0), calls(3));
        since(&mut now, &old);
        assert_eq!(now.into_iter().collect::<Vec<_>>(), [((5, 0), calls(6))]);
    }
}
