//! Files the ops make and open: never over an existing file or through a
//! symlink.
use std::{ffi::CString, os::fd::OwnedFd, os::unix::ffi::OsStrExt, path::Path};

use anyhow::{Context, Result};

/// Creates `path` as a new file, mode 0600: never over an existing file or
/// through a symlink (O_EXCL | O_NOFOLLOW).
pub fn create_new(path: &Path) -> Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))
}

/// A new file holding `data` (see `create_new`).
pub fn write_new(path: &Path, data: &[u8]) -> Result<()> {
    use std::io::Write;
    create_new(path)?
        .write_all(data)
        .with_context(|| format!("writing {}", path.display()))
}

/// Opens an existing file without following a symlink.
pub fn open_nofollow(path: &Path, flags: i32) -> Result<OwnedFd> {
    let p = CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: valid path.
    let fd = unsafe { libc::open(p.as_ptr(), flags | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
    super::fd::owned(fd, "open")
}
