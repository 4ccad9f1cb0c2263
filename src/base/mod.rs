//! The bottom layer: what every other layer uses and that uses nothing of
//! lsmpmon's above it.
pub mod command;
pub mod digest;
pub mod draws;
pub mod error;
pub mod form;
pub mod intf;
pub mod output;
pub mod papers;
pub mod parse;
pub mod secure_fs;
pub mod stats;
pub mod table;
pub mod task_name;
pub mod version;
