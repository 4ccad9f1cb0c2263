//! `lsmpmon trace` on the host where no probe is attached: its output into a
//! closed pipe or a full disk (README, exit codes).
mod common;
use common::{one_error_line, LSMPMON};
use std::{
    os::{fd::OwnedFd, unix::net::UnixStream},
    process::{Command, Stdio},
};

fn has_btf() -> bool {
    let here = std::path::Path::new("/sys/kernel/btf/vmlinux").exists();
    if !here {
        eprintln!("skipped: no kernel BTF here");
    }
    here
}

#[test]
fn list_hooks_into_a_closed_pipe_ends_quietly() {
    if !has_btf() {
        return;
    }
    // The reading end is gone before lsmpmon writes: every write is EPIPE.
    let (ours, theirs) = UnixStream::pair().unwrap();
    drop(ours);
    let out = Command::new(LSMPMON)
        .args(["trace", "--list-hooks"])
        .stdout(Stdio::from(OwnedFd::from(theirs)))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn list_hooks_onto_a_full_disk_is_one_line() {
    if !has_btf() {
        return;
    }
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Command::new(LSMPMON)
        .args(["trace", "--list-hooks"])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let line = one_error_line(&out);
    assert!(
        line.contains("cannot write to standard output: No space left on device"),
        "{line}"
    );
}
