//! `lsmpmon vm`: run a command under a real Debian kernel, with the LSMs you
//! choose, in a throwaway QEMU guest. Reused by the lab.
pub mod args;
pub mod cache;
pub mod elf;
pub mod forward;
pub mod guest;
pub mod initramfs;
pub mod interrupt;
pub mod kernel;
pub mod launch;
pub mod listing;
pub mod machine;
pub mod qemu;
pub mod run;
pub mod tty;

use anyhow::Result;

pub use args::{CacheDir, VmCommand, MAX_CPUS};
pub use launch::{launch, Launch};
pub use machine::{Machine, RTC_DEFAULT, RTC_FIXED_BASE};

pub fn main(cmd: VmCommand) -> Result<i32> {
    match cmd {
        VmCommand::Run(args) => run::run(&args),
        VmCommand::Cache(args) => listing::main(&args),
        VmCommand::GuestExec { spec } => guest::exec(&spec).map(|_| base::error::EXIT_OK),
    }
}
