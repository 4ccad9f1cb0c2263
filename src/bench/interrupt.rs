//! SIGINT and SIGTERM: the run stops at the next check, prints what it has
//! and removes its work directory on the way out (README: exit code 1).
use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};

use anyhow::{Context, Result};
use signal_hook::consts::{SIGINT, SIGTERM};

/// Set by SIGINT or SIGTERM.
#[derive(Clone)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    /// From now on SIGINT and SIGTERM set the flag instead of ending bench.
    pub fn on_signals() -> Result<Self> {
        let flag = Arc::new(AtomicBool::new(false));
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
