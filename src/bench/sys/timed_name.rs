//! The task name the timed regions run under (`bench --timed-name`), so
//! that a trace filtered on that name (`trace --comm`) counts the op's own
//! calls: every `run` of the op, calibration and warm-up included, and the
//! op's helper processes (which serve only the op once started), but not
//! the setup between runs (the files a delete op deletes are made outside).
use std::sync::OnceLock;

/// The kernel keeps 15 bytes of a task's name.
pub const MAX_LEN: usize = 15;

static NAME: OnceLock<[u8; 16]> = OnceLock::new();

/// Sets the name for this process (once); refused if longer than the
/// kernel keeps or holding a NUL.
pub fn set(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_LEN || name.contains('\0') {
        return Err(format!(
            "--timed-name '{}': 1 to {MAX_LEN} bytes, no NUL",
            name.escape_debug()
        ));
    }
    let mut b = [0u8; 16];
    b[..name.len()].copy_from_slice(name.as_bytes());
    NAME.set(b)
        .map_err(|_| "--timed-name set twice".to_string())
}

fn set_task_name(name: &[u8; 16]) {
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
    unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
}

fn task_name() -> [u8; 16] {
    let mut b = [0u8; 16];
    // SAFETY: PR_GET_NAME writes at most 16 bytes.
    unsafe { libc::prctl(libc::PR_GET_NAME, b.as_mut_ptr()) };
    b
}

/// Whether the timed regions run under a name of their own.
pub fn is_set() -> bool {
    NAME.get().is_some()
}

/// Runs `f` under the timed name (if one is set), then restores the
/// task's own name.
pub fn timed<T>(f: impl FnOnce() -> T) -> T {
    let Some(name) = NAME.get() else { return f() };
    let own = task_name();
    set_task_name(name);
    let out = f();
    set_task_name(&own);
    out
}

/// In a new helper process: take the timed name for good (a helper only
/// serves the op's runs). Async-signal-safe: one prctl.
pub fn helper() {
    if let Some(name) = NAME.get() {
        set_task_name(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_kernel_cannot_keep_are_refused() {
        assert!(set("").is_err());
        assert!(set("sixteen-bytes-xx").is_err());
        assert!(set("a\0b").is_err());
    }
}
