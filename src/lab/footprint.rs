//! Footprint (the embedded-SELinux paper's Tables 8, 9 and 11): memory in use
//! after setup, policy size, the security module's own statistics.
use std::fs;

use anyhow::{Context, Result};

use super::spec::Spec;
use super::{avtab, policydb};
use crate::model::cell::AvtabFigures;
pub use crate::model::cell::{Footprint, Memory};

/// The policy the kernel holds, in its binary format.
const LOADED_POLICY: &str = "/sys/fs/selinux/policy";
const DYNAMIC_DEBUG: &str = "/proc/dynamic_debug/control";

/// What the kernel exposes about a module's caches, read if present.
const STAT_FILES: &[&str] = &[
    "/sys/fs/selinux/avc/cache_stats",
    "/sys/fs/selinux/avc/hash_stats",
    "/sys/fs/selinux/avc/cache_threshold",
    "/sys/kernel/security/apparmor/profiles",
    "/sys/kernel/security/tomoyo/meminfo",
    "/sys/kernel/security/tomoyo/stat",
    "/sys/kernel/security/ima/runtime_measurements_count",
];

pub fn meminfo() -> Result<Memory> {
    let text = fs::read_to_string("/proc/meminfo").context("reading /proc/meminfo")?;
    Ok(parse_meminfo(&text))
}

fn parse_meminfo(text: &str) -> Memory {
    let field = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    let total = field("MemTotal");
    let cache = field("MemFree") + field("Buffers") + field("Cached") + field("SReclaimable");
    Memory {
        total_kib: total,
        used_kib: total.saturating_sub(cache),
        slab_unreclaimable_kib: field("SUnreclaim"),
    }
}

pub fn collect(spec: &Spec, before_setup: Memory) -> Result<Footprint> {
    let mut f = Footprint {
        before_setup,
        after_setup: meminfo()?,
        ..Default::default()
    };
    for p in &spec.policy_files {
        let n = fs::metadata(p)
            .with_context(|| format!("policy file {p} (spec field policy_files)"))?
            .len();
        f.policy_bytes += n;
        f.policy_files.insert(p.clone(), n);
    }
    for s in STAT_FILES {
        if let Ok(text) = fs::read_to_string(s) {
            f.kernel_stats.insert(s.to_string(), text);
        }
    }
    f.avtab = selinux_avtab()?;
    Ok(f)
}

/// Turns on the kernel's own avtab evaluation for the policy load to come,
/// where the kernel has it (CONFIG_SECURITY_SELINUX_DEBUG: its pr_debug sites
/// exist; elsewhere the write finds none and nothing changes).
pub fn ask_kernel_avtab_eval() {
    let _ = fs::write(DYNAMIC_DEBUG, "file security/selinux/ss/avtab.c +p");
}

/// The loaded SELinux policy's avtab figures, with the kernel's own "rules"
/// line where its log has one; none where SELinux has no policy loaded.
fn selinux_avtab() -> Result<Option<AvtabFigures>> {
    let policy = match fs::read(LOADED_POLICY) {
        Ok(p) => p,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            crate::say!("lab: no avtab figures: {LOADED_POLICY}: {e}");
            return Ok(None);
        }
    };
    let keys = policydb::read_keys(&policy)
        .with_context(|| format!("reading the loaded policy's avtab from {LOADED_POLICY}"))?;
    let mut figures = avtab::figures(&keys);
    let log = super::proof::read_record("kmsg").unwrap_or_default();
    figures.kernel_rules = avtab::kernel_line(&log.join("\n"));
    Ok(Some(figures))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn used_memory_leaves_out_the_page_cache() {
        let m = parse_meminfo(
            "MemTotal:  1000 kB\nMemFree:  500 kB\nBuffers:  10 kB\nCached:  200 kB\n\
             SReclaimable:  40 kB\nSUnreclaim:  30 kB\n",
        );
        assert_eq!(m.used_kib, 250);
        assert_eq!(m.slab_unreclaimable_kib, 30);
    }
}
