//! The lab on a three-node Slurm cluster on one machine (tests/common/
//! netns.rs: each slurmd in its own network, UTS, PID and mount
//! namespaces, with its own cache; one shared results directory). Two
//! submissions share the results directory; one node is lost with a guest
//! running: its cell is requeued by Slurm and passes elsewhere; `lab
//! status` and `lab merge` run while cells are written, and the merge of
//! the directory holds each cell once.
mod common;
#[path = "common/slurm.rs"]
mod slurm;

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    process::Output,
    time::{Duration, Instant},
};

use common::{fresh_dir, json, lab_cells};
use serde_json::Value;
use slurm::Cluster;

/// Two matrices sharing one cell (6.1 tomoyo): 5 cells, 4 identities.
const PLAN_A: &str = "none,tomoyo,landlock";
const PLAN_B: &str = "tomoyo,apparmor";

fn lab(cluster: &Cluster, args: &[&str]) -> Output {
    common::lab_logged(args, Some(("SLURM_CONF", cluster.conf.as_os_str())))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `lab submit --slurm --no-wait` of 6.1 × `configs`: its plan file.
fn submit(cluster: &Cluster, results: &Path, configs: &str) -> PathBuf {
    let cache = cluster.cache();
    let out = lab(
        cluster,
        &[
            "submit",
            "--slurm",
            "--no-wait",
            "--results",
            results.to_str().unwrap(),
            "--cache-dir",
            cache.to_str().unwrap(),
            "--kernels",
            "6.1",
            "--configs",
            configs,
            "--ops",
            "null,stat",
            "--samples",
            "3",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    let plan = err
        .lines()
        .find_map(|l| {
            l.split_once(" of plan ")?
                .1
                .split_once(" (")?
                .1
                .strip_suffix(')')
        })
        .unwrap_or_else(|| panic!("no plan path in {err}"));
    PathBuf::from(plan)
}

/// The machine's kernel cache, where the other tests leave 6.1.
fn user_cache() -> PathBuf {
    std::env::var_os("LSMPMON_CACHE").map_or_else(
        || PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/lsmpmon"),
        PathBuf::from,
    )
}

/// 6.1 in the machine's cache (fetched by `lab plan` if it is not there
/// yet), then in every node's.
fn provision(cluster: &Cluster, dir: &Path) {
    let out = lab(
        cluster,
        &[
            "plan",
            "--kernels",
            "6.1",
            "--configs",
            "none",
            "--cache-dir",
            cluster.cache().to_str().unwrap(),
            "--results",
            dir.join("unused").to_str().unwrap(),
            "-o",
            dir.join("fetch.json").to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "fetching 6.1: {}", text(&out.stderr));
    cluster.provision(&["kernels/6.1-cloud"]);
}

/// Array tasks (`J_I`) squeue shows on `node`.
fn tasks_on(cluster: &Cluster, node: &str) -> Vec<String> {
    let out = cluster.command("squeue", &["-h", "-r", "-w", node, "-o", "%i"]);
    text(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Waits for a node with a guest running (a QEMU process in its PID
/// namespace) and its array task: that node's name and tasks.
fn a_node_with_a_guest(cluster: &Cluster) -> (String, Vec<String>) {
    let start = Instant::now();
    loop {
        for n in &cluster.nodes {
            let guest = n
                .processes()
                .iter()
                .any(|(_, c)| c.starts_with("qemu-system"));
            let tasks = tasks_on(cluster, &n.name);
            if guest && !tasks.is_empty() {
                return (n.name.clone(), tasks);
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "no guest started on any node"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// `lab status PLAN`: exit 0 or 1, never an unreadable cell.
fn status(cluster: &Cluster, plan: &Path) -> (bool, String) {
    let out = lab(cluster, &["status", plan.to_str().unwrap()]);
    let (t, err) = (text(&out.stdout), text(&out.stderr));
    assert!(matches!(out.status.code(), Some(0 | 1)), "{t}{err}");
    assert!(!err.contains("skipping") && !err.contains("error"), "{err}");
    (
        t.contains(" 0 pending, 0 running") && !t.contains("queue unknown"),
        t,
    )
}

/// A merge while tasks write cells: every cell read whole, none skipped.
fn merge_midway(cluster: &Cluster, results: &Path, out: &Path) -> u64 {
    let o = lab(
        cluster,
        &["merge", out.to_str().unwrap(), results.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let m = json(&std::fs::read_to_string(out.join("merge.json")).unwrap());
    assert_eq!(m["skipped"], Value::Array(vec![]), "{m}");
    m["cells"].as_u64().unwrap()
}

/// Cell files (`*.json`) under `results/cells`.
fn cells_written(results: &Path) -> usize {
    std::fs::read_dir(results.join("cells")).map_or(0, |d| {
        d.flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .count()
    })
}

/// The loss's figures: until Slurm set the node down, until the lost
/// task ran again on another node.
struct Loss {
    node: String,
    tasks: Vec<String>,
    down_s: Option<f64>,
    elsewhere_s: Option<f64>,
}

/// Polls both plans until settled; midway merges and the loss's timing.
fn settle(cluster: &Cluster, plans: &[PathBuf], results: &Path, dir: &Path, loss: &mut Loss) {
    let (start, lost_at) = (Instant::now(), Instant::now());
    let mut merges = 0;
    loop {
        if loss.down_s.is_none() && cluster.node_state(&loss.node).starts_with("down") {
            loss.down_s = Some(lost_at.elapsed().as_secs_f64());
        }
        if loss.elsewhere_s.is_none() {
            let running: Vec<String> = cluster
                .nodes
                .iter()
                .filter(|n| n.name != loss.node)
                .flat_map(|n| tasks_on(cluster, &n.name))
                .collect();
            if loss.tasks.iter().all(|t| running.contains(t)) {
                loss.elapsed_now(lost_at);
            }
        }
        let settled = plans.iter().all(|p| {
            let (done, t) = status(cluster, p);
            eprintln!("{t}");
            done
        });
        if settled {
            return;
        }
        // While other cells are still running.
        if merges < 3 && cells_written(results) > 0 {
            merges += 1;
            let n = merge_midway(cluster, results, &dir.join(format!("midway-{merges}")));
            assert!((1..=4).contains(&n), "{n} cells merged midway");
        }
        assert!(
            start.elapsed() < Duration::from_secs(900),
            "not settled after 15 min"
        );
        std::thread::sleep(Duration::from_secs(2));
    }
}

impl Loss {
    fn elapsed_now(&mut self, since: Instant) {
        self.elsewhere_s = Some(since.elapsed().as_secs_f64());
    }
}

/// Every cell once, where it ran, the lost task's cell from another node
/// after one requeue.
fn check_cells(results: &Path, loss: &Loss) {
    let cells = lab_cells(results);
    assert_eq!(cells.len(), 5, "one cell file a planned cell");
    for c in &cells {
        assert_eq!(c["status"], "passed", "{}", c["id"]);
        let task = &c["task"];
        assert_eq!(task["engine"], "slurm");
        let node = task["node"].as_str().unwrap();
        assert!(["node1", "node2", "node3"].contains(&node), "{task}");
        let job = task["job"].as_str().unwrap();
        if loss.tasks.iter().any(|t| t == job) {
            assert_eq!(task["restarts"], 1, "{task}");
            assert_ne!(node, loss.node, "{task}");
        } else {
            assert_eq!(task["restarts"], 0, "{task}");
        }
    }
    let plans: BTreeSet<&str> = cells
        .iter()
        .map(|c| c["plan"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(plans.len(), 2, "{plans:?}");
}

/// The merge: four identities, each once; the shared cell's other run
/// superseded; nothing skipped or forced.
fn check_merge(cluster: &Cluster, results: &Path, merged: &Path) {
    let out = lab(
        cluster,
        &["merge", merged.to_str().unwrap(), results.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let m = json(&std::fs::read_to_string(merged.join("merge.json")).unwrap());
    assert_eq!(m["cells"], 4, "{m}");
    assert_eq!(m["superseded"].as_array().unwrap().len(), 1, "{m}");
    for key in ["skipped", "forced", "disagreements"] {
        assert_eq!(m[key], Value::Array(vec![]), "{key}: {m}");
    }
    let cells = lab_cells(merged);
    let configs: BTreeSet<&str> = cells
        .iter()
        .map(|c| c["config"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(cells.len(), 4);
    assert_eq!(
        configs,
        BTreeSet::from(["none", "tomoyo", "landlock", "apparmor"])
    );
    assert!(cells.iter().all(|c| c["status"] == "passed"));
}

#[test]
fn three_nodes_one_lost_mid_array_two_submissions_merge_exactly() {
    let mut cluster = Cluster::start_nodes(3, 1, &user_cache());
    let dir = fresh_dir("cluster", "loss");
    provision(&cluster, &dir);
    let results = dir.join("results");
    let plans = [
        submit(&cluster, &results, PLAN_A),
        submit(&cluster, &results, PLAN_B),
    ];
    let (node, tasks) = a_node_with_a_guest(&cluster);
    eprintln!("--- losing {node} with tasks {tasks:?} ---");
    assert!(cluster.node(&node).kill(), "{node} left processes behind");
    let mut loss = Loss {
        node,
        tasks,
        down_s: None,
        elsewhere_s: None,
    };
    settle(&cluster, &plans, &results, &dir, &mut loss);
    eprintln!(
        "--- {} lost: down after {:?} s, its tasks running elsewhere after {:?} s ---",
        loss.node, loss.down_s, loss.elsewhere_s
    );
    assert!(loss.down_s.is_some(), "Slurm never set {} down", loss.node);
    assert!(
        loss.elsewhere_s.is_some(),
        "the lost tasks never ran elsewhere"
    );

    let mut said_requeued = false;
    for plan in &plans {
        let (_, t) = status(&cluster, plan);
        let out = lab(&cluster, &["status", plan.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{t}");
        assert!(t.contains(" 0 failed"), "{t}");
        assert!(t.lines().any(|l| l.starts_with("node node")), "{t}");
        for task in &loss.tasks {
            if let Some(l) = t.lines().find(|l| l.ends_with(&format!("(task {task})"))) {
                assert!(
                    l.contains("requeued by the engine 1 time(s); passed on node"),
                    "{l}"
                );
                assert!(!l.contains(&format!("on {} ", loss.node)), "{l}");
                said_requeued = true;
            }
        }
    }
    assert!(said_requeued, "lab status named no requeued cell");
    check_cells(&results, &loss);
    check_merge(&cluster, &results, &dir.join("merged"));
}
