//! LSMPMON's Tables 1 and 2 for each kernel: per configuration and module,
//! how the module names what it controls, what it controls, how many hooks
//! it implements (its functions in the kernel's hook tables, as `trace
//! --per-lsm` found them) and how many of them the ops called, with the
//! busiest ones: what the module's cost in the other forms is made of.
use super::account::added_modules;
use super::forms::{self, baseline, draws};
use super::input::{Run, BASELINE};
use base::papers;
use base::table::{Cell, Row, Table};
use model::trace::TraceResult;

/// How a module identifies objects and what it controls: what its design
/// says (LSMPMON's Table 1 gives the same two columns), not a measurement.
const DESIGNS: &[(&str, &str, &str)] = &[
    (
        "selinux",
        "label (security.selinux)",
        "files, processes, sockets, IPC, the policy's classes",
    ),
    (
        "smack",
        "label (security.SMACK64)",
        "files, processes, sockets, IPC",
    ),
    (
        "apparmor",
        "path (profiles by program path)",
        "files, capabilities, network, mounts, signals",
    ),
    (
        "tomoyo",
        "path (domains by exec history)",
        "files, network, mounts, environment",
    ),
    (
        "landlock",
        "inode (file hierarchies a process restricts itself to)",
        "files, TCP ports",
    ),
    (
        "ima",
        "inode (file contents hashed)",
        "files measured on exec, mmap, read",
    ),
    (
        "integrity",
        "inode (file contents hashed)",
        "files measured on exec, mmap, read",
    ),
    (
        "evm",
        "label (security.evm over the xattrs)",
        "security xattrs",
    ),
    ("yama", "process relationship", "ptrace"),
    (
        "lockdown",
        "none (a machine-wide level)",
        "kernel interfaces that reach kernel memory",
    ),
    (
        "capability",
        "credentials (capability sets)",
        "privileged operations",
    ),
];

/// The BPF LSM's method is its programs': the reference MACs name theirs.
fn design(module: &str, config: &str) -> (String, String) {
    if module == "bpf" {
        let by = match config {
            "mac-label" => "label (security.lsmpmon, in inode storage)",
            "mac-path" => "path (resolved on every check)",
            "mac-inode" => "inode (device, inode number)",
            _ => "its programs' own",
        };
        return (by.into(), "what its programs check".into());
    }
    DESIGNS
        .iter()
        .find(|(m, _, _)| *m == module)
        .map_or(("–".into(), "–".into()), |(_, by, what)| {
            (by.to_string(), what.to_string())
        })
}

/// Hooks `module` implements: from the kernel's hook tables where the
/// trace recorded them, else (older results) those it probed, marked so.
fn implemented(t: &TraceResult, module: &str) -> Cell {
    if !t.probe.implemented.is_empty() {
        let n = t
            .probe
            .implemented
            .iter()
            .find(|m| m.lsm == module)
            .map_or(0, |m| m.hooks.len());
        return Cell::fixed(n as f64, 0);
    }
    let probed = t.per_lsm.iter().filter(|h| h.lsm == module).count();
    Cell::Value {
        value: probed as f64,
        pct: None,
        mark: Some(PROBED_MARK.into()),
    }
}

/// A count of probed hooks only (results made before `implemented`).
const PROBED_MARK: &str = "†";

/// The hooks of `module` the traced ops called, busiest first.
fn called(t: &TraceResult, module: &str) -> Vec<(String, u64)> {
    let mut called: Vec<(String, u64)> = t
        .per_lsm
        .iter()
        .filter(|h| h.lsm == module && h.stats.calls > 0)
        .map(|h| (h.stats.hook.clone(), h.stats.calls))
        .collect();
    called.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    called
}

const BUSIEST: usize = 4;

fn row(config: &str, module: &str, t: &TraceResult, release: &str) -> Row {
    let (by, what) = design(module, config);
    let called = called(t, module);
    let busiest: Vec<&str> = called.iter().take(BUSIEST).map(|h| h.0.as_str()).collect();
    Row {
        label: format!("{config}: {module}"),
        cells: vec![
            Cell::text(by),
            Cell::text(what),
            implemented(t, module),
            Cell::fixed(called.len() as f64, 0),
            Cell::text(if busiest.is_empty() {
                "–".to_string()
            } else {
                busiest.join(", ")
            }),
            Cell::text(format!("in tree, {release}")),
        ],
    }
}

/// The modules a configuration is about: capability for the baseline,
/// else those it adds over the baseline (what it measures, without one).
fn modules(c: &Run, base: Option<&Run>) -> Vec<String> {
    if c.config == BASELINE {
        return vec!["capability".into()];
    }
    match base {
        Some(b) => added_modules(c, b),
        None => c.measured_lsms.clone(),
    }
}

/// One kernel's inventory; None where no configuration was traced.
pub fn table(kernel: &str, cols: &[&Run], every_draw: &[&Run]) -> Option<Table> {
    let base = baseline(cols);
    let mut rows = Vec::new();
    // A lab configuration's modules, traced per LSM with every hook: a
    // single trace may have asked for a few hooks only.
    for c in cols.iter().filter(|c| c.passed() && c.from_lab) {
        let traced = draws(every_draw, c)
            .into_iter()
            .find(|r| r.trace.as_ref().is_some_and(|t| t.options.per_lsm));
        let Some(t) = traced.and_then(|r| r.trace.as_ref()) else {
            continue;
        };
        let release = t.provenance.kernel_release.as_str();
        for m in modules(c, base) {
            rows.push(row(&c.config, &m, t, release));
        }
    }
    if rows.is_empty() {
        return None;
    }
    Some(Table {
        form: base::form::Form::Inventory,
        title: format!(
            "Hook inventory ({}): each module's hooks, kernel {kernel}",
            papers::cite(&papers::LSMPMON, "Tables 1 and 2")
        ),
        kernel: kernel.into(),
        notes: vec![
            "Identifies by / controls: the module's design, as LSMPMON's Table 1 gives it. Hooks implemented: the module's entries in this kernel's hook tables, as `trace --per-lsm` read them (the BPF LSM has a stub on every hook; its programs attach to some); † only those it probed (results made before lsmpmon recorded the tables: hooks whose security_* function has another name, such as cred_prepare, called by security_prepare_creds, are not among them). Called: of those, the ones the configuration's traced ops called (the ops' own workload only), and the busiest of them by calls. Each module ships with the kernel: its version is the kernel's.".into(),
        ],
        header: [
            "configuration: module",
            "identifies by",
            "controls",
            "hooks implemented",
            "called",
            "busiest",
            "version",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    })
}

/// The inventory of every kernel with a traced configuration.
pub fn tables(runs: &[Run], order: &[String]) -> Vec<Table> {
    forms::per_kernel(runs, order, table)
}
