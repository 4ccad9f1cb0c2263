//! Controlling a running trace from another shell, like LSMPMON's securityfs
//! file: `lsmpmon trace ctl enable|disable|reset|dump`. The trace listens on a
//! Unix socket under /run/lsmpmon.
use std::{
    fs,
    io::{BufRead, BufReader, Read, Write},
    os::unix::net::{UnixListener, UnixStream},
    path::{Path, PathBuf},
    time::Duration,
};

use anyhow::{Context, Result};
use clap::ValueEnum;

use crate::error::usage;

pub const SOCKET_DIR: &str = "/run/lsmpmon";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Action {
    /// Start recording (again).
    Enable,
    /// Stop recording; statistics are kept.
    Disable,
    /// Zero every statistic.
    Reset,
    /// Print the statistics so far (the same table or JSON as at the end).
    Dump,
}

impl Action {
    fn word(self) -> &'static str {
        match self {
            Action::Enable => "enable",
            Action::Disable => "disable",
            Action::Reset => "reset",
            Action::Dump => "dump",
        }
    }

    pub fn parse(word: &str) -> Option<Self> {
        [Action::Enable, Action::Disable, Action::Reset, Action::Dump]
            .into_iter()
            .find(|a| a.word() == word)
    }
}

pub fn socket_path(pid: u32) -> PathBuf {
    Path::new(SOCKET_DIR).join(format!("trace-{pid}.sock"))
}

/// The listening side, owned by a running trace; removes its socket on drop.
pub struct Server {
    listener: UnixListener,
    path: PathBuf,
}

/// One request: the action and whether JSON was asked for.
pub struct Request {
    pub action: Action,
    pub json: bool,
    stream: UnixStream,
}

impl Request {
    pub fn reply(mut self, text: &str) {
        let _ = self.stream.write_all(text.as_bytes());
    }
}

impl Server {
    pub fn start() -> Result<Self> {
        fs::create_dir_all(SOCKET_DIR).with_context(|| format!("creating {SOCKET_DIR}"))?;
        let path = socket_path(std::process::id());
        let _ = fs::remove_file(&path);
        let listener = UnixListener::bind(&path)
            .with_context(|| format!("listening on {}", path.display()))?;
        listener.set_nonblocking(true)?;
        Ok(Self { listener, path })
    }

    /// A pending request, if any (never blocks).
    pub fn poll(&self) -> Option<Request> {
        let (stream, _) = self.listener.accept().ok()?;
        stream.set_nonblocking(false).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        let mut line = String::new();
        BufReader::new(&stream).read_line(&mut line).ok()?;
        let mut words = line.split_whitespace();
        let action = words.next().and_then(Action::parse);
        let json = words.any(|w| w == "json");
        match action {
            Some(action) => Some(Request {
                action,
                json,
                stream,
            }),
            None => {
                let mut s = stream;
                let _ = s.write_all(b"error: unknown action\n");
                None
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// The client: sends `action` to the trace with `pid` (or the only one running).
pub fn send(pid: Option<u32>, action: Action, json: bool) -> Result<String> {
    let path = match pid {
        Some(p) => socket_path(p),
        None => {
            let socks: Vec<PathBuf> = fs::read_dir(SOCKET_DIR)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "sock"))
                .collect();
            match socks.as_slice() {
                [one] => one.clone(),
                [] => {
                    return Err(usage(
                        "no running lsmpmon trace found (start one with lsmpmon trace)",
                    ))
                }
                _ => {
                    return Err(usage(format!(
                        "{} traces are running: pick one with --pid ({})",
                        socks.len(),
                        socks
                            .iter()
                            .filter_map(|p| p
                                .file_stem()?
                                .to_str()?
                                .strip_prefix("trace-")
                                .map(String::from))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )))
                }
            }
        }
    };
    let mut stream = UnixStream::connect(&path).map_err(|e| {
        usage(format!(
            "cannot reach the trace at {}: {e} (is it still running?)",
            path.display()
        ))
    })?;
    writeln!(
        stream,
        "{}{}",
        action.word(),
        if json { " json" } else { "" }
    )?;
    stream.shutdown(std::net::Shutdown::Write)?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply)?;
    if let Some(err) = reply.strip_prefix("error: ") {
        anyhow::bail!("trace answered: {}", err.trim());
    }
    Ok(reply)
}
