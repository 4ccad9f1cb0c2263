//! `--compare BASE.json`: the baseline, read and checked before anything runs.
use std::path::Path;

use anyhow::Result;

use super::args::BenchArgs;
use super::compare;
use super::op::OpDef;
use super::result::BenchProvenance;
use crate::base::error::usage;

/// A baseline that may be compared with this run, and its mismatches
/// (let through by `--force`).
pub type Baseline = (serde_json::Value, Vec<String>);

fn read_baseline(path: &Path) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage(format!("cannot read baseline {}: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| {
        usage(format!(
            "baseline {} is not valid JSON: {e}",
            path.display()
        ))
    })
}

/// The baseline and its mismatches (`--force`), checked before anything runs.
pub fn check_baseline(
    args: &BenchArgs,
    selected: &[OpDef],
    provenance: &BenchProvenance,
) -> Result<Option<Baseline>> {
    let Some(path) = &args.compare else {
        return Ok(None);
    };
    let base = read_baseline(path)?;
    let forced = compare::check_comparable(&base, provenance, args.force)?;
    let names: Vec<&str> = selected.iter().map(|d| d.name).collect();
    compare::check_ops(&base, &names)?;
    Ok(Some((base, forced)))
}
