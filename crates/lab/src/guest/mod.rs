//! The guest side of the lab: what runs inside a cell's guest. `cell` is
//! the guest's command (`lab guest`): it sets up the configuration, proves
//! it, runs the workload (`workload`, `per_op`) and measures its footprint.
pub mod access;
pub mod avtab;
pub mod cell;
pub mod footprint;
pub mod per_op;
pub mod policydb;
pub mod proof;
pub mod webserver;
pub mod workload;
