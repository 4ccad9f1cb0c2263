//! The layers are crates (issue 35): each depends only on layers below it,
//! so an upward import is a compile error, and docs/layers.txt, the graph a
//! newcomer reads, is today's. `LSMPMON_WRITE_LAYERS=1` rewrites it.
use std::{collections::BTreeMap, path::Path, process::Command};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Every crate of the workspace, bottom to top, with its layer's name.
const LAYERS: &[(&str, &[&str])] = &[
    ("base", &["lsmpmon-base"]),
    ("model", &["lsmpmon-model"]),
    (
        "engines",
        &[
            "lsmpmon-vm",
            "lsmpmon-trace",
            "lsmpmon-bench",
            "lsmpmon-mac",
        ],
    ),
    ("the tracer's front ends", &["lsmpmon-serve", "lsmpmon-top"]),
    ("lab", &["lsmpmon-lab"]),
    ("report", &["lsmpmon-report"]),
    ("cli", &["lsmpmon"]),
];

/// Build scripts' helper: no layer, and only build scripts may use it.
const BUILD_HELPER: &str = "lsmpmon-build";

fn rank(name: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, crates)| crates.contains(&name))
}

fn metadata() -> serde_json::Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
        ])
        .current_dir(ROOT)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Each workspace crate -> the workspace crates it depends on, by kind
/// ("normal", "dev", "build").
fn graph() -> BTreeMap<String, Vec<(String, String)>> {
    let meta = metadata();
    let mut graph = BTreeMap::new();
    for pkg in meta["packages"].as_array().unwrap() {
        let deps = pkg["dependencies"].as_array().unwrap();
        let ours = deps
            .iter()
            .filter(|d| d["path"].is_string())
            .map(|d| {
                let kind = d["kind"].as_str().unwrap_or("normal").to_string();
                (d["name"].as_str().unwrap().to_string(), kind)
            })
            .collect();
        graph.insert(pkg["name"].as_str().unwrap().to_string(), ours);
    }
    graph
}

#[test]
fn every_crate_has_a_layer_and_depends_only_on_layers_below_it() {
    let graph = graph();
    let mut problems = vec![];
    for (name, deps) in &graph {
        if name == BUILD_HELPER {
            continue;
        }
        let Some(mine) = rank(name) else {
            problems.push(format!("{name} is in no layer: add it to LAYERS"));
            continue;
        };
        for (dep, kind) in deps {
            match (dep.as_str(), kind.as_str()) {
                (BUILD_HELPER, "build") => {}
                (BUILD_HELPER, _) => problems.push(format!("{name} uses {dep} outside build.rs")),
                _ if rank(dep).is_some_and(|r| r < mine) => {}
                _ => problems.push(format!("{name} -> {dep} ({kind}) is not downward")),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert_eq!(
        graph.len(),
        LAYERS.iter().map(|(_, c)| c.len()).sum::<usize>() + 1,
        "a crate of LAYERS is not in the workspace: {:?}",
        graph.keys()
    );
}

/// `cargo build`, `test` and `clippy` without `-p` cover every layer (the
/// build scripts' helper is built for the host only).
#[test]
fn every_layer_is_a_default_member() {
    let meta = metadata();
    let names: std::collections::HashMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let defaults: Vec<&str> = meta["workspace_default_members"]
        .as_array()
        .expect("cargo metadata lists the default members (cargo 1.71+)")
        .iter()
        .map(|id| names[id.as_str().unwrap()])
        .collect();
    for (_, crates) in LAYERS {
        for name in *crates {
            assert!(defaults.contains(name), "{name} is not in default-members");
        }
    }
    assert!(!defaults.contains(&BUILD_HELPER));
}

/// The graph as docs/layers.txt shows it: layers top down, each crate with
/// the crates it depends on.
fn drawn(graph: &BTreeMap<String, Vec<(String, String)>>) -> String {
    let mut text = String::from(
        "# lsmpmon's layers: the workspace's crates (crates/), top down; each depends\n\
         # only on layers below it (tests/layers.rs checks; LSMPMON_WRITE_LAYERS=1 writes this)\n",
    );
    for (i, (layer, crates)) in LAYERS.iter().enumerate().rev() {
        text += &format!("\nlayer {i} {layer}\n");
        for name in *crates {
            let mut deps: Vec<&str> = graph[*name]
                .iter()
                .filter(|(d, kind)| kind == "normal" && d != BUILD_HELPER)
                .map(|(d, _)| d.strip_prefix("lsmpmon-").unwrap_or(d))
                .collect();
            deps.sort();
            let deps = if deps.is_empty() {
                "-".into()
            } else {
                deps.join(", ")
            };
            text += &format!("  {name:<16} -> {deps}\n");
        }
    }
    text
}

#[test]
fn the_committed_graph_is_current() {
    let text = drawn(&graph());
    let path = Path::new(ROOT).join("docs/layers.txt");
    if std::env::var_os("LSMPMON_WRITE_LAYERS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &text).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        committed, text,
        "docs/layers.txt is stale: LSMPMON_WRITE_LAYERS=1 cargo test --test layers"
    );
}
