//! Cell results and the results directory. A cell is one JSON file under
//! `cells/`; the index is rebuilt from whatever files are there, so cells run
//! on other machines merge by copying them in. Every write is atomic.
use std::{
    fs,
    path::{Path, PathBuf},
};

use std::os::unix::fs::MetadataExt;

use anyhow::{Context, Result};

pub use model::cell::{
    CellResult, CellStatus, ConfigRef, RunOptions, StageTime, CELL_SCHEMA, DEFAULT_BENCH_DIR,
};
pub use model::index::{Index, IndexEntry, INDEX_SCHEMA};
use model::read::load_as;
pub use model::KernelRef;

/// A cell's log directory, relative to the results directory: committed
/// cells carry no path of the machine that ran them.
pub fn log_rel(id: &str) -> String {
    format!("logs/{id}")
}

pub struct ResultsDir {
    pub root: PathBuf,
}

impl ResultsDir {
    /// The results directory `--results` names (made if missing).
    pub fn open(root: &Path) -> Result<Self> {
        Self::open_as(root, "choose another with --results")
    }

    /// `root` as a results directory, made if missing; `hint` says what the
    /// user can do instead. Nothing is created in a directory that is not
    /// one of ours: root writes here, and a link or someone else's
    /// directory could redirect those writes.
    pub fn open_as(root: &Path, hint: &str) -> Result<Self> {
        let refuse = |d: &Path, why: String| {
            base::error::usage(format!("results directory {}: {why}: {hint}", d.display()))
        };
        let cells = root.join("cells");
        for d in [root, cells.as_path()] {
            match fs::symlink_metadata(d) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => fs::create_dir_all(d)
                    .map_err(|e| refuse(d, format!("cannot be created ({e})")))?,
                Err(e) => return Err(refuse(d, e.to_string())),
            }
            let m = fs::symlink_metadata(d).map_err(|e| refuse(d, e.to_string()))?;
            if m.file_type().is_symlink() {
                return Err(refuse(
                    d,
                    "is a symbolic link: name the directory itself".into(),
                ));
            }
            if !m.is_dir() || m.uid() != base::secure_fs::euid() || m.mode() & 0o022 != 0 {
                return Err(refuse(
                    d,
                    "is not a directory owned by you and writable only by you".into(),
                ));
            }
        }
        Ok(Self {
            root: root.to_path_buf(),
        })
    }

    pub fn log_dir(&self, id: &str) -> PathBuf {
        self.root.join(log_rel(id))
    }

    pub fn write_cell(&self, cell: &CellResult) -> Result<PathBuf> {
        let path = self.root.join("cells").join(format!("{}.json", cell.id));
        write_atomic(&path, &(serde_json::to_string_pretty(cell)? + "\n"))?;
        Ok(path)
    }

    /// Every cell file in the directory (unreadable ones are reported, not fatal).
    pub fn cells(&self) -> Result<(Vec<CellResult>, Vec<String>)> {
        read_cells(&self.root.join("cells"))
    }

    /// The index of every readable cell, each cell read and dropped in
    /// turn (a merge of many cells holds their entries, not the cells).
    pub fn write_index(&self) -> Result<Index> {
        let mut cells: Vec<IndexEntry> = Vec::new();
        for p in cell_files(&self.root.join("cells"))? {
            if let Ok(c) = load_as::<CellResult>("", &p, CELL_SCHEMA, "lab cell") {
                cells.push(IndexEntry {
                    id: c.id.clone(),
                    file: format!("cells/{}.json", c.id),
                    kernel: c.kernel.series,
                    config: c.config.name,
                    status: c.status,
                    reason: c.reason,
                    hostname: c.hostname,
                    started_unix_s: c.started_unix_s,
                });
            }
        }
        cells.sort_by_key(|c| c.started_unix_s);
        let index = Index {
            schema: INDEX_SCHEMA.into(),
            cells,
        };
        write_atomic(
            &self.root.join("index.json"),
            &(serde_json::to_string_pretty(&index)? + "\n"),
        )?;
        Ok(index)
    }
}

/// The regular `*.json` files of a `cells/` directory, by name.
fn cell_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut paths: Vec<PathBuf> = fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    Ok(paths)
}

pub fn read_cells(dir: &Path) -> Result<(Vec<CellResult>, Vec<String>)> {
    let mut cells = Vec::new();
    let mut bad = Vec::new();
    for p in cell_files(dir)? {
        match load_as::<CellResult>("", &p, CELL_SCHEMA, "lab cell") {
            Ok(c) => cells.push(c),
            Err(e) => bad.push(base::error::one_line(&e)),
        }
    }
    cells.sort_by_key(|c| c.started_unix_s);
    Ok((cells, bad))
}

/// Written to a temporary file in the same directory, then renamed.
pub fn write_atomic(path: &Path, text: &str) -> Result<()> {
    base::secure_fs::write_atomic(path, text.as_bytes())
}
