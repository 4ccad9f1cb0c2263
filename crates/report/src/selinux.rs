//! Standard vs. embedded SELinux (the embedded-SELinux paper's question): the
//! distribution's reference policy and a small policy written from scratch,
//! side by side against `none` on one kernel — time per operation, the hooks
//! whose cost differs, footprint, policy load time, and how the policy fills
//! the kernel's avtab and AVC hash tables.
use super::forms::{baseline, figure_row, hook_cost, op_cell, table4_hooks, time_mode};
use super::input::{ops, Run};
use base::papers;
use base::table::{Cell, Row, Table};
use model::cell::{AvtabEval, Footprint};

pub const EMBEDDED: &str = "selinux-mini";
pub const STANDARD: &str = "selinux-refpolicy";
const HASH_STATS: &str = "/sys/fs/selinux/avc/hash_stats";
const CACHE_STATS: &str = "/sys/fs/selinux/avc/cache_stats";
/// A hook row is shown where the two policies' costs differ by more than this.
const HOOK_DIFFERS: f64 = 0.10;

/// One table per kernel that has both policies' cells.
pub fn tables(runs: &[Run], order: &[String]) -> Vec<Table> {
    super::forms::by_kernel(runs, order)
        .into_iter()
        .filter_map(|(k, cols)| {
            let find = |name: &str| cols.iter().copied().find(|c| c.config == name);
            let (mini, std) = (find(EMBEDDED)?, find(STANDARD)?);
            if !mini.passed() && !std.passed() {
                return None;
            }
            let trio: Vec<&Run> = baseline(&cols).into_iter().chain([mini, std]).collect();
            Some(table(&k.to_string(), &trio))
        })
        .collect()
}

fn table(kernel: &str, cols: &[&Run]) -> Table {
    let mut rows = op_rows(cols);
    rows.extend(hook_rows(cols));
    rows.extend(footprint_rows(cols));
    rows.extend(avtab_rows(cols));
    rows.extend(avc_rows(cols));
    // Figures no cell has (cells from before lsmpmon recorded them) are left out.
    rows.retain(|r| {
        r.cells[..cols.len()]
            .iter()
            .any(|c| !matches!(c, Cell::Missing { .. }))
    });
    let mut header = vec!["figure".to_string()];
    header.extend(cols.iter().map(|c| c.config.clone()));
    header.push("standard ÷ embedded".into());
    Table {
        form: base::form::Form::SelinuxPolicies,
        title: format!(
            "Standard vs. embedded SELinux policy ({}), kernel {kernel}",
            papers::cite(&papers::EMBEDDED_SELINUX, "Tables 1-4, 8, 9, 11")
        ),
        kernel: kernel.into(),
        notes: vec![
            format!("{} time. Operations: median µs, untraced, (x %) over `none`. Hooks: ns per call of SELinux's own functions under `trace --per-lsm`, floor subtracted, shown where the two policies differ by more than {:.0} %.", time_mode(cols), HOOK_DIFFERS * 100.0),
            "Footprint as in the footprint table. Policy load: guest ms of `load_policy -i` (the span the setup script marks, including the program's start).".into(),
            "avtab: computed from the loaded policy (/sys/fs/selinux/policy) with the kernel's slot rule and hash, as its avtab_hash_eval reports them; \"kernel's own\" compares with the kernel's line where it was built with CONFIG_SECURITY_SELINUX_DEBUG (lsmpmon's 7.3-selinux kernels). The kernel evaluates the conditional table before reading it (7.3: cond_init_bool_indexes runs in policydb_index), so its own conditional line always says 0 entries.".into(),
            "AVC: /sys/fs/selinux/avc/hash_stats and cache_stats (summed over CPUs) after setup and proof, before the benchmark.".into(),
            "Table 9 (the paper's memory of the avtab's hash tables, and of SELinux's program and policy, which is A − B): the hash tables are a pointer a slot for both tables, the entries a 24-byte avtab_node each; the kernel's slab cache of those nodes (/proc/slabinfo: active objects × size, KiB) counts its slabs' objects on the per-CPU lists as active, and every cache SLUB merged with it (7.3: hashtab_node, the policy's symbol tables, and fsnotify_mark_connector, named where the cell recorded /sys/kernel/slab's links), so it holds more than the computed entries.".into(),
        ],
        header,
        rows,
    }
}

