//! The lab beyond one machine: a matrix as a plan of self-contained cells
//! (`lab plan`, `lab cell`), submitted to a batch engine (`lab submit`,
//! `lab status`; Slurm is the one adapter), and results directories
//! joined into one (`lab merge`).
pub mod cell;
pub mod engine;
mod files;
pub mod merge;
mod nodes;
pub mod plan_file;
mod record;
mod registry;
mod requeue;
pub mod slurm;
mod status;
pub mod submit;
pub mod tagged;
