//! One self-contained HTML page: the tables, their SVG charts and the papers,
//! rendered by a template (minijinja). No script, font or image is fetched.
use anyhow::{Context, Result};
use minijinja::Environment;
use serde::Serialize;

use super::charts::{self, Series};
use super::forms::{self, trace};
use super::input::Run;
use base::form::Form;
use base::papers;
use base::table::{fmt_cell, Cell, Table};
use model::provenance::TimeMode;
use model::trace::HookResult;

const TEMPLATE: &str = include_str!("templates/report.html");
/// Histograms drawn per traced run: its hooks with the most time.
const HISTOGRAMS_PER_RUN: usize = 6;
/// Runs whose samples are drawn (a whole atlas would make a huge page).
const SPREAD_RUNS: usize = 12;
/// Ops drawn in the kernel-version comparison.
const KERNEL_CHART_OPS: usize = 6;

#[derive(Serialize)]
struct Chart {
    id: String,
    title: String,
    svg: String,
}

#[derive(Serialize)]
struct HtmlCell {
    text: String,
    class: &'static str,
    /// The overview's heat: a background by established change.
    style: Option<String>,
}

#[derive(Serialize)]
struct HtmlTable {
    id: String,
    title: String,
    notes: Vec<String>,
    header: Vec<String>,
    rows: Vec<(String, Vec<HtmlCell>)>,
    charts: Vec<Chart>,
}

fn html_table(i: usize, t: &Table) -> Result<HtmlTable> {
    let charts = match t.form {
        Form::Table3 => overhead_chart(i, t)?.into_iter().collect(),
        Form::Table4 => vec![heat_chart(i, t)?],
        Form::AvcSweepCurve => vec![curve_chart(i, t)?],
        _ => Vec::new(),
    };
    Ok(HtmlTable {
        id: format!("t{i}"),
        title: t.title.clone(),
        notes: t.notes.clone(),
        header: t.header.clone(),
        rows: t
            .rows
            .iter()
            .map(|r| {
                let cells = r
                    .cells
                    .iter()
                    .map(|c| HtmlCell {
                        style: (t.form == Form::Overview).then(|| heat(c)).flatten(),
                        text: fmt_cell(c),
                        class: match c {
                            Cell::Value { .. }
                            | Cell::Fixed { .. }
                            | Cell::Drawn { .. }
                            | Cell::Explained { .. } => "num",
                            Cell::Text { .. } => "text",
                            Cell::Missing { .. } => "missing",
                        },
                    })
                    .collect();
                (r.label.clone(), cells)
            })
            .collect(),
        charts,
    })
}

/// An established change as a colour: red for slower, blue for faster,
/// deeper with the logarithm of the change (+1 % pale, +100 % and more
/// full); layout noise stays white.
fn heat(c: &Cell) -> Option<String> {
    let Cell::Drawn {
        change: Some(d), ..
    } = c
    else {
        return None;
    };
    let pct = Some(d.pct).filter(|_| d.established)?;
    let depth = ((1.0 + pct.abs()).log10() / 2.0).clamp(0.1, 1.0);
    let fade = |full: f64| (255.0 - (255.0 - full) * depth).round() as u8;
    let (r, g, b) = if pct >= 0.0 {
        (fade(214.0), fade(96.0), fade(77.0))
    } else {
        (fade(67.0), fade(147.0), fade(195.0))
    };
    Some(format!("background:#{r:02x}{g:02x}{b:02x}"))
}

/// The AVC sweep: ns per open against N (the rows), a line per column.
fn curve_chart(i: usize, t: &Table) -> Result<Chart> {
    let series: Vec<(String, Vec<(f64, f64)>)> = t.header[1..]
        .iter()
        .enumerate()
        .map(|(ci, name)| {
            let pts = t.rows.iter().filter_map(|r| {
                let n: f64 = r.label.parse().ok()?;
                match r.cells.get(ci)? {
                    Cell::Value { value, .. } => Some((n, *value)),
                    _ => None,
                }
            });
            (name.clone(), pts.collect())
        })
        .collect();
    let title = format!("ns per open against N distinct types, {}", t.kernel);
    Ok(Chart {
        id: format!("c{i}-lines"),
        svg: charts::lines(
            &title,
            "N (file types, log scale)",
            "ns per open+close",
            &series,
        )?,
        title,
    })
}

