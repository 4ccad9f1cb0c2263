//! Which kernel functions run each LSM hook, read from the running kernel
//! itself (no naming rule): through /proc/kcore and /proc/kallsyms,
//! - up to 6.8, every function whose code names a member of
//!   `security_hook_heads` (the hook's list head) runs that hook;
//! - from 6.9, every function holding a static-call site or static-branch
//!   site of one of a hook's slots (the kernel's own site tables give site →
//!   key; `static_calls_table` gives key → hook), and every function whose
//!   code names a hook's slots directly (`lsm_for_each_hook`).
//!
//! The code is decoded for the `security_*` functions and for every function
//! between the first and the last one found (security.c's static helpers,
//! such as 7.x's `inode_free_by_rcu`).
use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};

use super::btf::KernelBtf;
use super::hook_table::{HookTable, Layout};
use super::kernel_mem::{Kallsyms, Kcore};
use super::lsm_tables::{layout, member};
use super::site_tables::{self, EntryLayout, Field};
use super::text_refs;

/// What a function runs: each hook with its first site in the function.
pub type Refs = BTreeMap<String, BTreeMap<String, u64>>;

/// A function longer than this is not decoded (security.c's are < 4 KiB).
const MAX_FUNCTION_BYTES: u64 = 64 << 10;
/// The span between the first and last caller found, decoded whole.
const MAX_SPAN_BYTES: u64 = 4 << 20;

/// Every function that runs a hook, and how they were found.
pub struct Found {
    pub refs: Refs,
    pub detail: String,
}

pub fn find(table: &HookTable, btf: &KernelBtf) -> Result<Found> {
    let core = Kcore::open("finding each hook's callers")?;
    let syms = Kallsyms::load()?;
    let base = syms
        .addr(table.symbol())
        .with_context(|| format!("{} is not in /proc/kallsyms", table.symbol()))?;
    let mut refs = Refs::new();
    let mut sites = 0;
    if table.layout == Layout::StaticCalls {
        sites = from_site_tables(table, btf, &syms, &core, base, &mut refs)?;
    }
    let decoded = from_text(table, &syms, &core, base, &mut refs)?;
    if refs.is_empty() {
        bail!("no function in the kernel's text names {}", table.symbol());
    }
    let detail = match table.layout {
        Layout::Lists => format!(
            "{} functions name a hook's list head in security_hook_heads ({decoded} decoded from /proc/kcore)",
            refs.len()
        ),
        Layout::StaticCalls => format!(
            "{} functions hold a hook's static-call or static-branch sites ({sites} sites in the kernel's site tables) or name its slots in static_calls_table ({decoded} decoded from /proc/kcore)",
            refs.len()
        ),
    };
    Ok(Found { refs, detail })
}

/// The function a symbol's code belongs to (`foo.cold` is part of `foo`).
fn owner(name: &str) -> &str {
    name.find(".cold").map_or(name, |i| &name[..i])
}

/// Notes that `function` runs `hook` at `site`: its first site in the
/// function's body (one only in a `.cold` part, which lies apart, counts
/// as after the body's).
fn add(refs: &mut Refs, function: &str, hook: &str, site: u64) {
    let site = match owner(function) == function {
        true => site,
        false => u64::MAX,
    };
    let first = refs
        .entry(owner(function).to_string())
        .or_default()
        .entry(hook.to_string())
        .or_insert(site);
    *first = (*first).min(site);
}

/// Decodes the `security_*` functions, then every function between the
/// first and last that runs a hook; returns how many were decoded.
fn from_text(
    table: &HookTable,
    syms: &Kallsyms,
    core: &Kcore,
    base: u64,
    refs: &mut Refs,
) -> Result<usize> {
    let range = base..base + table.size();
    let mut decoded = std::collections::BTreeSet::new();
    let mut decode = |start: u64, size: u64, name: &str, refs: &mut Refs| -> Result<()> {
        if size > MAX_FUNCTION_BYTES || !decoded.insert(start) {
            return Ok(());
        }
        let code = core.bytes(start, size)?;
        for r in text_refs::refs_into(&code, start, range.clone()) {
            if let Some(hook) = table.hook_at(r.target - base) {
                add(refs, name, hook, r.site);
            }
        }
        Ok(())
    };
    for (start, size, name) in syms.functions_named(|n| n.starts_with("security_")) {
        decode(start, size, name, refs)?;
    }
    // The functions found, by where they are (a `.cold` part lies apart).
    let found: Vec<(u64, u64)> = (refs.values().flat_map(|h| h.values()))
        .filter_map(|site| syms.function_at(*site))
        .filter(|(_, _, name)| !name.contains(".cold"))
        .map(|(start, size, _)| (start, start + size))
        .collect();
    let (Some(first), Some(end)) = (
        found.iter().map(|f| f.0).min(),
        found.iter().map(|f| f.1).max(),
    ) else {
        return Ok(decoded.len());
    };
    if end - first > MAX_SPAN_BYTES {
        bail!(
            "the functions that run hooks span {} KiB of kernel text: not decoded",
            (end - first) >> 10
        );
    }
    for (start, size, name) in syms.functions_in(first, end) {
        decode(start, size, name, refs)?;
    }
    Ok(decoded.len())
}

