//! `lsmpmon report` and `lsmpmon compare`: the papers' tables and charts from
//! any lsmpmon results (lab cells and directories, bench and trace results),
//! and whether two runs differ.
mod account;
mod avc;
mod avtab_slots;
pub mod charts;
pub mod compare;
pub mod floor;
pub mod forms;
mod framework;
mod html;
mod ima;
mod ima_module;
mod image_growth;
pub mod input;
mod inventory;
mod kernels;
mod observer;
mod overview;
mod selinux;
mod studies;
mod syscalls;
#[cfg(test)]
mod test_runs;

mod webstone;

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::{Args, ValueEnum};

use base::error::{usage, with_code, EXIT_FAILURE, EXIT_OK};
use base::stats::{Verdict, VIRTUAL_DETERMINISM_PCT};
use base::table::{self, Table};
use input::Run;
use model::cell::CellStatus;
use model::compare::{CompareResult, COMPARE_SCHEMA};
use model::report::{ReportResult, RunRef, REPORT_SCHEMA};
use trace::tables as trace_tables;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Markdown,
    Csv,
    Json,
    Html,
}

/// What `compare` prints: `report`'s formats but the HTML page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    Text,
    Markdown,
    Csv,
    Json,
}

impl From<CompareFormat> for Format {
    fn from(f: CompareFormat) -> Self {
        match f {
            CompareFormat::Text => Format::Text,
            CompareFormat::Markdown => Format::Markdown,
            CompareFormat::Csv => Format::Csv,
            CompareFormat::Json => Format::Json,
        }
    }
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Lab result directories, lab cell files, `bench --json` or `trace --json` results (any mix).
    #[arg(required = true, value_name = "RESULTS")]
    pub results: Vec<PathBuf>,
    /// Output format: aligned text, Markdown, CSV, JSON (the tables and notes) or
    /// one HTML page with charts.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Write here instead of standard output (never through a symlink).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Syscalls of the Tables 6/7 form, comma-separated (default: the paper's close and creat where traced, then the three with most hook time).
    #[arg(long, value_name = "LIST", value_parser = base::parse::printable)]
    pub syscalls: Option<String>,
    /// Configurations in this order first (lab names; others follow as found).
    #[arg(long, value_name = "LIST", default_value = lab::TABLE_ORDER)]
    pub order: String,
    /// Only tables of these forms, comma-separated (e.g. `overview,table3`; default: every
    /// table the results fill).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub form: Vec<base::form::Form>,
    /// Skip result files that cannot be read (each named on stderr) instead of stopping.
    #[arg(long)]
    pub skip_invalid: bool,
    /// Print the papers' reference list and exit.
    #[arg(long, exclusive = true)]
    pub papers: bool,
    /// Print, as JSON, the layout floor the `none` draws in RESULTS give per kernel and op
    /// (what results/floor.json holds, against which one draw a side is judged) and exit.
    #[arg(long, conflicts_with_all = ["form", "format", "order", "syscalls"])]
    pub make_floor: bool,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The earlier run: a result file, a lab results directory, or (real
    /// time) a directory of repeated runs, each run one observation.
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// The later run, of the same kind.
    #[arg(value_name = "B")]
    pub b: PathBuf,
    /// Output format: aligned text, Markdown, CSV or JSON (a compare result).
    #[arg(long, value_enum, default_value = "text")]
    pub format: CompareFormat,
    /// Significance level of the real-time test (Mann-Whitney U, two-sided).
    #[arg(long, default_value = "0.01", value_parser = parse_alpha)]
    pub alpha: f64,
    /// Compare runs measured on different machines or kernels anyway (flagged).
    #[arg(long)]
    pub force: bool,
    /// Exit 1 when any figure is slower.
    #[arg(long)]
    pub fail_on_slower: bool,
}

fn parse_alpha(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(a) if a > 0.0 && a < 1.0 => Ok(a),
        _ => Err(format!(
            "{s} is not a significance level between 0 and 1 (e.g. 0.01)"
        )),
    }
}

fn split_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(String::from)
        .collect()
}

/// Every table the runs can fill: Tables 3/4/footprint per kernel, Tables
/// 6/7 across kernels, the other studies' tables, and each single trace's
/// per-hook table.
pub fn tables(runs: &[Run], order: &[String], syscalls: &[String]) -> Vec<Table> {
    let mut out = overview::tables(runs, order);
    out.extend(forms::all(runs, order));
    out.extend(account::tables(runs, order));
    out.extend(inventory::tables(runs, order));
    out.extend(kernels::tables(runs, order));
    out.extend(framework::tables(runs));
    out.extend(image_growth::tables(runs));
    out.extend(observer::table(runs));
    let refs: Vec<&Run> = runs.iter().collect();
    out.extend(syscalls::tables(&refs, syscalls));
    out.extend(selinux::tables(runs, order));
    out.extend(studies::yield_table(&refs));
    out.extend(ima::tables(runs, order));
    out.extend(ima_module::tables(runs, order));
    out.extend(webstone::tables(&refs, order));
    out.extend(avc::tables(runs));
    out.extend(avtab_slots::tables(runs));
    for r in runs.iter().filter(|r| !r.from_lab) {
        if let Some(t) = &r.trace {
            let what = format!(", {} ({})", r.config, r.kernel);
            out.push(trace_tables::hooks(
                t,
                &trace_tables::called_hooks(t),
                &what,
            ));
        }
    }
    out
}

