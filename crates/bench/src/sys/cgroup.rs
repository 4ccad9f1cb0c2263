//! The workload's own cgroup, where one can be made (v2 only): every run
//! starts in it (clone3 with CLONE_INTO_CGROUP), and whatever it starts
//! stays in it, a new session too. Joining one between fork and exec would
//! wait for an RCU grace period in every run (the cgroup threadgroup lock,
//! taken for writing), v1 as v2: where a run cannot start in one, it runs
//! uncontained and the result says why. The bench kills its members after
//! each sample; a small guard (a shell, in its own process group, started
//! before anything runs) kills them and removes the cgroup when the bench
//! ends, even by SIGKILL: it waits for the end of a pipe only the bench
//! holds. Where no cgroup can be made, the result says so.
use std::{
    fs,
    os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd},
    os::unix::fs::{DirBuilderExt, OpenOptionsExt},
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// What the guard runs once the bench's end of its pipe is closed.
const GUARD: &str = r#"cat >/dev/null
i=0
while [ $i -lt 500 ] && [ -n "$(cat "$1/cgroup.procs" 2>/dev/null)" ]; do
  kill -9 $(cat "$1/cgroup.procs") 2>/dev/null; sleep 0.01; i=$((i+1))
done
rmdir "$1" 2>/dev/null"#;

/// How long killing the cgroup's members may take.
const KILL_WITHIN: Duration = Duration::from_secs(10);

#[derive(Debug)]
pub struct Cgroup {
    dir: PathBuf,
    /// Its directory, open: a run starts in it (clone3's cgroup).
    dir_fd: fs::File,
    /// "cgroup v2": what the result records.
    pub kind: String,
    guard: Option<(Child, OwnedFd)>,
}

/// What a result adds to why no cgroup contains the workload.
const UNCONTAINED: &str = "a grandchild in a new session may outlive a killed bench";

/// A cgroup of the bench's own for the workload, or why none could be made.
pub fn make() -> Result<Cgroup, String> {
    make_among(candidates()).map_err(uncontained)
}

/// What the result records (after "none: ") when no cgroup contains runs.
fn uncontained(why: String) -> String {
    format!("{why}; {UNCONTAINED}")
}

fn make_among(candidates: Vec<(String, PathBuf)>) -> Result<Cgroup, String> {
    let mut why = Vec::new();
    let (v2, v1): (Vec<_>, Vec<_>) = candidates
        .into_iter()
        .partition(|(kind, _)| kind == "cgroup v2");
    if v2.is_empty() && !v1.is_empty() {
        return Err("only cgroup v1 hierarchies are mounted: a run cannot start in one, \
                    and joining one per run would wait for an RCU grace period inside the timed figure"
            .into());
    }
    for (kind, dir) in v2 {
        let dir = dir.join(format!("lsmpmon-workload.{}", std::process::id()));
        match start_ready(&dir) {
            Ok(Ok(dir_fd)) => {
                let mut c = Cgroup {
                    dir,
                    dir_fd,
                    kind,
                    guard: None,
                };
                match guard(&c.dir) {
                    Ok(g) => c.guard = Some(g),
                    Err(e) => return Err(format!("the cgroup's guard: {e}")),
                }
                return Ok(c);
            }
            Ok(Err(refused)) => return Err(refused),
            Err(e) => why.push(format!("{}: {e}", dir.display())),
        }
    }
    match why.is_empty() {
        true => Err("no cgroup file system is mounted".into()),
        false => Err(format!("cannot make a cgroup: {}", why.join("; "))),
    }
}

/// Makes the cgroup and starts a child in it that exits at once: its open
/// directory, or (inner) why clone3 refused to start a child in it.
fn start_ready(dir: &Path) -> std::io::Result<Result<fs::File, String>> {
    fs::DirBuilder::new().mode(0o755).create(dir)?;
    let made = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(dir)
        .map(|d| match refused(d.as_raw_fd()) {
            Some(why) => Err(why),
            None => Ok(d),
        });
    if !matches!(made, Ok(Ok(_))) {
        let _ = fs::remove_dir(dir);
    }
    made
}

/// Why a child cannot start in the cgroup `dir_fd` is open on, if it cannot.
fn refused(dir_fd: RawFd) -> Option<String> {
    super::clone::probe(dir_fd)
        .err()
        .map(|e| format!("clone3 into a cgroup refused ({e})"))
}

