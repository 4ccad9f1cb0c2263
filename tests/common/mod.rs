//! Shared by the integration tests: the lsmpmon binary, the static workload
//! helper, guest runs and the independent JSON Schema validator.
#![allow(dead_code)]
use std::{
    ffi::OsStr,
    fmt::Debug,
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    sync::OnceLock,
};

pub const LSMPMON: &str = env!("CARGO_BIN_EXE_lsmpmon");

/// tests/helpers/workload.c, built static so it runs in the busybox guest.
pub fn workload() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| static_helper("workload"))
}

/// tests/helpers/pty.c (a command on a pseudo-terminal with scripted keys), static.
pub fn pty_helper() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| static_helper("pty"))
}

/// tests/helpers/scrape.c (scrapes `serve` from inside a guest, timed or
/// hostile), static.
pub fn scrape_helper() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| static_helper("scrape"))
}

/// tests/helpers/NAME.c built static into the test's temporary directory.
fn static_helper(name: &str) -> PathBuf {
    {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/helpers/{name}.c"));
        let st = Command::new("cc")
            .args(["-static", "-O2", "-Wall", "-o"])
            .arg(&out)
            .arg(&src)
            .status()
            .expect("running cc");
        assert!(st.success(), "building the {name} helper");
        out
    }
}

/// Runs `script` with sh inside a guest of kernel `series` (workload on PATH).
/// A guest run that must succeed: its standard output.
pub fn guest_stdout(series: &str, script: &str) -> String {
    let out = guest(series, &[], script);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "guest run failed: {:?}\n{text}",
        out.status
    );
    text
}

pub fn guest(series: &str, extra: &[&str], script: &str) -> Output {
    let out = Command::new(LSMPMON)
        .args([
            "vm",
            "run",
            "--kernel",
            series,
            "--timeout",
            "600",
            "--copy",
        ])
        .arg(workload())
        .args(extra)
        .args(["--", "sh", "-c", script])
        .output()
        .expect("running lsmpmon vm run");
    eprintln!(
        "--- guest {series} stderr ---\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The one `lsmpmon: error:` line a failing command must print.
pub fn one_error_line(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("lsmpmon: error:"))
        .collect();
    assert_eq!(lines.len(), 1, "exactly one error line expected in: {err}");
    lines[0].to_string()
}

/// The JSON a guest script printed after `TAG ` on a line of its own.
pub fn tagged(text: &str, tag: &str) -> serde_json::Value {
    json(
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{tag} ")))
            .unwrap_or_else(|| panic!("no {tag} line in {text}")),
    )
}

pub fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Validates with python3-jsonschema against the committed schema: an
/// implementation independent of lsmpmon's serde types.
pub fn validate(schema_file: &str, doc: &str) {
    let schema = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schema")
        .join(schema_file);
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "doc-{}-{:?}.json",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&tmp, doc).unwrap();
    let out = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(
            "import json,sys,jsonschema\n\
             s=json.load(open(sys.argv[1])); d=json.load(open(sys.argv[2]))\n\
             jsonschema.Draft202012Validator.check_schema(s)\n\
             jsonschema.Draft202012Validator(s).validate(d)",
        )
        .arg(&schema)
        .arg(&tmp)
        .output()
        .expect("running /usr/bin/python3 (python3-jsonschema)");
    assert!(
        out.status.success(),
        "schema {schema_file} rejects the document: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn hook<'a>(result: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    result["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["hook"] == name)
        .unwrap_or_else(|| panic!("hook {name} missing from the result"))
}

/// A module's own function in the --per-lsm table.
pub fn lsm_function<'a>(result: &'a serde_json::Value, function: &str) -> &'a serde_json::Value {
    result["per_lsm"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["function"] == function)
        .unwrap_or_else(|| panic!("{function} missing from per_lsm"))
}

pub fn calls(result: &serde_json::Value, name: &str) -> u64 {
    hook(result, name)["calls"].as_u64().unwrap()
}

/// Count of `hook` attributed to `syscall` in the per-syscall table.
pub fn syscall_hook_count(result: &serde_json::Value, syscall: &str, hook: &str) -> u64 {
    result["syscalls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["syscall"] == syscall)
        .flat_map(|s| s["hooks"].as_array().unwrap().iter())
        .filter(|h| h["hook"] == hook)
        .map(|h| h["count"].as_u64().unwrap())
        .sum()
}

/// A fresh, empty directory under the test target's tmp: `<prefix>-<name>`.
pub fn fresh_dir(prefix: &str, name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{prefix}-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs lsmpmon with `args`, its stderr shown in the test's output.
pub fn run_logged<S: AsRef<OsStr> + Debug>(args: &[S]) -> Output {
    let out = Command::new(LSMPMON)
        .args(args)
        .output()
        .expect("running lsmpmon");
    eprintln!(
        "--- {args:?} stderr ---\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A lab results directory's cells, oldest first.
pub fn lab_cells(results: &Path) -> Vec<serde_json::Value> {
    let mut v: Vec<serde_json::Value> = std::fs::read_dir(results.join("cells"))
        .unwrap()
        .flatten()
        .map(|e| json(&std::fs::read_to_string(e.path()).unwrap()))
        .collect();
    v.sort_by_key(|c| c["started_unix_s"].as_u64());
    v
}

/// The newest cell of configuration `config`.
pub fn lab_cell<'a>(cells: &'a [serde_json::Value], config: &str) -> &'a serde_json::Value {
    cells
        .iter()
        .rev()
        .find(|c| c["config"]["name"] == config)
        .unwrap_or_else(|| panic!("no cell for {config}"))
}

/// A cell's untraced median of `op`.
pub fn cell_median(c: &serde_json::Value, op: &str) -> f64 {
    c["guest"]["bench"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["op"] == op)
        .unwrap_or_else(|| panic!("{op} missing in {}", c["config"]["name"]))["median"]
        .as_f64()
        .unwrap()
}

/// The arguments of `lsmpmon lab run` over `kernels` × `configs` measuring
/// `ops` into `results`, then `extra`. An empty list is left to its default.
pub fn lab_run(
    results: &Path,
    kernels: &str,
    configs: &str,
    ops: &str,
    extra: &[&str],
) -> Vec<String> {
    let mut args = vec!["lab".to_string(), "run".to_string()];
    for (option, list) in [
        ("--kernels", kernels),
        ("--configs", configs),
        ("--ops", ops),
    ] {
        if !list.is_empty() {
            args.extend([option.to_string(), list.to_string()]);
        }
    }
    args.extend(extra.iter().map(|a| a.to_string()));
    args.extend([
        "--results".to_string(),
        results.to_str().unwrap().to_string(),
    ]);
    args
}

/// Asserts that the command succeeded (its stderr in the message); its stdout.
pub fn succeeded(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `cmd` with its standard output on /dev/full.
pub fn with_stdout_full(cmd: &mut Command) -> Output {
    cmd.stdout(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap()
}

/// Runs `cmd` with its standard output closed at once, as by a reader that
/// went away (`| head`).
pub fn with_stdout_closed(cmd: &mut Command) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

/// `lsmpmon lab ARGS` (with one extra environment variable), its stderr
/// shown in the test's output.
pub fn lab_logged(args: &[&str], env: Option<(&str, &std::ffi::OsStr)>) -> Output {
    let mut cmd = std::process::Command::new(LSMPMON);
    if let Some((k, v)) = env {
        cmd.env(k, v);
    }
    let out = cmd
        .arg("lab")
        .args(args)
        .output()
        .expect("running lsmpmon lab");
    eprintln!(
        "--- lab {args:?} stderr ---\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
