//! Which LSM hooks exist on this kernel and which functions run them: the
//! hooks are the members of the kernel's hook table (hook_table.rs), their
//! callers are read from the kernel's text and site tables (callers.rs).
//! Nothing here lists hooks by name but the deny list, each entry with its
//! reason; the name rule (`security_X`) is only the fallback where the
//! kernel's text cannot be read, and the result says so.
use std::{
    collections::{BTreeMap, BTreeSet, HashSet},
    fs,
};

use anyhow::Result;
use serde::Serialize;

use super::btf::{ArgType, KernelBtf};
use super::callers::{self, Assignment};
use super::hook_table::{HookTable, Layout};
use crate::intf::lsmpmon_obj_kind as obj;
use base::error::usage;
use model::{CallerMethod, HookSource};

/// Hooks the tracer must stay off, and why.
pub const DENY_LIST: &[(&str, &str)] = &[(
    "task_free",
    "the tracer's per-task stack lives in task storage, which is torn down around this hook",
)];

/// One traced function: a hook's caller, or (`lsm`) one LSM's implementation.
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
    /// A hook's caller that runs other hooks too: their time is in this
    /// function's, reported under `name` (callers.rs, `assign`).
    #[serde(skip)]
    pub also_runs: Vec<String>,
}

pub use model::Excluded;

pub struct Discovery {
    /// Every traced function, sorted by hook: a hook with several callers
    /// has one entry each.
    pub hooks: Vec<Hook>,
    pub excluded: Vec<Excluded>,
    pub source: HookSource,
}

/// All LSM hooks of the running kernel and the functions that run them.
pub fn discover(btf: &mut KernelBtf) -> Result<Discovery> {
    let table = HookTable::from_btf(btf);
    let twins: BTreeSet<String> = btf
        .funcs
        .keys()
        .filter_map(|f| f.strip_prefix("bpf_lsm_"))
        .map(String::from)
        .collect();
    let (assignment, source) = assign_callers(btf, table.as_ref(), &twins)?;
    let btf = &*btf;
    let all: BTreeSet<&str> = match &table {
        Some(t) => t.hooks().collect(),
        None => twins.iter().map(String::as_str).collect(),
    };
    let mut excluded = helpers_not_hooks(&twins, &all, table.as_ref());
    let (mut hooks, untraced) = targets(btf, all, &assignment, &source);
    excluded.extend(untraced);
    if hooks.is_empty() {
        return Err(no_hooks(btf));
    }
    hooks.sort_by(|a, b| a.name.cmp(&b.name).then(a.function.cmp(&b.function)));
    excluded.sort_by(|a, b| a.hook.cmp(&b.hook));
    Ok(Discovery {
        hooks,
        excluded,
        source,
    })
}

/// Each hook's callers ([`find_callers`]), added to `btf`'s functions.
fn assign_callers(
    btf: &mut KernelBtf,
    table: Option<&HookTable>,
    twins: &BTreeSet<String>,
) -> Result<(Assignment, HookSource)> {
    let (mut assignment, source) = find_callers(btf, table, twins);
    // A denied hook stays untraced inside another's caller too (no probe on
    // its modules' functions).
    for hooks in assignment.also.values_mut() {
        hooks.retain(|h| !DENY_LIST.iter().any(|(d, _)| d == h));
    }
    assignment.also.retain(|_, hooks| !hooks.is_empty());
    // A caller found in the kernel's text need not be named security_*
    // (7.x's inode_free_by_rcu).
    btf.add_funcs(&assignment.callers.values().flatten().cloned().collect())?;
    Ok((assignment, source))
}

/// The bpf_lsm_* functions that are no hook of the kernel's hook table.
fn helpers_not_hooks(
    twins: &BTreeSet<String>,
    all: &BTreeSet<&str>,
    table: Option<&HookTable>,
) -> Vec<Excluded> {
    let heads = table.map_or("security_hook_heads", |t| t.struct_name());
    twins
        .iter()
        .filter(|t| !all.contains(t.as_str()))
        .map(|name| Excluded {
            hook: name.to_string(),
            reason: format!(
                "a BPF-LSM helper, not a hook: bpf_lsm_{name} is no member of struct {heads}"
            ),
        })
        .collect()
}

/// Every hook's callers as probe targets, and the hooks (or callers) that
/// cannot be traced, with the reason.
fn targets(
    btf: &KernelBtf,
    all: BTreeSet<&str>,
    assignment: &Assignment,
    source: &HookSource,
) -> (Vec<Hook>, Vec<Excluded>) {
    let traceable = traceable_functions();
    let mut hooks = Vec::new();
    let mut excluded = Vec::new();
    let inside: BTreeSet<&str> = assignment
        .also
        .values()
        .flatten()
        .map(String::as_str)
        .collect();
    for name in all {
        if let Some((_, why)) = DENY_LIST.iter().find(|(h, _)| *h == name) {
            excluded.push(Excluded {
                hook: name.into(),
                reason: format!("deny list: {why}"),
            });
            continue;
        }
        let Some(functions) = assignment.callers.get(name) else {
            if !inside.contains(name) {
                excluded.push(Excluded {
                    hook: name.into(),
                    reason: no_caller(source),
                });
            }
            continue;
        };
        for function in functions {
            match target(btf, traceable.as_ref(), name, function, assignment) {
                Ok(h) => hooks.push(h),
                Err(reason) => excluded.push(Excluded {
                    hook: name.into(),
                    reason,
                }),
            }
        }
    }
    (hooks, excluded)
}

