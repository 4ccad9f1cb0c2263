//! SIGINT and SIGTERM: the run stops at the next check, prints what it has
//! and removes its work directory on the way out (README: exit code 1).
use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc, OnceLock,
};

use anyhow::{Context, Result};
use signal_hook::consts::{SIGINT, SIGTERM};

/// The flag of `Stop::on_signals`, for the checks between samples (never
/// inside a timed loop: a look at it there would be part of every figure).
static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Whether SIGINT or SIGTERM came (false before `Stop::on_signals`).
pub fn requested_now() -> bool {
    FLAG.get().is_some_and(|f| f.load(Ordering::SeqCst))
}

/// Set by SIGINT or SIGTERM.
#[derive(Clone)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    /// From now on SIGINT and SIGTERM set the flag instead of ending bench.
    pub fn on_signals() -> Result<Self> {
        let flag = Arc::clone(FLAG.get_or_init(|| Arc::new(AtomicBool::new(false))));
        for sig in [SIGINT, SIGTERM] {
            signal_hook::flag::register(sig, Arc::clone(&flag))
                .context("catching SIGINT and SIGTERM")?;
        }
        Ok(Self(flag))
    }

    pub fn requested(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
