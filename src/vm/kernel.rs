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

use crate::error::usage;

const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// A kernel series lsmpmon knows how to fetch, and the Debian suites holding it.
struct Series {
    name: &'static str,
    suite: &'static str,
}

const SERIES: &[Series] = &[
    Series {
        name: "5.10",
        suite: "bullseye",
    },
    Series {
        name: "6.1",
        suite: "bookworm",
    },
    Series {
        name: "6.12",
        suite: "trixie",
    },
];

/// What was fetched, kept next to it: the provenance of every guest result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Kernel {
    pub series: String,
    pub flavour: String,
    pub package: String,
    pub package_version: String,
    pub deb_sha256: String,
    /// `uname -r` of the kernel, from the image's file name.
    pub release: String,
    pub vmlinuz: PathBuf,
    pub config: PathBuf,
}

pub fn known_series() -> Vec<&'static str> {
    SERIES.iter().map(|s| s.name).collect()
}

/// The kernel for `series` and `flavour` ("cloud" or "amd64"), fetched on first use.
/// `mirror`: the Debian archive to fetch from (`--mirror`); default: the
/// machine's own apt sources.
pub fn ensure(cache: &Path, series: &str, flavour: &str, mirror: Option<&str>) -> Result<Kernel> {
    let known = SERIES.iter().find(|s| s.name == series).ok_or_else(|| {
        usage(format!(
            "unknown kernel '{series}': use one of {}",
            known_series().join(", ")
        ))
    })?;
    if flavour != "cloud" && flavour != "amd64" {
        return Err(usage(format!(
            "unknown kernel flavour '{flavour}': use cloud or amd64"
        )));
    }
    let dir = cache.join("kernels").join(format!("{series}-{flavour}"));
    let manifest = dir.join("kernel.json");
    if let Ok(text) = fs::read_to_string(&manifest) {
        if let Ok(k) = serde_json::from_str::<Kernel>(&text) {
            if k.vmlinuz.exists() {
                return Ok(k);
            }
        }
    }
    eprintln!(
        "lsmpmon: fetching Debian {series} {flavour} kernel into {}",
        dir.display()
    );
    let mirrors = match mirror {
        Some(m) => super::mirror::Mirrors::given(m)?,
        None => super::mirror::Mirrors::from_system()?,
    };
    let apt = PrivateApt::new(cache, known.suite, &mirrors)?;
    apt.update()?;
    let meta = format!("linux-image-{flavour}-amd64");
    fs::create_dir_all(&dir)?;
    // Newest first; a mirror may lack the newest file, so older ones are tried too.
    let mut fetched = None;
    let mut last_err = None;
    for image in apt.image_dependencies(&meta)? {
        let unsigned = format!("{image}-unsigned");
        let package = if apt.exists(&unsigned) {
            unsigned
        } else {
            image
        };
        match apt.download(&package, &dir) {
            Ok(deb) => {
                fetched = Some((package, deb));
                break;
            }
            Err(e) => {
                eprintln!("lsmpmon: {package} could not be fetched, trying an older one");
                last_err = Some(e);
            }
        }
    }
    let Some((package, deb)) = fetched else {
        return Err(last_err.unwrap_or_else(|| anyhow::anyhow!("no kernel image for {meta}")))
            .with_context(|| format!("fetching the {series} kernel"));
    };
    let deb_sha256 = sha256_file(&deb)?;
    let root = dir.join("root");
    let _ = fs::remove_dir_all(&root);
    run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&root))?;
    let boot = root.join("boot");
    let vmlinuz = find_prefixed(&boot, "vmlinuz-")?;
    let release = vmlinuz
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("vmlinuz-"))
        .unwrap_or_default()
        .to_string();
    let config = boot.join(format!("config-{release}"));
    let package_version = deb
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.split('_').nth(1))
        .unwrap_or_default()
        .replace("%3a", ":");
    // Keep only what a guest needs: the image and its config.
    for sub in ["lib", "usr"] {
        let _ = fs::remove_dir_all(root.join(sub));
    }
    let kernel = Kernel {
        series: series.into(),
        flavour: flavour.into(),
        package,
        package_version,
        deb_sha256,
        release,
        vmlinuz,
        config,
    };
    fs::write(&manifest, serde_json::to_string_pretty(&kernel)?)?;
    let _ = fs::remove_file(&deb);
    Ok(kernel)
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
        let root = cache.join("apt").join(suite);
        for d in ["lists/partial", "archives/partial"] {
            fs::create_dir_all(root.join(d))?;
        }
        let (main, security) = (&mirrors.main, &mirrors.security);
        let sources = format!(
            "deb [signed-by={KEYRING}] {main} {suite} main\n\
             deb [signed-by={KEYRING}] {main} {suite}-updates main\n\
             deb [signed-by={KEYRING}] {security} {suite}-security main\n"
        );
        fs::write(root.join("sources.list"), sources)?;
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
                let image = field("Depends:")?.split([' ', ',']).next()?.to_string();
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
