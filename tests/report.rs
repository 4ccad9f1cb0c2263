//! `lsmpmon report` and `lsmpmon compare` on fixed results that lsmpmon made
//! (tests/fixtures/report: a 6.1 lab run of none, tomoyo and a configuration
//! whose proof failed; a host bench run; a guest trace). Golden outputs are
//! compared exactly (LSMPMON_BLESS=1 rewrites them); the HTML page is loaded
//! by a real browser (headless Chromium).
mod common;

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use common::LSMPMON;
use serde_json::Value;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/report")
        .join(rel)
}

fn tmp(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report");
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn lsmpmon(args: &[&str]) -> Output {
    Command::new(LSMPMON).args(args).output().unwrap()
}

fn stdout_ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn golden(name: &str, got: &str) {
    let path = fixture(name);
    if std::env::var_os("LSMPMON_BLESS").is_some() {
        std::fs::write(&path, got).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap();
    assert!(
        got == want,
        "{name} differs from the golden file (LSMPMON_BLESS=1 to accept):\n{got}"
    );
}

fn lab() -> String {
    fixture("lab").display().to_string()
}

#[test]
fn markdown_and_csv_match_the_golden_files() {
    let trace = fixture("trace-6.1.json").display().to_string();
    // The page names its inputs as given: relative, as from a checkout.
    let md = Command::new(LSMPMON)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["report", "tests/fixtures/report/lab"])
        .args([
            "tests/fixtures/report/trace-6.1.json",
            "--format",
            "markdown",
        ])
        .output()
        .unwrap();
    golden("expected.md", &stdout_ok(&md));
    let csv = stdout_ok(&lsmpmon(&["report", &lab(), &trace, "--format", "csv"]));
    golden("expected.csv", &csv);
}

#[test]
fn tables_carry_the_measured_figures_and_mark_what_is_not() {
    let text = stdout_ok(&lsmpmon(&["report", &lab(), "--format", "json"]));
    common::validate("report.schema.json", &text);
    let json: Value = serde_json::from_str(&text).unwrap();
    let t3 = form_table(&json, "table3");
    let col = |name: &str| {
        t3["header"]
            .as_array()
            .unwrap()
            .iter()
            .position(|h| h == name)
            .unwrap()
            - 1
    };
    let cell = |row: &str, c: &str| -> Value {
        t3["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["label"].as_str().unwrap().starts_with(row))
            .unwrap()["cells"][col(c)]
        .clone()
    };
    // The cell files' own medians (ns) are the table's µs figures.
    let cells = fixture("lab/cells");
    let median = |config: &str, op: &str| -> f64 {
        for e in std::fs::read_dir(&cells).unwrap() {
            let v: Value =
                serde_json::from_slice(&std::fs::read(e.unwrap().path()).unwrap()).unwrap();
            if v["config"]["name"] == config {
                let r = v["guest"]["bench"]["results"].as_array().unwrap();
                return r.iter().find(|o| o["op"] == op).unwrap()["median"]
                    .as_f64()
                    .unwrap();
            }
        }
        panic!("no {config} cell")
    };
    let (none, tomoyo) = (median("none", "stat"), median("tomoyo", "stat"));
    let got = cell("stat", "tomoyo");
    assert!((got["value"].as_f64().unwrap() - tomoyo / 1e3).abs() < 1e-9);
    // One draw a side: judged against 6.1's committed floor.
    let change = &got["change"];
    let pct = change["pct"].as_f64().unwrap();
    assert!(
        (pct - (tomoyo / none - 1.0) * 100.0).abs() < 1e-9 && pct > 20.0,
        "TOMOYO's stat over none: {pct} %"
    );
    assert_eq!(change["interval"], "reference_floor", "{change}");
    assert_eq!(change["established"], true, "{change}");
    assert!(
        cell("stat", "none")["change"].is_null(),
        "no % of the baseline over itself"
    );
    // The configuration whose proof failed: marked in every row, never a figure.
    for row in t3["rows"].as_array().unwrap() {
        let c = &row["cells"][col("permissive")];
        assert_eq!(c["kind"], "missing", "{row}");
        assert_eq!(c["why"], "proof failed");
    }
}

#[test]
fn the_yield_study_sets_processes_against_threads() {
    let path = fixture("bench-yield-host.json");
    let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let m = |op: &str| {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["op"] == op)
            .unwrap()["median"]
            .as_f64()
            .unwrap()
    };
    let text = stdout_ok(&lsmpmon(&[
        "report",
        path.to_str().unwrap(),
        "--format",
        "json",
    ]));
    let json: Value = serde_json::from_str(&text).unwrap();
    let t = form_table(&json, "yield");
    let cell = |label: &str| {
        t["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["label"] == label)
            .unwrap_or_else(|| panic!("no row {label}"))["cells"][0]["value"]
            .as_f64()
    };
    assert_eq!(cell("processes (ns per hand-over)"), Some(m("yield_proc")));
    assert_eq!(cell("threads (ns per hand-over)"), Some(m("yield_thread")));
    // The paper's form: the fixture ran 100 000 rounds per sample.
    assert_eq!(cell("rounds"), Some(100_000.0));
    let total = cell("processes, N rounds (µs)").unwrap();
    assert!((total * 1e3 / 100_000.0 - m("yield_rounds_proc")).abs() < 1e-6);
    assert_eq!(cell("the paper: Linux, N rounds (µs)"), Some(224_670.5));
    assert_eq!(cell("the paper: one address space (µs)"), Some(158_294.4));
    // The paired ratio lies within the per-sample ratios.
    let samples = |op: &str| -> Vec<f64> {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["op"] == op)
            .unwrap()["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let ratios: Vec<f64> = samples("yield_rounds_proc")
        .iter()
        .zip(samples("yield_rounds_thread"))
        .map(|(p, t)| p / t)
        .collect();
    let paired = cell("processes ÷ threads (paired)").unwrap();
    assert!(ratios.iter().any(|r| *r <= paired) && ratios.iter().any(|r| *r >= paired));
    assert!(t["title"]
        .as_str()
        .unwrap()
        .contains("pseudo multi-process, Table 3"));
    // Without both ops there is no such table.
    let lab = stdout_ok(&lsmpmon(&["report", &lab(), "--format", "json"]));
    assert!(!lab.contains("\"form\": \"yield\""));
}

/// The study end to end on this machine: bench with fixed rounds, then the
/// report's paper form; a run whose rounds were calibrated has no total.
#[test]
fn the_yield_study_runs_end_to_end() {
    let yield_table = |args: &[&str], name: &str| -> Value {
        let path = tmp(name);
        let mut bench = vec!["bench", "--ops", "yield_rounds_proc,yield_rounds_thread"];
        bench.extend_from_slice(args);
        bench.extend(["--samples", "3", "--json"]);
        std::fs::write(&path, stdout_ok(&lsmpmon(&bench))).unwrap();
        let out = stdout_ok(&lsmpmon(&[
            "report",
            path.to_str().unwrap(),
            "--format",
            "json",
        ]));
        let json: Value = serde_json::from_str(&out).unwrap();
        form_table(&json, "yield").clone()
    };
    let row = |t: &Value, label: &str| -> Value { cells_of(t, label)[0].clone() };
    let fixed = yield_table(&["--iterations", "2000"], "yield-2000.json");
    assert_eq!(row(&fixed, "rounds")["value"], 2000.0);
    let total = row(&fixed, "processes, N rounds (µs)")["value"]
        .as_f64()
        .unwrap();
    // A round is two sched_yield calls and a switch: far over 0.1 µs, far under 1 ms.
    assert!(total > 2000.0 * 0.1 && total < 2000.0 * 1000.0, "{total}");
    // 2 000 rounds is not one of the paper's sizes: no figure of its own beside.
    assert_eq!(
        row(&fixed, "the paper: Linux, N rounds (µs)")["kind"],
        "missing"
    );
    let calibrated = yield_table(&["--sample-ms", "2"], "yield-calibrated.json");
    assert_eq!(row(&calibrated, "rounds")["kind"], "missing");
    assert_eq!(
        row(&calibrated, "processes, N rounds (µs)")["kind"],
        "missing"
    );
    assert!(row(&calibrated, "processes ÷ threads (paired)")["value"]
        .as_f64()
        .is_some());
}

#[test]
fn output_goes_only_where_it_can_go_whole() {
    // A link, a device or a directory at -o is never replaced.
    let link = tmp("link.md");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink("/etc/hostname", &link).unwrap();
    for target in [
        link.to_str().unwrap(),
        "/dev/null",
        env!("CARGO_TARGET_TMPDIR"),
    ] {
        let out = lsmpmon(&["report", &lab(), "-o", target]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{target}: {err}");
        assert!(err.contains("not a regular file"), "{err}");
    }
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    // A full disk: one line, exit 1, no panic.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Command::new(LSMPMON)
        .args(["report", &lab()])
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(
        err.lines().filter(|l| l.contains("error")).count(),
        1,
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_baseline_that_did_not_pass_gives_no_difference() {
    let dir = lab_with_none("none-failed", |v| v["status"] = "proof_failed".into());
    let text = stdout_ok(&lsmpmon(&["report", &dir, "--format", "json"]));
    let json: Value = serde_json::from_str(&text).unwrap();
    for t in json["tables"].as_array().unwrap() {
        if t["form"] != "table3" && t["form"] != "footprint" {
            continue;
        }
        for row in t["rows"].as_array().unwrap() {
            for c in row["cells"].as_array().unwrap() {
                assert!(c["pct"].is_null(), "a % over a failed baseline: {row}");
            }
            if row["label"] == "A − B (KiB)" {
                assert_eq!(row["cells"][1]["kind"], "missing", "{row}");
            }
        }
    }
}

#[test]
fn a_failed_proof_is_named_on_stderr() {
    let out = lsmpmon(&["report", &lab()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success());
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("permissive") && lines[0].contains("proof failed"),
        "{err}"
    );
}

/// Rust's names for the enums users read (issue 34 item 17:
/// "NotApplicable (kernel …)", "(tomoyo on 6.1, Passed)").
const DEBUG_NAMES: [&str; 6] = [
    "NotApplicable",
    "ProofFailed",
    "Passed",
    "Interrupted",
    "Baseline",
    "Measure",
];

/// Every format of the report and its warnings, of the lab fixture (a
/// failed proof) and of the committed atlas (not-applicable cells), say
/// what happened in plain words.
#[test]
fn reports_name_statuses_in_plain_words() {
    for dir in [lab(), "results/atlas".to_string()] {
        for format in ["text", "markdown", "csv", "json", "html"] {
            let out = Command::new(LSMPMON)
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .args(["report", &dir, "--format", format])
                .output()
                .unwrap();
            let all = stdout_ok(&out) + &String::from_utf8_lossy(&out.stderr);
            for name in DEBUG_NAMES {
                let word = all.match_indices(name).find(|(at, _)| {
                    let next = all[at + name.len()..].chars().next();
                    !next.is_some_and(|c| c.is_alphanumeric())
                });
                assert!(word.is_none(), "{dir} --format {format} says {name}");
            }
        }
    }
    let atlas = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("results/atlas/README.md"),
    )
    .unwrap();
    // One sentence a reason, naming every configuration it stopped.
    assert!(
        atlas.contains("ima-sha1 on 5.10, ima on 5.10: not applicable (kernel 5.10 is built without CONFIG_IMA)"),
        "{atlas}"
    );
    assert!(!atlas.contains("cells/5.10-cloud__ima"), "{atlas}");
}

/// A cell of the lab fixture under another configuration name, in a
/// results directory of its own.
fn renamed(dir: &str, name: &str) -> PathBuf {
    let root = tmp(dir);
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("cells")).unwrap();
    for f in [
        "6.1-cloud__none__1795500718528-17793-0-vm.json",
        "6.1-cloud__tomoyo__1795500718528-17793-1-vm.json",
    ] {
        let mut cell: Value =
            serde_json::from_str(&std::fs::read_to_string(fixture("lab/cells").join(f)).unwrap())
                .unwrap();
        if f.contains("tomoyo") {
            cell["config"]["name"] = name.into();
        }
        std::fs::write(root.join("cells").join(f), cell.to_string()).unwrap();
    }
    root
}

/// Issue 34 item 18: a configuration name is Markdown in the prose line
/// that lists the configurations (a link, emphasis) unless escaped, and a
/// CSV cell `=HYPERLINK(…)` is a formula for the spreadsheet that opens it.
#[test]
fn names_from_results_cannot_inject_markdown_or_spreadsheet_formulas() {
    let root = renamed("md-injection", "[x](http://e.example)*y*_z_");
    let md = stdout_ok(&lsmpmon(&[
        "report",
        root.to_str().unwrap(),
        "--format",
        "markdown",
    ]));
    let prose = md.lines().nth(2).unwrap();
    assert!(
        prose.contains("configurations none, \\[x\\](http://e.example)\\*y\\*\\_z\\_."),
        "{prose}"
    );
    let root = renamed("csv-injection", "=HYPERLINK(\"http://e.example\",\"x\")");
    let csv = stdout_ok(&lsmpmon(&[
        "report",
        root.to_str().unwrap(),
        "--format",
        "csv",
    ]));
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let mut columns = 0;
    for record in reader.records() {
        let record = record.unwrap();
        for cell in record.iter() {
            let formula = cell.starts_with(['=', '+', '@', '\t', '\r'])
                || (cell.starts_with('-') && cell.parse::<f64>().is_err());
            assert!(!formula, "a formula cell: {cell:?} in {record:?}");
        }
        columns += usize::from(record.iter().any(|c| c.starts_with("'=HYPERLINK(")));
    }
    assert!(columns > 0, "{csv}");
}

#[test]
fn malformed_inputs_are_one_line_and_render_nothing() {
    let bad = tmp("bad.json");
    let cases: [(&str, &str); 4] = [
        (
            "{\"schema\": \"lsmpmon.bench/1\", \"results\": 3}",
            "malformed",
        ),
        ("not json", "not a JSON result"),
        ("{\"hooks\": []}", "no \"schema\""),
        (
            "{\"schema\": \"lsmpmon.lab-index/1\"}",
            "is not one report reads",
        ),
    ];
    // Figures a table would divide by or draw: refused, not rendered.
    let host: Value =
        serde_json::from_slice(&std::fs::read(fixture("bench-host.json")).unwrap()).unwrap();
    let with_median = |m: Value| {
        let mut v = host.clone();
        v["results"][0]["median"] = m;
        v.to_string()
    };
    let figures = [
        (with_median(0.0.into()), "not a positive number"),
        (with_median((-5.0).into()), "not a positive number"),
        // Not a number at all: the typed result refuses it where it stands.
        (
            with_median(Value::Null),
            "results[0]: invalid type: null, expected f64",
        ),
        (
            with_median("fast".into()),
            "results[0]: invalid type: string",
        ),
    ];
    let cases = cases
        .iter()
        .map(|(t, w)| (t.to_string(), *w))
        .chain(figures)
        .collect::<Vec<_>>();
    for (text, want) in &cases {
        std::fs::write(&bad, text).unwrap();
        let path = bad.display().to_string();
        let out = lsmpmon(&["report", &lab(), &path]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        assert!(out.stdout.is_empty(), "nothing rendered for {text}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(*want) && err.contains("bad.json"), "{err}");
        // --skip-invalid names it and reports the rest.
        let out = lsmpmon(&["report", &lab(), &path, "--skip-invalid"]);
        assert!(out.status.success());
        assert!(String::from_utf8_lossy(&out.stdout).contains("Table 3 form"));
    }
    let out = lsmpmon(&["report", "/nonexistent/results"]);
    assert_eq!(out.status.code(), Some(2));
}

/// A bench result whose samples are drawn from `draw` (ns per op).
fn bench_with(samples: &[f64], name: &str) -> String {
    let p = tmp(name);
    bench_at(samples, &p);
    p.display().to_string()
}

fn bench_at(samples: &[f64], p: &Path) {
    let mut v: Value =
        serde_json::from_slice(&std::fs::read(fixture("bench-host.json")).unwrap()).unwrap();
    for r in v["results"].as_array_mut().unwrap() {
        let mut s = samples.to_vec();
        r["samples"] = s.clone().into();
        s.sort_by(f64::total_cmp);
        r["median"] = s[s.len() / 2].into();
        r["min"] = s[0].into();
        r["max"] = s[s.len() - 1].into();
        r["mean"] = (s.iter().sum::<f64>() / s.len() as f64).into();
    }
    std::fs::write(p, serde_json::to_string(&v).unwrap()).unwrap();
}

/// A directory of bench results, one a run: run i's samples tight (3 %)
/// around `means[i]`, as runs are when the host drifts between them.
fn bench_runs(name: &str, seed: u64, means: &[f64]) -> String {
    let d = tmp(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    for (i, m) in means.iter().enumerate() {
        bench_at(
            &normal(seed + i as u64, 11, *m),
            &d.join(format!("{i}.json")),
        );
    }
    d.display().to_string()
}

/// A seeded normal sample around `mean` with a 3 % standard deviation.
fn normal(seed: u64, n: usize, mean: f64) -> Vec<f64> {
    let mut x = seed;
    let mut uniform = move || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| {
            let (u, v) = (uniform(), uniform());
            mean * (1.0 + 0.03 * (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos())
        })
        .collect()
}

fn compare_json(a: &str, b: &str) -> Vec<Value> {
    let text = stdout_ok(&lsmpmon(&["compare", a, b, "--format", "json"]));
    common::validate("compare.schema.json", &text);
    serde_json::from_str::<Value>(&text).unwrap()["changes"]
        .as_array()
        .unwrap()
        .clone()
}

/// Run means 10 % apart, as back-to-back runs on a loaded host drift.
const DRIFT: [f64; 5] = [900.0, 950.0, 1000.0, 1050.0, 1100.0];

#[test]
fn compare_real_time_one_run_a_side_cannot_tell() {
    // Two runs of the same binary 15 % apart, each tight: the samples
    // within them are fully apart (the old verdict: "slower, p = 2.8e-6"),
    // but nothing says the binary changed rather than the host.
    let a = bench_with(&normal(1, 11, 1000.0), "a.json");
    let b = bench_with(&normal(2, 11, 1150.0), "b.json");
    for c in compare_json(&a, &b) {
        assert_eq!(c["verdict"], "cannot_tell", "{c}");
        assert!(c["p_value"].is_null(), "{c}");
        let test = c["test"].as_str().unwrap();
        assert!(test.starts_with("one run a side; within-run p="), "{c}");
    }
    let out = lsmpmon(&["compare", &a, &b, "--fail-on-slower"]);
    let text = stdout_ok(&out);
    assert!(
        text.contains("cannot tell") && text.contains("give each side several runs"),
        "{text}"
    );
    assert!(
        !text.contains("┆ slower") && !text.contains("┆ faster"),
        "{text}"
    );
}

#[test]
fn compare_real_time_repeated_runs_judge_run_against_run() {
    // Five runs a side drifting alike: within noise, though single runs
    // differ by up to 22 %.
    let a = bench_runs("runs-a", 10, &DRIFT);
    let mut same = DRIFT;
    same.rotate_left(2);
    let same = bench_runs("runs-same", 20, &same.map(|m| m * 1.01));
    for c in compare_json(&a, &same) {
        assert_eq!(c["verdict"], "within_noise", "{c}");
        assert_eq!(c["run"], "5 vs 5 runs", "{c}");
        assert!(c["p_value"].as_f64().unwrap() >= 0.01, "{c}");
    }
    // Every run of B beyond every run of A: slower (p = 2/252), or faster.
    let slower = bench_runs("runs-slower", 30, &DRIFT.map(|m| m * 1.3));
    for c in compare_json(&a, &slower) {
        assert_eq!(c["verdict"], "slower", "{c}");
        assert!(
            (c["p_value"].as_f64().unwrap() - 2.0 / 252.0).abs() < 1e-9,
            "{c}"
        );
        // A and B are the medians over the runs.
        assert!((c["a"].as_f64().unwrap() - 1000.0).abs() < 50.0, "{c}");
    }
    let faster = bench_runs("runs-faster", 40, &DRIFT.map(|m| m * 0.7));
    assert!(compare_json(&a, &faster)
        .iter()
        .all(|c| c["verdict"] == "faster"));
    // Three runs a side can never reach p < 0.01, however far apart.
    let (a3, b3) = (
        bench_runs("runs-a3", 50, &DRIFT[..3]),
        bench_runs(
            "runs-b3",
            60,
            &DRIFT[..3].iter().map(|m| m * 2.0).collect::<Vec<_>>(),
        ),
    );
    for c in compare_json(&a3, &b3) {
        assert_eq!(c["verdict"], "cannot_tell", "{c}");
        assert_eq!(
            c["test"],
            "3 runs a side cannot reach p < 0.01: need 5 a side"
        );
    }
    let out = lsmpmon(&["compare", &a3, &b3, "--fail-on-slower"]);
    assert_eq!(out.status.code(), Some(0), "cannot tell is not slower");
}

/// A directory of the guest trace made real-time runs: run i's times per
/// call scaled by `scales[i]`.
fn trace_runs(name: &str, scales: &[f64]) -> String {
    let d = tmp(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    for (i, k) in scales.iter().enumerate() {
        let mut v: Value =
            serde_json::from_slice(&std::fs::read(fixture("trace-6.1.json")).unwrap()).unwrap();
        v["provenance"]["time"] = "real".into();
        for h in v["hooks"].as_array_mut().unwrap() {
            let ave = h["ave_ns"].as_f64().unwrap() * k;
            h["ave_ns"] = ave.into();
            h["min_ns"] = ((h["min_ns"].as_f64().unwrap() * k).floor() as u64).into();
            h["max_ns"] = ((h["max_ns"].as_f64().unwrap() * k).ceil() as u64).into();
            let count = h["count"].as_f64().unwrap();
            h["sum_ns"] = ((ave * count).round() as u64).into();
        }
        std::fs::write(d.join(format!("{i}.json")), v.to_string()).unwrap();
    }
    d.display().to_string()
}

#[test]
fn compare_real_time_repeated_traces_judge_hooks_run_against_run() {
    let scales = DRIFT.map(|m| m / 1000.0);
    let a = trace_runs("traces-a", &scales);
    let slower = trace_runs("traces-slower", &scales.map(|k| k * 1.5));
    let changes = compare_json(&a, &slower);
    assert!(!changes.is_empty());
    for c in &changes {
        assert!(c["figure"].as_str().unwrap().starts_with("hook "), "{c}");
        assert_eq!(c["verdict"], "slower", "{c}");
        assert_eq!(c["run"], "5 vs 5 runs", "{c}");
    }
    let mut same = scales;
    same.reverse();
    for c in compare_json(&a, &trace_runs("traces-same", &same)) {
        assert_eq!(c["verdict"], "within_noise", "{c}");
    }
}

/// Traces made by different attach methods are compared with a note saying so.
#[test]
fn compare_notes_traces_made_by_different_methods() {
    let a = lab_with("method-a", |_| {});
    let b = lab_with("method-b", |v| {
        v["guest"]["trace"]["probe"]["method"] = "kprobe/kretprobe".into();
    });
    let text = stdout_ok(&lsmpmon(&["compare", &a, &b]));
    assert!(
        text.contains("traced with fentry/fexit in A and kprobe/kretprobe in B"),
        "{text}"
    );
    let same = stdout_ok(&lsmpmon(&["compare", &a, &a]));
    assert!(!same.contains("traced with"), "{same}");
}

/// The lab fixture copied, with `edit` applied to the tomoyo cell.
fn lab_with(name: &str, edit: impl Fn(&mut Value)) -> String {
    lab_with_cell(name, "tomoyo", edit)
}

fn lab_with_none(name: &str, edit: impl Fn(&mut Value)) -> String {
    lab_with_cell(name, "none", edit)
}

fn lab_with_cell(name: &str, config: &str, edit: impl Fn(&mut Value)) -> String {
    let dir = tmp(name);
    let cells = dir.join("cells");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&cells).unwrap();
    for e in std::fs::read_dir(fixture("lab/cells")).unwrap() {
        let p = e.unwrap().path();
        let mut v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        if v["config"]["name"] == config {
            edit(&mut v);
        }
        std::fs::write(cells.join(p.file_name().unwrap()), v.to_string()).unwrap();
    }
    dir.display().to_string()
}

fn scale_stat(v: &mut Value, factor: f64) {
    for r in v["guest"]["bench"]["results"].as_array_mut().unwrap() {
        if r["op"] == "stat" {
            for k in ["median", "min", "max", "mean"] {
                r[k] = (r[k].as_f64().unwrap() * factor).into();
            }
            let samples: Vec<f64> = r["samples"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() * factor)
                .collect();
            r["samples"] = samples.into();
        }
    }
}

#[test]
fn compare_virtual_time_is_exact_against_its_determinism() {
    let verdict = |changes: &[Value], fig: &str| -> String {
        changes
            .iter()
            .find(|c| c["figure"] == fig && c["run"] == "tomoyo")
            .unwrap_or_else(|| panic!("no {fig}: {changes:?}"))["verdict"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let same = compare_json(&lab(), &lab_with("same", |_| {}));
    assert!(same.iter().all(|c| c["verdict"] == "within_noise"));
    assert!(same
        .iter()
        .all(|c| c["test"].as_str().unwrap().starts_with("exact")));
    let small = compare_json(&lab(), &lab_with("small", |v| scale_stat(v, 1.004)));
    assert_eq!(verdict(&small, "bench stat"), "within_noise");
    let big = compare_json(&lab(), &lab_with("big", |v| scale_stat(v, 1.006)));
    assert_eq!(verdict(&big, "bench stat"), "slower");
    assert_eq!(verdict(&big, "bench open_close"), "within_noise");
    let faster = compare_json(&lab(), &lab_with("fast", |v| scale_stat(v, 0.9)));
    assert_eq!(verdict(&faster, "bench stat"), "faster");
}

#[test]
fn compare_refuses_unlike_runs() {
    let other = lab_with("other-host", |v| v["hostname"] = "elsewhere".into());
    let out = lsmpmon(&["compare", &lab(), &other]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("hostname") && err.lines().count() == 1,
        "{err}"
    );
    let samples = lab_with("other-samples", |v| v["options"]["samples"] = 7.into());
    let out = lsmpmon(&["compare", &lab(), &samples]);
    assert_eq!(out.status.code(), Some(2), "other measurement options");
    assert!(String::from_utf8_lossy(&out.stderr).contains("measured otherwise"));
    let forced = lsmpmon(&["compare", &lab(), &other, "--force"]);
    assert!(String::from_utf8_lossy(&forced.stdout).contains("WARNING"));
    // Path-based modules cost more on a longer path: a bench directory of
    // another length (or depth) is refused, one of the same shape is not.
    let dir = |name: &str, d: &'static str| {
        lab_with(name, move |v| {
            v["guest"]["bench"]["options"]["dir"] = d.into();
        })
    };
    let longer = lsmpmon(&[
        "compare",
        &lab(),
        &dir("longer-dir", "/tmp/lsmpmon-bench-x"),
    ]);
    let err = String::from_utf8_lossy(&longer.stderr);
    assert_eq!(longer.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bench directory: 18 bytes, depth 2 vs 20 bytes, depth 2"),
        "{err}"
    );
    let deeper = lsmpmon(&["compare", &lab(), &dir("deeper-dir", "/tmp/lsmpmon/bench")]);
    assert!(String::from_utf8_lossy(&deeper.stderr).contains("depth 2 vs 18 bytes, depth 3"));
    let same_shape = lsmpmon(&["compare", &lab(), &dir("same-shape", "/tmp/lsmpmon-bonch")]);
    assert!(
        same_shape.status.success(),
        "{}",
        String::from_utf8_lossy(&same_shape.stderr)
    );
    // Virtual against real time is never compared.
    let host = fixture("bench-host.json").display().to_string();
    let trace = fixture("trace-6.1.json").display().to_string();
    let out = lsmpmon(&["compare", &host, &trace, "--force"]);
    assert_eq!(out.status.code(), Some(2));
}

fn chromium(args: &[&str], page: &Path) -> Output {
    let profile = tmp("chromium-profile");
    Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("running chromium (scripts/setup.sh --tests installs it)")
}

/// What the page printed to its console. Chromium logs every console
/// message as INFO:CONSOLE whatever its level; the page has no script, so
/// any message at all is a fault.
fn console_errors(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(String::from)
        .collect()
}

#[test]
fn the_html_page_renders_in_a_browser() {
    // The harness can see a console error: a page that makes one.
    let broken = tmp("broken.html");
    std::fs::write(
        &broken,
        "<html><body><script>console.error('planted')</script></body></html>",
    )
    .unwrap();
    let out = chromium(&["--dump-dom"], &broken);
    let errs = console_errors(&String::from_utf8_lossy(&out.stderr));
    assert!(
        errs.iter().any(|l| l.contains("planted")),
        "console not captured: {errs:?}"
    );

    let page = tmp("report.html");
    let trace = fixture("trace-6.1.json").display().to_string();
    let host = fixture("bench-host.json").display().to_string();
    stdout_ok(&lsmpmon(&[
        "report",
        &lab(),
        &trace,
        &host,
        "--format",
        "html",
        "-o",
        page.to_str().unwrap(),
    ]));
    let html = std::fs::read_to_string(&page).unwrap();
    // An SVG's xmlns attribute names a namespace; it fetches nothing.
    let mut outside_ns = String::new();
    let mut rest = html.as_str();
    while let Some(i) = rest.find("xmlns=\"") {
        outside_ns.push_str(&rest[..i]);
        rest = rest[i + 7..].split_once('"').map_or("", |(_, r)| r);
    }
    outside_ns.push_str(rest);
    assert!(
        outside_ns.len() > html.len() / 2,
        "the page itself is checked"
    );
    for needle in ["http:", "https:", "<script", "<link", "@import", "url("] {
        assert!(
            !outside_ns.contains(needle),
            "the page fetches something: {needle}"
        );
    }
    let out = chromium(&["--dump-dom"], &page);
    assert!(out.status.success());
    assert_eq!(
        console_errors(&String::from_utf8_lossy(&out.stderr)),
        Vec::<String>::new()
    );
    let dom = String::from_utf8(out.stdout).unwrap();
    let figures: Vec<&str> = dom.split("<figure class=\"chart\"").skip(1).collect();
    assert!(
        figures.len() >= 4,
        "bars, heat map, histograms: {} charts",
        figures.len()
    );
    for f in &figures {
        let svg = &f[..f.find("</figure>").unwrap()];
        assert!(svg.contains("<svg"), "a chart without its SVG");
        // Bars and cells are rects; the spread charts' samples are circles.
        assert!(
            svg.matches("<rect").count() >= 3 || svg.matches("<circle").count() >= 3,
            "an empty chart: {}",
            &svg[..svg.len().min(300)]
        );
    }
    for id in ["c0-bars", "c1-heat"] {
        assert!(dom.contains(&format!("id=\"{id}\"")), "no {id}");
    }
    assert!(dom.contains("proof failed") && dom.contains("LSMPMON, Table 3"));

    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-screenshot.png");
    let out = chromium(
        &[
            "--window-size=1280,1600",
            &format!("--screenshot={}", shot.display()),
        ],
        &page,
    );
    assert!(out.status.success());
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = info.color_type.samples();
    let pixels = buf[..info.buffer_size()].chunks(px);
    let total = pixels.len();
    let ink = pixels
        .filter(|p| p.iter().take(3).any(|c| *c < 200))
        .count();
    assert!(
        ink * 100 > total && ink * 2 < total,
        "screenshot {} is blank or black: {ink} of {total} pixels inked",
        shot.display()
    );
    eprintln!("screenshot: {}", shot.display());
}

/// Every result committed in the repository (the top-level results folder
/// and these fixtures: each `*.json` naming a `"schema"`) loads through the
/// result model, as written by whichever version wrote it.
#[test]
fn every_committed_result_loads_through_the_model() {
    fn results_in(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                results_in(&p, out);
            } else if p.extension().is_some_and(|x| x == "json")
                // A merge's record (what `lab merge` did) is not a result.
                && p.file_name().is_some_and(|n| n != "merge.json")
                && std::fs::read_to_string(&p).is_ok_and(|t| t.contains("\"schema\""))
            {
                out.push(p);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for d in ["bench", "results", "tests/fixtures/report"] {
        if root.join(d).is_dir() {
            results_in(&root.join(d), &mut files);
        }
    }
    assert!(
        files.len() > 100,
        "committed results found: {}",
        files.len()
    );
    // The committed layout floor is not a result but what results give
    // (the_committed_floor_is_what_the_committed_draws_give reads it).
    files.retain(|f| !f.ends_with("results/floor.json"));
    let failed: Vec<String> = files
        .iter()
        .filter_map(|f| {
            lsmpmon::model::read::load("", f)
                .err()
                .map(|e| format!("{e:#}"))
        })
        .collect();
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// `report FILE` must stop with exit 2 and one line naming FILE and `want`.
fn refused(file: &Path, want: &str) {
    let out = lsmpmon(&["report", &lab(), file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{want}: {err}");
    assert!(out.stdout.is_empty(), "nothing rendered for {want}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let name = file.file_name().unwrap().to_str().unwrap();
    assert!(err.contains(want) && err.contains(name), "{want}: {err}");
}

/// A fixture with `edit` applied, written under `name`.
fn edited(fixture_file: &str, name: &str, edit: impl Fn(&mut Value)) -> PathBuf {
    let mut v: Value =
        serde_json::from_slice(&std::fs::read(fixture(fixture_file)).unwrap()).unwrap();
    edit(&mut v);
    let p = tmp(name);
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    p
}

#[test]
fn impossible_figures_stop_the_report() {
    let trace = "trace-6.1.json";
    let called = |v: &Value| {
        v["hooks"]
            .as_array()
            .unwrap()
            .iter()
            .position(|h| h["count"].as_u64().unwrap() > 0)
            .unwrap()
    };
    let cases: Vec<(PathBuf, &str)> = vec![
        (
            edited(trace, "negative-count.json", |v| {
                v["hooks"][0]["cs_count"] = (-5).into()
            }),
            "hooks[0].cs_count: invalid value: integer `-5`",
        ),
        (
            edited(trace, "min-over-max.json", |v| {
                let i = called(v);
                v["hooks"][i]["min_ns"] = 1_000_000_000_000u64.into();
            }),
            "≤ max_ns",
        ),
        (
            edited(trace, "syscall-ave-text.json", |v| {
                v["syscalls"][0]["hooks"][0]["ave_ns"] = "x".into()
            }),
            "syscalls[0].hooks[0].ave_ns: invalid type: string",
        ),
        (
            edited(trace, "warp-time.json", |v| {
                v["provenance"]["time"] = "warp".into()
            }),
            "provenance.time: unknown variant `warp`",
        ),
        (
            edited(trace, "escape.json", |v| {
                v["provenance"]["kernel_release"] = "6.1\u{1b}[31m".into()
            }),
            "provenance.kernel_release: a control character",
        ),
        (
            edited("bench-host.json", "median-outside.json", |v| {
                v["results"][0]["median"] = 99_999.0.into();
                v["results"][0]["max"] = 1e6.into();
            }),
            "median 99999 is outside its samples",
        ),
    ];
    for (file, want) in &cases {
        refused(file, want);
    }
}

const NONE_CELL: &str = "lab/cells/6.1-cloud__none__1795500718528-17793-0-vm.json";

/// The first hook of the trace fixture that was called.
fn called_hook(v: &mut Value) -> &mut Value {
    v["hooks"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|h| h["count"].as_u64().unwrap() > 0)
        .unwrap()
}

type Edit = fn(&mut Value);

/// Figures no measurement can produce, one per field: each stops the report.
#[test]
fn every_impossible_field_stops_the_report() {
    let bench: &[(&str, Edit, &str)] = &[
        (
            "no-samples",
            |v| v["results"][0]["samples"] = Value::Array(vec![]),
            "samples is empty",
        ),
        (
            "op-twice",
            |v| {
                let first = v["results"][0].clone();
                v["results"].as_array_mut().unwrap().push(first);
            },
            "the op is given twice",
        ),
    ];
    let trace: &[(&str, Edit, &str)] = &[
        (
            "calls-off",
            |v| {
                let h = called_hook(v);
                h["calls"] = (h["calls"].as_u64().unwrap() + 1).into();
            },
            "is not count",
        ),
        (
            "decisions-over-calls",
            |v| {
                let h = called_hook(v);
                h["deny"] = h["calls"].clone();
                h["allow"] = h["calls"].clone();
            },
            "is more than calls",
        ),
        (
            "bucket-upside-down",
            |v| called_hook(v)["hist"][0]["low_ns"] = 1_000_000.into(),
            "low_ns 1000000 is above high_ns",
        ),
        (
            "sum-off",
            |v| {
                let h = called_hook(v);
                h["sum_ns"] = (h["sum_ns"].as_u64().unwrap() * 2).into();
            },
            "sum_ns",
        ),
    ];
    let cell: &[(&str, Edit, &str)] = &[
        (
            "used-over-total",
            |v| {
                let m = &mut v["guest"]["footprint"]["after_setup"];
                m["used_kib"] = (m["total_kib"].as_u64().unwrap() + 1).into();
            },
            "used_kib",
        ),
        (
            "series-path",
            |v| v["kernel"]["series"] = "../../etc".into(),
            "kernel.series",
        ),
        (
            "other-proof",
            |v| v["guest"]["proof"]["kind"] = "deny".into(),
            "guest.proof.kind deny",
        ),
    ];
    // A number set where no measurement could put it: (fixture, case, JSON
    // pointer, value, what the refusal names).
    let numbers: &[(&str, &str, &str, f64, &str)] = &[
        (
            "bench-host.json",
            "mean-above-max",
            "/results/0/mean",
            1e9,
            "mean 1000000000 is outside",
        ),
        (
            "bench-host.json",
            "negative-cov",
            "/results/0/cov_pct",
            -1.0,
            "cov_pct -1 is negative",
        ),
        (
            "bench-host.json",
            "negative-spread",
            "/results/0/spread_pct",
            -1.0,
            "spread_pct -1",
        ),
        (
            "bench-host.json",
            "negative-overhead",
            "/clock_overhead_ns",
            -1.0,
            "clock_overhead_ns -1",
        ),
        (
            "bench-host.json",
            "negative-wall",
            "/wall_s",
            -1.0,
            "wall_s -1 is negative",
        ),
        (
            "bench-host.json",
            "zero-samples",
            "/options/samples",
            0.0,
            "options.samples is 0",
        ),
        (
            "bench-host.json",
            "zero-sample-ms",
            "/options/sample_ms",
            0.0,
            "options.sample_ms 0 is not positive",
        ),
        (
            "trace-6.1.json",
            "syscall-ave-off",
            "/syscalls/0/hooks/0/ave_ns",
            5000.0,
            "ave_ns 5000 is not sum_ns",
        ),
        (
            "trace-6.1.json",
            "floor-beyond",
            "/probe/floor_ns",
            2e9,
            "probe.floor_ns 2000000000 is beyond 1 s",
        ),
        (
            NONE_CELL,
            "cell-wall",
            "/wall_s",
            -1.0,
            "wall_s -1 is negative",
        ),
        (
            NONE_CELL,
            "stage-wall",
            "/stages/0/wall_s",
            -1.0,
            "wall_s -1 is negative",
        ),
        (
            NONE_CELL,
            "stage-guest-ms",
            "/stages/0/guest_ms",
            -1.0,
            "guest_ms -1 is negative",
        ),
        (
            NONE_CELL,
            "guest-stage-ms",
            "/guest/stages/0/guest_ms",
            -1.0,
            "guest_ms -1 is negative",
        ),
        (
            NONE_CELL,
            "cell-zero-samples",
            "/options/samples",
            0.0,
            "options.samples is 0",
        ),
        (
            NONE_CELL,
            "cell-zero-sample-ms",
            "/options/sample_ms",
            -1.0,
            "options.sample_ms -1",
        ),
    ];
    for (fixture_file, name, pointer, value, want) in numbers {
        // An integer field gets an integer: the type, not the value, would be refused.
        let edit = |v: &mut Value| {
            let field = v.pointer_mut(pointer).unwrap();
            *field = match field.is_f64() {
                true => (*value).into(),
                false => (*value as i64).into(),
            };
        };
        refused(&edited(fixture_file, &format!("{name}.json"), edit), want);
    }
    for (fixture_file, cases) in [
        ("bench-host.json", bench),
        ("trace-6.1.json", trace),
        (NONE_CELL, cell),
    ] {
        for (name, edit, want) in cases {
            refused(&edited(fixture_file, &format!("{name}.json"), edit), want);
        }
    }
}

/// Every figure of the first op of a bench result set to `x`.
fn op_figures_at(v: &mut Value, x: f64) {
    let o = &mut v["results"][0];
    let n = o["samples"].as_array().unwrap().len();
    o["samples"] = vec![x; n].into();
    for k in ["median", "min", "max", "mean"] {
        o[k] = x.into();
    }
    o["cov_pct"] = 0.0.into();
    o["spread_pct"] = 0.0.into();
}

/// A traced atlas cell (it has op calls), copied with `edit` applied.
fn atlas_cell_with(name: &str, edit: impl Fn(&mut Value)) -> PathBuf {
    let cell = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("results/atlas/cells/6.1-cloud__selinux-mini__1795976716653-29813-0-vm.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(cell).unwrap()).unwrap();
    edit(&mut v);
    let p = tmp(name);
    std::fs::write(&p, v.to_string()).unwrap();
    p
}

/// Issue 52 item 4: a median of 5e-324 (positive, so accepted) came out as
/// "+inf %" established in every form and "+inf % slower" from `compare`
/// (exit 1 with --fail-on-slower); 1.7e308 printed 309 digits; op calls
/// beyond any op printed "875011800653841865734349761422557184 of 420.2 µs".
/// Each is refused by every reader, one line naming the file and the field.
#[test]
fn implausible_figures_are_refused_before_any_form() {
    let tiny = edited("bench-host.json", "op-5e-324.json", |v| {
        op_figures_at(v, 5e-324)
    });
    let huge = edited("bench-host.json", "op-1.7e308.json", |v| {
        op_figures_at(v, 1.7e308)
    });
    for file in [&tiny, &huge] {
        refused(file, "null: median");
        refused(file, "outside 1 ns to 1 h per op");
        let name = file.to_str().unwrap();
        let base = fixture("bench-host.json").display().to_string();
        for args in [
            vec!["compare", &base, name, "--fail-on-slower"],
            vec!["compare", name, &base, "--format", "json"],
            vec!["bench", "--ops", "null", "--compare", name],
        ] {
            let out = lsmpmon(&args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(out.stdout.is_empty(), "{args:?}");
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(
                err.contains(name) && err.contains("outside 1 ns to 1 h"),
                "{err}"
            );
        }
    }
    let calls = atlas_cell_with("op-calls-beyond.json", |v| {
        let c = &mut v["guest"]["op_calls"][0]["calls"][0];
        c["calls"] = u64::MAX.into();
        c["count"] = 1.into();
        c["sum_ns"] = 300.into();
    });
    refused(&calls, "per run of the op");
    let hook = edited("trace-6.1.json", "hook-5e-324.json", |v| {
        let h = called_hook(v);
        h["ave_ns"] = 5e-324.into();
        h["sum_ns"] = 0.into();
        h["min_ns"] = 0.into();
        h["max_ns"] = 1.into();
    });
    refused(&hook, "is not a time per call");
}

#[test]
fn a_passed_cell_needs_a_passed_proof() {
    for (name, proof) in [("proof-failed", Some(false)), ("proof-missing", None)] {
        let dir = lab_with(name, |v| match proof {
            Some(p) => v["guest"]["proof"]["passed"] = p.into(),
            None => v["guest"]["proof"] = Value::Null,
        });
        let cell = std::fs::read_dir(Path::new(&dir).join("cells"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_str().unwrap().contains("tomoyo"))
            .unwrap();
        let out = lsmpmon(&["report", &dir]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("proof did not pass")
                && err.contains(cell.file_name().unwrap().to_str().unwrap()),
            "{err}"
        );
    }
}

#[test]
fn results_from_another_version_say_which_and_what_to_do() {
    let old = edited("bench-host.json", "bench-v0.json", |v| {
        v["schema"] = "lsmpmon.bench/0".into();
        v["provenance"]["version"] = "0.0.9".into();
    });
    refused(&old, "written by lsmpmon 0.0.9");
    refused(&old, "reads lsmpmon.bench/1");
    let changed = edited("bench-host.json", "bench-0.0.9.json", |v| {
        v["provenance"]["version"] = "0.0.9".into();
        v["results"][0]["unit"] = "ops/s".into();
    });
    refused(&changed, "written by lsmpmon 0.0.9; this is 0.1.0");
}

/// Runs lsmpmon with `args`; it must finish within 10 s (a FIFO or device
/// read without end would not) with exit 2 and one line saying why.
fn refused_at_once(args: &[&str]) {
    let mut child = Command::new(LSMPMON)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("{args:?} still running after 10 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains("not a regular file"), "{args:?}: {err}");
}

#[test]
fn results_that_are_not_regular_files_fail_at_once() {
    let fifo = tmp("result.fifo");
    let _ = std::fs::remove_file(&fifo);
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    for path in ["/dev/zero", fifo.to_str().unwrap()] {
        refused_at_once(&["report", path]);
        refused_at_once(&["compare", path, path]);
        refused_at_once(&["bench", "--ops", "null", "--compare", path]);
        refused_at_once(&["lab", "rerun", path]);
    }
}

fn report_json(args: &[&str]) -> Value {
    let mut a = vec!["report"];
    a.extend_from_slice(args);
    a.extend(["--format", "json"]);
    serde_json::from_str(&stdout_ok(&lsmpmon(&a))).unwrap()
}

/// `report D D`: every cell once, in every table (Tables 6/7 included), as
/// with `report D`.
#[test]
fn a_cell_given_twice_counts_once() {
    let once = report_json(&[&lab()]);
    let twice = report_json(&[&lab(), &lab()]);
    for t in twice["tables"].as_array().unwrap() {
        let header: Vec<&str> = t["header"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h.as_str().unwrap())
            .collect();
        let mut seen = std::collections::HashSet::new();
        assert!(
            header.iter().all(|h| seen.insert(*h)),
            "{}: a column twice: {header:?}",
            t["form"]
        );
    }
    assert_eq!(once["tables"], twice["tables"]);
}

/// A newer cell that failed does not hide the older one that passed: the
/// newest passed cell counts, the other is named as superseded.
#[test]
fn the_newest_passed_cell_counts_and_the_others_are_named() {
    let dir = lab_with("superseded", |_| {});
    let cells = Path::new(&dir).join("cells");
    let (_, mut v) = cell_of(&cells, "tomoyo");
    v["started_unix_s"] = (v["started_unix_s"].as_u64().unwrap() + 100).into();
    v["status"] = "failed".into();
    v["reason"] = "guest stopped".into();
    v["guest"] = Value::Null;
    let newer = cells.join("6.1-cloud__tomoyo__newer-failed.json");
    std::fs::write(&newer, v.to_string()).unwrap();
    let json = report_json(&[&dir]);
    let t3 = json["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["form"] == "table3")
        .unwrap();
    let col = column_of(t3, "tomoyo");
    for row in t3["rows"].as_array().unwrap() {
        assert_eq!(row["cells"][col]["kind"], "drawn", "{row}");
        assert!(row["cells"][col]["value"].as_f64().unwrap() > 0.0, "{row}");
    }
    let warnings = json["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| {
            let w = w.as_str().unwrap();
            w.contains("newer-failed.json") && w.contains("superseded by")
        }),
        "{warnings:?}"
    );
}

/// `args` must stop with exit 2 and one line holding every one of `want`.
fn one_line_refusal(args: &[&str], want: &[&str]) {
    let out = lsmpmon(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(want.iter().all(|w| err.contains(w)), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}");
}

/// The same op in MB/s in one result and ns/op in another is no 0.0 % row.
#[test]
fn one_op_in_two_units_is_refused() {
    let host = fixture("bench-host.json");
    let other = edited("bench-host.json", "null-in-mbps.json", |v| {
        for r in v["results"].as_array_mut().unwrap() {
            if r["op"] == "null" {
                r["unit"] = "MB/s".into();
            }
        }
    });
    let (a, b) = (host.to_str().unwrap(), other.to_str().unwrap());
    let want = ["op null", "MB/s", "ns/op", "null-in-mbps.json"];
    one_line_refusal(&["compare", a, b], &want);
    one_line_refusal(&["report", a, b], &want);
}

/// Two different cells under one id and start time: neither is chosen by
/// its file name.
#[test]
fn two_cells_with_one_identity_are_a_conflict() {
    let dir = lab_with("conflict", |_| {});
    let cells = Path::new(&dir).join("cells");
    let (tomoyo, mut v) = cell_of(&cells, "tomoyo");
    v["wall_s"] = (v["wall_s"].as_f64().unwrap() + 1.0).into();
    let twin = cells.join("zz-twin.json");
    std::fs::write(&twin, v.to_string()).unwrap();
    let first = tomoyo.file_name().unwrap().to_str().unwrap();
    one_line_refusal(
        &["report", &dir],
        &[first, "zz-twin.json", "two different cells"],
    );
    // The same cell read twice is still one cell.
    std::fs::copy(&tomoyo, &twin).unwrap();
    stdout_ok(&lsmpmon(&["report", &dir]));
}

/// A cells/*.json entry that is not a regular file is named, by every
/// reader of a results directory (`lab tables` goes on without it).
#[test]
fn entries_of_a_results_directory_that_are_not_files_are_named() {
    type Make = fn(&Path);
    let make: [(&str, Make); 4] = [
        ("fifo", |p| {
            assert!(Command::new("mkfifo").arg(p).status().unwrap().success())
        }),
        ("zero", |p| {
            std::os::unix::fs::symlink("/dev/zero", p).unwrap()
        }),
        ("dir", |p| std::fs::create_dir(p).unwrap()),
        ("dangling", |p| {
            std::os::unix::fs::symlink("/nonexistent/cell.json", p).unwrap()
        }),
    ];
    for (kind, mk) in make {
        let dir = lab_with(&format!("entry-{kind}"), |_| {});
        let name = format!("odd-{kind}.json");
        mk(&Path::new(&dir).join("cells").join(&name));
        one_line_refusal(&["report", &dir], &[&name]);
        one_line_refusal(&["compare", &lab(), &dir], &[&name]);
        let out = lsmpmon(&["lab", "tables", &dir]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{kind}: {err}");
        assert!(err.contains(&name), "lab tables, {kind}: {err}");
        match kind {
            // A link in a results directory is not followed (issue 34 item 13).
            "zero" | "dangling" => assert!(err.contains("symbolic link"), "{kind}: {err}"),
            _ => assert!(err.contains("not a regular file"), "{kind}: {err}"),
        }
    }
}

/// The table of `form` in a `report --format json` document.
fn form_table<'a>(doc: &'a Value, form: &str) -> &'a Value {
    doc["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["form"] == form)
        .unwrap_or_else(|| panic!("no {form} table"))
}

/// Every table of `form` in a `report --format json` document.
fn forms_of<'a>(doc: &'a Value, form: &str) -> Vec<&'a Value> {
    let all = doc["tables"].as_array().unwrap();
    all.iter().filter(|t| t["form"] == form).collect()
}

/// The cells of the row labelled `label`.
fn cells_of<'a>(table: &'a Value, label: &str) -> &'a Value {
    let rows = table["rows"].as_array().unwrap();
    let row = rows.iter().find(|r| r["label"] == label);
    &row.unwrap_or_else(|| panic!("no row {label}"))["cells"]
}

/// Which of a table's cells (after its row label) is `name`'s column.
fn column_of(table: &Value, name: &str) -> usize {
    let header = table["header"].as_array().unwrap();
    header.iter().position(|h| h == name).unwrap() - 1
}

/// The cell file of `config` in a lab `cells/` directory, and its JSON.
fn cell_of(cells: &Path, config: &str) -> (PathBuf, Value) {
    let file = std::fs::read_dir(cells)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_str().unwrap().contains(config))
        .unwrap();
    let v = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    (file, v)
}

/// The Table 5 form: each configuration across kernels, with the figures
/// of each kernel's Table 3 form; one measured on a single kernel has none,
/// and the framework's changes are named under the configurations they move.
#[test]
fn table5_sets_each_configuration_across_kernels() {
    let dir = Path::new(&lab_with("two-kernels", |_| {})).to_path_buf();
    for config in ["none", "tomoyo"] {
        let (_, mut v) = cell_of(&fixture("lab/cells"), config);
        v["kernel"]["series"] = "6.12".into();
        v["kernel"]["release"] = "6.12.57+deb13-cloud-amd64".into();
        v["kernel"]["deb_sha256"] = "ab".repeat(32).into();
        let id = format!("6.12-cloud__{config}__1-1-0-vm");
        v["id"] = id.clone().into();
        v["log_dir"] = format!("logs/{id}").into();
        if config == "tomoyo" {
            scale_stat(&mut v, 1.5);
        }
        let file = dir.join("cells").join(format!("{id}.json"));
        std::fs::write(file, v.to_string()).unwrap();
    }
    let doc = report_json(&[dir.to_str().unwrap()]);
    let fives = forms_of(&doc, "table5");
    let titles: Vec<&str> = fives.iter().map(|t| t["title"].as_str().unwrap()).collect();
    assert_eq!(
        titles.len(),
        2,
        "none and tomoyo, not permissive: {titles:?}"
    );
    assert!(
        titles[0].ends_with("none across kernels") && titles[1].ends_with("tomoyo across kernels")
    );
    let tomoyo = fives[1];
    assert_eq!(
        tomoyo["header"],
        serde_json::json!(["operation", "6.1", "6.12"])
    );
    let row = |t: &Value, label: &str| -> Value { cells_of(t, label).clone() };
    let threes = forms_of(&doc, "table3");
    for (i, kernel) in ["6.1", "6.12"].iter().enumerate() {
        let t3 = threes.iter().find(|t| t["kernel"] == *kernel).unwrap();
        let col = column_of(t3, "tomoyo");
        assert_eq!(
            row(tomoyo, "stat (µs)")[i],
            row(t3, "stat (µs)")[col],
            "{kernel}"
        );
    }
    // One draw a side: a change judged against the committed floor.
    let pct = |i: usize| {
        let c = &row(tomoyo, "stat (µs)")[i];
        c["change"]["pct"].as_f64().or(c["pct"].as_f64()).unwrap()
    };
    assert!(
        pct(1) > pct(0) + 40.0,
        "stat scaled by 1.5 on 6.12: {} vs {}",
        pct(1),
        pct(0)
    );
    let notes = |t: &Value| t["notes"].to_string();
    assert!(
        notes(tomoyo).contains("Largest change in overhead: stat"),
        "{}",
        notes(tomoyo)
    );
    assert!(notes(fives[0]).contains("static calls") && !notes(tomoyo).contains("static calls"));
    let bare = notes(fives[0]);
    assert!(
        bare.contains("a hook no module implements costs") && bare.contains(" ns on 6.12 ("),
        "{bare}"
    );
}

/// The atlas (`results/atlas`, by scripts/atlas.sh): every kernel ×
/// configuration once; every cell passed its proof or says why it is not
/// applicable; no cell carries a path of the machine that ran it; every
/// bench ran under a work directory of one shape; and its pages are what
/// `report` makes of the committed cells, nothing edited by hand.
#[test]
fn the_committed_atlas_is_whole_and_its_pages_come_from_its_cells() {
    let atlas = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/atlas");
    let mut seen = std::collections::BTreeSet::new();
    let mut shapes = std::collections::BTreeSet::new();
    for e in std::fs::read_dir(atlas.join("cells")).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        let c: Value = serde_json::from_str(&text).unwrap();
        let what = format!(
            "{} {} {}",
            c["kernel"]["series"], c["config"]["name"], c["options"]["rtc"]
        );
        assert!(seen.insert(what.clone()), "{what} twice");
        match c["status"].as_str().unwrap() {
            "passed" => assert_eq!(c["guest"]["proof"]["passed"], true, "{what}"),
            "not_applicable" => assert!(c["reason"].as_str().unwrap().len() > 10, "{what}"),
            other => panic!("{what}: {other}: {}", c["reason"]),
        }
        for home in ["/work/", "/root/", "/home/", "/tmp/lsmpmon-atlas"] {
            assert!(!text.contains(home), "{what} names {home}");
        }
        let name = c["config"]["name"].as_str().unwrap();
        assert_eq!(c["config"]["dir"], format!("configs/{name}"), "{what}");
        let logs = format!("logs/{}", c["id"].as_str().unwrap());
        let not_booted = c["status"] == "not_applicable" && c["log_dir"] == "";
        assert!(
            not_booted || c["log_dir"] == logs.as_str(),
            "{what}: {}",
            c["log_dir"]
        );
        if let Some(o) = c["guest"]["bench"]["options"].as_object() {
            shapes.insert(o["dir_path"].to_string());
        }
    }
    let kernels = ["5.10", "6.1", "6.12", "7.3", "6.1-smack"];
    let configs = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("configs"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().join("spec.toml").is_file())
        // The AVC sweep's and the avtab study's configurations serve those
        // studies (results/avc-sweep, results/avtab-slots), not the matrix
        // (scripts/atlas.sh leaves them out too).
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            let name = name.to_string_lossy();
            !name.starts_with("selinux-avc") && !name.starts_with("selinux-avtab")
        })
        // The verdict rule's twins of `none` and its planted cost came after
        // this atlas: the atlas made again by one build runs them (until
        // then their check is the 6.1 guest test in tests/lab.rs).
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            let name = name.to_string_lossy();
            !name.starts_with("twin-") && name != "planted-create"
        })
        .count();
    // Five layout draws of every cell (issue 33).
    assert_eq!(seen.len(), kernels.len() * configs * 5, "{seen:?}");
    assert_eq!(shapes.len(), 1, "one bench directory shape: {shapes:?}");
    for (format, page) in [("markdown", "README.md"), ("html", "report.html")] {
        let out = Command::new(LSMPMON)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["report", "results/atlas", "--format", format])
            .output()
            .unwrap();
        let committed = std::fs::read_to_string(atlas.join(page)).unwrap();
        assert!(
            String::from_utf8(out.stdout).unwrap() == committed,
            "results/atlas/{page} is not what `lsmpmon report results/atlas --format {format}` prints"
        );
        for t in [
            "Table 3 form",
            "Table 4 form",
            "Table 5 form",
            "Tables 6",
            "Footprint",
            "Hook inventory",
        ] {
            assert!(committed.contains(t), "{page} lacks {t}");
        }
    }
}

/// LSMPMON's Tables 1 and 2 from the atlas (the inventory form): each 6.1
/// configuration's modules with the hooks they implement and those the
/// paper ops called. What must hold whatever the counting: the baseline
/// is capability alone; SELinux, with a hook for nearly every object,
/// implements more than AppArmor, which implements more than TOMOYO; no
/// module had more hooks called than it has; and the busiest hooks of a
/// module are among its called ones (a file module's busiest is a file hook).
#[test]
fn the_inventory_lists_each_module_with_its_hooks() {
    let r = report_json(&["results/atlas", "--form", "inventory"]);
    let t = r["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["kernel"] == "6.1")
        .expect("a 6.1 inventory");
    assert_eq!(t["form"], "inventory");
    let rows: std::collections::BTreeMap<String, Vec<Value>> = t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let label = r["label"].as_str().unwrap().to_string();
            (label, r["cells"].as_array().unwrap().clone())
        })
        .collect();
    let count = |label: &str, col: usize| -> f64 {
        rows.get(label)
            .unwrap_or_else(|| panic!("no row {label}: {rows:?}"))[col]["value"]
            .as_f64()
            .unwrap()
    };
    assert!(rows
        .keys()
        .filter(|l| l.starts_with("none:"))
        .eq(["none: capability"]));
    let (selinux, apparmor, tomoyo) = (
        count("selinux-mini: selinux", 2),
        count("apparmor: apparmor", 2),
        count("tomoyo: tomoyo", 2),
    );
    assert!(
        selinux > apparmor && apparmor > tomoyo,
        "{selinux} {apparmor} {tomoyo}"
    );
    for (label, cells) in &rows {
        let (implemented, called) = (
            cells[2]["value"].as_f64().unwrap(),
            cells[3]["value"].as_f64().unwrap(),
        );
        assert!(called <= implemented, "{label}: {called} of {implemented}");
        assert!(
            called > 0.0,
            "{label}: the paper ops called none of its hooks"
        );
    }
    let busiest = rows["selinux-mini: selinux"][4]["text"].as_str().unwrap();
    assert!(busiest.starts_with("file_permission"), "{busiest}");
}

/// A page for one bench run shows its spread: a dot per sample of each op,
/// and the median bars, in the "How noisy" section.
#[test]
fn one_bench_run_gets_a_chart_of_its_samples() {
    let host = fixture("bench-host.json");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&host).unwrap()).unwrap();
    let samples: usize = result["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["samples"].as_array().unwrap().len())
        .sum();
    assert!(samples > 0);
    let out = lsmpmon(&["report", host.to_str().unwrap(), "--format", "html"]);
    let html = stdout_ok(&out);
    let at = html
        .find("<section id=\"spreads\">")
        .expect("no spread section for one run");
    let section = &html[at..at + html[at..].find("</section>").unwrap()];
    assert!(section.contains("How noisy"), "{section}");
    assert_eq!(section.matches("<circle").count(), samples);
}

/// The committed AVC sweep (issue 25): its pages are what `report` makes of
/// its cells; each N's runs stay apart (same kernel and configuration,
/// other ops), so the curve has every N on every series; at the raised
/// threshold the op's misses are exactly the cold first pass (N), and the
/// default threshold holds the cache at or under 512 nodes.
#[test]
fn the_committed_avc_sweep_keeps_every_n_and_its_pages_come_from_its_cells() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dirs: Vec<String> = ["16", "256", "1k", "4k", "16k"]
        .iter()
        .map(|n| format!("results/avc-sweep/avc_open_{n}"))
        .collect();
    for (format, page) in [("markdown", "README.md"), ("html", "report.html")] {
        let out = Command::new(LSMPMON)
            .current_dir(root)
            .arg("report")
            .args(&dirs)
            .args(["--format", format])
            .output()
            .unwrap();
        assert!(out.status.success());
        let committed = std::fs::read_to_string(root.join("results/avc-sweep").join(page)).unwrap();
        assert!(
            String::from_utf8(out.stdout).unwrap() == committed,
            "results/avc-sweep/{page} is not what `lsmpmon report` prints of its cells"
        );
    }
    let out = Command::new(LSMPMON)
        .current_dir(root)
        .arg("report")
        .args(&dirs)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tables = doc["tables"].as_array().unwrap();
    let curve = tables
        .iter()
        .find(|t| t["form"] == "avc-sweep-curve")
        .unwrap();
    let rows: Vec<&str> = curve["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["label"].as_str().unwrap())
        .collect();
    assert_eq!(rows, ["16", "256", "1024", "4096", "16384"]);
    assert_eq!(curve["header"].as_array().unwrap().len(), 5, "four series");
    for row in curve["rows"].as_array().unwrap() {
        assert!(
            row["cells"]
                .as_array()
                .unwrap()
                .iter()
                .all(|c| c["kind"] == "value"),
            "{row}"
        );
    }
    for d in &dirs {
        for entry in std::fs::read_dir(root.join(d).join("cells")).unwrap() {
            let c: Value =
                serde_json::from_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap())
                    .unwrap();
            let a = &c["guest"]["bench"]["results"][0]["avc"];
            let n = a["types"].as_u64().unwrap();
            assert_eq!(a["distinct_labels"], n);
            let entries = a["hash"]["entries"].as_u64().unwrap();
            if c["config"]["name"] == "selinux-avc-raised" {
                assert_eq!(a["cache"]["misses"], n, "{d}");
            } else {
                assert!(entries <= 512, "{d}: {entries}");
            }
        }
    }
}

/// The committed standard-vs-embedded SELinux results: the form puts both
/// policies beside `none` on each kernel, with the avtab figures computed on
/// every kernel and the kernel's own line equal to them on the debug build;
/// the committed page is what `report` prints of the cells.
#[test]
fn the_committed_selinux_policies_page_comes_from_its_cells() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(LSMPMON)
        .current_dir(root)
        .args(["report", "results/selinux-policies", "--format", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&stdout_ok(&out)).unwrap();
    let forms: Vec<&Value> = v["tables"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["form"] == "selinux-policies")
        .collect();
    let kernels: Vec<&str> = forms
        .iter()
        .map(|t| t["kernel"].as_str().unwrap())
        .collect();
    for k in ["6.1", "7.3", "7.3-selinux"] {
        assert!(kernels.iter().any(|x| x.starts_with(k)), "{kernels:?}");
    }
    for t in &forms {
        let header: Vec<&str> = t["header"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h.as_str().unwrap())
            .collect();
        assert_eq!(header[1..4], ["none", "selinux-mini", "selinux-refpolicy"]);
        let row = |label: &str| {
            t["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["label"] == label)
                .unwrap_or_else(|| panic!("{}: no row {label}", t["kernel"]))
                .clone()
        };
        let entries = row("avtab rules: entries");
        let value = |r: &Value, i: usize| r["cells"][i]["value"].as_f64();
        let (mini, std) = (value(&entries, 1).unwrap(), value(&entries, 2).unwrap());
        assert!(std > 1000.0 * mini, "{mini} {std}");
        // The standard ÷ embedded column is the two policies' quotient.
        let ratio = value(&entries, 3).unwrap();
        assert!((ratio - std / mini).abs() < 0.01 * ratio);
        let own = row("avtab rules: the kernel's own line");
        if t["kernel"].as_str().unwrap().starts_with("7.3-selinux") {
            assert_eq!(own["cells"][1]["text"], "equal", "{own}");
            assert_eq!(own["cells"][2]["text"], "equal", "{own}");
        } else {
            assert_eq!(own["cells"][1]["text"], "not built in", "{own}");
        }
        assert!(value(&row("policy load (guest ms)"), 2).unwrap() > 0.0);
        // lsmpmon's tinyconfig build has no /proc/slabinfo (no SLUB_DEBUG).
        if !t["kernel"].as_str().unwrap().starts_with("7.3-selinux") {
            the_kernels_slab_holds_the_computed_avtab(t, &row);
        }
    }
    let md = Command::new(LSMPMON)
        .current_dir(root)
        .args(["report", "results/selinux-policies", "--format", "markdown"])
        .output()
        .unwrap();
    let committed =
        std::fs::read_to_string(root.join("results/selinux-policies/README.md")).unwrap();
    assert!(
        stdout_ok(&md) == committed,
        "results/selinux-policies/README.md is not what `lsmpmon report` prints of its cells"
    );
}

/// results/avtab-slots (the embedded-SELinux paper's Table 11): one table
/// at the paper's 8 188 rules, a row per slot count, most slots first, each
/// with its kernel's own longest chain and a drawn decision time; the page
/// is what `lsmpmon report` prints of its cells.
#[test]
fn the_committed_avtab_slots_page_comes_from_its_cells() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let report = |format: &str| {
        let out = Command::new(LSMPMON)
            .current_dir(root)
            .args(["report", "results/avtab-slots", "--format", format])
            .output()
            .unwrap();
        stdout_ok(&out)
    };
    let v: Value = serde_json::from_str(&report("json")).unwrap();
    let t: Vec<&Value> = v["tables"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["form"] == "avtab-slots")
        .collect();
    assert_eq!(t.len(), 1);
    assert!(t[0]["title"].as_str().unwrap().contains("8188 rules"));
    let slots: Vec<f64> = t[0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["cells"][4]["draws"], 3, "{r}");
            r["cells"][0]["value"].as_f64().unwrap()
        })
        .collect();
    assert_eq!(slots, [8192.0, 4096.0, 2048.0, 1024.0, 256.0]);
    let committed = std::fs::read_to_string(root.join("results/avtab-slots/README.md")).unwrap();
    assert!(
        report("markdown") == committed,
        "results/avtab-slots/README.md is not what `lsmpmon report` prints of its cells"
    );
}

/// The committed module-measurement page: per kernel, each case over three
/// draws; a file IMA measured once costs nothing more, a changed one is
/// hashed again; 6.1 measures no init_module buffer and 7.3 every one.
#[test]
fn the_committed_ima_module_page_comes_from_its_cells() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let report = |format: &str| {
        let out = Command::new(LSMPMON)
            .current_dir(root)
            .args(["report", "results/ima-module", "--format", format])
            .output()
            .unwrap();
        stdout_ok(&out)
    };
    let v: Value = serde_json::from_str(&report("json")).unwrap();
    let tables: Vec<&Value> = v["tables"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["form"] == "ima_module")
        .collect();
    assert_eq!(tables.len(), 2, "6.1 and 7.3");
    for t in tables {
        let row = |label: &str| {
            t["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["label"].as_str().unwrap().starts_with(label))
                .unwrap_or_else(|| panic!("no row {label}"))
                .clone()
        };
        // Column 1 is `ima − none` (µs) of the first configuration, ima.
        let share = |label: &str| row(label)["cells"][1]["value"].as_f64().unwrap();
        assert_eq!(row("finit_module, cached")["cells"][0]["draws"], 3);
        assert!(share("finit_module, cached").abs() < 10.0, "{t}");
        assert!(share("finit_module, rehash") > 200.0, "{t}");
        let buffer = share("init_module buffer, same");
        if t["kernel"].as_str().unwrap().starts_with("6.1") {
            assert!(buffer.abs() < 1.0, "6.1 measures no buffer: {buffer}");
        } else {
            assert!(buffer > 200.0, "7.3 hashes every buffer: {buffer}");
        }
    }
    let committed = std::fs::read_to_string(root.join("results/ima-module/README.md")).unwrap();
    assert!(
        report("markdown") == committed,
        "results/ima-module/README.md is not what `lsmpmon report` prints of its cells"
    );
}

/// Table 9: where the kernel shows its slab caches (Debian's kernels), the
/// avtab_node cache holds at least the entries lsmpmon computed from the
/// loaded policy, and no more than they plus what SLUB merged into it
/// (hashtab_node, named), a few hundred KiB for the reference policy.
fn the_kernels_slab_holds_the_computed_avtab(t: &Value, row: &dyn Fn(&str) -> Value) {
    let slab = row("Table 9: the kernel's avtab_node slab (KiB)");
    let entries = row("Table 9: avtab entries, both (KiB, entries × 24 B)");
    let shared = row("Table 9: caches sharing that slab");
    for col in [1, 2] {
        let Some(kernel) = slab["cells"][col]["value"].as_f64() else {
            continue;
        };
        let computed = entries["cells"][col]["value"].as_f64().unwrap();
        assert!(
            kernel >= computed && kernel <= computed + 400.0,
            "{}: slab {kernel} KiB against {computed} KiB computed",
            t["kernel"]
        );
        let names = shared["cells"][col]["text"].as_str().unwrap_or("");
        assert!(names.contains("hashtab_node"), "{}: {shared}", t["kernel"]);
    }
}

/// A link planted in cells/ to a private file is not read, not quoted in
/// an error, and named (issue 34 item 13); a file given by name is still read.
#[test]
fn a_link_in_cells_is_not_followed() {
    let dir = lab_with_none("linked-cell", |_| ());
    let secret = tmp("linked-cell-secret.json");
    std::fs::write(&secret, "{\"schema\": \"SECRET-CONTENT\"}").unwrap();
    std::fs::set_permissions(
        &secret,
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o600),
    )
    .unwrap();
    let link = std::path::Path::new(&dir).join("cells/zz-link.json");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    let out = lsmpmon(&["report", &dir]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("zz-link.json is a symbolic link: not read"),
        "{err}"
    );
    assert!(!err.contains("SECRET"), "{err}");
    let skipped = lsmpmon(&["report", &dir, "--skip-invalid"]);
    assert!(!String::from_utf8_lossy(&skipped.stdout).contains("SECRET"));
    assert!(!String::from_utf8_lossy(&skipped.stderr).contains("SECRET"));
}

