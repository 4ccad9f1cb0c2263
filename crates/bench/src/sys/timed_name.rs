//! `bench --untimed-name NAME`: the bench runs under NAME except while an
//! op runs (calibration and warm-up included), when it takes its own name
//! back; helper processes take its own name for good (they only serve the
//! op). A trace filtered on its own name (`trace --comm`) then counts the
//! op's own calls and not the setup between runs (the files a delete op
//! deletes are made under NAME), and policies that recognise the workload
//! by its name (bpf-lsm, mac-path, mac-inode) see it exactly while it is
//! measured. Only the few calls between exec and `set` (and the `prctl`s
//! themselves) are counted besides.
use std::sync::OnceLock;

use base::task_name::{self, Comm};

/// (own name, untimed name)
static NAMES: OnceLock<(Comm, Comm)> = OnceLock::new();

/// Takes the untimed name for this process (once). The caller validated it.
pub fn set(untimed: &str) {
    let names = (task_name::get(), task_name::comm(untimed));
    if NAMES.set(names).is_ok() {
        task_name::set(&names.1);
    }
}

/// Whether the bench runs under an untimed name.
pub fn is_set() -> bool {
    NAMES.get().is_some()
}

/// Runs `f` under the bench's own name (if it has an untimed one).
pub fn timed<T>(f: impl FnOnce() -> T) -> T {
    let Some((own, untimed)) = NAMES.get() else {
        return f();
    };
    task_name::set(own);
    let out = f();
    task_name::set(untimed);
    out
}

/// In a new helper process: take the bench's own name for good.
/// Async-signal-safe: one prctl.
pub fn helper() {
    if let Some((own, _)) = NAMES.get() {
        task_name::set(own);
    }
}
