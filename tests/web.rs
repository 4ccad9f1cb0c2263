//! The web server study (Webstone): nginx from Debian in the guest, the
//! checking client as the confined workload, errors as errors, and guests
//! with more than one CPU. Guest tests: one guest at a time, reduced sizes.
mod common;

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use common::{fresh_dir, json, lab_run, run_logged as run, succeeded, validate, LSMPMON};
use serde_json::Value;

fn tmpdir(name: &str) -> PathBuf {
    fresh_dir("web", name)
}

fn only_cell(results: &Path) -> Value {
    let cells: Vec<PathBuf> = std::fs::read_dir(results.join("cells"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(cells.len(), 1, "{cells:?}");
    json(&std::fs::read_to_string(&cells[0]).unwrap())
}

fn op<'a>(cell: &'a Value, name: &str) -> &'a Value {
    cell["guest"]["bench"]["results"]
        .as_array()
        .expect("bench results")
        .iter()
        .find(|r| r["op"] == name)
        .unwrap_or_else(|| panic!("{name} missing"))
}

/// A one-op, two-sample web cell on `cpus` CPUs.
fn web_cell(name: &str, cpus: &str) -> Value {
    let res = tmpdir(name);
    let out = run(&lab_run(
        &res,
        "6.1",
        "none",
        "web_c8",
        &[
            "--cpus",
            cpus,
            "--samples",
            "2",
            "--sample-ms",
            "20",
            "--jobs",
            "1",
        ],
    ));
    succeeded(&out);
    let cell = only_cell(&res);
    validate("lab-cell.schema.json", &cell.to_string());
    let tables = run(&["report", res.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&tables.stdout).into_owned();
    assert!(
        text.contains("Web server connection rate"),
        "report has no Webstone table:\n{text}"
    );
    cell
}

/// What nginx loads, as `vm run --copy` arguments (the package the lab fetched).
fn nginx_copies() -> Vec<String> {
    let cache = std::env::var_os("LSMPMON_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/lsmpmon"));
    let nginx = cache.join("packages/nginx/root/usr/sbin/nginx");
    assert!(nginx.is_file(), "{} is missing", nginx.display());
    let ldd = Command::new("ldd").arg(&nginx).output().unwrap();
    let mut copies = vec![format!("{}:/usr/sbin/nginx", nginx.display())];
    for line in String::from_utf8_lossy(&ldd.stdout).lines() {
        let path = match line.split_once("=>") {
            Some((_, r)) => r.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(p) = path.filter(|p| p.starts_with('/')) {
            copies.push(format!("{p}:{p}"));
        }
    }
    copies
}

#[test]
fn every_request_is_answered_with_the_file_and_errors_fail_the_op() {
    // 1. A lab cell: nginx fetched and started, the client confined, every
    // sampled request's latency kept.
    let cell = web_cell("lab", "1");
    assert_eq!(cell["status"], "passed", "{cell}");
    assert_eq!(cell["options"]["cpus"], 1);
    assert_eq!(cell["guest"]["bench"]["provenance"]["online_cpus"], 1);
    assert_eq!(cell["guest"]["bench"]["provenance"]["time"], "virtual");
    assert_eq!(cell["web_server"]["package"], "nginx");
    let c8 = op(&cell, "web_c8");
    let ops = c8["proof_ops"].as_u64().unwrap();
    let lat = &c8["latency"];
    assert_eq!(lat["requests"].as_u64().unwrap(), ops, "{c8}");
    // Whole mixes of 100 requests, shared equally by the eight clients.
    assert_eq!(ops % 200, 0, "{c8}");
    // Every response holds its whole file: per 100 requests 35 × 500 B +
    // 50 × 5 KiB + 14 × 50 KiB + 500 KiB of bodies, plus headers.
    let bodies = ops / 100 * (35 * 500 + 50 * 5120 + 14 * 51200 + 512_000);
    let bytes = c8["proof_bytes"].as_u64().unwrap();
    assert!(
        bytes > bodies && bytes < bodies + ops * 400,
        "{bytes} {bodies}"
    );
    let (p50, p99) = (
        lat["p50_ns"].as_f64().unwrap(),
        lat["p99_ns"].as_f64().unwrap(),
    );
    assert!(p50 > 0.0 && p50 <= p99, "{lat}");

    // 2. The same client against a server that serves a wrong file, then
    // against one that is killed: each time the op fails with its one line.
    let mut args: Vec<String> = ["vm", "run", "--kernel", "6.1", "--timeout", "600"]
        .map(String::from)
        .to_vec();
    for c in nginx_copies() {
        args.extend(["--copy".to_string(), c]);
    }
    let bench = "lsmpmon bench --ops web_c8 --samples 3 --sample-ms 20 --dir /tmp/b";
    let long = "lsmpmon bench --ops web_c8 --samples 50 --sample-ms 100 --dir /tmp/b";
    let pid = "$(cat /srv/lsmpmon-web/nginx.pid)";
    let script = format!(
        "lsmpmon lab web-server || exit 9
         {bench} >/dev/null 2>/tmp/ok; echo ok=$?
         (sleep 1; kill {pid}) &
         {long} >/tmp/mid.out 2>/tmp/mid.err; echo mid=$?; grep FAILED /tmp/mid.err
         echo mid_rows=$(grep web_c8 /tmp/mid.out | grep -vc FAILED)
         echo mid_named=$(grep -c 'web_c8 FAILED' /tmp/mid.out)
         sleep 2; lsmpmon lab web-server || exit 9
         head -c 4000 /srv/lsmpmon-web/htdocs/f5k > /tmp/short && cat /tmp/short > /srv/lsmpmon-web/htdocs/f5k
         {bench} >/dev/null 2>/tmp/short.err; echo short=$?; grep FAILED /tmp/short.err
         kill {pid}; sleep 1
         {bench} >/dev/null 2>/tmp/dead.err; echo dead=$?; grep FAILED /tmp/dead.err"
    );
    args.extend(["--".into(), "sh".into(), "-c".into(), script]);
    let out = Command::new(LSMPMON).args(&args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!(
        "{}\n--- guest stdout ---\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "guest failed: {text}");
    assert!(text.contains("ok=0"), "{text}");
    // Killed mid-run: the op fails and prints no figure.
    assert!(text.contains("mid=1"), "{text}");
    assert!(text.contains("mid_rows=0"), "{text}");
    // … and its result names it as failed, with why.
    assert!(text.contains("mid_named=1"), "{text}");
    assert!(text.contains("short=1"), "{text}");
    assert!(
        text.contains("GET /f5k: Content-Length 4000 but the file has 5120 bytes"),
        "{text}"
    );
    assert!(text.contains("dead=1"), "{text}");
    assert!(
        text.contains("connecting to 127.0.0.1:8080: Connection refused"),
        "{text}"
    );
    assert_eq!(
        text.lines().filter(|l| l.contains("FAILED")).count(),
        3,
        "{text}"
    );
}

/// Four CPUs (the LSM framework paper's machine) come up by hotplug too,
/// in virtual time, and two boots give the same figures within 0.5 %.
#[test]
fn four_cpus_boot_four_in_virtual_time_and_repeat() {
    let boot = || {
        let out = run(&[
            "vm",
            "run",
            "--kernel",
            "6.1",
            "--cpus",
            "4",
            "--",
            "sh",
            "-c",
            "nproc; cat /sys/devices/system/cpu/online; lsmpmon bench --ops null,pipe,fork_exit --samples 3 --json",
        ]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{text}");
        let words: Vec<&str> = text.split_whitespace().take(2).collect();
        assert_eq!(words, ["4", "0-3"]);
        let (_, b) = text.split_once('{').unwrap();
        json(&format!("{{{b}"))
    };
    let (a, b) = (boot(), boot());
    assert_eq!(a["provenance"]["time"], "virtual");
    assert_eq!(a["provenance"]["online_cpus"], 4);
    for op in ["null", "pipe", "fork_exit"] {
        let median = |r: &Value| {
            r["results"]
                .as_array()
                .unwrap()
                .iter()
                .find(|o| o["op"] == op)
                .unwrap()["median"]
                .as_f64()
                .unwrap()
        };
        let (x, y) = (median(&a), median(&b));
        assert!(((y - x) / x).abs() < 0.005, "{op}: {x} then {y}");
    }
}

#[test]
fn two_cpus_boot_two_and_are_part_of_the_cell() {
    // Under -icount the guest boots on one CPU (QEMU 7.2 stops virtual
    // time when it boots on two) and brings the second up by hotplug.
    let out = run(&[
        "vm",
        "run",
        "--kernel",
        "6.1",
        "--cpus",
        "2",
        "--",
        "sh",
        "-c",
        "nproc; cat /sys/devices/system/cpu/online; lsmpmon bench --ops null --samples 1 --json",
    ]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}");
    let words: Vec<&str> = text.split_whitespace().take(2).collect();
    assert_eq!(words, ["2", "0-1"]);
    let bench = json(
        text.split_once('{')
            .map(|(_, b)| format!("{{{b}"))
            .as_deref()
            .unwrap(),
    );
    assert_eq!(bench["provenance"]["time"], "virtual");
    assert_eq!(bench["provenance"]["online_cpus"], 2);
    assert!(bench["provenance"]["boot_params"]
        .as_array()
        .unwrap()
        .contains(&Value::from("maxcpus=1")));

    let cell = web_cell("c2", "2");
    assert_eq!(cell["status"], "passed", "{cell}");
    assert_eq!(cell["options"]["cpus"], 2);
    // The guest saw both (the bench's provenance).
    assert_eq!(cell["guest"]["bench"]["provenance"]["online_cpus"], 2);
    // Two CPUs run in virtual time too.
    assert_eq!(cell["guest"]["bench"]["provenance"]["time"], "virtual");
    assert_eq!(cell["options"]["icount"], "shift=0,sleep=off");
    assert_eq!(cell["time"], "virtual");
    assert!(
        cell["id"].as_str().unwrap().contains("__none__c2__"),
        "{}",
        cell["id"]
    );
    assert!(op(&cell, "web_c8")["latency"]["requests"].as_u64().unwrap() > 0);
}
