//! The avtab study (the embedded-SELinux paper's Table 11): one op asks the
//! kernel for one access decision through selinuxfs's `access` file, which
//! computes it from the policy (`security_compute_av_user` →
//! `context_struct_compute_av`: a lookup in the avtab for every pair of the
//! two types' attributes) without the AVC. The pairs are the `selinux-avtab`
//! configurations' generated types, visited with a stride over all of them,
//! so the lookups fall in every part of the table.
//!
//! What the op reads: `<--dir>/avtab-policy` ("TYPES ALLOWED": the generated
//! types lab_avtab_0 … and how many ordered pairs of them the policy gives
//! `file read`), written by the configuration's setup. Before it is timed
//! it asks about every pair once and fails unless exactly ALLOWED answers
//! grant `read`: the decisions are the policy's.
use std::{
    fs,
    io::{Read, Write},
    path::Path,
};

use anyhow::{bail, Context, Result};

use crate::op::{group, Bench, Ctx, OpDef, Unit, Work};
use crate::op_names;

pub fn ops() -> Vec<OpDef> {
    group(
        "avtab",
        Unit::NsPerOp,
        &[(op_names::COMPUTE_AV, |c| Ok(Box::new(ComputeAv::new(c)?)))],
    )
}

const SELINUXFS: &str = "/sys/fs/selinux";
/// The setup's description of the generated policy, under the bench's --dir.
pub const POLICY_FILE: &str = "avtab-policy";
/// The most generated types the op asks about: every ordered pair is asked
/// once before the op is timed (65 536 requests).
const MAX_TYPES: u64 = 256;
/// A prime above the most types: a step of it visits every pair once.
const STRIDE: usize = 7919;
/// A response is six numbers; a page is the most the kernel writes.
const RESPONSE_BYTES: usize = 4096;

struct ComputeAv {
    access: std::path::PathBuf,
    /// One request per ordered pair of generated types.
    requests: Vec<Vec<u8>>,
    next: usize,
}

impl ComputeAv {
    fn new(c: &Ctx) -> Result<Self> {
        let root = c.dir.parent().context("the op's directory has no parent")?;
        let (types, allowed) = read_policy(&root.join(POLICY_FILE))?;
        let selinuxfs = Path::new(SELINUXFS);
        let class = sysfs_number(&selinuxfs.join("class/file/index"))?;
        let read_bit = sysfs_number(&selinuxfs.join("class/file/perms/read"))?
            .checked_sub(1)
            .and_then(|bit| 1u32.checked_shl(bit))
            .context("file's read permission is out of range")?;
        let ctx = |i: u64| format!("system_u:object_r:lab_avtab_{i}");
        let requests = (0..types * types)
            .map(|k| format!("{} {} {class}", ctx(k / types), ctx(k % types)).into_bytes())
            .collect();
        let mut op = Self {
            access: selinuxfs.join("access"),
            requests,
            next: 0,
        };
        op.prove(allowed, read_bit)?;
        Ok(op)
    }

    /// Every pair once (untimed): exactly `allowed` of them get `read`.
    fn prove(&mut self, allowed: u64, read_bit: u32) -> Result<()> {
        let mut granted = 0;
        for i in 0..self.requests.len() {
            let answer = self.ask(i)?;
            let mask = answer
                .split_whitespace()
                .next()
                .and_then(|w| u32::from_str_radix(w, 16).ok())
                .with_context(|| {
                    format!("{}: unexpected answer {answer:?}", self.access.display())
                })?;
            granted += u64::from(mask & read_bit != 0);
        }
        if granted != allowed {
            bail!(
                "compute_av: the kernel granted file read to {granted} type pairs, the policy's description says {allowed}: another policy is loaded"
            );
        }
        Ok(())
    }

    /// One decision: the transaction file takes one request per open.
    fn ask(&self, i: usize) -> Result<String> {
        let mut f = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.access)
            .with_context(|| {
                format!(
                    "opening {} (compute_av needs SELinux with a selinux-avtab configuration)",
                    self.access.display()
                )
            })?;
        f.write_all(&self.requests[i])
            .with_context(|| format!("asking {}", self.access.display()))?;
        let mut buf = [0u8; RESPONSE_BYTES];
        let n = f.read(&mut buf)?;
        if n == 0 {
            bail!("{}: an empty answer", self.access.display());
        }
        Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
    }
}

/// "TYPES ALLOWED".
fn read_policy(path: &Path) -> Result<(u64, u64)> {
    let text = fs::read_to_string(path).with_context(|| {
        format!(
            "reading {} (compute_av runs under a selinux-avtab configuration, whose setup writes it)",
            path.display()
        )
    })?;
    let nums: Vec<u64> = text
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .with_context(|| format!("{}: not two numbers", path.display()))?;
    match nums[..] {
        [types @ 1..=MAX_TYPES, allowed] if allowed <= types * types => Ok((types, allowed)),
        _ => bail!(
            "{}: not \"TYPES ALLOWED\" with 1 to {MAX_TYPES} types",
            path.display()
        ),
    }
}

fn sysfs_number(path: &Path) -> Result<u32> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.trim()
        .parse()
        .with_context(|| format!("{}: not a number", path.display()))
}

impl Bench for ComputeAv {
    fn run(&mut self, iters: u64) -> Result<Work> {
        for _ in 0..iters {
            self.ask(self.next)?;
            self.next = (self.next + STRIDE) % self.requests.len();
        }
        Ok(Work {
            ops: iters,
            bytes: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_description_is_checked() {
        let dir = std::env::temp_dir().join(format!("lsmpmon-avtab-op-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join(POLICY_FILE);
        for (text, ok) in [
            ("128 7854\n", Some((128, 7854))),
            ("128 16385", None),
            ("0 0", None),
            ("257 1", None),
            ("12 x", None),
            ("12", None),
        ] {
            fs::write(&file, text).unwrap();
            assert_eq!(read_policy(&file).ok(), ok, "{text:?}");
        }
        fs::remove_dir_all(&dir).unwrap();
        assert!(read_policy(&dir.join(POLICY_FILE)).is_err());
    }

    #[test]
    fn the_stride_visits_every_pair_once() {
        let n = 128 * 128;
        let mut seen = vec![false; n];
        let mut k = 0;
        for _ in 0..n {
            assert!(!seen[k]);
            seen[k] = true;
            k = (k + STRIDE) % n;
        }
        assert_eq!(k, 0);
    }
}
