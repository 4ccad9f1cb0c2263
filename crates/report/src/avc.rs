//! The AVC sweep's form (issue 25): time per open against N, the number of
//! distinct file types the op touched, one series per kernel, configuration
//! (AVC threshold) and slot count; and per N the cache's own statistics and
//! the traced run's per-hook figures of the checks that ask the AVC.
use super::forms::{floor, time_mode, timed, trace};
use super::input::Run;
use base::table::{Cell, Row, Table};
use model::avc::AvcFigures;
use model::bench::OpResult;

/// The SELinux functions that ask the AVC on every open (Table 4 rows).
const HOOKS: &[&str] = &["file_open", "inode_permission"];
/// The 2025 patch's avc_search_node figures (real ns, Qcom SM8750, 6.6):
/// (nodes, slots, ns).
const PATCH_NS: &[(u64, u64, f64)] = &[(512, 512, 85.0), (8192, 512, 277.0), (8192, 8192, 106.0)];

/// One op of one run: a point of the sweep.
struct Point<'a> {
    run: &'a Run,
    op: &'a OpResult,
    avc: &'a AvcFigures,
}

impl Point<'_> {
    fn series(&self) -> String {
        format!(
            "{} {} ({} slots)",
            self.run.kernel, self.run.config, self.avc.hash.buckets
        )
    }
}

fn points(runs: &[Run]) -> Vec<Point<'_>> {
    let mut out: Vec<Point> = runs
        .iter()
        .filter(|r| r.passed())
        .flat_map(|run| {
            let ops = run.bench.as_ref().map_or(&[][..], |b| &b.results[..]);
            ops.iter().filter_map(move |op| {
                Some(Point {
                    run,
                    op,
                    avc: op.avc.as_ref()?,
                })
            })
        })
        .collect();
    out.sort_by_cached_key(|p| (p.series(), p.avc.types));
    out
}

/// The sweep's tables: the curve (N × series) and the cache per N.
pub fn tables(runs: &[Run]) -> Vec<Table> {
    let pts = points(runs);
    if pts.is_empty() {
        return Vec::new();
    }
    vec![curve(&pts), cache(&pts)]
}

fn series_names(pts: &[Point]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for p in pts {
        if !names.contains(&p.series()) {
            names.push(p.series());
        }
    }
    names
}

fn kernels(pts: &[Point]) -> String {
    let mut k: Vec<String> = Vec::new();
    for p in pts {
        if !k.contains(&p.run.kernel.to_string()) {
            k.push(p.run.kernel.to_string());
        }
    }
    k.join(", ")
}

/// Time per open+close against N, one column per series.
fn curve(pts: &[Point]) -> Table {
    let names = series_names(pts);
    let mut ns: Vec<u64> = pts.iter().map(|p| p.avc.types).collect();
    ns.sort_unstable();
    ns.dedup();
    let runs: Vec<&Run> = pts.iter().map(|p| p.run).collect();
    let rows = ns
        .iter()
        .map(|&n| Row {
            label: n.to_string(),
            cells: names
                .iter()
                .map(|s| {
                    pts.iter()
                        .find(|p| p.avc.types == n && p.series() == *s)
                        .map_or(Cell::missing("–"), |p| Cell::value(p.op.summary.median))
                })
                .collect(),
        })
        .collect();
    let mut notes = vec![
        format!("{} time, median ns per open+close of one file, the files' types taken round-robin (bench ops avc_open_N; the `selinux-avc` configurations: selinux-mini's policy plus 16 384 generated types, one file each, labelled by named type transitions). Each N is its own guest boot, so no N inherits another's cache.", time_mode(&runs)),
        "The 2025 patch that made the AVC's slot count a kernel option (CONFIG_SECURITY_SELINUX_AVC_HASH_BITS, Hongru Zhang) timed avc_search_node alone, about 100 000 000 lookups on a Qualcomm SM8750 (Android 6.6, real ns): 85 ns with 512 nodes in 512 slots; 277 ns with the threshold raised to 8 192 nodes in 512 slots; 106 ns with 8 192 nodes in 8 192 slots. Here the figure is a whole open+close in virtual ns, so a longer chain shows as the difference between N's, not as a search time.".into(),
        "Slots: a node's slot is (ssid ^ tsid << 2 ^ tclass << 4) & (slots − 1) on 6.1, av_hash (the avtab's MurmurHash3-style mix) on 7.x; from the kernels with CONFIG_SECURITY_SELINUX_AVC_HASH_BITS the default threshold equals the slot count.".into(),
    ];
    notes.extend(names.iter().filter_map(|s| growth(pts, s)));
    Table {
        form: base::form::Form::AvcSweepCurve,
        title: "AVC sweep: time per open against N distinct file types".into(),
        kernel: kernels(pts),
        notes,
        header: std::iter::once("N (types)".to_string())
            .chain(names)
            .collect(),
        rows,
    }
}

