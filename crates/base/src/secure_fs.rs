//! Directories lsmpmon writes in as root: made private, or accepted only if
//! nobody else could swap what is in them.
use std::{
    fs,
    os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt},
    path::{Path, PathBuf},
};

use anyhow::Result;

use crate::error::usage;

/// The effective user id.
pub fn euid() -> u32 {
    // SAFETY: plain query.
    unsafe { libc::geteuid() }
}

/// Owned by root or by us.
fn trusted_owner(uid: u32) -> bool {
    uid == 0 || uid == euid()
}

/// Creates `dir` with mode 0700 (whatever the umask), or accepts an existing
/// one only if it is a real directory owned by root or us that neither group
/// nor others can write.
pub fn private_dir(dir: &Path) -> Result<()> {
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| usage(format!("cannot set {} to mode 0700: {e}", dir.display())))?,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(usage(format!("cannot create {}: {e}", dir.display()))),
    }
    check_private(dir)
}

/// The checks of `private_dir` on an existing directory.
pub fn check_private(dir: &Path) -> Result<()> {
    let m = fs::symlink_metadata(dir)
        .map_err(|e| usage(format!("cannot use {}: {e}", dir.display())))?;
    if !m.is_dir() {
        return Err(usage(format!(
            "{} is not a directory (a symlink?): refusing it",
            dir.display()
        )));
    }
    if !trusted_owner(m.uid()) {
        return Err(usage(format!(
            "{} belongs to uid {}, not root or you: refusing it (remove it)",
            dir.display(),
            m.uid()
        )));
    }
    if m.mode() & 0o022 != 0 {
        return Err(usage(format!(
            "{} is writable by group or others (mode {:o}): refusing it",
            dir.display(),
            m.mode() & 0o7777
        )));
    }
    Ok(())
}

/// Resolves `dir` and checks every directory below `/` down to it: owned by
/// root or us, and writable by others only with the sticky bit (as /tmp).
/// Below such a path nobody else can rename or replace what we create. `/`
/// itself is not looked at: a confined workload may not stat it (the lab's
/// SELinux reference policy), and with `/` in other hands nothing is safe.
pub fn trusted_path(dir: &Path) -> Result<PathBuf> {
    let real =
        fs::canonicalize(dir).map_err(|e| usage(format!("cannot use {}: {e}", dir.display())))?;
    for d in real.ancestors().filter(|d| d.parent().is_some()) {
        let m = fs::metadata(d).map_err(|e| usage(format!("{}: {e}", d.display())))?;
        let open_to_others = m.mode() & 0o022 != 0 && m.mode() & 0o1000 == 0;
        if !m.is_dir() || !trusted_owner(m.uid()) || open_to_others {
            return Err(usage(format!(
                "{} (uid {}, mode {:o}) could be changed by another user: choose a directory \
                 of yours or root's that only its owner can write",
                d.display(),
                m.uid(),
                m.mode() & 0o7777
            )));
        }
    }
    Ok(real)
}

/// Writes `bytes` to `path`, created 0644 or truncated, never through a
/// symlink (a root lsmpmon writing into /tmp must not be pointed at /etc).
pub fn write_no_follow(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?
        .write_all(bytes)
}

