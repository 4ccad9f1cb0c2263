//! Which LSM hooks exist on this kernel: a traceable `security_X` with a
//! `bpf_lsm_X` twin in BTF is hook `X`. Nothing here lists hooks by name but
//! the deny list, each entry with its reason.
use std::{
    collections::{BTreeMap, BTreeSet, HashSet},
    fs,
};

use anyhow::Result;
use serde::Serialize;

use super::btf::{ArgType, Func, KernelBtf};
use crate::intf::lsmpmon_obj_kind as obj;
use base::error::usage;

/// Hooks the tracer must stay off, and why.
pub const DENY_LIST: &[(&str, &str)] = &[(
    "task_free",
    "the tracer's per-task stack lives in task storage, which is torn down around this hook",
)];

#[derive(Debug, Clone, Default, Serialize)]
pub struct Hook {
    /// The LSM hook's name, as in `lsm_hook_defs.h`: `inode_create`.
    pub name: String,
    /// The traced kernel function: `security_inode_create`.
    pub function: String,
    #[serde(skip)]
    pub btf_id: u32,
    /// Which argument names the object for `--object`, if any.
    #[serde(skip)]
    pub object: Option<(u32, u8)>,
    #[serde(skip)]
    pub returns_int: bool,
    /// Why the return is not an access decision (no allow/deny), if so.
    #[serde(skip)]
    pub not_a_decision: Option<&'static str>,
    /// The function's number of arguments.
    #[serde(skip)]
    pub args: usize,
    /// Set for one LSM's own implementation of the hook (`--per-lsm`).
    #[serde(skip)]
    pub lsm: Option<String>,
    /// Other hooks the same LSM function implements (TOMOYO's `file_ioctl`
    /// and `file_ioctl_compat`): one probe, reported under each.
    #[serde(skip)]
    pub also: Vec<String>,
}

pub use model::Excluded;

pub struct Discovery {
    pub hooks: Vec<Hook>,
    pub excluded: Vec<Excluded>,
}

/// All LSM hooks of the running kernel, sorted by name.
pub fn discover(btf: &KernelBtf) -> Result<Discovery> {
    let traceable = traceable_functions();
    let mut hooks = Vec::new();
    let mut excluded = Vec::new();
    for twin in btf.funcs.keys() {
        let Some(name) = twin.strip_prefix("bpf_lsm_") else {
            continue;
        };
        let Some((function, f)) = security_function(btf, name) else {
            excluded.push(Excluded {
                hook: name.into(),
                reason: "no security_* function calls it (called directly by the kernel)".into(),
            });
            continue;
        };
        if let Some((_, why)) = DENY_LIST.iter().find(|(h, _)| *h == name) {
            excluded.push(Excluded {
                hook: name.into(),
                reason: format!("deny list: {why}"),
            });
            continue;
        }
        if let Some(t) = &traceable {
            if !t.contains(function.as_str()) {
                excluded.push(Excluded {
                    hook: name.into(),
                    reason: format!(
                        "{function} is not in available_filter_functions (inlined or notrace)"
                    ),
                });
                continue;
            }
        }
        hooks.push(Hook {
            name: name.into(),
            function: function.clone(),
            btf_id: f.btf_id,
            object: object_arg(&f.params),
            returns_int: f.ret == ArgType::Int,
            not_a_decision: super::returns::not_a_decision(name),
            args: f.params.len(),
            lsm: None,
            also: Vec::new(),
        });
    }
    if hooks.is_empty() {
        // Without the framework the security_* hooks are empty inline functions.
        if !btf.funcs.contains_key("security_file_open") {
            return Err(usage(
                "this kernel has no LSM framework (built without CONFIG_SECURITY): there is no hook to trace; bench measures it",
            ));
        }
        return Err(usage(
            "no LSM hooks found in kernel BTF (no bpf_lsm_* functions: CONFIG_BPF_LSM off?)",
        ));
    }
    hooks.sort_by(|a, b| a.name.cmp(&b.name));
    excluded.sort_by(|a, b| a.hook.cmp(&b.hook));
    Ok(Discovery { hooks, excluded })
}

/// The kernel function that runs hook `name`: `security_<name>`, or for the
/// blob hooks `<obj>_alloc_security` / `<obj>_free_security` the kernel's
/// `security_<obj>_alloc` / `security_<obj>_free`.
fn security_function<'a>(btf: &'a KernelBtf, name: &str) -> Option<(String, &'a Func)> {
    let direct = format!("security_{name}");
    let short = name
        .strip_suffix("_security")
        .map(|s| format!("security_{s}"));
    [Some(direct), short]
        .into_iter()
        .flatten()
        .find_map(|f| btf.funcs.get(&f).map(|func| (f, func)))
}

/// The first `struct file *`, `struct dentry *` or `struct path *` argument.
pub fn object_arg(params: &[ArgType]) -> Option<(u32, u8)> {
    params.iter().enumerate().find_map(|(i, p)| match p {
        ArgType::StructPtr(s) if s == "file" => Some((obj::LSMPMON_OBJ_FILE, i as u8)),
        ArgType::StructPtr(s) if s == "dentry" => Some((obj::LSMPMON_OBJ_DENTRY, i as u8)),
        ArgType::StructPtr(s) if s == "path" => Some((obj::LSMPMON_OBJ_PATH, i as u8)),
        _ => None,
    })
}

