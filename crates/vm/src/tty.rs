//! `vm run --tty`: COMMAND gets the user's terminal. The guest's console
//! port (ttyS0) is QEMU's stdio instead of a log file, and the guest makes
//! it COMMAND's controlling terminal with the host terminal's size and
//! `TERM`. The terminal is raw while the guest runs (keys such as Ctrl-C go
//! to COMMAND) and restored after, however QEMU ends.
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use base::error::usage;

/// The guest's console port, which `--tty` hands to COMMAND.
pub const GUEST_TTY: &str = "/dev/ttyS0";

/// The host terminal as the guest should show it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Tty {
    pub rows: u16,
    pub cols: u16,
    pub term: String,
}

/// The terminal on lsmpmon's stdin and stdout, or why there is none.
pub fn host() -> Result<Tty> {
    // SAFETY: isatty and TIOCGWINSZ on our own descriptors; ws is plain data.
    let ws = unsafe {
        if libc::isatty(0) != 1 || libc::isatty(1) != 1 {
            return Err(usage(
                "--tty needs a terminal on stdin and stdout; run without --tty to capture output",
            ));
        }
        let mut ws: libc::winsize = std::mem::zeroed();
        libc::ioctl(1, libc::TIOCGWINSZ, &mut ws);
        ws
    };
    Ok(Tty {
        rows: ws.ws_row,
        cols: ws.ws_col,
        term: std::env::var("TERM").unwrap_or_else(|_| "vt100".into()),
    })
}

/// The host terminal's settings, put back when dropped (QEMU makes it raw
/// and may be killed before it can restore it).
pub struct Restore(Option<libc::termios>);

impl Restore {
    pub fn save() -> Restore {
        // SAFETY: termios is plain data; fd 0 is ours.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            Restore((libc::tcgetattr(0, &mut t) == 0).then_some(t))
        }
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        if let Some(t) = &self.0 {
            // SAFETY: as in save().
            unsafe { libc::tcsetattr(0, libc::TCSANOW, t) };
        }
    }
}

/// In the guest: COMMAND on the console port as its controlling terminal,
/// sized as the host's, in a session of its own.
pub fn attach(cmd: &mut std::process::Command, tty: &Tty) -> Result<()> {
    let port = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(GUEST_TTY)?;
    let ws = libc::winsize {
        ws_row: tty.rows,
        ws_col: tty.cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ with a valid winsize on an open tty.
    unsafe { libc::ioctl(port.as_raw_fd(), libc::TIOCSWINSZ, &ws) };
    cmd.env("TERM", &tty.term)
        .stdin(port.try_clone()?)
        .stdout(port.try_clone()?)
        .stderr(port);
    // SAFETY: async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(())
}
