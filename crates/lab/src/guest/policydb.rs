//! The access-vector table keys of a binary SELinux policy (as
//! /sys/fs/selinux/policy gives the loaded one): what the kernel hashes into
//! its avtab slots. Read in the kernel's own order (security/selinux/ss/
//! policydb.c `policydb_read`, avtab.c `avtab_read_item`, conditional.c
//! `cond_read_list`); everything before the avtab is skipped, not kept.
use anyhow::{bail, Context, Result};

const MAGIC: u32 = 0xf97c_ff8c;
const IDENT: &[u8] = b"SE Linux";
/// Policy versions whose layout this reader knows (20: the avtab format with
/// one key per rule kind; 35: neveraudit types, the newest in 7.3).
const VERSION_AVTAB: u32 = 20;
const VERSION_MAX: u32 = 35;
const VERSION_MLS: u32 = 19;
const VERSION_VALIDATETRANS: u32 = 19;
const VERSION_BOOL: u32 = 16;
const VERSION_POLCAP: u32 = 22;
const VERSION_PERMISSIVE: u32 = 23;
const VERSION_BOUNDARY: u32 = 24;
const VERSION_NEW_OBJECT_DEFAULTS: u32 = 27;
const VERSION_DEFAULT_TYPE: u32 = 28;
const VERSION_CONSTRAINT_NAMES: u32 = 29;
const VERSION_NEVERAUDIT: u32 = 35;
/// Symbol tables from version 19 on: commons, classes, roles, types, users,
/// booleans, sensitivities, categories.
const SYM_NUM: u32 = 8;
const CEXPR_NAMES: u32 = 5;
const AVTAB_XPERMS: u16 = 0x0700;

/// One avtab entry's key: the kernel hashes (class, target, source).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AvtabKey {
    pub source_type: u16,
    pub target_type: u16,
    pub target_class: u16,
    pub specified: u16,
}

/// The keys of the unconditional and the conditional table, in file order.
#[derive(Debug, Default)]
pub struct PolicyKeys {
    pub version: u32,
    pub rules: Vec<AvtabKey>,
    pub conditional_rules: Vec<AvtabKey>,
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.data.len());
        let Some(end) = end else {
            bail!(
                "the policy ends at byte {} inside a record",
                self.data.len()
            );
        };
        let bytes = &self.data[self.at..end];
        self.at = end;
        Ok(bytes)
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into()?))
    }
    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into()?))
    }
    fn skip_u32s(&mut self, n: usize) -> Result<()> {
        self.take(n.checked_mul(4).context("a count overflows")?)
            .map(|_| ())
    }
    fn skip_string(&mut self, len: u32) -> Result<()> {
        self.take(len as usize).map(|_| ())
    }
    fn skip_ebitmap(&mut self) -> Result<()> {
        let (_mapunit, _highbit, count) = (self.u32()?, self.u32()?, self.u32()?);
        for _ in 0..count {
            self.take(4 + 8)?; // startbit, 64-bit map
        }
        Ok(())
    }
}

/// The avtab keys of a binary policy; an error names what was malformed.
pub fn read_keys(policy: &[u8]) -> Result<PolicyKeys> {
    let mut r = Reader {
        data: policy,
        at: 0,
    };
    let version = read_header(&mut r)?;
    for table in 0..SYM_NUM {
        let (_nprim, nel) = (r.u32()?, r.u32()?);
        for _ in 0..nel {
            skip_symbol(&mut r, table, version)
                .with_context(|| format!("symbol table {table} at byte {}", r.at))?;
        }
    }
    let rules = read_avtab(&mut r).context("the avtab")?;
    let conditional_rules = if version >= VERSION_BOOL {
        read_cond_list(&mut r).context("the conditional avtab")?
    } else {
        Vec::new()
    };
    Ok(PolicyKeys {
        version,
        rules,
        conditional_rules,
    })
}

fn read_header(r: &mut Reader) -> Result<u32> {
    if r.u32()? != MAGIC {
        bail!("not a binary SELinux policy (no policydb magic number)");
    }
    let len = r.u32()?;
    if r.take(len as usize)? != IDENT {
        bail!("not a kernel SELinux policy (its identifier is not \"SE Linux\")");
    }
    let (version, _config, sym_num, _ocon_num) = (r.u32()?, r.u32()?, r.u32()?, r.u32()?);
    if !(VERSION_AVTAB..=VERSION_MAX).contains(&version) {
        bail!("policy version {version}: lsmpmon reads versions {VERSION_AVTAB} to {VERSION_MAX}");
    }
    if sym_num != SYM_NUM {
        bail!("policy version {version} with {sym_num} symbol tables (expected {SYM_NUM})");
    }
    if version >= VERSION_POLCAP {
        r.skip_ebitmap()?;
    }
    if version >= VERSION_PERMISSIVE {
        r.skip_ebitmap()?;
    }
    if version >= VERSION_NEVERAUDIT {
        r.skip_ebitmap()?;
    }
    Ok(version)
}

