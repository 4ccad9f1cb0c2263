//! A finished cell into the results directory, or, when it cannot be
//! written there (a full disk, say), into a file elsewhere or onto stderr:
//! nothing measured is lost, and the line says where it went.
use std::{io::Write, os::unix::fs::OpenOptionsExt, path::Path};

use anyhow::{Context, Result};

use crate::results::{CellResult, ResultsDir};
use base::error::one_line;

/// Writes `r` and rebuilds the index; a result that cannot be written is
/// kept in `elsewhere` (a new file of its own) or printed as JSON.
pub fn cell(dir: &ResultsDir, r: &CellResult, elsewhere: &Path) -> Result<()> {
    if let Err(e) = dir.write_cell(r) {
        base::say!(
            "lsmpmon: cell {}: cannot write its result: {}",
            r.id,
            one_line(&e)
        );
        keep_elsewhere(r, &dir.root, elsewhere);
        return Err(e.context("writing a cell result (the others are kept)"));
    }
    dir.write_index().map(|_| ()).map_err(|e| {
        base::say!("lsmpmon: cannot update the index: {}", one_line(&e));
        e.context("writing index.json (the cells are kept)")
    })
}

/// `elsewhere/lsmpmon-cell-<id>.json` (0600, never an existing file), else
/// the JSON on stderr.
fn keep_elsewhere(r: &CellResult, results: &Path, elsewhere: &Path) {
    let json = serde_json::to_string_pretty(r).unwrap_or_default() + "\n";
    let path = elsewhere.join(format!("lsmpmon-cell-{}.json", r.id));
    let kept = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o600)
        .open(&path)
        .and_then(|mut f| {
            let written = f.write_all(json.as_bytes()).and_then(|()| f.sync_all());
            if written.is_err() {
                // Ours, half-written: not a result to be found later.
                let _ = std::fs::remove_file(&path);
            }
            written
        })
        .with_context(|| format!("writing {}", path.display()));
    match kept {
        Ok(()) => base::say!(
            "lsmpmon: cell {}: its result is kept in {} (move it into {} when there is room)",
            r.id,
            path.display(),
            results.join("cells").display()
        ),
        Err(e) => {
            base::say!(
                "lsmpmon: cell {}: nor could it be kept elsewhere ({}): its result as JSON follows",
                r.id,
                one_line(&e)
            );
            base::say!("{}", json.trim_end());
        }
    }
}
