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

fn result<'a>(r: &'a serde_json::Value, op: &str) -> &'a serde_json::Value {
    r["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == op)
        .unwrap_or_else(|| panic!("{op} missing"))
}

fn median(r: &serde_json::Value, op: &str) -> f64 {
    result(r, op)["median"].as_f64().unwrap()
}

/// Every op of the lmbench group, short mode, on the host.
#[test]
fn every_op_runs_with_proof_and_sane_figures() {
    let dir = tmpdir("all");
    let out = quick("lmbench", &["--json", "--dir", &dir]);
    let text = succeeded(&out);
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

/// The comparison row of `op`: (baseline, now, overhead %, its mark).
fn compare_row(text: &str, op: &str) -> (f64, f64, f64, &'static str) {
    let line = text
        .lines()
        .rfind(|l| l.starts_with(&format!("{op} ")) && l.contains('%'))
        .unwrap_or_else(|| panic!("no {op} row (the comparison comes after the table): {text}"));
    let nums: Vec<f64> = line
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == '%')
        .filter_map(|w| w.parse().ok())
        .collect();
    let [base, now, pct] = nums[..] else {
        panic!("cannot read {line}")
    };
    let mark = ["~noise", "cannot tell", "slower", "faster"]
        .into_iter()
        .find(|m| line.contains(m))
        .unwrap_or_else(|| panic!("no mark in {line}"));
    (base, now, pct, mark)
}

