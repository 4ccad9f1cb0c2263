//! `--compare BASE.json`: the baseline, read and checked before anything runs.
use anyhow::Result;

use super::args::BenchArgs;
use super::compare;
use super::op::OpDef;
use super::result::{BenchProvenance, BenchResult};

/// A baseline that may be compared with this run, and its mismatches
/// (let through by `--force`).
pub type Baseline = (BenchResult, Vec<String>);

/// The baseline and its mismatches (`--force`), checked before anything runs.
pub fn check_baseline(
    args: &BenchArgs,
    selected: &[OpDef],
    provenance: &BenchProvenance,
) -> Result<Option<Baseline>> {
    let Some(path) = &args.compare else {
        return Ok(None);
    };
    let base = compare::read_baseline(path)?;
    let dir = crate::model::bench::PathShape::of_dir(&args.dir);
    let forced = compare::check_comparable(&base, provenance, dir, args.force)?;
    let names: Vec<&str> = selected.iter().map(|d| d.name).collect();
    compare::check_ops(&base, &names)?;
    Ok(Some((base, forced)))
}