/// A row with the standard ÷ embedded ratio appended, where both have figures.
fn with_ratio(mut row: Row) -> Row {
    let v = |c: &Cell| match c {
        Cell::Value { value, .. } | Cell::Fixed { value, .. } | Cell::Drawn { value, .. } => {
            Some(*value)
        }
        _ => None,
    };
    let n = row.cells.len();
    let ratio = match (row.cells.get(n.wrapping_sub(2)), row.cells.last()) {
        (Some(m), Some(s)) => v(m).zip(v(s)).filter(|(m, _)| *m != 0.0),
        _ => None,
    };
    row.cells
        .push(ratio.map_or(Cell::missing("–"), |(m, s)| Cell::fixed(s / m, 2)));
    row
}

fn op_rows(cols: &[&Run]) -> Vec<Row> {
    let base = baseline(cols);
    let mut names: Vec<&str> = Vec::new();
    for c in cols {
        for o in ops(c) {
            if !names.contains(&o.op.as_str()) {
                names.push(&o.op);
            }
        }
    }
    names
        .into_iter()
        .map(|name| {
            let base_v = base.and_then(|b| Some((b, super::forms::median(b, name)?)));
            with_ratio(Row {
                label: format!("{name} (µs)"),
                cells: cols.iter().map(|c| op_cell(c, name, base_v)).collect(),
            })
        })
        .collect()
}

fn hook_rows(cols: &[&Run]) -> Vec<Row> {
    let value = |c: &Option<Cell>| match c {
        Some(Cell::Value { value, .. }) => Some(*value),
        _ => None,
    };
    table4_hooks(cols)
        .into_iter()
        .filter_map(|hook| {
            let cells: Vec<Option<Cell>> = cols.iter().map(|c| hook_cost(c, &hook)).collect();
            let (m, s) = (value(&cells[cols.len() - 2]), value(&cells[cols.len() - 1]));
            let differs = match (m, s) {
                (Some(m), Some(s)) => (s - m).abs() > HOOK_DIFFERS * m.max(s),
                (None, None) => false,
                _ => true,
            };
            differs.then(|| {
                with_ratio(Row {
                    label: format!("{hook} (ns per call)"),
                    cells: cells
                        .into_iter()
                        .map(|c| c.unwrap_or_else(|| Cell::missing("not traced")))
                        .collect(),
                })
            })
        })
        .collect()
}

fn footprint_rows(cols: &[&Run]) -> Vec<Row> {
    let base = baseline(cols).and_then(|b| b.footprint.as_ref());
    let fp = |c: &Run| c.footprint.clone();
    let row = |label: &str, f: &dyn Fn(&Run) -> Option<f64>| with_ratio(figure_row(label, cols, f));
    vec![
        row("A − B: memory over none (KiB)", &|c| {
            let used = fp(c)?.after_setup.used_kib as f64;
            Some(used - base?.after_setup.used_kib as f64).filter(|_| c.config != "none")
        }),
        row("policy (bytes)", &|c| {
            Some(fp(c)?.policy_bytes as f64).filter(|b| *b > 0.0)
        }),
        row("added to guest (bytes)", &|c| {
            c.bytes_added
                .map(|b| b as f64)
                .filter(|_| c.config != "none")
        }),
        row("policy load (guest ms)", &|c| c.policy_load_ms),
    ]
}

fn avtab_rows(cols: &[&Run]) -> Vec<Row> {
    let av = |c: &Run| {
        c.footprint
            .as_ref()
            .and_then(|f: &Footprint| f.avtab.clone())
    };
    let mut rows = Vec::new();
    for (table, pick) in [
        (
            "rules",
            (|a| a.rules) as fn(&model::cell::AvtabFigures) -> AvtabEval,
        ),
        ("conditional rules", |a| a.conditional_rules),
    ] {
        let figure = |label: &str, f: fn(&AvtabEval) -> u64| {
            with_ratio(figure_row(&format!("avtab {table}: {label}"), cols, &|c| {
                av(c).map(|a| f(&pick(&a)) as f64)
            }))
        };
        rows.push(figure("entries", |e| e.entries));
        rows.push(figure("slots", |e| e.slots));
        rows.push(figure("slots used", |e| e.slots_used));
        rows.push(figure("longest chain", |e| e.longest_chain));
        rows.push(figure("Σ chain length²", |e| e.chain_length_squared_sum));
    }
    let mut own = Row {
        label: "avtab rules: the kernel's own line".into(),
        cells: cols
            .iter()
            .map(|c| match av(c) {
                None => Cell::missing("–"),
                Some(a) => match a.kernel_rules {
                    None => Cell::text("not built in"),
                    Some(k) if k == a.rules => Cell::text("equal"),
                    Some(k) => Cell::text(format!(
                        "differs: {} entries, {}/{} used, chain {}, Σ² {}",
                        k.entries,
                        k.slots_used,
                        k.slots,
                        k.longest_chain,
                        k.chain_length_squared_sum
                    )),
                },
            })
            .collect(),
    };
    own.cells.push(Cell::missing("–"));
    rows.push(own);
    rows.extend(avtab_memory_rows(cols));
    rows
}

