//! `lsmpmon bench`: every op runs in a short mode with its proof of work,
//! relations between ops hold, JSON follows the schema, --compare computes and
//! refuses correctly, errors are one clear line.
mod common;
use common::*;
use std::process::{Command, Output};

fn bench(args: &[&str]) -> Output {
    Command::new(LSMPMON)
        .arg("bench")
        .args(args)
        .output()
        .unwrap()
}

/// Short mode: 3 samples of 2 ms.
fn quick(ops: &str, extra: &[&str]) -> Output {
    let mut args = vec!["--ops", ops, "--samples", "3", "--sample-ms", "2"];
    args.extend_from_slice(extra);
    bench(&args)
}

fn tmpdir(name: &str) -> String {
    format!(
        "{}/bench-{name}-{}",
        env!("CARGO_TARGET_TMPDIR"),
        std::process::id()
    )
}

fn median(r: &serde_json::Value, op: &str) -> f64 {
    r["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == op)
        .unwrap_or_else(|| panic!("{op} missing"))["median"]
        .as_f64()
        .unwrap()
}

/// Every op of the lmbench group, short mode, on the host.
#[test]
fn every_op_runs_with_proof_and_sane_figures() {
    let dir = tmpdir("all");
    let out = quick("lmbench", &["--json", "--dir", &dir]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "bench failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    validate("bench.schema.json", &text);
    let r = json(&text);
    let results = r["results"].as_array().unwrap();
    assert!(results.len() >= 36, "{} ops", results.len());
    for o in results {
        let (m, unit) = (o["median"].as_f64().unwrap(), o["unit"].as_str().unwrap());
        let op = o["op"].as_str().unwrap();
        // Bounds: nothing is free, nothing takes a second per op.
        match unit {
            "ns/op" => assert!((1.0..1e9).contains(&m), "{op}: {m} ns/op"),
            _ => assert!((1.0..1e6).contains(&m), "{op}: {m} MB/s"),
        }
        assert_eq!(o["samples"].as_array().unwrap().len(), 3);
        assert!(o["proof_ops"].as_u64().unwrap() >= 3 * o["iterations"].as_u64().unwrap());
    }
    assert!(
        !std::path::Path::new(&dir).exists(),
        "work directory removed"
    );
}

#[test]
fn compare_prints_overheads_and_refuses_other_machines() {
    let dir = tmpdir("cmp");
    let base = quick("null,stat", &["--json", "--dir", &dir]);
    assert!(base.status.success());
    let base_path = format!("{dir}.json");
    // A baseline whose medians are known: twice the real ones -> about -50 %.
    let mut b = json(&String::from_utf8(base.stdout).unwrap());
    for o in b["results"].as_array_mut().unwrap() {
        let m = o["median"].as_f64().unwrap();
        o["median"] = (m * 2.0).into();
        o["spread_pct"] = 0.0.into();
    }
    std::fs::write(&base_path, serde_json::to_string(&b).unwrap()).unwrap();
    let out = quick("null,stat", &["--dir", &dir, "--compare", &base_path]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = text
        .lines()
        .rfind(|l| l.starts_with("null ") && l.contains('%'))
        .expect("null row (the comparison comes after the table)");
    // "null  ns/op  BASE  NOW (PCT %)": PCT must be (NOW - BASE) / BASE.
    let nums: Vec<f64> = line
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == '%')
        .filter_map(|w| w.parse().ok())
        .collect();
    let [base_v, now_v, pct] = nums[..] else {
        panic!("cannot read {line}")
    };
    let expected = (now_v - base_v) / base_v * 100.0;
    assert!(
        (pct - expected).abs() < 0.1,
        "{line}: expected {expected:.1}"
    );

    // Another kernel: refused with exit 2, accepted and flagged with --force.
    b["provenance"]["kernel_release"] = "0.0.0-other".into();
    std::fs::write(&base_path, serde_json::to_string(&b).unwrap()).unwrap();
    let against_base = [
        "--ops",
        "null",
        "--samples",
        "2",
        "--sample-ms",
        "1",
        "--dir",
        &dir,
        "--compare",
        &base_path,
    ];
    let refused = bench(&against_base);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("kernel_release"));
    let forced = bench(&[&against_base[..], &["--force"]].concat());
    assert!(forced.status.success());
    assert!(
        String::from_utf8_lossy(&forced.stdout).contains("WARNING: baseline measured elsewhere")
    );
    std::fs::remove_file(&base_path).unwrap();
}

#[test]
fn landlock_run_is_enforced_and_recorded() {
    let dir = tmpdir("ll");
    let out = bench(&[
        "--ops",
        "stat,open_close,create_0k",
        "--samples",
        "2",
        "--sample-ms",
        "1",
        "--landlock",
        "--json",
        "--dir",
        &dir,
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    validate("bench.schema.json", &text);
    let r = json(&text);
    assert!(r["landlock"]["abi"].as_u64().unwrap() >= 1);
    assert!(r["landlock"]["proof"]
        .as_str()
        .unwrap()
        .contains("denied (EACCES)"));
}

#[test]
fn errors_are_one_line_with_exit_2() {
    let cases: [(&[&str], &str); 3] = [
        (&["--ops", "nosuch"], "unknown operation or group 'nosuch'"),
        (
            &["--ops", "null", "--dir", "/proc/lsmpmon-no"],
            "cannot create work directory",
        ),
        (
            &["--ops", "null", "--compare", "/nonexistent.json"],
            "cannot read baseline",
        ),
    ];
    for (args, want) in cases {
        let out = bench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let line = one_error_line(&out);
        assert!(line.contains(want), "{line}");
    }
    let bad = format!("{}/bad.json", env!("CARGO_TARGET_TMPDIR"));
    std::fs::write(&bad, "{not json").unwrap();
    let out = bench(&["--ops", "null", "--compare", &bad]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not valid JSON"));
}

/// The same static binary in a guest: deterministic virtual time.
#[test]
fn paper_ops_in_a_6_1_guest() {
    let text = guest_stdout(
        "6.1",
        "lsmpmon bench --ops paper,fork_exit,fork_exec,fork_sh --samples 3 --sample-ms 2 --json",
    );
    validate("bench.schema.json", &text);
    let r = json(&text);
    assert_eq!(r["provenance"]["time"], "virtual");
    assert_eq!(r["results"].as_array().unwrap().len(), 19);
    // Virtual time: a syscall loop repeats closely even in short samples.
    let null = r["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "null")
        .unwrap();
    assert!(null["cov_pct"].as_f64().unwrap() < 2.0, "{null}");
    // Relations that must hold (checked where time is deterministic).
    assert!(median(&r, "create_10k") >= median(&r, "create_0k"));
    assert!(median(&r, "delete_10k") >= median(&r, "delete_0k"));
    assert!(median(&r, "fork_exec") >= median(&r, "fork_exit"));
    assert!(median(&r, "fork_sh") >= median(&r, "fork_exec"));
    assert!(median(&r, "open_close") >= median(&r, "stat"));
    assert!(median(&r, "stat") >= median(&r, "null"));
    assert!(median(&r, "tcp") >= median(&r, "pipe"));
}
