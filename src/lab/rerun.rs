//! `lab rerun CELL`: the same cell again, from its own provenance: kernel,
//! configuration, options and guest settings as recorded. Everything
//! recorded is checked before the kernel is fetched.
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Parser;

use super::{
    args::{RerunArgs, RunArgs},
    jobs::Recorded,
    results::{CellResult, RunOptions, CELL_SCHEMA},
    run::run_matrix,
    spec, RunOutcome,
};
use crate::{
    base::error::usage,
    vm::{kernel, SMP_ICOUNT},
};

pub fn rerun(args: &RerunArgs) -> Result<RunOutcome> {
    let old = read_cell(&args.result)?;
    let results = match &args.results {
        Some(r) => r.clone(),
        None => results_root_of(&args.result)?,
    };
    let dirs = spec::search_path(&args.config_dirs);
    let config = spec::load(&old.config.name, &dirs)?;
    if config.hash != old.config.hash && !args.force {
        return Err(usage(format!(
            "configuration {} changed since the cell ran (hash {}… now {}…): use --force to run the current one",
            old.config.name,
            old.config.hash.chars().take(12).collect::<String>(),
            &config.hash[..12]
        )));
    }
    let invalid = |why: String| {
        usage(format!(
            "{}: recorded options are not valid: {why}",
            args.result.display()
        ))
    };
    let mut run_args = recorded_args(&old).map_err(invalid)?;
    let recorded = recorded_machine(&old.options).map_err(invalid)?;
    let k = kernel::ensure(
        &args.cache.path(),
        &old.kernel.series,
        &old.kernel.flavour,
        args.mirror.as_deref(),
    )?;
    if k.deb_sha256 != old.kernel.deb_sha256 && !args.force {
        return Err(usage(format!(
            "kernel package changed since the cell ran ({} {} then, {} {} now): use --force",
            old.kernel.package, old.kernel.package_version, k.package, k.package_version
        )));
    }
    run_args.config_dirs = args.config_dirs.clone();
    run_args.results = results;
    run_args.cache = args.cache.clone();
    run_args.mirror = args.mirror.clone();
    run_matrix(&run_args, Some(&recorded))
}

fn read_cell(path: &Path) -> Result<CellResult> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage(format!("cannot read {}: {e}", path.display())))?;
    let old: CellResult = serde_json::from_str(&text)
        .map_err(|e| usage(format!("{} is not a lab cell result: {e}", path.display())))?;
    if old.schema != CELL_SCHEMA {
        return Err(usage(format!(
            "{}: schema {} (this lsmpmon reads {CELL_SCHEMA})",
            path.display(),
            old.schema
        )));
    }
    Ok(old)
}

#[derive(clap::Parser)]
struct RerunOptions {
    #[command(flatten)]
    run: RunArgs,
}

/// The recorded options through the same parser as the command line: a
/// hand-edited result gets the same checks (ranges, names).
fn recorded_args(old: &CellResult) -> Result<RunArgs, String> {
    let o = &old.options;
    let mut argv: Vec<String> = [
        "rerun",
        "--kernels",
        &old.kernel.series,
        "--flavour",
        &old.kernel.flavour,
        "--configs",
        &old.config.name,
        "--ops",
        &o.ops,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for (flag, value) in [
        ("--samples", o.samples.to_string()),
        ("--sample-ms", o.sample_ms.to_string()),
        ("--timeout", o.timeout_s.to_string()),
        ("--memory-mb", o.memory_mb.to_string()),
        ("--bench-dir", o.bench_dir.clone()),
        ("--cpus", o.cpus.to_string()),
        ("--jobs", "1".to_string()),
    ] {
        argv.extend([flag.to_string(), value]);
    }
    if o.trace {
        argv.push("--trace".into());
    }
    if let Some(n) = o.iterations {
        argv.extend(["--iterations".into(), n.to_string()]);
    }
    RerunOptions::try_parse_from(&argv)
        .map(|o| o.run)
        .map_err(|e| e.to_string().lines().next().unwrap_or("").to_string())
}

/// The guest settings a cell recorded, if they are ones lsmpmon runs: TCG;
/// `-icount` off or `shift=N` with `sleep`/`align`; `-rtc` of `clock`,
/// `base`, `driftfix` or none. Nothing else reaches QEMU's command line
/// (a cell may come from another machine).
fn recorded_machine(o: &RunOptions) -> Result<Recorded, String> {
    if o.accel != "tcg" {
        return Err(format!("accel '{}': the lab runs tcg only", o.accel));
    }
    if o.icount != "off" && !suboptions_ok(&o.icount, ICOUNT, "shift") {
        return Err(format!(
            "icount '{}': give off, or shift=0..10|auto with sleep=on|off, align=on|off",
            o.icount
        ));
    }
    if o.cpus > 1 && o.icount != "off" {
        return Err(format!(
            "cpus {} with icount '{}': {SMP_ICOUNT}",
            o.cpus, o.icount
        ));
    }
    if !o.rtc.is_empty() && !suboptions_ok(&o.rtc, RTC, "clock") {
        return Err(format!(
            "rtc '{}': give clock=host|rt|vm with base=utc|localtime, driftfix=none|slew",
            o.rtc
        ));
    }
    Ok(Recorded {
        icount: o.icount.clone(),
        rtc: o.rtc.clone(),
        kaslr: o.kaslr,
    })
}

type Suboptions = &'static [(&'static str, &'static [&'static str])];

const ICOUNT: Suboptions = &[
    (
        "shift",
        &[
            "auto", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10",
        ],
    ),
    ("sleep", &["on", "off"]),
    ("align", &["on", "off"]),
];
const RTC: Suboptions = &[
    ("clock", &["host", "rt", "vm"]),
    ("base", &["utc", "localtime"]),
    ("driftfix", &["none", "slew"]),
];

/// `key=value,…` with known keys, known values, each key once, `required` present.
fn suboptions_ok(s: &str, known: Suboptions, required: &str) -> bool {
    let mut seen: Vec<&str> = Vec::new();
    for part in s.split(',') {
        let Some((key, value)) = part.split_once('=') else {
            return false;
        };
        let allowed = known.iter().find(|(k, _)| *k == key);
        if !allowed.is_some_and(|(_, values)| values.contains(&value)) || seen.contains(&key) {
            return false;
        }
        seen.push(key);
    }
    seen.contains(&required)
}

/// `DIR/cells/X.json` -> DIR.
fn results_root_of(cell: &Path) -> Result<PathBuf> {
    let parent = cell.parent().unwrap_or(Path::new("."));
    if parent.file_name().is_some_and(|n| n == "cells") {
        return Ok(parent.parent().unwrap_or(Path::new(".")).to_path_buf());
    }
    Err(usage(format!(
        "{} is not in a results directory's cells/: give --results DIR",
        cell.display()
    )))
}
