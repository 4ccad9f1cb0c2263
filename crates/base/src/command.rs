//! Running the host's tools (apt-get, dpkg-deb, tar, make, …): one way to
//! start a program, check its status and say why it failed — the program and
//! the last line it wrote to stderr, exit 1; a program that is not installed
//! is exit 2 (a missing tool, README). Every program started here dies with
//! the thread that started it.
use std::{
    io::{BufRead, BufReader, Read, Write},
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    thread,
};

use anyhow::{bail, Context, Result};

use super::error::usage;

/// Runs `cmd`; its stdout is the result. stderr is kept for the error only.
pub fn output(cmd: &mut Command) -> Result<String> {
    let mut running = spawn(cmd.stdout(Stdio::piped()), false)?;
    let mut out = Vec::new();
    let read = match running.child.stdout.take() {
        Some(mut stdout) => stdout.read_to_end(&mut out).map(drop),
        None => Ok(()),
    };
    running.finish(cmd)?;
    read.with_context(|| format!("reading the output of {}", name(cmd)))?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Runs `cmd` quietly: its stdout is dropped, its stderr kept for the error.
pub fn run(cmd: &mut Command) -> Result<()> {
    spawn(cmd.stdout(Stdio::null()), false)?.finish(cmd)
}

/// Runs `cmd` with its progress shown: stdout and stderr both go to
/// lsmpmon's stderr (its stdout carries only results).
pub fn run_shown(cmd: &mut Command) -> Result<()> {
    spawn(cmd.stdout(std::io::stderr()), true)?.finish(cmd)
}

/// A started program and the thread reading its stderr.
struct Running {
    child: Child,
    last_line: thread::JoinHandle<String>,
}

/// Starts `cmd` with stdin closed and stderr piped, read by a thread (one
/// pipe per thread, never std's non-blocking two-pipe reader: a policy in a
/// guest may refuse its ioctl).
fn spawn(cmd: &mut Command, echo: bool) -> Result<Running> {
    dies_with_parent(cmd);
    let mut child = cmd
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => usage(format!(
                "{} not found: install it (scripts/setup.sh does)",
                name(cmd)
            )),
            _ => anyhow::Error::new(e).context(format!("running {}", name(cmd))),
        })?;
    let stderr = child.stderr.take().context("the program's stderr")?;
    let last_line = thread::spawn(move || last_line_of(stderr, echo));
    Ok(Running { child, last_line })
}

impl Running {
    /// Waits for the program; an error naming it and its last stderr line if it failed.
    fn finish(mut self, cmd: &Command) -> Result<()> {
        let status = self
            .child
            .wait()
            .with_context(|| format!("waiting for {}", name(cmd)))?;
        let last = self.last_line.join().unwrap_or_default();
        check(cmd, status, &last)
    }
}

fn check(cmd: &Command, status: ExitStatus, last_line: &str) -> Result<()> {
    if status.success() {
        return Ok(());
    }
    if last_line.is_empty() {
        bail!("{} failed ({status})", name(cmd));
    }
    bail!("{} failed ({status}): {last_line}", name(cmd))
}

/// The last line read from `from` that says something (not empty, not one of
/// apt's `W:` warnings, which follow its error), each line copied to
/// lsmpmon's stderr as it comes if `echo`.
fn last_line_of(from: impl Read, echo: bool) -> String {
    let mut last = String::new();
    let mut reader = BufReader::new(from);
    let mut line = Vec::new();
    while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
        if echo {
            let _ = std::io::stderr().write_all(&line);
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if !text.is_empty() && !text.starts_with("W: ") {
            last = text.to_string();
        }
        line.clear();
    }
    last
}

/// The program's file name, as errors show it.
fn name(cmd: &Command) -> String {
    let program = Path::new(cmd.get_program());
    program
        .file_name()
        .unwrap_or(program.as_os_str())
        .to_string_lossy()
        .into_owned()
}

/// The child is killed when the thread that started it ends, whatever ends
/// it (a signal, a panic, SIGKILL): no helper outlives lsmpmon.
pub fn dies_with_parent(cmd: &mut Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: prctl and getppid are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Had the parent died between fork and prctl, no signal would come:
            // the child now belongs to another process.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Where `program` is on PATH, if it is.
pub fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(program))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{exit_code, one_line, EXIT_FAILURE, EXIT_USAGE};

    fn sh(script: &str) -> Command {
        let mut c = Command::new("/bin/sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn a_failure_names_the_program_and_its_last_stderr_line() {
        let err = run(&mut sh(
            "echo first >&2; echo; echo 'the cause' >&2; echo >&2; echo 'W: a warning' >&2; exit 3",
        ))
        .unwrap_err();
        assert_eq!(one_line(&err), "sh failed (exit status: 3): the cause");
        assert_eq!(exit_code(&err), EXIT_FAILURE);
        let err = output(&mut sh("kill -9 $$")).unwrap_err();
        assert!(one_line(&err).starts_with("sh failed (signal: 9"), "{err}");
    }

    #[test]
    fn output_is_stdout_only() {
        let out = output(&mut sh("echo result; echo chatter >&2")).unwrap();
        assert_eq!(out, "result\n");
        run_shown(&mut sh("echo progress; echo more >&2")).unwrap();
    }

    #[test]
    fn a_missing_program_is_a_usage_error() {
        let err = output(&mut Command::new("/nonexistent/lsmpmon-tool")).unwrap_err();
        assert_eq!(exit_code(&err), EXIT_USAGE);
        assert!(
            one_line(&err).starts_with("lsmpmon-tool not found"),
            "{err}"
        );
        assert!(which("sh").is_some());
        assert!(which("lsmpmon-no-such-tool").is_none());
    }

    #[test]
    fn stdin_is_closed() {
        assert_eq!(output(&mut sh("cat; echo end")).unwrap(), "end\n");
    }
}
