//! lsmpmon: what Linux Security Modules cost, hook by hook.
//!
//! The layers are the workspace's crates, bottom to top; each depends only on
//! the ones below it, so an upward import does not compile (`tests/layers.rs`
//! keeps each crate's dependencies to the layers below it):
//!
//! - [`base`], [`model`]: errors, checked files, parsing, provenance, the
//!   table model; the typed result model every reader and writer shares;
//! - engines: [`vm`] (Debian kernels in QEMU), [`trace`] (every LSM hook timed
//!   with eBPF), [`bench`] (the microbenchmarks), [`mac`] (the reference MACs);
//! - the tracer's front ends: [`serve`] (its Prometheus exporter) and [`top`]
//!   (its live view);
//! - [`lab`]: secure OSes × kernels in guests, cell by cell;
//! - [`report`]: the papers' tables, charts and `compare`, from results;
//! - [`cli`]: every subcommand's entry point; `main.rs` only calls it.
pub use ::base;
pub use ::model;

pub use ::bench;
pub use ::mac;
pub use ::serve;
pub use ::top;
pub use ::trace;
pub use ::vm;

pub use ::lab;

pub use ::report;

pub mod cli;