fn skip_symbol(r: &mut Reader, table: u32, version: u32) -> Result<()> {
    let bounds = usize::from(version >= VERSION_BOUNDARY);
    match table {
        0 => skip_common(r),
        1 => skip_class(r, version),
        2 => {
            let len = r.u32()?;
            r.skip_u32s(1 + bounds)?;
            r.skip_string(len)?;
            r.skip_ebitmap()?; // dominates
            r.skip_ebitmap() // types
        }
        3 => {
            let len = r.u32()?;
            r.skip_u32s(2 + bounds)?;
            r.skip_string(len)
        }
        4 => {
            let len = r.u32()?;
            r.skip_u32s(1 + bounds)?;
            r.skip_string(len)?;
            r.skip_ebitmap()?; // roles
            if version >= VERSION_MLS {
                skip_mls_range(r)?;
                skip_mls_level(r)?;
            }
            Ok(())
        }
        5 => {
            let (_value, _state, len) = (r.u32()?, r.u32()?, r.u32()?);
            r.skip_string(len)
        }
        6 => {
            let (len, _isalias) = (r.u32()?, r.u32()?);
            r.skip_string(len)?;
            skip_mls_level(r)
        }
        _ => {
            let (len, _value, _isalias) = (r.u32()?, r.u32()?, r.u32()?);
            r.skip_string(len)
        }
    }
}

fn skip_perms(r: &mut Reader, nel: u32) -> Result<()> {
    for _ in 0..nel {
        let (len, _value) = (r.u32()?, r.u32()?);
        r.skip_string(len)?;
    }
    Ok(())
}

fn skip_common(r: &mut Reader) -> Result<()> {
    let (len, _value, _nprim, nel) = (r.u32()?, r.u32()?, r.u32()?, r.u32()?);
    r.skip_string(len)?;
    skip_perms(r, nel)
}

fn skip_class(r: &mut Reader, version: u32) -> Result<()> {
    let (len, len2, _value, _nprim, nel, ncons) =
        (r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?);
    r.skip_string(len)?;
    r.skip_string(len2)?;
    skip_perms(r, nel)?;
    skip_constraints(r, ncons, version)?;
    if version >= VERSION_VALIDATETRANS {
        let ncons = r.u32()?;
        skip_constraints(r, ncons, version)?;
    }
    if version >= VERSION_NEW_OBJECT_DEFAULTS {
        r.skip_u32s(3)?;
    }
    if version >= VERSION_DEFAULT_TYPE {
        r.skip_u32s(1)?;
    }
    Ok(())
}

fn skip_constraints(r: &mut Reader, ncons: u32, version: u32) -> Result<()> {
    for _ in 0..ncons {
        let (_permissions, nexpr) = (r.u32()?, r.u32()?);
        for _ in 0..nexpr {
            let (expr_type, _attr, _op) = (r.u32()?, r.u32()?, r.u32()?);
            if expr_type == CEXPR_NAMES {
                r.skip_ebitmap()?;
                if version >= VERSION_CONSTRAINT_NAMES {
                    r.skip_ebitmap()?; // types
                    r.skip_ebitmap()?; // negset
                    r.skip_u32s(1)?; // flags
                }
            }
        }
    }
    Ok(())
}

fn skip_mls_level(r: &mut Reader) -> Result<()> {
    r.skip_u32s(1)?;
    r.skip_ebitmap()
}

fn skip_mls_range(r: &mut Reader) -> Result<()> {
    let items = r.u32()?;
    if items > 2 {
        bail!("an MLS range of {items} levels");
    }
    r.skip_u32s(items as usize)?;
    r.skip_ebitmap()?;
    if items > 1 {
        r.skip_ebitmap()?;
    }
    Ok(())
}

fn read_item(r: &mut Reader) -> Result<AvtabKey> {
    let key = AvtabKey {
        source_type: r.u16()?,
        target_type: r.u16()?,
        target_class: r.u16()?,
        specified: r.u16()?,
    };
    if key.specified & AVTAB_XPERMS != 0 {
        r.take(2)?; // xperms specified, driver
        r.skip_u32s(8)?;
    } else {
        r.skip_u32s(1)?;
    }
    Ok(key)
}

fn read_items(r: &mut Reader, nel: u32) -> Result<Vec<AvtabKey>> {
    // The count comes from the file: grow as items are read, not before.
    let mut keys = Vec::new();
    for _ in 0..nel {
        keys.push(read_item(r)?);
    }
    Ok(keys)
}

fn read_avtab(r: &mut Reader) -> Result<Vec<AvtabKey>> {
    let nel = r.u32()?;
    read_items(r, nel)
}

