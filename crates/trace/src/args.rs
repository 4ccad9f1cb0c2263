//! `lsmpmon trace`'s options and its `ctl` subcommand.
use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::report::SortKey;
use super::{attach, attach::choose, ctl};

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct TraceCommand {
    #[command(subcommand)]
    pub ctl: Option<TraceSub>,
    #[command(flatten)]
    pub args: TraceArgs,
}

#[derive(Subcommand, Debug)]
pub enum TraceSub {
    /// Control a running trace: enable, disable, reset or dump.
    Ctl {
        /// What the running trace does now.
        #[arg(value_enum)]
        action: ctl::Action,
        /// The trace's process id (needed when several run).
        #[arg(long)]
        pid: Option<u32>,
        /// Dump as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args, Debug, Clone)]
pub struct TraceArgs {
    /// What to attach to and how: shared with `serve` and `top`.
    #[command(flatten)]
    pub engine: EngineArgs,
    /// List the hooks this kernel has (and those excluded, with why) and exit.
    #[arg(long)]
    pub list_hooks: bool,
    /// Stop after this many seconds (default: when COMMAND exits, or on Ctrl-C).
    #[arg(long, value_parser = base::parse::seconds)]
    pub duration: Option<f64>,
    /// Print the statistics every this many seconds (NDJSON with --json).
    #[arg(long, value_parser = base::parse::seconds)]
    pub interval: Option<f64>,
    /// Machine-readable output (schema/trace.schema.json). COMMAND's stdout then goes to stderr.
    #[arg(long)]
    pub json: bool,
    /// Write the final result here instead of stdout.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Sort the table by.
    #[arg(long, value_enum, default_value = "sum")]
    pub sort: SortKey,
    /// Show only the first N rows of each table.
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    pub top: Option<usize>,
    /// Print a latency histogram per hook (one line a power of two).
    #[arg(long)]
    pub hist: bool,
    /// Also break the figures down: cgroup = every hook's calls, time and
    /// denials by the cgroup (v2) of the task making them.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub by: Vec<TraceBy>,
    /// Command to run while tracing (system-wide unless filtered; lsmpmon excludes itself).
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// The trace engine's hook selection, filters and probe options.
#[derive(Args, Debug, Clone)]
pub struct EngineArgs {
    /// Hooks to trace: comma-separated globs on the hook (inode_*) or function (security_*) name.
    #[arg(long, default_value = "*", value_parser = base::parse::list)]
    pub hooks: String,
    /// Subject filter: only tasks with this command name (LSMPMON's `s foo`).
    #[arg(long, value_parser = crate::filter_values::comm)]
    pub comm: Option<String>,
    /// Subject filter: only this process (thread group id; it must exist).
    #[arg(long, value_parser = base::parse::live_pid)]
    pub pid: Option<u32>,
    /// Subject filter: only this user id.
    #[arg(long, value_parser = base::parse::uid)]
    pub uid: Option<u32>,
    /// Subject filter: only tasks in this cgroup (v2 path, absolute or under /sys/fs/cgroup).
    #[arg(long, value_parser = base::parse::cgroup)]
    pub cgroup: Option<String>,
    /// Object filter: only calls on a file/dentry/path with this base name (LSMPMON's `o bar`).
    #[arg(long, value_parser = crate::filter_values::object)]
    pub object: Option<String>,
    /// With a subject filter, also count the hooks an interrupt handler calls
    /// while it interrupts a task that passes it, as that task's (a loopback
    /// packet's receive runs in its sender's softirq). Without it they are
    /// out: they belong to no task.
    #[arg(long)]
    pub with_interrupts: bool,
    /// Subtract the measured probe floor from every timing.
    #[arg(long)]
    pub subtract_floor: bool,
    /// How to release the probes at the end (see BENCHMARKS.md for why).
    #[arg(long, value_enum, default_value = "background")]
    pub detach: attach::DetachMode,
    /// Also time each active LSM's own implementation of each hook (selinux_*,
    /// apparmor_*, ...), found from the kernel's hook tables: which module costs what.
    #[arg(long)]
    pub per_lsm: bool,
    /// LSMPMON's original table only (min/max/ave/count/cs_count): no histogram,
    /// no per-syscall table, no allow/deny. The cheapest probe.
    #[arg(long, conflicts_with = "syscall_time")]
    pub lean: bool,
    /// Also time each syscall (sys_enter to sys_exit) to give the share spent in LSM hooks.
    #[arg(long)]
    pub syscall_time: bool,
    /// Count only: calls and allow/deny per hook, no timing (no min/max/ave,
    /// cs_count, histogram or per-syscall table). One probe per call instead
    /// of two: the lowest cost per call (see BENCHMARKS.md).
    #[arg(long, conflicts_with_all = ["lean", "syscall_time", "subtract_floor", "empty_probes"])]
    pub count_only: bool,
    /// Attach method: auto takes the first this kernel offers, in the order
    /// multi session, kprobe session, kprobe multi, session, fentry/fexit,
    /// kprobe (before 5.17), weighing attach time or cost per call (--weigh);
    /// the result says which, and why not the others.
    #[arg(long, value_enum, default_value = "auto")]
    pub method: choose::MethodArg,
    /// What --method auto weighs where the kernel offers both: attach-time
    /// (one link for every hook: fast to attach and release, dearer per call)
    /// or per-call (fentry/fexit: the cheapest probe, one trampoline per
    /// hook). Default: per-call for a trace with --duration of 120 s or more,
    /// else attach-time (serve, top: attach-time).
    #[arg(long, value_enum)]
    pub weigh: Option<choose::Weigh>,
    /// Benchmark of the attach method itself: programs that return at once
    /// (no figure is recorded; time the traced command). See BENCHMARKS.md.
    #[arg(long, hide = true)]
    pub empty_probes: bool,
    /// Trace even if other tracing programs (another trace, another tool's
    /// BPF programs, kprobes, ftrace) sit on the functions to time; they
    /// inflate the figures, and the result records them.
    #[arg(long)]
    pub allow_other_probes: bool,
    /// Break every hook's calls down by the cgroup (v2) of the task making
    /// them (`--by cgroup` of trace, serve and top). Not an option of its own.
    #[arg(skip)]
    pub by_cgroup: bool,
    /// With --by cgroup: cgroups kept by name, in order of arrival (most
    /// calls first); the calls of any beyond go to one "(other)" row.
    #[arg(long, default_value_t = 100, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    pub max_cgroups: usize,
    /// Time one call in N on average (each CPU draws the next timed call),
    /// count every call: calls, allow/deny and --by cgroup stay exact, the
    /// times are a sample. Cheaper per call than timing every call with
    /// --method fentry-fexit (see BENCHMARKS.md). Default: 1 (every call);
    /// serve's default is its own. Not with --syscall-time (which sums the
    /// timed calls' time per syscall).
    #[arg(long, conflicts_with_all = ["count_only", "empty_probes", "syscall_time"], value_parser = clap::builder::RangedU64ValueParser::<u32>::new().range(1..=crate::intf::lsmpmon_limits::LSMPMON_MAX_SAMPLE as u64))]
    pub sample: Option<u32>,
    /// Time every call during windows of ON seconds, one opening every
    /// EVERY seconds (ON/EVERY, e.g. 5/120), and count every call: between
    /// windows only the exits are attached, which costs about what
    /// --count-only does. Each hook's time is estimated at each window's close
    /// (its calls × the window's mean). fentry/fexit only (5.17+). serve's default.
    #[arg(long, value_name = "ON/EVERY", value_parser = base::parse::windows, conflicts_with_all = ["sample", "count_only", "empty_probes", "syscall_time"])]
    pub timing_windows: Option<(f64, f64)>,
    /// How long the trace is to run, if known (`trace --duration`): what
    /// `--method auto` weighs (attach/choose.rs). Not an option of its own.
    #[arg(skip)]
    pub expected_s: Option<f64>,
}

impl EngineArgs {
    /// --with-interrupts changes nothing without a subject filter: refused.
    pub fn check_with_interrupts(&self) -> anyhow::Result<()> {
        let subject = self.comm.is_some()
            || self.pid.is_some()
            || self.uid.is_some()
            || self.cgroup.is_some();
        if self.with_interrupts && !subject {
            return Err(base::error::usage(
                "--with-interrupts gives interrupt handlers to the task they interrupt when it passes a subject filter: add --comm, --pid, --uid or --cgroup (without one every interrupt's hooks are counted already)",
            ));
        }
        Ok(())
    }

    /// --sample N for N > 1; None when every call is timed.
    pub fn sample_every(&self) -> Option<u32> {
        self.sample.filter(|&n| n > 1)
    }

    /// Only some calls are timed (--sample N, --timing-windows).
    pub fn sampled(&self) -> bool {
        self.sample_every().is_some() || self.timing_windows.is_some()
    }
}

/// `trace --by`'s breakdowns.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceBy {
    /// Calls, time and denials per cgroup × hook.
    Cgroup,
}
