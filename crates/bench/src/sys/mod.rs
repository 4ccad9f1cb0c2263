//! The system calls the operations share: tied child processes, children
//! started in a cgroup (and the workload's cgroup), owned descriptors and the
//! room for them, files that are never followed through a symlink.
pub mod cgroup;
pub mod child;
pub mod clone;
pub mod fd;
pub mod fd_limit;
pub mod file;
pub mod timed_name;
