//! Filter values as the BPF side takes them: a cgroup's id, a fixed-size name.
use std::path::PathBuf;

use anyhow::Result;

use base::{error::usage, parse};

use crate::intf::lsmpmon_limits as lim;

pub fn cgroup_id(path: &str) -> Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let p = if path.starts_with('/') && std::path::Path::new(path).exists() {
        PathBuf::from(path)
    } else {
        PathBuf::from("/sys/fs/cgroup").join(path.trim_start_matches('/'))
    };
    let meta = std::fs::metadata(&p).map_err(|e| usage(format!("cgroup {}: {e}", p.display())))?;
    Ok(meta.ino())
}

pub fn fixed_bytes<const N: usize>(what: &str, s: &str) -> Result<[i8; N]> {
    if s.len() >= N {
        return Err(usage(format!(
            "{what} '{s}' is longer than {} bytes",
            N - 1
        )));
    }
    let mut out = [0i8; N];
    for (o, b) in out.iter_mut().zip(s.bytes()) {
        *o = b as i8;
    }
    Ok(out)
}

/// `trace --comm`: the kernel keeps 15 bytes of a task's name.
pub fn comm(s: &str) -> Result<String, String> {
    parse::bounded(s, lim::LSMPMON_COMM_LEN as usize - 1)
}

/// `trace --object`: a base name, so no '/'.
pub fn object(s: &str) -> Result<String, String> {
    let s = parse::bounded(s, lim::LSMPMON_OBJ_NAME_LEN as usize - 1)?;
    if s.contains('/') {
        return Err("a base name has no '/': nothing could match".into());
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_kernel_could_never_match_are_refused() {
        assert!(object("").is_err() && object("a/b").is_err());
        assert!(object(&"x".repeat(32)).is_err() && object("passwd").is_ok());
        assert!(comm("").is_err() && comm(&"c".repeat(16)).is_err());
        assert_eq!(comm(&"c".repeat(15)), Ok("c".repeat(15)));
    }
}
