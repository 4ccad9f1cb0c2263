//! `--compare BASE.json`: the baseline, read and checked before anything runs.
use anyhow::Result;

use base::error::usage;

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
    let dir = model::bench::PathShape::of_dir(&args.dir);
    let mut forced = compare::check_comparable(&base, provenance, dir, args.force)?;
    let names: Vec<&str> = selected.iter().map(|d| d.name).collect();
    compare::check_ops(&base, &names)?;
    if let Some(diff) = other_workload(&base, args)? {
        if !args.force {
            return Err(usage(format!(
                "{diff}: a workload compares only with itself, or pass --force"
            )));
        }
        forced.push(diff);
    }
    Ok(Some((base, forced)))
}

/// How the baseline's --workload program differs from this run's, if both
/// ran one.
fn other_workload(base: &BenchResult, args: &BenchArgs) -> Result<Option<String>> {
    let (Some(b), Some(p)) = (&base.options.workload, &args.workload) else {
        return Ok(None);
    };
    let now = match &args.workload_sha256 {
        Some(h) => h.clone(),
        None => base::digest::sha256_file(p)?,
    };
    let short = |h: &str| h.chars().take(12).collect::<String>();
    Ok((now != b.sha256).then(|| {
        format!(
            "the baseline's workload was another program ({} sha256 {}…, now {} sha256 {}…)",
            b.path,
            short(&b.sha256),
            p.display(),
            short(&now)
        )
    }))
}
