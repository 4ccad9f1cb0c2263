//! A one-node Slurm cluster for a test: munged, slurmctld and slurmd from
//! Debian's packages, every file in one private directory, on 127.0.0.1
//! with free ports. Dropping it cancels its jobs, stops the daemons by
//! their pid files and removes the directory, whether the test passed or not.
#![allow(dead_code)]
use std::{
    fs,
    net::TcpListener,
    path::PathBuf,
    process::{Command, Output},
    time::{Duration, Instant},
};

pub struct Cluster {
    pub dir: PathBuf,
    pub conf: PathBuf,
}

const DAEMONS: [&str; 3] = ["slurmd", "slurmctld", "munged"];

impl Cluster {
    /// Starts the daemons and waits until the node is idle.
    pub fn start() -> Cluster {
        for tool in [
            "mungekey",
            "munged",
            "slurmctld",
            "slurmd",
            "sbatch",
            "squeue",
            "scancel",
        ] {
            assert!(
                Command::new("sh")
                    .args(["-c", &format!("command -v {tool}")])
                    .output()
                    .is_ok_and(|o| o.status.success()),
                "{tool} not found: apt-get install slurm-wlm munge (scripts/setup.sh does)"
            );
        }
        // Short: munge's socket path must fit a sockaddr_un.
        let dir = std::env::temp_dir().join(format!("lsmpmon-slurm-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        for d in ["", "state", "spool"] {
            fs::create_dir_all(dir.join(d)).unwrap();
        }
        let cluster = Cluster {
            conf: dir.join("slurm.conf"),
            dir,
        };
        cluster.start_munge();
        fs::write(&cluster.conf, cluster.config()).unwrap();
        for daemon in ["slurmctld", "slurmd"] {
            let st = Command::new(daemon)
                .arg("-f")
                .arg(&cluster.conf)
                .status()
                .unwrap();
            assert!(
                st.success(),
                "{daemon} did not start: see {}",
                cluster.dir.display()
            );
        }
        cluster.wait_idle();
        cluster
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

    fn wait_idle(&self) {
        let start = Instant::now();
        loop {
            let out = self.command("sinfo", &["-h", "-o", "%t"]);
            let state = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if state == "idle" {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the node is {state:?}, not idle: see {}",
                self.dir.display()
            );
            std::thread::sleep(Duration::from_millis(500));
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
        while start.elapsed() < Duration::from_secs(30) {
            let out = self.command("squeue", &["-h"]);
            if !out.status.success() || out.stdout.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        for daemon in DAEMONS {
            if let Some(pid) = self.pid(daemon) {
                stop(pid);
            }
        }
        let _ = fs::remove_dir_all(&self.dir);
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
