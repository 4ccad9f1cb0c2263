//! Footprint (the embedded-SELinux paper's Tables 8, 9 and 11): memory in use
//! after setup, policy size, the security module's own statistics.
use std::{collections::BTreeMap, fs};

use anyhow::{Context, Result};

use crate::spec::Spec;
use crate::{guest::avtab, guest::policydb};
use model::cell::AvtabFigures;
pub use model::cell::{Footprint, Memory};

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
    let per_cpu = fs::read_to_string("/proc/zoneinfo")
        .ok()
        .map(|z| per_cpu_free_kib(&z));
    Ok(parse_meminfo(&text, per_cpu))
}

/// Pages on the per-CPU free lists, every zone and CPU (`count:` under
/// each zone's `pagesets`), in KiB.
fn per_cpu_free_kib(zoneinfo: &str) -> u64 {
    let pages: u64 = zoneinfo
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("count:"))
        .filter_map(|v| v.trim().parse::<u64>().ok())
        .sum();
    pages * PAGE_KIB
}

const PAGE_KIB: u64 = 4;

/// Two reads in a row within this are the quiet figure.
const AGREE_KIB: u64 = 64;
const MAX_READS: u32 = 10;

/// Memory in use on a quiet guest: dirty data written, the page cache,
/// dentries and inodes dropped (what is left is kernel and process
/// memory), then read every 200 ms until two reads agree within 64 KiB
/// (deferred frees and RCU callbacks done), at most 10 times. Returns the
/// last read and how many it took.
pub fn quiet_meminfo() -> Result<(Memory, u32)> {
    // SAFETY: plain syscall.
    unsafe { libc::sync() };
    let _ = fs::write("/proc/sys/vm/drop_caches", "3");
    let mut last = meminfo()?;
    for reads in 2..=MAX_READS {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let now = meminfo()?;
        if now.used_kib.abs_diff(last.used_kib) <= AGREE_KIB {
            return Ok((now, reads));
        }
        last = now;
    }
    Ok((last, MAX_READS))
}

/// KiB per slab cache (active objects × object size), where the kernel
/// shows /proc/slabinfo.
fn slab_kib() -> BTreeMap<String, u64> {
    fs::read_to_string("/proc/slabinfo")
        .map(|t| parse_slabinfo(&t))
        .unwrap_or_default()
}

const SLAB_SYSFS: &str = "/sys/kernel/slab";

/// For each module cache of `slab_kib` that SLUB merged with others, the
/// other names linked to the same cache in /sys/kernel/slab.
fn slab_shared_with(slab_kib: &BTreeMap<String, u64>) -> BTreeMap<String, Vec<String>> {
    let Ok(entries) = fs::read_dir(SLAB_SYSFS) else {
        return BTreeMap::new();
    };
    let links: Vec<(String, std::path::PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            Some((
                e.file_name().into_string().ok()?,
                fs::read_link(e.path()).ok()?,
            ))
        })
        .collect();
    shared_names(slab_kib, &links)
}

/// `links`: (name, target) of the links among the caches.
fn shared_names(
    slab_kib: &BTreeMap<String, u64>,
    links: &[(String, std::path::PathBuf)],
) -> BTreeMap<String, Vec<String>> {
    let lsm = |n: &str| {
        model::cell::LSM_SLAB_PREFIXES
            .iter()
            .any(|p| n.starts_with(p))
    };
    slab_kib
        .keys()
        .filter(|n| lsm(n))
        .filter_map(|name| {
            let (_, target) = links.iter().find(|(n, _)| n == name)?;
            let others: Vec<String> = links
                .iter()
                .filter(|(n, t)| t == target && n != name)
                .map(|(n, _)| n.clone())
                .collect();
            (!others.is_empty()).then(|| (name.clone(), others))
        })
        .collect()
}

fn parse_slabinfo(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter(|l| !l.starts_with("slabinfo") && !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (objs, size): (u64, u64) = (f.get(1)?.parse().ok()?, f.get(3)?.parse().ok()?);
            Some((f[0].to_string(), objs * size / 1024))
        })
        .collect()
}

fn parse_meminfo(text: &str, per_cpu_free_kib: Option<u64>) -> Memory {
    let field = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    let total = field("MemTotal");
    let free = field("MemFree") + per_cpu_free_kib.unwrap_or(0);
    let cache = free + field("Buffers") + field("Cached") + field("SReclaimable");
    Memory {
        total_kib: total,
        used_kib: total.saturating_sub(cache),
        slab_unreclaimable_kib: field("SUnreclaim"),
        per_cpu_free_kib,
    }
}

