//! The scaled kernel-build macrobenchmark: Debian's tcc compiles the kernel's
//! host programs in the guest, as the confined workload of every
//! configuration; without the compiler the op fails with one line.
mod common;

use std::{path::PathBuf, process::Command};

use common::{json, validate, LSMPMON};

#[test]
fn the_kernel_programs_build_under_every_policy() {
    let res = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("build-lab");
    let _ = std::fs::remove_dir_all(&res);
    let out = Command::new(LSMPMON)
        .args(["lab", "run", "--kernels", "6.1"])
        .args(["--configs", "none,selinux-mini,apparmor,tomoyo"])
        .args(["--ops", "build", "--samples", "1", "--sample-ms", "1"])
        .args(["--jobs", "1", "--results"])
        .arg(&res)
        .output()
        .unwrap();
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "lab run failed");
    let cells: Vec<serde_json::Value> = std::fs::read_dir(res.join("cells"))
        .unwrap()
        .flatten()
        .map(|e| json(&std::fs::read_to_string(e.path()).unwrap()))
        .collect();
    assert_eq!(cells.len(), 4);
    for c in &cells {
        validate("lab-cell.schema.json", &c.to_string());
        assert_eq!(c["status"], "passed", "{}", c["config"]["name"]);
        assert_eq!(c["compiler"]["package"], "tcc");
        let op = &c["guest"]["bench"]["results"][0];
        assert_eq!(op["op"], "build_kscripts");
        // Each build wrote five executables (checked ELF by the op).
        let (ops, bytes) = (
            op["proof_ops"].as_u64().unwrap(),
            op["proof_bytes"].as_u64().unwrap(),
        );
        assert!(ops >= 1 && bytes > ops * 5 * 4096, "{op}");
    }
}

#[test]
fn without_the_compiler_the_op_fails_with_one_line() {
    // The host has no /usr/src/lsmpmon-build (only the lab's guests do).
    let out = Command::new(LSMPMON)
        .args(["bench", "--ops", "build_kscripts", "--samples", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("build_kscripts FAILED: setting up build_kscripts: /usr/bin/tcc or /usr/src/lsmpmon-build is missing"),
        "{err}"
    );
}