/// The fixture's cell of `config` as draw `draw` of configuration `name`,
/// its stat figures scaled by `factor`.
fn draw_cell(config: &str, name: &str, draw: u32, factor: f64) -> Value {
    let file = std::fs::read_dir(fixture("lab/cells"))
        .unwrap()
        .flatten()
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .contains(&format!("__{config}__"))
        })
        .unwrap();
    let mut v: Value = serde_json::from_slice(&std::fs::read(file.path()).unwrap()).unwrap();
    let id = format!("6.1-cloud__{name}__draw{draw}");
    v["id"] = id.clone().into();
    v["log_dir"] = format!("logs/{id}").into();
    v["config"]["name"] = name.into();
    let base = match draw {
        0 => "2000-01-01".to_string(),
        d => format!("2000-01-01T00:00:{d:02}"),
    };
    v["options"]["rtc"] = format!("clock=vm,base={base}").into();
    scale_stat(&mut v, factor);
    v
}

/// Draws (issue 33): a column of several draws is the median over them
/// with an interval; a real overhead is established, a difference inside
/// the baseline's own spread over its draws reads "layout noise", never a
/// bare percentage; a column of one draw keeps its plain figure.
#[test]
fn draws_give_table3_intervals_and_verdicts() {
    let dir = tmp("draws");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("cells")).unwrap();
    let put = |v: Value| {
        let path = dir
            .join("cells")
            .join(format!("{}.json", v["id"].as_str().unwrap()));
        std::fs::write(path, v.to_string()).unwrap();
    };
    let none = [1.0, 1.012, 0.994, 1.02, 1.003];
    let layout_only = [1.004, 1.0, 1.01, 0.998, 1.006];
    for d in 0..5 {
        put(draw_cell("none", "none", d as u32, none[d]));
        put(draw_cell("tomoyo", "tomoyo", d as u32, none[d]));
        put(draw_cell("none", "landlock", d as u32, layout_only[d]));
    }
    put(draw_cell("none", "apparmor", 0, 1.03));
    // A draw measured otherwise (another kernel package) is not pooled.
    let mut other = draw_cell("tomoyo", "tomoyo", 5, 3.0);
    other["kernel"]["deb_sha256"] = "another-package".into();
    put(other);
    // The same on another kernel: the Table 5 form reads the draws too.
    for d in 0..3 {
        for config in ["none", "tomoyo"] {
            let mut v = draw_cell(config, config, d, none[d as usize]);
            v["kernel"]["series"] = "6.12".into();
            v["kernel"]["deb_sha256"] = "0612".into();
            v["id"] = format!("6.12-cloud__{config}__draw{d}").into();
            v["log_dir"] = format!("logs/6.12-cloud__{config}__draw{d}").into();
            put(v);
        }
    }
    let dir = dir.display().to_string();
    let doc: Value =
        serde_json::from_str(&stdout_ok(&lsmpmon(&["report", &dir, "--format", "json"]))).unwrap();
    let t = form_table(&doc, "table3");
    let header: Vec<&str> = t["header"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    let row = t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == "stat (µs)")
        .unwrap();
    let cell = |config: &str| &row["cells"][header.iter().position(|h| *h == config).unwrap() - 1];
    let none_cell = cell("none");
    assert!(
        (none_cell["spread_pct"].as_f64().unwrap() - 2.616).abs() < 0.01,
        "{none_cell}"
    );
    let tomoyo = cell("tomoyo");
    assert_eq!(tomoyo["kind"], "drawn", "{tomoyo}");
    assert_eq!(tomoyo["draws"], 5);
    let c = &tomoyo["change"];
    assert_eq!(c["established"], true, "{c}");
    assert_eq!(c["interval"], "bootstrap95");
    let (lo, pct, hi) = (
        c["low_pct"].as_f64().unwrap(),
        c["pct"].as_f64().unwrap(),
        c["high_pct"].as_f64().unwrap(),
    );
    assert!(lo > 200.0 && lo <= pct && pct <= hi, "{c}");
    // The baseline's five draws spread 2.6 %: that is the floor.
    assert!(
        (c["floor_pct"].as_f64().unwrap() - 2.616).abs() < 0.01,
        "{c}"
    );
    let landlock = &cell("landlock")["change"];
    assert_eq!(landlock["established"], false, "{landlock}");
    assert!(landlock["low_pct"].as_f64().unwrap() < 0.0, "{landlock}");
    // One draw beside a drawn baseline is judged against the baseline's
    // draws: +3 % is beyond all five and the 2.6 % floor.
    let apparmor = cell("apparmor");
    assert_eq!(apparmor["draws"], 1, "{apparmor}");
    assert_eq!(apparmor["change"]["established"], true, "{apparmor}");
    let fp = form_table(&doc, "footprint");
    let fp_header: Vec<&str> = fp["header"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    let a_minus_b = fp["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == "A − B (KiB)")
        .unwrap();
    let tomoyo_fp = &a_minus_b["cells"][fp_header.iter().position(|h| *h == "tomoyo").unwrap() - 1];
    assert!(
        tomoyo_fp["mark"]
            .as_str()
            .is_some_and(|m| m.ends_with("5×5 draws")),
        "{tomoyo_fp}"
    );
    let t5 = forms_of(&doc, "table5")
        .into_iter()
        .find(|t| t["title"].as_str().unwrap().contains("tomoyo"))
        .expect("a Table 5 form of tomoyo");
    let on_6_12 = &t5["rows"][0]["cells"][1];
    assert_eq!(on_6_12["kind"], "drawn", "{on_6_12}");
    assert_eq!(on_6_12["draws"], 3);
    assert_eq!(on_6_12["change"]["interval"], "pair_range", "{on_6_12}");
    let text = stdout_ok(&lsmpmon(&["report", &dir]));
    assert!(text.contains("layout noise ["), "{text}");
    assert!(
        text.contains("Medians over layout draws (up to 5"),
        "{text}"
    );
}

/// Issue 33 item 8: nothing committed under results/ names a path of the
/// machine that made it (a home, a work tree, this checkout).
#[test]
fn no_committed_result_carries_a_machine_path() {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    walk(&root.join("results"), &mut files);
    assert!(files.len() > 100, "{} files", files.len());
    let checkout = root.display().to_string();
    let mut found = Vec::new();
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue; // binary (an image)
        };
        for needle in ["/root/", "/home/", "/work/", checkout.as_str()] {
            if let Some(i) = text.find(needle) {
                let end = text[i..]
                    .find(['"', ' ', '\n'])
                    .map_or(text.len(), |n| i + n);
                found.push(format!("{}: {}", f.display(), &text[i..end]));
                break;
            }
        }
    }
    assert!(
        found.is_empty(),
        "{} files, e.g. {:?}",
        found.len(),
        &found[..found.len().min(5)]
    );
}

