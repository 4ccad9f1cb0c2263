//! SIGINT and SIGTERM: the run stops at the next check, prints what it has
//! and removes its work directory on the way out (README: exit code 1).
use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc, OnceLock,
};

use anyhow::{Context, Result};
use signal_hook::consts::{SIGINT, SIGTERM};

/// The flag of `Stop::on_signals`, for the checks inside ops' loops.
static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Iterations of an op's loop between two looks at the flag: one branch per
/// iteration and a load per this many (nothing measurable), which bounds a
/// stop's delay to this many operations.
const CHECK_EVERY: u64 = 1 << 14;

/// In an op's loop, at iteration `i`: an error once SIGINT or SIGTERM came.
pub fn check_loop(i: u64) -> anyhow::Result<()> {
    if i % CHECK_EVERY == CHECK_EVERY - 1 && requested_now() {
        anyhow::bail!("interrupted");
    }
    Ok(())
}

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
