//! `lsmpmon lab`: its subcommands, and the tables printed over a matrix's
//! cells (the lab runs the cells, the report layer draws the tables).
use std::path::PathBuf;

use anyhow::Result;
use base::output::stdout;
use clap::{Args, Subcommand};

use super::lab_args::{RerunArgs, RunArgs};
use base::error::{usage, with_code, EXIT_FAILURE, EXIT_OK};
use base::parse::split_list;
use base::table;
use lab::{self, batch, results, RunOutcome};
use report::{self, input, input::BASELINE};

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct LabCommand {
    #[command(subcommand)]
    pub sub: Option<LabSub>,
    /// `lsmpmon lab [OPTIONS]` is `lab run --trace [OPTIONS]`: the main job.
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Subcommand, Debug)]
pub enum LabSub {
    /// Run kernels × configurations × ops; each cell proves its policy first.
    Run(RunArgs),
    /// Repeat one cell from its result's own provenance (kernel, configuration, options).
    Rerun(RerunArgs),
    /// Print the tables of a results directory (cells from any machine).
    Tables(TablesArgs),
    /// Resolve a matrix into its cells and write a plan: one command per cell.
    Plan(PlanArgs),
    /// Run one cell of a plan into a results directory.
    Cell(CellArgs),
    /// Submit a matrix to a batch engine (Slurm): one job array, one task a cell.
    Submit(SubmitArgs),
    /// Where a submitted plan's cells stand: pending, running, passed, failed.
    Status(StatusArgs),
    /// Join results directories (machines, tasks) into one.
    Merge(MergeArgs),
    /// The configurations this lsmpmon finds, in the tables' order, one a line.
    Configs(ConfigsArgs),
    /// (guest) run one cell: setup, proof, bench, trace.
    #[command(hide = true)]
    Guest { plan: PathBuf },
    /// (guest) apply the configuration's confinement, then exec COMMAND.
    #[command(hide = true)]
    Confine {
        plan: PathBuf,
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// (guest, under trace) run the cell's ops one by one, dumping the trace after each.
    #[command(hide = true)]
    PerOp { plan: PathBuf },
    /// (guest, as the workload) try the access matrix, print the outcomes.
    #[command(hide = true)]
    Access {
        plan: PathBuf,
        #[arg(long)]
        landlock: bool,
    },
    /// (guest) start nginx serving the `web` ops' file mix on the loopback.
    #[command(hide = true)]
    WebServer {
        #[arg(long, default_value = lab::guest_plan::NGINX)]
        nginx: PathBuf,
    },
}

#[derive(Args, Debug)]
pub struct TablesArgs {
    /// Results directory.
    #[arg(default_value = "lab-results")]
    pub dir: PathBuf,
    /// text, markdown or json.
    #[arg(long, default_value = "text", value_parser = ["text", "markdown", "json"])]
    pub format: String,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Where to write the plan (JSON).
    #[arg(short = 'o', long = "output", value_name = "PLAN")]
    pub output: PathBuf,
}

#[derive(Args, Debug)]
pub struct CellArgs {
    /// A plan written by `lab plan` or `lab submit`.
    pub plan: PathBuf,
    /// The cell's index in the plan (0 to cells - 1).
    pub index: usize,
    /// Results directory (default: the plan's).
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// Kernel cache (default: the plan's).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct SubmitArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Submit to Slurm (`sbatch`; SLURM_CONF names the cluster).
    #[arg(long, required = true)]
    pub slurm: bool,
    /// Slurm partition to run the tasks in (sbatch --partition). Default: the cluster's.
    #[arg(long)]
    pub partition: Option<String>,
    /// Each task's time limit, as Slurm reads it (`30`, `1:00:00`).
    #[arg(long)]
    pub time: Option<String>,
    /// Tasks running at once (`--array=…%K`).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub max_parallel: Option<u32>,
    /// One more sbatch option (repeatable), e.g. `--sbatch-arg=--account=lab`.
    #[arg(long = "sbatch-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub sbatch_args: Vec<String>,
    /// Return once submitted (`lab status PLAN` shows the progress).
    #[arg(long)]
    pub no_wait: bool,
    /// Submit a plan's cells that have not passed (the plan's options, not the run options, apply).
    #[arg(long, value_name = "PLAN")]
    pub resume: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// A plan (`RESULTS/batch/<id>/plan.json` for a submitted one).
    pub plan: PathBuf,
}

#[derive(Args, Debug)]
pub struct ConfigsArgs {
    /// More configuration directories (searched first). Repeatable.
    #[arg(long = "config-dir", value_name = "DIR", value_parser = base::parse::path)]
    pub config_dirs: Vec<PathBuf>,
    /// One comma-separated line (what --configs takes) instead of one a line.
    #[arg(long)]
    pub comma: bool,
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The merged results directory (new, or without cells).
    pub out: PathBuf,
    /// Results directories to join.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Merge cells of other lsmpmon versions, plans or kernel packages (flagged in the tables).
    #[arg(long)]
    pub force: bool,
}

/// The `--configs` help of `lab` and its subcommands, with the
/// configurations this lsmpmon finds and where: a checkout's `configs/`, or
/// the package's `/usr/share/lsmpmon/configs`. Read when the help is built,
/// so the man pages (made from the bare definitions) name no build machine's path.
pub fn with_configs_found(cmd: clap::Command) -> clap::Command {
    let dir = lab::spec::shipped_dir();
    let names = lab::spec::available(std::slice::from_ref(&dir));
    let text = if names.is_empty() {
        format!(
            "Configurations, comma-separated: directories under a --config-dir \
             (none shipped in {}: set LSMPMON_CONFIGS to where they are)",
            dir.display()
        )
    } else {
        format!(
            "Configurations, comma-separated: the shipped ones (in {}: {}) or directories \
             under a --config-dir",
            dir.display(),
            names.join(", ")
        )
    };
    cmd.mut_subcommand("lab", |lab| configs_help(lab, &text))
}

fn configs_help(mut cmd: clap::Command, text: &str) -> clap::Command {
    if cmd.get_arguments().any(|a| a.get_id() == "configs") {
        cmd = cmd.mut_arg("configs", |a| a.help(text.to_string()));
    }
    let subs: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for sub in subs {
        cmd = cmd.mut_subcommand(sub, |s| configs_help(s, text));
    }
    cmd
}

pub fn main(cmd: LabCommand) -> Result<i32> {
    match cmd.sub {
        None => {
            let mut args = cmd.run;
            args.trace = true;
            finish(lab::run(&args.request()?, args.jobs)?)
        }
        Some(LabSub::Run(args)) => finish(lab::run(&args.request()?, args.jobs)?),
        Some(LabSub::Rerun(args)) => finish(lab::rerun(&args.request())?),
        Some(LabSub::Tables(args)) => show_tables(&args),
        Some(LabSub::Plan(args)) => write_plan(&args),
        Some(LabSub::Cell(args)) => batch::cell::run(
            &args.plan,
            args.index,
            args.results.as_deref(),
            args.cache_dir.as_deref(),
        )?
        .finish(),
        Some(LabSub::Submit(args)) => submit(&args),
        Some(LabSub::Status(args)) => status(&args),
        Some(LabSub::Merge(args)) => merge(&args),
        Some(LabSub::Configs(args)) => configs(&args),
        Some(LabSub::Guest { plan }) => lab::guest::cell::main(&plan),
        Some(LabSub::Confine { plan, command }) => lab::guest::cell::confine(&plan, &command),
        Some(LabSub::Access { plan, landlock }) => lab::guest::cell::access(&plan, landlock),
        Some(LabSub::PerOp { plan }) => lab::guest::per_op::main(&plan),
        Some(LabSub::WebServer { nginx }) => lab::guest::webserver::main(&nginx),
    }
}

/// The run's tables, then its exit.
fn finish(mut outcome: RunOutcome) -> Result<i32> {
    if outcome.has_tables() {
        let runs = input::load(std::slice::from_ref(&outcome.results), true)?;
        stdout(&table::text(&run_tables(&outcome, &runs)))?;
        if let Err(e) = write_tables(&outcome, &runs) {
            outcome.write_failed(e);
        }
    }
    outcome.finish()
}

/// The tables for this run's kernels and configurations, with the
/// baseline's cells from the directory for the percentages.
fn run_tables(outcome: &RunOutcome, runs: &[input::Run]) -> Vec<table::Table> {
    let mut shown = outcome.configs.clone();
    if !shown.iter().any(|c| c == BASELINE) {
        shown.insert(0, BASELINE.to_string());
    }
    let series = |r: &input::Run| r.kernel.series().to_string();
    let mine: Vec<input::Run> = runs
        .iter()
        .filter(|r| outcome.kernels.contains(&series(r)) && shown.contains(&r.config))
        .cloned()
        .collect();
    report::tables(&mine, &shown, &[])
}

/// All the directory's tables (every cell in it), as Markdown and JSON.
fn write_tables(outcome: &RunOutcome, runs: &[input::Run]) -> Result<()> {
    let dir = &outcome.results;
    let all = report::tables(runs, &outcome.configs, &[]);
    results::write_atomic(&dir.join("tables.md"), &table::markdown(&all))?;
    let inputs = [dir.display().to_string()];
    let warnings = input::warnings(runs);
    results::write_atomic(
        &dir.join("tables.json"),
        &report::json(&all, runs, &inputs, &warnings)?,
    )
}

fn submit(args: &SubmitArgs) -> Result<i32> {
    let engine = batch::slurm::Slurm {
        partition: args.partition.clone(),
        time: args.time.clone(),
        max_parallel: args.max_parallel,
        sbatch_args: args.sbatch_args.clone(),
    };
    let opts = batch::submit::SubmitOptions {
        resume: args.resume.clone(),
        wait: !args.no_wait,
        poll: std::time::Duration::from_secs(2),
    };
    let Some(settled) = batch::submit::submit(&args.run.request()?, &engine, "slurm", &opts)?
    else {
        return Ok(EXIT_OK);
    };
    let code = finish(settled.outcome)?;
    if settled.without_result > 0 {
        return Err(with_code(
            EXIT_FAILURE,
            format!(
                "{} cell(s) ended without a result (above): `lsmpmon lab submit --slurm --resume {}` runs them again",
                settled.without_result,
                settled.plan_path.display()
            ),
        ));
    }
    Ok(code)
}

fn status(args: &StatusArgs) -> Result<i32> {
    let (lines, all_done) = batch::submit::status(&args.plan)?;
    stdout(&lines.iter().map(|l| format!("{l}\n")).collect::<String>())?;
    Ok(if all_done { EXIT_OK } else { EXIT_FAILURE })
}

fn merge(args: &MergeArgs) -> Result<i32> {
    let m = batch::merge::merge(&args.out, &args.dirs, args.force)?;
    for f in &m.forced {
        base::say!("lsmpmon: merged with --force: {f}");
    }
    for d in &m.disagreements {
        base::say!("lsmpmon: disagreement: {d}");
    }
    base::say!(
        "lsmpmon: {} cell(s) from {} directories in {} ({} superseded by another run of their cell)",
        m.cells,
        m.inputs.len(),
        args.out.display(),
        m.superseded.len()
    );
    if !m.disagreements.is_empty() {
        return Err(with_code(
            EXIT_FAILURE,
            format!(
                "{} cell(s) disagree between runs (above; the newest is kept)",
                m.disagreements.len()
            ),
        ));
    }
    if let Some(first) = m.skipped.first() {
        return Err(with_code(
            EXIT_FAILURE,
            format!(
                "{} file(s) under cells/ are not cells and were left out, e.g. {first}",
                m.skipped.len()
            ),
        ));
    }
    Ok(EXIT_OK)
}

/// The tables' order first (the baseline, label-, path-based and stacked
/// modules, integrity, BPF), then any other configuration found, by name.
fn configs(args: &ConfigsArgs) -> Result<i32> {
    let found = lab::spec::available(&lab::spec::search_path_checked(&args.config_dirs)?);
    if found.is_empty() {
        return Err(usage(
            "no configurations found: give a --config-dir, or set LSMPMON_CONFIGS",
        ));
    }
    let order = split_list(lab::TABLE_ORDER);
    let mut names: Vec<&String> = order.iter().filter(|n| found.contains(n)).collect();
    names.extend(found.iter().filter(|n| !order.contains(n)));
    let sep = if args.comma { "," } else { "\n" };
    let text: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
    stdout(&(text.join(sep) + "\n"))?;
    Ok(EXIT_OK)
}

/// The plan, then its cells' commands on stdout, one a line.
fn write_plan(args: &PlanArgs) -> Result<i32> {
    let plan = batch::plan_file::of_plan(&lab::resolve(&args.run.request()?)?, &args.output)?;
    plan.write(&args.output)?;
    base::say!(
        "lsmpmon: plan {} ({} cells) in {}",
        plan.short_id(),
        plan.cells.len(),
        args.output.display()
    );
    let lines: String = plan
        .cells
        .iter()
        .map(|c| shell_words(&c.command) + "\n")
        .collect();
    stdout(&lines)?;
    Ok(EXIT_OK)
}

/// A command as a shell line: each word single-quoted where it needs it.
fn shell_words(words: &[String]) -> String {
    let plain = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "/._-=+,:@".contains(c))
    };
    words
        .iter()
        .map(|w| {
            if plain(w) {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn show_tables(args: &TablesArgs) -> Result<i32> {
    if !args.dir.join("cells").is_dir() {
        return Err(usage(format!(
            "{} is not a lab results directory (no cells/)",
            args.dir.display()
        )));
    }
    let runs = input::load(std::slice::from_ref(&args.dir), true)?;
    let t = report::tables(&runs, &split_list(lab::TABLE_ORDER), &[]);
    let forced: Vec<String> = batch::merge::Merged::read(&args.dir)?
        .map(|m| m.forced)
        .unwrap_or_default()
        .into_iter()
        .map(|f| format!("merged with --force: {f}"))
        .collect();
    let flags: String = forced.iter().map(|f| format!("\n{f}\n")).collect();
    stdout(&match args.format.as_str() {
        "markdown" => table::markdown(&t) + &flags,
        "json" => report::json(&t, &runs, &[args.dir.display().to_string()], &forced)?,
        _ => table::text(&t) + &flags,
    })?;
    Ok(EXIT_OK)
}
