//! The bottom layer: what every other layer uses and that uses nothing of
//! lsmpmon's above it.
pub mod command;
pub mod digest;
pub mod draws;
pub mod error;
pub mod form;
pub mod output;
pub mod papers;
pub mod parse;
pub mod secure_fs;
pub mod stats;
pub mod table;
pub mod task_name;
pub mod text;
pub mod version;

/// The source tree this build was made from (the workspace's root): where a
/// build outside a package finds `configs/`, and tests their fixtures.
pub const SOURCE_TREE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
