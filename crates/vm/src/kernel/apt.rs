//! A private apt configuration in the cache, per suite: the system's apt
//! sources, lists and status are never touched.
use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{bail, Context, Result};

use super::deb::find_prefixed;
use super::lock::FetchLock;
use super::mirror::Mirrors;
use super::version::version_cmp;
use crate::cache::{real_dir, refuse_links_under, write_atomic};
use base::{command, error::usage};

const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// Holds its suite's lock while alive: apt runs here without its own locking
/// (`Debug::NoLocking`), and two fetches of one suite would share the lists.
pub struct PrivateApt {
    root: PathBuf,
    _lock: FetchLock,
}

impl PrivateApt {
    pub fn new(cache: &Path, suite: &str, mirrors: &Mirrors) -> Result<Self> {
        if !Path::new(KEYRING).exists() {
            return Err(usage(format!(
                "{KEYRING} is missing: apt-get install debian-archive-keyring"
            )));
        }
        let root = real_dir(cache, &Path::new("apt").join(suite))?;
        let lock = FetchLock::acquire(&root.join(".lsmpmon.lock"), || {
            base::say!(
                "lsmpmon: waiting for another lsmpmon using {}",
                root.display()
            )
        })?;
        for d in ["lists/partial", "archives/partial"] {
            real_dir(&root, Path::new(d))?;
        }
        // apt writes its lists and caches there and would follow a link.
        refuse_links_under(&root)?;
        write_atomic(
            &root.join("sources.list"),
            sources(suite, mirrors).as_bytes(),
        )?;
        Ok(Self { root, _lock: lock })
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

    fn tool(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.args(self.options());
        cmd
    }

    pub fn update(&self) -> Result<()> {
        command::run_shown(self.tool("apt-get").args(["-q", "update"]))
            .context("apt-get update with lsmpmon's private apt configuration")
    }

    /// The kernel image packages the versions of metapackage `package` depend
    /// on, newest version first.
    pub fn image_dependencies(&self, package: &str) -> Result<Vec<String>> {
        let out = command::output(self.tool("apt-cache").args(["show", package]))
            .with_context(|| format!("looking up {package}"))?;
        let mut records: Vec<(String, String)> =
            out.split("\n\n").filter_map(image_dependency).collect();
        records.sort_by(|a, b| version_cmp(&b.0, &a.0));
        let mut images: Vec<String> = records.into_iter().map(|(_, i)| i).collect();
        images.dedup();
        if images.is_empty() {
            bail!("{package} has no kernel image dependency");
        }
        Ok(images)
    }

    /// Package names in the index starting with `prefix`.
    pub fn pkgnames(&self, prefix: &str) -> Result<Vec<String>> {
        let out = command::output(self.tool("apt-cache").args(["pkgnames", prefix]))
            .with_context(|| format!("listing {prefix}* packages"))?;
        Ok(out.lines().map(|l| l.trim().to_string()).collect())
    }

    pub fn exists(&self, package: &str) -> bool {
        command::output(self.tool("apt-cache").args(["show", package]))
            .is_ok_and(|o| !o.trim().is_empty())
    }

    pub fn download(&self, package: &str, dir: &Path) -> Result<PathBuf> {
        command::run_shown(
            self.tool("apt-get")
                .args(["-q", "download", package])
                .current_dir(dir),
        )?;
        find_prefixed(dir, &format!("{package}_"))
    }
}

/// The sources.list of `suite`: main, and for a stable suite its updates and
/// security suites (a backports suite has none of its own).
fn sources(suite: &str, mirrors: &Mirrors) -> String {
    let (main, security) = (&mirrors.main, &mirrors.security);
    if suite.ends_with("-backports") {
        format!("deb [signed-by={KEYRING}] {main} {suite} main\n")
    } else {
        format!(
            "deb [signed-by={KEYRING}] {main} {suite} main\n\
             deb [signed-by={KEYRING}] {main} {suite}-updates main\n\
             deb [signed-by={KEYRING}] {security} {suite}-security main\n"
        )
    }
}

/// (Version, the first linux-image-* it depends on) of one `apt-cache show`
/// record (7.x's meta package lists linux-base-* before it).
fn image_dependency(record: &str) -> Option<(String, String)> {
    let field = |name: &str| {
        record
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
    };
    let image = field("Depends:")?
        .split([',', '|'])
        .filter_map(|d| d.split_whitespace().next())
        .find(|d| d.starts_with("linux-image-"))?
        .to_string();
    Some((field("Version:")?, image))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_image_a_metapackage_version_depends_on() {
        let record = "Package: linux-image-cloud-amd64\nVersion: 7.3.4-1\n\
                      Depends: linux-base-7.3.4-cloud-amd64, linux-image-7.3.4-cloud-amd64 | x\n";
        assert_eq!(
            image_dependency(record),
            Some(("7.3.4-1".into(), "linux-image-7.3.4-cloud-amd64".into()))
        );
        assert_eq!(image_dependency("Version: 1\nDepends: libc6\n"), None);
    }
}
