//! What one operation is: the `Bench` trait the runner drives, the settings
//! every op gets, what it proves it did, and its registry entry.
use std::path::PathBuf;

use anyhow::Result;
pub use model::bench::Unit;

/// What one timed run did; the runner checks it against what was asked.
#[derive(Debug, Default, Clone, Copy)]
pub struct Work {
    pub ops: u64,
    pub bytes: u64,
}

/// Settings shared by every operation.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// The op's own fresh private directory, `<--dir>/<op>.XXXXXX`.
    pub dir: PathBuf,
    pub mmap_bytes: usize,
    pub prot_exec: bool,
    pub select_fds: usize,
    pub ctx_procs: usize,
    pub ctx_size_kib: usize,
    /// The user's program the `workload` op runs (`--workload`).
    pub workload: Option<PathBuf>,
    pub workload_timeout_s: u64,
    /// The workload's own cgroup, where one could be made.
    pub workload_cgroup: Option<std::sync::Arc<crate::sys::cgroup::Cgroup>>,
}

/// One benchmark: `prepare` and `finish` are not timed, `run` is.
pub trait Bench {
    fn prepare(&mut self, _iters: u64) -> Result<()> {
        Ok(())
    }
    fn run(&mut self, iters: u64) -> Result<Work>;
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
    /// What the op's own mechanism costs per op, measured untimed once and
    /// subtracted from every sample (lat_ctx's token-passing overhead).
    fn overhead_ns(&mut self) -> Result<Option<f64>> {
        Ok(None)
    }
    /// Resident size of the helper process that does the work, if any.
    fn helper_rss_kb(&self) -> Option<u64> {
        None
    }
    /// The program of that helper process, by the path it ran from.
    fn helper(&self) -> Option<String> {
        None
    }
    /// How long the last `run` took by the op's own timing process's clock
    /// (ns, one clock pair included, as the runner's own), when the work is
    /// done and timed in a child as lmbench's benchmp does; None: the runner
    /// times `run` itself.
    fn child_timed_ns(&self) -> Option<f64> {
        None
    }
    /// Each request's own latency (ns) since the last call, for ops that
    /// serve many clients at once (web): the runner keeps the sampled ones.
    fn take_latencies_ns(&mut self) -> Vec<f64> {
        Vec::new()
    }
    /// The most ops one timed run may do, for ops that hold a descriptor
    /// per op until the run ends (close, creat): the runner then makes a
    /// sample of runs of at most this many ops, each between its own
    /// untimed `prepare` and `finish`. None: a sample is one run.
    fn batch_limit(&mut self) -> Result<Option<u64>> {
        Ok(None)
    }
    /// The iteration count a sample uses for `iters`: ops whose work comes
    /// in units (whole file mixes shared by all clients) round it up.
    fn whole_iterations(&self, iters: u64) -> u64 {
        iters
    }
    /// The SELinux AVC around the op's whole run (the AVC sweep's ops),
    /// read once after the last sample.
    fn avc(&mut self) -> Result<Option<model::avc::AvcFigures>> {
        Ok(None)
    }
}

pub type Make = fn(&Ctx) -> Result<Box<dyn Bench>>;

pub struct OpDef {
    pub name: &'static str,
    pub group: &'static str,
    pub unit: Unit,
    pub make: Make,
}

/// The operations of one group, all in the same unit.
pub fn group(group: &'static str, unit: Unit, ops: &[(&'static str, Make)]) -> Vec<OpDef> {
    ops.iter()
        .map(|&(name, make)| OpDef {
            name,
            group,
            unit,
            make,
        })
        .collect()
}

/// The group whose ops take a fixed number of rounds (`--iterations`).
pub const YIELD_GROUP: &str = "yield";
