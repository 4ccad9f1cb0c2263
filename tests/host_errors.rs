//! Every user-facing failure: one line saying what and what to do, and the
//! documented exit code (README: 2 usage/environment, 124 guest timeout).
mod common;
use common::{one_error_line, LSMPMON};
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(LSMPMON).args(args).output().unwrap()
}

#[test]
fn lockdown_refusing_fentry_is_one_clear_line() {
    let out = run(&["trace", "--duration", "0.1"]);
    if out.status.success() {
        eprintln!("fentry works on this host: the lockdown path cannot be exercised here");
        return;
    }
    assert_eq!(out.status.code(), Some(2));
    let line = one_error_line(&out);
    assert!(line.contains("fentry"), "{line}");
    assert!(line.contains("lsmpmon vm run"), "{line}");
    assert!(out.stdout.is_empty());
}

#[test]
fn not_root_is_refused() {
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            LSMPMON,
            "trace",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(one_error_line(&out).contains("needs root"));
}

#[test]
fn unknown_hook_is_refused() {
    let out = run(&["trace", "--hooks", "inode_create,no_such_hook_*"]);
    assert_eq!(out.status.code(), Some(2));
    let line = one_error_line(&out);
    assert!(
        line.contains("no_such_hook_*") && line.contains("--list-hooks"),
        "{line}"
    );
}

#[test]
fn unknown_kernel_is_refused() {
    let out = run(&["vm", "run", "--kernel", "9.9", "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
    let line = one_error_line(&out);
    assert!(
        line.contains("unknown kernel '9.9'") && line.contains("6.1"),
        "{line}"
    );
}

#[test]
fn ctl_without_a_running_trace() {
    let out = run(&["trace", "ctl", "dump", "--pid", "999999"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(one_error_line(&out).contains("cannot reach the trace"));
}

#[test]
fn guest_timeout_keeps_the_console_log() {
    let out = run(&["vm", "run", "--timeout", "4", "--", "sleep", "1000"]);
    assert_eq!(out.status.code(), Some(124));
    let line = one_error_line(&out);
    assert!(line.contains("did not finish within 4 s"), "{line}");
    let path = line.rsplit("console log: ").next().unwrap().trim();
    assert!(
        std::path::Path::new(path).exists(),
        "console log {path} kept"
    );
}

#[test]
fn guest_command_status_and_output_pass_through() {
    let out = run(&[
        "vm",
        "run",
        "--",
        "sh",
        "-c",
        "echo out; echo err >&2; printf '%s|' \"$@\"; exit 7",
        "sh",
        "a b",
        "c",
    ]);
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "out\na b|c|");
    assert!(String::from_utf8_lossy(&out.stderr).contains("err\n"));
}
