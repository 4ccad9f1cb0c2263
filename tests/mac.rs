//! The three reference MACs (`lsmpmon mac`, configs/mac-*): each proves the
//! access matrix in a lab cell and agrees with the others and with `none`;
//! a rename and a hard link show what each identification implies; a
//! malformed policy is one line; nothing stays attached after unload.
mod common;

use std::{collections::BTreeMap, path::PathBuf};

use common::{fresh_dir, json, lab_run, run_logged as run, succeeded};
use serde_json::Value;

fn tmpdir(name: &str) -> PathBuf {
    fresh_dir("mac", name)
}

const METHODS: [&str; 3] = ["label", "path", "inode"];

/// Each mac-* cell passes its deny proof row by row with the MAC's own
/// errno (EACCES) and record; on the allowed rows all four configurations
/// (the three MACs and `none`) succeed alike.
#[test]
fn the_three_macs_prove_the_matrix_and_agree() {
    let res = tmpdir("lab");
    let out = run(&lab_run(
        &res,
        "6.1",
        "none,mac-label,mac-path,mac-inode",
        "stat,open_close",
        &["--samples", "3", "--jobs", "1"],
    ));
    succeeded(&out);
    let cells: Vec<Value> = std::fs::read_dir(res.join("cells"))
        .unwrap()
        .flatten()
        .map(|e| json(&std::fs::read_to_string(e.path()).unwrap()))
        .collect();
    let cell = |name: &str| {
        cells
            .iter()
            .find(|c| c["config"]["name"] == name)
            .unwrap_or_else(|| panic!("no cell for {name}"))
    };
    let mut allowed: BTreeMap<&str, Vec<(String, Value)>> = BTreeMap::new();
    for name in ["none", "mac-label", "mac-path", "mac-inode"] {
        let c = cell(name);
        assert_eq!(c["status"], "passed", "{name}: {}", c["reason"]);
        let p = &c["guest"]["proof"];
        assert_eq!(p["passed"], true, "{name}");
        for o in p["confined"].as_array().unwrap() {
            let row = o["row"].as_str().unwrap().to_string();
            if o["expect"] == "deny" && name != "none" {
                assert_eq!(o["errno"], 13, "{name} {row}: the MACs deny with EACCES");
            } else if o["expect"] == "allow" {
                allowed
                    .entry(name)
                    .or_default()
                    .push((row, o["errno"].clone()));
            }
        }
        if name != "none" {
            assert!(p["not_expressed"].as_array().unwrap().is_empty());
            let record = p["record"].as_str().unwrap_or_default();
            assert!(record.contains("lsmpmon-mac: denied"), "{name}: {record}");
            let lsms = c["guest"]["active_lsms"].as_array().unwrap();
            assert!(lsms.contains(&json(r#""bpf""#)), "{name}: {lsms:?}");
        }
    }
    let none = &allowed["none"];
    assert_eq!(none.len(), 3, "read_public, create_work, exec_true");
    assert!(none.iter().all(|(_, e)| e.is_null()), "{none:?}");
    for name in ["mac-label", "mac-path", "mac-inode"] {
        assert_eq!(&allowed[name], none, "{name} agrees with none");
    }
}

/// The guest script of the identification test: per method, load the
/// policy, then move names and inodes around as root (not the subject) and
/// let the subject (a copy of lsmpmon named lsmpmon-workload) try them.
const IDENTITY_SCRIPT: &str = r#"
set -u
W=/usr/libexec/lsmpmon-workload
mkdir -p /usr/libexec && cp /bin/lsmpmon $W
printf 'deny open /srv/m/a lab_a\ndeny create /tmp/mc lab_mc\n' > /tmp/p
printf 'deny open /srv/m/ok lab_ok\ndeny opn /srv/m/a lab_a\n' > /tmp/bad
try() { echo "$1 $2 $($W mac try $3 $4 | sed 's/.*: //')"; }
for m in label path inode; do
    rm -rf /srv/m /tmp/mc /tmp/other; mkdir -p /srv/m /tmp/mc /tmp/other
    echo a > /srv/m/a
    lsmpmon mac label --policy /tmp/p >/dev/null
    lsmpmon mac load --method $m --policy /tmp/p >/dev/null || echo "$m load-failed"
    echo "$m status-loaded $(lsmpmon mac status | sed 's/ attached:.*/ attached/')"
    try $m first read /srv/m/a
    ln /srv/m/a /srv/m/hardlink
    try $m hardlink read /srv/m/hardlink
    mv /srv/m/a /srv/m/renamed
    try $m renamed read /srv/m/renamed
    echo new > /srv/m/a
    try $m new-at-old-name read /srv/m/a
    try $m create-in-mount create /tmp/mc/x
    try $m create-elsewhere create /tmp/other/x
    lsmpmon mac unload >/dev/null
    echo "$m status-after-unload $(lsmpmon mac status | sed 's/ attached:.*/ attached/')"
    echo "$m pins-after-unload $(ls /sys/fs/bpf | grep -c lsmpmon-mac)"
    try $m after-unload read /srv/m/renamed
done
lsmpmon mac load --method path --policy /tmp/bad 2>/tmp/err; echo "malformed rc $?"
echo "malformed lines $(wc -l < /tmp/err)"
echo "malformed line $(cat /tmp/err)"
echo "malformed status $(lsmpmon mac status | sed 's/ attached:.*/ attached/')"
"#;

#[test]
fn rename_link_malformed_and_unload() {
    let script = tmpdir("identity").join("identity.sh");
    std::fs::write(&script, IDENTITY_SCRIPT).unwrap();
    let copy = format!("{}:/identity.sh", script.display());
    let out = run(&[
        "vm",
        "run",
        "--kernel",
        "6.1",
        "--lsm",
        "capability,bpf",
        "--timeout",
        "600",
        "--copy",
        &copy,
        "--",
        "sh",
        "/identity.sh",
    ]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    eprintln!("{text}");
    assert!(out.status.success());
    let said = |m: &str, what: &str| -> String {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{m} {what} ")))
            .unwrap_or_else(|| panic!("no '{m} {what}' line"))
            .trim()
            .to_string()
    };
    // label and inode name the file (its inode, its cached label): the hard
    // link and the renamed file stay denied, a new file at the old name is
    // another inode, unlabelled (a label-cache miss: no rule). path names
    // the name: the other names are allowed, the new file at it denied.
    for (m, expected) in [
        ("label", ["EACCES", "EACCES", "EACCES", "allowed"]),
        ("inode", ["EACCES", "EACCES", "EACCES", "allowed"]),
        ("path", ["EACCES", "allowed", "allowed", "EACCES"]),
    ] {
        let got = ["first", "hardlink", "renamed", "new-at-old-name"].map(|w| said(m, w));
        assert_eq!(
            got, expected,
            "{m}: first, hard link, renamed, new file at the old name"
        );
    }
    for m in METHODS {
        // /tmp is its own tmpfs: the path walk crosses the mount.
        assert_eq!(said(m, "create-in-mount"), "EACCES", "{m}");
        assert_eq!(said(m, "create-elsewhere"), "allowed", "{m}");
        // status sees the links whoever holds them: six while loaded, none after.
        assert_eq!(said(m, "status-loaded"), "mac: 6 programs attached", "{m}");
        assert_eq!(
            said(m, "status-after-unload"),
            "mac: 0 programs attached",
            "{m}"
        );
        assert_eq!(said(m, "pins-after-unload"), "0", "{m}");
        assert_eq!(said(m, "after-unload"), "allowed", "{m}: nothing enforces");
    }
    assert_eq!(said("malformed", "rc"), "2");
    assert_eq!(said("malformed", "lines"), "1");
    let line = said("malformed", "line");
    assert!(
        line.starts_with("lsmpmon: error: policy /tmp/bad: line 2: unknown access 'opn'"),
        "{line}"
    );
    assert_eq!(said("malformed", "status"), "mac: 0 programs attached");
}

/// `lab run --bench-dir` (how the depth curve is run): the benchmark runs
/// there, the cell records it, and a directory that is not absolute is one
/// usage line before anything boots.
#[test]
fn bench_dir_is_where_the_benchmark_runs() {
    let res = tmpdir("bench-dir");
    let out = run(&lab_run(&res, "", "none", "", &["--bench-dir", "tmp/x"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(common::one_error_line(&out).contains("--bench-dir"));
    assert!(!res.join("cells").exists(), "nothing ran");

    let deep = "/d1/d2/d3/d4";
    let out = run(&lab_run(
        &res,
        "6.1",
        "none",
        "stat",
        &["--samples", "1", "--sample-ms", "1", "--bench-dir", deep],
    ));
    succeeded(&out);
    let cell = std::fs::read_dir(res.join("cells"))
        .unwrap()
        .flatten()
        .next()
        .unwrap();
    let c = json(&std::fs::read_to_string(cell.path()).unwrap());
    assert_eq!(c["status"], "passed", "{}", c["reason"]);
    assert_eq!(c["options"]["bench_dir"], deep);
    assert_eq!(c["guest"]["bench"]["options"]["dir"], deep);
    common::validate("lab-cell.schema.json", &c.to_string());
}
