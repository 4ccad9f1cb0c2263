//! `lsmpmon top` end to end: in 6.1, 6.12 and 7.3 guests on a pseudo-terminal
//! (tests/helpers/pty.c) with typed keys, and its refusals on the host.
mod common;

use std::process::Command;

use common::{guest, one_error_line, pty_helper, LSMPMON};

/// Files created all along, so that hooks have calls each second.
const WORKLOAD: &str = "(i=0; while [ $i -lt 100000 ]; do touch /tmp/f$i; i=$((i+1)); done) &";

#[test]
fn top_6_1_on_a_pseudo_terminal_sorts_and_quits_cleanly() {
    on_a_pseudo_terminal_sorts_and_quits_cleanly("6.1");
}

#[test]
fn top_6_12_on_a_pseudo_terminal_sorts_and_quits_cleanly() {
    on_a_pseudo_terminal_sorts_and_quits_cleanly("6.12");
}

#[test]
fn top_7_3_on_a_pseudo_terminal_sorts_and_quits_cleanly() {
    on_a_pseudo_terminal_sorts_and_quits_cleanly("7.3");
}

fn on_a_pseudo_terminal_sorts_and_quits_cleanly(series: &str) {
    let top = "lsmpmon top --hooks 'inode_*,file_*'";
    let script = format!(
        "{WORKLOAD}\n\
         pty 100 30 @6:s @9:/inode_cr @10:$(printf '\\r') @13:q -- sh -c \"{top}\" > /tmp/q.out; echo \"q exit $?\"\n\
         pty 100 30 @6:$(printf '\\003') -- sh -c \"{top}\" > /tmp/c.out; echo \"ctrl-c exit $?\"\n\
         pty 50 10 5:q -- sh -c \"{top}\"; echo \"small exit $?\"\n\
         pty 65535 65535 @4:q -- sh -c \"{top}\" > /tmp/h.out; echo \"huge exit $?\"\n\
         grep -qF \"$(printf '\\033[?1049l')\" /tmp/h.out && echo 'huge left the alternate screen'\n\
         cat /tmp/q.out; echo; echo '=== ctrl-c'; cat /tmp/c.out"
    );
    let pty = pty_helper().to_str().unwrap();
    let out = guest(series, &["--icount", "off", "--copy", pty], &script);
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}\n{err}");
    assert!(
        text.contains("q exit 0") && text.contains("ctrl-c exit 0"),
        "{text}"
    );
    assert!(text.contains("small exit 2"), "{text}");
    assert!(text.contains("terminal too small (50x10)"), "{text}");
    // Issue 34 item 4: a 65535 x 65535 terminal aborted top (a 170 GB
    // screen buffer) and left it on the alternate screen.
    assert!(text.contains("huge exit 0"), "{text}");
    assert!(text.contains("huge left the alternate screen"), "{text}");
    let (quit_q, quit_c) = text.split_once("=== ctrl-c").unwrap();
    for (what, output) in [("q", quit_q), ("Ctrl-C", quit_c)] {
        assert!(
            output.contains("detached"),
            "{what}: the probes were not released: {output}"
        );
    }
    let q = last_screen(quit_q);
    assert!(q.contains("sort: calls/s"), "{q}");
    assert!(q.contains("filter: inode_cr"), "{q}");
    let rows: Vec<&str> = q.lines().skip(3).filter(|l| !l.trim().is_empty()).collect();
    // The filter leaves inode_create, busy with the workload, and the help line.
    assert_eq!(rows.len(), 2, "{q}");
    let calls_per_s: f64 = rows[0].split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(
        rows[0].starts_with("inode_create") && calls_per_s > 0.0,
        "{q}"
    );
    let c = last_screen(quit_c);
    assert!(
        c.contains("HOOK") && c.contains("sort: time") && c.contains("inode_create"),
        "{c}"
    );
}

