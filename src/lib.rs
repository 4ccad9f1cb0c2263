//! lsmpmon: what Linux Security Modules cost, hook by hook.
//!
//! The layers, bottom to top; each imports only the ones below it
//! (`scripts/layers.py` checks, `docs/layers.txt` shows the graph):
//!
//! - [`base`], [`model`]: errors, checked files, parsing, provenance, the
//!   table model; the typed result model every reader and writer shares;
//! - engines: [`vm`] (Debian kernels in QEMU), [`trace`] (every LSM hook timed
//!   with eBPF), [`bench`] (the microbenchmarks), [`mac`] (the reference MACs);
//! - [`lab`]: secure OSes × kernels in guests, cell by cell;
//! - [`report`]: the papers' tables, charts and `compare`, from results;
//! - [`cli`]: every subcommand's entry point; `main.rs` only calls it.
pub mod base;
pub mod model;

pub mod bench;
pub mod mac;
pub mod serve;
pub mod top;
pub mod trace;
pub mod vm;

pub mod lab;

pub mod report;

pub mod cli;
