//! The module the IMA module-measurement ops load and unload in the guest:
//! a small library module of the kernel's own package that needs no other
//! module and runs no code when it is loaded or unloaded (no init, no exit),
//! kept uncompressed in `test-module/`.
use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::netmods::{copy_module, modules_dir};
use crate::cache::real_dir;

/// Whether a kernel's packages gave a module to load, and which file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestModule {
    #[default]
    NotLooked,
    /// Looked for and not there (or a kernel lsmpmon built, or the user's file).
    Absent,
    File(String),
}

/// Tried in order; the first the package builds as a module is kept.
const CANDIDATES: &[&str] = &["crc7", "crc_itu_t", "cordic"];

/// The entry's directory of the kept module.
pub const DIR: &str = "test-module";

/// Copies the first candidate `root`'s packages hold, with no dependency,
/// into `root/test-module/`; `Absent`, said once, when the packages hold
/// none it can take (a 7.x image given by path comes without its modules):
/// only the module ops need it.
pub fn gather(root: &Path) -> TestModule {
    gather_from(root).unwrap_or_else(|e| {
        base::say!("lsmpmon: no module for the IMA module ops from these packages: {e:#}");
        TestModule::Absent
    })
}

fn gather_from(root: &Path) -> Result<TestModule> {
    let dir = modules_dir(root)?;
    let dep = std::fs::read_to_string(dir.join("modules.dep"))?;
    let Some(rel) = pick(&dep) else {
        return Ok(TestModule::Absent);
    };
    let to = real_dir(root, Path::new(DIR))?;
    Ok(TestModule::File(copy_module(&dir, rel, &to)?))
}

/// The first candidate listed in `modules.dep` with no dependency (a module
/// named `crc-itu-t.ko` is `crc_itu_t`, as the kernel names it).
fn pick(modules_dep: &str) -> Option<&str> {
    CANDIDATES.iter().find_map(|want| {
        modules_dep.lines().find_map(|l| {
            let (path, deps) = l.split_once(':')?;
            let name = super::netmods::module_name(path).replace('-', "_");
            (name == *want && deps.trim().is_empty()).then_some(path.trim())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_candidate_without_dependencies_is_kept() {
        let dep = "kernel/lib/crc7.ko.xz: kernel/lib/other.ko.xz\n\
                   kernel/lib/crc-itu-t.ko.xz:\n\
                   kernel/lib/math/cordic.ko.xz:\n";
        assert_eq!(pick(dep), Some("kernel/lib/crc-itu-t.ko.xz"));
        assert_eq!(pick("kernel/lib/crc7.ko:\n"), Some("kernel/lib/crc7.ko"));
        assert_eq!(pick("kernel/lib/crc8.ko:\n"), None);
    }
}
