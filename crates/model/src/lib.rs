//! The result model: every result lsmpmon writes — trace, bench, lab cell
//! and index, report and compare — as the types that write it and read it
//! back, with the provenance and identities they share. `schema/*.json` is
//! generated from these types (`schema.rs`).
pub mod account;
pub mod avc;
pub mod bench;
pub mod cell;
pub mod check;
pub mod compare;
pub mod draw;
pub mod floor;
pub mod hist;
pub mod hook_stat;
pub mod identity;
pub mod index;
pub mod options;
pub mod provenance;
pub mod read;
pub mod report;
pub mod schema;
pub mod trace;

pub use provenance::{
    Environment, ImageSizes, KernelRef, PackageRef, Provenance, SectionSizes, TimeMode,
};
pub use trace::{
    Bucket, CallerMethod, CgroupBreakdown, CgroupCalls, CgroupHook, CgroupResult, Excluded,
    HookResult, HookSource, LsmHookResult, NotUsed, ProbeInfo, SyscallHook, SyscallResult,
    TimingWindows, TraceOptions, TraceResult, TRACE_SCHEMA,
};
