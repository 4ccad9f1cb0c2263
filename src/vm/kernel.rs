//! Real Debian kernels, fetched by package name into the cache with a private
//! apt configuration: the system's apt sources are never touched.
use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::cache::{
    check_sha256, inside, not_followed, read_no_follow, real_dir, refuse_links_under, write_atomic,
};
use super::lock::FetchLock;
use crate::base::error::usage;
use crate::model::{KernelRef, PackageRef};

const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// How a series packages its kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// Up to 6.x: `linux-image-<ver>-<flavour>[-unsigned]`, with
    /// `boot/vmlinuz-<ver>` and `boot/config-<ver>`.
    Image,
    /// From 7.x: `linux-image-<ver>-…` only depends on
    /// `linux-binary-unsigned-<ver>-…` (`usr/lib/modules/<ver>/vmlinuz.unsigned`),
    /// `linux-base-<ver>-…` (`usr/lib/modules/<ver>/config`) and the modules,
    /// which a guest does not need.
    Split,
}

/// A kernel series lsmpmon knows how to fetch, and the Debian suite holding it.
struct Series {
    name: &'static str,
    suite: &'static str,
    layout: Layout,
}

const SERIES: &[Series] = &[
    Series {
        name: "5.10",
        suite: "bullseye",
        layout: Layout::Image,
    },
    Series {
        name: "6.1",
        suite: "bookworm",
        layout: Layout::Image,
    },
    Series {
        name: "6.12",
        suite: "trixie",
        layout: Layout::Image,
    },
    Series {
        name: "7.3",
        suite: "trixie-backports",
        layout: Layout::Split,
    },
];

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
}

impl Kernel {
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
        }
    }
}

/// Debian's series, then the kernels lsmpmon builds itself.
pub fn known_series() -> Vec<&'static str> {
    SERIES
        .iter()
        .map(|s| s.name)
        .chain(super::build::RECIPES.iter().map(|r| r.name))
        .collect()
}

/// `-cloud-amd64` or `-amd64`: how package names end for `flavour`.
fn flavour_suffix(flavour: &str) -> String {
    match flavour {
        "amd64" => "amd64".into(),
        f => format!("{f}-amd64"),
    }
}

/// The kernel for `kernel` (a series, or a file: see [`super::own`]) and
/// `flavour` ("cloud" or "amd64"), fetched on first use. `mirror`: the Debian
/// archive to fetch from (`--mirror`); default: the machine's own apt sources.
pub fn ensure(cache: &Path, kernel: &str, flavour: &str, mirror: Option<&str>) -> Result<Kernel> {
    if let Some(r) = super::build::recipe(kernel) {
        return super::build::ensure(cache, r);
    }
    if !SERIES.iter().any(|s| s.name == kernel) && super::own::is_path(kernel) {
        return super::own::ensure(cache, Path::new(kernel));
    }
    let known = find_series(kernel, flavour)?;
    let cache = std::path::absolute(cache)?;
    let entry = Path::new("kernels").join(format!("{kernel}-{flavour}"));
    let dir = real_dir(&cache, &entry)?;
    ensure_entry(&cache, &dir, |dir| {
        fetch(&cache, known, flavour, dir, mirror)
    })
}

fn find_series(series: &str, flavour: &str) -> Result<&'static Series> {
    let known = SERIES.iter().find(|s| s.name == series).ok_or_else(|| {
        usage(format!(
            "unknown kernel '{series}': use one of {}, or the path of {}",
            known_series().join(", "),
            super::own::ACCEPTED
        ))
    })?;
    if flavour != "cloud" && flavour != "amd64" {
        return Err(usage(format!(
            "unknown kernel flavour '{flavour}': use cloud or amd64"
        )));
    }
    Ok(known)
}

/// The intact entry in `dir`, or `fetch`'s, one fetch into the cache at a time:
/// whoever waited uses what the first one fetched.
pub(super) fn ensure_entry(
    cache: &Path,
    dir: &Path,
    fetch: impl FnOnce(&Path) -> Result<Kernel>,
) -> Result<Kernel> {
    if let Some(k) = load(dir)? {
        return Ok(k);
    }
    let kernels = cache.join("kernels");
    let _lock = FetchLock::acquire(&kernels.join(".fetch.lock"), || {
        eprintln!(
            "lsmpmon: waiting for another lsmpmon fetching into {}",
            kernels.display()
        )
    })?;
    if let Some(k) = load(dir)? {
        return Ok(k);
    }
    let kernel = fetch(dir)?;
    write_atomic(&dir.join(MANIFEST), &serde_json::to_vec_pretty(&kernel)?)?;
    Ok(kernel)
}