pub fn json(
    tables: &[Table],
    runs: &[Run],
    inputs: &[String],
    warnings: &[String],
) -> Result<String> {
    let doc = ReportResult {
        schema: REPORT_SCHEMA.into(),
        lsmpmon_version: env!("CARGO_PKG_VERSION").into(),
        inputs: inputs.to_vec(),
        runs: runs
            .iter()
            .map(|r| RunRef {
                source: r.source.display().to_string(),
                kernel: r.kernel.to_string(),
                config: r.config.clone(),
                status: r.status,
                reason: r.reason.clone(),
                time: r.time,
            })
            .collect(),
        warnings: warnings.to_vec(),
        tables: tables.to_vec(),
    };
    Ok(serde_json::to_string_pretty(&doc)? + "\n")
}

pub fn render(
    format: Format,
    tables: &[Table],
    runs: &[Run],
    inputs: &[String],
    warnings: &[String],
) -> Result<String> {
    Ok(match format {
        Format::Text => table::text(tables),
        Format::Markdown => markdown_page(tables, runs, inputs, warnings),
        Format::Csv => table::csv(tables)?,
        Format::Json => json(tables, runs, inputs, warnings)?,
        Format::Html => html::render(tables, runs, inputs, warnings)?,
    })
}

/// Each warning as a CSV record of form `warning` (CSV has no notes): a
/// reader of the CSV alone sees that its cells were merged by force.
fn csv_warnings(warnings: &[String]) -> Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for text in warnings {
        w.write_record(["warning", "", "", "", "", "", "", text, ""])?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// What `lab merge --force` recorded in each input directory, as warnings.
fn forced_merges(inputs: &[PathBuf]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for dir in inputs.iter().filter(|p| p.is_dir()) {
        if let Some(m) = lab::batch::merge::Merged::read(dir)? {
            out.extend(
                m.forced
                    .iter()
                    .map(|f| format!("WARNING: {} was merged with --force: {f}", dir.display())),
            );
            // The merge kept one run of each such cell: the other's figures
            // are not in the tables, so the disagreement is said beside them.
            out.extend(m.disagreements.iter().map(|d| {
                format!(
                    "WARNING: {} was merged from runs that disagree, one kept: {d}",
                    dir.display()
                )
            }));
        }
    }
    Ok(out)
}

/// The Markdown tables under a heading that says what they were made from.
fn markdown_page(tables: &[Table], runs: &[Run], inputs: &[String], warnings: &[String]) -> String {
    let mut kernels: Vec<String> = Vec::new();
    let mut configs: Vec<&str> = Vec::new();
    for r in runs {
        let k = r.kernel.to_string();
        if !kernels.contains(&k) {
            kernels.push(k);
        }
        if !configs.contains(&r.config.as_str()) {
            configs.push(&r.config);
        }
    }
    let count = |s: CellStatus| runs.iter().filter(|r| r.status == s).count();
    let mut page = format!(
        "# lsmpmon report\n\n{} results from {}: kernels {}; configurations {}. \
         {} passed (a lab cell passes only after proving its configuration), {} not applicable, {} failed or proof failed. \
         Made by `lsmpmon report` from those results alone.\n\n",
        runs.len(),
        md_list(inputs.iter().map(String::as_str)),
        md_list(kernels.iter().map(String::as_str)),
        md_list(configs.iter().copied()),
        count(CellStatus::Passed),
        count(CellStatus::NotApplicable),
        runs.len() - count(CellStatus::Passed) - count(CellStatus::NotApplicable),
    );
    for w in warnings {
        page.push_str(&format!("- {}\n", table::md_text(w)));
    }
    if !warnings.is_empty() {
        page.push('\n');
    }
    page + &table::markdown(tables)
}

/// Names from the results (paths, kernels, configurations), escaped for
/// Markdown prose.
fn md_list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.map(table::md_text).collect::<Vec<_>>().join(", ")
}

/// Output to a file (atomically; only a regular file is replaced) or stdout.
fn emit(output: Option<&PathBuf>, text: &str) -> Result<()> {
    let Some(p) = output else {
        return base::output::stdout(text);
    };
    if let Ok(m) = std::fs::symlink_metadata(p) {
        if !m.is_file() {
            return Err(usage(format!(
                "refusing to replace {}: it is not a regular file (a link, device or directory); choose another -o",
                p.display()
            )));
        }
    }
    base::secure_fs::write_atomic(p, text.as_bytes()).map_err(|e| {
        with_code(
            EXIT_FAILURE,
            format!(
                "cannot write {}: {}",
                p.display(),
                base::error::one_line(&e)
            ),
        )
    })
}

