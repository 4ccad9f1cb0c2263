//! Runs a matrix's cells on a few threads, one guest each; every finished
//! cell is written as it ends. Before a cell boots, the results directory
//! must have the room it needs: when it has not, no further cell starts.
use std::sync::{
    atomic::{AtomicBool, Ordering},
    Mutex, MutexGuard,
};

use crate::{
    host::cell::{self, CellJob},
    host::progress::Progress,
    host::save,
    host::space,
    results::{CellResult, CellStatus, ResultsDir},
};

/// What the threads did: the cells they recorded, the first result that
/// could not be written, and why they stopped starting cells, if they did.
pub struct Ran {
    pub cells: Vec<CellResult>,
    pub write_error: Option<anyhow::Error>,
    pub stopped: Option<anyhow::Error>,
}

/// Shared between the threads.
struct Shared<'a> {
    dir: &'a ResultsDir,
    progress: &'a Progress,
    cancel: &'a AtomicBool,
    /// Set when the results directory has no room for another cell.
    full: AtomicBool,
    done: Mutex<Vec<CellResult>>,
    write_error: Mutex<Option<anyhow::Error>>,
    stopped: Mutex<Option<anyhow::Error>>,
}

pub fn run_jobs(
    jobs: Vec<(CellJob, CellResult)>,
    threads: Option<u32>,
    dir: &ResultsDir,
    progress: &Progress,
    cancel: &AtomicBool,
) -> Ran {
    let n = threads
        .map(|n| n as usize)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .min(jobs.len().max(1));
    let queue = Mutex::new(jobs.into_iter());
    let shared = Shared {
        dir,
        progress,
        cancel,
        full: AtomicBool::new(false),
        done: Mutex::new(Vec::new()),
        write_error: Mutex::new(None),
        stopped: Mutex::new(None),
    };
    std::thread::scope(|s| {
        for _ in 0..n {
            s.spawn(|| loop {
                if cancel.load(Ordering::SeqCst) || shared.full.load(Ordering::SeqCst) {
                    break;
                }
                let next = lock(&queue).next();
                let Some((job, base)) = next else { break };
                run_one(&job, base, &shared);
            });
        }
    });
    Ran {
        cells: shared.done.into_inner().unwrap_or_else(|p| p.into_inner()),
        write_error: shared
            .write_error
            .into_inner()
            .unwrap_or_else(|p| p.into_inner()),
        stopped: shared
            .stopped
            .into_inner()
            .unwrap_or_else(|p| p.into_inner()),
    }
}

/// Boots one cell (if there is room for it) and records its result.
fn run_one(job: &CellJob, mut base: CellResult, shared: &Shared) {
    if let Err(e) = space::check(&shared.dir.root) {
        shared.full.store(true, Ordering::SeqCst);
        lock(&shared.stopped).get_or_insert(e);
        return;
    }
    let log_dir = shared.dir.log_dir(&base.id);
    base.log_dir = crate::results::log_rel(&base.id);
    let label = match job.machine.cpus {
        1 => format!("{} {}", job.kernel.series, job.config.name),
        n => format!("{} {} {n}cpu", job.kernel.series, job.config.name),
    };
    let line = shared.progress.start(&label);
    let r = cell::run(job, base, &log_dir, &|l| line.update(l), shared.cancel);
    shared.progress.finished(&r);
    if r.status == CellStatus::Interrupted {
        return;
    }
    // One writer at a time: the index is rebuilt from every cell.
    let mut done = lock(&shared.done);
    if let Err(e) = save::cell(shared.dir, &r, &std::env::temp_dir()) {
        lock(&shared.write_error).get_or_insert(e);
    }
    done.push(r);
}

/// A poisoned lock still guards valid data here (a panicking cell thread
/// cannot leave a half-pushed Vec).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
