//! A cell result as `lab cell` writes it: the cell `lab run` writes, plus
//! the plan it belongs to (which plan, which of its cells).
use std::{fs, path::Path};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::files;
use crate::lab::results::{CellResult, CELL_SCHEMA};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PlanRef {
    pub id: String,
    pub index: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaggedCell {
    #[serde(flatten)]
    pub cell: CellResult,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanRef>,
    /// The file it was read from.
    #[serde(skip)]
    pub file: std::path::PathBuf,
}

/// The cell file `DIR/cells/<id>.json`.
pub fn cell_path(results: &Path, id: &str) -> std::path::PathBuf {
    results.join("cells").join(format!("{id}.json"))
}

pub fn write(results: &Path, cell: &TaggedCell) -> Result<()> {
    files::write_json(&cell_path(results, &cell.cell.id), cell)
}

/// Every cell of `results/cells`, with its file name; files that are not
/// cells of this schema are returned as one line each.
pub fn read_all(results: &Path) -> Result<(Vec<TaggedCell>, Vec<String>)> {
    let dir = results.join("cells");
    let mut paths: Vec<_> = match fs::read_dir(&dir) {
        Ok(d) => d
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(anyhow::anyhow!("reading {}: {e}", dir.display())),
    };
    paths.sort();
    let mut cells = Vec::new();
    let mut bad = Vec::new();
    for p in paths {
        match files::read_json::<TaggedCell>(&p, "a lab cell") {
            Ok(c) if c.cell.schema == CELL_SCHEMA => cells.push(TaggedCell { file: p, ..c }),
            Ok(c) => bad.push(format!(
                "{}: schema {} (want {CELL_SCHEMA})",
                p.display(),
                c.cell.schema
            )),
            Err(e) => bad.push(crate::base::error::one_line(&e)),
        }
    }
    cells.sort_by_key(|c| c.cell.started_unix_s);
    Ok((cells, bad))
}
