//! Which LSM implements each hook, read from the running kernel's own hook
//! tables through /proc/kcore: `security_hook_heads` (lists, up to 6.8) or
//! `static_calls_table` (static calls, 6.9+). Struct layouts come from BTF,
//! function names from /proc/kallsyms: no LSM function is guessed by name.
use anyhow::{Context, Result};

use super::btf::{KernelBtf, Struct};
use super::kernel_mem::{Kallsyms, Kcore};
use base::error::usage;

/// The BTF structs the walk needs.
pub const STRUCTS: &[&str] = &[
    "security_hook_heads",
    "security_hook_list",
    "lsm_static_calls_table",
    "lsm_static_call",
    "lsm_id",
    "static_call_site",
    "jump_entry",
];

/// One LSM's implementation of one hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Impl {
    pub hook: String,
    pub lsm: String,
    /// Its kernel function, or None if the address has no symbol.
    pub function: Option<String>,
}

pub(crate) fn member(s: &Struct, name: &str, what: &str) -> Result<u64> {
    s.members
        .get(name)
        .map(|m| m.offset)
        .with_context(|| format!("struct {what} has no member {name} in this kernel's BTF"))
}

pub(crate) fn layout<'a>(btf: &'a KernelBtf, name: &str) -> Result<&'a Struct> {
    btf.structs
        .get(name)
        .with_context(|| format!("struct {name} is not in this kernel's BTF"))
}

/// Every (hook, LSM, function) the kernel's hook tables hold for `hooks`.
pub fn discover(btf: &KernelBtf, hooks: &[String]) -> Result<Vec<Impl>> {
    let syms = Kallsyms::load()?;
    let core = Kcore::open("--per-lsm")?;
    let mut impls = Vec::new();
    let name_of = |addr: u64| syms.function_named_at(addr).map(String::from);
    if let Some(heads) = syms.addr("security_hook_heads") {
        // Up to 6.8: one hlist of security_hook_list per hook.
        let table = layout(btf, "security_hook_heads")?;
        let node = layout(btf, "security_hook_list")?;
        let (off_list, off_hook, off_lsm) = (
            member(node, "list", "security_hook_list")?,
            member(node, "hook", "security_hook_list")?,
            member(node, "lsm", "security_hook_list")?,
        );
        for hook in hooks {
            let Some(m) = table.members.get(hook) else {
                continue;
            };
            let mut n = core.u64(heads + m.offset)?;
            for _ in 0..64 {
                if n == 0 {
                    break;
                }
                let node_addr = n - off_list;
                let func = core.u64(node_addr + off_hook)?;
                let lsm = core.cstr(core.u64(node_addr + off_lsm)?)?;
                impls.push(Impl {
                    hook: hook.clone(),
                    lsm,
                    function: name_of(func),
                });
                n = core.u64(node_addr + off_list)?;
            }
        }
    } else if let Some(calls) = syms.addr("static_calls_table") {
        // 6.9+: an array of static-call slots per hook.
        let table = layout(btf, "lsm_static_calls_table")?;
        let slot = layout(btf, "lsm_static_call")?;
        let node = layout(btf, "security_hook_list")?;
        let id = layout(btf, "lsm_id")?;
        let off_hl = member(slot, "hl", "lsm_static_call")?;
        let (off_hook, off_lsmid) = (
            member(node, "hook", "security_hook_list")?,
            member(node, "lsmid", "security_hook_list")?,
        );
        let off_name = member(id, "name", "lsm_id")?;
        for hook in hooks {
            let Some(m) = table.members.get(hook) else {
                continue;
            };
            for i in 0..u64::from(m.nelems.unwrap_or(0)) {
                let hl = core.u64(calls + m.offset + i * slot.size + off_hl)?;
                if hl == 0 {
                    continue;
                }
                let func = core.u64(hl + off_hook)?;
                let lsm = core.cstr(core.u64(core.u64(hl + off_lsmid)? + off_name)?)?;
                impls.push(Impl {
                    hook: hook.clone(),
                    lsm,
                    function: name_of(func),
                });
            }
        }
    } else {
        return Err(usage(
            "this kernel has neither security_hook_heads nor static_calls_table in kallsyms: --per-lsm cannot map hooks",
        ));
    }
    Ok(impls)
}
