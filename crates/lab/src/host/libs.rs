//! What a host program needs in the guest: itself and the shared libraries
//! `ldd` says it loads.
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

/// A program and the shared libraries `ldd` says it loads (with the loader).
pub fn with_libraries(prog: &Path) -> Result<Vec<PathBuf>> {
    if !prog.is_file() {
        return Err(base::error::usage(format!(
            "program {} is not on this machine (spec field programs)",
            prog.display()
        )));
    }
    let mut out = vec![prog.to_path_buf()];
    let ldd = Command::new("ldd")
        .arg(prog)
        .output()
        .context("running ldd")?;
    for line in String::from_utf8_lossy(&ldd.stdout).lines() {
        if line.contains("=> not found") {
            return Err(base::error::usage(format!(
                "{}: library {} is not on this machine (install the package that has it)",
                prog.display(),
                line.split_whitespace().next().unwrap_or("?")
            )));
        }
        // "libx.so.1 => /lib/.../libx.so.1 (0x…)" or "/lib64/ld-linux-x86-64.so.2 (0x…)"
        let path = match line.split_once("=>") {
            Some((_, rhs)) => rhs.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(p) = path.filter(|p| p.starts_with('/')) {
            out.push(PathBuf::from(p));
        }
    }
    Ok(out)
}
