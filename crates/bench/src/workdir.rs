//! Where bench writes: `--dir` names a directory (made 0700 if missing) in
//! which each op gets a fresh private directory `<op>.XXXXXX` (mkdtemp, mode
//! 0700). Only what bench created is removed, on every exit path: error,
//! panic, Ctrl-C or SIGTERM (the caller turns those into a normal return).
//! A `--dir` bench made holds a marker file while in use, so that another
//! bench sharing it knows it is bench's, and whichever ends last removes it.
//! Files sit at `<dir>/<op>.XXXXXX/<file>`, the depth they had before
//! (`<dir>/<op>/<file>`): path depth changes what path-based LSMs cost.
use std::{
    collections::VecDeque,
    ffi::{CString, OsString},
    fs,
    os::unix::ffi::{OsStrExt, OsStringExt},
    os::unix::fs::{DirBuilderExt, MetadataExt},
    path::{Component, Path, PathBuf},
};

use anyhow::Result;

use base::error::usage;
use base::secure_fs::{euid, trusted_path};

/// The marker of a `--dir` that bench made.
const MARKER: &str = ".lsmpmon-bench-made";

pub struct WorkDir {
    /// The user's --dir, resolved (symlinks followed once, at the start).
    root: PathBuf,
    /// Bench made --dir (this run or another, by its marker): removed at
    /// the end if nothing but the marker is left in it.
    made_root: bool,
    /// The private directories bench made, removed with what is in them.
    made: Vec<PathBuf>,
}

impl WorkDir {
    /// Uses `dir` (or creates it, 0700) after checking that nobody but root
    /// or us could rename or replace anything below it, or have pointed a
    /// symlink on the way somewhere else.
    pub fn open(dir: &Path) -> Result<Self> {
        check_links(dir)?;
        let made_root = match fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
            Err(e) => {
                return Err(usage(format!(
                    "cannot create work directory {}: {e}: choose another with --dir",
                    dir.display()
                )))
            }
        };
        let root = is_dir(dir).and_then(|()| trusted_path(dir));
        if made_root && root.is_err() {
            let _ = fs::remove_dir(dir);
        }
        let root = root?;
        let marker = root.join(MARKER);
        if made_root {
            if let Err(e) = crate::sys::file::create_new(&marker) {
                let _ = fs::remove_dir(&root);
                return Err(e);
            }
        }
        let marked = fs::symlink_metadata(&marker).is_ok_and(|m| m.is_file());
        Ok(Self {
            root,
            made_root: made_root || marked,
            made: Vec::new(),
        })
    }

    /// Bench made the directory the user named (it is removed at the end).
    pub fn made_root(&self) -> bool {
        self.made_root
    }

    /// The directory the user named, resolved.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// A new private directory `<root>/<name>.XXXXXX` for one op.
    pub fn op_dir(&mut self, name: &str) -> Result<PathBuf> {
        let template = self.root.join(format!("{name}.XXXXXX"));
        let mut bytes = CString::new(template.as_os_str().as_bytes())?.into_bytes_with_nul();
        // SAFETY: a writable, NUL-terminated template ending in XXXXXX.
        let made = unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) };
        if made.is_null() {
            return Err(usage(format!(
                "cannot create a directory in work directory {}: {}",
                self.root.display(),
                std::io::Error::last_os_error()
            )));
        }
        bytes.pop();
        let path = PathBuf::from(std::ffi::OsString::from_vec(bytes));
        self.made.push(path.clone());
        Ok(path)
    }
}

fn is_dir(dir: &Path) -> Result<()> {
    match fs::metadata(dir) {
        Ok(m) if !m.is_dir() => Err(usage(format!(
            "{} is not a directory: choose a directory with --dir",
            dir.display()
        ))),
        _ => Ok(()),
    }
}