/// `top --by cgroup`: g switches the rows from hooks to cgroups, the busy
/// one (a workload moved into /busy) on top by time.
#[test]
fn top_6_1_by_cgroup_switches_to_cgroups() {
    let top = "lsmpmon top --by cgroup --hooks 'inode_*,file_*'";
    let script = format!(
        "mkdir /sys/fs/cgroup/busy\n\
         printf '%s\\n' 'echo $$ > /sys/fs/cgroup/busy/cgroup.procs' '{WORKLOAD} wait' > /tmp/busy.sh\n\
         sh /tmp/busy.sh &\n\
         pty 100 30 @6:g @9:q -- sh -c \"{top}\" > /tmp/g.out; echo \"g exit $?\"\n\
         cat /tmp/g.out"
    );
    let pty = pty_helper().to_str().unwrap();
    let out = guest("6.1", &["--icount", "off", "--copy", pty], &script);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("g exit 0"), "{text}");
    let g = last_screen(&text);
    assert!(
        g.contains("view: cgroups") && g.contains("g hooks/cgroups"),
        "{g}"
    );
    let rows: Vec<&str> = g.lines().skip(2).collect();
    assert!(rows[0].starts_with("CGROUP"), "{g}");
    assert!(rows[1].starts_with("/busy "), "{g}");
}

/// What the terminal showed when `top` left its alternate screen, which it
/// must enter first and leave last (the terminal is then as it was).
fn last_screen(output: &str) -> String {
    let enter = output
        .find("\x1b[?1049h")
        .expect("never entered the alternate screen");
    let leave = output
        .rfind("\x1b[?1049l")
        .expect("never left the alternate screen");
    assert!(enter < leave);
    let mut term = vt100::Parser::new(30, 100, 0);
    term.process(&output.as_bytes()[..leave]);
    term.screen().contents()
}

#[test]
fn top_without_a_terminal_is_one_line() {
    let out = Command::new(LSMPMON).arg("top").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(one_error_line(&out).contains("needs a terminal"));
}

/// `vm run --tty` hands the guest the terminal it runs on (here the host
/// side of tests/helpers/pty.c's pseudo-terminal): `top` in the guest sees
/// its size, draws on it, quits on `q` typed on the host, and the guest's
/// command ends normally.
#[test]
fn top_in_a_guest_through_vm_run_tty() {
    let guest =
        format!("{WORKLOAD}\nstty size; lsmpmon top --hooks 'inode_*'; echo \"top exit $?\"");
    let out = Command::new(pty_helper())
        .args(["100", "30", "@10:q", "--", LSMPMON, "vm", "run", "--tty"])
        .args(["--kernel", "6.1", "--icount", "off", "--timeout", "600"])
        .args(["--", "sh", "-c", &guest])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("30 100"), "the guest's terminal size: {text}");
    assert!(text.contains("top exit 0"), "{text}");
    let screen = last_screen(&text);
    assert!(
        screen.contains("HOOK") && screen.contains("inode_create"),
        "{screen}"
    );
}

#[test]
fn vm_run_tty_without_a_terminal_is_one_line() {
    let out = Command::new(LSMPMON)
        .args(["vm", "run", "--tty", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(one_error_line(&out).contains("--tty needs a terminal"));
}

#[test]
fn top_refuses_count_only_in_one_line() {
    let out = Command::new(LSMPMON)
        .args(["top", "--count-only"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(one_error_line(&out).contains("--count-only times nothing"));
}

#[test]
fn top_refuses_sampled_timing_in_one_line() {
    let out = Command::new(LSMPMON)
        .args(["top", "--sample", "64"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(one_error_line(&out).contains("--sample or --timing-windows would estimate"));
    let out = Command::new(LSMPMON)
        .args(["top", "--timing-windows", "5/60"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(one_error_line(&out).contains("drop it"));
    // --sample 1 is every call timed: not refused for sampling (this
    // machine then stops at the terminal or the privileges).
    let out = Command::new(LSMPMON)
        .args(["top", "--sample", "1"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("--sample"));
}