/// `report --make-floor`: the floor of the `none` draws given, as JSON.
fn make_floor(runs: &[Run], args: &ReportArgs) -> Result<i32> {
    let from = args
        .results
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let table = floor::from_runs(runs, from);
    if table.floors.is_empty() {
        return Err(usage(
            "the results hold no passed lab cell of `none`: no floor to make",
        ));
    }
    emit(
        args.output.as_ref(),
        &(serde_json::to_string_pretty(&table)? + "\n"),
    )?;
    Ok(EXIT_OK)
}

pub fn main(args: ReportArgs) -> Result<i32> {
    if args.papers {
        let list: String = base::papers::ALL
            .iter()
            .map(|p| {
                format!(
                    "{}: {}\n  used for: {}\n",
                    p.short,
                    base::papers::reference(p),
                    p.used_for
                )
            })
            .collect();
        base::output::stdout(&list)?;
        return Ok(EXIT_OK);
    }
    if args.make_floor {
        return make_floor(&input::load_all(&args.results, args.skip_invalid)?, &args);
    }
    let (runs, superseded) = input::load_counting(&args.results, args.skip_invalid)?;
    let mut warnings = input::warnings(&runs);
    warnings.extend(superseded);
    let forced = forced_merges(&args.results)?;
    warnings.extend(forced.iter().cloned());
    for w in &warnings {
        base::say!("lsmpmon: {w}");
    }
    let mut syscalls = args.syscalls.as_deref().map(split_list).unwrap_or_default();
    let mut seen = std::collections::HashSet::new();
    syscalls.retain(|s| seen.insert(s.clone()));
    syscalls::check_names(&runs, &syscalls).map_err(usage)?;
    let mut tables = tables(&runs, &split_list(&args.order), &syscalls);
    if tables.is_empty() {
        return Err(usage(
            "the results fill no table (no benchmark, trace or footprint in them)",
        ));
    }
    if !args.form.is_empty() {
        tables.retain(|t| args.form.contains(&t.form));
        if tables.is_empty() {
            let asked: Vec<&str> = args.form.iter().map(|f| f.name()).collect();
            return Err(usage(format!(
                "the results fill no {} table: leave out --form to see the forms they fill",
                asked.join(" or ")
            )));
        }
    }
    // Under every table too: a table is often read (or pasted) alone.
    for t in &mut tables {
        t.notes.extend(forced.iter().cloned());
    }
    let inputs: Vec<String> = args
        .results
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let mut text = render(args.format, &tables, &runs, &inputs, &warnings)?;
    if let Format::Csv = args.format {
        text += &csv_warnings(&forced)?;
    }
    emit(args.output.as_ref(), &text)?;
    Ok(EXIT_OK)
}

/// One side of `compare`: its runs, each line about what was left out said
/// on stderr (superseded runs, copies counted once).
fn compare_side(side: &str, path: &Path) -> Result<Vec<Run>> {
    let (runs, left_out) = input::load_counting(std::slice::from_ref(&path.to_path_buf()), false)?;
    for line in left_out {
        base::say!("lsmpmon: {side}: {line}");
    }
    for line in forced_merges(std::slice::from_ref(&path.to_path_buf()))? {
        base::say!("lsmpmon: {side}: {line}");
    }
    Ok(runs)
}

pub fn compare_main(args: CompareArgs) -> Result<i32> {
    let a = compare_side("A", &args.a)?;
    let b = compare_side("B", &args.b)?;
    input::one_unit_per_op(a.iter().chain(&b))?;
    let pairs = compare::pair(&a, &b)?;
    let forced = compare::check_origins(&pairs, args.force)?;
    if let Some(w) = compare::builds_warning(&a, &b) {
        base::say!("lsmpmon: {w}");
    }
    let changes = compare::changes(&pairs, args.alpha);
    if changes.is_empty() {
        return Err(usage(
            "A and B share no figure (no common bench op or traced hook)",
        ));
    }
    let slower = changes
        .iter()
        .filter(|c| c.verdict == Verdict::Slower)
        .count();
    let text = if args.format == CompareFormat::Json {
        let doc = CompareResult {
            schema: COMPARE_SCHEMA.into(),
            lsmpmon_version: env!("CARGO_PKG_VERSION").into(),
            a: args.a.display().to_string(),
            b: args.b.display().to_string(),
            alpha: args.alpha,
            virtual_determinism_pct: VIRTUAL_DETERMINISM_PCT,
            forced,
            changes,
        };
        serde_json::to_string_pretty(&doc)? + "\n"
    } else {
        let t = [compare::table(&changes, &pairs, &forced)];
        render(args.format.into(), &t, &[], &[], &[])?
    };
    base::output::stdout(&text)?;
    Ok(if args.fail_on_slower && slower > 0 {
        EXIT_FAILURE
    } else {
        EXIT_OK
    })
}
