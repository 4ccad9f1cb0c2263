//! `lsmpmon vm cache`: what the cache holds and its size, or cleaning it.
//! Nothing is hidden: what cannot be removed fails the command, and what
//! cannot be read is said, never counted as 0 B.
use std::{
    fs, io,
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
};

use anyhow::Result;

use super::args::CacheArgs;
use super::kernel::entry;
use base::error::{with_code, EXIT_FAILURE, EXIT_OK};

use super::cache::ENTRIES as CACHE_ENTRIES;

pub fn main(args: &CacheArgs) -> Result<i32> {
    let cache = args.cache.path();
    only_a_cache(&cache)?;
    let failed = if args.clean {
        clean(&cache, args.all)
    } else {
        Vec::new()
    };
    base::output::stdout(&listing(&cache))?;
    if failed.is_empty() {
        return Ok(EXIT_OK);
    }
    let owner = fs::metadata(&cache)
        .ok()
        .filter(|m| m.uid() != base::secure_fs::euid())
        .map(|m| format!("; the cache belongs to uid {}: run as that user", m.uid()))
        .unwrap_or_default();
    Err(with_code(
        EXIT_FAILURE,
        format!("could not remove {}{owner}", failed.join("; ")),
    ))
}

/// Refuses a directory that is not lsmpmon's cache (`--cache-dir /`, a
/// source tree): listing would walk it and `--clean --all` would remove its
/// `kernels/` or `apt/`.
fn only_a_cache(cache: &Path) -> Result<()> {
    let Ok(entries) = fs::read_dir(cache) else {
        return Ok(()); // missing or unreadable: the listing says so
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !CACHE_ENTRIES.contains(&name.as_str()) {
            return Err(base::error::usage(format!(
                "{} holds {name}, which lsmpmon never puts in its cache: not a cache, refusing it \
                 (--cache-dir / LSMPMON_CACHE name lsmpmon's own cache directory)",
                cache.display()
            )));
        }
    }
    Ok(())
}

/// Removes the guest logs (and with `all` everything lsmpmon keeps); what
/// could not be removed, as `PATH: why`.
fn clean(cache: &Path, all: bool) -> Vec<String> {
    let targets: &[&str] = if all { &CACHE_ENTRIES } else { &["runs"] };
    targets
        .iter()
        .map(|t| cache.join(t))
        .filter_map(|p| match fs::remove_dir_all(&p) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Some(format!("{} ({e})", p.display())),
            _ => None,
        })
        .collect()
}

fn listing(cache: &Path) -> String {
    let mut text = format!("{}\n", cache.display());
    for sub in CACHE_ENTRIES {
        let p = cache.join(sub);
        text += &format!("  {sub:<8} {}\n", Usage::of(&p, false).shown());
        if sub == "kernels" {
            text += &kernel_entries(&p);
        }
    }
    // The cache itself may be a link to where the user keeps it.
    text += &format!("  total    {}\n", Usage::of(cache, true).shown());
    text
}

/// One line per kernel entry; one that would be fetched again says so.
fn kernel_entries(kernels: &Path) -> String {
    let mut names: Vec<String> = fs::read_dir(kernels)
        .into_iter()
        .flatten()
        .flatten()
        .map(|k| k.file_name().to_string_lossy().into_owned())
        // Not the fetch lock, nor a fetch under way.
        .filter(|name| !name.starts_with('.'))
        .collect();
    names.sort();
    names
        .iter()
        .map(|name| match entry::manifest(&kernels.join(name)) {
            Ok(Some(_)) => format!("    {name}\n"),
            Ok(None) => format!("    {name} (incomplete: fetched again when used)\n"),
            Err(e) => format!("    {name} ({})\n", base::error::one_line(&e)),
        })
        .collect()
}

/// Bytes under a path, and what under it could not be read.
#[derive(Default)]
struct Usage {
    bytes: u64,
    unreadable: Vec<(PathBuf, io::Error)>,
}

impl Usage {
    /// `path`'s usage; `follow`: if `path` itself is a symlink, what it
    /// points to (nothing below it is followed).
    fn of(path: &Path, follow: bool) -> Self {
        let mut u = Self::default();
        let meta = if follow {
            fs::metadata(path)
        } else {
            fs::symlink_metadata(path)
        };
        match meta {
            Ok(m) => u.add(path, &m),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => u.unreadable.push((path.to_path_buf(), e)),
        }
        u
    }

    fn add(&mut self, path: &Path, meta: &fs::Metadata) {
        if !meta.is_dir() {
            self.bytes += meta.len();
            return;
        }
        let entries = match fs::read_dir(path) {
            Ok(entries) => entries,
            Err(e) => return self.unreadable.push((path.to_path_buf(), e)),
        };
        for e in entries {
            let found = e.and_then(|e| {
                let p = e.path();
                fs::symlink_metadata(&p).map(|m| (p, m))
            });
            match found {
                Ok((p, m)) => self.add(&p, &m),
                Err(e) => self.unreadable.push((path.to_path_buf(), e)),
            }
        }
    }

    /// The size, and if some of it could not be read, the first such path
    /// and how many more.
    fn shown(&self) -> String {
        let size = format!("{:>10}", human_bytes(self.bytes));
        let Some((path, e)) = self.unreadable.first() else {
            return size;
        };
        let more = match self.unreadable.len() {
            1 => String::new(),
            n => format!(" and {} more", n - 1),
        };
        format!("{size} or more: cannot read {} ({e}){more}", path.display())
    }
}

fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    format!("{v:.1} {}", UNITS[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// lsmpmon's own kernel build leaves ccache/ in the cache: that cache
    /// is still its own (issue 34 item 7); anything else is not.
    #[test]
    fn a_cache_with_every_entry_lsmpmon_makes_is_a_cache() {
        let d = std::env::temp_dir().join(format!("lsmpmon-listing-{}", std::process::id()));
        for e in CACHE_ENTRIES {
            fs::create_dir_all(d.join(e)).unwrap();
        }
        only_a_cache(&d).unwrap();
        assert!(listing(&d).contains("ccache"));
        assert!(clean(&d, true).is_empty());
        assert_eq!(
            fs::read_dir(&d).unwrap().count(),
            0,
            "--clean --all leaves nothing"
        );
        fs::create_dir_all(d.join("src")).unwrap();
        let err = only_a_cache(&d).unwrap_err().to_string();
        assert!(err.contains("holds src"), "{err}");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn sizes_are_shown_as_before_and_unreadable_parts_are_said() {
        assert_eq!(human_bytes(0), "0.0 B");
        assert_eq!(human_bytes(3 << 20), "3.0 MiB");
        let u = Usage {
            bytes: 2048,
            unreadable: Vec::new(),
        };
        assert_eq!(u.shown(), "   2.0 KiB");
        let denied = || io::Error::from_raw_os_error(libc::EACCES);
        let u = Usage {
            bytes: 2048,
            unreadable: vec![("/c/a".into(), denied()), ("/c/b".into(), denied())],
        };
        assert_eq!(
            u.shown(),
            "   2.0 KiB or more: cannot read /c/a (Permission denied (os error 13)) and 1 more"
        );
    }
}
