//! Programs the guest needs from Debian without installing them on the host:
//! the `web` ops' server (nginx) and the `build` op's compiler (tcc), fetched
//! with this machine's own apt configuration (`apt-get download`, the
//! machine's suite) and unpacked into lsmpmon's cache with `dpkg-deb -x`.
//! Nothing is installed and no service is started on the host.
use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result};

use base::command;

/// The package a cell's server came from (recorded in the cell).
pub use model::cell::DebPackage as PackageRef;
use vm::cache;

pub const PACKAGE: &str = "nginx";
use crate::guest_plan::NGINX as GUEST_BINARY;

pub struct Nginx {
    pub binary: PathBuf,
    pub package: PackageRef,
}

/// The unpacked package in `<cache>/packages/nginx`, fetched once.
pub fn ensure(cache_dir: &Path) -> Result<Nginx> {
    let (root, package) = unpacked(cache_dir, PACKAGE, GUEST_BINARY)?;
    let binary = root.join(GUEST_BINARY.trim_start_matches('/'));
    Ok(Nginx { binary, package })
}

/// Debian package `name` unpacked in `<cache>/packages/<name>/root` (fetched
/// once: `file`, a path in the package, says it is there).
pub fn unpacked(cache_dir: &Path, name: &str, file: &str) -> Result<(PathBuf, PackageRef)> {
    let dir = cache::real_dir(cache_dir, &Path::new("packages").join(name))?;
    let info_path = dir.join("package.json");
    let root = dir.join("root");
    if let Ok(text) = fs::read_to_string(&info_path) {
        if let Ok(package) = serde_json::from_str::<PackageRef>(&text) {
            if root.join(file.trim_start_matches('/')).is_file() {
                return Ok((root, package));
            }
        }
    }
    let package = fetch(name, &dir, &root)?;
    fs::write(&info_path, serde_json::to_string_pretty(&package)?)?;
    Ok((root, package))
}

fn fetch(name: &str, dir: &Path, root: &Path) -> Result<PackageRef> {
    let download = dir.join("download");
    let _ = fs::remove_dir_all(&download);
    fs::create_dir_all(&download)?;
    base::say!("lsmpmon: fetching Debian's {name} package (apt-get download)");
    command::run(
        Command::new("apt-get")
            .args(["-q", "download", name])
            .current_dir(&download),
    )
    .with_context(|| {
        format!("apt-get download {name} (run apt-get update, or scripts/setup.sh)")
    })?;
    let deb = fs::read_dir(&download)?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .context("apt-get download left no .deb")?;
    let field = |name: &str| -> Result<String> {
        let value = command::output(Command::new("dpkg-deb").arg("--field").arg(&deb).arg(name))?;
        Ok(value.trim().to_string())
    };
    let package = PackageRef {
        package: field("Package")?,
        version: field("Version")?,
        deb_sha256: vm::cache::sha256_file(&deb)?,
    };
    let _ = fs::remove_dir_all(root);
    command::run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(root))
        .with_context(|| format!("dpkg-deb -x {}", deb.display()))?;
    let _ = fs::remove_dir_all(&download);
    Ok(package)
}