/// Issue 33 item 6: the notes under the atlas's tables say what its cells
/// hold — the 5.10 kprobe cells carry a probe floor, and it is subtracted.
#[test]
fn the_atlas_notes_match_its_cells() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut floors = Vec::new();
    for e in std::fs::read_dir(root.join("results/atlas/cells"))
        .unwrap()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("5.10-") {
            continue;
        }
        let v: Value = serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap();
        let probe = &v["guest"]["trace"]["probe"];
        if probe["fallback"].is_string() {
            floors.push(
                probe["floor_ns"]
                    .as_f64()
                    .expect("a 5.10 kprobe cell with a floor"),
            );
        }
    }
    assert!(!floors.is_empty(), "the atlas has traced 5.10 cells");
    let out = Command::new(LSMPMON)
        .current_dir(root)
        .args(["report", "results/atlas", "--format", "json"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_str(&stdout_ok(&out)).unwrap();
    let t4 = forms_of(&doc, "table4")
        .into_iter()
        .find(|t| t["kernel"] == "5.10")
        .expect("a 5.10 Table 4");
    let notes = t4["notes"].to_string();
    for f in &floors {
        assert!(
            notes.contains(&format!("{f:.0}")),
            "floor {f} not in {notes}"
        );
    }
    assert!(
        !t4["title"].as_str().unwrap().contains("none for k"),
        "{}",
        t4["title"]
    );
    let all = doc["tables"].to_string();
    assert!(
        !all.contains("no probe floor"),
        "a note says no floor where the cells have one"
    );
    assert!(
        !all.contains("no floor:"),
        "a note says no floor where the cells have one"
    );
}

/// Table 4 says nothing that is not so (issue 33 item 6): no N/A where a
/// measured module has the hook but the trace could not attach to it (it
/// reads "not probed" with the reason: 6.12's Landlock `hook_file_open` is
/// not in that kernel's BTF), and on 7.3, where IMA is an LSM, the ima
/// column is IMA's own function, not the bare hook.
#[test]
fn table4_shows_no_false_not_applicable() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(LSMPMON)
        .current_dir(root)
        .args(["report", "results/atlas", "--format", "json"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_str(&stdout_ok(&out)).unwrap();
    // Every unmapped implementation of a measured module, per kernel and configuration.
    let mut unmapped: Vec<(String, String, String)> = Vec::new();
    for e in std::fs::read_dir(root.join("results/atlas/cells"))
        .unwrap()
        .flatten()
    {
        let v: Value = serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap();
        let Some(list) = v["guest"]["trace"]["probe"]["unmapped"].as_array() else {
            continue;
        };
        let series = v["kernel"]["series"].as_str().unwrap().to_string();
        for u in list {
            let label = u["hook"].as_str().unwrap();
            let config = v["config"]["name"].as_str().unwrap().to_string();
            unmapped.push((series.clone(), config, label.to_string()));
        }
    }
    let mut probed_landlock_file_open = false;
    for t4 in forms_of(&doc, "table4") {
        let kernel = t4["kernel"].as_str().unwrap();
        for row in t4["rows"].as_array().unwrap() {
            let hook = row["label"].as_str().unwrap();
            for (i, c) in row["cells"].as_array().unwrap().iter().enumerate() {
                let config = t4["header"][i + 1].as_str().unwrap();
                let why = c["why"].as_str().unwrap_or("");
                if why == "N/A" {
                    let found = unmapped.iter().any(|(k, cfg, label)| {
                        k == kernel
                            && cfg == config
                            && label.starts_with(&format!("{hook} ("))
                            && !label.ends_with("(capability)")
                    });
                    assert!(
                        !found,
                        "{kernel} {config} {hook}: N/A, but the module has it unprobed"
                    );
                }
                if kernel == "6.12" && config == "landlock" && hook == "file_open" {
                    assert!(
                        why.starts_with("not probed: hook_file_open is not in kernel BTF"),
                        "{c}"
                    );
                    probed_landlock_file_open = true;
                }
            }
        }
    }
    assert!(
        probed_landlock_file_open,
        "the 6.12 Table 4 has Landlock's file_open row"
    );
    let t4 = forms_of(&doc, "table4")
        .into_iter()
        .find(|t| t["kernel"] == "7.3")
        .unwrap();
    let col = column_of(t4, "ima");
    let row = t4["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == "file_open")
        .unwrap();
    let cell = &row["cells"][col];
    assert!(
        cell["mark"].is_null(),
        "7.3 ima file_open is IMA's own function, not the hook: {cell}"
    );
}

/// `compare` of lab cells with draws (issue 33 item 3): a change inside A's
/// own spread over its draws is within noise however exact each draw is; a
/// change beyond it, with an interval excluding 0, is slower.
#[test]
fn compare_judges_draws_against_the_layout_floor() {
    let side = |name: &str, tomoyo: f64, landlock: f64| {
        let dir = tmp(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("cells")).unwrap();
        let spread = [1.0, 1.012, 0.994, 1.02, 1.003];
        for d in 0..5u32 {
            let f = spread[d as usize];
            for v in [
                draw_cell("none", "none", d, f),
                draw_cell("tomoyo", "tomoyo", d, f * tomoyo),
                draw_cell("none", "landlock", d, f * landlock),
            ] {
                let path = dir
                    .join("cells")
                    .join(format!("{}.json", v["id"].as_str().unwrap()));
                std::fs::write(path, v.to_string()).unwrap();
            }
        }
        dir.display().to_string()
    };
    let (a, b) = (
        side("cmp-draws-a", 1.0, 1.0),
        side("cmp-draws-b", 1.008, 1.5),
    );
    let doc: Value = serde_json::from_str(&stdout_ok(&lsmpmon(&[
        "compare", &a, &b, "--format", "json",
    ])))
    .unwrap();
    let change = |run: &str| {
        doc["changes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["figure"] == "bench stat" && c["run"] == run)
            .unwrap_or_else(|| panic!("no {run}: {doc}"))
            .clone()
    };
    let tomoyo = change("tomoyo (5 vs 5 draws)");
    assert_eq!(tomoyo["verdict"], "within_noise", "{tomoyo}");
    assert!(
        tomoyo["test"]
            .as_str()
            .unwrap()
            .contains("layout floor 2.6 %"),
        "{tomoyo}"
    );
    let landlock = change("landlock (5 vs 5 draws)");
    assert_eq!(landlock["verdict"], "slower", "{landlock}");
}

/// Issue 33 item 2: the committed layout floor — `none` on 6.1, 6.12 and
/// 7.3, ten draws each, each draw its own clock — and its page is what
/// `report` prints of its cells; the spread it shows is the spread of the
/// cells (6.12's file deletes move most with the layout).
#[test]
fn the_committed_layout_floor_comes_from_its_cells() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut rtcs: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        Default::default();
    let mut delete_10k: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for e in std::fs::read_dir(root.join("results/layout-floor/cells"))
        .unwrap()
        .flatten()
    {
        let v: Value = serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap();
        let k = v["kernel"]["series"].as_str().unwrap().to_string();
        assert_eq!(v["status"], "passed");
        rtcs.entry(k.clone())
            .or_default()
            .insert(v["options"]["rtc"].as_str().unwrap().into());
        let m = v["guest"]["bench"]["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["op"] == "delete_10k")
            .unwrap()["median"]
            .as_f64()
            .unwrap();
        delete_10k.entry(k).or_default().push(m);
    }
    for k in ["5.10", "6.1", "6.12", "7.3", "6.1-smack"] {
        assert_eq!(rtcs[k].len(), 10, "{k}: ten draws, each its own clock");
    }
    let spread = |v: &[f64]| {
        let (lo, hi) = v
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
        (hi - lo) / lo * 100.0
    };
    let doc: Value = serde_json::from_str(&stdout_ok(
        &Command::new(LSMPMON)
            .current_dir(root)
            .args(["report", "results/layout-floor", "--format", "json"])
            .output()
            .unwrap(),
    ))
    .unwrap();
    for t in forms_of(&doc, "table3") {
        let k = t["kernel"].as_str().unwrap();
        let row = t["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["label"] == "delete_10k (µs)")
            .unwrap();
        let shown = row["cells"][0]["spread_pct"].as_f64().unwrap();
        assert!(
            (shown - spread(&delete_10k[k])).abs() < 1e-9,
            "{k}: {shown}"
        );
    }
    assert!(spread(&delete_10k["6.12"]) > 5.0 * spread(&delete_10k["6.1"]));
    let md = Command::new(LSMPMON)
        .current_dir(root)
        .args(["report", "results/layout-floor", "--format", "markdown"])
        .output()
        .unwrap();
    let committed = std::fs::read_to_string(root.join("results/layout-floor/README.md")).unwrap();
    assert!(
        stdout_ok(&md) == committed,
        "results/layout-floor/README.md is not what `lsmpmon report results/layout-floor` prints"
    );
}

/// `report --form` keeps only the tables of the forms asked for, in the
/// JSON and the Markdown alike; a form the results do not fill, or one
/// lsmpmon does not know, is a usage error in one line (exit 2).
#[test]
fn report_form_keeps_only_the_forms_asked_for() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let run = |args: &[&str]| {
        Command::new(LSMPMON)
            .current_dir(root)
            .args(["report", "results/layout-floor"])
            .args(args)
            .output()
            .unwrap()
    };
    let all: Value = serde_json::from_str(&stdout_ok(&run(&["--format", "json"]))).unwrap();
    let forms = |doc: &Value| -> std::collections::BTreeSet<String> {
        doc["tables"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["form"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(forms(&all).len() >= 2, "{:?}", forms(&all));
    let out = run(&["--format", "json", "--form", "footprint,table3"]);
    let some: Value = serde_json::from_str(&stdout_ok(&out)).unwrap();
    assert_eq!(
        forms(&some).into_iter().collect::<Vec<_>>(),
        ["footprint", "table3"]
    );
    let kept = |doc: &Value| doc["tables"].as_array().unwrap().len();
    let footprints_in_all = forms_of(&all, "footprint").len();
    let tables3_in_all = forms_of(&all, "table3").len();
    assert_eq!(kept(&some), footprints_in_all + tables3_in_all);
    let md = stdout_ok(&run(&["--format", "markdown", "--form", "footprint"]));
    assert!(
        md.contains("### Footprint") && !md.contains("### Table 3 form"),
        "{md}"
    );
    for (bad, says) in [
        ("webstone", "fill no webstone table"),
        ("table9", "invalid value 'table9'"),
    ] {
        let out = run(&["--form", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(common::one_error_line(&out).contains(says), "{bad}");
    }
}

/// What one `<!-- lsmpmon report ARGS | HEADING -->` … `<!-- end -->`
/// block of a document should hold: the Markdown sections lsmpmon prints for
/// ARGS whose `### ` heading starts with HEADING (every section without one).
fn generated_block(spec: &str) -> String {
    let (args, heading) = match spec.split_once(" | ") {
        Some((a, h)) => (a, Some(h)),
        None => (spec, None),
    };
    let words: Vec<&str> = args.split_whitespace().collect();
    assert_eq!(words[..2], ["lsmpmon", "report"], "{spec}");
    let out = Command::new(LSMPMON)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(&words[1..])
        .args(["--format", "markdown"])
        .output()
        .unwrap();
    let md = stdout_ok(&out);
    let mut keep = String::new();
    for section in md.split("\n### ").skip(1) {
        if heading.is_none_or(|h| section.starts_with(h)) {
            keep += "### ";
            keep += section.trim_end();
            keep += "\n\n";
        }
    }
    assert!(!keep.is_empty(), "{spec}: no such section");
    keep.trim_end().to_string() + "\n"
}

/// Issue 35: figures in the README, docs/ and BENCHMARKS that come from
/// committed results are lsmpmon's output, never typed by hand: each such
/// block is what `lsmpmon report` prints of the committed cells now
/// (LSMPMON_BLESS=1 rewrites the blocks).
#[test]
fn generated_figures_in_the_docs_are_what_lsmpmon_prints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs = vec![root.join("README.md"), root.join("BENCHMARKS.md")];
    for e in std::fs::read_dir(root.join("docs")).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "md") {
            docs.push(e.path());
        }
    }
    let mut blocks = 0;
    for doc in docs {
        let text = std::fs::read_to_string(&doc).unwrap();
        let mut out = String::new();
        let mut rest = text.as_str();
        while let Some(i) = rest.find("<!-- lsmpmon report ") {
            let open_end = i + rest[i..].find(" -->\n").expect("a closed comment") + 5;
            let spec = &rest[i + 5..open_end - 5];
            let close = open_end + rest[open_end..].find("<!-- end -->").expect("an end");
            let want = generated_block(spec);
            if rest[open_end..close] != want && std::env::var_os("LSMPMON_BLESS").is_none() {
                panic!(
                    "{}: the block `{spec}` is not what lsmpmon prints of the committed results (LSMPMON_BLESS=1 rewrites it):\n{want}",
                    doc.display()
                );
            }
            out += &rest[..open_end];
            out += &want;
            rest = &rest[close..];
            blocks += 1;
        }
        out += rest;
        if out != text {
            std::fs::write(&doc, out).unwrap();
        }
    }
    assert!(
        blocks >= 2,
        "the README's result and the atlas in BENCHMARKS.md are generated"
    );
}

/// results/whole-hook-6.1 (none, selinux-mini and bpf-lsm on 6.1, three
/// draws, the first traced op by op with the hooks recorded): the identity
/// counts the whole hook. The BPF LSM's cost on stat is the framework
/// calling its stubs — in the security_* functions, not in any module
/// function — so the modules alone explain almost none of it and the whole
/// hooks about half or more; SELinux's stat and open_close are explained
/// within ×0.5 … ×1.5 by both, the modules being a part of the whole.
#[test]
fn the_identity_counts_the_whole_hook_on_the_committed_cells() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(LSMPMON)
        .current_dir(root)
        .args(["report", "results/whole-hook-6.1", "--form", "account"])
        .args(["--format", "json"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_str(&stdout_ok(&out)).unwrap();
    let table = &report["tables"][0];
    let column = |config: &str| {
        table["header"]
            .as_array()
            .unwrap()
            .iter()
            .position(|h| h == config)
            .unwrap()
            - 1
    };
    let cell = |op: &str, config: &str| -> (f64, f64, f64) {
        let row = table["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["label"].as_str().unwrap().starts_with(&format!("{op} ")))
            .unwrap();
        let c = &row["cells"][column(config)];
        assert_eq!(c["kind"], "explained", "{op} {config}: {c}");
        assert_eq!(c["established"], true, "{op} {config}: {c}");
        let f = |k: &str| c[k].as_f64().unwrap();
        (f("explained_ns"), f("modules_ns"), f("overhead_ns"))
    };
    let (hooks, modules, overhead) = cell("stat", "bpf-lsm");
    assert!(modules / overhead < 0.05, "{modules} of {overhead}");
    assert!(
        (0.5..=1.5).contains(&(hooks / overhead)),
        "{hooks} of {overhead}"
    );
    for op in ["stat", "open_close"] {
        let (hooks, modules, overhead) = cell(op, "selinux-mini");
        assert!(
            (0.5..=1.5).contains(&(hooks / overhead)),
            "{op}: {hooks} of {overhead}"
        );
        assert!(
            modules > 0.5 * hooks && modules <= hooks,
            "{op}: {modules} of {hooks}"
        );
    }
    let committed = std::fs::read_to_string(root.join("results/whole-hook-6.1/README.md")).unwrap();
    let md = Command::new(LSMPMON)
        .current_dir(root)
        .args(["report", "results/whole-hook-6.1", "--format", "markdown"])
        .output()
        .unwrap();
    assert!(
        stdout_ok(&md) == committed,
        "results/whole-hook-6.1/README.md is not what `lsmpmon report results/whole-hook-6.1` prints"
    );
}

/// One draw a side (the main job): each change is judged against the
/// kernel's committed layout floor for the op, never printed bare; where
/// no floor is committed for the kernel, no change is shown at all.
#[test]
fn one_draw_a_side_is_judged_against_the_committed_floor() {
    let dir = tmp("one-draw");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("cells")).unwrap();
    let put = |v: Value| {
        let path = dir
            .join("cells")
            .join(format!("{}.json", v["id"].as_str().unwrap()));
        std::fs::write(path, v.to_string()).unwrap();
    };
    // 6.1's committed floor for stat (raised to virtual time's 0.5 % where
    // the draws spread less): +12 % is beyond it, +0.3 % is not.
    put(draw_cell("none", "none", 0, 1.0));
    put(draw_cell("none", "slow", 0, 1.12));
    put(draw_cell("none", "slight", 0, 1.003));
    // A kernel the committed floor does not know.
    for (name, factor) in [("none", 1.0), ("slow", 1.12)] {
        let mut v = draw_cell("none", name, 0, factor);
        v["kernel"]["series"] = "5.4".into();
        v["kernel"]["deb_sha256"] = "0504".into();
        v["id"] = format!("5.4-cloud__{name}__draw0").into();
        v["log_dir"] = format!("logs/5.4-cloud__{name}__draw0").into();
        put(v);
    }
    let d = dir.display().to_string();
    let doc: Value =
        serde_json::from_str(&stdout_ok(&lsmpmon(&["report", &d, "--format", "json"]))).unwrap();
    let stat = |kernel: &str, config: &str| -> Value {
        let t = forms_of(&doc, "table3")
            .into_iter()
            .find(|t| {
                t["title"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("kernel {kernel}"))
            })
            .unwrap();
        let header: Vec<&str> = t["header"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h.as_str().unwrap())
            .collect();
        let row = t["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["label"] == "stat (µs)")
            .unwrap();
        row["cells"][header.iter().position(|h| *h == config).unwrap() - 1].clone()
    };
    let slow = stat("6.1", "slow");
    let c = &slow["change"];
    assert_eq!(c["interval"], "reference_floor", "{slow}");
    assert_eq!(c["established"], true, "{slow}");
    let floor = c["floor_pct"].as_f64().unwrap();
    assert!((0.5..12.0).contains(&floor), "{c}");
    let (lo, pct) = (c["low_pct"].as_f64().unwrap(), c["pct"].as_f64().unwrap());
    assert!(
        (pct - 12.0).abs() < 0.01 && (lo - (pct - floor)).abs() < 1e-6,
        "{c}"
    );
    let slight = stat("6.1", "slight");
    assert_eq!(slight["change"]["established"], false, "{slight}");
    // No floor for 5.4: the figure alone.
    let unknown = stat("5.4", "slow");
    assert_eq!(unknown["kind"], "drawn", "{unknown}");
    assert!(unknown["change"].is_null(), "{unknown}");
    // The text form never prints a bare signed percentage for them.
    let text = stdout_ok(&lsmpmon(&["report", &d, "--form", "table3"]));
    let slight_line = text.lines().find(|l| l.contains("stat")).unwrap();
    assert!(!slight_line.contains("(+0.3 %)"), "{text}");
    assert!(
        text.contains("layout noise") || text.contains("within layout floor"),
        "{text}"
    );
}

/// results/floor.json is what `report --make-floor` makes from the
/// committed cells it names: a floor nobody can make again is not a floor.
#[test]
fn the_committed_floor_is_what_the_committed_draws_give() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let committed: Value =
        serde_json::from_slice(&std::fs::read(root.join("results/floor.json")).unwrap()).unwrap();
    let from: Vec<String> = committed["made_from"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| root.join(p.as_str().unwrap()).display().to_string())
        .collect();
    assert!(!from.is_empty());
    let mut args = vec!["report", "--make-floor"];
    args.extend(from.iter().map(String::as_str));
    let mut made: Value = serde_json::from_str(&stdout_ok(&lsmpmon(&args))).unwrap();
    made["made_from"] = committed["made_from"].clone();
    assert_eq!(made, committed);
    // Every kernel of the atlas has a floor for stat from five draws or more.
    for series in ["5.10", "6.1", "6.12", "7.3"] {
        let f = committed["floors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["series"] == series && f["op"] == "stat" && f["flavour"] == "cloud")
            .unwrap_or_else(|| panic!("no stat floor for {series}"));
        assert!(f["draws"].as_u64().unwrap() >= 5, "{f}");
    }
    // The Debian kernels' floors are what the rule asks: settled draws of
    // `none` (and its twins) only, ten or more, across three builds or more,
    // with the rule's false-positive rate measured on them. A cell that
    // another build ran again (the same draw index) is one more draw, not a
    // replacement.
    for series in ["5.10", "6.1", "6.12", "7.3"] {
        let floors: Vec<&Value> = committed["floors"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["series"] == series && f["flavour"] == "cloud" && f["cpus"] == 1)
            .collect();
        assert_eq!(floors.len(), 22, "{series}: every paper op");
        for f in floors {
            assert_eq!(f["settled"], true, "{f}");
            assert!(f["builds"].as_u64().unwrap() >= 3, "{f}");
            assert!(f["draws"].as_u64().unwrap() >= 12, "{f}");
        }
        let rate = committed["error_rates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["series"] == series && r["flavour"] == "cloud")
            .unwrap_or_else(|| panic!("no error rate for {series}"));
        // Every ordered pair of every op's draws was judged (22 ops × at
        // least 12 × 11 pairs).
        assert!(
            rate["comparisons"].as_u64().unwrap() >= 22 * 12 * 11,
            "{rate}"
        );
    }
}

/// Issue 52 item 3: eight copies of one run a side are one run a side —
/// no verdict, `--fail-on-slower` passes — and the copies left out are said.
#[test]
fn compare_counts_copies_of_one_run_once() {
    let side = |name: &str, mean: f64| {
        let d = tmp(name);
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        bench_at(&normal(7, 11, mean), &d.join("0.json"));
        for i in 1..8 {
            std::fs::copy(d.join("0.json"), d.join(format!("{i}.json"))).unwrap();
        }
        d.display().to_string()
    };
    let (a, b) = (side("copies-a", 1000.0), side("copies-b", 1300.0));
    for c in compare_json(&a, &b) {
        assert_eq!(c["verdict"], "cannot_tell", "{c}");
        assert!(
            c["test"].as_str().unwrap().starts_with("one run a side"),
            "{c}"
        );
    }
    let out = lsmpmon(&["compare", &a, &b, "--fail-on-slower"]);
    assert_eq!(out.status.code(), Some(0), "one run a side is no gate");
    let err = String::from_utf8_lossy(&out.stderr);
    for side in ["A", "B"] {
        assert!(
            err.contains(&format!("lsmpmon: {side}: 7 identical copies")),
            "{err}"
        );
    }
}

/// The lab fixture copied with `edit` applied to every cell.
fn lab_all(name: &str, edit: impl Fn(&mut Value)) -> String {
    let dir = lab_with_cell(name, "", |_| {});
    for e in std::fs::read_dir(Path::new(&dir).join("cells")).unwrap() {
        let p = e.unwrap().path();
        let mut v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        edit(&mut v);
        std::fs::write(&p, v.to_string()).unwrap();
    }
    dir
}

/// Issue 52 item 7: a merge that kept one of two disagreeing runs says so
/// wherever its results are read; `compare` of two lsmpmon builds warns in
/// one line, as `lab merge` refuses them.
#[test]
fn a_disagreeing_merge_and_two_builds_are_said() {
    let merged = lab_all("merged-disagreeing", |_| {});
    let record = serde_json::json!({
        "schema": "lsmpmon.lab-merge/1",
        "inputs": ["x", "y"],
        "cells": 3,
        "forced": [],
        "disagreements": ["6.1 tomoyo (1 CPU): x.json and y.json differ: stat median 10 vs 12 (beyond 0.5 %)"],
        "superseded": ["y.json"],
    });
    std::fs::write(Path::new(&merged).join("merge.json"), record.to_string()).unwrap();
    let out = lsmpmon(&["report", &merged, "--format", "markdown"]);
    let page = stdout_ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    for text in [page.as_str(), &err] {
        assert!(
            text.contains("merged from runs that disagree")
                && text.contains("stat median 10 vs 12"),
            "{text}"
        );
    }
    let out = lsmpmon(&["compare", &lab(), &merged]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("B: WARNING: ")
            && String::from_utf8_lossy(&out.stderr).contains("merged from runs that disagree"),
        "{out:?}"
    );

    let other = lab_all("other-build", |v| {
        v["lsmpmon_commit"] = "b".repeat(40).into();
    });
    let out = lsmpmon(&["compare", &lab(), &other]);
    stdout_ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    let warned: Vec<&str> = err.lines().filter(|l| l.contains("builds")).collect();
    assert_eq!(warned.len(), 1, "{err}");
    assert!(
        warned[0].contains("different lsmpmon builds") && warned[0].contains(&"b".repeat(12)),
        "{err}"
    );
    let same = lsmpmon(&["compare", &lab(), &lab()]);
    assert!(!String::from_utf8_lossy(&same.stderr).contains("builds"));
}

/// Issue 52 item 12: the account form of the committed atlas gives no
/// ratio of a negative or unestablished overhead and no negative zero, in
/// any format (a chart's axis included).
#[test]
fn the_account_form_of_the_atlas_has_no_negative_zero_nor_ratio_of_noise() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let run = |format: &str| {
        let out = Command::new(LSMPMON)
            .current_dir(root)
            .args(["report", "results/atlas", "--form", "account"])
            .args(["--format", format])
            .output()
            .unwrap();
        stdout_ok(&out)
    };
    let doc: Value = serde_json::from_str(&run("json")).unwrap();
    let mut explained = 0;
    for t in doc["tables"].as_array().unwrap() {
        for r in t["rows"].as_array().unwrap() {
            for c in r["cells"].as_array().unwrap() {
                for k in ["explained_ns", "modules_ns", "overhead_ns", "value"] {
                    if let Some(x) = c[k].as_f64() {
                        assert!(!(x == 0.0 && x.is_sign_negative()), "{k} -0: {c}");
                    }
                }
                explained += usize::from(c["kind"] == "explained");
            }
        }
    }
    assert!(explained > 100, "{explained} explained cells");
    let text = run("text");
    for line in text.lines() {
        for cell in line.split('┆') {
            assert!(
                !cell.contains("×-"),
                "a ratio of a negative overhead: {cell}"
            );
            assert!(
                !(cell.contains('×') && cell.contains("not established")),
                "{cell}"
            );
            assert!(!cell.contains(" of -"), "{cell}");
        }
    }
    let html = run("html");
    assert!(
        !html.contains("\n-0.0\n") && !html.contains(">-0.0<"),
        "an axis tick -0.0"
    );
}

/// Issue 52 item 17: a results directory whose cells/ is a link (to /etc,
/// say) is not read through it.
#[test]
fn report_does_not_follow_a_linked_cells_directory() {
    let dir = tmp("linked-cells");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(fixture("lab/cells"), dir.join("cells")).unwrap();
    let out = lsmpmon(&["report", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let line = common::one_error_line(&out);
    assert!(line.contains("cells is a symbolic link"), "{line}");
}

/// Issue 52 item 21: `--syscalls` names no trace recorded are refused with
/// the names the traces did record.
#[test]
fn report_refuses_syscalls_no_trace_recorded() {
    let trace = fixture("trace-6.1.json").display().to_string();
    let out = lsmpmon(&["report", &trace, "--syscalls", "openat,nosuch,alsonot"]);
    assert_eq!(out.status.code(), Some(2));
    let line = common::one_error_line(&out);
    assert!(
        line.contains("--syscalls nosuch,alsonot:") && line.contains("openat, read, readlink"),
        "{line}"
    );
    stdout_ok(&lsmpmon(&["report", &trace, "--syscalls", "openat"]));
}

/// Issue 52 item 16: a clock of a draw's form beyond the draws, and a cell
/// with no guest CPU, are refused; a cell whose clock is not a draw's
/// (`clock=host`) counting as draw 0 in place of the real one is said, and
/// so are figures that differ between two runs of one draw.
#[test]
fn clocks_that_are_not_draws_and_differing_runs_of_a_draw_are_said() {
    let dir = tmp("not-a-draw");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("cells")).unwrap();
    let put = |v: &Value| {
        let path = dir
            .join("cells")
            .join(format!("{}.json", v["id"].as_str().unwrap()));
        std::fs::write(path, v.to_string()).unwrap();
    };
    put(&draw_cell("none", "none", 0, 1.0));
    put(&draw_cell("tomoyo", "tomoyo", 0, 1.0));
    let mut host = draw_cell("tomoyo", "tomoyo", 0, 1.1);
    host["id"] = "6.1-cloud__tomoyo__hostclock".into();
    host["log_dir"] = "logs/6.1-cloud__tomoyo__hostclock".into();
    host["options"]["rtc"] = "clock=host".into();
    host["started_unix_s"] = (host["started_unix_s"].as_u64().unwrap() + 10).into();
    put(&host);
    let d = dir.display().to_string();
    let out = lsmpmon(&["report", &d]);
    stdout_ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err
        .lines()
        .find(|l| l.contains("superseded by") && l.contains("hostclock"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        line.contains("their figures differ (stat median")
            && line.contains("guest clock \"clock=host\" is not a layout draw's"),
        "{line}"
    );

    type Edit<'a> = (&'a str, &'a dyn Fn(&mut Value));
    let edits: [Edit; 2] = [
        ("draw65", &|v| {
            v["options"]["rtc"] = "clock=vm,base=2000-01-01T00:01:05".into()
        }),
        ("nocpu", &|v| v["options"]["cpus"] = 0.into()),
    ];
    for (name, edit) in edits {
        let mut v = draw_cell("none", "none", 0, 1.0);
        edit(&mut v);
        v["id"] = name.into();
        v["log_dir"] = format!("logs/{name}").into();
        put(&v);
        let out = lsmpmon(&["report", &d]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        let line = common::one_error_line(&out);
        assert!(
            line.contains("not one of lsmpmon's layout draws (0 to 64)")
                || line.contains("options.cpus 0: a guest has at least one CPU"),
            "{line}"
        );
        std::fs::remove_file(dir.join("cells").join(format!("{name}.json"))).unwrap();
    }
}

/// Issue 52 item 21: the run column counts the draws; a figure only some
/// draws have (hooks: only the traced draw) says how many have it rather
/// than "fewer than 2 draws a side" beside "3 vs 3 draws".
#[test]
fn compare_says_how_many_draws_have_a_figure() {
    let side = |name: &str| {
        let dir = tmp(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("cells")).unwrap();
        for d in 0..3u32 {
            let mut v = draw_cell("tomoyo", "tomoyo", d, 1.0);
            if d > 0 {
                v["guest"]["trace"] = Value::Null;
                v["guest"]["traced_bench"] = Value::Null;
                v["guest"]["op_calls"] = Value::Null;
            }
            let path = dir
                .join("cells")
                .join(format!("{}.json", v["id"].as_str().unwrap()));
            std::fs::write(path, v.to_string()).unwrap();
        }
        dir.display().to_string()
    };
    let changes = compare_json(&side("cmp-traced-a"), &side("cmp-traced-b"));
    let hook = changes
        .iter()
        .find(|c| c["figure"].as_str().unwrap().starts_with("hook "))
        .unwrap_or_else(|| panic!("{changes:?}"));
    assert_eq!(hook["run"], "tomoyo (3 vs 3 draws)", "{hook}");
    assert_eq!(
        hook["test"],
        "1 vs 1 draws have this figure: A needs 2 or more to judge against"
    );
}
