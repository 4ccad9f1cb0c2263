//! A real Prometheus server for a test (Debian 12's `prometheus` package): on
//! 127.0.0.1 with a free port, a generated configuration scraping one target
//! every second, storage in a private directory. Dropping it stops the
//! server and removes the directory, whether the test passed or not.
#![allow(dead_code)]
use std::{
    fs,
    net::TcpListener,
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

pub struct Prometheus {
    pub dir: PathBuf,
    pub port: u16,
    child: Child,
}

/// A port nothing listens on now.
/// `N` distinct ports free now: every listener is held until all are
/// chosen (two `free_port()` calls in a row can return the same port).
pub fn free_ports<const N: usize>() -> [u16; N] {
    let held: Vec<TcpListener> = (0..N)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    std::array::from_fn(|i| held[i].local_addr().unwrap().port())
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// GET `url` with curl (`-f`: an HTTP error is a failure): the body, or None.
pub fn get(url: &str, timeout_s: u32) -> Option<String> {
    let out = Command::new("curl")
        .args(["-sf", "-m", &timeout_s.to_string(), url])
        .output()
        .expect("curl (scripts/setup.sh --tests installs it)");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

impl Prometheus {
    /// Starts Prometheus scraping `target` (host:port) every second and
    /// waits until it is ready.
    pub fn start(target: &str) -> Prometheus {
        Self::start_fleet(&[target], None, None)
    }

    /// Starts Prometheus scraping every one of `targets` every second, with
    /// the recording rules in `rules` (evaluated every second) and the
    /// `metric_relabel_configs` list in the file `relabel`, if any.
    pub fn start_fleet(targets: &[&str], rules: Option<&str>, relabel: Option<&str>) -> Prometheus {
        // Tests in one process run at once: the port tells their servers apart.
        let port = free_port();
        let dir =
            std::env::temp_dir().join(format!("lsmpmon-prometheus-{}-{port}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("data")).unwrap();
        let targets = targets
            .iter()
            .map(|t| format!("'{t}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let rule_files = rules.map_or(String::new(), |r| format!("rule_files: ['{r}']\n"));
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             {rule_files}\
             scrape_configs:\n  - job_name: lsmpmon\n    static_configs:\n      - targets: [{targets}]\n"
        );
        let config = match relabel {
            None => config,
            Some(file) => {
                let list = fs::read_to_string(file).unwrap();
                let indented: String = list.lines().map(|l| format!("      {l}\n")).collect();
                format!("{config}    metric_relabel_configs:\n{indented}")
            }
        };
        fs::write(dir.join("prometheus.yml"), config).unwrap();
        let log = fs::File::create(dir.join("prometheus.log")).unwrap();
        let child = Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("prometheus (Debian package prometheus; scripts/setup.sh --tests installs it)");
        let p = Prometheus { dir, port, child };
        let start = Instant::now();
        while get(&p.url("/-/ready"), 2).is_none() {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "prometheus not ready: see {}",
                p.dir.join("prometheus.log").display()
            );
            std::thread::sleep(Duration::from_millis(300));
        }
        p
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// An instant query through the HTTP API: the `data.result` array.
    pub fn query(&self, expr: &str) -> Vec<serde_json::Value> {
        let out = Command::new("curl")
            .args(["-sf", "-m", "10", "--data-urlencode"])
            .arg(format!("query={expr}"))
            .arg(self.url("/api/v1/query"))
            .output()
            .unwrap();
        let body = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "query {expr}: {body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["status"], "success", "query {expr}: {body}");
        v["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    /// The one sample `expr` gives now, if it gives one.
    pub fn value(&self, expr: &str) -> Option<f64> {
        let r = self.query(expr);
        assert!(r.len() <= 1, "{expr}: {r:?}");
        r.first()?["value"][1].as_str()?.parse().ok()
    }

    /// Waits up to `limit` for `expr` to give a value satisfying `ok`.
    pub fn wait_for(&self, expr: &str, limit: Duration, ok: impl Fn(f64) -> bool) -> f64 {
        let start = Instant::now();
        loop {
            if let Some(v) = self.value(expr).filter(|v| ok(*v)) {
                return v;
            }
            assert!(
                start.elapsed() < limit,
                "{expr}: {:?} after {limit:?}",
                self.value(expr)
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        // SAFETY: a signal to our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = fs::remove_dir_all(&self.dir);
    }
}
