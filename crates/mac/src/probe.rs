//! `mac try`: one access as the process that runs it, and what the kernel
//! said; the subject of the guest tests (the lab's matrix has no stat row).
use std::{fs::OpenOptions, io::Read, os::unix::fs::OpenOptionsExt, path::Path};

use clap::ValueEnum;

use base::error::errno_name;

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum Access {
    /// open O_RDONLY and read
    Read,
    /// open O_WRONLY
    Write,
    /// open O_CREAT|O_EXCL, then unlink
    Create,
    /// stat
    Stat,
}

/// "allowed", or the error's name ("EACCES", "ENOENT", ...).
pub fn attempt(access: Access, path: &Path) -> String {
    let res = match access {
        Access::Read => OpenOptions::new()
            .read(true)
            .open(path)
            .and_then(|mut f| f.read_to_end(&mut Vec::new()).map(drop)),
        Access::Write => OpenOptions::new().write(true).open(path).map(drop),
        Access::Create => OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .and_then(|_| std::fs::remove_file(path)),
        Access::Stat => std::fs::metadata(path).map(drop),
    };
    match res {
        Ok(()) => "allowed".into(),
        Err(e) => errno_name(e.raw_os_error().unwrap_or(libc::EIO)),
    }
}
