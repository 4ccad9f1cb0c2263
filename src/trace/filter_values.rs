//! Filter values as the BPF side takes them: a cgroup's id, a fixed-size name.
use std::path::PathBuf;

use anyhow::Result;

use crate::base::error::usage;

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
