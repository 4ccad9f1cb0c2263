//! Every user-facing failure: one line saying what and what to do, and the
//! documented exit code (README: 2 usage/environment, 124 guest timeout).
mod common;
#[path = "common/vmcache.rs"]
mod vmcache;
use common::{one_error_line, with_stdout_closed, with_stdout_full, LSMPMON};
use std::process::{Command, Output};

/// Host `trace` runs of this file, one at a time: two at once are two traces,
/// and the second is refused for the first ("another lsmpmon trace") before
/// it meets the error its test is about.
static TRACE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn output(cmd: &mut Command, is_trace: bool) -> Output {
    let _one = is_trace.then(|| TRACE.lock().unwrap_or_else(|e| e.into_inner()));
    cmd.output().unwrap()
}

fn run(args: &[&str]) -> Output {
    output(
        Command::new(LSMPMON).args(args),
        args.first() == Some(&"trace"),
    )
}

#[test]
fn lockdown_refusing_fentry_is_one_clear_line() {
    let out = run(&["trace", "--duration", "0.1"]);
    if out.status.success() {
        // fentry works here: then the trace must have produced its table.
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("hook") && text.contains("count"), "{text}");
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

/// --by cgroup reads each call's return, --lean does not: refused before
/// anything is attached; a bound of no cgroups is refused by the parser.
#[test]
fn by_cgroup_with_lean_or_no_cgroups_is_refused() {
    let out = run(&["trace", "--by", "cgroup", "--lean", "--duration", "0.1"]);
    assert_eq!(out.status.code(), Some(2));
    let line = one_error_line(&out);
    assert!(
        line.contains("--by cgroup") && line.contains("--lean"),
        "{line}"
    );
    let out = run(&["trace", "--by", "cgroup", "--max-cgroups", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["serve", "--by", "cgroups"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cgroup"));
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

/// A `--copy` that cannot be read fails before QEMU starts: no run directory
/// is left (nothing boots; a private cache holds the kernel).
#[test]
fn bad_copy_leaves_no_run_directory() {
    let cache = vmcache::with_kernel("6.1", "bad-copy");
    let out = Command::new(LSMPMON)
        .args(["vm", "run", "--copy", "/proc/self/mem", "--", "true"])
        .env("LSMPMON_CACHE", &cache)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(one_error_line(&out).contains("/proc/self/mem"));
    assert_eq!(vmcache::run_dirs(&cache), Vec::<std::path::PathBuf>::new());
    std::fs::remove_dir_all(&cache).unwrap();
}

/// Issue 34 items 3, 9 and 21: what `vm run` was given and cannot work is
/// refused in one line with exit 2 before anything is fetched, read or
/// booted (the cache is empty: no kernel, no run directory). Before, a
/// `--lsmpmon-bin /dev/zero` was read without end (OOM), a 1.5 GB copy was
/// read twice over and refused by QEMU (124), a duplicated `--forward`
/// port, a bad `--icount`/`--rtc` and a dynamically linked lsmpmon failed
/// after the boot (124), and copies onto `/init` or lsmpmon's own script
/// were taken.
#[test]
fn vm_run_refuses_what_cannot_work_before_the_boot() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("vm-refusals-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cache = dir.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let small = dir.join("small");
    std::fs::write(&small, b"x").unwrap();
    // Sparse: 1.5 GB by its size, nothing on disk.
    let big = dir.join("big");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(1_500 << 20)
        .unwrap();
    let dynamic = ["/bin/ls", "/usr/bin/ls"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .unwrap();
    let (small, big) = (small.display().to_string(), big.display().to_string());
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["--lsmpmon-bin".into(), "/dev/zero".into()],
            "--lsmpmon-bin /dev/zero: not a regular file",
        ),
        (
            vec!["--lsmpmon-bin".into(), dynamic.into()],
            "dynamically linked",
        ),
        (vec!["--copy".into(), big.clone()], "give --memory-mb 3"),
        (
            vec!["--copy".into(), "/dev/zero:/root/z".into()],
            "not a regular file",
        ),
        (
            vec!["--copy".into(), format!("{small}:/init")],
            "/init is lsmpmon's own file",
        ),
        (
            vec!["--copy".into(), format!("{small}:/lsmpmon/net.sh")],
            "lsmpmon's own directory",
        ),
        (
            vec!["--copy".into(), format!("{small}:relative")],
            "must be absolute",
        ),
        (
            vec![
                "--forward".into(),
                "40001:80".into(),
                "--forward".into(),
                "40001:22".into(),
            ],
            "host port 40001 is already forwarded",
        ),
        (vec!["--icount".into(), "shift=99".into()], "--icount"),
        (
            vec!["--icount".into(), "shift=auto,sleep=off".into()],
            "--icount",
        ),
        (vec!["--rtc".into(), "clock=wall".into()], "--rtc"),
    ];
    for (args, why) in cases {
        let started = std::time::Instant::now();
        let out = Command::new(LSMPMON)
            .args(["vm", "run"])
            .args(&args)
            .args(["--", "true"])
            .env("LSMPMON_CACHE", &cache)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let line = one_error_line(&out);
        assert!(line.contains(why), "{args:?}: {line}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).lines().count(),
            1,
            "{args:?}"
        );
        assert!(started.elapsed().as_secs() < 5, "{args:?} refused at once");
        assert_eq!(vmcache::run_dirs(&cache), Vec::<std::path::PathBuf>::new());
        assert!(
            !cache.join("kernels").exists(),
            "{args:?}: a kernel was fetched"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 34 item 22: a second `serve` on a taken port exited 1; an
/// address in use is the environment (README: 2), refused before the attach.
#[test]
fn serve_on_a_taken_port_is_an_environment_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = run(&["serve", "--listen", &addr]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let line = one_error_line(&out);
    assert!(
        line.contains(&format!("cannot listen on {addr}")) && line.contains("--listen"),
        "{line}"
    );
}

/// Issue 34 item 20: with no configurations anywhere, `lab plan` said "use
/// one of  (or add…)"; it says none were found and where it looked.
#[test]
fn no_configurations_found_says_where_lsmpmon_looked() {
    let plan = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("no-configs-plan.json");
    let out = Command::new(LSMPMON)
        .args(["lab", "plan", "--configs", "none", "-o"])
        .arg(&plan)
        .env("LSMPMON_CONFIGS", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let line = one_error_line(&out);
    assert!(
        line.contains("no configurations found in /nonexistent (LSMPMON_CONFIGS)"),
        "{line}"
    );
    assert!(!plan.exists());
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

/// Values no option can take. `--opt=VALUE`, so "-1" is a value, not a flag.
const HOSTILE: &[&str] = &[
    "nan",
    "inf",
    "-inf",
    "-1",
    "0",
    "1e300",
    "",
    "4294967296",
    "18446744073709551616",
    "99999999999999999999999999",
];

/// A subcommand, the arguments it needs, and (option, value) pairs that keep it quiet.
type Subcommand = (
    &'static [&'static str],
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
);

/// Every subcommand, with the arguments it needs besides options, and what
/// keeps a run that accepts a value short and off any guest: a short bench,
/// an unknown kernel (refused before anything boots), results in the cwd.
const SUBCOMMANDS: &[Subcommand] = &[
    (&["trace"], &[], &[("--duration", "0.2")]),
    (&["trace", "ctl"], &["dump"], &[]),
    (&["serve"], &[], &[("--listen", "127.0.0.1:0")]),
    (&["top"], &[], &[]),
    (
        &["bench"],
        &[],
        &[("--ops", "null"), ("--samples", "1"), ("--sample-ms", "1")],
    ),
    (&["vm", "run"], &[], &[("--kernel", "9.9")]),
    (&["vm", "cache"], &[], &[]),
    (&["lab"], &[], &[("--kernels", "9.9"), ("--results", "r")]),
    (
        &["lab", "run"],
        &[],
        &[("--kernels", "9.9"), ("--results", "r")],
    ),
    (&["lab", "rerun"], &["/nonexistent/cell.json"], &[]),
    (&["lab", "tables"], &["/nonexistent"], &[]),
    (&["report"], &[REPORT_LAB], &[]),
    (&["compare"], &[REPORT_LAB, REPORT_LAB], &[]),
];

const REPORT_LAB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/report/lab");

/// The options of `sub` that take a value, read from its `--help`.
fn value_options(sub: &[&str]) -> Vec<String> {
    let help = run(&[sub, &["--help"]].concat());
    assert!(help.status.success(), "{sub:?} --help");
    String::from_utf8_lossy(&help.stdout)
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l
                .split_once(", ")
                .filter(|(s, _)| s.len() == 2)
                .map_or(l, |(_, r)| r);
            let (opt, rest) = l.strip_prefix("--")?.split_once(' ')?;
            rest.starts_with('<').then(|| format!("--{opt}"))
        })
        .collect()
}

/// (subcommand and its arguments, quiet defaults, option) for every option.
fn option_cases() -> Vec<(Vec<String>, String)> {
    let mut cases = Vec::new();
    for (sub, positional, quiet) in SUBCOMMANDS {
        let opts = value_options(sub);
        assert!(!opts.is_empty(), "{sub:?}: no options found in --help");
        for opt in opts {
            let mut args: Vec<String> = sub
                .iter()
                .chain(*positional)
                .map(|s| s.to_string())
                .collect();
            args.extend(
                quiet
                    .iter()
                    .filter(|(o, _)| *o != opt)
                    .map(|(o, v)| format!("{o}={v}")),
            );
            cases.push((args, opt));
        }
    }
    cases
}

fn hostile_run(args: &[String], opt: &str, value: &str, cwd: &std::path::Path) -> Output {
    let mut cmd = Command::new(LSMPMON);
    cmd.args(args)
        .arg(format!("{opt}={value}"))
        .current_dir(cwd);
    if args.starts_with(&["vm".to_string(), "run".to_string()]) {
        cmd.args(["--", "true"]);
    }
    output(&mut cmd, args.first().is_some_and(|a| a == "trace"))
}

/// No value of any option panics (101) or fails with more than two lines on
/// stderr: each gets a documented exit code.
#[test]
fn hostile_values_never_panic() {
    let cwd = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hostile-{}", std::process::id()));
    std::fs::create_dir_all(&cwd).unwrap();
    let mut bad = Vec::new();
    let cases = option_cases();
    assert!(cases.len() >= 50, "{} options found", cases.len());
    for (sub, opt) in [
        ("trace", "--interval"),
        ("trace", "--output"),
        ("serve", "--max-connections"),
        ("top", "--interval"),
        ("ctl", "--pid"),
        ("bench", "--sample-ms"),
        ("run", "--memory-mb"),
        ("cache", "--cache-dir"),
        ("tables", "--format"),
        ("report", "--syscalls"),
        ("compare", "--alpha"),
    ] {
        let found = cases
            .iter()
            .any(|(a, o)| a.iter().any(|w| w == sub) && o == opt);
        assert!(found, "{sub} {opt} not read from --help");
    }
    for (base, opt) in cases {
        for value in HOSTILE {
            let out = hostile_run(&base, &opt, value, &cwd);
            let stderr = String::from_utf8_lossy(&out.stderr);
            let code = out.status.code();
            // A run that succeeds may report progress; a failure is brief.
            let failed_lines = if code == Some(0) {
                0
            } else {
                stderr.lines().count()
            };
            if ![Some(0), Some(1), Some(2), Some(124)].contains(&code)
                || failed_lines > 2
                || stderr.contains("panicked")
            {
                bad.push(format!("{base:?} {opt}={value:?}: {code:?}\n{stderr}"));
            }
        }
    }
    std::fs::remove_dir_all(&cwd).unwrap();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The cases the hardening issue reproduced, each refused as a usage error
/// before anything needs root, BPF or a guest.
#[test]
fn values_that_cannot_work_are_usage_errors() {
    let cases: &[&[&str]] = &[
        &["trace", "--interval=nan"],
        &["trace", "--interval=0"],
        &["trace", "--duration=-1"],
        &["trace", "--duration=inf"],
        &["trace", "--hooks="],
        &["trace", "--pid=4294967294"],
        &["trace", "--cgroup=/etc"],
        &["trace", "--uid=4294967295"],
        &["trace", "--object="],
        &["trace", "--top=0"],
        &["bench", "--sample-ms=nan"],
        &["bench", "--sample-ms=inf"],
        &["bench", "--sample-ms=1e300"],
        &["bench", "--cpu=5000"],
        &["bench", "--select-fds=100000"],
        &["vm", "run", "--memory-mb=64", "--", "true"],
    ];
    for args in cases {
        let started = std::time::Instant::now();
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let line = one_error_line(&out);
        assert!(line.ends_with("; see --help"), "{args:?}: {line}");
        assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
        assert!(started.elapsed().as_secs() < 5, "{args:?} refused at once");
    }
}

/// A path or list with a control character is refused as it is parsed (it
/// would be recorded in a result its own reader refuses, or echoed), and the
/// one line shows it escaped.
#[test]
fn control_characters_in_paths_are_usage_errors() {
    let cases: &[&[&str]] = &[
        &["bench", "--dir", "/tmp/b\u{1b}[31mX", "--json"],
        &["lab", "run", "--bench-dir", "/tmp/b\u{1b}[31mX"],
        &["lab", "run", "--results", "r\u{1b}[2J"],
        &["report", "--syscalls", "x\u{1b}[2J", "results"],
    ];
    for args in cases {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let line = one_error_line(&out);
        assert!(line.contains("control character"), "{args:?}: {line}");
        assert!(!out.stderr.contains(&0x1b), "{args:?}: escape echoed");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// clap's own errors are one line too.
#[test]
fn usage_errors_are_one_line() {
    for args in [
        &["trace", "--no-such-option"][..],
        &["vm"],
        &["bench", "extra"],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
        one_error_line(&out);
    }
    let help = run(&["bench", "--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("--sample-ms"));
}

/// `--kernel PATH`: whatever is wrong with the file is one line and exit 2,
/// before anything boots; a real kernel whose config lacks BTF is refused for
/// `trace`, naming exactly what is missing.
#[test]
fn own_kernel_paths_that_cannot_work_are_one_line() {
    let cache = vmcache::with_kernel("7.3", "own-kernel-errors");
    let image = vmcache::image(&cache, "7.3");
    let release = image
        .file_name()
        .unwrap()
        .to_string_lossy()
        .trim_start_matches("vmlinuz-")
        .to_string();
    let config = image.with_file_name(format!("config-{release}"));
    let dir = cache.join("own");
    let (bare, no_btf) = (dir.join("bare"), dir.join("no-btf"));
    std::fs::create_dir_all(&bare).unwrap();
    std::fs::create_dir_all(&no_btf).unwrap();
    std::fs::copy(&image, bare.join("bzImage")).unwrap();
    std::fs::copy(&image, no_btf.join("bzImage")).unwrap();
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.contains("\nCONFIG_DEBUG_INFO_BTF=y\n"));
    std::fs::write(
        no_btf.join("config"),
        text.replace(
            "\nCONFIG_DEBUG_INFO_BTF=y\n",
            "\n# CONFIG_DEBUG_INFO_BTF is not set\n",
        ),
    )
    .unwrap();
    let vm_run = |kernel: &std::path::Path, cmd: &[&str]| {
        Command::new(LSMPMON)
            .args(["vm", "run", "--kernel"])
            .arg(kernel)
            .arg("--")
            .args(cmd)
            .env("LSMPMON_CACHE", &cache)
            .output()
            .unwrap()
    };
    let trace = ["lsmpmon", "trace", "--", "true"];
    let cases: [(std::path::PathBuf, &[&str], &str); 4] = [
        (dir.join("missing/bzImage"), &["true"], "No such file"),
        (dir.clone(), &["true"], "not a file"),
        (no_btf.join("config"), &["true"], "neither a bzImage"),
        (bare.join("bzImage"), &["true"], "no config-"),
    ];
    for (kernel, cmd, words) in cases {
        let out = vm_run(&kernel, cmd);
        assert_eq!(out.status.code(), Some(2), "{}", kernel.display());
        let line = one_error_line(&out);
        assert!(line.contains(words), "{line}");
        assert!(line.contains(&kernel.display().to_string()), "{line}");
    }
    let out = vm_run(&no_btf.join("bzImage"), &trace);
    assert_eq!(out.status.code(), Some(2));
    let line = one_error_line(&out);
    assert!(
        line.contains("lacks CONFIG_DEBUG_INFO_BTF (BTF);") && line.contains("no-btf/bzImage"),
        "{line}"
    );
    // Nothing booted for any of them.
    assert_eq!(vmcache::run_dirs(&cache), Vec::<std::path::PathBuf>::new());
    std::fs::remove_dir_all(&cache).unwrap();
}

#[test]
fn missing_arguments_are_named_on_the_one_line() {
    let out = run(&["compare", "a"]);
    assert_eq!(out.status.code(), Some(2));
    let line = one_error_line(&out);
    assert!(line.contains("not provided: <B>"), "{line}");
    let out = run(&["vm", "run"]);
    assert_eq!(out.status.code(), Some(2));
    let line = one_error_line(&out);
    assert!(line.contains("not provided: <COMMAND>"), "{line}");
}

/// Issue 27 item 5: every subcommand's output goes through one function; a
/// full disk is one line and exit 1, a reader that went away ends it quietly.
#[test]
fn lab_tables_never_panics_on_a_full_or_closed_stdout() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/results/atlas");
    let full = with_stdout_full(Command::new(LSMPMON).args(["lab", "tables", dir]));
    assert_eq!(full.status.code(), Some(1));
    assert!(one_error_line(&full).contains("No space left on device"));
    let out =
        with_stdout_closed(Command::new(LSMPMON).args(["lab", "tables", dir, "--format", "json"]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Help and version onto a full disk are a failure (exit 1), as any output;
/// a full or closed stderr loses a warning line, never the run or its
/// result (no panic, exit 101).
#[test]
fn help_onto_a_full_disk_fails_and_a_full_stderr_loses_no_result() {
    for args in [&["--help"][..], &["--version"], &["report", "--help"]] {
        let out = Command::new(LSMPMON)
            .args(args)
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(one_error_line(&out).contains("No space left"), "{args:?}");
    }
    let dir = std::env::temp_dir().join(format!("lsmpmon-stderr-full-{}", std::process::id()));
    let out = Command::new(LSMPMON)
        .args([
            "bench",
            "--ops",
            "null",
            "--json",
            "--dir",
            dir.to_str().unwrap(),
        ])
        .args(["--samples", "1", "--sample-ms", "1"])
        .stderr(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"op\": \"null\""));
    let out = Command::new(LSMPMON)
        .arg("bogus")
        .stderr(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// A cache that cannot be made is the user's to choose (exit 2, a hint), not
/// a failure at run time.
#[test]
fn a_cache_that_cannot_be_made_is_a_usage_error() {
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args([LSMPMON, "vm", "run", "--", "true"])
        .env("HOME", "/nonexistent")
        .env_remove("LSMPMON_CACHE")
        .env_remove("XDG_CACHE_HOME")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        one_error_line(&out).contains("--cache-dir"),
        "{}",
        one_error_line(&out)
    );
}

/// --with-interrupts without a subject filter would change nothing: refused
/// before anything is loaded, with what to add.
#[test]
fn with_interrupts_without_a_subject_filter_is_refused() {
    for args in [
        &["trace", "--with-interrupts", "--duration", "0.1"][..],
        &[
            "trace",
            "--with-interrupts",
            "--object",
            "x",
            "--duration",
            "0.1",
        ][..],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let line = one_error_line(&out);
        assert!(
            line.contains("--with-interrupts") && line.contains("--comm"),
            "{line}"
        );
    }
}

/// The refusal comes before the root check: a user learns it first.
#[test]
fn with_interrupts_alone_is_refused_before_root_is_asked() {
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            LSMPMON,
            "trace",
            "--with-interrupts",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(one_error_line(&out).contains("--with-interrupts"));
}
