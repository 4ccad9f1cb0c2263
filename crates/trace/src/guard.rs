//! No trace runs through someone else's probes. Two tracing programs on one
//! function inflate each other's figures (an earlier trace whose release
//! child is still detaching, a second trace at once, another tool's BPF
//! programs, kprobes or ftrace), so before attaching lsmpmon
//!
//! 1. takes the trace lock, a file its release child keeps holding until the
//!    last probe is gone: it waits for an earlier trace's release, and
//!    refuses while another trace runs;
//! 2. looks up the functions it is about to time in the kernel's list of
//!    functions with tracing callbacks (tracefs `enabled_functions`) and
//!    refuses if any is taken.
//!
//! `--allow-other-probes` turns both refusals into a warning and a record in
//! the result (`probe.other_probes`).
use std::{
    collections::HashSet,
    fs::File,
    io::{Read, Seek, Write},
    os::fd::AsRawFd,
    os::unix::fs::{MetadataExt, OpenOptionsExt},
    sync::atomic::{AtomicI32, Ordering},
    time::{Duration, Instant},
};

use anyhow::Result;

use base::error::with_code;

const LOCK_PATH: &str = "/run/lsmpmon-trace.lock";
const TRACEFS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
/// The lock's fd, for the release child (which may only make raw syscalls).
static LOCK_FD: AtomicI32 = AtomicI32::new(-1);

/// Held for the whole trace; its release child inherits it.
pub struct Guard {
    _lock: Option<File>,
    /// Functions about to be timed that already had tracing callbacks
    /// (only with --allow-other-probes); "(not checked: …)" if the list
    /// could not be read.
    pub other_probes: Vec<String>,
}

/// Why a trace may not start, as one line (exit code 1).
fn refuse(what: String) -> anyhow::Error {
    with_code(
        base::error::EXIT_FAILURE,
        format!("{what}; they would inflate every figure: wait or stop them, or pass --allow-other-probes (then recorded in the result)"),
    )
}

pub fn acquire(functions: &[String], allow_others: bool, stop: &dyn Fn() -> bool) -> Result<Guard> {
    let mut other_probes = Vec::new();
    let lock = match lock(stop)? {
        Holder::Us(f) => Some(f),
        Holder::Tracing(pid) if allow_others => {
            other_probes.push(format!("(another lsmpmon trace, pid {pid})"));
            None
        }
        Holder::Tracing(pid) => {
            return Err(refuse(format!(
                "another lsmpmon trace (pid {pid}) has its probes attached"
            )))
        }
    };
    match taken(functions) {
        Some(taken) if taken.is_empty() => {}
        Some(taken) if allow_others => other_probes.extend(taken),
        Some(taken) => {
            return Err(refuse(format!(
                "{} of the functions to time already have tracing programs attached ({}{})",
                taken.len(),
                taken.iter().take(3).cloned().collect::<Vec<_>>().join(", "),
                if taken.len() > 3 { ", ..." } else { "" }
            )))
        }
        None => other_probes.push("(not checked: no tracefs enabled_functions)".into()),
    }
    if !other_probes.is_empty() && allow_others {
        base::say!(
            "lsmpmon: warning: other probes on the traced functions ({}): figures include them",
            other_probes.len()
        );
    }
    Ok(Guard {
        _lock: lock,
        other_probes,
    })
}

enum Holder {
    Us(File),
    Tracing(u32),
}