/// 6.9+: each hook slot's static-call key and static-branch key (from
/// `static_calls_table`), and the sites the kernel patched for them.
/// Returns how many sites belong to hooks.
fn from_site_tables(
    table: &HookTable,
    btf: &KernelBtf,
    syms: &Kallsyms,
    core: &Kcore,
    base: u64,
    refs: &mut Refs,
) -> Result<usize> {
    let slot = layout(btf, "lsm_static_call")?;
    let (off_key, off_active) = (
        member(slot, "key", "lsm_static_call")?,
        member(slot, "active", "lsm_static_call")?,
    );
    let mut hook_of_key: BTreeMap<u64, &str> = BTreeMap::new();
    for hook in table.hooks() {
        let Some((offset, size)) = table.member(hook) else {
            continue;
        };
        for i in 0..size / slot.size.max(1) {
            let at = base + offset + i * slot.size;
            hook_of_key.insert(core.u64(at + off_key)?, hook);
            hook_of_key.insert(core.u64(at + off_active)?, hook);
        }
    }
    let mut found = 0;
    for (start, stop, entry) in [
        (
            "__start_static_call_sites",
            "__stop_static_call_sites",
            entry_layout(btf, "static_call_site", "addr", "key")?,
        ),
        (
            "__start___jump_table",
            "__stop___jump_table",
            entry_layout(btf, "jump_entry", "code", "key")?,
        ),
    ] {
        let bound = |s: &str| {
            syms.addr(s)
                .with_context(|| format!("{s} is not in /proc/kallsyms"))
        };
        let (from, to) = (bound(start)?, bound(stop)?);
        if to < from || to - from > 16 << 20 {
            bail!("{start} .. {stop} is not a table");
        }
        let bytes = core.bytes(from, to - from)?;
        for s in site_tables::sites(&bytes, from, entry) {
            let (Some(hook), Some((_, _, function))) =
                (hook_of_key.get(&s.key), syms.function_at(s.code))
            else {
                continue;
            };
            add(refs, function, hook, s.code);
            found += 1;
        }
    }
    Ok(found)
}

/// A site table's entry layout from BTF: the code field and the key field.
fn entry_layout(btf: &KernelBtf, name: &str, site: &str, key: &str) -> Result<EntryLayout> {
    let s = layout(btf, name)?;
    let field = |f: &str| -> Result<Field> {
        let offset = member(s, f, name)?;
        // Each field runs to the next one (or the end): 4 or 8 bytes.
        let width = s
            .members
            .values()
            .map(|m| m.offset)
            .filter(|o| *o > offset)
            .min()
            .unwrap_or(s.size)
            - offset;
        Ok(Field { offset, width })
    };
    Ok(EntryLayout {
        size: s.size,
        site: field(site)?,
        key: field(key)?,
    })
}

/// Which hook each function's time is reported under.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Assignment {
    /// Hook → the functions traced for it (its calls and time summed).
    pub callers: BTreeMap<String, Vec<String>>,
    /// Function → the other hooks it runs, whose time is inside its own.
    pub also: BTreeMap<String, Vec<String>>,
}

