//! A run's stdout and stderr: one pipe, held for the op's life and drained
//! by the bench while the run goes on. Nothing reaches a disk; the last
//! bytes are kept for a failure to quote (escaped, bounded), and a run that
//! writes more than [`MAX_OUTPUT_BYTES`] is told so at once (the op then
//! kills it): a program that prints without end is not a benchmark.
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use anyhow::{bail, Result};

/// Output one run may write before it is killed.
pub const MAX_OUTPUT_BYTES: u64 = 64 << 20;
/// Bytes of a run's output kept for a failure to quote.
const TAIL_BYTES: usize = 2048;
/// Characters of the escaped tail a reason quotes.
const TAIL_CHARS: usize = 600;

pub struct Capture {
    /// Non-blocking: a drain never waits.
    read: OwnedFd,
    /// The runs' stdout and stderr (dup2'd into each run).
    write: OwnedFd,
    /// The end of this run's output, at most twice TAIL_BYTES.
    tail: Vec<u8>,
    run_bytes: u64,
    buf: Vec<u8>,
}

impl Capture {
    pub fn new() -> Result<Self> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two descriptors, owned below.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            bail!(
                "a pipe for the workload's output: {}",
                std::io::Error::last_os_error()
            );
        }
        // SAFETY: pipe2 returned them, nobody else owns them.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // The write end blocks in the runs (their stdout is no longer
        // non-blocking); only the bench's reads must not wait.
        // SAFETY: fcntl on a descriptor we own.
        unsafe { libc::fcntl(write.as_raw_fd(), libc::F_SETFL, 0) };
        Ok(Self {
            read,
            write,
            tail: Vec::new(),
            run_bytes: 0,
            buf: vec![0; 64 << 10],
        })
    }

    pub fn read_fd(&self) -> RawFd {
        self.read.as_raw_fd()
    }

    pub fn write_fd(&self) -> RawFd {
        self.write.as_raw_fd()
    }

    /// A new run: the last one's bytes are forgotten.
    pub fn begin(&mut self) {
        self.tail.clear();
        self.run_bytes = 0;
    }

    /// Reads what the pipe holds now; false once the run has written more
    /// than [`MAX_OUTPUT_BYTES`].
    pub fn drain(&mut self) -> Result<bool> {
        loop {
            // SAFETY: reading into our own buffer of that length.
            let n = unsafe {
                libc::read(
                    self.read.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                )
            };
            if n > 0 {
                self.keep(n as usize);
                if self.run_bytes > MAX_OUTPUT_BYTES {
                    return Ok(false);
                }
                continue;
            }
            let e = std::io::Error::last_os_error();
            match (n, e.kind()) {
                (0, _) | (_, std::io::ErrorKind::WouldBlock) => return Ok(true),
                (_, std::io::ErrorKind::Interrupted) => continue,
                _ => bail!("reading the workload's output: {e}"),
            }
        }
    }

    fn keep(&mut self, n: usize) {
        self.run_bytes += n as u64;
        self.tail.extend_from_slice(&self.buf[..n]);
        if self.tail.len() > 2 * TAIL_BYTES {
            self.tail.drain(..self.tail.len() - TAIL_BYTES);
        }
    }

    /// What a failure adds: ": its output ended: …" (escaped, its last
    /// lines joined with " | "), or ": it printed nothing".
    pub fn tail_text(&self) -> String {
        let end = &self.tail[self.tail.len().saturating_sub(TAIL_BYTES)..];
        let lines: Vec<String> = end
            .split(|&b| b == b'\n')
            .map(<[u8]>::trim_ascii)
            .filter(|l| !l.is_empty())
            .map(|l| base::text::escaped(l, usize::MAX))
            .collect();
        if lines.is_empty() {
            return ": it printed nothing".into();
        }
        let text = lines.join(" | ");
        let chars = text.chars().count();
        let text = match chars > TAIL_CHARS {
            true => format!(
                "…{}",
                text.chars().skip(chars - TAIL_CHARS).collect::<String>()
            ),
            false => text,
        };
        format!(": its output ended: {text}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(c: &Capture, bytes: &[u8]) {
        // SAFETY: writing our own bytes to our own pipe.
        let n = unsafe { libc::write(c.write_fd(), bytes.as_ptr().cast(), bytes.len()) };
        assert_eq!(n, bytes.len() as isize);
    }

    #[test]
    fn the_tail_is_escaped_bounded_and_from_the_end() {
        let mut c = Capture::new().unwrap();
        c.begin();
        write(&c, b"first\n\x1b[2K\rall fine \xff\n");
        assert!(c.drain().unwrap());
        assert_eq!(
            c.tail_text(),
            ": its output ended: first | \\u{1b}[2K\\rall fine \\xff"
        );
        c.begin();
        assert_eq!(c.tail_text(), ": it printed nothing");
        write(&c, &[b'x'; 5000]);
        assert!(c.drain().unwrap());
        let t = c.tail_text();
        assert!(t.ends_with("xxx") && t.contains('…'), "{t}");
        assert!(t.chars().count() < TAIL_CHARS + 30, "{}", t.len());
    }
}
