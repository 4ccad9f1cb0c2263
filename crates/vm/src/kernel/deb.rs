//! Debian kernel packages (.deb) unpacked into a cache entry, keeping only
//! what a guest boots: the image and its config, in `boot/`.
use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{bail, Context, Result};

use super::manifest::Kernel;
use crate::cache::{real_dir, refuse_links_under, sha256_file};
use base::command;
use base::error::usage;
use model::PackageRef;

/// Unpacks `debs` into `root`, keeping only what a guest needs (the image and
/// its config, as `boot/vmlinuz-<release>` and `boot/config-<release>`; the
/// module the module-measurement ops load, in `test-module/`; with `net`, the
/// network card driver in `net/`), and describes them (series and flavour
/// left empty).
pub fn unpack(debs: &[PathBuf], root: &Path, net: bool) -> Result<Kernel> {
    let mut packages = Vec::new();
    for deb in debs {
        packages.push(package_of(deb)?);
        command::run_shown(Command::new("dpkg-deb").arg("-x").arg(deb).arg(root))?;
    }
    gather_into_boot(root)?;
    let net_modules = if net {
        super::netmods::gather(root)?
    } else {
        Vec::new()
    };
    let test_module = super::test_module::gather(root);
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
        net_modules,
        image: None,
        test_module,
    })
}

/// The package `deb` holds: its name, version and the sha256 of the file.
fn package_of(deb: &Path) -> Result<PackageRef> {
    let fields = command::output(
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
    Ok(PackageRef {
        name: field("Package:"),
        version: field("Version:"),
        sha256: sha256_file(deb)?,
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

/// Replaces the entry's `root` with the one unpacked in `staging`.
pub fn move_in(staging: &Path, dir: &Path, kernel: &mut Kernel) -> Result<()> {
    let root = dir.join("root");
    let _ = fs::remove_dir_all(&root);
    fs::rename(staging.join("root"), &root)
        .with_context(|| format!("moving the kernel into {}", root.display()))?;
    let boot = root.join("boot");
    kernel.vmlinuz = boot.join(kernel.vmlinuz.file_name().unwrap_or_default());
    kernel.config = boot.join(kernel.config.file_name().unwrap_or_default());
    Ok(())
}

/// The first file in `dir` whose name starts with `prefix`.
pub fn find_prefixed(dir: &Path, prefix: &str) -> Result<PathBuf> {
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
