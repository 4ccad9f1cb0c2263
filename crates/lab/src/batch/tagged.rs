//! The cells of a results directory with the files they came from; a
//! cell `lab cell` ran names its plan (`CellResult::plan`).
use std::{fs, path::Path};

use anyhow::Result;

use super::files;
use crate::results::{CellResult, CELL_SCHEMA};
use model::read::load_as;

pub use model::cell::PlanRef;

/// A cell and the file it was read from.
#[derive(Debug, Clone)]
pub struct TaggedCell {
    pub cell: CellResult,
    pub file: std::path::PathBuf,
}

impl TaggedCell {
    pub fn plan(&self) -> Option<&PlanRef> {
        self.cell.plan.as_ref()
    }
}

/// The cell file `DIR/cells/<id>.json`.
pub fn cell_path(results: &Path, id: &str) -> std::path::PathBuf {
    results.join("cells").join(format!("{id}.json"))
}

pub fn write(results: &Path, cell: &TaggedCell) -> Result<()> {
    files::write_json(&cell_path(results, &cell.cell.id), &cell.cell)
}

/// Every cell of `results/cells`, with its file name; files that are not
/// cells of this schema are returned as one line each.
pub fn read_all(results: &Path) -> Result<(Vec<TaggedCell>, Vec<String>)> {
    let mut cells = Vec::new();
    let bad = read_each(results, |c| {
        cells.push(c);
        Ok(())
    })?;
    cells.sort_by_key(|c| c.cell.started_unix_s);
    Ok((cells, bad))
}

/// Each cell of `results/cells` handed to `each` as it is read (in file
/// name order), so a caller that keeps less than the whole cell holds one
/// at a time; files that are not cells are returned as one line each.
pub fn read_each(
    results: &Path,
    mut each: impl FnMut(TaggedCell) -> Result<()>,
) -> Result<Vec<String>> {
    let Some(dir) = base::secure_fs::cells_dir(results)? else {
        return Ok(Vec::new());
    };
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
    let mut bad = Vec::new();
    for p in paths {
        let read = base::secure_fs::not_a_link(&p)
            .and_then(|()| load_as::<CellResult>("a lab cell", &p, CELL_SCHEMA, "lab cell"));
        match read {
            Ok(cell) => each(TaggedCell { cell, file: p })?,
            Err(e) => bad.push(base::error::one_line(&e)),
        }
    }
    Ok(bad)
}