const MANIFEST: &str = "kernel.json";

/// The entry's kernel if its manifest is complete; an error if the entry was
/// tampered with (paths leading out, contents changed, symlinks).
fn load(dir: &Path) -> Result<Option<Kernel>> {
    let manifest = dir.join(MANIFEST);
    let bytes = match read_no_follow(&manifest) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(not_followed(&manifest)),
        Err(e) => return Err(e).with_context(|| format!("reading {}", manifest.display())),
    };
    // Unreadable, or written before the sha256s were recorded: fetched again.
    let Some(mut k) = serde_json::from_slice::<Kernel>(&bytes)
        .ok()
        .filter(|k| !k.vmlinuz_sha256.is_empty() && !k.config_sha256.is_empty())
    else {
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

/// Fetches the newest kernel of the series into `dir` (under the lock).
fn fetch(
    cache: &Path,
    s: &Series,
    flavour: &str,
    dir: &Path,
    mirror: Option<&str>,
) -> Result<Kernel> {
    eprintln!(
        "lsmpmon: fetching Debian {} {flavour} kernel ({}) into {}",
        s.name,
        s.suite,
        dir.display()
    );
    let mirrors = match mirror {
        Some(m) => super::mirror::Mirrors::given(m)?,
        None => super::mirror::Mirrors::from_system()?,
    };
    let apt = PrivateApt::new(cache, s.suite, &mirrors)?;
    apt.update()?;
    // Downloaded and unpacked in a directory of our own, then moved in.
    let staging = dir.join(".fetch");
    let _ = fs::remove_dir_all(&staging);
    fs::create_dir(&staging).with_context(|| format!("creating {}", staging.display()))?;
    let debs = match s.layout {
        Layout::Image => download_newest(&apt, flavour, &staging).map(|deb| vec![deb]),
        Layout::Split => download_split(&apt, s, flavour, &staging),
    }
    .with_context(|| format!("fetching the {} kernel", s.name))?;
    let mut kernel = unpack(&debs, &staging.join("root"))?;
    kernel.series = s.name.into();
    kernel.flavour = flavour.into();
    move_in(&staging, dir, &mut kernel)?;
    Ok(kernel)
}

/// Replaces the entry's `root` with the one unpacked in `staging`.
pub(super) fn move_in(staging: &Path, dir: &Path, kernel: &mut Kernel) -> Result<()> {
    let root = dir.join("root");
    let _ = fs::remove_dir_all(&root);
    fs::rename(staging.join("root"), &root)
        .with_context(|| format!("moving the kernel into {}", root.display()))?;
    let _ = fs::remove_dir_all(staging);
    let boot = root.join("boot");
    kernel.vmlinuz = boot.join(kernel.vmlinuz.file_name().unwrap_or_default());
    kernel.config = boot.join(kernel.config.file_name().unwrap_or_default());
    Ok(())
}

/// Newest first; a mirror may lack the newest file, so older ones are tried too.
fn download_newest(apt: &PrivateApt, flavour: &str, dir: &Path) -> Result<PathBuf> {
    let meta = format!("linux-image-{}", flavour_suffix(flavour));
    let mut last_err = None;
    for image in apt.image_dependencies(&meta)? {
        let unsigned = format!("{image}-unsigned");
        let package = if apt.exists(&unsigned) {
            unsigned
        } else {
            image
        };
        match apt.download(&package, dir) {
            Ok(deb) => return Ok(deb),
            Err(e) => {
                eprintln!("lsmpmon: {package} could not be fetched, trying an older one");
                last_err = Some(e);
            }
        }
    }
    Err(last_err.unwrap_or_else(|| anyhow::anyhow!("no kernel image for {meta}")))
}

/// 7.x: the newest `<series>.*` release in the suite's index with an
/// unsigned image package; its image and base (config) packages, image first.
fn download_split(apt: &PrivateApt, s: &Series, flavour: &str, dir: &Path) -> Result<Vec<PathBuf>> {
    const IMAGE: &str = "linux-binary-unsigned-";
    let releases = newest_releases(
        &apt.pkgnames(&format!("{IMAGE}{}.", s.name))?,
        IMAGE,
        flavour,
    );
    let mut last_err = anyhow::anyhow!(
        "no {IMAGE}{}.*-{} package in {}",
        s.name,
        flavour_suffix(flavour),
        s.suite
    );
    for release in releases {
        let got: Result<Vec<PathBuf>> =
            [format!("{IMAGE}{release}"), format!("linux-base-{release}")]
                .iter()
                .map(|p| apt.download(p, dir))
                .collect();
        match got {
            Ok(debs) => return Ok(debs),
            Err(e) => {
                eprintln!(
                    "lsmpmon: the {release} packages could not be fetched, trying an older one"
                );
                last_err = e;
            }
        }
    }
    Err(last_err)
}

/// The releases (`7.3.4+deb13-cloud-amd64`) of `names` starting with
/// `prefix` built for `flavour`, newest first.
fn newest_releases(names: &[String], prefix: &str, flavour: &str) -> Vec<String> {
    let suffix = flavour_suffix(flavour);
    let mut releases: Vec<String> = names
        .iter()
        .filter_map(|n| n.strip_prefix(prefix))
        .filter(|r| r.split_once('-').is_some_and(|(_, f)| f == suffix))
        .map(String::from)
        .collect();
    releases.sort_by(|a, b| version_cmp(b, a));
    releases.dedup();
    releases
}

/// Unpacks `debs` into `root`, keeping only what a guest needs (the image and
/// its config, as `boot/vmlinuz-<release>` and `boot/config-<release>`), and
/// describes them (series and flavour left empty).
pub(super) fn unpack(debs: &[PathBuf], root: &Path) -> Result<Kernel> {
    let mut packages = Vec::new();
    for deb in debs {
        let fields = output(
            Command::new("dpkg-deb")
                .arg("-f")
                .arg(deb)
                .args(["Package", "Version"]),
        )
        .with_context(|| format!("reading {}", deb.display()))?;
        let field = |name: &str| {
            fields
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().to_string())
                .unwrap_or_default()
        };
        packages.push(PackageRef {
            name: field("Package:"),
            version: field("Version:"),
            sha256: sha256_file(deb)?,
        });
        run(Command::new("dpkg-deb").arg("-x").arg(deb).arg(root))?;
    }
    gather_into_boot(root)?;
    for sub in ["lib", "usr"] {
        let _ = fs::remove_dir_all(root.join(sub));
    }
    refuse_links_under(root)?;
    let boot = root.join("boot");
    let vmlinuz = find_prefixed(&boot, "vmlinuz-")
        .map_err(|_| usage(format!("{} hold no kernel image", names(debs))))?;
    let release = vmlinuz
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("vmlinuz-"))
        .unwrap_or_default()
        .to_string();
    let config = boot.join(format!("config-{release}"));
    if !fs::symlink_metadata(&config).is_ok_and(|m| m.is_file()) {
        return Err(usage(format!(
            "{} hold no config-{release} for the kernel image",
            names(debs)
        )));
    }
    let first = packages.first().cloned().context("no package")?;
    Ok(Kernel {
        series: String::new(),
        flavour: String::new(),
        package: first.name,
        package_version: first.version,
        deb_sha256: first.sha256,
        packages,
        release,
        vmlinuz_sha256: sha256_file(&vmlinuz)?,
        config_sha256: sha256_file(&config)?,
        vmlinuz,
        config,
        path: None,
    })
}