fn pct_of(c: &Cell) -> Option<f64> {
    match c {
        Cell::Value { pct, .. } => *pct,
        // Layout noise is no bar.
        Cell::Drawn {
            change: Some(d), ..
        } if d.established => Some(d.pct),
        _ => None,
    }
}

/// Grouped bars: % over the baseline per op, one bar per configuration.
fn overhead_chart(i: usize, t: &Table) -> Result<Option<Chart>> {
    let ops: Vec<String> = t.rows.iter().map(|r| r.label.clone()).collect();
    let series: Vec<Series> = t.header[1..]
        .iter()
        .enumerate()
        .map(|(ci, name)| Series {
            name: name.clone(),
            values: t.rows.iter().map(|r| pct_of(&r.cells[ci])).collect(),
        })
        .filter(|s| s.values.iter().any(Option::is_some))
        .collect();
    if series.is_empty() {
        return Ok(None);
    }
    let title = format!("% over the baseline per operation, kernel {}", t.kernel);
    Ok(Some(Chart {
        id: format!("c{i}-bars"),
        svg: charts::grouped_bars(&title, "% over baseline (positive = slower)", &ops, &series)?,
        title,
    }))
}

fn heat_chart(i: usize, t: &Table) -> Result<Chart> {
    let rows: Vec<String> = t.rows.iter().map(|r| r.label.clone()).collect();
    let cells: Vec<Vec<Result<(f64, String), String>>> = t
        .rows
        .iter()
        .map(|r| {
            r.cells
                .iter()
                .map(|c| match c {
                    // The shade is the figure, the label keeps its mark (h, k).
                    Cell::Value { value, .. } => Ok((*value, fmt_cell(c))),
                    other => Err(fmt_cell(other)),
                })
                .collect()
        })
        .collect();
    let title = format!("ns per hook call by configuration, kernel {}", t.kernel);
    Ok(Chart {
        id: format!("c{i}-heat"),
        svg: charts::heat_map(&title, &rows, &t.header[1..], &cells)?,
        title,
    })
}

/// Each traced run's busiest hooks as latency histograms.
fn histograms(runs: &[Run]) -> Result<Vec<Chart>> {
    let mut out = Vec::new();
    for (ri, r) in runs.iter().enumerate().filter(|(_, r)| r.passed()) {
        let Some(t) = trace(r) else { continue };
        let unit = if r.time == TimeMode::Virtual {
            "virtual ns"
        } else {
            "ns"
        };
        let mut hooks: Vec<&HookResult> = t.hooks.iter().collect();
        hooks.sort_by(|a, b| (b.sum_ns as f64).total_cmp(&(a.sum_ns as f64)));
        for h in hooks.iter().take(HISTOGRAMS_PER_RUN) {
            let buckets: Vec<(u64, u64, u64)> = model::hist::octaves(&h.hist)
                .iter()
                .map(|b| (b.low_ns, b.high_ns, b.count))
                .collect();
            if buckets.is_empty() {
                continue;
            }
            let name = &h.hook;
            let title = format!("{name}: {} on {}", r.config, r.kernel);
            out.push(Chart {
                id: format!("h{ri}-{name}"),
                svg: charts::histogram(&title, unit, &buckets)?,
                title,
            });
        }
    }
    Ok(out)
}

