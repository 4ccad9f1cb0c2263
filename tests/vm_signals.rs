//! QEMU dies with `vm run`, whatever ends it; SIGTERM stops the guest, prints
//! one line and exits 1 (README), leaving only the guest's logs behind.
mod common;
#[path = "common/vmcache.rs"]
mod vmcache;

use std::{
    fs,
    path::Path,
    process::{Child, Command, Stdio},
    sync::Mutex,
    thread,
    time::{Duration, Instant},
};

use common::LSMPMON;

/// One guest at a time.
static GUEST: Mutex<()> = Mutex::new(());

/// What a guest's run directory may keep: its logs.
const LOGS: &[&str] = &["console.log", "qemu.log", "stdout", "stderr", "status"];

fn start_guest(cache: &Path) -> Child {
    Command::new(LSMPMON)
        .args(["vm", "run", "--kernel", "6.1", "--timeout", "120"])
        .env("LSMPMON_CACHE", cache)
        .args(["--", "sleep", "300"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// (parent pid, state, command name) from /proc/PID/stat; None once reaped.
fn stat(pid: i32) -> Option<(i32, char, String)> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, tail) = text.rsplit_once(')')?;
    let comm = head.split_once('(')?.1.to_string();
    let mut f = tail.split_whitespace();
    let state = f.next()?.chars().next()?;
    Some((f.next()?.parse().ok()?, state, comm))
}

fn child_of(parent: i32, name: &str) -> Option<i32> {
    fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .find(|&pid| {
            stat(pid).is_some_and(|(ppid, st, comm)| {
                ppid == parent && st != 'Z' && comm.starts_with(name)
            })
        })
}

/// The child process `name` of `lsmpmon`, once it has run for `settle`.
fn wait_for_child(lsmpmon: &Child, name: &str, settle: Duration) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Some(q) = child_of(lsmpmon.id() as i32, name) {
            thread::sleep(settle);
            return q;
        }
        thread::sleep(Duration::from_millis(20));
    }
    panic!("no {name} started by vm run within 60 s");
}

fn wait_for_qemu(lsmpmon: &Child) -> i32 {
    wait_for_child(lsmpmon, "qemu-system", Duration::from_secs(1))
}

fn gone_within(pid: i32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if stat(pid).is_none_or(|(_, st, _)| st == 'Z' || st == 'X') {
            return true;
        }
        thread::sleep(Duration::from_millis(100));
    }
    false
}

/// Only the logs are left in the one run directory (no initramfs).
fn only_logs_left(cache: &Path) {
    let runs = vmcache::run_dirs(cache);
    assert_eq!(runs.len(), 1, "{runs:?}");
    for e in fs::read_dir(&runs[0]).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(
            LOGS.contains(&name.as_str()),
            "{name} left in {:?}",
            runs[0]
        );
    }
}

fn kill(pid: u32, sig: i32) {
    // SAFETY: plain kill(2).
    assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
}

#[test]
fn sigterm_stops_qemu_and_exits_1_with_one_line() {
    let _one = GUEST.lock().unwrap_or_else(|e| e.into_inner());
    let cache = vmcache::with_kernel("6.1", "cache-sigterm");
    let child = start_guest(&cache);
    let qemu = wait_for_qemu(&child);
    let sent = Instant::now();
    kill(child.id(), libc::SIGTERM);
    let out = child.wait_with_output().unwrap();
    assert!(
        sent.elapsed() < Duration::from_secs(5),
        "{:?}",
        sent.elapsed()
    );
    assert!(
        gone_within(qemu, Duration::from_secs(3)),
        "QEMU {qemu} survived"
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let line = common::one_error_line(&out);
    assert!(line.contains("interrupted"), "{line}");
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    only_logs_left(&cache);
}

#[test]
fn sigkill_takes_qemu_with_it() {
    let _one = GUEST.lock().unwrap_or_else(|e| e.into_inner());
    let cache = vmcache::with_kernel("6.1", "cache-sigkill");
    let mut child = start_guest(&cache);
    let qemu = wait_for_qemu(&child);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        gone_within(qemu, Duration::from_secs(5)),
        "QEMU {qemu} survived"
    );
    only_logs_left(&cache);
}

/// Before the guest starts (here: fetching into a cold cache) a signal ends
/// lsmpmon at once, with one line, exit 1, and apt-get goes with it.
/// Uses this machine's apt sources for the second or so before the signal.
#[test]
fn sigterm_during_the_kernel_fetch_ends_lsmpmon_and_apt() {
    let _one = GUEST.lock().unwrap_or_else(|e| e.into_inner());
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cache-sigterm-fetch");
    let _ = fs::remove_dir_all(&cache);
    let child = start_guest(&cache);
    let apt = wait_for_child(&child, "apt-get", Duration::from_millis(200));
    let sent = Instant::now();
    kill(child.id(), libc::SIGTERM);
    let out = child.wait_with_output().unwrap();
    assert!(
        sent.elapsed() < Duration::from_secs(3),
        "{:?}",
        sent.elapsed()
    );
    assert!(
        gone_within(apt, Duration::from_secs(3)),
        "apt-get {apt} survived"
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let line = common::one_error_line(&out);
    assert!(
        line.contains("interrupted before the guest started"),
        "{line}"
    );
    assert!(vmcache::run_dirs(&cache).is_empty());
}
