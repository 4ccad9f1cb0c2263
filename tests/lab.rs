//! `lsmpmon lab`: every configuration proves itself in a real guest, a
//! permissive one fails its proof and yields nothing, broken guests do not
//! take the matrix down, reruns repeat, results follow their schema.
mod common;

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use common::{
    cell_median as median, fresh_dir, json, lab_cell as cell, lab_cells as cells, one_error_line,
    validate, LSMPMON,
};
use serde_json::Value;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/configs");
const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/configs");

fn tmpdir(name: &str) -> PathBuf {
    fresh_dir("lab", name)
}

fn lab(args: &[&str]) -> Output {
    let out = Command::new(LSMPMON)
        .arg("lab")
        .args(args)
        .output()
        .expect("running lsmpmon lab");
    eprintln!(
        "--- lab {args:?} stderr ---\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The shipped configurations (every directory with a spec).
fn shipped() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(SHIPPED)
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("spec.toml").is_file())
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

#[test]
fn unknown_names_and_malformed_specs_are_one_line_with_exit_2() {
    let res = tmpdir("errors");
    let r = res.to_str().unwrap();
    let out = lab(&["run", "--kernels", "6.1,4.19", "--results", r]);
    assert_eq!(out.status.code(), Some(2));
    assert!(one_error_line(&out).contains("unknown kernel '4.19'"));

    let out = lab(&["run", "--configs", "none,selinux-maxi", "--results", r]);
    assert_eq!(out.status.code(), Some(2));
    let line = one_error_line(&out);
    assert!(
        line.contains("unknown configuration 'selinux-maxi'") && line.contains("none"),
        "{line}"
    );

    let out = lab(&[
        "run",
        "--configs",
        "none",
        "--ops",
        "stat,fly",
        "--results",
        r,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(one_error_line(&out).contains("fly"));

    let dir = tmpdir("malformed");
    std::fs::create_dir_all(dir.join("broken")).unwrap();
    std::fs::write(
        dir.join("broken/spec.toml"),
        "description = \"x\"\nlsm = \"selinux\"\n[proof]\nkind = \"deny\"\nrecrd = \"kmsg\"\n",
    )
    .unwrap();
    let out = lab(&[
        "run",
        "--configs",
        "broken",
        "--config-dir",
        dir.to_str().unwrap(),
        "--results",
        r,
    ]);
    assert_eq!(out.status.code(), Some(2));
    let line = one_error_line(&out);
    assert!(
        line.contains("broken/spec.toml") && line.contains("recrd"),
        "{line}"
    );
    // Nothing was booted or written for a matrix that never started.
    assert_eq!(
        std::fs::read_dir(res.join("cells"))
            .map(|d| d.count())
            .unwrap_or(0),
        0
    );

    let out = lab(&["tables", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(one_error_line(&out).contains("not a lab results directory"));
}

/// One 6.1 matrix: every shipped configuration, a copy of one from a
/// directory the test wrote, a permissive fixture and a crashing guest.
#[test]
fn every_configuration_proves_itself_and_reruns_repeat() {
    let res = tmpdir("matrix");
    let mine = tmpdir("mine");
    let copy = mine.join("my-landlock");
    std::fs::create_dir_all(&copy).unwrap();
    for f in ["spec.toml", "README.md"] {
        std::fs::copy(Path::new(SHIPPED).join("landlock").join(f), copy.join(f)).unwrap();
    }
    let mut configs = shipped();
    configs.extend(["my-landlock", "permissive", "crash"].map(String::from));
    let out = lab(&[
        "run",
        "--kernels",
        "6.1",
        "--configs",
        &configs.join(","),
        "--config-dir",
        mine.to_str().unwrap(),
        "--config-dir",
        FIXTURES,
        "--ops",
        "null,stat,open_close",
        "--results",
        res.to_str().unwrap(),
    ]);
    // Two cells fail on purpose; every other one is kept and passes.
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Table 3 form"), "{stdout}");
    let all = cells(&res);
    assert_eq!(all.len(), configs.len(), "one result per cell");
    let schema_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema");
    assert!(schema_dir.join("lab-cell.schema.json").is_file());
    for c in &all {
        validate("lab-cell.schema.json", &c.to_string());
        if let Some(b) = c["guest"]["bench"].as_object() {
            validate("bench.schema.json", &Value::Object(b.clone()).to_string());
        }
    }
    // Smack needs lsmpmon's own kernel: on Debian's it is not applicable.
    let smack = cell(&all, "smack");
    assert_eq!(smack["status"], "not_applicable");
    assert!(smack["reason"]
        .as_str()
        .unwrap()
        .contains("CONFIG_SECURITY_SMACK"));
    for name in shipped().iter().chain([&"my-landlock".to_string()]) {
        if name == "smack" {
            continue;
        }
        let c = cell(&all, name);
        assert_eq!(c["status"], "passed", "{name}: {}", c["reason"]);
        check_proof(name, &c["guest"]["proof"]);
        assert!(median(c, "stat") > 1000.0, "{name}: stat measured");
        assert_eq!(c["kernel"]["series"], "6.1");
        assert_eq!(c["time"], "virtual");
    }
    // none runs the matrix too: what the policies deny, none allows.
    let none = &cell(&all, "none")["guest"]["proof"];
    assert!(none["confined"]
        .as_array()
        .unwrap()
        .iter()
        .all(|o| o["errno"].is_null()));

    let p = cell(&all, "permissive");
    assert_eq!(p["status"], "proof_failed");
    assert!(
        p["reason"].as_str().unwrap().contains("read_secret"),
        "{}",
        p["reason"]
    );
    assert!(
        p["guest"]["bench"].is_null() && p["guest"]["footprint"].is_null(),
        "nothing measured"
    );

    let crash = cell(&all, "crash");
    assert_eq!(crash["status"], "failed");
    assert!(crash["reason"].as_str().unwrap().contains("console log"));
    assert!(Path::new(crash["log_dir"].as_str().unwrap())
        .join("console.log")
        .is_file());

    let index = json(&std::fs::read_to_string(res.join("index.json")).unwrap());
    assert_eq!(index["cells"].as_array().unwrap().len(), configs.len());
    let md = std::fs::read_to_string(res.join("tables.md")).unwrap();
    assert!(
        md.contains("| stat (µs)") && md.contains("proof failed"),
        "{md}"
    );

    // The same cell again, from its own provenance (default samples): within
    // 0.5 % for stat. open_close is held to 2 %: across boots it has moved by
    // up to 1.1 %; probably kernel randomization (slab freelists, hence dentry
    // hash chains, seeded from TCG's RDRAND, i.e. the host), not yet proved.
    for name in ["none", "selinux-mini", "tomoyo"] {
        let before = cell(&all, name).clone();
        let file = res
            .join("cells")
            .join(format!("{}.json", before["id"].as_str().unwrap()));
        let out = lab(&["rerun", file.to_str().unwrap()]);
        assert!(out.status.success(), "rerun {name}");
        let after = cell(&cells(&res), name).clone();
        assert_ne!(after["id"], before["id"]);
        for (op, tolerance) in [("stat", 0.005), ("open_close", 0.02)] {
            let (a, b) = (median(&before, op), median(&after, op));
            assert!(((b - a) / a).abs() < tolerance, "{name} {op}: {a} then {b}");
        }
    }
}

fn check_proof(name: &str, p: &Value) {
    assert_eq!(p["passed"], true, "{name}");
    assert!(
        p["unconfined"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["errno"].is_null()),
        "{name}: every row succeeds before the policy"
    );
    match p["kind"].as_str().unwrap() {
        "deny" => {
            let denied: Vec<&Value> = p["confined"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|o| {
                    o["expect"] == "deny"
                        && !p["not_expressed"].as_array().unwrap().contains(&o["row"])
                })
                .collect();
            assert!(!denied.is_empty());
            for o in denied {
                let e = o["errno"].as_i64();
                assert!(e == Some(13) || e == Some(1), "{name}: {o}");
            }
            assert!(
                p["record"].is_string() || name.contains("landlock"),
                "{name}: the kernel's record of the denial"
            );
        }
        "measure" => {
            assert_eq!(p["measurements"].as_array().unwrap().len(), 2, "{name}");
            if name == "ima-tpm" {
                assert!(p["pcr10_before"].is_string());
                assert_ne!(p["pcr10_before"], p["pcr10_after"]);
            }
        }
        "baseline" => assert_eq!(p["active_lsms"], p["expected_lsms"]),
        k => panic!("{name}: unknown proof kind {k}"),
    }
}

/// Smack on lsmpmon's own kernel (built from Debian's linux-source-6.1 on
/// first use): a real denial, and percentages only against `none` booted on
/// that same kernel.
#[test]
fn smack_proves_its_denial_on_its_own_kernel() {
    let res = tmpdir("smack");
    let out = lab(&[
        "run",
        "--kernels",
        "6.1-smack",
        "--configs",
        "none,smack",
        "--ops",
        "null,stat,open_close,tcp",
        "--samples",
        "3",
        "--results",
        res.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all = cells(&res);
    for name in ["none", "smack"] {
        let c = cell(&all, name);
        assert_eq!(c["status"], "passed", "{name}: {}", c["reason"]);
        check_proof(name, &c["guest"]["proof"]);
        assert_eq!(c["kernel"]["series"], "6.1-smack");
        assert_eq!(c["kernel"]["package"], "linux-source-6.1");
        assert_eq!(c["kernel"]["packages"][0]["name"], "linux-source-6.1");
    }
    let smack = cell(&all, "smack");
    assert_eq!(
        smack["guest"]["active_lsms"],
        json("[\"capability\", \"smack\"]")
    );
    let record = smack["guest"]["proof"]["record"].as_str().unwrap();
    assert!(record.contains("lsm=SMACK"), "{record}");
    // Every access check costs instructions, and virtual time counts them.
    assert!(median(smack, "stat") > median(cell(&all, "none"), "stat"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("kernel 6.1-smack"), "{stdout}");
}

/// A hung guest is killed at the timeout; the cell that finished is kept.
#[test]
fn hung_guest_keeps_the_rest() {
    let res = tmpdir("hang");
    let out = lab(&[
        "run",
        "--kernels",
        "6.1",
        "--configs",
        "hang,none",
        "--config-dir",
        FIXTURES,
        "--ops",
        "null",
        "--samples",
        "1",
        "--sample-ms",
        "1",
        "--timeout",
        "100",
        "--results",
        res.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let all = cells(&res);
    assert_eq!(all.len(), 2);
    let h = cell(&all, "hang");
    assert_eq!(h["status"], "failed");
    assert!(
        h["reason"].as_str().unwrap().contains("did not finish"),
        "{}",
        h["reason"]
    );
    assert_eq!(cell(&all, "none")["status"], "passed");
}

/// A kernel that cannot run a configuration gets a "not applicable" cell
/// with the reason, and nothing boots for it.
#[test]
fn landlock_on_5_10_is_not_applicable() {
    let res = tmpdir("na");
    let out = lab(&[
        "run",
        "--kernels",
        "5.10",
        "--configs",
        "landlock",
        "--results",
        res.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let all = cells(&res);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0]["status"], "not_applicable");
    assert!(all[0]["reason"]
        .as_str()
        .unwrap()
        .contains("CONFIG_SECURITY_LANDLOCK"));
    assert!(all[0]["guest"].is_null());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("not applicable"), "{stdout}");
}
