//! The host tools a matrix needs, checked before any cell is recorded: a
//! missing one is a usage error (exit 2) in one line, not a column of
//! failed cells.
use std::path::Path;

use anyhow::Result;

use crate::{host::cell, spec::Config};
use base::{command::which, error::usage};

const QEMU: &str = "qemu-system-x86_64";
const BUSYBOX: &str = "/bin/busybox";
const SWTPM: &str = "swtpm";

pub fn check(configs: &[Config]) -> Result<()> {
    if which(QEMU).is_none() {
        return Err(usage(format!(
            "{QEMU} not found: apt-get install qemu-system-x86 (scripts/setup.sh does)"
        )));
    }
    if !Path::new(BUSYBOX).exists() {
        return Err(usage(format!(
            "{BUSYBOX} not found: apt-get install busybox-static (scripts/setup.sh does)"
        )));
    }
    if configs.iter().any(|c| c.spec.proof.tpm) && which(SWTPM).is_none() {
        return Err(usage(
            "swtpm not found: apt-get install swtpm swtpm-tools (scripts/setup.sh does)",
        ));
    }
    for c in configs {
        cell::check_host_files(c)?;
    }
    Ok(())
}
