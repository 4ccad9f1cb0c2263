//! One cache entry (`kernels/<name>/`): its manifest, loaded only if intact,
//! and the fetch that fills it, one at a time per entry (a 20-minute build of
//! one kernel never holds up the fetch of another); a fetch that fails leaves
//! nothing behind.
use std::{
    fs,
    path::{Path, PathBuf},
};

use anyhow::{Context, Result};

use super::lock::FetchLock;
use super::manifest::Kernel;
use crate::cache::{check_sha256, inside, not_followed, read_no_follow, real_dir, write_atomic};

const MANIFEST: &str = "kernel.json";

/// The intact entry `rel` (under `cache`, absolute), or `fetch`'s, one fetch
/// into the cache at a time: whoever waited uses what the first one fetched.
/// `fetch` fills the entry's directory it is given.
pub fn ensure_entry(
    cache: &Path,
    rel: &Path,
    fetch: impl FnOnce(&Path) -> Result<Kernel>,
) -> Result<Kernel> {
    ensure_current_entry(cache, rel, |_| None, fetch)
}

/// As `ensure_entry`, but an intact entry for which `stale` (given the
/// checked manifest, its files verified) says why it is out of date is
/// fetched again, under the lock, and the reason said once: a build made
/// from an older recipe.
pub fn ensure_current_entry(
    cache: &Path,
    rel: &Path,
    stale: impl Fn(&Kernel) -> Option<String>,
    fetch: impl FnOnce(&Path) -> Result<Kernel>,
) -> Result<Kernel> {
    if let Some(k) = load(&real_dir(cache, rel)?)?.filter(|k| stale(k).is_none()) {
        return Ok(k);
    }
    let dir = real_dir(cache, rel)?;
    let _lock = FetchLock::acquire(&lock_path(&dir), || {
        base::say!(
            "lsmpmon: waiting for another lsmpmon fetching or building {}",
            dir.display()
        )
    })?;
    // Made again: a fetch that failed meanwhile removed it.
    let dir = real_dir(cache, rel)?;
    if let Some(k) = load(&dir)? {
        match stale(&k) {
            None => return Ok(k),
            Some(why) => base::say!("lsmpmon: {why}"),
        }
    }
    let kernel = fetch(&dir).inspect_err(|_| {
        // Only if empty: an entry is never half-listed as cached.
        let _ = fs::remove_dir(&dir);
    })?;
    write_atomic(&dir.join(MANIFEST), &serde_json::to_vec_pretty(&kernel)?)?;
    Ok(kernel)
}

/// The entry's own lock file, beside it: `kernels/.<name>.lock`.
fn lock_path(entry: &Path) -> PathBuf {
    let name = entry.file_name().map(|n| n.to_string_lossy().into_owned());
    let parent = entry.parent().unwrap_or(entry);
    parent.join(format!(".{}.lock", name.unwrap_or_default()))
}

/// The entry's kernel if its manifest is complete; an error if the entry was
/// tampered with (paths leading out, contents changed, symlinks).
fn load(dir: &Path) -> Result<Option<Kernel>> {
    let Some(mut k) = manifest(dir)? else {
        return Ok(None);
    };
    k.vmlinuz = inside(dir, &k.vmlinuz)?;
    k.config = inside(dir, &k.config)?;
    let missing = |p: &Path| fs::symlink_metadata(p).is_err();
    if missing(&k.vmlinuz) || missing(&k.config) {
        return Ok(None);
    }
    check_sha256(&k.vmlinuz, &k.vmlinuz_sha256)?;
    check_sha256(&k.config, &k.config_sha256)?;
    Ok(Some(k))
}

