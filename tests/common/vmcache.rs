//! A private lsmpmon cache (LSMPMON_CACHE) for guest tests: one kernel copied
//! from the user's cache (`~/.cache/lsmpmon`, fetched by any earlier guest run),
//! with its manifest in today's form, so the tests need no network and may
//! tamper with it freely.
#![allow(dead_code)]
use std::{
    fs,
    path::{Path, PathBuf},
};

use sha2::{Digest, Sha256};

/// The user's cache, where earlier runs fetched the kernels: LSMPMON_CACHE
/// when set (the README's test command on an empty cache sets it), else
/// lsmpmon's default.
fn user_cache() -> PathBuf {
    if let Some(dir) = std::env::var_os("LSMPMON_CACHE") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").expect("HOME");
    Path::new(&home).join(".cache/lsmpmon")
}

/// A fresh cache directory `name` under the test's temporary directory,
/// holding the `series` cloud kernel.
pub fn with_kernel(series: &str, name: &str) -> PathBuf {
    let entry = format!("kernels/{series}-cloud");
    let src = user_cache().join(&entry);
    let manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(src.join("kernel.json")).unwrap_or_else(|e| {
            panic!(
                "no {series} kernel in {}: {e}; fetch it once with \
                 `lsmpmon vm run --kernel {series} -- true`",
                src.display()
            )
        }))
        .unwrap();
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = fs::remove_dir_all(&cache);
    let boot = cache.join(&entry).join("root/boot");
    fs::create_dir_all(&boot).unwrap();
    let release = manifest["release"].as_str().unwrap().to_string();
    let mut m = manifest.clone();
    for (key, file) in [("vmlinuz", "vmlinuz"), ("config", "config")] {
        let file = format!("{file}-{release}");
        fs::copy(src.join("root/boot").join(&file), boot.join(&file)).unwrap();
        m[key] = boot.join(&file).display().to_string().into();
        m[format!("{key}_sha256")] = sha256(&boot.join(&file)).into();
    }
    fs::write(
        cache.join(&entry).join("kernel.json"),
        serde_json::to_vec_pretty(&m).unwrap(),
    )
    .unwrap();
    cache
}

pub fn sha256(path: &Path) -> String {
    format!("{:x}", Sha256::digest(fs::read(path).unwrap()))
}

/// The entry's kernel image.
pub fn image(cache: &Path, series: &str) -> PathBuf {
    let boot = cache.join(format!("kernels/{series}-cloud/root/boot"));
    fs::read_dir(&boot)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("vmlinuz-")
        })
        .expect("a vmlinuz")
}

/// The guest run directories made in `cache`.
pub fn run_dirs(cache: &Path) -> Vec<PathBuf> {
    fs::read_dir(cache.join("runs"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect()
}