/// What the curve shows for one series: the cost added from the smallest N
/// to the largest, and what the cache did there.
fn growth(pts: &[Point], series: &str) -> Option<String> {
    let s: Vec<&Point> = pts.iter().filter(|p| p.series() == series).collect();
    let (first, last) = (s.first()?, s.last()?);
    if first.avc.types == last.avc.types {
        return None;
    }
    let (a, c, h) = (last.avc, &last.avc.cache, &last.avc.hash);
    Some(format!(
        "{series}: {:.0} → {:.0} ns per open from N = {} to N = {} ({:+.0} ns); at N = {}: {:.2} AVC lookups per open, {} misses in {} opens ({} on the untimed first pass of a cold cache at most), {} reclaims; {} nodes in {}/{} slots, longest chain {} (threshold {}).",
        first.op.summary.median,
        last.op.summary.median,
        first.avc.types,
        a.types,
        last.op.summary.median - first.op.summary.median,
        a.types,
        c.lookups as f64 / a.opens.max(1) as f64,
        c.misses,
        a.opens,
        a.types,
        c.reclaims,
        h.entries,
        h.buckets_used,
        h.buckets,
        h.longest_chain,
        a.cache_threshold,
    ))
}

/// The traced run's figure for `hook` in the module's own function (ns, floor out).
fn hook_ns(run: &Run, hook: &str) -> Cell {
    let Some(t) = trace(run) else {
        return Cell::missing("not traced");
    };
    let fl = floor(t);
    t.per_lsm
        .iter()
        .find(|r| r.stats.hook == hook && run.measured_lsms.contains(&r.lsm))
        .and_then(|r| timed(&r.stats, fl))
        .map_or(Cell::missing("not called"), Cell::value)
}

fn count(x: u64) -> Cell {
    Cell::Fixed {
        value: x as f64,
        decimals: 0,
    }
}

/// Per series and N: the op's time, the cache's counters over the run, its
/// nodes and chains after it, and the per-hook figures.
fn cache(pts: &[Point]) -> Table {
    let header = [
        "series, N",
        "ns/open",
        "distinct labels",
        "threshold",
        "opens",
        "lookups",
        "hits",
        "misses",
        "allocations",
        "reclaims",
        "frees",
        "entries",
        "buckets used",
        "slots",
        "longest chain",
        "selinux file_open (ns)",
        "selinux inode_permission (ns)",
    ];
    let rows = pts
        .iter()
        .map(|p| {
            let (a, c, h) = (p.avc, &p.avc.cache, &p.avc.hash);
            let mut cells = vec![
                Cell::value(p.op.summary.median),
                count(a.distinct_labels),
                count(a.cache_threshold),
                count(a.opens),
            ];
            cells.extend(
                [
                    c.lookups,
                    c.hits,
                    c.misses,
                    c.allocations,
                    c.reclaims,
                    c.frees,
                ]
                .map(count),
            );
            cells.extend([h.entries, h.buckets_used, h.buckets, h.longest_chain].map(count));
            cells.extend(HOOKS.iter().map(|hk| hook_ns(p.run, hk)));
            Row {
                label: format!("{}, N = {}", p.series(), a.types),
                cells,
            }
        })
        .collect();
    let runs: Vec<&Run> = pts.iter().map(|p| p.run).collect();
    Table {
        form: base::form::Form::AvcSweep,
        title: "AVC sweep: the cache per N (cache_stats, hash_stats, Table 4 hooks)".into(),
        kernel: kernels(pts),
        notes: vec![
            format!("{} time. Counters: /sys/fs/selinux/avc/cache_stats summed over CPUs, from before the op's first open to after its last (`opens`: one untimed pass over the N files, then calibration, warm-up and samples); the setup flushed the cache (enforce 0 → 1) after making the files, so a raised threshold starts cold. entries, buckets used / slots, longest chain: avc/hash_stats after the run. Distinct labels: the N files' security.selinux values (N when every file has its own type).", time_mode(&runs)),
            "selinux file_open, selinux inode_permission: the traced run's (trace --per-lsm, one sample) average of SELinux's own function for that hook, probe floor out; both ask the AVC (avc_has_perm) on every open, inode_permission also for the directory's search. Average per call over that run (it is not the samples above).".into(),
            format!("The patch's own figures, for scale: {}.", PATCH_NS.iter().map(|(n, s, ns)| format!("{n} nodes / {s} slots {ns} ns")).collect::<Vec<_>>().join("; ")),
        ],
        header: header.iter().map(|h| h.to_string()).collect(),
        rows,
    }
}