fn names(debs: &[PathBuf]) -> String {
    debs.iter()
        .map(|d| {
            d.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .collect::<Vec<_>>()
        .join(" and ")
}

/// Moves a 7.x image and config (`usr/lib/modules/<release>/vmlinuz*`,
/// `…/config`) to where the older layout has them, `boot/`. Regular files
/// only: a link there is left behind (and refused afterwards).
fn gather_into_boot(root: &Path) -> Result<()> {
    let boot = root.join("boot");
    if find_prefixed(&boot, "vmlinuz-").is_ok() {
        return Ok(());
    }
    for modules in [root.join("usr/lib/modules"), root.join("lib/modules")] {
        let Ok(entries) = fs::read_dir(&modules) else {
            continue;
        };
        for e in entries.flatten() {
            let release = e.file_name().to_string_lossy().into_owned();
            let dir = e.path();
            if !fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
                continue;
            }
            let regular = |p: &Path| fs::symlink_metadata(p).is_ok_and(|m| m.is_file());
            for name in ["vmlinuz", "vmlinuz.unsigned", "config"] {
                let from = dir.join(name);
                if !regular(&from) {
                    continue;
                }
                let to = if name == "config" {
                    format!("config-{release}")
                } else {
                    format!("vmlinuz-{release}")
                };
                real_dir(root, Path::new("boot"))?;
                fs::rename(&from, boot.join(to))
                    .with_context(|| format!("moving {}", from.display()))?;
            }
        }
    }
    Ok(())
}

struct PrivateApt {
    root: PathBuf,
}

impl PrivateApt {
    fn new(cache: &Path, suite: &str, mirrors: &super::mirror::Mirrors) -> Result<Self> {
        if !Path::new(KEYRING).exists() {
            return Err(usage(format!(
                "{KEYRING} is missing: apt-get install debian-archive-keyring"
            )));
        }
        let root = real_dir(cache, &Path::new("apt").join(suite))?;
        for d in ["lists/partial", "archives/partial"] {
            real_dir(&root, Path::new(d))?;
        }
        // apt writes its lists and caches there and would follow a link.
        refuse_links_under(&root)?;
        let (main, security) = (&mirrors.main, &mirrors.security);
        // A backports suite has no updates or security suites of its own.
        let sources = if suite.ends_with("-backports") {
            format!("deb [signed-by={KEYRING}] {main} {suite} main\n")
        } else {
            format!(
                "deb [signed-by={KEYRING}] {main} {suite} main\n\
                 deb [signed-by={KEYRING}] {main} {suite}-updates main\n\
                 deb [signed-by={KEYRING}] {security} {suite}-security main\n"
            )
        };
        write_atomic(&root.join("sources.list"), sources.as_bytes())?;
        Ok(Self { root })
    }

    fn options(&self) -> Vec<String> {
        let r = self.root.display();
        [
            format!("Dir::Etc::SourceList={r}/sources.list"),
            "Dir::Etc::SourceParts=/dev/null".into(),
            format!("Dir::State::Lists={r}/lists"),
            format!("Dir::Cache={r}"),
            format!("Dir::Cache::Archives={r}/archives"),
            "Dir::State::status=/dev/null".into(),
            "Debug::NoLocking=1".into(),
            "APT::Sandbox::User=root".into(),
            "APT::Architecture=amd64".into(),
            "APT::Architectures=amd64".into(),
        ]
        .into_iter()
        .flat_map(|o| ["-o".to_string(), o])
        .collect()
    }

    fn update(&self) -> Result<()> {
        let mut cmd = Command::new("apt-get");
        cmd.args(self.options()).args(["-q", "update"]);
        run(&mut cmd).context("apt-get update with lsmpmon's private apt configuration")
    }

    /// The kernel image packages the versions of metapackage `package` depend
    /// on, newest version first.
    fn image_dependencies(&self, package: &str) -> Result<Vec<String>> {
        let out = output(
            Command::new("apt-cache")
                .args(self.options())
                .args(["show", package]),
        )
        .with_context(|| format!("looking up {package}"))?;
        let mut records: Vec<(String, String)> = out
            .split("\n\n")
            .filter_map(|rec| {
                let field = |name: &str| {
                    rec.lines()
                        .find_map(|l| l.strip_prefix(name))
                        .map(|v| v.trim().to_string())
                };
                // The first linux-image-* of the dependencies (7.x's meta
                // package lists linux-base-* before it).
                let image = field("Depends:")?
                    .split([',', '|'])
                    .filter_map(|d| d.split_whitespace().next())
                    .find(|d| d.starts_with("linux-image-"))?
                    .to_string();
                Some((field("Version:")?, image))
            })
            .collect();
        records.sort_by(|a, b| version_cmp(&b.0, &a.0));
        let mut images: Vec<String> = records.into_iter().map(|(_, i)| i).collect();
        images.dedup();
        if images.is_empty() {
            bail!("{package} has no kernel image dependency");
        }
        Ok(images)
    }

    /// Package names in the index starting with `prefix`.
    fn pkgnames(&self, prefix: &str) -> Result<Vec<String>> {
        let out = output(
            Command::new("apt-cache")
                .args(self.options())
                .args(["pkgnames", prefix]),
        )
        .with_context(|| format!("listing {prefix}* packages"))?;
        Ok(out.lines().map(|l| l.trim().to_string()).collect())
    }

    fn exists(&self, package: &str) -> bool {
        output(
            Command::new("apt-cache")
                .args(self.options())
                .args(["show", package]),
        )
        .map(|o| !o.trim().is_empty())
        .unwrap_or(false)
    }

    fn download(&self, package: &str, dir: &Path) -> Result<PathBuf> {
        run(Command::new("apt-get")
            .args(self.options())
            .args(["-q", "download", package])
            .current_dir(dir))?;
        find_prefixed(dir, &format!("{package}_"))
    }
}

/// Orders Debian versions well enough for kernel packages (5.10.262-1 vs
/// 5.10.223-1): numeric runs compare as numbers.
fn version_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let parts = |v: &str| -> Vec<u64> {
        v.split(|c: char| !c.is_ascii_digit())
            .filter(|p| !p.is_empty())
            .map(|p| p.parse().unwrap_or(0))
            .collect()
    };
    parts(a).cmp(&parts(b))
}

