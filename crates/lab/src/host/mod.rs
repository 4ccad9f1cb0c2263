//! The host side of the lab: a plan executed (`execute`): its cells laid
//! out as guest jobs (`jobs`, `cell`: the guest's files and boot), run a
//! few at once (`schedule`, `progress`) and saved; `rerun` makes the plan
//! of one recorded cell. The guest's programs come from Debian (`nginx`,
//! `buildkit`, `libs`), its TPM from swtpm.
pub mod buildkit;
pub mod cell;
pub mod execute;
pub mod jobs;
pub mod kconfig;
pub mod libs;
pub mod nginx;
pub mod observer;
pub mod outcome;
pub mod preflight;
pub mod progress;
pub mod rerun;
pub mod save;
pub mod schedule;
pub mod space;
pub mod swtpm;