/// Each measured run's samples per op around the op's median (the first
/// `SPREAD_RUNS`), and how many more runs had samples.
fn spreads(runs: &[Run]) -> Result<(Vec<Chart>, usize)> {
    let benches: Vec<(usize, &Run)> = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| r.passed() && r.bench.as_ref().is_some_and(|b| !b.results.is_empty()))
        .collect();
    let mut out = Vec::new();
    for (ri, r) in benches.iter().take(SPREAD_RUNS) {
        let Some(b) = &r.bench else { continue };
        let ops: Vec<String> = b.results.iter().map(|o| o.op.clone()).collect();
        let samples: Vec<Vec<f64>> = b.results.iter().map(|o| o.samples.clone()).collect();
        let title = format!(
            "{} on {}: {} samples an op",
            r.config, r.kernel, b.options.samples
        );
        out.push(Chart {
            id: format!("s{ri}"),
            svg: charts::strip(&title, &ops, &samples)?,
            title,
        });
    }
    Ok((out, benches.len().saturating_sub(SPREAD_RUNS)))
}

/// % over the baseline per configuration, one bar per kernel, op by op.
fn kernel_charts(tables: &[Table]) -> Result<Vec<Chart>> {
    let t3: Vec<&Table> = tables.iter().filter(|t| t.form == Form::Table3).collect();
    if t3.len() < 2 {
        return Ok(Vec::new());
    }
    let mut ops: Vec<String> = Vec::new();
    let mut configs: Vec<String> = Vec::new();
    for t in &t3 {
        ops.extend(
            t.rows
                .iter()
                .map(|r| r.label.clone())
                .filter(|l| !ops.contains(l))
                .collect::<Vec<_>>(),
        );
        configs.extend(
            t.header[1..]
                .iter()
                .filter(|c| !configs.contains(c))
                .cloned()
                .collect::<Vec<_>>(),
        );
    }
    let mut out = Vec::new();
    for (oi, op) in ops.iter().take(KERNEL_CHART_OPS).enumerate() {
        let series: Vec<Series> = t3
            .iter()
            .map(|t| Series {
                name: t.kernel.clone(),
                values: configs
                    .iter()
                    .map(|c| {
                        let col = t.header[1..].iter().position(|h| h == c)?;
                        pct_of(&t.rows.iter().find(|r| r.label == *op)?.cells[col])
                    })
                    .collect(),
            })
            .collect();
        if series.iter().all(|s| s.values.iter().all(Option::is_none)) {
            continue;
        }
        let title = format!("{op}: % over the baseline by kernel");
        out.push(Chart {
            id: format!("k{oi}"),
            svg: charts::grouped_bars(&title, "% over baseline", &configs, &series)?,
            title,
        });
    }
    Ok(out)
}

pub fn render(
    tables: &[Table],
    runs: &[Run],
    inputs: &[String],
    warnings: &[String],
) -> Result<String> {
    let mut env = Environment::new();
    env.add_template("report.html", TEMPLATE)
        .context("report template")?;
    let html_tables = tables
        .iter()
        .enumerate()
        .map(|(i, t)| html_table(i, t))
        .collect::<Result<Vec<_>>>()?;
    let refs: Vec<String> = papers::ALL
        .iter()
        .map(|p| format!("{}: {}", p.short, papers::reference(p)))
        .collect();
    let kernels: Vec<String> = forms::by_kernel(runs, &[])
        .into_iter()
        .map(|(k, _)| k.to_string())
        .collect();
    let (spreads, spreads_left) = spreads(runs)?;
    let page = Page {
        version: env!("CARGO_PKG_VERSION"),
        inputs,
        kernels,
        warnings,
        tables: html_tables,
        histograms: histograms(runs)?,
        spreads,
        spreads_left,
        kernel_charts: kernel_charts(tables)?,
        papers: refs,
    };
    Ok(env
        .get_template("report.html")?
        .render(minijinja::value::Serde(&page))?)
}

#[derive(Serialize)]
struct Page<'a> {
    version: &'static str,
    inputs: &'a [String],
    kernels: Vec<String>,
    warnings: &'a [String],
    tables: Vec<HtmlTable>,
    histograms: Vec<Chart>,
    spreads: Vec<Chart>,
    spreads_left: usize,
    kernel_charts: Vec<Chart>,
    papers: Vec<String>,
}
