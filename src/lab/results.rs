//! Cell results and the results directory. A cell is one JSON file under
//! `cells/`; the index is rebuilt from whatever files are there, so cells run
//! on other machines merge by copying them in. Every write is atomic.
use std::{
    fs,
    path::{Path, PathBuf},
};

use std::{io::Read, os::unix::fs::MetadataExt};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::{guest::Report, spec::ProofKind};

pub const CELL_SCHEMA: &str = "lsmpmon.lab-cell/1";
pub const INDEX_SCHEMA: &str = "lsmpmon.lab-index/1";

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CellStatus {
    /// Proved, then measured.
    Passed,
    /// The configuration did not prove itself: nothing was measured.
    ProofFailed,
    /// The kernel cannot run the configuration (reason given).
    NotApplicable,
    /// Boot, setup, benchmark or guest failure (reason and log given).
    Failed,
    /// Stopped by Ctrl-C.
    Interrupted,
}

pub use crate::model::KernelRef;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConfigRef {
    pub name: String,
    pub description: String,
    pub dir: String,
    /// sha256 over the configuration directory (names and contents).
    pub hash: String,
    pub lsm: Option<String>,
    pub append: String,
    pub proof: ProofKind,
    /// Whose own functions fill the Table 4 form.
    pub measured_lsms: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunOptions {
    pub ops: String,
    pub samples: usize,
    pub sample_ms: f64,
    /// Fixed operations per sample (`--iterations`), if any.
    #[serde(default)]
    pub iterations: Option<u64>,
    pub trace: bool,
    pub memory_mb: u32,
    pub accel: String,
    pub icount: String,
    pub rtc: String,
    pub kaslr: bool,
    pub timeout_s: u64,
    /// Where the benchmark's files lived (cells from before it was an option: the default).
    #[serde(default = "default_bench_dir")]
    pub bench_dir: String,
    /// Guest CPUs (cells from before the option ran on one).
    #[serde(default = "one_cpu")]
    pub cpus: u32,
}

pub const DEFAULT_BENCH_DIR: &str = "/tmp/lsmpmon-bench";

fn default_bench_dir() -> String {
    DEFAULT_BENCH_DIR.into()
}

fn one_cpu() -> u32 {
    1
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StageTime {
    pub name: String,
    pub wall_s: f64,
    /// The guest's own (virtual) time for the stage, where it reported one.
    pub guest_ms: Option<f64>,
}

impl StageTime {
    pub fn wall(name: &str, wall_s: f64) -> Self {
        Self {
            name: name.into(),
            wall_s,
            guest_ms: None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellResult {
    pub schema: String,
    pub id: String,
    pub status: CellStatus,
    pub reason: Option<String>,
    pub kernel: KernelRef,
    pub config: ConfigRef,
    pub options: RunOptions,
    /// "virtual" (QEMU TCG -icount: 1 ns ≈ one guest instruction) or "real".
    pub time: String,
    pub lsmpmon_version: String,
    pub hostname: String,
    pub host_cpu: String,
    pub started_unix_s: u64,
    pub wall_s: f64,
    pub stages: Vec<StageTime>,
    /// Bytes the configuration adds to the guest (its files, programs, libraries).
    pub bytes_added: u64,
    /// The guest's console log and run files.
    pub log_dir: String,
    pub guest: Option<Report>,
    /// The web server's package, for cells running the `web` ops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub web_server: Option<super::nginx::PackageRef>,
    /// The compiler's package, for cells running the `build` op.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiler: Option<super::nginx::PackageRef>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexEntry {
    pub id: String,
    pub file: String,
    pub kernel: String,
    pub config: String,
    pub status: CellStatus,
    pub reason: Option<String>,
    pub hostname: String,
    pub started_unix_s: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Index {
    pub schema: String,
    pub cells: Vec<IndexEntry>,
}

pub struct ResultsDir {
    pub root: PathBuf,
}

impl ResultsDir {
    pub fn open(root: &Path) -> Result<Self> {
        fs::create_dir_all(root.join("cells")).map_err(|e| {
            crate::base::error::usage(format!(
                "cannot create results directory {}: {e}: choose another with --results",
                root.display()
            ))
        })?;
        // lsmpmon writes here as root: a directory someone else controls could
        // redirect those writes.
        // SAFETY: plain query.
        let euid = unsafe { libc::geteuid() };
        for d in [root.to_path_buf(), root.join("cells")] {
            let m = fs::symlink_metadata(&d)?;
            if !m.is_dir() || m.uid() != euid || m.mode() & 0o022 != 0 {
                return Err(crate::base::error::usage(format!(
                    "results directory {} is not a directory owned by you and writable only by you: choose another with --results",
                    d.display()
                )));
            }
        }
        Ok(Self {
            root: root.to_path_buf(),
        })
    }

    pub fn log_dir(&self, id: &str) -> PathBuf {
        self.root.join("logs").join(id)
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

    pub fn write_index(&self) -> Result<Index> {
        let (cells, _) = self.cells()?;
        let index = Index {
            schema: INDEX_SCHEMA.into(),
            cells: cells
                .iter()
                .map(|c| IndexEntry {
                    id: c.id.clone(),
                    file: format!("cells/{}.json", c.id),
                    kernel: c.kernel.series.clone(),
                    config: c.config.name.clone(),
                    status: c.status,
                    reason: c.reason.clone(),
                    hostname: c.hostname.clone(),
                    started_unix_s: c.started_unix_s,
                })
                .collect(),
        };
        write_atomic(
            &self.root.join("index.json"),
            &(serde_json::to_string_pretty(&index)? + "\n"),
        )?;
        Ok(index)
    }
}

pub fn read_cells(dir: &Path) -> Result<(Vec<CellResult>, Vec<String>)> {
    let mut cells = Vec::new();
    let mut bad = Vec::new();
    let mut paths: Vec<PathBuf> = fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    for p in paths {
        match read_capped(&p).and_then(|b| Ok(serde_json::from_slice::<CellResult>(&b)?)) {
            Ok(c) if c.schema == CELL_SCHEMA => cells.push(c),
            Ok(c) => bad.push(format!(
                "{}: schema {} (want {CELL_SCHEMA})",
                p.display(),
                c.schema
            )),
            Err(e) => bad.push(format!("{}: {e}", p.display())),
        }
    }
    cells.sort_by_key(|c| c.started_unix_s);
    Ok((cells, bad))
}

/// A cell file, refused beyond 256 MiB (a full trace is a few MiB).
fn read_capped(p: &Path) -> Result<Vec<u8>> {
    const MAX: u64 = 256 << 20;
    let mut buf = Vec::new();
    fs::File::open(p)?.take(MAX + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > MAX {
        anyhow::bail!("larger than 256 MiB");
    }
    Ok(buf)
}

/// Written to a temporary file in the same directory, then renamed.
pub fn write_atomic(path: &Path, text: &str) -> Result<()> {
    crate::base::secure_fs::write_atomic(path, text.as_bytes())
}
