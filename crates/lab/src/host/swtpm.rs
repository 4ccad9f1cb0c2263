//! swtpm on the host as a cell's TPM 2.0 (QEMU `tpm-tis`). Its socket and
//! state live in one private temporary directory that is removed when the
//! cell ends, whichever way: dropped (success, failure, first signal), or,
//! when lsmpmon itself was killed, by the next lab run's sweep.
use std::{
    fs,
    os::unix::fs::{DirBuilderExt, MetadataExt},
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    sync::atomic::{AtomicUsize, Ordering},
    time::{Duration, Instant},
};

use anyhow::{bail, Context, Result};

const PREFIX: &str = "lsmpmon-tpm-";
const START_TIMEOUT: Duration = Duration::from_secs(10);
static SEQ: AtomicUsize = AtomicUsize::new(0);

pub struct Swtpm {
    child: Child,
    /// Private (0700): `sock`, `state/`, `swtpm.log`.
    dir: PathBuf,
    /// Where swtpm's log is kept after the directory goes (the cell's logs).
    log_copy: PathBuf,
}

impl Swtpm {
    /// Starts swtpm and waits for its control socket; `log_dir` receives
    /// its log when it stops.
    pub fn start(log_dir: &Path) -> Result<Self> {
        if base::command::which("swtpm").is_none() {
            return Err(base::error::usage(
                "swtpm not found: apt-get install swtpm swtpm-tools (scripts/setup.sh does)",
            ));
        }
        sweep_stale(&std::env::temp_dir());
        let dir = std::env::temp_dir().join(format!(
            "{PREFIX}{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::DirBuilder::new()
            .mode(0o700)
            .recursive(true)
            .create(dir.join("state"))
            .with_context(|| format!("creating the TPM's directory {}", dir.display()))?;
        let log = dir.join("swtpm.log");
        let mut cmd = Command::new("swtpm");
        base::command::dies_with_parent(&mut cmd);
        let spawned = cmd
            .args(["socket", "--tpm2", "--tpmstate"])
            .arg(format!("dir={}", dir.join("state").display()))
            .arg("--ctrl")
            .arg(format!("type=unixio,path={}", dir.join("sock").display()))
            .args(["--flags", "startup-clear"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log)?)
            .spawn();
        let child = match spawned {
            Ok(c) => c,
            Err(e) => {
                let _ = fs::remove_dir_all(&dir);
                return Err(e).context("starting swtpm");
            }
        };
        let mut tpm = Self {
            child,
            dir,
            log_copy: log_dir.join("swtpm.log"),
        };
        tpm.wait_ready()?;
        Ok(tpm)
    }

    fn socket(&self) -> PathBuf {
        self.dir.join("sock")
    }

    fn wait_ready(&mut self) -> Result<()> {
        let t = Instant::now();
        while !self.socket().exists() {
            let exited = self.child.try_wait()?;
            if exited.is_some() || t.elapsed() > START_TIMEOUT {
                let log = fs::read_to_string(self.dir.join("swtpm.log")).unwrap_or_default();
                let what = match exited {
                    Some(st) => format!("exited at start ({st})"),
                    None => format!("did not open its socket in {} s", START_TIMEOUT.as_secs()),
                };
                bail!(
                    "swtpm (the guest's TPM) {what}: {}; its log is kept as {}",
                    log.lines().last().unwrap_or("no message").trim(),
                    self.log_copy.display()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// How swtpm ended, if it did (it must live as long as the guest).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn qemu_args(&self) -> Vec<String> {
        vec![
            "-chardev".into(),
            format!("socket,id=chrtpm,path={}", self.socket().display()),
            "-tpmdev".into(),
            "emulator,id=tpm0,chardev=chrtpm".into(),
            "-device".into(),
            "tpm-tis,tpmdev=tpm0".into(),
        ]
    }
}

impl Drop for Swtpm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(parent) = self.log_copy.parent() {
            let _ = fs::create_dir_all(parent);
        }
        let _ = fs::copy(self.dir.join("swtpm.log"), &self.log_copy);
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Removes TPM directories that a killed lsmpmon (SIGKILL, a second
/// signal) left behind: ours (same owner) whose process is gone.
fn sweep_stale(tmp: &Path) {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let Ok(entries) = fs::read_dir(tmp) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let ours = e.metadata().is_ok_and(|m| m.is_dir() && m.uid() == uid);
        if ours && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_removes_dead_processes_directories_only() {
        let tmp = std::env::temp_dir().join(format!("lsmpmon-sweep-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        // pid_max is at most 2^22: this pid cannot exist.
        let dead = tmp.join(format!("{PREFIX}{}-0", 1u32 << 23));
        let alive = tmp.join(format!("{PREFIX}{}-0", std::process::id()));
        let other = tmp.join("lsmpmon-tpm-notapid");
        for d in [&dead, &alive, &other] {
            fs::create_dir_all(d.join("state")).unwrap();
        }
        sweep_stale(&tmp);
        assert!(!dead.exists());
        assert!(alive.exists());
        assert!(other.exists());
        fs::remove_dir_all(&tmp).unwrap();
    }
}
