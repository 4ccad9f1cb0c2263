//! `lab submit --slurm` against a real one-node Slurm cluster (Debian's
//! slurm-wlm, started in a temporary directory): a matrix submitted as a
//! job array gives the tables `lab run` gives; a cancelled task is named
//! by its cell, and `--resume` runs that cell alone. Also `lab merge`
//! through the command line (host only).
mod common;
#[path = "common/slurm.rs"]
mod slurm;

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
    time::{Duration, Instant},
};

use common::{fresh_dir, json, one_error_line, LSMPMON};
use serde_json::Value;
use slurm::Cluster;

const MATRIX: [&str; 8] = [
    "--kernels",
    "6.1",
    "--configs",
    "none,tomoyo",
    "--ops",
    "null,stat",
    "--samples",
    "3",
];

fn lab(cluster: &Cluster, args: &[&str]) -> Output {
    common::lab_logged(args, Some(("SLURM_CONF", cluster.conf.as_os_str())))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The job id of the `lsmpmon: job N: cells [...]` line for `cells`.
fn job_of(out: &Output, cells: &str) -> String {
    let err = text(&out.stderr);
    err.lines()
        .find_map(|l| l.strip_prefix("lsmpmon: job ")?.split_once(": cells "))
        .filter(|(_, rest)| rest.starts_with(cells))
        .map(|(id, _)| id.to_string())
        .unwrap_or_else(|| panic!("no job of cells {cells} in: {err}"))
}

fn the_plan(results: &Path) -> PathBuf {
    let batch = results.join("batch");
    let dirs: Vec<PathBuf> = std::fs::read_dir(&batch)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(dirs.len(), 1, "one plan in {}", batch.display());
    dirs[0].join("plan.json")
}

/// `lab status` until no task is queued or running: its last output.
fn settled_status(cluster: &Cluster, plan: &Path) -> Output {
    let start = Instant::now();
    loop {
        let out = lab(cluster, &["status", plan.to_str().unwrap()]);
        let t = text(&out.stdout);
        if t.contains(" 0 pending, 0 running") {
            return out;
        }
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "not settled: {t}"
        );
        std::thread::sleep(Duration::from_secs(2));
    }
}