/// Why no hook could be found at all.
fn no_hooks(btf: &KernelBtf) -> anyhow::Error {
    // Without the framework the security_* hooks are empty inline functions.
    if !btf.funcs.contains_key("security_file_open") {
        return usage(
            "this kernel has no LSM framework (built without CONFIG_SECURITY): there is no hook to trace; bench measures it",
        );
    }
    usage("no LSM hooks found in kernel BTF (no bpf_lsm_* functions: CONFIG_BPF_LSM off?)")
}

fn no_caller(source: &HookSource) -> String {
    match source.method {
        CallerMethod::NameRule => {
            "no function named security_<hook> (the name rule: the kernel's text could not be read, see the callers' source)".into()
        }
        _ => "no function in the kernel's text runs it".into(),
    }
}

/// The callers from the kernel itself, or by the name rule where its text
/// cannot be read (said in the source's detail).
fn find_callers(
    btf: &KernelBtf,
    table: Option<&HookTable>,
    twins: &BTreeSet<String>,
) -> (Assignment, HookSource) {
    let found = match table {
        Some(t) => callers::find(t, btf).map(|f| (t.layout, f)),
        None => Err(anyhow::anyhow!(
            "neither struct security_hook_heads nor struct lsm_static_calls_table is in kernel BTF"
        )),
    };
    match found {
        Ok((layout, f)) => (
            callers::assign(&f.refs),
            HookSource {
                method: match layout {
                    Layout::Lists => CallerMethod::HookLists,
                    Layout::StaticCalls => CallerMethod::StaticCalls,
                },
                detail: f.detail,
            },
        ),
        Err(e) => {
            let hooks: Vec<&str> = match table {
                Some(t) => t.hooks().collect(),
                None => twins.iter().map(String::as_str).collect(),
            };
            let why = format!(
                "the kernel's text could not be read: {}",
                base::error::one_line(&e)
            );
            (
                name_rule(btf, &hooks),
                HookSource {
                    method: CallerMethod::NameRule,
                    detail: why,
                },
            )
        }
    }
}

/// The fallback: hook `X` is run by `security_X`, or for the blob hooks
/// `<obj>_alloc_security` / `<obj>_free_security` by the kernel's
/// `security_<obj>_alloc` / `security_<obj>_free`.
fn name_rule(btf: &KernelBtf, hooks: &[&str]) -> Assignment {
    let mut a = Assignment::default();
    for name in hooks {
        let direct = format!("security_{name}");
        let short = name
            .strip_suffix("_security")
            .map(|s| format!("security_{s}"));
        if let Some(f) = [Some(direct), short]
            .into_iter()
            .flatten()
            .find(|f| btf.funcs.contains_key(f))
        {
            a.callers.insert(name.to_string(), vec![f]);
        }
    }
    a
}

/// Hook `name`'s caller `function` as a probe target, or why it cannot be.
fn target(
    btf: &KernelBtf,
    traceable: Option<&HashSet<String>>,
    name: &str,
    function: &str,
    assignment: &Assignment,
) -> std::result::Result<Hook, String> {
    let Some(f) = btf.funcs.get(function) else {
        return Err(format!("its caller {function} is not in kernel BTF"));
    };
    if traceable.is_some_and(|t| !t.contains(function)) {
        return Err(format!(
            "its caller {function} is not in available_filter_functions (inlined or notrace)"
        ));
    }
    Ok(Hook {
        name: name.into(),
        function: function.into(),
        btf_id: f.btf_id,
        object: object_arg(&f.params),
        returns_int: f.ret == ArgType::Int,
        not_a_decision: super::returns::not_a_decision(name),
        args: f.params.len(),
        lsm: None,
        also: Vec::new(),
        also_runs: assignment.also.get(function).cloned().unwrap_or_default(),
    })
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
    // Each hook once, and those that run inside another's caller too.
    let names: BTreeSet<String> = hooks
        .iter()
        .flat_map(|h| std::iter::once(&h.name).chain(&h.also_runs))
        .cloned()
        .collect();
    let names: Vec<String> = names.into_iter().collect();
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
            also_runs: Vec::new(),
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
    // A hook traced only inside another's caller selects that caller.
    let own: HashSet<&str> = hooks.iter().map(|h| h.name.as_str()).collect();
    let matches = |p: &glob::Pattern, h: &Hook| {
        p.matches(&h.name)
            || p.matches(&h.function)
            || (h.also_runs.iter()).any(|a| !own.contains(a.as_str()) && p.matches(a))
    };
    for p in &patterns {
        if !hooks.iter().any(|h| matches(p, h)) {
            return Err(usage(format!(
                "no LSM hook matches '{}': see lsmpmon trace --list-hooks",
                p.as_str()
            )));
        }
    }
    let keep: Vec<bool> = (hooks.iter())
        .map(|h| patterns.iter().any(|p| matches(p, h)))
        .collect();
    Ok(hooks
        .into_iter()
        .zip(keep)
        .filter_map(|(h, k)| k.then_some(h))
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
            also_runs: Vec::new(),
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