fn find_prefixed(dir: &Path, prefix: &str) -> Result<PathBuf> {
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(prefix))
        {
            return Ok(path);
        }
    }
    bail!("no {prefix}* in {}", dir.display())
}

pub fn sha256_file(path: &Path) -> Result<String> {
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(format!("{:x}", Sha256::digest(&bytes)))
}

fn run(cmd: &mut Command) -> Result<()> {
    super::qemu::dies_with_parent(cmd);
    // A tool's chatter goes to stderr: stdout carries only results.
    let status = cmd
        .stdout(std::io::stderr())
        .status()
        .with_context(|| format!("running {:?}", cmd.get_program()))?;
    if !status.success() {
        bail!("{:?} failed with {status}", cmd.get_program());
    }
    Ok(())
}

fn output(cmd: &mut Command) -> Result<String> {
    super::qemu::dies_with_parent(cmd);
    let out = cmd
        .output()
        .with_context(|| format!("running {:?}", cmd.get_program()))?;
    if !out.status.success() {
        bail!(
            "{:?} failed: {}",
            cmd.get_program(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

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
            vmlinuz_sha256: super::super::cache::sha256_hex(image.as_bytes()),
            config_sha256: super::super::cache::sha256_hex(b"CONFIG_X=y"),
            packages: Vec::new(),
            path: None,
        })
    }

    #[test]
    fn concurrent_fetches_into_a_cold_cache_make_one_entry() {
        let cache = std::env::temp_dir().join(format!("lsmpmon-fetch-{}", std::process::id()));
        let _ = fs::remove_dir_all(&cache);
        let dir = real_dir(&cache, Path::new("kernels/6.1-cloud")).unwrap();
        let calls = AtomicUsize::new(0);
        let got: Vec<Kernel> = std::thread::scope(|s| {
            let both: Vec<_> = (0..2)
                .map(|_| s.spawn(|| ensure_entry(&cache, &dir, |d| fake_fetch(d, &calls))))
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
        let later = ensure_entry(&cache, &dir, |_| panic!("fetched again")).unwrap();
        assert_eq!(later.vmlinuz_sha256, got[0].vmlinuz_sha256);
        fs::remove_dir_all(&cache).unwrap();
    }

    #[test]
    fn entries_without_recorded_sha256_are_fetched_again() {
        let cache = std::env::temp_dir().join(format!("lsmpmon-legacy-{}", std::process::id()));
        let _ = fs::remove_dir_all(&cache);
        let dir = real_dir(&cache, Path::new("kernels/6.1-cloud")).unwrap();
        let calls = AtomicUsize::new(0);
        let mut old = fake_fetch(&dir, &calls).unwrap();
        old.vmlinuz_sha256.clear();
        old.config_sha256.clear();
        fs::write(dir.join(MANIFEST), serde_json::to_vec(&old).unwrap()).unwrap();
        let k = ensure_entry(&cache, &dir, |d| fake_fetch(d, &calls)).unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 2, "the old entry was trusted");
        check_sha256(&k.vmlinuz, &k.vmlinuz_sha256).unwrap();
        fs::remove_dir_all(&cache).unwrap();
    }

    #[test]
    fn the_newest_release_of_the_flavour_comes_first() {
        let names: Vec<String> = [
            "linux-binary-unsigned-7.3.4+deb13-rt-amd64",
            "linux-binary-unsigned-7.3.4+deb13-cloud-amd64",
            "linux-binary-unsigned-7.3.10+deb13-cloud-amd64",
            "linux-binary-unsigned-7.3.10+deb13-amd64",
            "linux-binary-unsigned-7.3.9+deb13-cloud-amd64",
        ]
        .map(String::from)
        .into();
        let p = "linux-binary-unsigned-";
        assert_eq!(
            newest_releases(&names, p, "cloud"),
            [
                "7.3.10+deb13-cloud-amd64",
                "7.3.9+deb13-cloud-amd64",
                "7.3.4+deb13-cloud-amd64"
            ]
        );
        assert_eq!(newest_releases(&names, p, "amd64"), ["7.3.10+deb13-amd64"]);
        assert!(newest_releases(&names, p, "rt").len() == 1);
    }

    #[test]
    fn kernel_versions_order_numerically() {
        assert_eq!(
            version_cmp("5.10.262-1", "5.10.223-1"),
            std::cmp::Ordering::Greater
        );
        assert_eq!(
            version_cmp("6.1.192-2", "6.1.192-10"),
            std::cmp::Ordering::Less
        );
    }
}
