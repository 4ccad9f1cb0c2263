//! One exit-code convention for every subcommand (documented in the README).
use std::fmt;

/// The command did what was asked.
pub const EXIT_OK: i32 = 0;
/// Something failed while running (a probe, a benchmark, a guest command).
pub const EXIT_FAILURE: i32 = 1;
/// Wrong usage or an environment that cannot do the job (not root, no BTF,
/// lockdown, unknown hook or kernel, missing tool): fix the cause and retry.
pub const EXIT_USAGE: i32 = 2;
/// A guest did not finish in time, or crashed before its command ended.
pub const EXIT_GUEST_TIMEOUT: i32 = 124;

/// An error the user can act on; its message is printed as one line.
#[derive(Debug)]
pub struct UserError {
    pub code: i32,
    pub message: String,
}

impl fmt::Display for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for UserError {}

/// Usage or environment error (exit code 2).
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    UserError {
        code: EXIT_USAGE,
        message: message.into(),
    }
    .into()
}

/// Error with an explicit exit code.
pub fn with_code(code: i32, message: impl Into<String>) -> anyhow::Error {
    UserError {
        code,
        message: message.into(),
    }
    .into()
}

/// The exit code for an error: the one a `UserError` in its chain carries, else 1.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    err.chain()
        .find_map(|e| e.downcast_ref::<UserError>().map(|u| u.code))
        .unwrap_or(EXIT_FAILURE)
}

/// The whole chain on one line: "what: why: root cause", newlines as
/// spaces and any other control character escaped (a message may quote
/// bytes lsmpmon did not write).
pub fn one_line(err: &anyhow::Error) -> String {
    let line = err
        .chain()
        .map(|e| e.to_string().replace('\n', " "))
        .collect::<Vec<_>>()
        .join(": ");
    crate::text::one_line(&line, usize::MAX)
}

/// clap's multi-line usage error as one line: its first line without the
/// "error: " prefix, then where to look.
pub fn clap_line(rendered: &str) -> String {
    let mut lines = rendered.lines().skip_while(|l| l.trim().is_empty());
    let first = lines.next().map(str::trim).unwrap_or("bad usage");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // "the following required arguments were not provided:" is followed by
    // the arguments, one per indented line: keep them on the one line.
    let listed: Vec<&str> = if first.ends_with(':') {
        lines
            .take_while(|l| l.starts_with(char::is_whitespace) && !l.trim().is_empty())
            .map(str::trim)
            .collect()
    } else {
        Vec::new()
    };
    let line = if listed.is_empty() {
        first.trim_end_matches(['.', ':']).to_string()
    } else {
        format!("{} {}", first, listed.join(", "))
    };
    // clap quotes the value it refused: a control character in it is shown
    // escaped, never sent to the terminal.
    format!("{}; see --help", crate::text::one_line(&line, usize::MAX))
}

/// An errno as its name where the proofs and matrices use one.
pub fn errno_name(e: i32) -> String {
    let name = match e {
        libc::EACCES => "EACCES",
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EEXIST => "EEXIST",
        libc::EROFS => "EROFS",
        libc::ECHILD => "exit status not 0",
        libc::EINVAL => "EINVAL",
        _ => "",
    };
    if name.is_empty() {
        format!("errno {e}")
    } else {
        name.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_line_keeps_what_is_missing() {
        let rendered = "error: the following required arguments were not provided:\n  <B>\n  <C>\n\nUsage: lsmpmon compare <A> <B>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            clap_line(rendered),
            "the following required arguments were not provided: <B>, <C>; see --help"
        );
        assert_eq!(
            clap_line("error: unexpected argument '--x' found\n\nUsage: …\n"),
            "unexpected argument '--x' found; see --help"
        );
    }

    #[test]
    fn clap_errors_become_one_line() {
        let rendered = "error: invalid value 'nan' for '--interval <INTERVAL>': not finite\n\n\
                        Usage: lsmpmon trace [OPTIONS]\n\nFor more information, try '--help'.\n";
        assert_eq!(
            clap_line(rendered),
            "invalid value 'nan' for '--interval <INTERVAL>': not finite; see --help"
        );
    }
    use anyhow::Context;

    #[test]
    fn code_survives_context() {
        let err = Err::<(), _>(usage("no BTF"))
            .context("starting trace")
            .unwrap_err();
        assert_eq!(exit_code(&err), EXIT_USAGE);
        assert_eq!(one_line(&err), "starting trace: no BTF");
    }

    #[test]
    fn plain_errors_are_runtime_failures() {
        let err = anyhow::anyhow!("read failed");
        assert_eq!(exit_code(&err), EXIT_FAILURE);
    }
}
