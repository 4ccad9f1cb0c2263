//! Standard output for every subcommand: a reader that went away (`| head`)
//! ends the output quietly; one that cannot take it (`> /dev/full`) is one
//! line and exit 1, never a panic.
use std::io::{ErrorKind, Write};

use anyhow::Result;

use super::error::{with_code, EXIT_FAILURE};

/// Writes `text` to standard output and flushes it.
pub fn stdout(text: &str) -> Result<()> {
    write_to(&mut std::io::stdout().lock(), text)
}

/// A line on standard error (progress, warnings, the one-line error) that
/// never panics: on a stderr that is full or gone the line is dropped, not
/// the run or what it measured. `eprintln!` would panic (exit 101).
pub fn stderr(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// `eprintln!` through [`stderr`]: never a panic.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::output::stderr(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `stdout` with a newline after `text`.
pub fn line(text: &str) -> Result<()> {
    stdout(&format!("{text}\n"))
}

fn write_to(out: &mut impl Write, text: &str) -> Result<()> {
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != ErrorKind::BrokenPipe => Err(with_code(
            EXIT_FAILURE,
            format!("cannot write to standard output: {e}"),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{exit_code, one_line};

    #[test]
    fn a_full_disk_is_one_line_and_a_closed_pipe_is_not_an_error() {
        let mut full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let err = write_to(&mut full, "x\n").unwrap_err();
        assert_eq!(exit_code(&err), EXIT_FAILURE);
        assert!(
            one_line(&err).starts_with("cannot write to standard output: No space left"),
            "{}",
            one_line(&err)
        );
        let (mut writer, reader) = std::os::unix::net::UnixStream::pair().unwrap();
        drop(reader);
        write_to(&mut writer, "x\n").unwrap();
    }
}
