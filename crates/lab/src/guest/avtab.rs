//! How a SELinux policy's access-vector tables fill the kernel's hash slots:
//! the figures of the kernel's own `avtab_hash_eval` (entries, slots used of
//! slots, longest chain, sum of chain length squared), computed from the
//! loaded policy as the running kernel lays it out. The kernel prints them
//! itself only when built with CONFIG_SECURITY_SELINUX_DEBUG, which Debian's
//! kernels are not; lsmpmon's `7.3-selinux` kernel is, and proves the two equal.
//!
//! The slot rule and hash are those of every kernel lsmpmon boots (5.10 to
//! 7.3): 2^(1 + bit length of rules / 8) slots, at most 2^16 (6.6 rewrote it as
//! `rounddown_pow_of_two(rules / 2)`, the same numbers), and MurmurHash3's
//! mixing of (class, target type, source type) (security/selinux/ss/avtab.c,
//! security/selinux/include/hash.h). The conditional table is sized from the
//! unconditional rule count (conditional.c `cond_read_list`).
use super::policydb::{AvtabKey, PolicyKeys};
use model::cell::{AvtabEval, AvtabFigures};

const MAX_SLOTS: u64 = 1 << 16;

/// The number of slots the kernel gives a table of `rules` entries.
pub fn slots_for(rules: u64) -> u64 {
    if rules == 0 {
        return 0;
    }
    let bits = u64::BITS - (rules >> 3).leading_zeros();
    (1u64 << (1 + bits)).min(MAX_SLOTS)
}

/// The kernel's `av_hash(class, target, source, mask)`.
pub fn slot_of(key: &AvtabKey, mask: u32) -> u32 {
    const C1: u32 = 0xcc9e_2d51;
    const C2: u32 = 0x1b87_3593;
    let mut hash: u32 = 0;
    for input in [key.target_class, key.target_type, key.source_type] {
        let v = u32::from(input)
            .wrapping_mul(C1)
            .rotate_left(15)
            .wrapping_mul(C2);
        hash ^= v;
        hash = hash
            .rotate_left(13)
            .wrapping_mul(5)
            .wrapping_add(0xe654_6b64);
    }
    hash ^= hash >> 16;
    hash = hash.wrapping_mul(0x85eb_ca6b);
    hash ^= hash >> 13;
    hash = hash.wrapping_mul(0xc2b2_ae35);
    hash ^= hash >> 16;
    hash & mask
}

/// `avtab_hash_eval` of `keys` placed in `slots` slots.
pub fn evaluate(keys: &[AvtabKey], slots: u64) -> AvtabEval {
    let mut chains = vec![0u64; slots as usize];
    if slots > 0 {
        let mask = (slots - 1) as u32;
        for k in keys {
            chains[slot_of(k, mask) as usize] += 1;
        }
    }
    let used = chains.iter().filter(|c| **c > 0);
    AvtabEval {
        entries: keys.len() as u64,
        slots,
        slots_used: used.clone().count() as u64,
        longest_chain: used.clone().copied().max().unwrap_or(0),
        chain_length_squared_sum: used.map(|c| c * c).sum(),
    }
}

/// Both tables of a loaded policy, as the kernel holds them: in the slots
/// the kernel says it took from `lsmpmon_avtab_slots=` (`asked`, lsmpmon's
/// patched kernel), else in those of the kernel's own rule.
pub fn figures(keys: &PolicyKeys, asked: Option<u64>) -> AvtabFigures {
    let slots = asked.unwrap_or_else(|| slots_for(keys.rules.len() as u64));
    AvtabFigures {
        source: "computed".into(),
        policy_version: keys.version,
        rules: evaluate(&keys.rules, slots),
        conditional_rules: evaluate(&keys.conditional_rules, slots),
        kernel_rules: None,
        slots_asked: asked,
    }
}