fn cell_files(results: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(results.join("cells"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

fn tables(cluster: &Cluster, results: &Path) -> Value {
    let out = lab(
        cluster,
        &["tables", results.to_str().unwrap(), "--format", "json"],
    );
    assert!(out.status.success());
    json(&text(&out.stdout))
}

/// Same tables, rows and columns; the Table 3 form's times within 0.5 %
/// (virtual time), the other forms' labels alike.
fn assert_same_tables(a: &Value, b: &Value) {
    let (ta, tb) = (
        a["tables"].as_array().unwrap(),
        b["tables"].as_array().unwrap(),
    );
    assert_eq!(ta.len(), tb.len());
    for (x, y) in ta.iter().zip(tb) {
        assert_eq!((&x["form"], &x["header"]), (&y["form"], &y["header"]));
        let (rx, ry) = (x["rows"].as_array().unwrap(), y["rows"].as_array().unwrap());
        assert_eq!(rx.len(), ry.len());
        for (r, s) in rx.iter().zip(ry) {
            assert_eq!(r["label"], s["label"]);
            if x["form"] != "table3" {
                continue;
            }
            for (c, d) in r["cells"]
                .as_array()
                .unwrap()
                .iter()
                .zip(s["cells"].as_array().unwrap())
            {
                assert_eq!(c["kind"], d["kind"], "{}", r["label"]);
                if let (Some(v), Some(w)) = (c["value"].as_f64(), d["value"].as_f64()) {
                    assert!(
                        (v - w).abs() <= 0.005 * v.abs().max(w.abs()),
                        "{}: {v} vs {w}",
                        r["label"]
                    );
                }
            }
        }
    }
}

/// No sbatch, an unknown partition, an unreachable controller: one line
/// each, exit 2, and a plan that was not submitted can be submitted later.
fn slurm_errors_are_one_line(cluster: &Cluster, dir: &Path) {
    let results = dir.join("refused");
    let mut submit = vec!["submit", "--slurm", "--results", results.to_str().unwrap()];
    submit.extend(MATRIX);
    let no_sbatch = Command::new(LSMPMON)
        .env("PATH", "/nonexistent")
        .arg("lab")
        .args(&submit)
        .output()
        .unwrap();
    assert_eq!(no_sbatch.status.code(), Some(2));
    assert!(one_error_line(&no_sbatch).contains("sbatch not found"));

    let mut unknown = submit.clone();
    unknown.extend(["--partition", "nosuch"]);
    let out = lab(cluster, &unknown);
    assert_eq!(out.status.code(), Some(2));
    assert!(one_error_line(&out).contains("no partition nosuch: `sinfo -s`"));

    let dead = dir.join("dead.conf");
    let conf = std::fs::read_to_string(&cluster.conf).unwrap();
    let port = conf
        .lines()
        .find_map(|l| l.strip_prefix("SlurmctldPort="))
        .unwrap();
    std::fs::write(
        &dead,
        conf.replace(&format!("SlurmctldPort={port}"), "SlurmctldPort=9"),
    )
    .unwrap();
    let out = Command::new(LSMPMON)
        .env("SLURM_CONF", &dead)
        .arg("lab")
        .args(&submit)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(one_error_line(&out).contains("controller cannot be reached"));
}

/// With the controller unreachable, `lab status` still reads the cells on
/// disk and says the queue is unknown; a SLURM_CONF naming nothing is said
/// in one line, not as a rejected job array (issue 34 item 6).
fn status_without_slurm(plan: &Path, dead_conf: &Path) {
    let status = |conf: &Path| {
        Command::new(LSMPMON)
            .env("SLURM_CONF", conf)
            .args(["lab", "status"])
            .arg(plan)
            .output()
            .unwrap()
    };
    let out = status(dead_conf);
    let t = text(&out.stdout);
    assert!(t.contains("2 passed, 0 failed"), "{t}");
    assert!(
        t.contains("the queue could not be read") && !t.contains("rejected"),
        "{t}"
    );
    let out = status(Path::new("/nonexistent"));
    let t = text(&out.stdout);
    assert!(t.contains("2 passed, 0 failed"), "{t}");
    assert!(t.contains("SLURM_CONF=/nonexistent cannot be read"), "{t}");
}

#[test]
fn a_matrix_through_slurm_is_lab_runs_and_a_cancelled_cell_resumes_alone() {
    let cluster = Cluster::start();
    let dir = fresh_dir("slurm", "matrix");
    slurm_errors_are_one_line(&cluster, &dir);
    let (by_run, by_slurm) = (dir.join("run"), dir.join("slurm"));

    let mut run = vec!["run", "--jobs", "2", "--results", by_run.to_str().unwrap()];
    run.extend(MATRIX);
    assert!(lab(&cluster, &run).status.success());

    // One task at a time: the second is still pending when it is cancelled.
    let mut submit = vec!["submit", "--slurm", "--max-parallel", "1", "--no-wait"];
    submit.extend(["--results", by_slurm.to_str().unwrap()]);
    submit.extend(MATRIX);
    let out = lab(&cluster, &submit);
    assert!(out.status.success());
    let job = job_of(&out, "[0, 1]");
    let cancel = cluster.command("scancel", &[&format!("{job}_1")]);
    assert!(cancel.status.success(), "{}", text(&cancel.stderr));

    let plan = the_plan(&by_slurm);
    let out = settled_status(&cluster, &plan);
    let t = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("1 passed, 1 failed"), "{t}");
    let line = t
        .lines()
        .find(|l| l.starts_with("cell 1, "))
        .unwrap_or_else(|| panic!("{t}"));
    assert!(
        line.contains("6.1 tomoyo (1 CPU, 1024 MiB, draw 0)"),
        "{line}"
    );
    assert!(line.contains(&format!("logs/{job}_1.out")), "{line}");
    let before = cell_files(&by_slurm);
    assert_eq!(before.len(), 1, "{before:?}");

    let out = lab(
        &cluster,
        &["submit", "--slurm", "--resume", plan.to_str().unwrap()],
    );
    assert!(out.status.success());
    job_of(&out, "[1]");
    let after = cell_files(&by_slurm);
    assert_eq!(after.len(), 2, "{after:?}");
    assert!(
        before.iter().all(|b| after.contains(b)),
        "the passed cell ran again"
    );
    let out = lab(&cluster, &["status", plan.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("2 passed, 0 failed"));
    status_without_slurm(&plan, &dir.join("dead.conf"));

    assert_same_tables(&tables(&cluster, &by_run), &tables(&cluster, &by_slurm));
}

/// BENCHMARKS.md: the engine's own cost per cell (plan and submission,
/// Slurm's scheduling, the watch, merge) against `lab run` of the same
/// cells on the same two cores. A benchmark, not a test:
/// `cargo test --release --test slurm -- --ignored --nocapture engine_overhead`.
#[test]
#[ignore]
fn engine_overhead_per_cell() {
    let cluster = Cluster::start();
    let dir = fresh_dir("slurm", "bench");
    let (by_run, by_slurm, merged) = (dir.join("run"), dir.join("slurm"), dir.join("merged"));
    let matrix = [
        "--kernels",
        "6.1",
        "--configs",
        "none,tomoyo,apparmor,landlock",
        "--ops",
        "null,stat",
        "--samples",
        "3",
    ];
    let timed = |args: &[&str]| {
        let start = Instant::now();
        let out = lab(&cluster, args);
        assert!(out.status.success());
        (start.elapsed().as_secs_f64(), out)
    };
    // One cell at a time on each side: a side's own cost is then its wall
    // time minus the sum of its cells' own (host load slows the cells, not
    // that difference), and every task's scheduling is on the path.
    let mut run = vec!["run", "--jobs", "1", "--results", by_run.to_str().unwrap()];
    run.extend(matrix);
    let (run_s, _) = timed(&run);

    let mut submit = vec!["submit", "--slurm", "--max-parallel", "1", "--no-wait"];
    submit.extend(["--results", by_slurm.to_str().unwrap()]);
    submit.extend(matrix);
    let start = Instant::now();
    let (submit_s, _) = timed(&submit);
    let plan = the_plan(&by_slurm);
    loop {
        let t = text(&lab(&cluster, &["status", plan.to_str().unwrap()]).stdout);
        if t.contains(" 0 pending, 0 running") {
            assert!(t.contains("4 passed"), "{t}");
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let settled_s = start.elapsed().as_secs_f64();
    let (merge_s, _) = timed(&[
        "merge",
        merged.to_str().unwrap(),
        by_slurm.to_str().unwrap(),
    ]);

    let run_cells = walls(&by_run);
    let slurm_cells = walls(&by_slurm);
    let n = run_cells.len() as f64;
    let run_own_s = run_s - run_cells.iter().sum::<f64>();
    let slurm_own_s = settled_s + merge_s - slurm_cells.iter().sum::<f64>();
    let cell_s = slurm_cells.iter().sum::<f64>() / n;
    let per_cell_s = (slurm_own_s - run_own_s) / n;
    println!(
        "cells {n}; lab run {run_s:.1} s (own cost {run_own_s:.1} s); submit {submit_s:.2} s, \
         all settled {settled_s:.1} s, merge {merge_s:.2} s (own cost {slurm_own_s:.1} s); \
         a cell's wall time {cell_s:.1} s; the engine's cost per cell beyond lab run's \
         {per_cell_s:.2} s = {:.1} % of a cell",
        100.0 * per_cell_s / cell_s
    );
}

/// Every cell's wall time.
fn walls(results: &Path) -> Vec<f64> {
    common::lab_cells(results)
        .iter()
        .map(|c| c["wall_s"].as_f64().unwrap())
        .collect()
}

/// Host only (no cluster, no guest): cells of another lsmpmon version are
/// refused by `lab merge` (exit 2, one line), merged with `--force`, and
/// then flagged under `lab tables`, as text and in the JSON's warnings.
#[test]
fn a_forced_merge_is_flagged_under_the_tables() {
    const CELLS: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/report/lab/cells"
    );
    let dir = fresh_dir("slurm", "forced-merge");
    let (a, b, out) = (dir.join("a"), dir.join("b"), dir.join("out"));
    for d in [&a, &b] {
        std::fs::create_dir_all(d.join("cells")).unwrap();
    }
    for name in ["none", "tomoyo"] {
        let f = std::fs::read_dir(CELLS)
            .unwrap()
            .flatten()
            .find(|e| {
                e.file_name()
                    .to_str()
                    .unwrap()
                    .contains(&format!("__{name}__"))
            })
            .unwrap();
        let mut cell = json(&std::fs::read_to_string(f.path()).unwrap());
        std::fs::write(a.join("cells").join(f.file_name()), cell.to_string()).unwrap();
        if name == "tomoyo" {
            cell["id"] = "6.1-cloud__tomoyo__later".into();
            cell["log_dir"] = "logs/6.1-cloud__tomoyo__later".into();
            cell["lsmpmon_version"] = "0.0.1-other".into();
            std::fs::write(
                b.join("cells/6.1-cloud__tomoyo__later.json"),
                cell.to_string(),
            )
            .unwrap();
        }
    }
    let run = |args: &[&str]| {
        let out = Command::new(LSMPMON)
            .arg("lab")
            .args(args)
            .output()
            .unwrap();
        eprintln!("--- lab {args:?} ---\n{}", text(&out.stderr));
        out
    };
    let paths = [
        out.to_str().unwrap(),
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ];
    let refused = run(&[&["merge"][..], &paths].concat());
    assert_eq!(refused.status.code(), Some(2));
    assert!(one_error_line(&refused).contains("lsmpmon versions 0.0.1-other"));
    assert!(
        !out.join("cells").exists() || std::fs::read_dir(out.join("cells")).unwrap().count() == 0
    );

    let forced = run(&[&["merge", "--force"][..], &paths].concat());
    assert!(forced.status.success());
    assert_eq!(std::fs::read_dir(out.join("cells")).unwrap().count(), 2);
    let tables = run(&["tables", paths[0]]);
    assert!(tables.status.success());
    assert!(text(&tables.stdout).contains("\nmerged with --force: cells of lsmpmon versions"));
    let j = json(&text(
        &run(&["tables", paths[0], "--format", "json"]).stdout,
    ));
    assert!(
        j["warnings"].to_string().contains("merged with --force"),
        "{}",
        j["warnings"]
    );
    // And in every format of `report` (issue 34 item 8).
    for format in ["text", "markdown", "csv", "json", "html"] {
        let out = Command::new(LSMPMON)
            .args(["report", paths[0], "--format", format])
            .output()
            .unwrap();
        assert!(out.status.success(), "{format}: {}", text(&out.stderr));
        assert!(
            text(&out.stdout).contains("was merged with --force: cells of lsmpmon versions"),
            "{format}: {}",
            text(&out.stdout)
        );
    }
}

/// `lab plan` writes one command per cell; `lab cell` refuses a cell whose
/// configuration changed since the plan (exit 2, one line, nothing boots)
/// and an index the plan does not have.
#[test]
fn a_cell_runs_only_the_plan_it_was_planned_with() {
    let dir = fresh_dir("slurm", "plan-cell");
    let configs = dir.join("configs");
    let mine = configs.join("tomoyo");
    std::fs::create_dir_all(&mine).unwrap();
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/tomoyo");
    for f in std::fs::read_dir(&shipped).unwrap().flatten() {
        if f.file_type().unwrap().is_file() {
            std::fs::copy(f.path(), mine.join(f.file_name())).unwrap();
        }
    }
    let plan = dir.join("plan.json");
    let results = dir.join("results");
    let out = Command::new(LSMPMON)
        .args(["lab", "plan", "--config-dir", configs.to_str().unwrap()])
        .args(MATRIX)
        .args([
            "--results",
            results.to_str().unwrap(),
            "-o",
            plan.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let commands = text(&out.stdout);
    let lines: Vec<&str> = commands.lines().collect();
    assert_eq!(lines.len(), 2, "{commands}");
    assert!(lines[1].ends_with(&format!(
        "lab cell {} 1 --results {}",
        plan.display(),
        results.display()
    )));

    let spec = mine.join("spec.toml");
    let text_before = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(&spec, text_before + "\n# changed after the plan\n").unwrap();
    let cell = |index: &str| {
        Command::new(LSMPMON)
            .args(["lab", "cell", plan.to_str().unwrap(), index])
            .output()
            .unwrap()
    };
    let out = cell("1");
    assert_eq!(out.status.code(), Some(2));
    assert!(one_error_line(&out).contains("configuration tomoyo changed since the plan"));
    let out = cell("2");
    assert_eq!(out.status.code(), Some(2));
    assert!(one_error_line(&out).contains("no cell 2 (the plan has 2: 0 to 1)"));
    assert!(!results.join("cells").exists());
}
