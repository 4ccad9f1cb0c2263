//! What SIGINT and SIGTERM do to `vm run` (README: exit code 1, one line).
//! Until the guest is about to start (the kernel fetch), lsmpmon ends at once
//! (its apt-get and dpkg-deb die with it, the fetch lock goes with the
//! process); from then on a flag asks the guest's supervisor to stop QEMU.
use std::sync::{atomic::AtomicBool, Arc};

use anyhow::Result;
use signal_hook::{
    consts::{SIGINT, SIGTERM},
    low_level, SigId,
};

use base::error::EXIT_FAILURE;

const MESSAGE: &[u8] = b"lsmpmon: error: interrupted before the guest started\n";

/// Exiting on SIGINT/SIGTERM, until `into_stop_flag`.
pub struct ExitNow {
    ids: Vec<SigId>,
}

pub fn exit_now() -> Result<ExitNow> {
    let mut ids = Vec::new();
    for sig in [SIGINT, SIGTERM] {
        // SAFETY: write(2) and _exit(2) are async-signal-safe.
        let id = unsafe {
            low_level::register(sig, || {
                libc::write(2, MESSAGE.as_ptr().cast(), MESSAGE.len());
                libc::_exit(EXIT_FAILURE);
            })
        }?;
        ids.push(id);
    }
    Ok(ExitNow { ids })
}

impl ExitNow {
    /// From now on SIGINT/SIGTERM set the returned flag; a second one ends
    /// lsmpmon at once (QEMU dies with it).
    pub fn into_stop_flag(self) -> Result<Arc<AtomicBool>> {
        let stop = Arc::new(AtomicBool::new(false));
        for sig in [SIGINT, SIGTERM] {
            signal_hook::flag::register_conditional_shutdown(sig, EXIT_FAILURE, Arc::clone(&stop))?;
            signal_hook::flag::register(sig, Arc::clone(&stop))?;
        }
        // Only now: no moment without a handler.
        for id in self.ids {
            low_level::unregister(id);
        }
        Ok(stop)
    }
}