/// The slot count the kernel took from `lsmpmon_avtab_slots=`, as its log
/// says (the patched kernel's line; the last if several): what it ignored
/// or never read (another kernel) is not there.
pub fn slots_asked(kernel_log: &str) -> Option<u64> {
    const TOOK: &str = "SELinux: lsmpmon_avtab_slots=";
    kernel_log.lines().rev().find_map(|line| {
        let rest = &line[line.find(TOOK)? + TOOK.len()..];
        let (n, tail) = rest.split_once(':')?;
        let n: u64 = n.parse().ok()?;
        (tail.starts_with(" every avtab gets")
            && n.is_power_of_two()
            && (2..=MAX_SLOTS).contains(&n))
        .then_some(n)
    })
}

/// Whether the kernel's own line shows the rules table `expect` asks for.
pub fn check(expect: &crate::spec::AvtabExpect, f: Option<&AvtabFigures>) -> Result<(), String> {
    let Some(f) = f else {
        return Err(
            "no avtab figures: the loaded policy (/sys/fs/selinux/policy) could not be read".into(),
        );
    };
    let Some(own) = f.kernel_rules else {
        return Err("the kernel printed no avtab line (it needs CONFIG_SECURITY_SELINUX_DEBUG, as lsmpmon's 7.3-selinux-avtab kernel has): the configuration's avtab cannot be proved".into());
    };
    if own.entries != expect.rules {
        return Err(format!(
            "the kernel's rules table holds {} entries, not the configuration's {}: its policy is not the one its spec describes",
            own.entries, expect.rules
        ));
    }
    if own.slots != expect.slots {
        return Err(format!(
            "the kernel gave the rules table {} hash slots, not the configuration's {}: boot lsmpmon's 7.3-selinux-avtab kernel, which honours {}N",
            own.slots, expect.slots, crate::spec::AVTAB_SLOTS_PARAM
        ));
    }
    Ok(())
}