pub fn collect(spec: &Spec, before_setup: Memory) -> Result<Footprint> {
    let (after_setup, meminfo_reads) = quiet_meminfo()?;
    let mut f = Footprint {
        before_setup,
        after_setup,
        meminfo_reads,
        slab_kib: slab_kib(),
        ..Default::default()
    };
    f.slab_shared_with = slab_shared_with(&f.slab_kib);
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
            base::say!("lab: no avtab figures: {LOADED_POLICY}: {e}");
            return Ok(None);
        }
    };
    let keys = policydb::read_keys(&policy)
        .with_context(|| format!("reading the loaded policy's avtab from {LOADED_POLICY}"))?;
    let log = super::proof::read_record("kmsg")
        .unwrap_or_default()
        .join("\n");
    let mut figures = avtab::figures(&keys, avtab::slots_asked(&log));
    figures.kernel_rules = avtab::kernel_line(&log);
    Ok(Some(figures))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn used_memory_leaves_out_the_page_cache() {
        let text = "MemTotal:  1000 kB\nMemFree:  500 kB\nBuffers:  10 kB\nCached:  200 kB\n\
             SReclaimable:  40 kB\nSUnreclaim:  30 kB\n";
        let m = parse_meminfo(text, None);
        assert_eq!(m.used_kib, 250);
        assert_eq!(m.slab_unreclaimable_kib, 30);
        // Free pages on the per-CPU lists are free, not used.
        let m = parse_meminfo(text, Some(48));
        assert_eq!((m.used_kib, m.per_cpu_free_kib), (202, Some(48)));
    }

    /// The `count` of every zone's and CPU's pageset, as 6.12 prints them
    /// (the DMA32 zone of a 1 GiB guest on its one CPU held 6 640 pages).
    #[test]
    fn per_cpu_free_pages_are_summed_over_zones_and_cpus() {
        let zoneinfo = "Node 0, zone      DMA\n  pages free     3840\n  pagesets\n    cpu: 0\n\
              count: 0\n              high:  0\n              batch: 1\n\
            Node 0, zone    DMA32\n  pagesets\n    cpu: 0\n              count: 6640\n\
              high:  16627\n    cpu: 1\n              count: 12\n";
        assert_eq!(per_cpu_free_kib(zoneinfo), (6640 + 12) * 4);
        assert_eq!(per_cpu_free_kib("no pagesets"), 0);
    }

    /// /sys/kernel/slab on 7.3 with SELinux: three caches of 24-byte
    /// objects are one.
    #[test]
    fn merged_module_caches_name_what_shares_them() {
        let kib: BTreeMap<String, u64> = [
            ("avtab_node", 3204),
            ("avtab_extended_perms", 7),
            ("kmalloc-64", 9),
        ]
        .map(|(n, k)| (n.to_string(), k))
        .into();
        let links: Vec<(String, std::path::PathBuf)> = [
            ("avtab_node", ":0000024"),
            ("hashtab_node", ":0000024"),
            ("fsnotify_mark_connector", ":0000024"),
            ("avtab_extended_perms", ":0000040"),
            ("kmalloc-64", ":0000064"),
            ("dentry_x", ":0000064"),
        ]
        .map(|(n, t)| (n.to_string(), t.into()))
        .to_vec();
        let shared = shared_names(&kib, &links);
        assert_eq!(
            shared.get("avtab_node").map(Vec::as_slice),
            Some(
                &[
                    "hashtab_node".to_string(),
                    "fsnotify_mark_connector".to_string()
                ][..]
            )
        );
        // Alone in its cache, or not a module's: not listed.
        assert_eq!(shared.len(), 1);
    }

    #[test]
    fn slab_caches_are_read_by_name_in_kib() {
        let s = parse_slabinfo(
            "slabinfo - version: 2.1\n# name <active_objs> <num_objs> <objsize> ...\n\
             avtab_node  4096  4200  24  170  1 : tunables 0 0 0 : slabdata 25 25 0\n\
             kmalloc-64  2048  2048  64  64  1 : tunables 0 0 0 : slabdata 32 32 0\n",
        );
        assert_eq!(s["avtab_node"], 96);
        assert_eq!(s["kmalloc-64"], 128);
        let f = Footprint {
            slab_kib: s,
            ..Default::default()
        };
        assert_eq!(f.lsm_slab_kib(), Some(96));
    }
}