/// Each function is traced for one hook: of those it runs, the one with the
/// fewest callers (ties: the first it runs). 6.1's `security_prepare_creds`
/// runs `cred_prepare` and, on failure, `cred_free` (an inlined
/// `security_cred_free`): it is `cred_prepare`'s. A hook that only runs
/// inside functions traced for others (7.x's `inode_xattr_skipcap`, inside
/// `security_inode_setxattr` and `_removexattr`) is in their `also`.
pub fn assign(refs: &Refs) -> Assignment {
    let mut n_callers: BTreeMap<&str, usize> = BTreeMap::new();
    for hooks in refs.values() {
        for h in hooks.keys() {
            *n_callers.entry(h).or_default() += 1;
        }
    }
    let mut out = Assignment::default();
    for (function, hooks) in refs {
        let Some(own) = hooks
            .iter()
            .min_by_key(|(h, site)| (n_callers[h.as_str()], **site))
            .map(|(h, _)| h)
        else {
            continue;
        };
        out.callers
            .entry(own.clone())
            .or_default()
            .push(function.clone());
        let others: Vec<String> = hooks.keys().filter(|h| *h != own).cloned().collect();
        if !others.is_empty() {
            out.also.insert(function.clone(), others);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(rows: &[(&str, &[(&str, u64)])]) -> Refs {
        rows.iter()
            .map(|(f, hooks)| {
                let h = hooks.iter().map(|(h, s)| (h.to_string(), *s)).collect();
                (f.to_string(), h)
            })
            .collect()
    }

    #[test]
    fn a_function_is_its_rarest_hooks_and_reports_the_others() {
        // As 6.1 has them: the alloc functions free on failure (inlined).
        let r = refs(&[
            (
                "security_prepare_creds",
                &[("cred_free", 0x40), ("cred_prepare", 0x10)],
            ),
            (
                "security_cred_alloc_blank",
                &[("cred_alloc_blank", 0x10), ("cred_free", 0x30)],
            ),
            ("security_cred_free", &[("cred_free", 0x10)]),
            (
                "security_xfrm_decode_session",
                &[("xfrm_decode_session", 0x8)],
            ),
            (
                "security_skb_classify_flow",
                &[("xfrm_decode_session", 0x8)],
            ),
            // 7.3: two functions that run their own hook and a shared one.
            (
                "security_inode_setxattr",
                &[("inode_setxattr", 0x20), ("inode_xattr_skipcap", 0x60)],
            ),
            (
                "security_inode_removexattr",
                &[("inode_xattr_skipcap", 0x10), ("inode_removexattr", 0x30)],
            ),
        ]);
        let a = assign(&r);
        let callers = |h: &str| a.callers.get(h).cloned().unwrap_or_default();
        assert_eq!(callers("cred_prepare"), ["security_prepare_creds"]);
        assert_eq!(callers("cred_alloc_blank"), ["security_cred_alloc_blank"]);
        assert_eq!(callers("cred_free"), ["security_cred_free"]);
        assert_eq!(
            callers("xfrm_decode_session"),
            ["security_skb_classify_flow", "security_xfrm_decode_session"]
        );
        // Fewer callers wins over the earlier site.
        assert_eq!(callers("inode_removexattr"), ["security_inode_removexattr"]);
        assert!(callers("inode_xattr_skipcap").is_empty());
        assert_eq!(a.also["security_prepare_creds"], ["cred_free"]);
        assert_eq!(
            a.also["security_inode_removexattr"],
            ["inode_xattr_skipcap"]
        );
        assert!(!a.also.contains_key("security_cred_free"));
    }

    #[test]
    fn two_hooks_with_one_caller_each_go_by_their_first_site() {
        let r = refs(&[("security_f", &[("b_hook", 0x30), ("a_hook", 0x50)])]);
        let a = assign(&r);
        assert_eq!(a.callers["b_hook"], ["security_f"]);
        assert_eq!(a.also["security_f"], ["a_hook"]);
    }

    #[test]
    fn cold_parts_belong_to_their_function() {
        let mut r = Refs::new();
        // The cold part lies before the body (.text.unlikely).
        add(&mut r, "security_sb_alloc.cold", "sb_free_security", 0x90);
        add(&mut r, "security_sb_alloc", "sb_alloc_security", 0x120);
        add(&mut r, "security_sb_alloc", "sb_free_security", 0x200);
        add(&mut r, "security_sb_free", "sb_free_security", 0x300);
        add(&mut r, "security_sb_free", "sb_free_security", 0x280);
        add(&mut r, "security_sb_alloc.cold", "sb_alloc_security", 0x95);
        assert_eq!(r.len(), 2);
        assert_eq!(r["security_sb_alloc"]["sb_free_security"], 0x200);
        assert_eq!(r["security_sb_alloc"]["sb_alloc_security"], 0x120);
        assert_eq!(r["security_sb_free"]["sb_free_security"], 0x280);
    }
}
