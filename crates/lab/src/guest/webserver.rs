//! (guest) The web server of the `web` ops: nginx serving the file mix from
//! a configuration lsmpmon writes, started as the system would start a
//! daemon (unconfined, by root, before the confined workload runs).
use std::{
    fs,
    net::TcpStream,
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{bail, Context, Result};

use bench::web::{content, ADDR, FILES};

pub const ROOT: &str = "/srv/lsmpmon-web";

fn config(root: &str) -> String {
    // One worker per online CPU (auto); no access log, no keep-alive (each
    // Webstone request is its own connection), sendfile as Debian's default.
    format!(
        "daemon on;
master_process on;
worker_processes auto;
user root root;
pid {root}/nginx.pid;
error_log {root}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {root}/tmp/body;
  proxy_temp_path {root}/tmp/proxy;
  fastcgi_temp_path {root}/tmp/fastcgi;
  uwsgi_temp_path {root}/tmp/uwsgi;
  scgi_temp_path {root}/tmp/scgi;
  default_type application/octet-stream;
  keepalive_timeout 0;
  sendfile on;
  server {{
    listen {ADDR} backlog=511;
    root {root}/htdocs;
  }}
}}
"
    )
}

/// Writes the file mix and the configuration, starts nginx and waits until
/// it accepts connections. Returns the master's pid.
pub fn start(nginx: &Path) -> Result<u32> {
    let root = Path::new(ROOT);
    fs::create_dir_all(root.join("htdocs"))?;
    fs::create_dir_all(root.join("tmp"))?;
    for &(name, size, _) in FILES {
        fs::write(root.join("htdocs").join(name), content(size))
            .with_context(|| format!("writing {name}"))?;
    }
    fs::write(root.join("nginx.conf"), config(ROOT))?;
    users()?;
    let out = Command::new(nginx)
        .arg("-p")
        .arg(root)
        .arg("-c")
        .arg(root.join("nginx.conf"))
        .arg("-e")
        .arg(root.join("error.log"))
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("starting {}", nginx.display()))?;
    if !out.status.success() {
        let log = fs::read_to_string(root.join("error.log")).unwrap_or_default();
        let err = String::from_utf8_lossy(&out.stderr);
        bail!(
            "nginx did not start ({}): {}",
            out.status,
            err.lines()
                .chain(log.lines())
                .last()
                .unwrap_or("no message")
        );
    }
    // Serving, not only listening: a whole file back (the master listens
    // before its workers are up).
    let t = Instant::now();
    while let Err(e) = fetch_smallest() {
        if t.elapsed() > Duration::from_secs(10) {
            bail!("nginx started but does not serve on {ADDR} after 10 s: {e:#}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = fs::read_to_string(root.join("nginx.pid"))
        .ok()
        .and_then(|p| p.trim().parse().ok())
        .context("nginx wrote no pid file")?;
    Ok(pid)
}

fn fetch_smallest() -> Result<()> {
    use std::io::{Read, Write};
    let (name, size, _) = FILES[0];
    let mut s = TcpStream::connect(ADDR)?;
    write!(
        s,
        "GET /{name} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)?;
    bench::web::check_response(name, &buf, &content(size))
}

/// nginx's `user root root` looks both up: a bare initramfs has neither file.
fn users() -> Result<()> {
    for (path, line) in [
        ("/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"),
        ("/etc/group", "root:x:0:\n"),
    ] {
        let text = fs::read_to_string(path).unwrap_or_default();
        if !text.lines().any(|l| l.starts_with("root:")) {
            fs::create_dir_all("/etc")?;
            fs::write(path, text + line).with_context(|| format!("writing {path}"))?;
        }
    }
    Ok(())
}

/// `lab web-server [--nginx PATH]`: start the server, print one line.
pub fn main(nginx: &Path) -> Result<i32> {
    // It writes /srv and /etc and leaves a daemon: a throwaway guest's job.
    let cmdline = fs::read_to_string("/proc/cmdline").unwrap_or_default();
    if !cmdline.contains(&format!("{}=", model::provenance::VM_PARAM)) {
        return Err(base::error::usage(
            "lab web-server runs only inside an lsmpmon guest (vm run / lab): it writes /srv and /etc and leaves nginx running",
        ));
    }
    let pid = start(nginx)?;
    let workers = fs::read_dir("/proc")?
        .flatten()
        .filter(|e| {
            fs::read_to_string(e.path().join("cmdline"))
                .is_ok_and(|c| c.starts_with("nginx: worker process"))
        })
        .count();
    base::say!(
        "lab: web server: nginx master {pid}, {workers} worker(s), {} files on {ADDR}",
        FILES.len()
    );
    Ok(0)
}
