//! The system calls the operations share: tied child processes, owned
//! descriptors, files that are never followed through a symlink.
pub mod child;
pub mod fd;
pub mod file;
pub mod timed_name;