/// Follows `dir` as the kernel would, and refuses it if a symlink on the
/// way belongs to neither root nor us: its owner could point it anywhere
/// (a link in /tmp into /root), and the directories checked afterwards
/// would then be the ones it chose.
fn check_links(dir: &Path) -> Result<()> {
    let mut at = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let mut todo = parts(dir);
    let mut hops = 0;
    while let Some(part) = todo.pop_front() {
        let name = match part {
            Part::Root => {
                at = PathBuf::from("/");
                continue;
            }
            Part::Up => {
                at.pop();
                continue;
            }
            Part::Name(name) => name,
        };
        let next = at.join(name);
        let Ok(m) = fs::symlink_metadata(&next) else {
            return Ok(()); // missing: created later, or reported then
        };
        if !m.file_type().is_symlink() {
            at = next;
            continue;
        }
        if m.uid() != 0 && m.uid() != euid() {
            return Err(usage(format!(
                "{} is a symlink of uid {}, not root or you: refusing to follow it; \
                 choose another --dir",
                next.display(),
                m.uid()
            )));
        }
        hops += 1;
        if hops > 40 {
            return Ok(()); // a loop: the kernel's ELOOP is reported later
        }
        let target = fs::read_link(&next).unwrap_or_default();
        for p in parts(&target).into_iter().rev() {
            todo.push_front(p);
        }
    }
    Ok(())
}

/// Nothing but bench's marker is left in `dir`.
fn only_the_marker(dir: &Path) -> bool {
    fs::read_dir(dir).is_ok_and(|entries| entries.flatten().all(|e| e.file_name() == MARKER))
}

enum Part {
    Root,
    Up,
    Name(OsString),
}

/// A path's components as the kernel walks them.
fn parts(path: &Path) -> VecDeque<Part> {
    path.components()
        .filter_map(|c| match c {
            Component::RootDir | Component::Prefix(_) => Some(Part::Root),
            Component::CurDir => None,
            Component::ParentDir => Some(Part::Up),
            Component::Normal(n) => Some(Part::Name(n.to_os_string())),
        })
        .collect()
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        for d in &self.made {
            let _ = fs::remove_dir_all(d);
        }
        if self.made_root && only_the_marker(&self.root) {
            // Another bench may be using it still: then it removes it.
            let _ = fs::remove_file(self.root.join(MARKER));
            let _ = fs::remove_dir(&self.root);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("lsmpmon-wd-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn op_dirs_are_private_unique_and_only_they_are_removed() {
        let root = scratch("keep");
        fs::create_dir(&root).unwrap();
        fs::write(root.join("mine"), b"x").unwrap();
        let mut w = WorkDir::open(&root).unwrap();
        let (a, b) = (w.op_dir("stat").unwrap(), w.op_dir("stat").unwrap());
        assert_ne!(a, b);
        assert_eq!(a.parent().unwrap(), fs::canonicalize(&root).unwrap());
        assert_eq!(fs::metadata(&a).unwrap().mode() & 0o7777, 0o700);
        fs::write(a.join("file"), b"y").unwrap();
        drop(w);
        assert!(!a.exists() && !b.exists());
        assert_eq!(fs::read(root.join("mine")).unwrap(), b"x");
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_missing_dir_is_made_and_removed() {
        let root = scratch("made");
        let mut w = WorkDir::open(&root).unwrap();
        assert_eq!(fs::metadata(&root).unwrap().mode() & 0o7777, 0o700);
        w.op_dir("null").unwrap();
        drop(w);
        assert!(!root.exists());
    }

    #[test]
    fn a_dir_others_can_write_is_refused() {
        let root = scratch("open");
        fs::create_dir(&root).unwrap();
        fs::set_permissions(&root, fs::Permissions::from_mode(0o777)).unwrap();
        assert!(WorkDir::open(&root).is_err());
        fs::remove_dir(&root).unwrap();
    }

    #[test]
    fn a_file_is_not_a_directory() {
        let file = scratch("file");
        fs::write(&file, b"x").unwrap();
        let err = WorkDir::open(&file).err().unwrap().to_string();
        assert!(err.contains("is not a directory"), "{err}");
        fs::remove_file(&file).unwrap();
    }

    #[test]
    fn a_symlink_of_another_user_is_not_followed() {
        let root = scratch("links");
        fs::create_dir_all(root.join("target")).unwrap();
        let (mine, theirs) = (root.join("mine"), root.join("theirs"));
        std::os::unix::fs::symlink(root.join("target"), &mine).unwrap();
        // A link to a link: the second one is checked too.
        std::os::unix::fs::symlink(&mine, &theirs).unwrap();
        drop(WorkDir::open(&theirs).unwrap());
        if euid() == 0 {
            std::os::unix::fs::lchown(&mine, Some(65534), Some(65534)).unwrap();
            let err = WorkDir::open(&theirs).err().unwrap().to_string();
            assert!(err.contains("symlink of uid 65534"), "{err}");
            assert!(err.contains("/mine"), "{err}");
        }
        fs::remove_dir_all(&root).unwrap();
    }
}
