//! A tarball kept in lsmpmon's cache and made on first use. The entry is
//! written under a temporary name that still ends in `.tar` (mmdebstrap picks
//! its output format from the name: without `.tar` it writes a directory) and
//! renamed into place only once `tar` can list it; an entry that is not a
//! readable tarball (a directory left by an older test, a truncated file) is
//! removed and made again instead of failing every later run.
use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

/// `entry` if it is a tarball `tar` can list; otherwise made anew by `make`,
/// which writes a tarball at the path it is given.
pub fn cached_tarball(entry: &Path, make: impl FnOnce(&Path)) -> PathBuf {
    if is_tarball(entry) {
        return entry.to_path_buf();
    }
    remove_any(entry);
    fs::create_dir_all(entry.parent().unwrap()).unwrap();
    let stem = entry.file_stem().unwrap().to_string_lossy();
    let partial = entry.with_file_name(format!("{stem}.partial-{}.tar", std::process::id()));
    remove_any(&partial);
    make(&partial);
    assert!(
        is_tarball(&partial),
        "{} was not made as a tarball",
        partial.display()
    );
    fs::rename(&partial, entry).unwrap();
    entry.to_path_buf()
}

fn is_tarball(path: &Path) -> bool {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return false;
    };
    meta.is_file()
        && Command::new("tar")
            .arg("-tf")
            .arg(path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

fn remove_any(path: &Path) {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path).unwrap(),
        Ok(_) => fs::remove_file(path).unwrap(),
        Err(_) => {}
    }
}