/// Refuses an entry of a results directory that is a symbolic link: what
/// is read from such a directory is the files themselves, so a link planted
/// there cannot make root read (and quote in an error) a private file.
pub fn not_a_link(path: &Path) -> Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(usage(format!(
            "{} is a symbolic link: not read (put the result file itself there)",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// A results directory's `cells/`, if it has one, refused when it is a
/// symbolic link: the names read from it would be another directory's
/// (one the results' writer never wrote, such as /etc).
pub fn cells_dir(results: &Path) -> Result<Option<PathBuf>> {
    let cells = results.join("cells");
    match fs::symlink_metadata(&cells) {
        Ok(m) if m.file_type().is_symlink() => Err(usage(format!(
            "{} is a symbolic link: cells are read only from a directory of their own (copy them there)",
            cells.display()
        ))),
        Ok(m) if m.is_dir() => Ok(Some(cells)),
        _ => Ok(None),
    }
}

/// Refuses a path that passes through a symbolic link owned by neither root
/// nor us (a link another user planted in /tmp, pointing into /root): the
/// kernel's `protected_symlinks` rule, for every component, not only sticky
/// directories.
pub fn no_foreign_links(path: &Path) -> Result<()> {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()?.join(path)
    };
    let mut prefix = PathBuf::new();
    for part in abs.components() {
        prefix.push(part);
        if let Ok(m) = fs::symlink_metadata(&prefix) {
            if m.file_type().is_symlink() && !trusted_owner(m.uid()) {
                return Err(usage(format!(
                    "{} is a symbolic link of uid {}, not root's or yours: refusing to write through it (name the directory it points to)",
                    prefix.display(),
                    m.uid()
                )));
            }
        }
    }
    Ok(())
}

/// Replaces `path` with `bytes` through a new file in the same directory,
/// renamed over it: a symlink planted at `path` is replaced, never followed,
/// nor one of another user on the way to it, and a reader sees the old file
/// or the new one. The new file keeps the mode of the regular file it
/// replaces (a private 0600 result stays private), else 0644. The temporary
/// name is unique per process and call (threads write at once).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    use anyhow::Context;
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    use std::sync::atomic::{AtomicUsize, Ordering};
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    no_foreign_links(path)?;
    let name = path.file_name().context("no file name")?.to_string_lossy();
    let tmp = path.with_file_name(format!(
        ".{name}.{}-{}.tmp",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::SeqCst)
    ));
    let mode = fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map_or(0o644, |m| m.mode() & 0o777);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(mode)
        .open(&tmp)
        .with_context(|| format!("creating {}", tmp.display()))?;
    let written = f
        .set_permissions(fs::Permissions::from_mode(mode))
        .and_then(|()| f.write_all(bytes))
        .and_then(|()| f.sync_all())
        .with_context(|| format!("writing {}", tmp.display()))
        .and_then(|()| {
            fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
        });
    if written.is_err() {
        // A full disk or a directory in the way: leave nothing half-written.
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// The bytes of a file a user named: a regular file (a FIFO or a device is
/// refused at once, never waited on or read without end) of at most
/// `max_bytes`, checked on the open file before anything is read. `what`
/// names the option or role in the one-line error ("--lsmpmon-bin"); empty:
/// the path alone.
pub fn read_regular(what: &str, path: &Path, max_bytes: u64) -> Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let name = if what.is_empty() {
        path.display().to_string()
    } else {
        format!("{what} {}", path.display())
    };
    let cannot = |why: String| usage(format!("cannot read {name}: {why}"));
    // O_NONBLOCK: opening a FIFO must not wait for a writer.
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| cannot(e.to_string()))?;
    let meta = file.metadata().map_err(|e| cannot(e.to_string()))?;
    if !meta.is_file() {
        return Err(cannot(
            "not a regular file (a directory, device or FIFO): give a regular file".into(),
        ));
    }
    let too_large = || {
        usage(format!(
            "{name}: larger than {}, the most lsmpmon reads for it: give a smaller file",
            size_text(max_bytes)
        ))
    };
    if meta.len() > max_bytes {
        return Err(too_large());
    }
    let mut buf = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| cannot(e.to_string()))?;
    // It grew after the check: still no more than one byte over is read.
    if buf.len() as u64 > max_bytes {
        return Err(too_large());
    }
    Ok(buf)
}

/// `bytes` in the largest binary unit that divides it, else in bytes.
pub fn size_text(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// Copies the directories and regular files below `from` into `to`
/// (made): symbolic links and special files are left behind, `from` itself
/// must be a directory and not a link to one, and each copy gets its
/// source's permission bits (no set-id bits), so nothing becomes readable
/// to more users than it was.
pub fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    fill_tree(from, to, true)
}

