//! `lsmpmon bench`: LMbench/Unixbench-class microbenchmarks with honest
//! statistics, on the host (real time) or in a guest (virtual time).
//!
//! `session` runs them (its `main` is the subcommand): `host` describes the
//! machine, `workdir` is where ops write, `runner` the method, `ops/` the
//! operations behind the `op` interface with `sys/` as their toolbox,
//! `output` prints the result, `baseline` and `compare` hold `--compare`.
mod args;
mod baseline;
mod clock;
mod compare;
pub mod forker;
mod host;
mod interrupt;
pub mod landlock;
mod op;
pub mod op_names;
mod ops;
mod output;
mod result;
mod runner;
mod session;
mod settle;
mod stats;
mod sys;
mod workdir;

pub use args::BenchArgs;
pub use host::cpu_model;
pub use ops::ima::HASH_SIZES as IMA_HASH_SIZES;
pub use ops::{
    build, check_ops, needs_build_kit, needs_web_server, op_names, web, with_workload, workload,
};
pub use result::{BenchOptions, BenchProvenance, BenchResult, SCHEMA};
pub use session::main;
