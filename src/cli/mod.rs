//! The command line: the subcommands and their dispatch, one-line errors and
//! exit codes.
mod lab;
mod lab_args;

use base::error;

use clap::{error::ErrorKind, CommandFactory, FromArgMatches, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "lsmpmon", version = base::version::LONG, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Time every LSM hook with eBPF (fentry/fexit): per hook, per syscall.
    Trace(Box<trace::TraceCommand>),
    /// Keep the trace engine attached and serve its figures to Prometheus on /metrics.
    Serve(Box<serve::ServeArgs>),
    /// The trace engine at a terminal: every hook's cost over the last second, live.
    Top(Box<top::TopArgs>),
    /// LMbench/Unixbench-class microbenchmarks with honest statistics.
    Bench(Box<bench::BenchArgs>),
    /// Every secure OS with a real, enforcing policy, kernel by kernel: the papers' Tables 3 and 4.
    Lab(Box<lab::LabCommand>),
    /// The papers' tables and charts from any results: text, Markdown, CSV, JSON, one HTML page.
    Report(Box<report::ReportArgs>),
    /// Every figure two runs share, its change and a verdict: faster, slower, within noise, cannot tell.
    Compare(Box<report::CompareArgs>),
    /// Throwaway QEMU guests with real Debian kernels.
    #[command(subcommand)]
    Vm(vm::VmCommand),
    /// (guest) the reference MACs: label, path and inode identification.
    #[command(hide = true)]
    Mac(mac::MacCommand),
}

/// The whole command line as clap defines it: what the man pages and shell
/// completions of the Debian package are generated from.
pub fn command() -> clap::Command {
    Cli::command()
}

pub fn main() -> ! {
    let cli = parse().unwrap_or_else(|e| usage_error(e));
    // libbpf's own chatter would bury lsmpmon's one-line errors.
    if std::env::var_os("LSMPMON_LIBBPF_LOG").is_none() {
        libbpf_rs::set_print(None);
    }
    let result = match cli.command {
        Command::Trace(cmd) => trace::main(*cmd),
        Command::Serve(args) => serve::main(*args),
        Command::Top(args) => top::main(*args),
        Command::Bench(args) => bench::main(*args),
        Command::Vm(cmd) => vm::main(cmd),
        Command::Lab(cmd) => lab::main(*cmd),
        Command::Report(args) => report::main(*args),
        Command::Compare(args) => report::compare_main(*args),
        Command::Mac(cmd) => mac::main(cmd),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            base::say!("lsmpmon: error: {}", error::one_line(&err));
            std::process::exit(error::exit_code(&err));
        }
    }
}

/// The command line; `lab`'s help names the configurations found.
fn parse() -> Result<Cli, clap::Error> {
    let mut cmd = Cli::command();
    if std::env::args_os().nth(1).is_some_and(|a| a == "lab") {
        cmd = lab::with_configs_found(cmd);
    }
    Cli::from_arg_matches(&cmd.try_get_matches()?)
}

/// Help and version as clap prints them (exit 0); every usage error as one
/// line, `lsmpmon: error: <what clap says first>; see --help`, exit 2.
fn usage_error(e: clap::Error) -> ! {
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        // As every output: a reader that went away is no failure, a full disk is.
        match e.print() {
            Err(io) if io.kind() != std::io::ErrorKind::BrokenPipe => {
                base::say!("lsmpmon: error: cannot write to standard output: {io}");
                std::process::exit(error::EXIT_FAILURE);
            }
            _ => std::process::exit(error::EXIT_OK),
        }
    }
    let line = match e.kind() {
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand => {
            "a subcommand is needed; see --help".to_string()
        }
        ErrorKind::ValueValidation => refused_value(&e),
        _ => error::clap_line(&e.to_string()),
    };
    base::say!("lsmpmon: error: {line}");
    std::process::exit(error::EXIT_USAGE);
}

/// A value a parser refused, with the parser's reason, from clap's fields:
/// its rendered text breaks at a newline inside the value, and the first
/// line alone lost the reason.
fn refused_value(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.as_str()),
        _ => None,
    };
    let (Some(arg), Some(value)) = (
        text(ContextKind::InvalidArg),
        text(ContextKind::InvalidValue),
    ) else {
        return error::clap_line(&e.to_string());
    };
    let why = std::error::Error::source(e)
        .map(|s| format!(": {s}"))
        .unwrap_or_default();
    let line = format!("invalid value '{value}' for '{arg}'{why}");
    format!("{}; see --help", base::text::one_line(&line, 1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The arguments of `cmd` and of its visible subcommands, below it, that
    /// say nothing in `--help` (clap's own help and version aside).
    fn without_help(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if arg.is_hide_set() || id == "help" || id == "version" {
                continue;
            }
            if arg.get_help().is_none() && arg.get_long_help().is_none() {
                let name = arg.get_long().map_or(id.to_string(), |l| format!("--{l}"));
                missing.push(format!("{path} {name}"));
            }
        }
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            without_help(sub, &format!("{path} {}", sub.get_name()), missing);
        }
    }

    /// Issue 34 item 16: `lab run --flavour`, `--memory-mb`, `vm cache
    /// --all`, `report --format` and others said nothing in `--help`. Every
    /// option and positional of every subcommand a user sees says what it is.
    #[test]
    fn every_argument_has_a_help_text() {
        let mut cmd = command();
        cmd.build();
        let mut missing = Vec::new();
        without_help(&cmd, "lsmpmon", &mut missing);
        assert!(missing.is_empty(), "no help text: {}", missing.join(", "));
    }

    /// `compare --format` listed html and then refused it: it lists only
    /// what it prints, and each of those is accepted.
    #[test]
    fn compare_offers_only_the_formats_it_prints() {
        let parse = |format: &str| {
            Cli::try_parse_from(["lsmpmon", "compare", "a", "b", "--format", format])
        };
        let err = parse("html").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidValue);
        assert!(
            err.to_string()
                .contains("[possible values: text, markdown, csv, json]"),
            "{err}"
        );
        for f in ["text", "markdown", "csv", "json"] {
            assert!(parse(f).is_ok(), "{f}");
        }
    }
}
