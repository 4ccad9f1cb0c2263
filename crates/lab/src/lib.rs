//! `lsmpmon lab`: every secure OS with a real, enforcing policy, kernel by
//! kernel, in throwaway guests: boot, set up, prove, bench untraced, bench
//! under `trace --per-lsm`, footprint; one result file per cell. The
//! command line (`cli::lab`) prints the tables over them.
//!
//! `plan` is what a run executes; `host` runs it, `guest` is what runs in
//! each cell's guest, `batch` spreads a plan over a batch engine;
//! `spec`, `guest_plan` and `results` are what the sides share.
pub mod batch;
pub mod guest;
pub mod guest_plan;
pub mod host;
pub mod plan;
pub mod results;
pub mod spec;

pub use host::execute::execute;
pub use host::outcome::RunOutcome;
pub use host::rerun::rerun;
pub use plan::{resolve, Plan, Request};

pub const DEFAULT_CONFIGS: &str = "none,selinux-mini,apparmor,tomoyo,landlock,ima,bpf-lsm";
/// Every shipped configuration in the tables' order: the baseline and its
/// twins (no module: what a configuration's mere presence shifts), the
/// label-based, path-based and stacked modules, then integrity, then BPF,
/// then the planted cost (no module: what the verdict rule must find).
pub const TABLE_ORDER: &str = "none,twin-files,twin-cmdline,twin-setup,debian-default,selinux-mini,selinux-refpolicy,apparmor,tomoyo,smack,landlock,ima,ima-sha1,ima-tpm,bpf-lsm,mac-label,mac-path,mac-inode,planted-create";

/// `lab run`: the request checked, the host checked, the kernels fetched,
/// the plan executed: nothing is downloaded for a run the host cannot make.
pub fn run(req: &Request, guests: Option<u32>) -> anyhow::Result<RunOutcome> {
    let fetching = vm::interrupt::exit_now()?;
    let checked = plan::check(req)?;
    let dir = host::execute::prepare(checked.configs(), &req.paths.results)?;
    host::execute::execute_in(dir, &checked.fetch()?, guests, fetching)
}
