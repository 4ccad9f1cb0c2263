//! Fetching the newest kernel of a Debian series with the private apt.
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::apt::PrivateApt;
use super::deb;
use super::entry::Staging;
use super::manifest::Kernel;
use super::mirror::Mirrors;
use super::series::{flavour_suffix, Layout, Series};
use super::version::version_cmp;

/// Fetches the newest kernel of the series into `dir` (under the lock); with
/// `net`, its network card driver too (`vm run --forward`).
pub fn fetch(
    cache: &Path,
    s: &Series,
    flavour: &str,
    dir: &Path,
    mirror: Option<&str>,
    net: bool,
) -> Result<Kernel> {
    base::say!(
        "lsmpmon: fetching Debian {} {flavour} kernel ({}) into {}",
        s.name,
        s.suite,
        dir.display()
    );
    let mirrors = match mirror {
        Some(m) => Mirrors::given(m)?,
        None => Mirrors::from_system()?,
    };
    let apt = PrivateApt::new(cache, s.suite, &mirrors)?;
    apt.update()?;
    // Downloaded and unpacked in a directory of our own, then moved in.
    let staging = Staging::new(dir, ".fetch")?;
    let debs = match s.layout {
        Layout::Image => download_newest(&apt, flavour, staging.path()).map(|deb| vec![deb]),
        Layout::Split => download_split(&apt, s, flavour, staging.path()),
    }
    .with_context(|| format!("fetching the {} kernel", s.name))?;
    let mut kernel = deb::unpack(&debs, &staging.path().join("root"), net)?;
    kernel.series = s.name.into();
    kernel.flavour = flavour.into();
    deb::move_in(staging.path(), dir, &mut kernel)?;
    Ok(kernel)
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
                base::say!("lsmpmon: {package} could not be fetched, trying an older one");
                last_err = Some(e);
            }
        }
    }
    Err(last_err.unwrap_or_else(|| anyhow::anyhow!("no kernel image for {meta}")))
}

/// 7.x: the newest `<series>.*` release in the suite's index with an
/// unsigned image package; its image, base (config) and modules packages,
/// image first (the modules hold the module-measurement ops' module and,
/// for `vm run --forward`, the network card driver).
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
        let packages = [
            format!("{IMAGE}{release}"),
            format!("linux-base-{release}"),
            format!("linux-modules-{release}"),
        ];
        let got: Result<Vec<PathBuf>> = packages.iter().map(|p| apt.download(p, dir)).collect();
        match got {
            Ok(debs) => return Ok(debs),
            Err(e) => {
                base::say!(
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