/// The bytes of one avtab hash slot (a pointer) and of one entry (struct
/// avtab_node: a key of four u16, a datum of a u32 or a pointer, the next
/// pointer), the same on every kernel lsmpmon boots (x86_64).
const SLOT_BYTES: u64 = 8;
const NODE_BYTES: u64 = 24;

/// The embedded-SELinux paper's Table 9: the avtab's memory, computed from
/// the tables' slots and entries, beside what the kernel's avtab_node slab
/// cache holds (it counts whole slabs' objects, and any cache merged with it).
fn avtab_memory_rows(cols: &[&Run]) -> Vec<Row> {
    let av = |c: &Run| c.footprint.as_ref().and_then(|f| f.avtab.clone());
    let kib = |b: u64| b as f64 / 1024.0;
    let row = |label: &str, f: &dyn Fn(&Run) -> Option<f64>| with_ratio(figure_row(label, cols, f));
    vec![
        row(
            "Table 9: avtab hash tables, both (KiB, slots × 8 B)",
            &|c| av(c).map(|a| kib((a.rules.slots + a.conditional_rules.slots) * SLOT_BYTES)),
        ),
        row(
            "Table 9: avtab entries, both (KiB, entries × 24 B)",
            &|c| av(c).map(|a| kib((a.rules.entries + a.conditional_rules.entries) * NODE_BYTES)),
        ),
        row("Table 9: the kernel's avtab_node slab (KiB)", &|c| {
            av(c)?;
            c.footprint
                .as_ref()?
                .slab_kib
                .get("avtab_node")
                .map(|k| *k as f64)
        }),
        shared_row(cols),
    ]
}

/// What SLUB merged into the avtab_node cache, per cell where recorded.
fn shared_row(cols: &[&Run]) -> Row {
    let mut cells: Vec<Cell> = cols
        .iter()
        .map(|c| match c.footprint.as_ref() {
            Some(f) if !f.slab_kib.contains_key("avtab_node") => Cell::missing("–"),
            Some(f) => match f.slab_shared_with.get("avtab_node") {
                Some(others) => Cell::text(others.join(", ")),
                None => Cell::missing("not recorded or alone"),
            },
            None => Cell::missing("–"),
        })
        .collect();
    cells.push(Cell::missing("–"));
    Row {
        label: "Table 9: caches sharing that slab".into(),
        cells,
    }
}

/// `name: value` lines of hash_stats ("buckets used: 245/512" gives 245).
fn hash_stat(text: &str, name: &str) -> Option<f64> {
    let v = text
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))?;
    v.trim().split('/').next()?.trim().parse().ok()
}

/// A cache_stats column summed over the CPUs' lines.
fn cache_stat(text: &str, column: &str) -> Option<f64> {
    let mut lines = text.lines();
    let at = lines.next()?.split_whitespace().position(|h| h == column)?;
    Some(
        lines
            .filter_map(|l| l.split_whitespace().nth(at)?.parse::<f64>().ok())
            .sum(),
    )
}

fn avc_rows(cols: &[&Run]) -> Vec<Row> {
    let stat = |c: &Run, file: &str| -> Option<String> {
        c.footprint.as_ref()?.kernel_stats.get(file).cloned()
    };
    let mut rows: Vec<Row> = [
        ("entries", "AVC: entries"),
        ("buckets used", "AVC: slots used"),
        ("longest chain", "AVC: longest chain"),
    ]
    .into_iter()
    .map(|(name, label)| {
        with_ratio(figure_row(label, cols, &|c| {
            hash_stat(&stat(c, HASH_STATS)?, name)
        }))
    })
    .collect();
    for column in ["lookups", "hits", "misses", "allocations", "reclaims"] {
        rows.push(with_ratio(figure_row(
            &format!("AVC: {column}"),
            cols,
            &|c| cache_stat(&stat(c, CACHE_STATS)?, column),
        )));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_avc_files_are_read() {
        let hash = "entries: 497\nbuckets used: 245/512\nlongest chain: 5\n";
        assert_eq!(hash_stat(hash, "entries"), Some(497.0));
        assert_eq!(hash_stat(hash, "buckets used"), Some(245.0));
        assert_eq!(hash_stat(hash, "longest chain"), Some(5.0));
        let cache = "lookups hits misses allocations reclaims frees\n\
                     100 90 10 10 0 2\n50 45 5 5 1 0\n";
        assert_eq!(cache_stat(cache, "lookups"), Some(150.0));
        assert_eq!(cache_stat(cache, "reclaims"), Some(1.0));
        assert_eq!(cache_stat(cache, "nonsense"), None);
    }
}
