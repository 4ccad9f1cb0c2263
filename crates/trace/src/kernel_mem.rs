//! The running kernel's memory and symbols: /proc/kcore (an ELF core file)
//! read at kernel virtual addresses, and /proc/kallsyms. What the hook
//! tables (lsm_tables.rs) and the hooks' callers (callers.rs) are read from.
use std::{fs::File, io::Read, os::unix::fs::FileExt};

use anyhow::{bail, Context, Result};

use base::error::usage;

/// Reads kernel virtual memory from /proc/kcore.
pub struct Kcore {
    file: File,
    /// (virtual address, size, file offset) of each PT_LOAD segment.
    segments: Vec<(u64, u64, u64)>,
}

impl Kcore {
    /// `what`: what needs it, for the one line a refusal prints.
    pub fn open(what: &str) -> Result<Self> {
        let mut file = File::open("/proc/kcore").map_err(|e| {
            usage(format!(
                "{what} reads the kernel's memory from /proc/kcore: {e} (needs root, CONFIG_PROC_KCORE, no lockdown)"
            ))
        })?;
        let mut eh = [0u8; 64];
        file.read_exact(&mut eh)?;
        if &eh[..4] != b"\x7fELF" || eh[4] != 2 {
            bail!("/proc/kcore is not a 64-bit ELF file");
        }
        let (phoff, phentsize, phnum) = (u64_at(&eh, 32), u16_at(&eh, 54), u16_at(&eh, 56));
        let mut segments = Vec::new();
        for i in 0..u64::from(phnum) {
            let mut ph = vec![0u8; usize::from(phentsize).max(56)];
            file.read_exact_at(&mut ph, phoff + i * u64::from(phentsize))?;
            if u32::from_le_bytes([ph[0], ph[1], ph[2], ph[3]]) == 1 {
                segments.push((u64_at(&ph, 16), u64_at(&ph, 32), u64_at(&ph, 8)));
            }
        }
        Ok(Self { file, segments })
    }

    pub fn read(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        let end = addr.checked_add(buf.len() as u64);
        let (vaddr, _, off) = self
            .segments
            .iter()
            .find(|(v, size, _)| addr >= *v && end.is_some_and(|e| e <= v.saturating_add(*size)))
            .with_context(|| format!("kernel address {addr:#x} is not in /proc/kcore"))?;
        self.file.read_exact_at(buf, off + (addr - vaddr))?;
        Ok(())
    }

    pub fn bytes(&self, addr: u64, len: u64) -> Result<Vec<u8>> {
        let mut b = vec![0u8; len as usize];
        self.read(addr, &mut b)?;
        Ok(b)
    }