/// Each LSM's implementation of the selected hooks, as traceable targets;
/// those that cannot be traced are returned with the reason.
pub fn lsm_targets(btf: &KernelBtf, hooks: &[Hook]) -> Result<(Vec<Hook>, Vec<Excluded>)> {
    let names: Vec<String> = hooks.iter().map(|h| h.name.clone()).collect();
    let impls = super::lsm_tables::discover(btf, &names)?;
    let traceable = traceable_functions();
    let mut targets = Vec::new();
    let mut unmapped = Vec::new();
    for i in impls {
        let label = format!("{} ({})", i.hook, i.lsm);
        let Some(function) = i.function else {
            unmapped.push(Excluded {
                hook: label,
                reason: "its address has no symbol in /proc/kallsyms".into(),
            });
            continue;
        };
        let Some(f) = btf.funcs.get(&function) else {
            unmapped.push(Excluded {
                hook: label,
                reason: format!("{function} is not in kernel BTF"),
            });
            continue;
        };
        if traceable.as_ref().is_some_and(|t| !t.contains(&function)) {
            unmapped.push(Excluded {
                hook: label,
                reason: format!("{function} is not in available_filter_functions"),
            });
            continue;
        }
        // Two probe pairs on one function would see each other's frames.
        if let Some(t) = targets
            .iter_mut()
            .find(|t: &&mut Hook| t.function == function)
        {
            t.also.push(i.hook);
            continue;
        }
        targets.push(Hook {
            not_a_decision: super::returns::not_a_decision(&i.hook),
            name: i.hook,
            function,
            btf_id: f.btf_id,
            object: object_arg(&f.params),
            returns_int: f.ret == ArgType::Int,
            args: f.params.len(),
            lsm: Some(i.lsm),
            also: Vec::new(),
        });
    }
    Ok((targets, unmapped))
}

/// Every hook each LSM implements in the kernel's hook tables, whether it
/// can be probed or not: the hooks are the BPF LSM's stubs (one per hook).
pub fn implemented(btf: &KernelBtf) -> Result<Vec<model::trace::LsmHooks>> {
    let all: Vec<String> = btf
        .funcs
        .keys()
        .filter_map(|f| f.strip_prefix("bpf_lsm_"))
        .map(String::from)
        .collect();
    let mut by_lsm: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for i in super::lsm_tables::discover(btf, &all)? {
        by_lsm.entry(i.lsm).or_default().insert(i.hook);
    }
    Ok(by_lsm
        .into_iter()
        .map(|(lsm, hooks)| model::trace::LsmHooks {
            lsm,
            hooks: hooks.into_iter().collect(),
        })
        .collect())
}

fn traceable_functions() -> Option<HashSet<String>> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .find_map(|d| fs::read_to_string(format!("{d}/available_filter_functions")).ok())
        .map(|text| {
            text.lines()
                .filter_map(|l| l.split_whitespace().next())
                .map(String::from)
                .collect()
        })
}

/// Keeps the hooks whose name or function matches one of the comma-separated globs.
pub fn select(hooks: Vec<Hook>, globs: &str) -> Result<Vec<Hook>> {
    let patterns = globs
        .split(',')
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .map(|g| glob::Pattern::new(g).map_err(|e| usage(format!("bad hook pattern '{g}': {e}"))))
        .collect::<Result<Vec<_>>>()?;
    if patterns.is_empty() {
        return Err(usage(
            "--hooks names no hook: see lsmpmon trace --list-hooks",
        ));
    }
    for p in &patterns {
        if !hooks
            .iter()
            .any(|h| p.matches(&h.name) || p.matches(&h.function))
        {
            return Err(usage(format!(
                "no LSM hook matches '{}': see lsmpmon trace --list-hooks",
                p.as_str()
            )));
        }
    }
    Ok(hooks
        .into_iter()
        .filter(|h| {
            patterns
                .iter()
                .any(|p| p.matches(&h.name) || p.matches(&h.function))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(name: &str) -> Hook {
        Hook {
            name: name.into(),
            function: format!("security_{name}"),
            btf_id: 1,
            object: None,
            returns_int: true,
            not_a_decision: None,
            args: 1,
            lsm: None,
            also: Vec::new(),
        }
    }

    #[test]
    fn globs_match_hook_or_function_name() {
        let all = vec![
            hook("inode_create"),
            hook("inode_unlink"),
            hook("file_open"),
        ];
        let names = |v: Vec<Hook>| v.into_iter().map(|h| h.name).collect::<Vec<_>>();
        assert_eq!(
            names(select(all.clone(), "inode_*").unwrap()),
            ["inode_create", "inode_unlink"]
        );
        assert_eq!(
            names(select(all.clone(), "security_file_open").unwrap()),
            ["file_open"]
        );
        assert!(select(all, "nosuch_*").is_err());
    }

    #[test]
    fn object_is_first_file_dentry_or_path() {
        let inode = ArgType::StructPtr("inode".into());
        let dentry = ArgType::StructPtr("dentry".into());
        assert_eq!(
            object_arg(&[inode.clone(), dentry, ArgType::Int]),
            Some((obj::LSMPMON_OBJ_DENTRY, 1))
        );
        assert_eq!(object_arg(&[inode]), None);
    }
}
