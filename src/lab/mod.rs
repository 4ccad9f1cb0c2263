//! `lsmpmon lab`: every secure OS with a real, enforcing policy, kernel by
//! kernel, in throwaway guests: boot, set up, prove, bench untraced, bench
//! under `trace --per-lsm`, footprint; one result file per cell. The
//! command line (`cli::lab`) prints the tables over them.
pub mod access;
mod args;
mod avtab;
pub mod batch;
mod buildkit;
mod cell;
pub mod footprint;
pub mod guest;
pub mod guest_plan;
mod jobs;
mod libs;
mod matrix;
pub mod nginx;
pub mod observer;
mod outcome;
pub mod per_op;
mod plan;
mod policydb;
mod preflight;
mod progress;
pub mod proof;
mod rerun;
pub mod results;
mod run;
pub mod save;
mod schedule;
mod space;
pub mod spec;
mod swtpm;
pub mod webserver;
mod workload;

pub use args::{RerunArgs, RunArgs, DEFAULT_CONFIGS, TABLE_ORDER};
pub use matrix::split_list;
pub use outcome::RunOutcome;
pub use rerun::rerun;
pub use run::run;