/// The kernel's own "rules" line in its log, the last one if the policy was
/// loaded more than once:
/// `SELinux: rules:  N entries and U/S buckets used, longest chain length L, sum of chain length^2 Q`.
pub fn kernel_line(log: &str) -> Option<AvtabEval> {
    log.lines().rev().find_map(|line| {
        let rest = &line[line.find("SELinux: rules:")? + "SELinux: rules:".len()..];
        let nums: Vec<u64> = rest
            .split(|c: char| !c.is_ascii_digit())
            .filter(|w| !w.is_empty())
            .filter_map(|w| w.parse().ok())
            .collect();
        // N, U, S, L, 2 (of "length^2"), Q
        match nums[..] {
            [entries, slots_used, slots, longest_chain, 2, squared] => Some(AvtabEval {
                entries,
                slots,
                slots_used,
                longest_chain,
                chain_length_squared_sum: squared,
            }),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: u16, t: u16, c: u16) -> AvtabKey {
        AvtabKey {
            source_type: s,
            target_type: t,
            target_class: c,
            specified: 1,
        }
    }

    #[test]
    fn slots_follow_both_forms_of_the_kernel_rule() {
        for rules in 1..200_000u64 {
            let newer = if rules > 3 {
                1u64 << (63 - (rules / 2).leading_zeros())
            } else {
                2
            };
            assert_eq!(slots_for(rules), newer.min(MAX_SLOTS), "{rules}");
        }
        assert_eq!(slots_for(0), 0);
        assert_eq!(slots_for(1000), 256);
    }

    #[test]
    fn the_hash_is_the_kernels() {
        // Golden values: the kernel's av_hash (7.3's security/selinux/include/
        // hash.h) compiled with gcc and called as avtab_hash calls it.
        assert_eq!(slot_of(&key(1, 2, 3), u32::MAX), 539_474_391);
        assert_eq!(slot_of(&key(3, 2, 1), u32::MAX), 3_026_573_899);
        assert_eq!(slot_of(&key(200, 100, 7), 511), 44);
        assert_eq!(slot_of(&key(65535, 65535, 65535), u32::MAX), 3_210_644_927);
        // The specified bits are not hashed: allow and auditallow rules of one
        // triple share a chain.
        let mut audit = key(1, 2, 3);
        audit.specified = 2;
        assert_eq!(slot_of(&audit, u32::MAX), 539_474_391);
    }

    #[test]
    fn an_evaluation_counts_chains() {
        let mut a = key(1, 1, 1);
        let mut keys = vec![a];
        a.specified = 2;
        keys.push(a); // same slot
        keys.push(key(9, 9, 9));
        let e = evaluate(&keys, 1);
        assert_eq!((e.entries, e.slots_used, e.longest_chain), (3, 1, 3));
        assert_eq!(e.chain_length_squared_sum, 9);
        let e = evaluate(&keys, 4096);
        assert_eq!(e.entries, 3);
        assert!(e.slots_used == 2 && e.longest_chain == 2);
        assert_eq!(e.chain_length_squared_sum, 5);
    }

    #[test]
    fn the_kernel_line_is_read() {
        let log = "[    1.2] SELinux: 4096 avtab hash slots, 9000 rules.\n\
                   [    1.3] SELinux: rules:  9000 entries and 3200/4096 buckets used, longest chain length 9, sum of chain length^2 25000\n\
                   [    1.4] SELinux: conditional_rules:  0 entries and 0/0 buckets used, longest chain length 0, sum of chain length^2 0\n";
        let e = kernel_line(log).unwrap();
        assert_eq!(
            (e.entries, e.slots_used, e.slots, e.longest_chain),
            (9000, 3200, 4096, 9)
        );
        assert_eq!(e.chain_length_squared_sum, 25000);
        assert_eq!(kernel_line("SELinux: rules: garbled 12"), None);
    }

    #[test]
    fn the_slots_asked_are_read_and_checked_against_the_kernels_line() {
        let took = |n: &str| {
            format!("[    0.0] SELinux: lsmpmon_avtab_slots={n}: every avtab gets {n} hash slots")
        };
        assert_eq!(slots_asked(&took("1024")), Some(1024));
        // The last the kernel took; what it ignored, or a command line, is not taken.
        assert_eq!(
            slots_asked(&format!("{}\n{}", took("8192"), took("256"))),
            Some(256)
        );
        assert_eq!(
            slots_asked("SELinux: lsmpmon_avtab_slots=3 ignored: not a power of two"),
            None
        );
        assert_eq!(slots_asked(&took("4611686018427387904")), None);
        assert_eq!(slots_asked(&took("1000")), None);
        assert_eq!(slots_asked("console=ttyS0 lsmpmon_avtab_slots=1024"), None);
        assert_eq!(slots_asked(&took("many")), None);
        let expect = crate::spec::AvtabExpect {
            rules: 8188,
            slots: 1024,
        };
        let own = |entries, slots| AvtabEval {
            entries,
            slots,
            ..Default::default()
        };
        let figures = |kernel: Option<AvtabEval>| AvtabFigures {
            kernel_rules: kernel,
            ..Default::default()
        };
        assert!(check(&expect, Some(&figures(Some(own(8188, 1024))))).is_ok());
        let why = check(&expect, Some(&figures(Some(own(8188, 2048))))).unwrap_err();
        assert!(
            why.contains("2048 hash slots, not the configuration's 1024")
                && why.contains("7.3-selinux-avtab"),
            "{why}"
        );
        let why = check(&expect, Some(&figures(Some(own(75, 1024))))).unwrap_err();
        assert!(why.contains("75 entries"), "{why}");
        let why = check(&expect, Some(&figures(None))).unwrap_err();
        assert!(why.contains("CONFIG_SECURITY_SELINUX_DEBUG"), "{why}");
        assert!(check(&expect, None)
            .unwrap_err()
            .contains("could not be read"));
    }
}
