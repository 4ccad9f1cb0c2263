//! The program `--workload` names: checked, read once, hashed, and copied
//! into a private directory of the bench's own; every run runs that copy.
//! A file replaced or rewritten during the bench changes nothing: the runs
//! are the program whose sha256 the result records.
use std::{
    fs,
    io::{Read, Write},
    os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt},
    path::{Path, PathBuf},
};

use anyhow::{Context, Result};

use base::secure_fs::{euid, trusted_path};

/// The program as it was read.
pub struct Program {
    /// Its absolute path (symlinks resolved).
    pub real: PathBuf,
    pub sha256: String,
    bytes: Vec<u8>,
}

impl Program {
    /// Reads the program if it is a regular executable file that only its
    /// owner (root or the caller) can change, in a directory no other user
    /// can change. The checks are of the file read, not of its name.
    pub fn read(path: &Path) -> Result<Self, String> {
        let cannot = |e: std::io::Error| format!("--workload {}: {e}", path.display());
        let real = fs::canonicalize(path).map_err(cannot)?;
        let mut file = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&real)
            .map_err(cannot)?;
        let meta = file.metadata().map_err(cannot)?;
        check_file(path, &meta)?;
        let dir = real.parent().unwrap_or(Path::new("/"));
        trusted_path(dir).map_err(|e| format!("--workload {}: {e}", path.display()))?;
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.read_to_end(&mut bytes).map_err(cannot)?;
        Ok(Self {
            real,
            sha256: base::digest::sha256_hex(&bytes),
            bytes,
        })
    }

    /// Writes the copy the runs run, `<dir>/<its file name>` (mode 0500),
    /// and returns its path. `dir` is the bench's own private directory.
    pub fn install(&self, dir: &Path) -> Result<PathBuf> {
        let name = self.real.file_name().unwrap_or("workload".as_ref());
        let path = dir.join(name);
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o700)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .with_context(|| format!("copying the workload to {}", path.display()))?;
        f.write_all(&self.bytes)
            .and_then(|()| f.set_permissions(fs::Permissions::from_mode(0o500)))
            .with_context(|| format!("copying the workload to {}", path.display()))?;
        // Closed before any run: an open writer makes exec fail (ETXTBSY).
        drop(f);
        Ok(path)
    }
}

fn check_file(path: &Path, meta: &fs::Metadata) -> Result<(), String> {
    if !meta.is_file() || meta.mode() & 0o111 == 0 {
        return Err(format!(
            "--workload {} is not an executable file: give a script with #! or a static binary (chmod +x)",
            path.display()
        ));
    }
    let owner_ok = meta.uid() == 0 || meta.uid() == euid();
    if !owner_ok || meta.mode() & 0o022 != 0 {
        return Err(format!(
            "--workload {} (uid {}, mode {:o}) could be changed by another user: make it yours or root's, writable by its owner only",
            path.display(),
            meta.uid(),
            meta.mode() & 0o7777
        ));
    }
    Ok(())
}

/// How results record the program: relative to the current directory when
/// it lies below it (as the configurations' directories), so that results
/// made in a checkout name no machine path.
pub fn recorded_path(real: &Path) -> String {
    let cwd = std::env::current_dir().and_then(fs::canonicalize);
    match cwd
        .ok()
        .and_then(|c| real.strip_prefix(c).ok().map(Path::to_path_buf))
    {
        Some(rel) => rel.display().to_string(),
        None => real.display().to_string(),
    }
}