/// The entry's manifest, if it has one that records its sha256s (one that
/// cannot be read as such, or is older, means: fetched again).
pub fn manifest(dir: &Path) -> Result<Option<Kernel>> {
    let path = dir.join(MANIFEST);
    let bytes = match read_no_follow(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(not_followed(&path)),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    Ok(serde_json::from_slice::<Kernel>(&bytes)
        .ok()
        .filter(Kernel::has_sha256s))
}

/// A directory in an entry that a fetch or build fills (`.fetch`, `.build`),
/// made empty; removed when dropped, whether the fetch succeeded or not.
pub struct Staging(PathBuf);

impl Staging {
    pub fn new(entry: &Path, name: &str) -> Result<Self> {
        let dir = entry.join(name);
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Self(dir))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::sha256_hex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const ENTRY: &str = "kernels/6.1-cloud";

    fn scratch(name: &str) -> PathBuf {
        let cache = std::env::temp_dir().join(format!("lsmpmon-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&cache);
        cache
    }

    /// Stands in for a network fetch: slow, and it writes the entry's files.
    fn fake_fetch(dir: &Path, calls: &AtomicUsize) -> Result<Kernel> {
        calls.fetch_add(1, Ordering::SeqCst);
        let boot = real_dir(dir, Path::new("root/boot"))?;
        std::thread::sleep(std::time::Duration::from_millis(400));
        let image = format!("image fetched by call {}", calls.load(Ordering::SeqCst));
        fs::write(boot.join("vmlinuz-6.1.0-0-cloud-amd64"), &image)?;
        fs::write(boot.join("config-6.1.0-0-cloud-amd64"), "CONFIG_X=y")?;
        Ok(Kernel {
            series: "6.1".into(),
            flavour: "cloud".into(),
            package: "p".into(),
            package_version: "1".into(),
            deb_sha256: "d".into(),
            release: "6.1.0-0-cloud-amd64".into(),
            vmlinuz: boot.join("vmlinuz-6.1.0-0-cloud-amd64"),
            config: boot.join("config-6.1.0-0-cloud-amd64"),
            vmlinuz_sha256: sha256_hex(image.as_bytes()),
            config_sha256: sha256_hex(b"CONFIG_X=y"),
            packages: Vec::new(),
            path: None,
            net_modules: Vec::new(),
            test_module: crate::kernel::test_module::TestModule::Absent,
            image: None,
        })
    }

    #[test]
    fn concurrent_fetches_into_a_cold_cache_make_one_entry() {
        let cache = scratch("fetch");
        let calls = AtomicUsize::new(0);
        let rel = Path::new(ENTRY);
        let got: Vec<Kernel> = std::thread::scope(|s| {
            let both: Vec<_> = (0..2)
                .map(|_| s.spawn(|| ensure_entry(&cache, rel, |d| fake_fetch(d, &calls))))
                .collect();
            both.into_iter()
                .map(|h| h.join().unwrap().unwrap())
                .collect()
        });
        assert_eq!(calls.load(Ordering::SeqCst), 1, "fetched twice");
        assert_eq!(got[0].vmlinuz, got[1].vmlinuz);
        assert_eq!(got[0].vmlinuz_sha256, got[1].vmlinuz_sha256);
        check_sha256(&got[1].vmlinuz, &got[1].vmlinuz_sha256).unwrap();
        // The entry is complete for a later run, which fetches nothing.
        let later = ensure_entry(&cache, rel, |_| panic!("fetched again")).unwrap();
        assert_eq!(later.vmlinuz_sha256, got[0].vmlinuz_sha256);
        fs::remove_dir_all(&cache).unwrap();
    }

    #[test]
    fn a_slow_fetch_of_one_entry_does_not_hold_up_another() {
        let cache = scratch("two-entries");
        let calls = AtomicUsize::new(0);
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let (cache_ref, calls_ref) = (&cache, &calls);
        std::thread::scope(|s| {
            let slow = s.spawn(move || {
                ensure_entry(cache_ref, Path::new("kernels/6.1-smack"), |d| {
                    // Holds its entry until the other entry is in (or 20 s).
                    let other = done_rx.recv_timeout(std::time::Duration::from_secs(20));
                    assert!(other.is_ok(), "the other fetch waited on this one");
                    fake_fetch(d, calls_ref)
                })
            });
            std::thread::sleep(std::time::Duration::from_millis(200));
            let quick = ensure_entry(&cache, Path::new(ENTRY), |d| fake_fetch(d, &calls));
            assert!(quick.is_ok(), "{quick:?}");
            done_tx.send(()).unwrap();
            assert!(slow.join().unwrap().is_ok());
        });
        fs::remove_dir_all(&cache).unwrap();
    }

    #[test]
    fn entries_without_recorded_sha256_are_fetched_again() {
        let cache = scratch("legacy");
        let dir = real_dir(&cache, Path::new(ENTRY)).unwrap();
        let calls = AtomicUsize::new(0);
        let mut old = fake_fetch(&dir, &calls).unwrap();
        old.vmlinuz_sha256.clear();
        old.config_sha256.clear();
        fs::write(dir.join(MANIFEST), serde_json::to_vec(&old).unwrap()).unwrap();
        assert!(manifest(&dir).unwrap().is_none(), "listed as complete");
        let k = ensure_entry(&cache, Path::new(ENTRY), |d| fake_fetch(d, &calls)).unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 2, "the old entry was trusted");
        check_sha256(&k.vmlinuz, &k.vmlinuz_sha256).unwrap();
        fs::remove_dir_all(&cache).unwrap();
    }

    #[test]
    fn an_entry_that_is_not_current_is_fetched_again_and_a_current_one_is_not() {
        let cache = scratch("current");
        let rel = Path::new(ENTRY);
        let calls = AtomicUsize::new(0);
        let first = ensure_entry(&cache, rel, |d| fake_fetch(d, &calls)).unwrap();
        let kept = ensure_current_entry(&cache, rel, |_| None, |_| panic!("fetched again"));
        assert_eq!(kept.unwrap().vmlinuz_sha256, first.vmlinuz_sha256);
        // Rejected (a build from an older recipe): fetched again, and the
        // new manifest is the one a later run loads.
        let again = ensure_current_entry(
            &cache,
            rel,
            |_| Some("old".into()),
            |d| fake_fetch(d, &calls),
        )
        .unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        let later = ensure_entry(&cache, rel, |_| panic!("fetched a third time")).unwrap();
        assert_eq!(later.vmlinuz_sha256, again.vmlinuz_sha256);
        fs::remove_dir_all(&cache).unwrap();
    }

    #[test]
    fn a_failed_fetch_leaves_no_staging_and_no_entry() {
        let cache = scratch("failed");
        let rel = Path::new(ENTRY);
        let err = ensure_entry(&cache, rel, |dir| {
            let staging = Staging::new(dir, ".fetch")?;
            fs::write(staging.path().join("half.deb"), b"half")?;
            anyhow::bail!("the mirror went away")
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "the mirror went away");
        assert!(!cache.join(ENTRY).exists(), "the failed entry stayed");
        // The next one fetches into an entry made anew.
        let calls = AtomicUsize::new(0);
        ensure_entry(&cache, rel, |d| fake_fetch(d, &calls)).unwrap();
        let names: Vec<_> = fs::read_dir(cache.join(ENTRY))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "kernel.json and root only: {names:?}");
        fs::remove_dir_all(&cache).unwrap();
    }
}