#[test]
fn compare_shows_the_planted_change() {
    let dir = tmpdir("cmp");
    // Five samples a side: the fewest with which a rank test can say p < 0.01.
    let five = |extra: &[&str]| {
        let mut args = vec!["--ops", "null,stat", "--samples", "5", "--sample-ms", "2"];
        args.extend_from_slice(extra);
        bench(&args)
    };
    let base = five(&["--json", "--dir", &dir]);
    assert!(base.status.success());
    let base_path = format!("{dir}.json");
    // Planted: null's baseline 1000x slower than measured (about -99.9 % now),
    // stat's 1000x faster (about +99 900 %), samples and median. The change
    // is computed, but one run a side in real time cannot tell a change from
    // drift between runs: marked so, never slower or faster.
    let mut b = json(&String::from_utf8(base.stdout).unwrap());
    let mut planted = std::collections::HashMap::new();
    for o in b["results"].as_array_mut().unwrap() {
        let m = o["median"].as_f64().unwrap();
        let v = if o["op"] == "null" {
            m * 1000.0
        } else {
            m / 1000.0
        };
        planted.insert(o["op"].as_str().unwrap().to_string(), v);
        let scale = v / m;
        let samples: Vec<f64> = o["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() * scale)
            .collect();
        o["samples"] = samples.into();
        o["median"] = v.into();
        for k in ["min", "max", "mean"] {
            o[k] = (o[k].as_f64().unwrap() * scale).into();
        }
        o["spread_pct"] = 0.0.into();
    }
    std::fs::write(&base_path, serde_json::to_string(&b).unwrap()).unwrap();
    let out = five(&["--dir", &dir, "--compare", &base_path]);
    let text = succeeded(&out);
    let (base_v, _, pct, mark) = compare_row(&text, "null");
    assert!(
        (base_v - planted["null"]).abs() < 0.01,
        "baseline column is the planted value"
    );
    assert!(
        // Printed to whole percents at this size: -99.96 % reads -100.
        (-100.0..=-99.0).contains(&pct) && mark == "cannot tell",
        "null: {pct} % (planted about -99.9 %)"
    );
    let (base_v, _, pct, mark) = compare_row(&text, "stat");
    assert!((base_v - planted["stat"]).abs() < 0.01);
    assert!(
        // Up to 10x the baseline's run on a host loaded by other tests.
        (30_000.0..=1_000_000.0).contains(&pct) && mark == "cannot tell",
        "stat: {pct} % (planted about +99 900 %)"
    );
    assert!(
        text.contains("one run a side; within-run p=") && text.contains("lsmpmon compare A B"),
        "the reason and the way out: {text}"
    );
    std::fs::remove_file(&base_path).unwrap();
}

#[test]
fn compare_refuses_other_machines_before_running() {
    let dir = tmpdir("cmp-other");
    let base = quick("null", &["--json", "--dir", &dir]);
    assert!(base.status.success());
    let base_path = format!("{dir}.json");
    let mut b = json(&String::from_utf8(base.stdout).unwrap());
    let pristine = b.clone();
    // Another kernel: refused with exit 2 before anything runs, flagged with --force.
    b["provenance"]["kernel_release"] = "0.0.0-other".into();
    std::fs::write(&base_path, serde_json::to_string(&b).unwrap()).unwrap();
    // `ops` against the baseline, short.
    let (dir_arg, base_arg) = (dir.as_str(), base_path.as_str());
    let against = move |ops: &'static str, samples: &'static str| {
        [
            "--ops",
            ops,
            "--samples",
            samples,
            "--sample-ms",
            "1",
            "--dir",
            dir_arg,
            "--compare",
            base_arg,
        ]
    };
    let against_base = against("null", "2");
    let refused = bench(&against_base);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        one_error_line(&refused).contains("kernel_release"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("bench: calibrating"),
        "refused before running: {stderr}"
    );
    assert!(refused.stdout.is_empty());
    let forced = bench(&[&against_base[..], &["--force"]].concat());
    assert!(forced.status.success());
    assert!(
        String::from_utf8_lossy(&forced.stdout).contains("WARNING: baseline measured elsewhere")
    );
    // A work directory of another length: path-based modules would cost
    // otherwise, so it is refused before running too.
    let mut longer = pristine;
    longer["options"]["dir_path"]["bytes"] = (dir.len() + 3).into();
    let longer_path = format!("{dir}-longer.json");
    std::fs::write(&longer_path, serde_json::to_string(&longer).unwrap()).unwrap();
    let refused = bench(&["--ops", "null", "--dir", &dir, "--compare", &longer_path]);
    assert_eq!(refused.status.code(), Some(2));
    let want = format!("bench directory: {} bytes, depth", dir.len() + 3);
    assert!(
        one_error_line(&refused).contains(&want),
        "{}",
        one_error_line(&refused)
    );
    assert!(!String::from_utf8_lossy(&refused.stderr).contains("bench: calibrating"));
    std::fs::remove_file(&longer_path).unwrap();
    // Not a bench result at all: refused before running.
    let mut other = b.clone();
    other["schema"] = "lsmpmon.trace/1".into();
    let other_path = format!("{dir}-schema.json");
    std::fs::write(&other_path, serde_json::to_string(&other).unwrap()).unwrap();
    let wrong = bench(&["--ops", "null", "--dir", &dir, "--compare", &other_path]);
    assert_eq!(wrong.status.code(), Some(2));
    assert!(one_error_line(&wrong).contains("not an lsmpmon bench result"));
    assert!(!String::from_utf8_lossy(&wrong.stderr).contains("bench: calibrating"));
    std::fs::remove_file(&other_path).unwrap();
    // No op in common: nothing to compare, refused before running.
    let none = bench(&[&against("stat", "1")[..], &["--force"]].concat());
    assert_eq!(none.status.code(), Some(2));
    assert!(one_error_line(&none).contains("none of the selected ops"));
    assert!(!String::from_utf8_lossy(&none.stderr).contains("bench: calibrating"));
    std::fs::remove_file(&base_path).unwrap();
}

#[test]
fn landlock_run_is_enforced_and_recorded() {
    let dir = tmpdir("ll");
    let out = bench(&[
        "--ops",
        // fork_exit: its helper, lsmpmon-fork, lies beside lsmpmon.
        "stat,open_close,create_0k,fork_exit",
        "--samples",
        "2",
        "--sample-ms",
        "1",
        "--landlock",
        "--json",
        "--dir",
        &dir,
    ]);
    let text = succeeded(&out);
    validate("bench.schema.json", &text);
    let r = json(&text);
    assert!(r["landlock"]["abi"].as_u64().unwrap() >= 1);
    assert!(r["landlock"]["proof"]
        .as_str()
        .unwrap()
        .contains("denied (EACCES)"));
}

/// The fork ops' processes come from lsmpmon-fork, the small C helper beside
/// the binary (lmbench's lat_proc forks from its own small program), not from
/// lsmpmon re-executed (a static PIE several MiB resident).
#[test]
fn fork_ops_fork_from_the_small_helper_beside_lsmpmon() {
    let out = quick("fork_exit,fork_exec", &["--json"]);
    let r = json(&succeeded(&out));
    let beside = std::path::Path::new(LSMPMON).with_file_name("lsmpmon-fork");
    for op in ["fork_exit", "fork_exec"] {
        let helper = result(&r, op)["helper"].as_str().expect("the helper named");
        assert_eq!(std::path::Path::new(helper), beside, "{op}");
        let rss_kb = result(&r, op)["helper_rss_kb"].as_u64().unwrap();
        assert!(rss_kb > 0 && rss_kb < 1024, "{op}: helper of {rss_kb} KiB");
    }
}

/// Without its helper, a fork op refuses in one line saying where to put it;
/// the other ops still run.
#[test]
fn a_missing_fork_helper_is_one_line() {
    if std::path::Path::new("/usr/libexec/lsmpmon-fork").exists() {
        eprintln!("skipped: the Debian package's helper is installed here");
        return;
    }
    let dir = fresh("nohelper");
    let alone = dir.join("lsmpmon");
    std::fs::copy(LSMPMON, &alone).unwrap();
    let out = Command::new(&alone)
        .args(["bench", "--ops", "null,fork_exit", "--samples", "2"])
        .args(["--sample-ms", "1", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let failed: Vec<&str> = err.lines().filter(|l| l.contains("FAILED")).collect();
    assert_eq!(failed.len(), 1, "{err}");
    assert!(
        failed[0]
            .contains("lsmpmon-fork is neither beside lsmpmon nor at /usr/libexec/lsmpmon-fork"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let r = json(&String::from_utf8_lossy(&out.stdout));
    assert!(median(&r, "null") > 0.0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn errors_are_one_line_with_exit_2() {
    let cases: [(&[&str], &str); 6] = [
        (&["--ops", "nosuch"], "unknown operation or group 'nosuch'"),
        (&["--ops", "null", "--iterations", "0"], "--iterations"),
        (&["--ops", "null", "--iterations=-5"], "--iterations"),
        (
            &["--ops", "yield,null", "--iterations", "5"],
            "applies to the yield group's ops only, not null",
        ),
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

/// The pseudo multi-process paper's program: a fixed number of rounds per
/// sample (no calibration), both tasks really switching on one CPU.
#[test]
fn yield_rounds_run_exactly_the_rounds_asked() {
    let rounds = 3000u64;
    let out = bench(&[
        "--ops",
        "yield",
        "--iterations",
        &rounds.to_string(),
        "--samples",
        "3",
        "--json",
    ]);
    let text = succeeded(&out);
    validate("bench.schema.json", &text);
    let r = json(&text);
    assert_eq!(r["options"]["iterations"], rounds);
    let ops: Vec<&str> = r["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["op"].as_str().unwrap())
        .collect();
    assert_eq!(
        ops,
        [
            "yield_proc",
            "yield_thread",
            "yield_rounds_proc",
            "yield_rounds_thread"
        ]
    );
    for op in ops {
        let o = result(&r, op);
        assert_eq!(
            o["iterations"], rounds,
            "{op}: calibration must not change N"
        );
        // Three samples of N ops each (the warm-up is not counted).
        assert_eq!(o["proof_ops"], 3 * rounds, "{op}");
        // A round is two sched_yield calls and at least one context switch:
        // far above a bare syscall (~100 ns). In host time a busy machine
        // lets other tasks run inside a round (2.8 ms seen with two guests
        // beside it), so the upper bound only refuses a sleep-sized round.
        let m = o["median"].as_f64().unwrap();
        assert!(m > 200.0 && m < 1e8, "{op}: {m} ns per op");
    }
    // A round of the paper's program has each task yield once: at least one
    // switch, so never cheaper than half an explicit hand-over.
    assert!(median(&r, "yield_rounds_proc") > 0.5 * median(&r, "yield_proc"));
    let plain = String::from_utf8(
        bench(&[
            "--ops",
            "yield_rounds_thread",
            "--iterations",
            "500",
            "--samples",
            "1",
        ])
        .stdout,
    )
    .unwrap();
    assert!(plain.contains("1 samples of 500 ops"), "{plain}");
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
    // paper (22: Unixbench's read and write apart at three sizes; close,
    // creat, truncate) + 3 fork ops.
    assert_eq!(r["results"].as_array().unwrap().len(), 25);
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
    assert!(median(&r, "read_4k") > median(&r, "read_256"));
    assert!(median(&r, "write_4k") > median(&r, "write_256"));
    assert!(median(&r, "fork_exec") >= median(&r, "fork_exit"));
    // Not fork_sh >= fork_exec: in the busybox guest `sh -c true` runs the
    // builtin, so both are one fork and one exec of busybox, and two-ops
    // samples of about 1 ms leave 15 % between them either way.
    assert!(median(&r, "open_close") >= median(&r, "stat"));
    assert!(median(&r, "stat") >= median(&r, "null"));
    assert!(median(&r, "tcp") >= median(&r, "pipe"));
}

/// An op's figure does not depend on the ops sampled beside it (guest,
/// virtual time). Sampled round-robin, the file ops' deferred work (the
/// RCU callbacks freeing what they removed) ran during the next op's
/// sample: stat took 4 379 ns alone and 4 601 ns (+5.1 %) beside
/// create_10k on 6.1, +2.7 % beside close. Each sample now waits for that
/// work first; the figures agree within 1 %, as two runs of one op do.
#[test]
fn an_ops_figure_is_the_same_alone_and_beside_file_ops_in_a_6_1_guest() {
    let run = |ops: &str| {
        format!("lsmpmon bench --ops {ops} --samples 5 --sample-ms 10 --json | tr -d '\\n'")
    };
    let script = format!(
        "echo \"A $({})\"; echo \"B $({})\"",
        run("stat,open_close"),
        run("stat,open_close,create_10k,creat,close"),
    );
    let text = guest_stdout("6.1", &script);
    let (alone, beside) = (tagged(&text, "A"), tagged(&text, "B"));
    for op in ["stat", "open_close"] {
        let (a, b) = (median(&alone, op), median(&beside, op));
        assert!(
            (a - b).abs() / a < 0.01,
            "{op}: alone {a} ns, beside file ops {b} ns"
        );
    }
    assert_eq!(beside["options"]["settled"], true, "{}", beside["options"]);
    validate("bench.schema.json", &beside.to_string());
}

/// lmbench semantics (guest, virtual time): fork_exit comes from a small
/// helper, lsmpmon-fork, so 48 MiB of other ops' buffers alive in the
/// measuring process leave it unchanged within 5 % (forking from the
/// measuring process, it was 5.4 times lmbench's lat_proc); ctx reports the
/// switch with lat_ctx's token-passing overhead taken out, and the overhead
/// itself; pipe and AF_UNIX round trips,
/// bw_unix and the memory ops give the same figure alone as between other
/// ops' samples.
#[test]
fn lmbench_semantics_in_a_6_1_guest() {
    let run = |ops: &str| {
        format!("lsmpmon bench --ops {ops} --samples 5 --sample-ms 5 --json | tr -d '\\n'")
    };
    let script = format!(
        "sleep 5; echo \"A $({})\"; echo \"B $({})\"; echo \"C $({})\"; echo \"D $({})\"; \
         echo \"E $({})\"; echo \"F $({})\"; echo \"G $({})\"",
        run("fork_exit,ctx"),
        run("bw_mem_rd,bw_mem_wr,bw_bcopy,fork_exit,pipe,unix,bw_unix"),
        run("ctx --ctx-procs 4 --ctx-size 16"),
        run("pipe"),
        run("unix"),
        run("bw_unix"),
        run("bw_mem_wr,bw_bcopy"),
    );
    let text = guest_stdout("6.1", &script);
    let (a, b, c) = (tagged(&text, "A"), tagged(&text, "B"), tagged(&text, "C"));
    // Each op's figure is the same alone and between other ops' samples:
    // the scheduler's pattern for a ping-pong pair or a stream no longer
    // depends on what the measuring process did in between (one echo
    // process for the whole run: pipe 13.0 us alone, 10.5 beside any op;
    // a writer idle while other ops ran: bw_unix 1632 MB/s, alone 1285),
    // and other ops' forks no longer cost the memory ops copy-on-write
    // faults (bw_mem_wr 5.7 % lower beside bw_unix).
    for (tag, op) in [
        ("D", "pipe"),
        ("E", "unix"),
        ("F", "bw_unix"),
        ("G", "bw_mem_wr"),
        ("G", "bw_bcopy"),
    ] {
        let (alone, mixed) = (median(&tagged(&text, tag), op), median(&b, op));
        // 2 %: within one boot two runs of the same op differ by up to
        // about 1 % with the kernel's allocation layout at their start (CI
        // at 6dd91bc: pipe 12 972 alone, 13 103 between other ops, 1.0 %;
        // BENCHMARKS.md, 'Determinism of a guest'); the effects this guards against were 20-27 %.
        assert!(
            (alone - mixed).abs() / alone < 0.02,
            "{op} alone {alone}, between other ops {mixed}"
        );
    }
    for r in [&a, &b, &c] {
        validate("bench.schema.json", &r.to_string());
    }
    // Minima: a kernel thread waking up can only add time.
    let min = |r: &serde_json::Value| result(r, "fork_exit")["min"].as_f64().unwrap();
    let (small, big) = (min(&a), min(&b));
    // Forking from the measuring process added 441 %; from lsmpmon
    // re-executed (a static PIE, its layout randomized) fork_exit moved
    // 254.8-275.0 us over runs in one boot. lsmpmon-fork (static, non-PIE C)
    // has one layout: what moves it now is the kernel state other ops leave.
    assert!(
        (big - small).abs() / small < 0.05,
        "fork_exit depends on the measuring process: {small} vs {big}"
    );
    for r in [&a, &b] {
        let fork = result(r, "fork_exit");
        assert_eq!(fork["helper"], "/usr/libexec/lsmpmon-fork");
        let rss_kb = fork["helper_rss_kb"].as_u64().unwrap();
        assert!(rss_kb > 0 && rss_kb < 1024, "helper of {rss_kb} KiB");
    }
    for r in [&a, &c] {
        let ctx = result(r, "ctx");
        let overhead = ctx["overhead_ns"].as_f64().expect("ctx overhead");
        assert!(overhead > 500.0, "{ctx}");
        assert!(ctx["median"].as_f64().unwrap() > 500.0, "{ctx}");
    }
    // A larger working set per hop costs more per switch, and more overhead.
    let (plain, heavy) = (result(&a, "ctx"), result(&c, "ctx"));
    assert!(heavy["overhead_ns"].as_f64() > plain["overhead_ns"].as_f64());
    assert_eq!(c["options"]["ctx_procs"], 4);
}

/// What is in `dir`, sorted (names only).
fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A fresh directory of ours for a test, empty.
fn fresh(name: &str) -> std::path::PathBuf {
    let d = std::path::PathBuf::from(tmpdir(name));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A file only root may change, and a symlink to it planted where bench
/// used to write `rw_256`'s file.
fn plant(dir: &std::path::Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let target = dir.with_extension("target");
    std::fs::write(&target, b"precious").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::create_dir_all(dir.join("rw_256")).unwrap();
    std::os::unix::fs::symlink(&target, dir.join("rw_256/rw256")).unwrap();
    target
}

#[test]
fn planted_symlinks_are_never_written_through() {
    let dir = fresh("plant");
    let target = plant(&dir);
    let ops = [
        "--ops",
        "null,rw_256,stat",
        "--samples",
        "2",
        "--sample-ms",
        "1",
        "--dir",
    ];
    let out = bench(&[&ops[..], &[dir.to_str().unwrap()]].concat());
    succeeded(&out);
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");
    assert_eq!(
        listing(&dir),
        ["rw_256"],
        "the user's directory is left as it was"
    );
    assert!(dir.join("rw_256/rw256").is_symlink());
    // The reproduced attack: another user's directory (or, not being root,
    // one anybody may write) is refused before anything is written.
    let foreign = fresh("foreign");
    let target = plant(&foreign);
    open_to_another_user(&foreign);
    let out = bench(&[&ops[..], &[foreign.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(2));
    assert!(one_error_line(&out).contains("could be changed by another user"));
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");
    assert_eq!(listing(&foreign), ["rw_256"], "not deleted either");
    for d in [&dir, &foreign] {
        std::fs::remove_dir_all(d).unwrap();
        std::fs::remove_file(d.with_extension("target")).unwrap();
    }
}

/// Gives `dir` to uid 65534 (as root), or makes it writable by anybody.
fn open_to_another_user(dir: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: plain query.
    if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::chown(dir, Some(65534), Some(65534)).unwrap();
    } else {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
}

#[test]
fn a_named_directory_and_a_symlink_to_it_survive_with_their_contents() {
    let dir = fresh("named");
    std::fs::write(dir.join("keep"), b"mine").unwrap();
    let link = dir.with_extension("link");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&dir, &link).unwrap();
    for d in [&dir, &link] {
        let out = quick("null,stat,create_0k,rw_1k", &["--dir", d.to_str().unwrap()]);
        succeeded(&out);
        assert_eq!(
            listing(&dir),
            ["keep"],
            "nothing left behind, nothing removed"
        );
        assert_eq!(std::fs::read(dir.join("keep")).unwrap(), b"mine");
    }
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        dir,
        "the symlink is kept"
    );
    std::fs::remove_file(&link).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Unixbench's read and write apart: read_N and write_N move N bytes an
/// op, rw_N (both, as the atlas measured them) 2 × N.
#[test]
fn read_and_write_ops_move_their_buffer_once_and_rw_twice() {
    let dir = tmpdir("rw");
    let ops = "read_256,write_256,rw_256,read_4k,write_4k,rw_4k";
    let r = json(&succeeded(&quick(ops, &["--json", "--dir", &dir])));
    for (op, bytes_per_op) in [
        ("read_256", 256),
        ("write_256", 256),
        ("rw_256", 512),
        ("read_4k", 4096),
        ("write_4k", 4096),
        ("rw_4k", 8192),
    ] {
        let o = result(&r, op);
        let (ops, bytes) = (
            o["proof_ops"].as_u64().unwrap(),
            o["proof_bytes"].as_u64().unwrap(),
        );
        assert!(ops > 0, "{op}");
        assert_eq!(bytes, ops * bytes_per_op, "{op}");
    }
    // The paper set measures them apart.
    let paper = json(&succeeded(&quick("paper", &["--json", "--dir", &dir])));
    let names: Vec<&str> = paper["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["op"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"read_1k") && names.contains(&"write_1k"),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.starts_with("rw_")), "{names:?}");
}

/// select_file running out of descriptors (EMFILE) fails the op and leaves nothing.
#[test]
fn a_failed_op_leaves_no_files() {
    let dir = fresh("emfile");
    let out = Command::new("sh")
        .args(["-c", "ulimit -n 128 && exec \"$0\" \"$@\"", LSMPMON])
        .args([
            "bench",
            "--ops",
            "select_file",
            "--select-fds",
            "1000",
            "--samples",
            "1",
        ])
        .args(["--sample-ms", "1", "--dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("select_file FAILED"));
    assert_eq!(listing(&dir), Vec::<String>::new(), "files left behind");
    // The next run starts.
    let again = quick("null", &["--dir", dir.to_str().unwrap()]);
    assert!(again.status.success());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// SIGINT and SIGTERM: bench stops, exits 1 and removes what it created.
#[test]
fn a_signal_leaves_no_files() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let dir = fresh(&format!("sig{sig}"));
        let mut child = Command::new(LSMPMON)
            .args([
                "bench",
                "--ops",
                "create_0k,stat",
                "--samples",
                "10000",
                "--sample-ms",
            ])
            .args(["20", "--dir", dir.to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        while listing(&dir).len() < 2 {
            assert!(started.elapsed().as_secs() < 30, "bench never started");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(1), "signal {sig}");
        assert_eq!(
            listing(&dir),
            Vec::<String>::new(),
            "signal {sig}: files left"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// `(state, ppid)` of every process, from /proc/PID/stat.
fn processes() -> Vec<(i32, char, i32)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let mut rest = stat.rsplit(')').next().unwrap_or("").split_whitespace();
        let state = rest.next().and_then(|s| s.chars().next()).unwrap_or('?');
        let ppid = rest.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        v.push((pid, state, ppid));
    }
    v
}

/// Every live descendant of `root`.
fn descendants(root: i32) -> Vec<i32> {
    let all = processes();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(all.iter().filter(|p| p.2 == parent).map(|p| p.0));
        i += 1;
    }
    found.remove(0);
    found
}

/// Alive: neither gone nor a zombie waiting for its (new) parent.
fn alive(pid: i32) -> bool {
    processes().iter().any(|p| p.0 == pid && p.1 != 'Z')
}

/// Starts bench on `ops` (200 samples of 50 ms), waits for its first sample
/// round (every helper started) and returns it, its stderr drained.
fn started_bench(ops: &str, dir: &std::path::Path) -> std::process::Child {
    sampling_bench(ops, dir, "200", "50").0
}

/// Issue 27 item 1: SIGKILL to bench leaves none of its helpers running
/// (the ctx ring's processes, the fork helpers of `proc`).
#[test]
fn a_killed_bench_leaves_no_process_behind() {
    for ops in ["ctx", "proc"] {
        let dir = fresh(&format!("orphans-{ops}"));
        let mut bench = started_bench(ops, &dir);
        let helpers = descendants(bench.id() as i32);
        let want = if ops == "ctx" { 3 } else { 3 + 3 };
        assert!(helpers.len() >= want, "{ops}: helpers {helpers:?}");
        bench.kill().unwrap();
        bench.wait().unwrap();
        let started = std::time::Instant::now();
        while helpers.iter().any(|p| alive(*p)) && started.elapsed().as_secs() < 5 {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let left: Vec<i32> = helpers.into_iter().filter(|p| alive(*p)).collect();
        for p in &left {
            // SAFETY: ending the orphans this test made, so that they do not run on.
            unsafe { libc::kill(*p, libc::SIGKILL) };
        }
        assert!(left.is_empty(), "--ops {ops}: {left:?} outlived bench");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Issue 27 item 10: `--dir` naming a file, or reached through another
/// user's symlink (root following nobody's link in /tmp into /root), is
/// refused with one line before anything is written.
#[test]
fn a_work_directory_that_is_no_directory_or_another_users_link_is_refused() {
    let base = fresh("dirchecks");
    let file = base.join("file");
    std::fs::write(&file, b"x").unwrap();
    let out = quick("null", &["--dir", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(one_error_line(&out).contains("is not a directory"));
    // SAFETY: plain query.
    if unsafe { libc::geteuid() } == 0 {
        let target = base.join("root-only");
        std::fs::create_dir(&target).unwrap();
        let link = base.join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
        let out = quick("null,create_0k", &["--dir", link.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2));
        assert!(one_error_line(&out).contains("symlink of uid 65534"));
        assert_eq!(listing(&target), Vec::<String>::new(), "written through");
    }
    std::fs::remove_dir_all(&base).unwrap();
}

/// Issue 27 item 5: a closed pipe or a full disk on standard output is one
/// line and exit 1 (a failure at run time), never a panic (101).
#[test]
fn a_full_stdout_is_one_line_and_exit_1_a_closed_one_ends_quietly() {
    let dir = tmpdir("stdout");
    let args = [
        "bench",
        "--ops",
        "null",
        "--samples",
        "1",
        "--sample-ms",
        "1",
    ];
    let full = with_stdout_full(Command::new(LSMPMON).args(args).args(["--dir", &dir]));
    assert_eq!(full.status.code(), Some(1));
    assert!(one_error_line(&full).contains("No space left on device"));
    // As report, trace and vm cache: a reader that went away (`| head`) is
    // no failure; the run itself (its stderr progress) still completed.
    let out = with_stdout_closed(Command::new(LSMPMON).args(args).args(["--dir", &dir]));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

/// Issue 27 item 10: Ctrl-C (SIGINT to bench's process group) reports
/// "interrupted", not the ops that the signal stopped as failed ones.
#[test]
fn ctrl_c_reports_interrupted_not_failed_ops() {
    use std::os::unix::process::CommandExt;
    let dir = fresh("ctrlc");
    let mut child = Command::new(LSMPMON)
        .args(["bench", "--ops", "fork_exit", "--samples", "1000"])
        .args(["--sample-ms", "200", "--dir", dir.to_str().unwrap()])
        .process_group(0)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stderr.take().unwrap()));
    assert!(lines.any(|l| l.is_ok_and(|l| l.contains("sample round 2/"))));
    std::thread::sleep(std::time::Duration::from_millis(50));
    // SAFETY: signalling the process group of our own child, as a terminal would.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) };
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert_eq!(child.wait().unwrap().code(), Some(1));
    let last = rest.last().cloned().unwrap_or_default();
    assert!(last.contains("interrupted"), "{rest:?}");
    assert!(!rest.iter().any(|l| l.contains("FAILED")), "{rest:?}");
    assert_eq!(listing(&dir), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `runs` bench runs a side, interleaved A B B A A B … (a linear drift in the
/// host's load falls on both sides alike), each side's results in its own
/// directory: `common` for both, `b_extra` on B only.
fn repeated_runs(name: &str, runs: usize, common: &[&str], b_extra: &[&str]) -> (String, String) {
    let (a, b) = (tmpdir(&format!("{name}-a")), tmpdir(&format!("{name}-b")));
    let work = tmpdir(&format!("{name}-work"));
    for d in [&a, &b] {
        let _ = std::fs::remove_dir_all(d);
        std::fs::create_dir_all(d).unwrap();
    }
    let one = |dir: &str, i: usize, extra: &[&str]| {
        let mut args = common.to_vec();
        args.extend_from_slice(&["--json", "--dir", &work]);
        args.extend_from_slice(extra);
        let out = bench(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(format!("{dir}/{i:02}.json"), out.stdout).unwrap();
    };
    for i in 0..runs {
        if i % 2 == 0 {
            one(&a, i, &[]);
            one(&b, i, b_extra);
        } else {
            one(&b, i, b_extra);
            one(&a, i, &[]);
        }
    }
    (a, b)
}

/// `lsmpmon compare A B --format json` and its exit: (exit code, changes).
fn compare(a: &str, b: &str, extra: &[&str]) -> (i32, Vec<serde_json::Value>) {
    let out = Command::new(LSMPMON)
        .args(["compare", a, b, "--format", "json"])
        .args(extra)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        !text.is_empty(),
        "compare failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    validate("compare.schema.json", &text);
    let changes = json(&text)["changes"].as_array().unwrap().clone();
    (out.status.code().unwrap(), changes)
}

const SHORT: [&str; 6] = [
    "--ops",
    "null,stat,open_close",
    "--samples",
    "5",
    "--sample-ms",
    "2",
];

/// Planted no change: the same binary 7 + 7 times in real time. Runs of the
/// same measurement are exchangeable, so a test at --alpha 0.001 calls an op
/// slower or faster with probability 2 / C(14, 7) = 0.06 % (the two sides
/// fully apart), ≈ 0.2 % over the three ops: 7 runs a side is the fewest that
/// can reach p < 0.001. (5 + 5 at 0.01 would be ≈ 2.4 %: too flaky for a test.)
/// The test on the samples within one run, as compare did, called drift
/// between two such runs "slower, p = 2.8e-6".
#[test]
fn compare_repeated_runs_of_the_same_binary_finds_no_change() {
    let (a, b) = repeated_runs("same", 7, &SHORT, &[]);
    let (code, changes) = compare(&a, &b, &["--alpha", "0.001", "--fail-on-slower"]);
    assert_eq!(changes.len(), 3, "{changes:?}");
    for c in &changes {
        assert_eq!(c["verdict"], "within_noise", "{c}");
        assert!(
            c["test"]
                .as_str()
                .unwrap()
                .starts_with("Mann-Whitney on run medians, 7 runs a side"),
            "{c}"
        );
        assert_eq!(c["run"], "7 vs 7 runs");
    }
    assert_eq!(code, 0);
}

/// Planted real change: select_file watching 500 descriptors instead of 10
/// costs about 4x (+304 % measured with this test on a loaded host), far
/// beyond run-to-run spread, and must be found slower
/// at the default --alpha 0.01 (7 runs a side leave room for a few runs of
/// A slower than some of B on a host loaded by guest tests: U <= 4 of 49
/// is p = 0.007). Landlock on open (+16 % to +32 % on this 2-core host,
/// with a run-to-run spread as large: BENCHMARKS.md, 'compare in real time') is not clear enough
/// for a test that must not fail. The same data one run a side cannot tell,
/// and never fails --fail-on-slower.
#[test]
fn compare_repeated_runs_finds_a_planted_change_and_one_run_a_side_cannot_tell() {
    let common = [
        "--ops",
        "select_file,null",
        "--samples",
        "5",
        "--sample-ms",
        "2",
    ];
    let extra = ["--select-fds", "500"];
    let (a, b) = repeated_runs("select", 7, &common, &extra);
    let (code, changes) = compare(&a, &b, &["--fail-on-slower"]);
    let select = changes
        .iter()
        .find(|c| c["figure"] == "bench select_file")
        .unwrap();
    assert_eq!(select["verdict"], "slower", "{select}");
    assert!(select["p_value"].as_f64().unwrap() < 0.01, "{select}");
    assert_eq!(code, 1, "--fail-on-slower fires on a slower figure");
    let (one_a, one_b) = (format!("{a}/00.json"), format!("{b}/00.json"));
    let (code, changes) = compare(&one_a, &one_b, &["--fail-on-slower"]);
    assert_eq!(code, 0, "cannot tell is not slower");
    for c in &changes {
        assert_eq!(c["verdict"], "cannot_tell", "{c}");
        assert!(c["p_value"].is_null(), "{c}");
        assert!(
            c["test"].as_str().unwrap().starts_with("one run a side"),
            "{c}"
        );
    }
    // Three runs a side cannot reach p < 0.001 whatever they show.
    let few = |side: &str| {
        let d = tmpdir(&format!("select-few-{side}"));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        for i in 0..3 {
            let f = format!("{i:02}.json");
            std::fs::copy(
                format!("{}/{f}", if side == "a" { &a } else { &b }),
                format!("{d}/{f}"),
            )
            .unwrap();
        }
        d
    };
    let (_, changes) = compare(&few("a"), &few("b"), &["--alpha", "0.001"]);
    for c in &changes {
        assert_eq!(c["verdict"], "cannot_tell", "{c}");
        assert_eq!(
            c["test"], "3 runs a side cannot reach p < 0.001: need 7 a side",
            "{c}"
        );
    }
}

/// Starts `bench --ops OP` (long samples) with stderr piped, and returns it
/// once its first sample round began, with a thread collecting the rest of
/// its stderr.
fn sampling_bench(
    op: &str,
    dir: &std::path::Path,
    samples: &str,
    sample_ms: &str,
) -> (std::process::Child, std::thread::JoinHandle<Vec<String>>) {
    use std::io::BufRead;
    let mut child = Command::new(LSMPMON)
        .args([
            "bench",
            "--ops",
            op,
            "--samples",
            samples,
            "--sample-ms",
            sample_ms,
        ])
        .args(["--ctx-procs", "4", "--dir", dir.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    assert!(
        lines.any(|l| l.is_ok_and(|l| l.contains("sample round 1/"))),
        "bench --ops {op} never sampled"
    );
    (
        child,
        std::thread::spawn(move || lines.map_while(Result::ok).collect()),
    )
}

/// Waits up to `secs` for `child`; kills it (and fails) if it is still running.
fn ends_within(child: &mut std::process::Child, secs: u64, what: &str) -> i32 {
    let started = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().unwrap_or(-1);
        }
        if started.elapsed().as_secs() >= secs {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: bench still running after {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A helper process that dies under bench (killed by someone else) fails
/// its op with one line, and the run ends with its files removed: the ctx
/// ring (bench held every ring pipe open, and read forever) and the
/// yield_proc partner (bench spun on sched_yield forever).
#[test]
fn a_killed_helper_fails_its_op_and_the_run_ends() {
    for (op, line) in [
        ("ctx", "the ring lost a process"),
        ("yield_proc", "partner process died"),
    ] {
        let dir = fresh(&format!("helper-{op}"));
        let (mut bench, rest) = sampling_bench(op, &dir, "1000", "30");
        // yield_proc forks its partner for each sample: look until one runs.
        let mut helpers = descendants(bench.id() as i32);
        for _ in 0..100 {
            if !helpers.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
            helpers = descendants(bench.id() as i32);
        }
        assert!(!helpers.is_empty(), "{op}: no helper process");
        // SAFETY: killing a process our own child started.
        unsafe { libc::kill(helpers[helpers.len() / 2], libc::SIGKILL) };
        let code = ends_within(&mut bench, 20, op);
        let rest = rest.join().unwrap();
        assert_eq!(code, 1, "{op}: {rest:?}");
        let failed: Vec<&String> = rest.iter().filter(|l| l.contains("FAILED")).collect();
        assert_eq!(failed.len(), 1, "{op}: {rest:?}");
        assert!(failed[0].contains(line), "{op}: {rest:?}");
        assert_eq!(listing(&dir), Vec::<String>::new(), "{op}: files left");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// SIGTERM stops bench within a second or two, even in the middle of a
/// calibration step or a sample 20 s long (the stop flag is looked at
/// inside the op's loop, not only between samples).
#[test]
fn sigterm_stops_a_long_sample_at_once() {
    use std::io::BufRead;
    let dir = fresh("long-sample");
    let mut child = Command::new(LSMPMON)
        .args(["bench", "--ops", "null", "--samples", "5"])
        .args(["--sample-ms", "3000", "--dir", dir.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    assert!(lines.any(|l| l.is_ok_and(|l| l.contains("calibrating"))));
    let rest = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());
    std::thread::sleep(std::time::Duration::from_secs(3));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    // The timed loops never look at the flag (it would be part of every
    // figure): a stop waits for the sample under way, ≈ 1.2 × --sample-ms.
    let code = ends_within(&mut child, 8, "SIGTERM during a 3 s sample");
    let rest = rest.join().unwrap();
    assert_eq!(code, 1, "{rest:?}");
    assert!(rest.last().unwrap().contains("interrupted"), "{rest:?}");
    assert!(!rest.iter().any(|l| l.contains("FAILED")), "{rest:?}");
    assert_eq!(listing(&dir), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A `--dir` bench made is removed at the end: under --landlock (whose
/// ruleset forbade removing it), and when two runs shared it (the one that
/// made it ending first).
#[test]
fn a_work_directory_bench_made_is_removed_by_the_last_run() {
    let base = fresh("made-root");
    let made = base.join("l2");
    let out = quick("null", &["--landlock", "--dir", made.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    if !err.contains("Landlock is not available") {
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(!made.exists(), "--landlock left the --dir it made");
    }
    let shared = base.join("shared");
    let (mut first, _) = sampling_bench("null", &shared, "1000", "30");
    let (mut second, _) = sampling_bench("null", &shared, "1000", "30");
    for b in [&mut first, &mut second] {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(b.id() as i32, libc::SIGTERM) };
        assert_eq!(ends_within(b, 10, "shared --dir"), 1);
    }
    assert!(!shared.exists(), "{:?} left", listing(&shared));
    std::fs::remove_dir_all(&base).unwrap();
}

/// A full `--dir` names ENOSPC (root only: a 64 KiB tmpfs in a mount
/// namespace of its own).
#[test]
fn a_full_work_directory_names_enospc() {
    // SAFETY: plain query.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    let dir = fresh("full");
    let script = format!(
        "mount -t tmpfs -o size=64k lsmpmon-full {d} && exec {LSMPMON} bench --ops create_10k \
         --samples 3 --sample-ms 5 --dir {d}/w",
        d = dir.display()
    );
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let failed = err
        .lines()
        .find(|l| l.contains("FAILED"))
        .unwrap_or_default();
    assert!(failed.contains("No space left on device"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `lsmpmon bench ARGS` as a process that may hold `soft` descriptors and
/// can raise that to `hard` but no further: the limits are set in the child
/// before it execs, and CAP_SYS_RESOURCE is dropped (as in a container, or
/// for any user but root).
fn bench_at_limit(soft: u64, hard: u64, args: &[&str]) -> Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new("setpriv");
    cmd.args(["--bounding-set=-sys_resource", "--inh-caps=-sys_resource"])
        .args([LSMPMON, "bench"])
        .args(args);
    // SAFETY: only setrlimit between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            match libc::setrlimit(libc::RLIMIT_NOFILE, &lim) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    cmd.output().unwrap()
}

/// The calls per timed batch `op` recorded.
fn batch_calls(r: &serde_json::Value, op: &str) -> u64 {
    result(r, op)["batch_calls"]
        .as_u64()
        .unwrap_or_else(|| panic!("{op}: no batch_calls"))
}

/// Every op of the paper set gives a figure with a hard descriptor limit of
/// 1 024 that it cannot raise (a non-root user's default), with the long
/// samples that need tens of thousands of calls: close and creat time
/// them in batches that fit.
#[test]
fn the_paper_ops_run_at_a_hard_descriptor_limit_of_1024() {
    let dir = fresh("paper-1024");
    let out = bench_at_limit(
        1024,
        1024,
        &[
            "--ops",
            "paper",
            "--samples",
            "2",
            "--sample-ms",
            "50",
            "--json",
            "--dir",
            dir.to_str().unwrap(),
        ],
    );
    let text = succeeded(&out);
    validate("bench.schema.json", &text);
    let r = json(&text);
    let ops: Vec<&str> = r["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["op"].as_str().unwrap())
        .collect();
    let paper = [
        "null",
        "read",
        "write",
        "stat",
        "open_close",
        "create_0k",
        "delete_0k",
        "create_10k",
        "delete_10k",
        "read_256",
        "read_1k",
        "read_4k",
        "write_256",
        "write_1k",
        "write_4k",
        "pipe",
        "unix",
        "tcp",
        "udp",
        "close",
        "creat",
        "truncate",
    ];
    assert_eq!(ops, paper);
    for op in paper {
        assert!(median(&r, op) > 0.0, "{op}");
    }
    for op in ["close", "creat"] {
        let (calls, batch) = (
            result(&r, op)["iterations"].as_u64().unwrap(),
            batch_calls(&r, op),
        );
        assert!((1..=1024).contains(&batch), "{op}: batches of {batch}");
        assert_eq!(calls % batch, 0, "{op}: {calls} calls, batches of {batch}");
        assert_eq!(
            result(&r, op)["proof_ops"].as_u64().unwrap(),
            2 * calls,
            "{op}"
        );
    }
    // Close is fast: 50 ms of it is more calls than the limit holds.
    let close_calls = result(&r, "close")["iterations"].as_u64().unwrap();
    assert!(close_calls > 1024, "close: {close_calls} calls a sample");
    let _ = std::fs::remove_dir_all(&dir);
}

/// close and creat timed in small batches (a hard limit of 64) give
/// figures of the size they give in full batches: the batches change how
/// often the descriptors are opened untimed, not what one call costs.
/// (Behaviour, not speed: real time on a shared machine; BENCHMARKS.md
/// gives the figures of a quiet one and of a guest's virtual time.)
#[test]
fn a_figure_in_small_batches_is_the_figure_in_full_ones() {
    let dir = fresh("paper-batches");
    let dir_s = dir.to_str().unwrap();
    let args = [
        "--ops",
        "close,creat",
        "--samples",
        "5",
        "--sample-ms",
        "5",
        "--json",
        "--dir",
        dir_s,
    ];
    // Three runs a side, alternated: the least disturbed sample of each
    // side counts (this machine may be busy with other work).
    let mut best = [[f64::MAX; 2]; 2];
    for _ in 0..3 {
        for (side, (soft, hard)) in [(64, 64), (4096, 4096)].into_iter().enumerate() {
            let out = bench_at_limit(soft, hard, &args);
            let r = json(&succeeded(&out));
            let batch = batch_calls(&r, "close");
            // A figure of smaller batches says so.
            let said = String::from_utf8_lossy(&out.stderr).lines().any(|l| {
                l.starts_with("bench: close times batches of") && l.contains("batch_calls")
            });
            match side {
                0 => assert!(batch < 64 && said, "small: {batch}, said: {said}"),
                _ => assert!(batch == 512 && !said, "full: {batch}, said: {said}"),
            }
            for (i, op) in ["close", "creat"].into_iter().enumerate() {
                let min = result(&r, op)["min"].as_f64().unwrap();
                assert!(min > 0.0, "{op}: {min}");
                best[side][i] = best[side][i].min(min);
            }
        }
    }
    for (i, op) in ["close", "creat"].into_iter().enumerate() {
        let (a, b) = (best[0][i], best[1][i]);
        assert!(
            a / b < 4.0 && b / a < 4.0,
            "{op}: {a} ns in small batches, {b} in full ones"
        );
    }
    assert_eq!(listing(&dir), Vec::<String>::new(), "files left behind");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// close, creat and truncate prove their work; a limit with no room for one
/// descriptor fails close and creat in one line that says what to do,
/// leaving no file behind.
#[test]
fn paper_calls_prove_their_work_and_fail_clearly_without_room() {
    let dir = fresh("paper-calls");
    let ok = json(&succeeded(&quick(
        "close,creat,truncate",
        &["--json", "--dir", dir.to_str().unwrap()],
    )));
    for op in ["close", "creat", "truncate"] {
        let o = result(&ok, op);
        assert!(o["proof_ops"].as_u64().unwrap() > 0, "{op}");
        assert_eq!(o["proof_bytes"], 0, "{op}");
    }
    assert!(result(&ok, "truncate")["batch_calls"].is_null());
    assert_eq!(listing(&dir), Vec::<String>::new(), "files left behind");
    let out = bench_at_limit(
        16,
        16,
        &[
            "--ops",
            "close,creat,null",
            "--samples",
            "1",
            "--sample-ms",
            "1",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for op in ["close", "creat"] {
        let line = err
            .lines()
            .find(|l| l.starts_with(&format!("bench: {op} FAILED")))
            .unwrap_or_else(|| panic!("{op}: {err}"));
        assert!(
            line.contains("hard limit of 16") && line.contains("ulimit -Hn"),
            "{line}"
        );
    }
    assert!(!err.contains("null FAILED"), "{err}");
    assert_eq!(listing(&dir), Vec::<String>::new(), "files left behind");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// select_file and select_tcp hold --select-fds descriptors for the whole
/// run: a soft limit too low for them is raised toward the hard one (no
/// capability needed), and a hard one too low fails them in one line.
#[test]
fn select_ops_fit_their_descriptors_under_the_hard_limit() {
    let dir = fresh("select-room");
    let dir_s = dir.to_str().unwrap();
    let args = [
        "--ops",
        "select_file,select_tcp",
        "--samples",
        "1",
        "--sample-ms",
        "1",
        "--json",
        "--dir",
        dir_s,
    ];
    let r = json(&succeeded(&bench_at_limit(64, 1024, &args)));
    for op in ["select_file", "select_tcp"] {
        assert!(median(&r, op) > 0.0, "{op}");
    }
    let out = bench_at_limit(64, 64, &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--select-fds 100 needs 201 descriptors")
            && err.contains("lower --select-fds"),
        "{err}"
    );
    assert_eq!(listing(&dir), Vec::<String>::new(), "files left behind");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Whether `pid` still runs after up to `secs` seconds (a zombie its new
/// parent has not reaped yet does not run).
fn running_after(pid: i32, secs: u64) -> bool {
    let running = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while running() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    running()
}

/// An executable script in a fresh directory.
fn script(dir: &std::path::Path, name: &str, body: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// `--workload`: the user's program is the op. Each run happens in the op's
/// own directory, the result names the program by its sha256, and `--ops`
/// gains the op.
#[test]
fn workload_runs_the_program_once_per_op_in_its_directory() {
    let dir = fresh("workload");
    let progs = fresh("workload-progs");
    let log = progs.join("runs");
    // Each run leaves a file in its working directory and logs where it ran.
    let w = script(
        &progs,
        "w",
        &format!("echo run > here.$$ && pwd >> {}", log.display()),
    );
    let out = bench(&[
        "--workload",
        w.to_str().unwrap(),
        "--ops",
        "null",
        "--samples",
        "2",
        "--sample-ms",
        "1",
        "--json",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    let r = json(&succeeded(&out));
    let o = result(&r, "workload");
    let ops = o["proof_ops"].as_u64().unwrap();
    assert!(ops >= 2, "{o}");
    // Calibration and warm-up run it too: at least the sampled runs.
    let runs = std::fs::read_to_string(&log).unwrap();
    let cwds: Vec<&str> = runs.lines().collect();
    assert!(
        cwds.len() as u64 >= ops,
        "{} runs logged for {ops} ops",
        cwds.len()
    );
    assert!(
        cwds.iter()
            .all(|d| d.starts_with(dir.to_str().unwrap()) && d.contains("/workload.")),
        "{cwds:?}"
    );
    // The op's directory, and the files the program left in it, are gone.
    assert_eq!(listing(&dir), Vec::<String>::new());
    assert_eq!(r["options"]["ops"], "null,workload");
    let rec = &r["options"]["workload"];
    // Relative to where bench ran (here the checkout) when below it.
    let recorded = std::path::Path::new(rec["path"].as_str().unwrap());
    assert!(recorded.is_relative(), "{recorded:?}");
    assert_eq!(recorded.canonicalize().unwrap(), w.canonicalize().unwrap());
    let want = format!(
        "{:x}",
        <sha2::Sha256 as sha2::Digest>::digest(std::fs::read(&w).unwrap())
    );
    assert_eq!(rec["sha256"], want.as_str());
    let base = progs.join("base.json");
    std::fs::write(&base, &out.stdout).unwrap();
    validate("bench.schema.json", &String::from_utf8(out.stdout).unwrap());
    // Another program under the same name does not compare with it.
    std::fs::write(&w, "#!/bin/sh\ntrue\n").unwrap();
    let other = bench(&[
        "--workload",
        w.to_str().unwrap(),
        "--compare",
        base.to_str().unwrap(),
        "--dir",
        dir.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&other.stderr);
    assert_eq!(other.status.code(), Some(2), "{err}");
    assert!(err.contains("another program"), "{err}");
}

/// A failing, a hanging and a forking-off program each fail the op with
/// what happened and the end of their output; nothing they started lives
/// on, nothing is left in the work directory; wrong options are usage errors.
#[test]
fn a_failing_or_hanging_workload_fails_its_op_and_leaves_nothing() {
    let dir = fresh("workload-bad");
    let progs = fresh("workload-bad-progs");
    let args = |w: &std::path::Path, extra: &[&str]| {
        let mut v = vec![
            "--workload".to_string(),
            w.display().to_string(),
            "--samples".into(),
            "1".into(),
            "--sample-ms".into(),
            "1".into(),
            "--dir".into(),
            dir.display().to_string(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let run = |w: &std::path::Path, extra: &[&str]| {
        let a = args(w, extra);
        bench(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let fails = script(
        &progs,
        "fails",
        "echo first line; echo 'it broke' >&2; exit 7",
    );
    let out = run(&fails, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("exited with status 7") && err.contains("it broke"),
        "{err}"
    );
    // It hangs, with a child of its own that would outlive it.
    let pidfile = progs.join("child.pid");
    let hangs = script(
        &progs,
        "hangs",
        &format!("sleep 1000 & echo $! > {}; sleep 1000", pidfile.display()),
    );
    let started = std::time::Instant::now();
    let out = run(&hangs, &["--workload-timeout", "1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("longer than --workload-timeout 1 s"), "{err}");
    assert!(started.elapsed().as_secs() < 60);
    let child: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        !running_after(child, 5),
        "the workload's child {child} outlived it"
    );
    assert_eq!(listing(&dir), Vec::<String>::new(), "files left behind");
    // A child that leaves the group (a new session) and outlives the run:
    // killed after the sample; the op itself passes.
    let escaped = progs.join("escaped.pid");
    let leaves = script(
        &progs,
        "leaves",
        &format!("setsid sleep 1000 & echo $! > {}", escaped.display()),
    );
    let out = run(&leaves, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let child: i32 = std::fs::read_to_string(&escaped)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        !running_after(child, 5),
        "{child} left the group and outlived the sample"
    );
    // SIGTERM while it runs: the bench stops within a second or two.
    std::fs::remove_file(&pidfile).unwrap();
    let a = args(&hangs, &[]);
    let bench_proc = Command::new(LSMPMON)
        .arg("bench")
        .args(&a)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    while !pidfile.exists() {
        assert!(
            started.elapsed().as_secs() < 60,
            "the workload never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let signalled = std::time::Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(bench_proc.id() as i32, libc::SIGTERM) };
    let out = bench_proc.wait_with_output().unwrap();
    assert!(signalled.elapsed().as_secs() < 10);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted"));
    let child: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        !running_after(child, 5),
        "the workload's child {child} outlived the bench"
    );
    assert_eq!(listing(&dir), Vec::<String>::new(), "files left behind");
    // Usage errors: the op without a program, a program that cannot run.
    let out = quick("workload", &["--dir", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--workload FILE"));
    let plain = progs.join("plain");
    std::fs::write(&plain, "echo hi\n").unwrap();
    for bad in [
        plain.as_path(),
        std::path::Path::new("/nonexistent/w"),
        progs.as_path(),
    ] {
        let out = run(bad, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", bad.display());
        assert!(
            err.contains("--workload") || err.contains("executable"),
            "{err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

/// `bench` with `--workload W`, `samples` quick samples, in `dir`, with `extra`.
fn with_workload(
    w: &std::path::Path,
    dir: &std::path::Path,
    samples: usize,
    extra: &[&str],
) -> Output {
    let (w, dir) = (w.display().to_string(), dir.display().to_string());
    let samples = samples.to_string();
    let mut args = vec![
        "--workload",
        &w,
        "--samples",
        &samples,
        "--sample-ms",
        "1",
        "--dir",
        &dir,
    ];
    args.extend_from_slice(extra);
    bench(&args)
}

/// A failing workload's escape sequences, carriage return and invalid
/// UTF-8 reach neither the terminal nor the result raw; `--json` records
/// the failed op, with its reason, beside the op that ran (exit 1).
#[test]
fn a_failing_workloads_bytes_are_escaped_and_its_failure_is_in_the_json() {
    let dir = fresh("workload-bytes");
    let progs = fresh("workload-bytes-progs");
    let w = script(&progs, "w", r"printf 'ok\n\033[2K\rall fine \377'; exit 1");
    let out = with_workload(&w, &dir, 1, &["--ops", "null,workload", "--json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        !out.stderr
            .iter()
            .any(|&b| b == 0x1b || b == b'\r' || b == 0xff),
        "raw bytes on stderr: {err:?}"
    );
    let escaped = r"ok | \u{1b}[2K\rall fine \xff";
    assert!(err.contains(escaped), "{err}");
    let text = String::from_utf8(out.stdout).unwrap();
    validate("bench.schema.json", &text);
    let r = json(&text);
    assert!(result(&r, "null")["median"].as_f64().unwrap() > 0.0);
    let failed = r["failed"].as_array().expect("failed ops listed");
    assert_eq!(failed.len(), 1, "{r}");
    assert_eq!(failed[0]["op"], "workload");
    let reason = failed[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("exited with status 1") && reason.contains(escaped),
        "{reason}"
    );
    assert_eq!(failed[0]["interrupted"], false);
    assert_eq!(listing(&dir), Vec::<String>::new());
}

/// A workload that prints without end (`yes`) is killed when its output
/// passes the bound, at once, with a one-line reason; nothing on disk.
#[test]
fn a_workload_printing_without_end_is_killed_at_the_bound() {
    let dir = fresh("workload-yes");
    let progs = fresh("workload-yes-progs");
    let w = script(&progs, "w", "exec yes");
    let started = std::time::Instant::now();
    let out = with_workload(&w, &dir, 1, &[]);
    let err = one_error_line(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
    let failed = String::from_utf8_lossy(&out.stderr);
    assert!(
        failed.contains("wrote more than 64 MiB of output in one run and was killed"),
        "{failed}"
    );
    assert!(
        failed.contains("its output ended: … | y | y | y"),
        "{failed}"
    );
    assert_eq!(listing(&dir), Vec::<String>::new());
}

/// A workload file replaced while the bench runs: every run is the program
/// that was hashed, and the result records that one's sha256.
#[test]
fn the_runs_are_the_program_that_was_hashed() {
    let dir = fresh("workload-swap");
    let progs = fresh("workload-swap-progs");
    let log = progs.join("log");
    let w = progs.join("w");
    let first = format!(
        "#!/bin/sh\necho first >> {log}\n\
         printf '#!/bin/sh\\necho second >> {log}\\n' > {w}.new && chmod 755 {w}.new && mv {w}.new {w}\n",
        log = log.display(),
        w = w.display()
    );
    std::fs::write(&w, &first).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&w, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = with_workload(&w, &dir, 3, &["--json"]);
    let r = json(&succeeded(&out));
    let runs = std::fs::read_to_string(&log).unwrap();
    assert!(runs.lines().count() >= 3, "{runs}");
    assert!(runs.lines().all(|l| l == "first"), "{runs}");
    let want = format!("{:x}", <sha2::Sha256 as sha2::Digest>::digest(&first));
    assert_eq!(r["options"]["workload"]["sha256"], want.as_str());
    // The file was replaced indeed.
    assert!(std::fs::read_to_string(&w).unwrap().contains("second"));
    assert_eq!(listing(&dir), Vec::<String>::new());
}

/// A workload that replaces its op directory by a symbolic link to another
/// directory: no run writes there, and the op fails saying why.
#[test]
fn a_workload_that_links_its_directory_away_fails_and_writes_nowhere_else() {
    let dir = fresh("workload-link");
    let progs = fresh("workload-link-progs");
    let elsewhere = fresh("workload-link-elsewhere");
    let w = script(
        &progs,
        "w",
        &format!(
            "echo run > file.$$\nd=$(pwd)\n[ -e {m} ] || {{ touch {m}; mv \"$d\" \"$d.moved\" && ln -s {} \"$d\"; }}",
            elsewhere.display(),
            m = progs.join("moved").display()
        ),
    );
    let out = with_workload(&w, &dir, 3, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("replaced its directory") && err.contains("by a symbolic link"),
        "{err}"
    );
    assert_eq!(listing(&elsewhere), Vec::<String>::new(), "written through");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A workload path with a newline: one line that says why, exit 2.
#[test]
fn a_workload_path_with_a_newline_is_one_line_with_the_reason() {
    let out = bench(&["--workload", "/tmp/a\nb", "--dir", &tmpdir("nl")]);
    let line = one_error_line(&out);
    assert_eq!(out.status.code(), Some(2), "{line}");
    assert!(
        line.contains(r"'/tmp/a\nb'") && line.contains("a control character"),
        "{line}"
    );
}

/// A bench killed by SIGKILL while its workload runs: what the workload
/// started in a new session (`setsid`) dies too, as the workload's cgroup
/// is killed by its guard; the result names the cgroup (here, as root, one
/// can always be made).
#[test]
fn a_workloads_new_session_dies_with_a_bench_killed_by_sigkill() {
    let dir = fresh("workload-sigkill");
    let progs = fresh("workload-sigkill-progs");
    let quick = script(&progs, "quick", "true");
    let r = json(&succeeded(&with_workload(&quick, &dir, 1, &["--json"])));
    let contained = r["provenance"]["workload_contained"].as_str().unwrap();
    assert!(contained.starts_with("cgroup v"), "{contained}");
    let pidfile = progs.join("escaped.pid");
    let w = script(
        &progs,
        "w",
        &format!(
            "setsid sleep 1000 & echo $! > {}; sleep 1000",
            pidfile.display()
        ),
    );
    let mut b = Command::new(LSMPMON)
        .args(["bench", "--workload", w.to_str().unwrap(), "--dir"])
        .arg(&dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while std::fs::read_to_string(&pidfile).map_or(true, |s| !s.ends_with('\n')) {
        assert!(
            started.elapsed().as_secs() < 60,
            "the workload never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let escaped: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    b.kill().unwrap();
    b.wait().unwrap();
    let outlived = running_after(escaped, 5);
    if outlived {
        // SAFETY: ending the orphan this test made.
        unsafe { libc::kill(escaped, libc::SIGKILL) };
    }
    assert!(
        !outlived,
        "{escaped}, in a new session, outlived the killed bench"
    );
}
