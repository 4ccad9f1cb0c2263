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
    vm::{kernel, RTC_FIXED_BASE},
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
    crate::bench::check_ops(&run_args.ops, run_args.iterations)
        .map_err(|e| invalid(format!("ops: {}", crate::base::error::one_line(&e))))?;
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
    crate::model::read::load_as("", path, CELL_SCHEMA, "lab cell")
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
    // A draw's base is a date and time of lsmpmon's; the rest are QEMU's words.
    let rtc = crate::model::draw::rtc_without_draw(&o.rtc);
    if !o.rtc.is_empty() && !suboptions_ok(&rtc, RTC, "clock") {
        return Err(format!(
            "rtc '{}': give clock=host|rt|vm with base=utc|localtime|{RTC_FIXED_BASE}, driftfix=none|slew",
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
    ("base", &["utc", "localtime", RTC_FIXED_BASE]),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::jobs;

    fn recorded_cell() -> CellResult {
        serde_json::from_str(include_str!(
            "../../tests/fixtures/report/lab/cells/6.1-cloud__none__1795500718528-17793-0-vm.json"
        ))
        .unwrap()
    }

    #[test]
    fn recorded_guest_settings_are_only_ones_lsmpmon_runs() {
        let base = recorded_cell().options;
        assert!(recorded_machine(&base).is_ok());
        let with = |f: &dyn Fn(&mut RunOptions)| {
            let mut o = base.clone();
            f(&mut o);
            recorded_machine(&o)
        };
        for ok in ["off", "shift=auto", "shift=10,align=on,sleep=on"] {
            assert!(with(&|o| o.icount = ok.into()).is_ok(), "{ok}");
        }
        assert!(with(&|o| o.rtc = String::new()).is_ok());
        assert!(with(&|o| o.rtc = "clock=host,base=utc,driftfix=slew".into()).is_ok());
        assert!(with(&|o| o.rtc = crate::vm::RTC_DEFAULT.into()).is_ok());
        for bad in [
            "shift=0,rr=record,rrfile=/etc/passwd",
            "shift=0 -monitor stdio",
            "sleep=off",
            "shift=0,shift=1",
            "shift=11",
            "",
        ] {
            let err = with(&|o| o.icount = bad.into()).unwrap_err();
            assert!(err.contains("icount"), "{bad}: {err}");
        }
        for bad in [
            "clock=vm,base=2006-06-17T16:01:21",
            "base=utc",
            "clock=vm;x",
        ] {
            assert!(with(&|o| o.rtc = bad.into()).is_err(), "{bad}");
        }
        assert!(with(&|o| o.accel = "kvm".into()).is_err());
        assert!(with(&|o| o.cpus = 2).is_ok());
        assert!(with(&|o| {
            o.cpus = 2;
            o.icount = "off".into()
        })
        .is_ok());
    }

    #[test]
    fn a_rerun_boots_and_records_the_guest_settings_of_its_cell() {
        let mut old = recorded_cell();
        old.options.icount = "shift=1,sleep=off".into();
        old.options.rtc = "clock=host".into();
        old.options.kaslr = true;
        let args = recorded_args(&old).unwrap();
        let recorded = recorded_machine(&old.options).unwrap();
        let m = jobs::machine(&args, old.options.cpus, Some(&recorded));
        assert_eq!(
            (m.icount.as_str(), m.rtc.as_str(), m.kaslr),
            ("shift=1,sleep=off", "clock=host", true)
        );
        let o = jobs::run_options(&args, &m);
        assert_eq!(
            (o.icount, o.rtc, o.kaslr),
            (old.options.icount, old.options.rtc, true)
        );
        // A run's guests: deterministic time, no KASLR, with 2 CPUs too.
        let m = jobs::machine(&args, 1, None);
        assert_eq!((m.icount.as_str(), m.kaslr), ("shift=0,sleep=off", false));
        let m = jobs::machine(&args, 2, None);
        assert_eq!(m.icount, "shift=0,sleep=off");
        assert!(m.hotplugs_cpus());
    }

    #[test]
    fn recorded_options_go_through_the_command_line_parser() {
        let mut old = recorded_cell();
        assert_eq!(recorded_args(&old).unwrap().samples, 3);
        old.options.samples = 0;
        let err = recorded_args(&old).unwrap_err();
        assert!(err.contains("--samples"), "{err}");
        let mut old = recorded_cell();
        old.options.bench_dir = "/a/../etc".into();
        assert!(recorded_args(&old).is_err());
    }

    #[test]
    fn a_cell_outside_cells_needs_results() {
        assert_eq!(
            results_root_of(Path::new("/r/cells/x.json")).unwrap(),
            Path::new("/r")
        );
        assert!(results_root_of(Path::new("/r/x.json")).is_err());
    }
}
