//! A Slurm cluster for a test: munged, slurmctld and slurmd from Debian's
//! packages, every file in one private directory. `start` is one node on
//! 127.0.0.1; `start_nodes(n)` is n nodes, each slurmd in its own network,
//! UTS, PID and mount namespaces (its own host name, address on a private
//! bridge and cache: see netns.rs), slurmctld on the bridge's address, the
//! results directory shared through the filesystem as NFS would share it.
//! Dropping it cancels its jobs, stops the daemons (a node's whole
//! namespace), deletes the bridge and namespaces and removes the
//! directory, whether the test passed or not.
#![allow(dead_code)]
#[path = "netns.rs"]
mod netns;

use std::{
    fs,
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Command, Output},
    time::{Duration, Instant},
};

pub use netns::Node;

pub struct Cluster {
    pub dir: PathBuf,
    pub conf: PathBuf,
    /// The namespaced nodes (none for `start`'s one node on 127.0.0.1).
    pub nodes: Vec<Node>,
    network: Option<netns::Network>,
    /// The cache path each node mounts its own cache over.
    cache: PathBuf,
}

/// How long slurmctld waits for a silent slurmd before it sets its node
/// DOWN (and requeues its jobs), and before a requeued job may start.
pub const SLURMD_TIMEOUT_S: u32 = 15;
const CRED_EXPIRE_S: u32 = 10;

const DAEMONS: [&str; 3] = ["slurmd", "slurmctld", "munged"];

impl Cluster {
    /// One node on 127.0.0.1; waits until it is idle.
    pub fn start() -> Cluster {
        let cluster = Cluster::prepare("");
        cluster.start_munge();
        fs::write(&cluster.conf, cluster.config()).unwrap();
        for daemon in ["slurmctld", "slurmd"] {
            cluster.daemon(daemon);
        }
        cluster.wait_idle(1);
        cluster
    }

    /// `n` nodes `node1`…, `cpus` CPUs each (the machine's cores are
    /// shared), each with its own cache mounted over `cache` (the same
    /// path on every node, another disk behind it; the machine's own
    /// cache there is the submitting host's); waits until all are idle.
    pub fn start_nodes(n: usize, cpus: u32, cache: &Path) -> Cluster {
        check_tools(&["ip", "nsenter", "unshare"]);
        let mut cluster = Cluster::prepare("n");
        cluster.cache = cache.to_path_buf();
        // Made before anything can fail: Drop removes it.
        cluster.network = Some(netns::Network::create(n));
        fs::create_dir_all(cache).unwrap();
        cluster.start_munge();
        fs::write(&cluster.conf, cluster.config_nodes(n, cpus)).unwrap();
        cluster.daemon("slurmctld");
        for i in 1..=n {
            let name = format!("node{i}");
            let script = format!("exec slurmd -D -f {}", cluster.conf.display());
            let node = Node::start(
                &name,
                &cluster.network.as_ref().unwrap().namespaces[i - 1],
                &cluster.node_dir(&name),
                &cluster.cache(),
                &script,
            );
            cluster.nodes.push(node);
        }
        cluster.wait_idle(n);
        cluster
    }

    /// The bridge and the network namespaces made for the nodes.
    pub fn network_names(&self) -> Option<(String, Vec<String>)> {
        let net = self.network.as_ref()?;
        Some((net.bridge.clone(), net.namespaces.clone()))
    }

    /// The cache path every node mounts its own cache over.
    pub fn cache(&self) -> PathBuf {
        self.cache.clone()
    }

    pub fn node_dir(&self, name: &str) -> PathBuf {
        self.dir.join("nodes").join(name)
    }

