//! The Debian package's generated files, made from lsmpmon's own clap
//! definitions (never kept by hand): one man page per subcommand
//! (`lsmpmon.1`, `lsmpmon-lab.1`, `lsmpmon-lab-run.1`, …), the bash, zsh and
//! fish completions, and the package's changelog entry for this version.
//! `scripts/package.sh` runs it:
//!
//! ```sh
//! cargo run --release --locked --example package_docs -- OUT \
//!     --man-date 2026-05-01 --changelog-date 'Fri, 01 May 2026 12:00:00 +0000'
//! ```
use std::{fs, path::Path, path::PathBuf};

use anyhow::{Context, Result};
use clap::Parser;
use clap_complete::Shell;
use lsmpmon::base::version;

#[derive(Parser)]
struct Args {
    /// Where man/, completions/ and changelog go.
    out: PathBuf,
    /// The date in the man pages' title line (the commit's, for a reproducible package).
    #[arg(long)]
    man_date: String,
    /// The changelog entry's date, RFC 2822 (`date -R`).
    #[arg(long)]
    changelog_date: String,
}

fn main() -> Result<()> {
    let args = Args::parse();
    man_pages(&args.out.join("man"), &args.man_date)?;
    completions(&args.out.join("completions"))?;
    let changelog = args.out.join("changelog");
    fs::write(&changelog, changelog_entry(&args.changelog_date))
        .with_context(|| format!("writing {}", changelog.display()))?;
    Ok(())
}

/// `lsmpmon.1` and one page per visible subcommand, at every depth.
fn man_pages(dir: &Path, date: &str) -> Result<()> {
    fresh_dir(dir)?;
    let cmd = lsmpmon::cli::command()
        .version(version::LONG)
        .disable_help_subcommand(true);
    for page in pages(cmd) {
        clap_mangen::Man::new(page)
            .date(date)
            .source(format!("lsmpmon {}", version::VERSION))
            .manual("lsmpmon manual")
            .generate_to(dir)
            .with_context(|| format!("writing a man page into {}", dir.display()))?;
    }
    Ok(())
}

/// The command and its visible subcommands, each named as its page is
/// (`lsmpmon-lab-run`) and shown as it is typed (`lsmpmon lab run`).
fn pages(mut cmd: clap::Command) -> Vec<clap::Command> {
    cmd.build();
    let mut out = Vec::new();
    let mut todo = vec![cmd];
    while let Some(cmd) = todo.pop() {
        todo.extend(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
        out.push(cmd);
    }
    out
}

/// `lsmpmon.bash`, `_lsmpmon` (zsh) and `lsmpmon.fish`.
fn completions(dir: &Path) -> Result<()> {
    fresh_dir(dir)?;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        let mut cmd = lsmpmon::cli::command();
        clap_complete::generate_to(shell, &mut cmd, "lsmpmon", dir)
            .with_context(|| format!("writing the {shell} completion into {}", dir.display()))?;
    }
    Ok(())
}

/// A Debian changelog of one entry: this version, the commit it was built
/// from, the maintainer (Cargo.toml's first author).
fn changelog_entry(date: &str) -> String {
    let maintainer = env!("CARGO_PKG_AUTHORS")
        .split(':')
        .next()
        .unwrap_or_default();
    let built = match version::commit() {
        Some(c) => format!("Built from commit {c}."),
        None => "Built from a source tree without git.".to_string(),
    };
    format!(
        "lsmpmon ({}) unstable; urgency=medium\n\n  * {built}\n\n -- {maintainer}  {date}\n",
        version::VERSION
    )
}

fn fresh_dir(dir: &Path) -> Result<()> {
    match fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("removing {}", dir.display()))
        }
        _ => {}
    }
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
}
