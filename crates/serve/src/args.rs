//! `lsmpmon serve`'s options.
use std::net::SocketAddr;

use clap::{Args, ValueEnum};

use trace::EngineArgs;

/// serve's timing unless told (`--timing-windows ON/EVERY`, seconds): every
/// call counted, every call timed in windows of ON seconds, one every EVERY
/// (BENCHMARKS.md, 'serve's own cost': what it costs per call, and how close its p50/p99 stay).
pub const DEFAULT_WINDOWS: (f64, f64) = (5.0, 120.0);

/// serve's `--sample` unless told, with `--by cgroup`: a cgroup busy only
/// between windows would show no time, so each CPU draws one call in this
/// many instead (BENCHMARKS.md, 'serve's own cost').
pub const DEFAULT_SAMPLE: u32 = 64;

#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to serve /metrics on; anything but loopback is warned about
    /// (the metrics tell what the host runs).
    #[arg(long, default_value = "127.0.0.1:9464")]
    pub listen: SocketAddr,
    /// Extra breakdowns (more series): syscall = hook calls and time per
    /// syscall × hook; cpu = per CPU × hook; cgroup = calls, time and
    /// denials per cgroup (v2) × hook, at most --max-cgroups cgroups.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub by: Vec<By>,
    /// Series for every attached hook, called or not (default: only the
    /// hooks called since serve started, the ones a fleet needs; each adds
    /// its series at its first call; lsmpmon_hooks_attached and
    /// lsmpmon_hooks_called count them).
    #[arg(long)]
    pub all_hooks: bool,
    /// Clients served at once; more connections are closed at once.
    #[arg(long, default_value_t = 1024,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=16384))]
    pub max_connections: usize,
    /// What to attach to and how, as `trace`.
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Syscall,
    Cpu,
    Cgroup,
}