    pub fn u64(&self, addr: u64) -> Result<u64> {
        let mut b = [0u8; 8];
        self.read(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    pub fn cstr(&self, addr: u64) -> Result<String> {
        let mut b = [0u8; 32];
        self.read(addr, &mut b)?;
        let end = b.iter().position(|c| *c == 0).unwrap_or(b.len());
        Ok(String::from_utf8_lossy(&b[..end]).into_owned())
    }
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(v)
}

/// The kernel's own symbols (modules' left out), kept without hashing:
/// /proc/kallsyms has 90 000 – 200 000 lines, read at every trace's start.
pub struct Kallsyms {
    /// (address, name, is a function), in the file's order.
    syms: Vec<(u64, Box<str>, bool)>,
    /// Indices into `syms` by name.
    by_name: Vec<u32>,
    /// Indices of the functions by address (of two names for one address,
    /// the file's first).
    functions: Vec<u32>,
    /// The core text, `_stext` .. `_etext` (init code is freed after boot).
    stext: u64,
    etext: u64,
}

impl Kallsyms {
    pub fn load() -> Result<Self> {
        let text = std::fs::read_to_string("/proc/kallsyms").context("reading /proc/kallsyms")?;
        let syms = Self::parse(&text);
        if syms.syms.iter().all(|s| s.0 == 0) {
            return Err(usage(
                "/proc/kallsyms shows no addresses: run as root with kernel.kptr_restrict < 2",
            ));
        }
        Ok(syms)
    }

    /// /proc/kallsyms's lines: "ADDR KIND NAME" (a fourth field: a module's).
    pub fn parse(text: &str) -> Self {
        let mut syms = Vec::new();
        for line in text.lines() {
            let mut f = line.split_ascii_whitespace();
            let (Some(addr), Some(kind), Some(name), None) =
                (f.next(), f.next(), f.next(), f.next())
            else {
                continue; // short, or a module's symbol
            };
            if let Ok(addr) = u64::from_str_radix(addr, 16) {
                syms.push((addr, Box::<str>::from(name), is_function(kind)));
            }
        }
        let mut by_name: Vec<u32> = (0..syms.len() as u32).collect();
        by_name.sort_by(|a, b| syms[*a as usize].1.cmp(&syms[*b as usize].1));
        let mut functions: Vec<u32> = (0..syms.len() as u32)
            .filter(|i| syms[*i as usize].2)
            .collect();
        functions.sort_by_key(|i| syms[*i as usize].0);
        functions.dedup_by_key(|i| syms[*i as usize].0);
        let mut k = Self {
            syms,
            by_name,
            functions,
            stext: 0,
            etext: 0,
        };
        k.stext = k.addr("_stext").unwrap_or(0);
        k.etext = k.addr("_etext").unwrap_or(0);
        k
    }

    /// The address of symbol `name` (the file's first of that name).
    pub fn addr(&self, name: &str) -> Option<u64> {
        let i = self
            .by_name
            .partition_point(|i| &*self.syms[*i as usize].1 < name);
        let s = &self.syms[*self.by_name.get(i)? as usize];
        (&*s.1 == name).then_some(s.0)
    }

    /// The function starting exactly at `addr`.
    pub fn function_named_at(&self, addr: u64) -> Option<&str> {
        let i = self
            .functions
            .partition_point(|i| self.syms[*i as usize].0 < addr);
        let s = &self.syms[*self.functions.get(i)? as usize];
        (s.0 == addr).then_some(&*s.1)
    }

    /// The core-text function `addr` lies in: its start, its size (up to
    /// the next symbol) and its name.
    pub fn function_at(&self, addr: u64) -> Option<(u64, u64, &str)> {
        if !(self.stext..self.etext).contains(&addr) {
            return None;
        }
        let at = |i: usize| &self.syms[self.functions[i] as usize];
        let i = (self
            .functions
            .partition_point(|i| self.syms[*i as usize].0 <= addr))
        .checked_sub(1)?;
        let start = at(i).0;
        let end = match i + 1 < self.functions.len() {
            true => at(i + 1).0.min(self.etext),
            false => self.etext,
        };
        (start >= self.stext && addr < end).then_some((start, end - start, &*at(i).1))
    }

    /// Every core-text function starting in `[from, to)`: (start, size, name).
    pub fn functions_in(&self, from: u64, to: u64) -> Vec<(u64, u64, &str)> {
        let first = self
            .functions
            .partition_point(|i| self.syms[*i as usize].0 < from);
        self.functions[first..]
            .iter()
            .map(|i| self.syms[*i as usize].0)
            .take_while(|a| *a < to)
            .filter_map(|a| self.function_at(a))
            .collect()
    }

    /// Every core-text function whose name passes `keep`.
    pub fn functions_named(&self, keep: impl Fn(&str) -> bool) -> Vec<(u64, u64, &str)> {
        self.functions
            .iter()
            .map(|i| &self.syms[*i as usize])
            .filter(|s| keep(&s.1))
            .filter_map(|s| self.function_at(s.0))
            .collect()
    }
}

/// A text symbol, strong or weak: from 7.x the BPF LSM's default hooks
/// (`bpf_lsm_file_open`, ...) are weak (`W` in /proc/kallsyms).
fn is_function(kind: &str) -> bool {
    matches!(kind, "t" | "T" | "w" | "W")
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_function_runs_to_the_next_symbol_and_init_code_is_not_text() {
        let syms = Kallsyms::parse(
            "ffffffff81000000 T _stext\n\
             ffffffff81000100 T security_a\n\
             ffffffff81000180 t helper\n\
             ffffffff81000200 T security_b\n\
             ffffffff81000240 D some_data\n\
             ffffffff81000300 T _etext\n\
             ffffffff83000000 T security_init\n\
             ffffffffc0000000 t mod_fn\t[mod]\n",
        );
        assert_eq!(
            syms.function_at(0xffffffff810001a0),
            Some((0xffffffff81000180, 0x80, "helper"))
        );
        // The last function ends with the text.
        assert_eq!(
            syms.function_at(0xffffffff81000280),
            Some((0xffffffff81000200, 0x100, "security_b"))
        );
        assert_eq!(syms.function_at(0xffffffff81000300), None);
        assert_eq!(syms.function_at(0xffffffff83000010), None, "init code");
        let named: Vec<&str> = syms
            .functions_named(|n| n.starts_with("security_"))
            .into_iter()
            .map(|f| f.2)
            .collect();
        assert_eq!(named, ["security_a", "security_b"]);
        let span: Vec<&str> = syms
            .functions_in(0xffffffff81000100, 0xffffffff81000200)
            .into_iter()
            .map(|f| f.2)
            .collect();
        assert_eq!(span, ["security_a", "helper"]);
        assert_eq!(syms.addr("mod_fn"), None, "a module's");
        assert_eq!(syms.addr("some_data"), Some(0xffffffff81000240));
        assert_eq!(syms.function_named_at(0xffffffff81000180), Some("helper"));
        assert_eq!(syms.function_named_at(0xffffffff81000181), None);
    }
}
