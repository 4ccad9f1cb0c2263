//! The batch files (plans, submission records, tagged cells): read as a
//! regular file of bounded size into a typed value, written atomically.
use std::path::Path;

use anyhow::Result;
use serde::{de::DeserializeOwned, Serialize};

use base::{error::usage, secure_fs};

/// A plan for thousands of cells is a few MiB; a cell with a full trace too.
const MAX_BYTES: u64 = 256 << 20;

/// `what` names the file's kind in the one-line error ("a lab plan").
pub fn read_json<T: DeserializeOwned>(path: &Path, what: &str) -> Result<T> {
    read_json_max(path, what, MAX_BYTES)
}

/// `read_json` of a file of at most `max_bytes`.
pub fn read_json_max<T: DeserializeOwned>(path: &Path, what: &str, max_bytes: u64) -> Result<T> {
    let bytes = secure_fs::read_regular(what, path, max_bytes)?;
    serde_json::from_slice(&bytes)
        .map_err(|e| usage(format!("cannot read {} as {what}: {e}", path.display())))
}

pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value)? + "\n";
    secure_fs::write_atomic(path, text.as_bytes())
}
