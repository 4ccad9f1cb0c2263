//! The kernel's tables of patched code sites (6.9+, where each hook slot is
//! a static call guarded by a static branch). Live text is rewritten at
//! boot, so a call site no longer names its trampoline: these tables say
//! which key each site belongs to.
//! - `__start_static_call_sites` .. `__stop_static_call_sites`: `struct
//!   static_call_site { s32 addr; s32 key; }`, each relative to its own field;
//!   the key's low two bits are flags (tail call, init).
//! - `__start___jump_table` .. `__stop___jump_table`: `struct jump_entry {
//!   s32 code; s32 target; long key; }`, relative the same way; the key's low
//!   two bits are flags (branch, init).

/// A field of an entry: its byte offset and width (4 or 8).
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub offset: u64,
    pub width: u64,
}

/// How one table's entries are laid out (from BTF).
#[derive(Debug, Clone, Copy)]
pub struct EntryLayout {
    pub size: u64,
    /// The patched code's address.
    pub site: Field,
    /// The key's address (low two bits flags).
    pub key: Field,
}

/// One entry: a patched code site and the key it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Site {
    pub code: u64,
    pub key: u64,
}

/// The entries of a table whose bytes start at kernel address `base`.
pub fn sites(bytes: &[u8], base: u64, layout: EntryLayout) -> Vec<Site> {
    if layout.size == 0 {
        return Vec::new();
    }
    let relative = |entry: usize, f: Field| -> Option<u64> {
        let at = entry + f.offset as usize;
        let raw = bytes.get(at..at + f.width as usize)?;
        let delta = match f.width {
            4 => i64::from(i32::from_le_bytes(raw.try_into().ok()?)),
            8 => i64::from_le_bytes(raw.try_into().ok()?),
            _ => return None,
        };
        Some((base + at as u64).wrapping_add_signed(delta))
    };
    (0..bytes.len() / layout.size as usize)
        .map(|i| i * layout.size as usize)
        .filter_map(|e| {
            Some(Site {
                code: relative(e, layout.site)?,
                key: relative(e, layout.key)? & !3,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: u64 = 0xffff_ffff_8299_1a80;

    #[test]
    fn relative_fields_give_site_and_key_without_flags() {
        let call_site = EntryLayout {
            size: 8,
            site: Field {
                offset: 0,
                width: 4,
            },
            key: Field {
                offset: 4,
                width: 4,
            },
        };
        let code = 0xffff_ffff_819a_1f00_u64;
        let key = 0xffff_ffff_8294_8a40_u64;
        let mut bytes = Vec::new();
        // Entry 0: plain. Entry 1 (at BASE + 8): the key with its tail flag.
        for (i, flags) in [(0u64, 0u64), (1, 1)] {
            let at = BASE + i * 8;
            bytes.extend(((code + 0x10 * i) as i64 - at as i64).to_le_bytes()[..4].to_vec());
            bytes.extend(((key | flags) as i64 - (at + 4) as i64).to_le_bytes()[..4].to_vec());
        }
        let got = sites(&bytes, BASE, call_site);
        assert_eq!(
            got,
            [
                Site { code, key },
                Site {
                    code: code + 0x10,
                    key
                }
            ]
        );
    }

    #[test]
    fn a_jump_entry_has_a_long_key_after_its_target() {
        let jump = EntryLayout {
            size: 16,
            site: Field {
                offset: 0,
                width: 4,
            },
            key: Field {
                offset: 8,
                width: 8,
            },
        };
        let code = 0xffff_ffff_819a_1f20_u64;
        let key = 0xffff_ffff_83e4_e9e0_u64; // security_hook_active_file_open_0
        let mut bytes = Vec::new();
        bytes.extend((code as i64 - BASE as i64).to_le_bytes()[..4].to_vec());
        bytes.extend(0x40i32.to_le_bytes()); // the jump's target: not read
        bytes.extend(((key | 2) as i64 - (BASE + 8) as i64).to_le_bytes());
        bytes.extend([0u8; 5]); // a truncated entry is left out
        assert_eq!(sites(&bytes, BASE, jump), [Site { code, key }]);
    }
}
