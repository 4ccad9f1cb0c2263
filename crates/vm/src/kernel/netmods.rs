//! The guest's network card driver (`vm run --forward`): Debian's cloud
//! kernels build `virtio_net` (and on 5.10/6.1 `virtio`/`virtio_pci`) as
//! modules. From the unpacked packages, the driver and what it needs are
//! kept uncompressed in `net/`, in load order, for busybox's `insmod`.
use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{bail, Context, Result};

use crate::cache::real_dir;
use base::command;
use base::error::usage;

/// The transport (built in on 6.12 and later) and the driver: the modules
/// gathered with their dependencies.
const TRANSPORT: &str = "virtio_pci";
pub const DRIVER: &str = "virtio_net";

/// `module`'s dependencies then itself, in load order, from `modules.dep`
/// (`path: dep dep…`, each dep listed before what it needs: loaded last first).
pub fn load_order(modules_dep: &str, module: &str) -> Option<Vec<String>> {
    let line = modules_dep.lines().find(|l| {
        l.split(':')
            .next()
            .is_some_and(|p| module_name(p) == module)
    })?;
    let (path, deps) = line.split_once(':')?;
    let mut order: Vec<String> = deps.split_whitespace().rev().map(String::from).collect();
    order.push(path.trim().to_string());
    Some(order)
}

/// `kernel/drivers/net/virtio_net.ko.xz` → `virtio_net`.
pub fn module_name(path: &str) -> &str {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.split(".ko").next().unwrap_or(file)
}

/// The unpacked `lib/modules/<release>` (or `usr/lib/…` from 7.x on), with a
/// `modules.dep`: packages ship none (depmod makes it when one is installed),
/// so depmod (kmod) makes it here, inside the unpacked tree.
pub(super) fn modules_dir(root: &Path) -> Result<PathBuf> {
    for base in [root.to_path_buf(), root.join("usr")] {
        let Ok(entries) = fs::read_dir(base.join("lib/modules")) else {
            continue;
        };
        for e in entries.flatten() {
            let dir = e.path();
            if !dir.join("modules.order").is_file() {
                continue;
            }
            if !dir.join("modules.dep").is_file() {
                let release = e.file_name();
                let depmod = command::which("depmod")
                    .ok_or_else(|| usage("depmod not found: apt-get install kmod"))?;
                command::run(Command::new(depmod).arg("-b").arg(&base).arg(&release))?;
            }
            return Ok(dir);
        }
    }
    bail!("the kernel packages hold no modules")
}

/// Copies the driver's modules into `root/net/` (decompressed), returning
/// their file names in load order.
pub fn gather(root: &Path) -> Result<Vec<String>> {
    let dir = modules_dir(root)?;
    let dep = fs::read_to_string(dir.join("modules.dep"))?;
    let driver =
        load_order(&dep, DRIVER).with_context(|| format!("the kernel has no {DRIVER} module"))?;
    let mut order = load_order(&dep, TRANSPORT).unwrap_or_default();
    for m in driver {
        if !order.contains(&m) {
            order.push(m);
        }
    }
    let net = real_dir(root, Path::new("net"))?;
    order
        .iter()
        .map(|rel| copy_module(&dir, rel, &net))
        .collect()
}

/// Copies `rel` (under `dir`) into `to`, decompressed; returns its file name.
pub(super) fn copy_module(dir: &Path, rel: &str, to: &Path) -> Result<String> {
    let from = dir.join(rel);
    let name = format!("{}.ko", module_name(rel));
    if rel.ends_with(".ko") {
        fs::copy(&from, to.join(&name)).with_context(|| format!("copying {}", from.display()))?;
    } else if rel.ends_with(".ko.xz") {
        let packed = to.join(format!("{name}.xz"));
        fs::copy(&from, &packed).with_context(|| format!("copying {}", from.display()))?;
        command::run(Command::new("xz").arg("-d").arg(&packed))?;
    } else {
        bail!("{rel}: a module compression lsmpmon does not unpack");
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependencies_load_before_the_driver_last_listed_first() {
        let dep = "kernel/drivers/net/failover.ko:\n\
            kernel/drivers/net/virtio_net.ko.xz: kernel/drivers/net/net_failover.ko.xz kernel/net/core/failover.ko.xz\n\
            kernel/drivers/net/net_failover.ko.xz: kernel/net/core/failover.ko.xz\n";
        let order = load_order(dep, "virtio_net").unwrap();
        assert_eq!(
            order,
            [
                "kernel/net/core/failover.ko.xz",
                "kernel/drivers/net/net_failover.ko.xz",
                "kernel/drivers/net/virtio_net.ko.xz"
            ]
        );
        assert_eq!(load_order(dep, "virtio"), None);
        assert_eq!(
            module_name("a/b/virtio_pci_legacy_dev.ko"),
            "virtio_pci_legacy_dev"
        );
    }
}
