//! The operations' registry, one file per family: what `--ops` names
//! (groups, "paper", "lmbench", op names) and what a selection needs. Each
//! op proves it did its work: a syscall that fails, a short read or a
//! missing file fails the operation.
mod avc;
mod avtab;
mod bandwidth;
pub mod build;
mod files;
pub mod ima;
mod ipc;
mod module;
mod paper_calls;
mod process;
mod syscall;
pub mod web;
pub mod workload;
mod yielding;

use anyhow::Result;

use super::op::{OpDef, YIELD_GROUP};
use base::error::usage;

pub fn all() -> Vec<OpDef> {
    let mut v = Vec::new();
    v.extend(syscall::ops());
    v.extend(files::ops());
    v.extend(paper_calls::ops());
    v.extend(ipc::ops());
    v.extend(process::ops());
    v.extend(yielding::ops());
    v.extend(bandwidth::ops());
    v.extend(ima::ops());
    v.extend(module::ops());
    v.extend(web::ops());
    v.extend(build::ops());
    v.extend(avc::ops());
    v.extend(avtab::ops());
    v.extend(workload::ops());
    v
}

/// The LSMPMON paper's Table 3 and the embedded-SELinux paper's Tables 1
/// and 2, then the syscalls LSMPMON's Tables 6 and 7 break down (close,
/// creat) and the one its Table 4's path_truncate needs.
pub const PAPER: &[&str] = &[
    "null",
    "read",
    "write",
    "stat",
    "open_close",
    "create_0k",
    "delete_0k",
    "create_10k",
    "delete_10k",
    "read_256",
    "read_1k",
    "read_4k",
    "write_256",
    "write_1k",
    "write_4k",
    "pipe",
    "unix",
    "tcp",
    "udp",
    "close",
    "creat",
    "truncate",
];

/// Every op's group, as `--ops` names them.
pub const GROUPS: &[&str] = &[
    "syscall", "files", "ipc", "proc", "yield", "bw", "ima", "web", "build", "avc", "avtab",
    "workload",
];
/// Groups of the other papers' studies: not in `lmbench` (all the others).
const STUDY_GROUPS: &[&str] = &["ima", "web", "build", "avc", "avtab", "workload"];

/// Resolves "paper", "lmbench", group names and op names, in order, no repeats.
pub fn select(spec: &str) -> Result<Vec<OpDef>> {
    let mut out: Vec<OpDef> = Vec::new();
    for word in spec.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let names: Vec<&str> = match word {
            "paper" => PAPER.to_vec(),
            // The other papers' studies are not LMbench's: asked for by name.
            "lmbench" => all()
                .iter()
                .filter(|o| !STUDY_GROUPS.contains(&o.group))
                .map(|o| o.name)
                .collect(),
            g if all().iter().any(|o| o.group == g) => all()
                .iter()
                .filter(|o| o.group == g)
                .map(|o| o.name)
                .collect(),
            name if all().iter().any(|o| o.name == name) => vec![name],
            other => {
                return Err(usage(format!(
                "unknown operation or group '{other}': groups are {}, lmbench, paper; ops are {}",
                GROUPS.join(", "),
                all().iter().map(|o| o.name).collect::<Vec<_>>().join(" ")
            )))
            }
        };
        for n in names {
            if !out.iter().any(|o| o.name == n) {
                out.extend(all().into_iter().filter(|o| o.name == n));
            }
        }
    }
    if out.is_empty() {
        return Err(usage("no operation selected"));
    }
    Ok(out)
}

/// The op names an `--ops` list selects, in the order they run.
pub fn op_names(spec: &str) -> Result<Vec<&'static str>> {
    Ok(select(spec)?.iter().map(|o| o.name).collect())
}

/// Checks an `--ops` list (the lab validates before booting anything).
pub fn check_ops(spec: &str, iterations: Option<u64>) -> Result<()> {
    check_iterations(&select(spec)?, iterations)
}

/// `--iterations` fixes the rounds of the yield group's ops (the pseudo
/// multi-process paper's N). Other ops grow theirs to --sample-ms: a fixed
/// count could ask a file op for a billion files.
pub fn check_iterations(selected: &[OpDef], iterations: Option<u64>) -> Result<()> {
    let Some(n) = iterations else {
        return Ok(());
    };
    match selected.iter().find(|o| o.group != YIELD_GROUP) {
        Some(o) => Err(usage(format!(
            "--iterations {n} applies to the yield group's ops only, not {}: select --ops yield (or its ops)",
            o.name
        ))),
        None => Ok(()),
    }
}

/// The `--ops` list a run with (or without) `--workload` runs: the
/// workload op is added when a program is given and the list lacks it, and
/// refused when none is given.
pub fn with_workload(spec: &str, program_given: bool) -> Result<String> {
    let has = select(spec)?.iter().any(|o| o.name == workload::OP);
    match (has, program_given) {
        (true, false) => Err(usage(
            "the workload op runs your program: give it with --workload FILE",
        )),
        (false, true) => Ok(format!("{spec},{}", workload::OP)),
        _ => Ok(spec.to_string()),
    }
}

/// Whether an `--ops` list holds a `web` op (the guest then needs nginx).
pub fn needs_web_server(spec: &str) -> Result<bool> {
    Ok(select(spec)?.iter().any(|o| o.group == "web"))
}

/// Whether an `--ops` list holds a `build` op (the guest then needs tcc).
pub fn needs_build_kit(spec: &str) -> Result<bool> {
    Ok(select(spec)?.iter().any(|o| o.group == "build"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workload_program_adds_its_op_and_the_op_needs_one() {
        assert_eq!(with_workload("null", true).unwrap(), "null,workload");
        assert_eq!(with_workload("workload", true).unwrap(), "workload");
        assert_eq!(
            with_workload("null,workload", true).unwrap(),
            "null,workload"
        );
        assert_eq!(with_workload("paper", false).unwrap(), "paper");
        let e = with_workload("null,workload", false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--workload FILE"), "{e}");
    }

    #[test]
    fn groups_and_names_resolve_in_order_without_repeats() {
        let names = |s| {
            select(s)
                .unwrap()
                .into_iter()
                .map(|o| o.name)
                .collect::<Vec<_>>()
        };
        assert_eq!(names("paper").len(), PAPER.len());
        assert_eq!(names("null,syscall")[0], "null");
        assert_eq!(
            names("null,syscall")
                .iter()
                .filter(|n| **n == "null")
                .count(),
            1
        );
        assert!(names("lmbench").len() >= 30);
        assert!(select("nosuch").is_err());
        assert!(names("lmbench").iter().all(|n| !n.starts_with("ima_")));
        assert_eq!(names("ima").len(), 16);
        assert!(names("ima").contains(&"ima_module_buffer_extend"));
        // The web ops need a server: never in the lmbench set.
        assert!(!names("lmbench")
            .iter()
            .any(|n| n.starts_with("web_") || n.starts_with("build_")));
        assert_eq!(names("web"), ["web_c8", "web_c16", "web_c24", "web_c32"]);
        assert!(!names("lmbench").contains(&"workload"));
        assert!(!names("paper").contains(&"workload"));
        for op in ["close", "creat", "truncate"] {
            assert!(names("paper").contains(&op), "{op}");
            assert!(names("files").contains(&op), "{op}");
        }
        for op in all() {
            assert!(GROUPS.contains(&op.group), "{}", op.name);
        }
    }
}
