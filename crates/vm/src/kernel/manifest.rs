//! What a cache entry holds (its `kernel.json`): the provenance of every
//! guest result.
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::test_module::{self, TestModule};
use model::{ImageSizes, KernelRef, PackageRef};

/// What was fetched, kept next to it: the provenance of every guest result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Kernel {
    pub series: String,
    pub flavour: String,
    /// The package holding the image, its version and the sha256 of its file.
    pub package: String,
    pub package_version: String,
    pub deb_sha256: String,
    /// Every package file used, the image's first (7.x: and the config's).
    #[serde(default)]
    pub packages: Vec<PackageRef>,
    /// `uname -r` of the kernel, from the image's file name.
    pub release: String,
    /// Inside the cache entry (relative to it, or absolute under it); for a
    /// bzImage given by path, that file.
    pub vmlinuz: PathBuf,
    pub config: PathBuf,
    /// sha256 of the image and the config as fetched, checked before each use
    /// (empty in entries written before lsmpmon recorded them: fetched again).
    #[serde(default)]
    pub vmlinuz_sha256: String,
    #[serde(default)]
    pub config_sha256: String,
    /// The file given with `--kernel PATH` (absolute), if it was.
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// The network card driver's modules in `net/` beside `boot/`, in load
    /// order (entries fetched for `vm run --forward` only).
    #[serde(default)]
    pub net_modules: Vec<String>,
    /// What a kernel lsmpmon built weighs (none for Debian's).
    #[serde(default)]
    pub image: Option<ImageSizes>,
    /// The module the IMA module-measurement ops load, in `test-module/`
    /// (Debian's kernels; entries written before lsmpmon kept one say
    /// `not_looked`, and their guests have no module: not fetched again, so
    /// that a cached kernel is never replaced by a newer package).
    #[serde(default)]
    pub test_module: TestModule,
}

impl Kernel {
    /// The directory of `net_modules`.
    pub fn net_dir(&self) -> PathBuf {
        let boot = self.vmlinuz.parent().unwrap_or(Path::new("."));
        boot.parent().unwrap_or(Path::new(".")).join("net")
    }

    /// The kept test module's file, if there is one: a plain name in the
    /// entry's `test-module/` (a manifest naming another path has none).
    pub fn test_module_path(&self) -> Option<PathBuf> {
        let TestModule::File(name) = &self.test_module else {
            return None;
        };
        let plain = Path::new(name).components().count() == 1
            && matches!(
                Path::new(name).components().next(),
                Some(std::path::Component::Normal(_))
            );
        let boot = self.vmlinuz.parent()?;
        let root = boot.parent()?;
        plain.then(|| root.join(test_module::DIR).join(name))
    }

    /// What a result records about this kernel.
    pub fn reference(&self) -> KernelRef {
        let packages = if self.packages.is_empty() && !self.package_version.is_empty() {
            // Entries fetched before lsmpmon listed every package had one.
            vec![PackageRef {
                name: self.package.clone(),
                version: self.package_version.clone(),
                sha256: self.deb_sha256.clone(),
            }]
        } else {
            self.packages.clone()
        };
        KernelRef {
            series: self.series.clone(),
            flavour: self.flavour.clone(),
            package: self.package.clone(),
            package_version: self.package_version.clone(),
            deb_sha256: self.deb_sha256.clone(),
            release: self.release.clone(),
            packages,
            image_sha256: self.vmlinuz_sha256.clone(),
            path: self.path.as_ref().map(|p| p.display().to_string()),
            image: self.image.clone(),
        }
    }

    /// Whether the manifest records what `load` checks (older ones did not).
    pub fn has_sha256s(&self) -> bool {
        !self.vmlinuz_sha256.is_empty() && !self.config_sha256.is_empty()
    }
}