/// Where the bench itself is in each mounted hierarchy: v2 first, then v1
/// ones, pids and freezer before the rest.
fn candidates() -> Vec<(String, PathBuf)> {
    let mounts = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let own = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mut found = Vec::new();
    for line in own.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let mount = mounts.lines().find_map(|m| {
            let v: Vec<&str> = m.split_whitespace().collect();
            let (point, fstype, opts) = (v.get(1)?, v.get(2)?, v.get(3)?);
            let fits = match controllers {
                "" => *fstype == "cgroup2",
                c => *fstype == "cgroup" && c.split(',').all(|c| opts.split(',').any(|o| o == c)),
            };
            fits.then(|| point.to_string())
        });
        let Some(mount) = mount else { continue };
        let kind = match controllers {
            "" => "cgroup v2".to_string(),
            c => format!("cgroup v1 ({c})"),
        };
        let rank = match controllers {
            "" => 0,
            "pids" | "freezer" => 1,
            _ => 2,
        };
        let dir = Path::new(&mount).join(path.trim_start_matches('/'));
        found.push((rank, kind, dir));
    }
    found.sort_by_key(|c| c.0);
    found.into_iter().map(|(_, k, d)| (k, d)).collect()
}

/// The guard: a shell in its own process group reading a pipe whose other
/// end only the bench holds (close-on-exec: no run inherits it).
fn guard(dir: &Path) -> std::io::Result<(Child, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors, owned below.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 returned them, nobody else owns them.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let child = Command::new("/bin/sh")
        .args(["-c", GUARD, "lsmpmon-workload-guard"])
        .arg(dir)
        .stdin(Stdio::from(read))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    Ok((child, write))
}

impl Cgroup {
    /// The descriptor of its directory, which a run starts in.
    pub fn dir_fd(&self) -> RawFd {
        self.dir_fd.as_raw_fd()
    }

    /// Kills every member until none is left (or fails at the deadline).
    pub fn kill_all(&self) -> Result<(), String> {
        let deadline = Instant::now() + KILL_WITHIN;
        loop {
            let members = self.members();
            if members.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "the workload left {} processes in its cgroup that could not be killed in {} s (pids {members:?})",
                    members.len(),
                    KILL_WITHIN.as_secs()
                ));
            }
            for pid in members {
                // SAFETY: a kill; a pid reused since is at worst signalled
                // while in the workload's own cgroup.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn members(&self) -> Vec<libc::pid_t> {
        fs::read_to_string(self.dir.join("cgroup.procs"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = self.kill_all();
        if let Some((mut child, write)) = self.guard.take() {
            // Its pipe's end: it finds the cgroup empty, removes it and ends.
            drop(write);
            let _ = child.wait();
        }
        let _ = fs::remove_dir(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where clone3 refuses to start a run in a cgroup (here: a directory
    /// that is not one), or only v1 is mounted, the result says why and
    /// that a new session may outlive the bench; no cgroup is left made.
    #[test]
    fn where_no_run_can_start_in_a_cgroup_the_result_says_why() {
        let tmp = fs::File::open(std::env::temp_dir()).unwrap();
        let why = uncontained(refused(tmp.as_raw_fd()).unwrap());
        assert!(
            why.starts_with("clone3 into a cgroup refused (")
                && why.ends_with("); a grandchild in a new session may outlive a killed bench"),
            "{why}"
        );
        let parent = std::env::temp_dir().join(format!("v1-{}", std::process::id()));
        fs::create_dir(&parent).unwrap();
        let v1 = vec![("cgroup v1 (pids)".to_string(), parent.clone())];
        let why = make_among(v1).unwrap_err();
        assert!(why.starts_with("only cgroup v1 hierarchies"), "{why}");
        assert_eq!(fs::read_dir(&parent).unwrap().count(), 0, "left behind");
        // A v2 candidate that is no cgroup: refused, its directory removed.
        let v2 = vec![("cgroup v2".to_string(), parent.clone())];
        let why = make_among(v2).unwrap_err();
        assert!(why.starts_with("clone3 into a cgroup refused ("), "{why}");
        assert_eq!(fs::read_dir(&parent).unwrap().count(), 0, "left behind");
        fs::remove_dir(&parent).unwrap();
    }
}