/// [`copy_tree`] into `to` as it is (made if missing): a file of `from`
/// replaces the one of the same name there.
pub fn copy_tree_over(from: &Path, to: &Path) -> anyhow::Result<()> {
    fill_tree(from, to, !to.is_dir())
}

fn fill_tree(from: &Path, to: &Path, make: bool) -> anyhow::Result<()> {
    let m = fs::symlink_metadata(from)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", from.display()))?;
    if !m.is_dir() {
        return Err(usage(format!(
            "{} is not a directory (a symbolic link?): not copied",
            from.display()
        )));
    }
    if make {
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent)
                .map_err(|e| anyhow::anyhow!("creating {}: {e}", parent.display()))?;
        }
        fs::DirBuilder::new()
            .mode(0o700)
            .create(to)
            .map_err(|e| anyhow::anyhow!("creating {}: {e}", to.display()))?;
    } else {
        fs::set_permissions(to, fs::Permissions::from_mode(0o700))?;
    }
    let entries =
        fs::read_dir(from).map_err(|e| anyhow::anyhow!("reading {}: {e}", from.display()))?;
    for e in entries {
        let e = e?;
        let ty = e.file_type()?;
        let dest = to.join(e.file_name());
        if ty.is_dir() {
            fill_tree(&e.path(), &dest, !dest.is_dir())?;
        } else if ty.is_file() {
            let mode = e.metadata()?.mode() & 0o777;
            // A file copied before (a lower layer's) is replaced, never followed.
            if dest.is_dir() {
                return Err(usage(format!(
                    "{} is a file where another layer has a directory {}: not copied",
                    e.path().display(),
                    dest.display()
                )));
            }
            let _ = fs::remove_file(&dest);
            fs::copy(e.path(), &dest)
                .map_err(|err| anyhow::anyhow!("copying {}: {err}", e.path().display()))?;
            fs::set_permissions(&dest, fs::Permissions::from_mode(mode))?;
        }
    }
    // Last: a directory without write permission for its owner is filled first.
    fs::set_permissions(to, fs::Permissions::from_mode(m.mode() & 0o777))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    #[test]
    fn a_replaced_file_keeps_its_mode_and_a_new_one_is_0644() {
        let d = scratch("mode");
        fs::create_dir_all(&d).unwrap();
        let private = d.join("private.json");
        fs::write(&private, b"old").unwrap();
        fs::set_permissions(&private, fs::Permissions::from_mode(0o600)).unwrap();
        write_atomic(&private, b"new").unwrap();
        assert_eq!(fs::metadata(&private).unwrap().mode() & 0o777, 0o600);
        assert_eq!(fs::read(&private).unwrap(), b"new");
        write_atomic(&d.join("fresh.json"), b"x").unwrap();
        assert_eq!(
            fs::metadata(d.join("fresh.json")).unwrap().mode() & 0o777,
            0o644
        );
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_link_of_another_user_on_the_way_is_refused() {
        // Only root can make a link owned by someone else; the suite runs as root.
        assert_eq!(euid(), 0, "run the tests as root (README)");
        let d = scratch("foreign");
        fs::create_dir_all(d.join("victim")).unwrap();
        symlink(d.join("victim"), d.join("link")).unwrap();
        std::os::unix::fs::lchown(d.join("link"), Some(65534), Some(65534)).unwrap();
        let err = write_atomic(&d.join("link/out.json"), b"x").unwrap_err();
        assert!(
            err.to_string().contains("symbolic link of uid 65534"),
            "{err}"
        );
        assert!(!d.join("victim/out.json").exists());
        std::os::unix::fs::lchown(d.join("link"), Some(0), Some(0)).unwrap();
        write_atomic(&d.join("link/out.json"), b"x").unwrap();
        assert!(d.join("victim/out.json").exists());
        fs::remove_dir_all(&d).unwrap();
    }
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("lsmpmon-sfs-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn private_dir_is_0700_and_open_ones_are_refused() {
        let d = scratch("priv");
        private_dir(&d).unwrap();
        assert_eq!(fs::metadata(&d).unwrap().mode() & 0o7777, 0o700);
        fs::set_permissions(&d, fs::Permissions::from_mode(0o777)).unwrap();
        let err = private_dir(&d).unwrap_err().to_string();
        assert!(err.contains("writable by group or others"), "{err}");
        fs::remove_dir(&d).unwrap();
        std::os::unix::fs::symlink("/", &d).unwrap();
        assert!(private_dir(&d).is_err(), "a symlink is refused");
        fs::remove_file(&d).unwrap();
    }

    #[test]
    fn trusted_path_refuses_a_directory_others_can_write() {
        let d = scratch("trust");
        fs::create_dir(&d).unwrap();
        assert_eq!(trusted_path(&d).unwrap(), fs::canonicalize(&d).unwrap());
        fs::set_permissions(&d, fs::Permissions::from_mode(0o777)).unwrap();
        assert!(trusted_path(&d).is_err());
        fs::set_permissions(&d, fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(trusted_path(&d).is_ok(), "sticky, as /tmp");
        fs::remove_dir(&d).unwrap();
    }

    /// A device, a FIFO (nobody writing it: not waited on), a directory
    /// and a file over the bound are refused before anything is read.
    #[test]
    fn read_regular_refuses_devices_fifos_and_large_files_at_once() {
        let d = scratch("regular");
        fs::create_dir_all(&d).unwrap();
        let fifo = d.join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for p in [Path::new("/dev/zero"), &fifo, &d] {
            let err = read_regular("--lsmpmon-bin", p, 1 << 20)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("--lsmpmon-bin") && err.contains("not a regular file"),
                "{err}"
            );
            assert!(!err.contains('\n'), "{err}");
        }
        let file = d.join("f");
        fs::write(&file, vec![7u8; 2049]).unwrap();
        let err = read_regular("--copy", &file, 2048).unwrap_err().to_string();
        assert!(
            err.contains("larger than 2 KiB") && err.contains("--copy"),
            "{err}"
        );
        assert_eq!(read_regular("", &file, 2049).unwrap().len(), 2049);
        let err = read_regular("", &d.join("none"), 1)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!("cannot read {}", d.join("none").display())),
            "{err}"
        );
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_copied_tree_keeps_its_modes_and_a_linked_root_is_refused() {
        let d = scratch("copytree");
        let src = d.join("src");
        fs::create_dir_all(src.join("private")).unwrap();
        fs::write(src.join("private/key"), "k").unwrap();
        fs::set_permissions(src.join("private/key"), fs::Permissions::from_mode(0o4644)).unwrap();
        fs::set_permissions(src.join("private"), fs::Permissions::from_mode(0o710)).unwrap();
        std::os::unix::fs::symlink("/etc", src.join("etc")).unwrap();
        copy_tree(&src, &d.join("out")).unwrap();
        let mode = |p: &str| fs::metadata(d.join(p)).unwrap().mode() & 0o7777;
        assert_eq!(mode("out/private"), 0o710);
        assert_eq!(mode("out/private/key"), 0o644, "no set-id bit");
        assert!(
            fs::symlink_metadata(d.join("out/etc")).is_err(),
            "links stay behind"
        );
        std::os::unix::fs::symlink("/etc", d.join("link")).unwrap();
        let err = copy_tree(&d.join("link"), &d.join("out2")).unwrap_err();
        assert!(err.to_string().contains("not a directory"), "{err}");
        assert!(!d.join("out2").exists());
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn output_never_written_through_a_symlink() {
        let d = scratch("nofollow");
        fs::create_dir_all(&d).unwrap();
        let target = d.join("target");
        fs::write(&target, "keep").unwrap();
        let link = d.join("out.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(write_no_follow(&link, b"result").is_err());
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep");
        let plain = d.join("plain.json");
        write_no_follow(&plain, b"longer result").unwrap();
        write_no_follow(&plain, b"short").unwrap();
        assert_eq!(fs::read_to_string(&plain).unwrap(), "short");
        fs::remove_dir_all(&d).unwrap();
    }
}
