//! The cache (`~/.cache/lsmpmon`) belongs to the user while lsmpmon often runs
//! as root: what is read from it is checked (paths stay inside, contents match
//! their recorded sha256) and nothing written into it follows a symlink.
use std::{
    fs::{self, File, OpenOptions},
    io::{Read, Write},
    os::fd::FromRawFd,
    os::unix::fs::OpenOptionsExt,
    path::{Component, Path, PathBuf},
};

use anyhow::{Context, Result};

use base::error::usage;

/// What lsmpmon keeps in its cache, one directory each: kernels, the
/// private apt configurations of other suites, guest run logs, other
/// packages (nginx, the test's Debian root), and ccache's store for the
/// kernels lsmpmon builds.
pub const ENTRIES: [&str; 5] = ["kernels", "apt", "runs", "packages", CCACHE];
/// Where a kernel build's ccache keeps its objects.
pub const CCACHE: &str = "ccache";

/// What to tell the user when a cache entry cannot be trusted.
pub const REFETCH_HINT: &str = "run `lsmpmon vm cache --clean --all` to fetch it again";

/// `base/rel` as a real directory, made if missing: no component of `rel`
/// may be a symlink (`base`, the cache itself, is where the user put it).
pub fn real_dir(base: &Path, rel: &Path) -> Result<PathBuf> {
    fs::create_dir_all(base).map_err(|e| {
        usage(format!(
            "cannot create the cache {}: {e}; choose one you can write with --cache-dir or LSMPMON_CACHE",
            base.display()
        ))
    })?;
    let mut p = base.to_path_buf();
    for c in rel.components() {
        let Component::Normal(name) = c else {
            return Err(usage(format!("bad cache path {}", rel.display())));
        };
        p.push(name);
        match fs::create_dir(&p) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                return Err(e).with_context(|| format!("creating {}", p.display()))
            }
            _ => {}
        }
        let meta = fs::symlink_metadata(&p)?;
        if !meta.is_dir() {
            return Err(not_followed(&p));
        }
    }
    Ok(p)
}

/// The error for a symlink (or a file where a directory belongs) in the cache.
pub fn not_followed(p: &Path) -> anyhow::Error {
    usage(format!(
        "refusing {}: a symlink (or not a directory) in lsmpmon's cache, \
         which it never follows; remove it",
        p.display()
    ))
}

/// Fails if anything under `dir` (or `dir` itself) is a symlink: tools that
/// write there (apt, dpkg-deb) would follow it.
pub fn refuse_links_under(dir: &Path) -> Result<()> {
    let Ok(meta) = fs::symlink_metadata(dir) else {
        return Ok(());
    };
    if meta.file_type().is_symlink() {
        return Err(not_followed(dir));
    }
    if meta.is_dir() {
        for e in fs::read_dir(dir)? {
            refuse_links_under(&e?.path())?;
        }
    }
    Ok(())
}

/// `path` (absolute, or relative to `entry`) if it names something inside
/// `entry` without `..` or symlinked directories on the way.
pub fn inside(entry: &Path, path: &Path) -> Result<PathBuf> {
    let full = entry.join(path);
    let rest = full.strip_prefix(entry).ok().filter(|r| {
        r.components().count() > 0 && r.components().all(|c| matches!(c, Component::Normal(_)))
    });
    let Some(rest) = rest else {
        return Err(usage(format!(
            "{}/kernel.json names {}, outside that directory: refusing it; {REFETCH_HINT}",
            entry.display(),
            path.display()
        )));
    };
    let mut p = entry.to_path_buf();
    for c in rest.parent().into_iter().flat_map(|d| d.components()) {
        p.push(c);
        if !fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
            return Err(not_followed(&p));
        }
    }
    Ok(full)
}

/// The bytes of `path`, refusing a symlink in its place.
pub fn read_no_follow(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf)?;
    Ok(buf)
}

pub use base::secure_fs::write_atomic;

