//! Nodes of a test cluster on one machine: a private Linux bridge, and per
//! node a network namespace joined to it by a veth pair (its own address),
//! a UTS namespace (its own host name), a PID namespace (killing its first
//! process ends everything the node runs, as a power loss would) and a
//! mount namespace (its own cache mounted over the shared cache path).
//! Only the bridge, veths and namespaces made here are touched, and
//! `Network::remove` deletes them.
#![allow(dead_code)]
use std::{
    fs,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// The bridge and the namespaces, by the names made for this process.
pub struct Network {
    pub bridge: String,
    /// `10.237.N`: the bridge is `.1`, node i is `.(10 + i)`.
    pub prefix: String,
    pub namespaces: Vec<String>,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("running ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Network {
    /// A bridge on a /24 no route of this machine uses yet.
    pub fn create(nodes: usize) -> Network {
        let pid = std::process::id();
        let routes = Command::new("ip")
            .args(["-4", "route", "show", "table", "all"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .expect("running ip route");
        let third = (0..250)
            .map(|k| (pid as usize + k) % 250 + 1)
            .find(|n| !routes.contains(&format!("10.237.{n}.")))
            .expect("a free 10.237.N.0/24");
        let net = Network {
            bridge: format!("lsmb{pid}"),
            prefix: format!("10.237.{third}"),
            namespaces: (1..=nodes).map(|i| format!("lsmpmon-{pid}-n{i}")).collect(),
        };
        ip(&["link", "add", &net.bridge, "type", "bridge"]);
        ip(&[
            "addr",
            "add",
            &format!("{}/24", net.host_addr()),
            "dev",
            &net.bridge,
        ]);
        ip(&["link", "set", &net.bridge, "up"]);
        for i in 1..=nodes {
            net.add_node(i);
        }
        net
    }

    pub fn host_addr(&self) -> String {
        format!("{}.1", self.prefix)
    }

    pub fn node_addr(&self, i: usize) -> String {
        format!("{}.{}", self.prefix, 10 + i)
    }

    fn add_node(&self, i: usize) {
        let ns = &self.namespaces[i - 1];
        let veth = format!("{}v{i}", self.bridge.replace("lsmb", "lsm"));
        ip(&["netns", "add", ns]);
        ip(&[
            "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", ns,
        ]);
        ip(&["link", "set", &veth, "master", &self.bridge, "up"]);
        let addr = format!("{}/24", self.node_addr(i));
        ip(&["-n", ns, "addr", "add", &addr, "dev", "eth0"]);
        ip(&["-n", ns, "link", "set", "eth0", "up"]);
        ip(&["-n", ns, "link", "set", "lo", "up"]);
    }

    /// Deletes the namespaces (their veths go with them) and the bridge.
    pub fn remove(&self) {
        for ns in &self.namespaces {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        let _ = Command::new("ip")
            .args(["link", "del", &self.bridge])
            .status();
    }
}

/// One node's namespaces, entered by its first process.
pub struct Node {
    pub name: String,
    /// The node's own directory on the machine (its cache, slurmd's files).
    pub dir: PathBuf,
    /// `unshare`: killing it kills the node's first process, and with it
    /// every process of the node's PID namespace.
    process: Child,
    pub lost: bool,
}

impl Node {
    /// Runs `script` (sh) as the node's first process after naming the
    /// host and mounting `dir/cache` over `shared_cache`.
    pub fn start(name: &str, netns: &str, dir: &Path, shared_cache: &Path, script: &str) -> Node {
        fs::create_dir_all(dir.join("cache")).unwrap();
        let log = fs::File::create(dir.join("console.log")).unwrap();
        let setup = format!(
            "hostname {name} && mount --bind {} {} && {script}",
            dir.join("cache").display(),
            shared_cache.display()
        );
        let process = Command::new("nsenter")
            .arg(format!("--net=/run/netns/{netns}"))
            .args([
                "unshare",
                "--uts",
                "--pid",
                "--fork",
                "--kill-child",
                "--mount-proc",
                "sh",
                "-c",
                &setup,
            ])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("running nsenter and unshare (util-linux)");
        Node {
            name: name.into(),
            dir: dir.to_path_buf(),
            process,
            lost: false,
        }
    }

    /// The node's processes (host pids) with their command names.
    pub fn processes(&self) -> Vec<(u32, String)> {
        let Some(ns) = self.pid_namespace() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for e in fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            if fs::read_link(format!("/proc/{pid}/ns/pid")).ok().as_ref() == Some(&ns) {
                let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
                out.push((pid, comm.trim().to_string()));
            }
        }
        out
    }

    /// The PID namespace of the node's first process (unshare's child).
    fn pid_namespace(&self) -> Option<PathBuf> {
        let id = self.process.id();
        let children = fs::read_to_string(format!("/proc/{id}/task/{id}/children")).ok()?;
        let first: u32 = children.split_whitespace().next()?.parse().ok()?;
        fs::read_link(format!("/proc/{first}/ns/pid")).ok()
    }

    /// The node dies at once with everything it runs (SIGKILL to its
    /// namespace's first process); true when none of its processes is left.
    pub fn kill(&mut self) -> bool {
        let before = self.processes();
        let _ = self.process.kill();
        let _ = self.process.wait();
        self.lost = true;
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if before.iter().all(|(pid, _)| !alive(*pid)) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }
}

/// Not ended: a zombie has (only its parent's wait is missing).
pub fn alive(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}
