//! The lab on a three-node Slurm cluster on one machine (tests/common/
//! netns.rs: each slurmd in its own network, UTS, PID and mount
//! namespaces, with its own cache; one shared results directory). Two
//! submissions share the results directory; one node is lost with a guest
//! running: its cell is requeued by Slurm and passes elsewhere; another
//! node's guest is killed (SIGKILL, as the OOM killer kills): its cell
//! fails and `--resume` runs it again; `lab status` and `lab merge` run
//! while cells are written, and the merge of the directory holds each cell
//! once.
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
    submit_with(cluster, results, configs, &[])
}

fn submit_with(cluster: &Cluster, results: &Path, configs: &str, extra: &[&str]) -> PathBuf {
    let cache = cluster.cache();
    let mut args = vec![
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
    ];
    args.extend(extra);
    let out = lab(cluster, &args);
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

/// A guest of a node other than `lost` killed by SIGKILL, as the OOM
/// killer kills it: the node and its task.
fn kill_a_guest(cluster: &Cluster, lost: &str) -> (String, String) {
    let start = Instant::now();
    loop {
        for n in cluster.nodes.iter().filter(|n| n.name != lost) {
            let qemu: Vec<u32> = n
                .processes()
                .iter()
                .filter(|(_, c)| c.starts_with("qemu-system"))
                .map(|(p, _)| *p)
                .collect();
            let tasks = tasks_on(cluster, &n.name);
            if let ([pid], [task]) = (&qemu[..], &tasks[..]) {
                // SAFETY: a signal to a QEMU process of the test's own node.
                assert_eq!(unsafe { libc::kill(*pid as i32, libc::SIGKILL) }, 0);
                return (n.name.clone(), task.clone());
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no other node ran a guest"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A status's summary line (`plan …: N cells: …`).
fn first(status: &str) -> &str {
    status.lines().next().unwrap_or("")
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

/// Every planned cell passed once, where it ran; the lost task's cell
/// from another node after one requeue; the killed guest's cell failed
/// (its task's only run) and passed once resubmitted.
fn check_cells(results: &Path, loss: &Loss, killed: &str) {
    let cells = lab_cells(results);
    assert_eq!(cells.len(), 6, "5 planned cells and the killed guest's");
    for c in &cells {
        let task = &c["task"];
        assert_eq!(task["engine"], "slurm");
        let node = task["node"].as_str().unwrap();
        assert!(["node1", "node2", "node3"].contains(&node), "{task}");
        // Its own UTS namespace: the host name is the node's.
        assert_eq!(c["hostname"], node, "{}", c["id"]);
        let job = task["job"].as_str().unwrap();
        let lost = loss.tasks.iter().any(|t| t == job);
        assert_eq!(task["restarts"], u64::from(lost), "{task}");
        if lost {
            assert_ne!(node, loss.node, "{task}");
        }
        let want = if job == killed { "failed" } else { "passed" };
        assert_eq!(c["status"], want, "{}: {}", c["id"], c["reason"]);
    }
    let plans: BTreeSet<&str> = cells
        .iter()
        .map(|c| c["plan"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(plans.len(), 2, "{plans:?}");
}

/// The merge: four identities, each once and passed; nothing skipped or
/// forced.
fn check_merge(cluster: &Cluster, results: &Path, merged: &Path) {
    let out = lab(
        cluster,
        &["merge", merged.to_str().unwrap(), results.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let m = json(&std::fs::read_to_string(merged.join("merge.json")).unwrap());
    assert_eq!(m["cells"], 4, "{m}");
    // The shared cell's other run, and the killed guest's failed run.
    assert_eq!(m["superseded"].as_array().unwrap().len(), 2, "{m}");
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

/// The plan whose cell's guest was killed: one failed cell, named with
/// its reason and task; `lab submit --resume` runs it alone, and it passes.
fn resume_the_killed_guest(cluster: &Cluster, plans: &[PathBuf], task: &str) {
    let failed: Vec<(&PathBuf, String)> = plans
        .iter()
        .map(|p| (p, status(cluster, p).1))
        .filter(|(_, t)| !first(t).contains(" 0 failed"))
        .collect();
    let [(plan, t)] = &failed[..] else {
        panic!("one plan with a failed cell expected: {failed:?}")
    };
    assert!(first(t).contains(" 1 failed"), "{t}");
    let index = task.split_once('_').unwrap().1;
    let line = t
        .lines()
        .find(|l| l.starts_with(&format!("cell {index}, ")) && l.contains("failed"))
        .unwrap_or_else(|| panic!("no failed cell {index} in {t}"));
    assert!(line.contains(&format!("_{index}.out")), "{line}");
    let out = lab(
        cluster,
        &["submit", "--slurm", "--resume", plan.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (_, t) = status(cluster, plan);
    let moved = t
        .lines()
        .find(|l| l.starts_with(&format!("cell {index}, ")))
        .unwrap_or_else(|| panic!("{t}"));
    assert!(
        moved.contains("resubmitted 1 time(s); passed on node"),
        "{moved}"
    );
}

/// Every plan passed; the lost node's task said requeued, passed elsewhere.
fn check_statuses(cluster: &Cluster, plans: &[PathBuf], loss: &Loss) {
    let mut said_requeued = false;
    for plan in plans {
        let out = lab(cluster, &["status", plan.to_str().unwrap()]);
        let t = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{t}");
        assert!(first(&t).contains(" 0 failed"), "{t}");
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
    let (guest_node, guest_task) = kill_a_guest(&cluster, &loss.node);
    eprintln!("--- killed the guest of {guest_task} on {guest_node} ---");
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
    resume_the_killed_guest(&cluster, &plans, &guest_task);
    check_statuses(&cluster, &plans, &loss);
    check_cells(&results, &loss, &guest_task);
    check_merge(&cluster, &results, &dir.join("merged"));
    stopped_leaves_nothing(cluster);
}

/// Dropped, the cluster leaves no bridge, namespace, daemon or directory.
fn stopped_leaves_nothing(cluster: Cluster) {
    let (bridge, namespaces) = cluster.network_names().unwrap();
    let dir = cluster.dir.clone();
    drop(cluster);
    let out = std::process::Command::new("ip")
        .args(["link", "show", &bridge])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{bridge} is still there");
    let list = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let list = text(&list.stdout);
    assert!(
        namespaces.iter().all(|n| !list.contains(n.as_str())),
        "{list}"
    );
    assert!(!dir.exists(), "{} is still there", dir.display());
    let conf = dir.join("slurm.conf").display().to_string();
    let ps = std::process::Command::new("ps")
        .args(["-eo", "args"])
        .output()
        .unwrap();
    assert!(
        !text(&ps.stdout).contains(&conf),
        "a daemon of {conf} is left"
    );
}

/// Polls `plan` every 0.5 s until settled: seconds since `start`.
fn settled_after(cluster: &Cluster, plan: &Path, start: Instant) -> f64 {
    loop {
        let (done, t) = status(cluster, plan);
        if done {
            assert!(first(&t).contains(" 0 failed"), "{t}");
            return start.elapsed().as_secs_f64();
        }
        assert!(start.elapsed() < Duration::from_secs(1800), "{t}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Every cell's wall time.
fn walls(results: &Path) -> Vec<f64> {
    lab_cells(results)
        .iter()
        .map(|c| c["wall_s"].as_f64().unwrap())
        .collect()
}

/// The machine's load average over the last minute.
fn load1() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .next()
        .unwrap_or("?")
        .to_string()
}

const BENCH_CONFIGS: &str = "none,tomoyo,landlock,apparmor,bpf-lsm,selinux-mini";

/// BENCHMARKS.md, 'The lab on Slurm': cells per hour through `nodes` nodes of `cpus`
/// CPUs each (the machine's two cores shared), 12 cells (6 configurations
/// × 2 layout draws). A benchmark, not a test:
/// `cargo test --release --test cluster -- --ignored --nocapture cells_per_hour`.
fn cells_per_hour(nodes: usize, cpus: u32) {
    let cluster = Cluster::start_nodes(nodes, cpus, &user_cache());
    let dir = fresh_dir("cluster", &format!("bench-{nodes}x{cpus}"));
    provision(&cluster, &dir);
    let results = dir.join("results");
    let start = Instant::now();
    let plan = submit_with(&cluster, &results, BENCH_CONFIGS, &["--draws", "2"]);
    let wall_s = settled_after(&cluster, &plan, start);
    let cells = walls(&results);
    let n = cells.len() as f64;
    let busy_s: f64 = cells.iter().sum();
    let slots = nodes as f64 * f64::from(cpus);
    println!(
        "{nodes} node(s) x {cpus} CPU: {n} cells in {wall_s:.1} s = {:.0} cells/h; \
         a cell's wall {:.1} s (mean); cells running at once {:.2} of {slots} slots; \
         load {}",
        n * 3600.0 / wall_s,
        busy_s / n,
        busy_s / wall_s,
        load1()
    );
}

#[test]
#[ignore]
fn cells_per_hour_at_1_and_3_nodes() {
    cells_per_hour(1, 2);
    cells_per_hour(3, 1);
    cells_per_hour(3, 2);
}

/// BENCHMARKS.md, 'The lab on Slurm': the engine's cost per cell on three nodes, one task
/// at a time (`--max-parallel 1`), against `lab run --jobs 1` of the same
/// cells: each side's own cost is its wall time minus its cells' own.
#[test]
#[ignore]
fn engine_cost_per_cell_on_three_nodes() {
    let cluster = Cluster::start_nodes(3, 1, &user_cache());
    let dir = fresh_dir("cluster", "bench-engine");
    provision(&cluster, &dir);
    let (by_run, by_slurm) = (dir.join("run"), dir.join("slurm"));
    let start = Instant::now();
    let run = lab(
        &cluster,
        &[
            "run",
            "--jobs",
            "1",
            "--results",
            by_run.to_str().unwrap(),
            "--kernels",
            "6.1",
            "--configs",
            BENCH_CONFIGS,
            "--ops",
            "null,stat",
            "--samples",
            "3",
        ],
    );
    assert!(run.status.success());
    let run_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let plan = submit_with(&cluster, &by_slurm, BENCH_CONFIGS, &["--max-parallel", "1"]);
    let slurm_s = settled_after(&cluster, &plan, start);
    let (rc, sc) = (walls(&by_run), walls(&by_slurm));
    let n = sc.len() as f64;
    let run_own = run_s - rc.iter().sum::<f64>();
    let slurm_own = slurm_s - sc.iter().sum::<f64>();
    let cell_s = sc.iter().sum::<f64>() / n;
    let per_cell = (slurm_own - run_own) / n;
    let nodes: BTreeSet<String> = lab_cells(&by_slurm)
        .iter()
        .map(|c| c["task"]["node"].as_str().unwrap().to_string())
        .collect();
    println!(
        "{n} cells on nodes {nodes:?}: lab run {run_s:.1} s (own {run_own:.1} s), \
         through Slurm {slurm_s:.1} s (own {slurm_own:.1} s); a cell {cell_s:.1} s; \
         the engine's cost per cell beyond lab run's {per_cell:.2} s = {:.1} % of a cell; load {}",
        100.0 * per_cell / cell_s,
        load1()
    );
}
