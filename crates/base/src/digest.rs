//! The sha256 of bytes and of files, as results and the cache record them.
use std::{fs::OpenOptions, os::unix::fs::OpenOptionsExt, path::Path};

use anyhow::Result;
use sha2::{Digest, Sha256};

use crate::error::usage;

pub fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// The sha256 of a regular file, read in pieces (a kernel package is
/// hundreds of MiB; a device or FIFO is refused, never read without end).
pub fn sha256_file(path: &Path) -> Result<String> {
    let cannot = |e: std::io::Error| usage(format!("cannot read {}: {e}", path.display()));
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(cannot)?;
    if !file.metadata().map_err(cannot)?.is_file() {
        return Err(usage(format!(
            "cannot read {}: not a regular file (a directory, device or FIFO)",
            path.display()
        )));
    }
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(cannot)?;
    Ok(format!("{:x}", hasher.finalize()))
}
