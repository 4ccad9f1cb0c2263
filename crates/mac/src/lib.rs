//! `lsmpmon mac` (hidden, run in the guest by the mac-* lab configurations):
//! three reference MACs as BPF LSM programs that enforce the same policy and
//! differ only in how they identify a file: label, path or inode.
pub mod intf;
mod load;
mod method;
pub mod policy;
mod probe;
mod setup;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};

use base::error::EXIT_OK;
pub use method::Method;

#[derive(Args, Debug)]
pub struct MacCommand {
    #[command(subcommand)]
    pub sub: MacSub,
}

#[derive(Subcommand, Debug)]
pub enum MacSub {
    /// Load a reference MAC and pin its links (it stays after this exits).
    Load {
        #[arg(long, value_enum)]
        method: Method,
        /// Policy file: `deny ACCESS[,ACCESS] /PATH LABEL` lines.
        #[arg(long)]
        policy: PathBuf,
        /// The subject's command name (its first 15 bytes are compared).
        #[arg(long, default_value = "lsmpmon-workload")]
        subject: String,
    },
    /// What a mac-* lab configuration does: mount bpffs and tracefs, add
    /// the scaling runs' unmatched rules, label, load, turn tracing on.
    Setup {
        #[arg(long, value_enum)]
        method: Method,
        #[arg(long)]
        policy: PathBuf,
        /// A file holding a number of extra, unmatched rules (scaling runs); absent or empty: none.
        #[arg(long)]
        pad_rules: Option<PathBuf>,
        #[arg(long, default_value = "lsmpmon-workload")]
        subject: String,
    },
    /// Detach the loaded reference MAC (remove its pinned links).
    Unload,
    /// Write each rule's label into its file's security.lsmpmon xattr.
    Label {
        #[arg(long)]
        policy: PathBuf,
    },
    /// Try one access as this process; print `ACCESS PATH: allowed|ERRNO`.
    Try {
        #[arg(value_enum)]
        access: probe::Access,
        path: PathBuf,
    },
    /// List the reference MACs' programs attached right now (any holder).
    Status,
}

pub fn main(cmd: MacCommand) -> Result<i32> {
    use base::output::line;
    match cmd.sub {
        MacSub::Load {
            method,
            policy: file,
            subject,
        } => {
            let rules = policy::read(&file)?;
            let done = load::load(method, &rules, &subject)?;
            line(&format!(
                "mac: {method:?} method loaded: {} rules ({} keys), {} labelled files cached, programs {}",
                rules.len(),
                done.rule_keys,
                done.labelled_files,
                done.programs.join(" ")
            ))?;
            Ok(EXIT_OK)
        }
        MacSub::Setup {
            method,
            policy: file,
            pad_rules,
            subject,
        } => {
            let done = setup::run(method, &file, pad_rules.as_deref(), &subject)?;
            line(&format!(
                "mac: {method:?} method set up: {} rule keys, {} labelled files cached, programs {}",
                done.rule_keys,
                done.labelled_files,
                done.programs.join(" ")
            ))?;
            Ok(EXIT_OK)
        }
        MacSub::Unload => {
            let n = load::unpin_all()?;
            line(&format!("mac: unloaded: {n} pinned links removed"))?;
            Ok(EXIT_OK)
        }
        MacSub::Label { policy: file } => {
            let n = load::label(&policy::read(&file)?)?;
            line(&format!("mac: labelled {n} files ({})", load::XATTR))?;
            Ok(EXIT_OK)
        }
        MacSub::Try { access, path } => {
            let outcome = probe::attempt(access, &path);
            line(&format!("{access:?} {}: {outcome}", path.display()))?;
            Ok(EXIT_OK)
        }
        MacSub::Status => {
            let progs = load::attached()?;
            line(&format!(
                "mac: {} programs attached: {}",
                progs.len(),
                progs.join(" ")
            ))?;
            Ok(EXIT_OK)
        }
    }
}
