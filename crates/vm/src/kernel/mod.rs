//! The guest's kernel, in the cache: a Debian series fetched by package name
//! (`debian`, with a private apt: the system's apt sources are never
//! touched), one lsmpmon builds (`build`), or the user's own file (`own`).
mod apt;
mod build;
mod deb;
mod debian;
pub mod entry;
mod image_size;
mod lock;
mod manifest;
pub mod mirror;
mod netmods;
mod own;
mod series;
pub mod test_module;
pub mod trace_needs;
mod version;

use std::path::Path;

use anyhow::Result;

pub use manifest::Kernel;

use base::error::usage;

/// Debian's series, then the kernels lsmpmon builds itself.
pub fn known_series() -> Vec<&'static str> {
    series::SERIES
        .iter()
        .map(|s| s.name)
        .chain(build::RECIPES.iter().map(|r| r.name))
        .collect()
}

/// The kernel for `kernel` (a series, or a file: see [`own`]) and
/// `flavour` ("cloud" or "amd64"), fetched on first use. `mirror`: the Debian
/// archive to fetch from (`--mirror`); default: the machine's own apt sources.
pub fn ensure(cache: &Path, kernel: &str, flavour: &str, mirror: Option<&str>) -> Result<Kernel> {
    if let Some(r) = build::recipe(kernel) {
        return build::ensure(cache, r, mirror);
    }
    if series::find(kernel).is_none() && own::is_path(kernel) {
        return own::ensure(cache, Path::new(kernel));
    }
    let known = find_series(kernel, flavour)?;
    let cache = std::path::absolute(cache)?;
    let entry = Path::new("kernels").join(format!("{kernel}-{flavour}"));
    entry::ensure_entry(&cache, &entry, |dir| {
        debian::fetch(&cache, known, flavour, dir, mirror, false)
    })
}

/// As [`ensure`], with the network card driver's modules (`vm run
/// --forward`): a cache entry of its own (`<series>-<flavour>-net`), so that
/// the plain entry guests already use is never rewritten. Debian series only.
pub fn ensure_net(
    cache: &Path,
    kernel: &str,
    flavour: &str,
    mirror: Option<&str>,
) -> Result<Kernel> {
    if build::recipe(kernel).is_some() || series::find(kernel).is_none() {
        return Err(usage(format!(
            "--forward needs a Debian series kernel ({}): lsmpmon takes its virtio_net modules from the package",
            series::SERIES.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
        )));
    }
    let known = find_series(kernel, flavour)?;
    let cache = std::path::absolute(cache)?;
    let entry = Path::new("kernels").join(format!("{kernel}-{flavour}-net"));
    entry::ensure_entry(&cache, &entry, |dir| {
        debian::fetch(&cache, known, flavour, dir, mirror, true)
    })
}

fn find_series(name: &str, flavour: &str) -> Result<&'static series::Series> {
    let known = series::find(name).ok_or_else(|| {
        usage(format!(
            "unknown kernel '{name}': use one of {}, or the path of {}",
            known_series().join(", "),
            own::ACCEPTED
        ))
    })?;
    if !series::FLAVOURS.contains(&flavour) {
        return Err(usage(format!(
            "unknown kernel flavour '{flavour}': use cloud or amd64"
        )));
    }
    Ok(known)
}
