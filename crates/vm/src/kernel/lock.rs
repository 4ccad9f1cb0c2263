//! One fetch into the cache at a time: an exclusive flock on a lock file in
//! the cache, released when the holder ends, however it ends.
use std::{
    fs::{File, OpenOptions},
    os::fd::AsRawFd,
    os::unix::fs::OpenOptionsExt,
    path::Path,
};

use anyhow::{Context, Result};

/// Held while a fetch writes into the cache; dropped, it lets the next one in.
pub struct FetchLock {
    _file: File,
}

impl FetchLock {
    /// Takes the lock at `path`; if another process holds it, calls `waiting`
    /// once and waits for it.
    pub fn acquire(path: &Path, waiting: impl FnOnce()) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
            .with_context(|| format!("opening the lock file {}", path.display()))?;
        if !flock(&file, libc::LOCK_EX | libc::LOCK_NB)? {
            waiting();
            flock(&file, libc::LOCK_EX)?;
        }
        Ok(Self { _file: file })
    }
}

/// false if the lock is held elsewhere (non-blocking request only).
fn flock(file: &File, op: libc::c_int) -> Result<bool> {
    loop {
        // SAFETY: flock on an fd we own.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return Ok(true);
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) => return Ok(false),
            _ => return Err(err).context("flock"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::{
        sync::atomic::{AtomicUsize, Ordering},
        thread,
        time::Duration,
    };

    #[test]
    fn a_second_holder_waits_for_the_first() {
        let path = std::env::temp_dir().join(format!("lsmpmon-lock-{}", std::process::id()));
        let inside = AtomicUsize::new(0);
        let waited = AtomicUsize::new(0);
        thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    let _l = FetchLock::acquire(&path, || {
                        waited.fetch_add(1, Ordering::SeqCst);
                    })
                    .unwrap();
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                    thread::sleep(Duration::from_millis(300));
                    inside.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        assert_eq!(waited.load(Ordering::SeqCst), 1);
        let _ = std::fs::remove_file(&path);
    }
}
