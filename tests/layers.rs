//! The layers only point down (issue 21): `scripts/layers.py` reads every
//! import of src/ and finds no cycle and no upward import, and the graph
//! committed in docs/layers.txt is today's.
use std::{path::Path, process::Command};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn layers(src: &Path) -> std::process::Output {
    Command::new("python3")
        .arg(Path::new(ROOT).join("scripts/layers.py"))
        .env("LAYERS_SRC", src)
        .output()
        .expect("python3 runs scripts/layers.py")
}

#[test]
fn no_cycle_and_no_upward_import_and_the_committed_graph_is_current() {
    let out = layers(&Path::new(ROOT).join("src"));
    let problems = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{problems}");
    let committed = std::fs::read_to_string(Path::new(ROOT).join("docs/layers.txt")).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        committed,
        "docs/layers.txt is stale: python3 scripts/layers.py > docs/layers.txt"
    );
}

/// The checker itself finds what it is for: an upward import and a cycle
/// planted in a copy of the tree.
#[test]
fn a_planted_upward_import_and_cycle_are_found() {
    let tmp = std::env::temp_dir().join(format!("lsmpmon-layers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let status = Command::new("cp")
        .args(["-r", &format!("{ROOT}/src"), tmp.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
    let plant = |file: &str, line: &str| {
        let p = tmp.join(file);
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, format!("{line}\n{text}")).unwrap();
    };
    plant("base/error.rs", "use crate::report::Format;");
    plant("vm/cache.rs", "use crate::vm::run::new_run_dir;");
    plant("vm/run.rs", "use crate::vm::cache::sha256_hex;");
    let out = layers(&tmp);
    let _ = std::fs::remove_dir_all(&tmp);
    let problems = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{problems}");
    assert!(
        problems.contains("upward import: base/error.rs -> report/mod.rs"),
        "{problems}"
    );
    assert!(
        problems.contains("file cycle:") && problems.contains("vm/cache.rs"),
        "{problems}"
    );
    assert!(problems.contains("module cycle:"), "{problems}");
}