fn read_cond_list(r: &mut Reader) -> Result<Vec<AvtabKey>> {
    let mut keys = Vec::new();
    let nodes = r.u32()?;
    for _ in 0..nodes {
        let (_cur_state, nexpr) = (r.u32()?, r.u32()?);
        r.skip_u32s(
            2usize
                .checked_mul(nexpr as usize)
                .context("a count overflows")?,
        )?;
        for _list in ["true", "false"] {
            let nel = r.u32()?;
            keys.extend(read_items(r, nel)?);
        }
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::{fs, path::Path, path::PathBuf, process::Command};

    const MINI: &str = include_str!("../../../../configs/selinux-mini/policy.conf");
    const ANCHOR: &str = "type kernel_t, domain;";

    /// The lab's small policy with `extra` added after kernel_t's
    /// declaration, compiled by checkpolicy (installed by scripts/setup.sh:
    /// the lab builds its SELinux policies with it).
    fn compile(name: &str, extra: &str) -> Vec<u8> {
        let dir: PathBuf =
            std::env::temp_dir().join(format!("lsmpmon-policydb-{name}-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let conf = MINI.replacen(ANCHOR, &format!("{ANCHOR}\n{extra}"), 1);
        fs::write(dir.join("policy.conf"), conf).unwrap();
        let out = Command::new("checkpolicy")
            .args(["-U", "allow", "-c", "33", "-o", "policy.33", "policy.conf"])
            .current_dir(&dir)
            .output()
            .expect("checkpolicy (apt-get install checkpolicy)");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let policy = fs::read(dir.join("policy.33")).unwrap();
        fs::remove_dir_all(&dir).unwrap();
        policy
    }

    #[test]
    fn rules_added_to_a_real_policy_are_counted_where_the_kernel_puts_them() {
        let base = read_keys(&compile("base", "")).unwrap();
        assert_eq!(base.version, 33);
        assert!(!base.rules.is_empty());
        // 40 new types, each with one allow rule (a new key each) and two
        // of them under a boolean: +40 unconditional, +2 conditional entries.
        let mut extra = String::new();
        for i in 0..40 {
            extra += &format!("type lsmpmon_t{i};\nallow kernel_t lsmpmon_t{i}:file read;\n");
        }
        extra += "bool lsmpmon_b false;\nif (lsmpmon_b) { allow kernel_t lsmpmon_t0:file write; \
                  allow kernel_t lsmpmon_t1:dir search; }\n";
        let more = read_keys(&compile("more", &extra)).unwrap();
        assert_eq!(more.rules.len(), base.rules.len() + 40);
        assert_eq!(
            more.conditional_rules.len(),
            base.conditional_rules.len() + 2
        );
    }

    /// The avtab study's generator (configs/selinux-avtab) run as its
    /// host_build runs it: the kernel's rules table holds exactly the paper's
    /// 8 188 entries, and the pairs it says it allowed are there.
    #[test]
    fn the_avtab_study_policy_holds_the_papers_rule_count() {
        let shipped = [Path::new(base::SOURCE_TREE).join("configs")];
        let config = crate::spec::load("selinux-avtab", &shipped).unwrap();
        let spec = &config.spec;
        let dir = std::env::temp_dir().join(format!("lsmpmon-avtab-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        for layer in config.base_dirs.iter().chain([&config.dir]) {
            base::secure_fs::copy_tree_over(layer, &dir).unwrap();
        }
        let out = Command::new("sh")
            .args(["-c", spec.host_build.as_deref().unwrap()])
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let keys = read_keys(&fs::read(dir.join("policy.33")).unwrap()).unwrap();
        let pairs = fs::read_to_string(dir.join("avtab-policy")).unwrap();
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(keys.rules.len(), 8188, "avtab-policy: {pairs}");
        let (types, allowed): (u64, u64) = match pairs.split_whitespace().collect::<Vec<_>>()[..] {
            [t, p] => (t.parse().unwrap(), p.parse().unwrap()),
            _ => panic!("avtab-policy: {pairs}"),
        };
        assert!(allowed > 4096 && allowed < types * types, "{pairs}");
    }

    #[test]
    fn a_damaged_policy_is_refused_not_misread() {
        let policy = compile("damaged", "");
        for cut in [0, 3, 20, policy.len() / 2, policy.len() - 1] {
            // A cut after the avtab can still read: only demand no panic there.
            let _ = read_keys(&policy[..cut]);
        }
        assert!(read_keys(&policy[..policy.len() / 3]).is_err());
        let mut wrong = policy.clone();
        wrong[0] ^= 0xff;
        let e = read_keys(&wrong).unwrap_err().to_string();
        assert!(e.contains("not a binary SELinux policy"), "{e}");
        let mut future = policy.clone();
        future[16..20].copy_from_slice(&99u32.to_le_bytes());
        let e = read_keys(&future).unwrap_err().to_string();
        assert!(e.contains("policy version 99"), "{e}");
        // Counts from a hostile file do not allocate before reading.
        let mut huge = policy;
        let at = 16 + 16 + 4;
        huge.truncate(at);
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(read_keys(&huge).is_err());
    }
}
