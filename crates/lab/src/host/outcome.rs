//! How a matrix ended, for the command line: where its results are, what it
//! ran (the tables show those kernels and configurations), and its exit.
use std::{fs, path::PathBuf};

use anyhow::Result;

use crate::results::{CellResult, CellStatus};
use base::error::{with_code, EXIT_FAILURE, EXIT_OK};

pub struct RunOutcome {
    /// The results directory.
    pub results: PathBuf,
    /// The configurations, in the order asked, and the kernel series.
    pub configs: Vec<String>,
    pub kernels: Vec<String>,
    /// The cells this run recorded.
    pub cells: Vec<CellResult>,
    pub interrupted: bool,
    /// Why no further cell started (no room for one), if that happened.
    pub stopped: Option<anyhow::Error>,
    /// The first result or file of the run that could not be written.
    pub write_error: Option<anyhow::Error>,
}

impl RunOutcome {
    /// Tables, unless the run was interrupted before any cell finished or
    /// the directory holds no cell (none could be written).
    pub fn has_tables(&self) -> bool {
        let any_cell = fs::read_dir(self.results.join("cells")).is_ok_and(|d| {
            d.flatten()
                .any(|e| e.path().extension().is_some_and(|x| x == "json"))
        });
        any_cell && !(self.interrupted && self.cells.is_empty())
    }

    /// Records a file of the run that could not be written (the first counts).
    pub fn write_failed(&mut self, e: anyhow::Error) {
        self.write_error.get_or_insert(e);
    }

    /// Lists the failed cells and where the results are (stderr); returns
    /// the exit code, or the error that ends the run.
    pub fn finish(self) -> Result<i32> {
        let bad: Vec<&CellResult> = self
            .cells
            .iter()
            .filter(|c| matches!(c.status, CellStatus::Failed | CellStatus::ProofFailed))
            .collect();
        for c in &bad {
            base::say!(
                "lsmpmon: cell {} {} ({} CPU): {}: {} (log: {})",
                c.kernel.series,
                c.config.name,
                c.options.cpus,
                c.status,
                c.reason.as_deref().unwrap_or(""),
                c.log_path(&self.results).display()
            );
        }
        base::say!("lsmpmon: results in {}", self.results.display());
        if let Some(e) = self.write_error {
            return Err(e);
        }
        if self.interrupted {
            return Err(with_code(
                EXIT_FAILURE,
                format!(
                    "interrupted: {} finished cell(s) kept in {}",
                    self.cells.len(),
                    self.results.display()
                ),
            ));
        }
        if let Some(e) = self.stopped {
            return Err(e.context(format!(
                "stopped after {} cell(s): no further cell started",
                self.cells.len()
            )));
        }
        if !bad.is_empty() {
            return Err(with_code(
                EXIT_FAILURE,
                format!(
                    "{} of {} cell(s) failed (above)",
                    bad.len(),
                    self.cells.len()
                ),
            ));
        }
        Ok(EXIT_OK)
    }
}
