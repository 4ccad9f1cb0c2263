//! The SELinux access vector cache as selinuxfs shows it
//! (`/sys/fs/selinux/avc/`): what the AVC sweep's op records around its run.
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What one AVC sweep op did to the cache: the N types it opened files of,
/// the threshold it ran under, `cache_stats` over its run and `hash_stats`
/// after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AvcFigures {
    /// File types the op asked for (N): one file of each, opened round-robin.
    pub types: u64,
    /// Distinct SELinux labels (`security.selinux`) those N files carried,
    /// read after the run: N when the policy labelled each file its own type.
    pub distinct_labels: u64,
    /// `avc/cache_threshold`: nodes beyond it are reclaimed (kernel default 512).
    pub cache_threshold: u64,
    /// Opens (each with its close) the op made while `cache` was counted:
    /// one untimed pass over the N files, calibration, warm-up and every sample.
    pub opens: u64,
    /// `avc/cache_stats`, summed over CPUs: from before the op's first open
    /// to after its last.
    pub cache: AvcCacheStats,
    /// `avc/hash_stats` after the op's last open.
    pub hash: AvcHashStats,
}

/// `avc/cache_stats` counters (or their difference over a run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AvcCacheStats {
    pub lookups: u64,
    pub hits: u64,
    pub misses: u64,
    pub allocations: u64,
    pub reclaims: u64,
    pub frees: u64,
}

/// `avc/hash_stats`: the cache's nodes and how they sit in its slots.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AvcHashStats {
    pub entries: u64,
    pub buckets_used: u64,
    /// The cache's slot count: 512, or 2^`CONFIG_SECURITY_SELINUX_AVC_HASH_BITS`
    /// on kernels that have the option (Debian's 7.3: 9 bits, 512).
    pub buckets: u64,
    pub longest_chain: u64,
}

impl AvcCacheStats {
    /// `cache_stats`' text: a header line, then one line per CPU
    /// (`lookups hits misses allocations reclaims frees`), summed.
    pub fn parse(text: &str) -> Option<Self> {
        let mut lines = text.lines();
        if !lines.next()?.starts_with("lookups") {
            return None;
        }
        let mut sum = Self::default();
        for line in lines.filter(|l| !l.trim().is_empty()) {
            let v: Vec<u64> = line
                .split_whitespace()
                .map(str::parse)
                .collect::<Result<_, _>>()
                .ok()?;
            let [lookups, hits, misses, allocations, reclaims, frees] = v[..] else {
                return None;
            };
            sum.lookups += lookups;
            sum.hits += hits;
            sum.misses += misses;
            sum.allocations += allocations;
            sum.reclaims += reclaims;
            sum.frees += frees;
        }
        Some(sum)
    }

    /// Counts from `self` (earlier) to `later`. The kernel's per-CPU
    /// counters are 32-bit: a counter that wrapped is taken modulo 2^32.
    pub fn delta(self, later: Self) -> Self {
        let d = |a: u64, b: u64| {
            if b >= a {
                b - a
            } else {
                (b + (1 << 32) - a) & 0xffff_ffff
            }
        };
        Self {
            lookups: d(self.lookups, later.lookups),
            hits: d(self.hits, later.hits),
            misses: d(self.misses, later.misses),
            allocations: d(self.allocations, later.allocations),
            reclaims: d(self.reclaims, later.reclaims),
            frees: d(self.frees, later.frees),
        }
    }
}

impl AvcHashStats {
    /// `hash_stats`' text: `entries: E`, `buckets used: U/S`, `longest chain: L`.
    pub fn parse(text: &str) -> Option<Self> {
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.trim().strip_prefix(':'))
                .map(str::trim)
        };
        let (used, slots) = field("buckets used")?.split_once('/')?;
        Some(Self {
            entries: field("entries")?.parse().ok()?,
            buckets_used: used.trim().parse().ok()?,
            buckets: slots.trim().parse().ok()?,
            longest_chain: field("longest chain")?.parse().ok()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_stats_sum_over_cpus_and_hash_stats_parse() {
        let cache = "lookups hits misses allocations reclaims frees\n\
                     100 90 10 10 0 2\n50 45 5 5 16 1\n";
        let c = AvcCacheStats::parse(cache).unwrap();
        assert_eq!(
            (c.lookups, c.hits, c.misses, c.reclaims, c.frees),
            (150, 135, 15, 16, 3)
        );
        assert!(AvcCacheStats::parse("1 2 3 4 5 6\n").is_none());
        assert!(AvcCacheStats::parse("lookups hits\n1 2\n").is_none());
        let h = AvcHashStats::parse("entries: 503\nbuckets used: 301/512\nlongest chain: 5\n");
        assert_eq!(
            h,
            Some(AvcHashStats {
                entries: 503,
                buckets_used: 301,
                buckets: 512,
                longest_chain: 5
            })
        );
        assert!(AvcHashStats::parse("entries: 3\n").is_none());
    }

    #[test]
    fn a_delta_survives_a_wrapped_counter() {
        let a = AvcCacheStats {
            lookups: u64::from(u32::MAX) - 1,
            ..Default::default()
        };
        let b = AvcCacheStats {
            lookups: 3,
            misses: 7,
            ..Default::default()
        };
        assert_eq!(a.delta(b).lookups, 5);
        assert_eq!(a.delta(b).misses, 7);
    }
}