pub use base::digest::{sha256_file, sha256_hex};

/// `path`'s bytes, if their sha256 is `sha256` (recorded when it was fetched).
pub fn check_sha256(path: &Path, sha256: &str) -> Result<Vec<u8>> {
    let bytes = read_no_follow(path).with_context(|| format!("reading {}", path.display()))?;
    if sha256.is_empty() || sha256_hex(&bytes) != sha256 {
        return Err(usage(format!(
            "{} does not match the sha256 recorded when it was fetched; {REFETCH_HINT}",
            path.display()
        )));
    }
    Ok(bytes)
}

/// `path`'s bytes in a private memory file, if their sha256 is `sha256`:
/// what QEMU reads is what was checked, whatever happens to `path` later.
pub fn verified_copy(path: &Path, sha256: &str) -> Result<File> {
    let bytes = check_sha256(path, sha256)?;
    let mut f = memfd("lsmpmon-verified")?;
    f.write_all(&bytes)?;
    Ok(f)
}

/// An anonymous in-memory file (closed on exec unless handed on on purpose).
pub fn memfd(name: &str) -> Result<File> {
    let cname = std::ffi::CString::new(name)?;
    // SAFETY: a valid C string; the new fd is owned by the File.
    let fd = unsafe { libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error()).context("memfd_create");
    }
    // SAFETY: fd was just created and is owned by nobody else.
    Ok(unsafe { File::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("lsmpmon-cache-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn paths_outside_the_entry_are_refused() {
        let d = tmp("inside");
        fs::create_dir_all(d.join("root/boot")).unwrap();
        assert!(inside(&d, Path::new("root/boot/vmlinuz")).is_ok());
        assert!(inside(&d, &d.join("root/boot/vmlinuz")).is_ok());
        for bad in ["/etc/passwd", "root/../../x", "../x", ""] {
            assert!(inside(&d, Path::new(bad)).is_err(), "{bad} accepted");
        }
        // A symlinked directory on the way leads out too.
        symlink("/etc", d.join("root/etc")).unwrap();
        assert!(inside(&d, Path::new("root/etc/passwd")).is_err());
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn planted_symlinks_are_replaced_not_followed() {
        let d = tmp("write");
        let victim = d.join("victim");
        fs::write(&victim, b"precious").unwrap();
        fs::create_dir(d.join("cache")).unwrap();
        symlink(&victim, d.join("cache/kernel.json")).unwrap();
        write_atomic(&d.join("cache/kernel.json"), b"{}").unwrap();
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        assert_eq!(fs::read(d.join("cache/kernel.json")).unwrap(), b"{}");
        // A symlinked directory is refused, a symlinked file is not read.
        symlink(&d, d.join("cache/runs")).unwrap();
        assert!(real_dir(&d.join("cache"), Path::new("runs/x")).is_err());
        assert!(!d.join("x").exists());
        symlink(&victim, d.join("cache/image")).unwrap();
        assert!(read_no_follow(&d.join("cache/image")).is_err());
        assert!(refuse_links_under(&d.join("cache")).is_err());
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn only_the_recorded_bytes_are_handed_on() {
        let d = tmp("verify");
        let image = d.join("vmlinuz");
        fs::write(&image, b"kernel").unwrap();
        let good = sha256_hex(b"kernel");
        let mut copy = verified_copy(&image, &good).unwrap();
        fs::write(&image, b"tampered").unwrap();
        let mut seen = String::new();
        use std::io::Seek;
        copy.rewind().unwrap();
        copy.read_to_string(&mut seen).unwrap();
        assert_eq!(seen, "kernel");
        let err = verified_copy(&image, &good).unwrap_err().to_string();
        assert!(
            err.contains("vmlinuz") && err.contains("vm cache --clean"),
            "{err}"
        );
        assert!(verified_copy(&image, "").is_err());
        fs::remove_dir_all(&d).unwrap();
    }
}
