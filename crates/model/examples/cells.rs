//! Another program reading lsmpmon's results through this crate alone:
//! every cell of a results directory, one line each, with its median for an op.
//!
//! cargo run -p lsmpmon-model --example cells -- results/atlas/cells stat
use std::path::Path;

use lsmpmon_model::read::{self, AnyResult};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, op] = args.as_slice() else {
        anyhow::bail!("usage: cells DIR OP (a results directory's cells/, an op name)");
    };
    let mut paths: Vec<_> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    paths.sort();
    for path in paths
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
    {
        println!("{}", line(path, op)?);
    }
    Ok(())
}

fn line(path: &Path, op: &str) -> anyhow::Result<String> {
    let AnyResult::Cell(cell) = read::load("", path)? else {
        anyhow::bail!("{}: not a cell", path.display());
    };
    let median_ns = cell
        .guest
        .as_ref()
        .and_then(|g| g.bench.as_ref())
        .and_then(|b| b.op(op))
        .map(|r| format!("{:.1} {:?}", r.summary.median, r.unit));
    Ok(format!(
        "{} {} {:?}: {}",
        cell.kernel.series,
        cell.config.name,
        cell.status,
        median_ns.unwrap_or_else(|| "-".into())
    ))
}
