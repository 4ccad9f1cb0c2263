//! `lsmpmon lab`: every secure OS with a real, enforcing policy, kernel by
//! kernel, in throwaway guests: boot, set up, prove, bench untraced, bench
//! under `trace --per-lsm`, footprint; one result file per cell. The
//! command line (`cli::lab`) prints the tables over them.
pub mod access;
mod avtab;
pub mod batch;
mod buildkit;
mod cell;
mod execute;
pub mod footprint;
pub mod guest;
pub mod guest_plan;
mod jobs;
mod kconfig;
mod libs;
pub mod nginx;
pub mod observer;
mod outcome;
pub mod per_op;
pub mod plan;
mod policydb;
mod preflight;
mod progress;
pub mod proof;
pub mod rerun;
pub mod results;
pub mod save;
mod schedule;
mod space;
pub mod spec;
mod swtpm;
pub mod webserver;
mod workload;

pub use execute::execute;
pub use outcome::RunOutcome;
pub use plan::{resolve, Plan, Request};
pub use rerun::rerun;

pub const DEFAULT_CONFIGS: &str = "none,selinux-mini,apparmor,tomoyo,landlock,ima,bpf-lsm";
/// Every shipped configuration in the tables' order: the baseline, the
/// label-based, path-based and stacked modules, then integrity, then BPF.
pub const TABLE_ORDER: &str = "none,debian-default,selinux-mini,selinux-refpolicy,apparmor,tomoyo,smack,landlock,ima,ima-sha1,ima-tpm,bpf-lsm,mac-label,mac-path,mac-inode";

/// `lab run`: the request resolved into its plan, and executed.
pub fn run(req: &Request, guests: Option<u32>) -> anyhow::Result<RunOutcome> {
    let fetching = crate::vm::interrupt::exit_now()?;
    execute(&resolve(req)?, guests, fetching)
}
