//! The papers' tables from cell results: the Table 3 form (operations ×
//! configurations: virtual µs and % over `none`), the Table 4 form (hooks ×
//! configurations: floor-subtracted ns per call) and the footprint.
use std::collections::BTreeMap;

use comfy_table::{presets, Cell as TCell, CellAlignment, Table as Comfy};
use serde::Serialize;
use serde_json::Value;

use super::results::{CellResult, CellStatus};

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
pub const BASELINE: &str = "none";

#[derive(Debug, Clone, Serialize)]
pub struct Table {
    pub title: String,
    pub kernel: String,
    pub notes: Vec<String>,
    pub header: Vec<String>,
    pub rows: Vec<Row>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub label: String,
    pub cells: Vec<Cell>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Cell {
    Value {
        value: f64,
        /// Change over the baseline configuration of the same kernel.
        pct: Option<f64>,
        /// Shown after the value (a footnote mark).
        mark: Option<String>,
    },
    /// Why there is no figure: "N/A", "not applicable", "proof failed", …
    Missing { why: String },
}

/// The kernel as tables name it: its series, and its flavour unless "cloud".
pub fn kernel_label(c: &CellResult) -> String {
    if c.kernel.flavour == "cloud" {
        c.kernel.series.clone()
    } else {
        format!("{} ({})", c.kernel.series, c.kernel.flavour)
    }
}

/// A percentage over the baseline only means something for the same kernel
/// package and the same measurement options.
fn comparable(base: &CellResult, c: &CellResult) -> bool {
    let (a, b) = (&base.options, &c.options);
    base.kernel.deb_sha256 == c.kernel.deb_sha256
        && a.samples == b.samples
        && a.sample_ms == b.sample_ms
        && base.time == c.time
}

/// The newest cell per (kernel, configuration).
pub fn latest(cells: &[CellResult]) -> BTreeMap<(String, String), &CellResult> {
    let mut out: BTreeMap<(String, String), &CellResult> = BTreeMap::new();
    for c in cells {
        let key = (kernel_label(c), c.config.name.clone());
        if out
            .get(&key)
            .is_none_or(|o| o.started_unix_s <= c.started_unix_s)
        {
            out.insert(key, c);
        }
    }
    out
}

/// Every table the cells can fill, kernel by kernel, configurations in `order`.
pub fn all(cells: &[CellResult], order: &[String]) -> Vec<Table> {
    let latest = latest(cells);
    let mut kernels: Vec<String> = latest.keys().map(|(k, _)| k.clone()).collect();
    kernels.dedup();
    let mut out = Vec::new();
    for k in kernels {
        let cols: Vec<&CellResult> = order
            .iter()
            .filter_map(|c| latest.get(&(k.clone(), c.clone())).copied())
            .collect();
        out.push(table3(&k, &cols));
        if cols.iter().any(|c| trace(c).is_some()) {
            out.push(table4(&k, &cols));
        }
        out.push(footprint(&k, &cols));
    }
    out
}

fn missing(c: &CellResult) -> Option<Cell> {
    let why = match c.status {
        CellStatus::Passed => return None,
        CellStatus::NotApplicable => "not applicable",
        CellStatus::ProofFailed => "proof failed",
        CellStatus::Failed => "failed",
        CellStatus::Interrupted => "interrupted",
    };
    Some(Cell::Missing { why: why.into() })
}

fn header(cols: &[&CellResult], first: &str) -> Vec<String> {
    std::iter::once(first.to_string())
        .chain(cols.iter().map(|c| c.config.name.clone()))
        .collect()
}

fn bench_medians(c: &CellResult) -> Vec<(String, String, f64)> {
    c.guest
        .as_ref()
        .and_then(|g| g.bench.as_ref())
        .and_then(|b| b["results"].as_array())
        .map(|rs| {
            rs.iter()
                .filter_map(|r| {
                    Some((
                        r["op"].as_str()?.to_string(),
                        r["unit"].as_str().unwrap_or("").to_string(),
                        r["median"].as_f64()?,
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn table3(kernel: &str, cols: &[&CellResult]) -> Table {
    let base = cols
        .iter()
        .find(|c| c.config.name == BASELINE && c.status == CellStatus::Passed);
    let mut ops: Vec<(String, String)> = Vec::new();
    for c in cols {
        for (op, unit, _) in bench_medians(c) {
            if !ops.iter().any(|(o, _)| *o == op) {
                ops.push((op, unit));
            }
        }
    }
    let rows = ops
        .iter()
        .map(|(op, unit)| {
            let base_v = base
                .and_then(|b| bench_medians(b).into_iter().find(|r| r.0 == *op))
                .map(|r| r.2);
            let cells = cols
                .iter()
                .map(|c| {
                    missing(c).unwrap_or_else(|| {
                        match bench_medians(c).into_iter().find(|r| r.0 == *op) {
                            Some((_, u, v)) => {
                                let shown = if u == "ns/op" { v / 1e3 } else { v };
                                Cell::Value {
                                    value: shown,
                                    pct: base_v
                                        .filter(|_| c.config.name != BASELINE)
                                        .filter(|_| base.is_some_and(|b| comparable(b, c)))
                                        .map(|b| (v / b - 1.0) * 100.0),
                                    mark: None,
                                }
                            }
                            None => Cell::Missing {
                                why: "not run".into(),
                            },
                        }
                    })
                })
                .collect();
            let unit = if unit == "ns/op" {
                "µs"
            } else {
                unit.as_str()
            };
            Row {
                label: format!("{op} ({unit})"),
                cells,
            }
        })
        .collect();
    Table {
        title: format!("Table 3 form: operations × configurations, kernel {kernel}"),
        kernel: kernel.into(),
        notes: vec![
            format!("{} time (QEMU TCG -icount: 1 ns ≈ one guest instruction); median of each op; untraced; (x %) over `{BASELINE}` on the same kernel package with the same samples (no % where they differ); positive = slower, except MB/s rows where positive = faster.", time_mode(cols)),
        ],
        header: header(cols, "operation"),
        rows,
    }
}

fn time_mode(cols: &[&CellResult]) -> String {
    let mut modes: Vec<&str> = cols.iter().map(|c| c.time.as_str()).collect();
    modes.dedup();
    match modes.as_slice() {
        [one] if *one == "virtual" => "Virtual".into(),
        [one] => format!("{one} (not virtual)"),
        _ => "Mixed virtual/real".into(),
    }
}

fn trace(c: &CellResult) -> Option<&Value> {
    c.guest.as_ref()?.trace.as_ref()
}

fn floor(t: &Value) -> f64 {
    t["probe"]["floor_ns"].as_f64().unwrap_or(0.0)
}

/// (figure, from the module's own function?) for `hook` in cell `c`.
fn hook_cost(c: &CellResult, measured: &[String], hook: &str) -> Option<Cell> {
    if let Some(m) = missing(c) {
        return Some(m);
    }
    let t = trace(c)?;
    let fl = floor(t);
    if measured.is_empty() {
        // No module of its own: the hook itself (security_*), as in the paper's No_secure column.
        let h = t["hooks"].as_array()?.iter().find(|h| h["hook"] == hook)?;
        let nested = t["per_lsm"].as_array().is_some_and(|p| {
            p.iter()
                .any(|r| r["hook"] == hook && r["count"].as_u64().unwrap_or(0) > 0)
        });
        return timed(h, fl).map(|v| Cell::Value {
            value: v,
            pct: None,
            mark: Some(if nested { "h*".into() } else { "h".into() }),
        });
    }
    let rows: Vec<&Value> = t["per_lsm"]
        .as_array()?
        .iter()
        .filter(|r| r["hook"] == hook && measured.iter().any(|m| r["lsm"] == m.as_str()))
        .collect();
    if rows.is_empty() {
        return Some(Cell::Missing { why: "N/A".into() });
    }
    let sum: f64 = rows.iter().filter_map(|r| timed(r, fl)).sum();
    if rows.iter().all(|r| r["count"].as_u64().unwrap_or(0) == 0) {
        return Some(Cell::Missing {
            why: "not called".into(),
        });
    }
    Some(Cell::Value {
        value: sum,
        pct: None,
        mark: None,
    })
}

fn timed(r: &Value, floor_ns: f64) -> Option<f64> {
    if r["count"].as_u64().unwrap_or(0) == 0 {
        return None;
    }
    Some((r["ave_ns"].as_f64()? - floor_ns).max(0.0))
}

fn measured(c: &CellResult) -> Vec<String> {
    c.config.measured_lsms.clone()
}

/// The kprobe fallback (kernels before 5.17) has no floor to subtract: its
/// figures carry the kprobe pair's own cost and are flagged.
fn fallback(c: &CellResult) -> bool {
    trace(c).is_some_and(|t| !t["probe"]["fallback"].is_null())
}

fn flag_fallback(c: &CellResult, cell: Cell) -> Cell {
    match cell {
        Cell::Value { value, pct, mark } if fallback(c) => Cell::Value {
            value,
            pct,
            mark: Some(mark.map_or("k".into(), |m| format!("{m} k"))),
        },
        other => other,
    }
}

fn table4(kernel: &str, cols: &[&CellResult]) -> Table {
    let mut hooks: Vec<String> = PAPER_HOOKS.iter().map(|s| s.to_string()).collect();
    let mut costs: Vec<(String, f64)> = Vec::new();
    for c in cols {
        let m = measured(c);
        let Some(t) = trace(c) else { continue };
        for r in t["per_lsm"].as_array().into_iter().flatten() {
            if m.iter().any(|l| r["lsm"] == l.as_str()) {
                // Ranked by the time the module spent in the hook over the run.
                if let (Some(h), Some(v)) = (r["hook"].as_str(), timed(r, floor(t))) {
                    costs.push((h.to_string(), v * r["count"].as_f64().unwrap_or(0.0)));
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
    let rows = hooks
        .iter()
        .map(|h| Row {
            label: h.clone(),
            cells: cols
                .iter()
                .map(|c| {
                    let cell = hook_cost(c, &measured(c), h).unwrap_or(Cell::Missing {
                        why: if trace(c).is_none() {
                            "no trace".into()
                        } else {
                            "not called".into()
                        },
                    });
                    flag_fallback(c, cell)
                })
                .collect(),
        })
        .collect();
    Table {
        title: format!("Table 4 form: LSM hooks × configurations, kernel {kernel} (virtual ns per call, probe floor subtracted)"),
        kernel: kernel.into(),
        notes: [
            "Each module's own implementation of the hook (trace --per-lsm), summed over its functions; N/A: the module does not implement the hook.".into(),
            "h: no module of its own (none, ima): the security_* hook itself. h*: includes lsmpmon's probe on a nested module function (capability's), so it overstates.".into(),
            format!("Hooks: Table 4 of “Evaluation of Performance of Secure OS Using Performance Evaluation Mechanism of LSM-based LSMPMON” ({}), then the {TOP_HOOKS} where the modules spent most time (average × calls) during the benchmark.", PAPER_HOOKS.join(", ")),
        ].into_iter().chain(cols.iter().any(|c| fallback(c)).then(|| "k: kprobe/kretprobe fallback (kernel before 5.17): no probe floor to subtract, the figure includes the kprobe pair's own cost; compare it within its kernel only.".to_string())).collect(),
        header: header(cols, "hook"),
        rows,
    }
}

fn footprint(kernel: &str, cols: &[&CellResult]) -> Table {
    let fp = |c: &CellResult| c.guest.as_ref().and_then(|g| g.footprint.clone());
    let base = cols
        .iter()
        .find(|c| c.config.name == BASELINE)
        .and_then(|c| fp(c))
        .map(|f| f.after_setup.used_kib as f64);
    let row = |label: &str, f: &dyn Fn(&CellResult) -> Option<f64>| Row {
        label: label.into(),
        cells: cols
            .iter()
            .map(|c| {
                missing(c).unwrap_or_else(|| match f(c) {
                    Some(v) => Cell::Value {
                        value: v,
                        pct: None,
                        mark: None,
                    },
                    None => Cell::Missing { why: "–".into() },
                })
            })
            .collect(),
    };
    Table {
        title: format!("Footprint, kernel {kernel}"),
        kernel: kernel.into(),
        notes: vec![format!(
            "memory: MemTotal − MemFree − Buffers − Cached − SReclaimable after setup, KiB; A − B is minus `{BASELINE}` on the same kernel. Added: bytes of files, programs and libraries the configuration puts in the guest."
        )],
        header: header(cols, "figure"),
        rows: vec![
            row("memory used (KiB)", &|c| fp(c).map(|f| f.after_setup.used_kib as f64)),
            row("A − B (KiB)", &|c| Some(fp(c)?.after_setup.used_kib as f64 - base?)),
            row("setup added (KiB)", &|c| {
                let f = fp(c)?;
                Some(f.after_setup.used_kib as f64 - f.before_setup.used_kib as f64)
            }),
            row("policy (bytes)", &|c| fp(c).map(|f| f.policy_bytes as f64)),
            row("added to guest (bytes)", &|c| Some(c.bytes_added as f64)),
        ],
    }
}

fn fmt_cell(c: &Cell) -> String {
    match c {
        Cell::Missing { why } => why.clone(),
        Cell::Value { value, pct, mark } => {
            let v = if value.abs() >= 1000.0 || value.fract() == 0.0 {
                format!("{value:.0}")
            } else if value.abs() >= 10.0 {
                format!("{value:.1}")
            } else {
                format!("{value:.3}")
            };
            let p = pct.map(|p| format!(" ({p:+.1} %)")).unwrap_or_default();
            let m = mark.as_ref().map(|m| format!(" {m}")).unwrap_or_default();
            format!("{v}{p}{m}")
        }
    }
}

fn comfy(t: &Table, preset: &str) -> Comfy {
    let mut c = Comfy::new();
    c.load_preset(preset);
    c.set_header(t.header.iter().map(TCell::new));
    for r in &t.rows {
        c.add_row(
            std::iter::once(TCell::new(&r.label)).chain(
                r.cells
                    .iter()
                    .map(|x| TCell::new(fmt_cell(x)).set_alignment(CellAlignment::Right)),
            ),
        );
    }
    c
}

pub fn text(tables: &[Table]) -> String {
    tables
        .iter()
        .map(|t| {
            format!(
                "{}\n{}\n{}\n",
                t.title,
                comfy(t, presets::UTF8_FULL_CONDENSED),
                t.notes.join("\n")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn markdown(tables: &[Table]) -> String {
    tables
        .iter()
        .map(|t| {
            format!(
                "### {}\n\n{}\n\n{}\n",
                t.title,
                comfy(t, presets::ASCII_MARKDOWN),
                t.notes
                    .iter()
                    .map(|n| format!("- {n}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