/// Takes the trace lock, waiting while an earlier trace's release holds it.
fn lock(stop: &dyn Fn() -> bool) -> Result<Holder> {
    let mut file = open_lock(LOCK_PATH)?;
    let mut told = None;
    let start = Instant::now();
    loop {
        // SAFETY: a valid fd.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            break;
        }
        let holder = read_holder(&mut file);
        match holder {
            Some(("trace", pid)) => return Ok(Holder::Tracing(pid)),
            Some((_, pid)) if told != Some(pid) => {
                base::say!(
                    "lsmpmon: waiting for an earlier trace's probes to be released (pid {pid}) ..."
                );
                told = Some(pid);
            }
            _ => {}
        }
        if stop() {
            return Err(with_code(
                base::error::EXIT_FAILURE,
                "interrupted while waiting for an earlier trace's release",
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    if told.is_some() {
        base::say!(
            "lsmpmon: released after {:.0} s",
            start.elapsed().as_secs_f64()
        );
    }
    write_state(file.as_raw_fd(), b"trace");
    LOCK_FD.store(file.as_raw_fd(), Ordering::SeqCst);
    Ok(Holder::Us(file))
}

/// The lock file at `path`: a private regular file of ours, never followed
/// through a link (anyone could have planted one where a trace's lock goes).
fn open_lock(path: &str) -> Result<File> {
    // SAFETY: plain query.
    let euid = unsafe { libc::geteuid() };
    let not_ours = |what: &str| {
        base::error::usage(format!(
            "{path} is {what}, not a private file of uid {euid}: remove it and retry"
        ))
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => not_ours("a symbolic link"),
            _ => anyhow::anyhow!("opening the trace lock {path}: {e}"),
        })?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.uid() != euid || meta.mode() & 0o022 != 0 {
        return Err(not_ours("not a regular file or not private"));
    }
    Ok(file)
}

/// "trace PID" or "release PID", as the holder wrote it.
fn read_holder(file: &mut File) -> Option<(&'static str, u32)> {
    let mut text = String::new();
    file.rewind().ok()?;
    file.read_to_string(&mut text).ok()?;
    let mut words = text.split_whitespace();
    let state = match words.next()? {
        "trace" => "trace",
        "release" => "release",
        _ => return None,
    };
    Some((state, words.next()?.parse().ok()?))
}

/// Writes "STATE PID\n" over the lock file's content. Raw syscalls only: the
/// release child calls it between fork and _exit.
fn write_state(fd: i32, state: &[u8]) {
    let mut buf = [0u8; 32];
    let mut line = std::io::Cursor::new(&mut buf[..]);
    // SAFETY: plain query.
    let pid = unsafe { libc::getpid() };
    let _ = line.write_all(state);
    let _ = writeln!(line, " {pid}");
    let len = line.position() as usize;
    // SAFETY: a valid buffer of `len` bytes; failures only leave an older state.
    unsafe {
        libc::ftruncate(fd, 0);
        libc::pwrite(fd, buf.as_ptr() as *const _, len, 0);
    }
}

/// In the release child: the lock now guards a release, which the next trace waits for.
pub fn mark_release() {
    let fd = LOCK_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        write_state(fd, b"release");
    }
}

/// The functions of `functions` the kernel already runs tracing callbacks
/// on; None if tracefs is not there to say.
fn taken(functions: &[String]) -> Option<Vec<String>> {
    let text = TRACEFS
        .iter()
        .find_map(|d| std::fs::read_to_string(format!("{d}/enabled_functions")).ok())?;
    Some(taken_in(&text, functions))
}

fn taken_in(enabled_functions: &str, functions: &[String]) -> Vec<String> {
    let on: HashSet<&str> = enabled_functions
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    functions
        .iter()
        .filter(|f| on.contains(f.as_str()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn finds_functions_with_callbacks() {
        // As 6.1 prints a BPF trampoline and a kprobe.
        let text = "security_file_open (1) R   D\ttramp: ftrace_regs_caller+0x0/0x58 (call_direct_funcs+0x0/0x30)\n\
                    security_inode_permission (1)    \t->kprobe_ftrace_handler+0x0/0x1a0\n";
        let fns = [
            "security_file_open".to_string(),
            "security_inode_create".to_string(),
            "security_inode_permission".to_string(),
        ];
        assert_eq!(
            taken_in(text, &fns),
            ["security_file_open", "security_inode_permission"]
        );
        assert!(taken_in("", &fns).is_empty());
    }

    #[test]
    fn a_planted_link_is_refused_in_one_line() {
        let dir = std::env::temp_dir().join(format!("lsmpmon-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("target");
        std::fs::write(&target, "").unwrap();
        let link = dir.join("trace.lock");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = open_lock(link.to_str().unwrap()).unwrap_err();
        let line = base::error::one_line(&err);
        assert_eq!(base::error::exit_code(&err), 2, "{line}");
        assert!(line.contains("is a symbolic link"), "{line}");
        assert!(!line.contains("os error"), "{line}");
        // A file of ours that others may write is refused too; a private one is taken.
        let file = dir.join("open.lock");
        std::fs::write(&file, "").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(open_lock(file.to_str().unwrap()).is_err());
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(open_lock(file.to_str().unwrap()).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn holder_line_round_trips() {
        let path = std::env::temp_dir().join(format!("lsmpmon-guard-{}", std::process::id()));
        let mut f = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        write_state(f.as_raw_fd(), b"release");
        write_state(f.as_raw_fd(), b"trace");
        let pid = std::process::id();
        assert_eq!(read_holder(&mut f), Some(("trace", pid)));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("trace {pid}\n"),
            "a shorter state leaves nothing of a longer one"
        );
        std::fs::remove_file(&path).unwrap();
    }
}