    /// The directory, munge's and Slurm's tools checked.
    fn prepare(tag: &str) -> Cluster {
        check_tools(&[
            "mungekey",
            "munged",
            "slurmctld",
            "slurmd",
            "sbatch",
            "squeue",
            "scancel",
        ]);
        // Short: munge's socket path must fit a sockaddr_un.
        let dir = std::env::temp_dir().join(format!("lsmpmon-slurm{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        for d in ["", "state", "spool"] {
            fs::create_dir_all(dir.join(d)).unwrap();
        }
        Cluster {
            conf: dir.join("slurm.conf"),
            dir,
            nodes: Vec::new(),
            network: None,
            cache: PathBuf::new(),
        }
    }

    fn daemon(&self, daemon: &str) {
        let st = Command::new(daemon)
            .arg("-f")
            .arg(&self.conf)
            .status()
            .unwrap();
        assert!(
            st.success(),
            "{daemon} did not start: see {}",
            self.dir.display()
        );
    }

    fn start_munge(&self) {
        let d = &self.dir;
        let key = d.join("munge.key");
        let st = Command::new("mungekey")
            .arg("-c")
            .arg("-k")
            .arg(&key)
            .status()
            .unwrap();
        assert!(st.success(), "mungekey");
        let st = Command::new("munged")
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--socket={}", d.join("munge.sock").display()))
            .arg(format!("--pid-file={}", d.join("munged.pid").display()))
            .arg(format!("--log-file={}", d.join("munged.log").display()))
            .arg(format!("--seed-file={}", d.join("munge.seed").display()))
            .arg("--force")
            .status()
            .unwrap();
        assert!(st.success(), "munged did not start");
    }

    fn config(&self) -> String {
        let d = self.dir.display();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let [ctld, slurmd] = free_ports();
        format!(
            "ClusterName=lsmpmontest\n\
             SlurmctldHost=localhost(127.0.0.1)\n\
             SlurmctldPort={ctld}\nSlurmdPort={slurmd}\n\
             AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket={d}/munge.sock\n\
             StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
             SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
             SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd.log\n\
             SlurmUser=root\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
             AccountingStorageType=accounting_storage/none\nJobAcctGatherType=jobacct_gather/none\n\
             SelectType=select/cons_tres\nSelectTypeParameters=CR_Core_Memory\n\
             ReturnToService=2\nMpiDefault=none\n\
             NodeName=localhost NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={} State=UNKNOWN\n\
             PartitionName=lab Nodes=localhost Default=YES MaxTime=INFINITE State=UP\n",
            usable_memory_mb()
        )
    }

    fn config_nodes(&self, n: usize, cpus: u32) -> String {
        let d = self.dir.display();
        let net = self.network.as_ref().unwrap();
        let [ctld, slurmd] = free_ports();
        let mut text = format!(
            "ClusterName=lsmpmonnodes\n\
             SlurmctldHost=localhost({host})\n\
             SlurmctldPort={ctld}\nSlurmdPort={slurmd}\n\
             AuthType=auth/munge\nCredType=cred/munge\n\
             AuthInfo=socket={d}/munge.sock,cred_expire={CRED_EXPIRE_S}\n\
             StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/nodes/%n/spool\n\
             SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/nodes/%n/slurmd.pid\n\
             SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/nodes/%n/slurmd.log\n\
             SlurmdTimeout={SLURMD_TIMEOUT_S}\n\
             SlurmUser=root\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
             AccountingStorageType=accounting_storage/none\nJobAcctGatherType=jobacct_gather/none\n\
             SelectType=select/cons_tres\nSelectTypeParameters=CR_Core_Memory\n\
             ReturnToService=2\nMpiDefault=none\n",
            host = net.host_addr()
        );
        let memory_mb = usable_memory_mb() / n as u64;
        for i in 1..=n {
            fs::create_dir_all(self.node_dir(&format!("node{i}")).join("spool")).unwrap();
            text.push_str(&format!(
                "NodeName=node{i} NodeHostname=node{i} NodeAddr={} CPUs={cpus} \
                 RealMemory={memory_mb} State=UNKNOWN\n",
                net.node_addr(i)
            ));
        }
        let names: Vec<String> = (1..=n).map(|i| format!("node{i}")).collect();
        text.push_str(&format!(
            "PartitionName=lab Nodes={} Default=YES MaxTime=INFINITE State=UP\n",
            names.join(",")
        ));
        text
    }

    fn wait_idle(&self, nodes: usize) {
        let start = Instant::now();
        loop {
            let out = self.command("sinfo", &["-h", "-N", "-o", "%t"]);
            let states = String::from_utf8_lossy(&out.stdout).to_string();
            if states.lines().filter(|l| l.trim() == "idle").count() == nodes {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the nodes are {states:?}, not idle: see {}",
                self.dir.display()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// Node `name`'s state as `sinfo` says it (`idle`, `alloc`, `down*`…).
    pub fn node_state(&self, name: &str) -> String {
        let out = self.command("sinfo", &["-h", "-n", name, "-N", "-o", "%t"]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    pub fn node(&mut self, name: &str) -> &mut Node {
        self.nodes
            .iter_mut()
            .find(|n| n.name == name)
            .unwrap_or_else(|| panic!("no node {name}"))
    }

    /// Copies the entries `names` (`kernels/6.1-cloud`) of the machine's
    /// cache into every node's own (provisioning a node's disk: a node has
    /// no route to a mirror). A cache names its files by absolute path, so
    /// the copy is only valid under the same path: the node's mount.
    pub fn provision(&self, names: &[&str]) {
        for n in &self.nodes {
            for name in names {
                let to = n.dir.join("cache").join(name);
                fs::create_dir_all(to.parent().unwrap()).unwrap();
                let st = Command::new("cp")
                    .arg("-a")
                    .arg(self.cache.join(name))
                    .arg(&to)
                    .status()
                    .unwrap();
                assert!(st.success(), "copying {name} into {}", to.display());
            }
        }
    }

    /// A Slurm command against this cluster.
    pub fn command(&self, tool: &str, args: &[&str]) -> Output {
        Command::new(tool)
            .env("SLURM_CONF", &self.conf)
            .args(args)
            .output()
            .unwrap()
    }

    fn pid(&self, daemon: &str) -> Option<i32> {
        fs::read_to_string(self.dir.join(format!("{daemon}.pid")))
            .ok()?
            .trim()
            .parse()
            .ok()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // The jobs first: a task outlives its slurmd.
        let _ = self.command("scancel", &["--full", "-u", "root"]);
        let start = Instant::now();
        while !self.nodes.iter().all(|n| n.lost) && start.elapsed() < Duration::from_secs(30) {
            let out = self.command("squeue", &["-h"]);
            if !out.status.success() || out.stdout.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        // A namespaced node ends with its namespace, guests and all.
        for node in &mut self.nodes {
            if !node.lost {
                node.kill();
            }
        }
        for daemon in DAEMONS {
            if let Some(pid) = self.pid(daemon) {
                stop(pid);
            }
        }
        if let Some(net) = &self.network {
            net.remove();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn check_tools(tools: &[&str]) {
    for tool in tools {
        assert!(
            Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .is_ok_and(|o| o.status.success()),
            "{tool} not found: apt-get install slurm-wlm munge iproute2 util-linux (scripts/setup.sh --tests does)"
        );
    }
}

/// SIGTERM, then SIGKILL after 10 s.
fn stop(pid: i32) {
    // A zombie has ended: only its parent's wait is missing.
    let alive = || {
        fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit_once(") ")
                .is_some_and(|(_, rest)| !rest.starts_with('Z'))
        })
    };
    // SAFETY: a signal to a pid read from the daemon's own pid file.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let start = Instant::now();
    while alive() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    if alive() {
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// Two ports free on 127.0.0.1 now.
fn free_ports() -> [u16; 2] {
    let a = TcpListener::bind("127.0.0.1:0").unwrap();
    let b = TcpListener::bind("127.0.0.1:0").unwrap();
    [
        a.local_addr().unwrap().port(),
        b.local_addr().unwrap().port(),
    ]
}

/// Nine tenths of MemTotal: slurmd drains a node that has less than its
/// configured memory.
fn usable_memory_mb() -> u64 {
    let text = fs::read_to_string("/proc/meminfo").unwrap();
    let kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kib / 1024 * 9 / 10
}
