//! Every write to standard output goes through here: a reader that went away
//! (`| head`) ends the output quietly, any other failure (`> /dev/full`) is
//! one line and exit 1 — never a panic, as `println!` would give.
use std::io::{ErrorKind, Write};

use anyhow::Result;

use super::error::{with_code, EXIT_FAILURE};

/// Writes `text` to standard output and flushes it.
pub fn stdout(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != ErrorKind::BrokenPipe => Err(with_code(
            EXIT_FAILURE,
            format!("cannot write to standard output: {e}"),
        )),
        _ => Ok(()),
    }
}

/// `stdout` with a newline after `text`.
pub fn line(text: &str) -> Result<()> {
    stdout(&format!("{text}\n"))
}
