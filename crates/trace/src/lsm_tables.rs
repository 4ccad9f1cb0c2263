//! Which LSM implements each hook, read from the running kernel's own hook
//! tables through /proc/kcore: `security_hook_heads` (lists, up to 6.8) or
//! `static_calls_table` (static calls, 6.9+). Struct layouts come from BTF,
//! function names from /proc/kallsyms: no LSM function is guessed by name.
use std::{collections::HashMap, fs::File, io::Read, os::unix::fs::FileExt};

use anyhow::{bail, Context, Result};

use super::btf::{KernelBtf, Struct};
use base::error::usage;

/// The BTF structs the walk needs.
pub const STRUCTS: &[&str] = &[
    "security_hook_heads",
    "security_hook_list",
    "lsm_static_calls_table",
    "lsm_static_call",
    "lsm_id",
];

/// One LSM's implementation of one hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Impl {
    pub hook: String,
    pub lsm: String,
    /// Its kernel function, or None if the address has no symbol.
    pub function: Option<String>,
}

/// Reads kernel virtual memory from /proc/kcore (an ELF core file).
struct Kcore {
    file: File,
    /// (virtual address, size, file offset) of each PT_LOAD segment.
    segments: Vec<(u64, u64, u64)>,
}

impl Kcore {
    fn open() -> Result<Self> {
        let mut file = File::open("/proc/kcore").map_err(|e| {
            usage(format!(
                "--per-lsm reads the kernel's hook tables from /proc/kcore: {e} (needs root, CONFIG_PROC_KCORE, no lockdown)"
            ))
        })?;
        let mut eh = [0u8; 64];
        file.read_exact(&mut eh)?;
        if &eh[..4] != b"\x7fELF" || eh[4] != 2 {
            bail!("/proc/kcore is not a 64-bit ELF file");
        }
        let u16_at = |b: &[u8], o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        let (phoff, phentsize, phnum) = (u64_at(&eh, 32), u16_at(&eh, 54), u16_at(&eh, 56));
        let mut segments = Vec::new();
        for i in 0..u64::from(phnum) {
            let mut ph = vec![0u8; usize::from(phentsize)];
            file.read_exact_at(&mut ph, phoff + i * u64::from(phentsize))?;
            let p_type = u32::from_le_bytes(ph[0..4].try_into().unwrap());
            if p_type == 1 {
                segments.push((u64_at(&ph, 16), u64_at(&ph, 32), u64_at(&ph, 8)));
            }
        }
        Ok(Self { file, segments })
    }

    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        let (vaddr, _, off) = self
            .segments
            .iter()
            .find(|(v, size, _)| addr >= *v && addr + buf.len() as u64 <= v + size)
            .with_context(|| format!("kernel address {addr:#x} is not in /proc/kcore"))?;
        self.file.read_exact_at(buf, off + (addr - vaddr))?;
        Ok(())
    }

    fn u64(&self, addr: u64) -> Result<u64> {
        let mut b = [0u8; 8];
        self.read(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    fn cstr(&self, addr: u64) -> Result<String> {
        let mut b = [0u8; 32];
        self.read(addr, &mut b)?;
        let end = b.iter().position(|c| *c == 0).unwrap_or(b.len());
        Ok(String::from_utf8_lossy(&b[..end]).into_owned())
    }
}

struct Kallsyms {
    by_addr: HashMap<u64, String>,
    by_name: HashMap<String, u64>,
}

impl Kallsyms {
    fn load() -> Result<Self> {
        let text = std::fs::read_to_string("/proc/kallsyms").context("reading /proc/kallsyms")?;
        let mut by_addr = HashMap::new();
        let mut by_name = HashMap::new();
        for line in text.lines() {
            let mut f = line.split_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (f.next(), f.next(), f.next()) else {
                continue;
            };
            if f.next().is_some() {
                continue; // module symbol
            }
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            if is_function(kind) {
                by_addr.entry(addr).or_insert_with(|| name.to_string());
            }
            by_name.insert(name.to_string(), addr);
        }
        if by_name.values().all(|a| *a == 0) {
            return Err(usage(
                "/proc/kallsyms shows no addresses: run as root with kernel.kptr_restrict < 2",
            ));
        }
        Ok(Self { by_addr, by_name })
    }
}

/// A text symbol, strong or weak: from 7.x the BPF LSM's default hooks
/// (`bpf_lsm_file_open`, ...) are weak (`W` in /proc/kallsyms).
fn is_function(kind: &str) -> bool {
    matches!(kind, "t" | "T" | "w" | "W")
}

fn member(s: &Struct, name: &str, what: &str) -> Result<u64> {
    s.members
        .get(name)
        .map(|m| m.offset)
        .with_context(|| format!("struct {what} has no member {name} in this kernel's BTF"))
}

fn layout<'a>(btf: &'a KernelBtf, name: &str) -> Result<&'a Struct> {
    btf.structs
        .get(name)
        .with_context(|| format!("struct {name} is not in this kernel's BTF"))
}

/// Every (hook, LSM, function) the kernel's hook tables hold for `hooks`.
pub fn discover(btf: &KernelBtf, hooks: &[String]) -> Result<Vec<Impl>> {
    let syms = Kallsyms::load()?;
    let core = Kcore::open()?;
    let mut impls = Vec::new();
    let name_of = |addr: u64| syms.by_addr.get(&addr).cloned();
    if let Some(&heads) = syms.by_name.get("security_hook_heads") {
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
    } else if let Some(&calls) = syms.by_name.get("static_calls_table") {
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

#[cfg(test)]
mod tests {
    use super::is_function;

    #[test]
    fn weak_functions_are_functions_data_is_not() {
        // As 7.3 lists them: "ffffffff816258a0 W bpf_lsm_file_open".
        for kind in ["T", "t", "W", "w"] {
            assert!(is_function(kind), "{kind}");
        }
        for kind in ["D", "d", "R", "r", "B", "b", "V", "v", "A"] {
            assert!(!is_function(kind), "{kind}");
        }
    }
}
