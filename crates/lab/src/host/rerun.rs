//! `lab rerun CELL`: the same cell again, from its own provenance: kernel,
//! configuration, options and guest settings as recorded. Everything
//! recorded is checked before the kernel is fetched.
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::{
    host::execute::execute,
    host::outcome::RunOutcome,
    plan::{Draws, Paths, Plan, PlannedCell, Recorded},
    results::{CellResult, RunOptions, CELL_SCHEMA},
    spec,
};
use base::error::usage;
use vm::{self, kernel, RTC_FIXED_BASE};

/// What `lab rerun` is asked: a cell, and where to find and put things.
#[derive(Debug, Clone)]
pub struct RerunRequest {
    pub result: PathBuf,
    /// Default: the results directory the cell is in.
    pub results: Option<PathBuf>,
    pub config_dirs: Vec<PathBuf>,
    /// Run even if the configuration or kernel package changed since.
    pub force: bool,
    pub cache_dir: PathBuf,
    pub mirror: Option<String>,
}

pub fn rerun(req: &RerunRequest) -> Result<RunOutcome> {
    let fetching = vm::interrupt::exit_now()?;
    let old = read_cell(&req.result)?;
    let plan = plan_of_cell(&old, req)?;
    execute(&plan, Some(1), fetching)
}

/// The plan of one cell from its own record: its configuration (unchanged
/// unless forced), options, guest settings and kernel package. Everything
/// recorded is checked before the kernel is fetched.
fn plan_of_cell(old: &CellResult, req: &RerunRequest) -> Result<Plan> {
    let results = match &req.results {
        Some(r) => r.clone(),
        None => results_root_of(&req.result)?,
    };
    let config = spec::load(
        &old.config.name,
        &spec::search_path_checked(&req.config_dirs)?,
    )?;
    if config.hash != old.config.hash && !req.force {
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
            req.result.display()
        ))
    };
    let recorded = recorded_machine(&old.options).map_err(invalid)?;
    recorded_options(&old.options).map_err(invalid)?;
    if !crate::plan::known_series(&old.kernel.series) {
        return Err(invalid(format!(
            "kernel series '{}' is not one lsmpmon fetches",
            old.kernel.series
        )));
    }
    bench::check_ops(&old.options.lab.ops, old.options.lab.iterations)
        .map_err(|e| invalid(format!("ops: {}", base::error::one_line(&e))))?;
    let k = kernel::ensure(
        &req.cache_dir,
        &old.kernel.series,
        &old.kernel.flavour,
        req.mirror.as_deref(),
    )?;
    if k.deb_sha256 != old.kernel.deb_sha256 && !req.force {
        return Err(usage(format!(
            "kernel package changed since the cell ran ({} {} then, {} {} now): use --force",
            old.kernel.package, old.kernel.package_version, k.package, k.package_version
        )));
    }
    let draw = old.options.draw();
    Ok(Plan {
        flavour: old.kernel.flavour.clone(),
        kernels: vec![k],
        configs: vec![config],
        access: spec::load_access_matrix()?,
        options: old.options.lab.clone(),
        draws: Draws {
            first: draw,
            ..Draws::ONE
        },
        paths: Paths {
            config_dirs: req.config_dirs.clone(),
            cache_dir: std::path::absolute(&req.cache_dir)?,
            mirror: req.mirror.clone(),
            results,
        },
        cells: vec![PlannedCell {
            kernel: 0,
            config: 0,
            cpus: old.options.cpus,
            draw,
        }],
        recorded: Some(recorded),
        tag: Default::default(),
    })
}

fn read_cell(path: &Path) -> Result<CellResult> {
    model::read::load_as("", path, CELL_SCHEMA, "lab cell")
}

/// The recorded options within the command line's limits: a hand-edited
/// result gets the same checks as `lab run`'s options.
fn recorded_options(o: &RunOptions) -> Result<(), String> {
    if !(1..=vm::MAX_CPUS).contains(&o.cpus) {
        return Err(format!("{} CPUs: 1 to {}", o.cpus, vm::MAX_CPUS));
    }
    o.lab.check()
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
    let rtc = model::draw::rtc_without_draw(&o.rtc);
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
    use crate::host::jobs;

    fn recorded_cell() -> CellResult {
        serde_json::from_str(include_str!(
            "../../../../tests/fixtures/report/lab/cells/6.1-cloud__none__1795500718528-17793-0-vm.json"
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
        assert!(with(&|o| o.rtc = vm::RTC_DEFAULT.into()).is_ok());
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
        let recorded = recorded_machine(&old.options).unwrap();
        let args = &old.options.lab;
        let m = jobs::machine(args, old.options.cpus, Some(&recorded));
        assert_eq!(
            (m.icount.as_str(), m.rtc.as_str(), m.kaslr),
            ("shift=1,sleep=off", "clock=host", true)
        );
        let o = jobs::run_options(args, &m, args.trace);
        assert_eq!(
            (o.icount, o.rtc, o.kaslr),
            (old.options.icount, old.options.rtc, true)
        );
        // A run's guests: deterministic time, no KASLR, with 2 CPUs too.
        let m = jobs::machine(args, 1, None);
        assert_eq!((m.icount.as_str(), m.kaslr), ("shift=0,sleep=off", false));
        let m = jobs::machine(args, 2, None);
        assert_eq!(m.icount, "shift=0,sleep=off");
        assert!(m.hotplugs_cpus());
    }

    #[test]
    fn recorded_options_are_held_to_the_command_lines_limits() {
        let old = recorded_cell();
        assert_eq!(old.options.lab.samples, 3);
        assert_eq!(recorded_options(&old.options), Ok(()));
        let refused = |f: &dyn Fn(&mut RunOptions), expect: &str| {
            let mut o = recorded_cell().options;
            f(&mut o);
            let err = recorded_options(&o).unwrap_err();
            assert!(err.contains(expect), "{expect}: {err}");
        };
        refused(&|o| o.lab.samples = 0, "0 samples");
        refused(
            &|o| o.lab.bench_dir = "/a/../etc".into(),
            "absolute directory",
        );
        refused(&|o| o.lab.memory_mb = 64, "memory 64 MiB");
        refused(&|o| o.cpus = 9, "9 CPUs: 1 to 8");
        refused(&|o| o.cpus = 0, "0 CPUs");
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
