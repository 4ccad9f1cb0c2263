//! What `bench --json` writes: the machine, the options and every op's
//! figures (schema/bench.schema.json).
use serde::Serialize;

use super::landlock::LandlockInfo;
use super::runner::OpResult;
use crate::model::Provenance;

pub const SCHEMA: &str = "lsmpmon.bench/1";

#[derive(Debug, Clone, Serialize)]
pub struct BenchProvenance {
    #[serde(flatten)]
    pub base: Provenance,
    /// LSM-related kernel parameters (lsm=, security=, selinux=, enforcing=, apparmor=, ima_*).
    pub boot_params: Vec<String>,
    pub cpu_model: String,
    pub clocksource: String,
    /// CPUs online (a guest's -smp): the web ops' UP vs SMP.
    pub online_cpus: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct BenchOptions {
    pub ops: String,
    pub dir: String,
    pub samples: usize,
    pub sample_ms: f64,
    /// Fixed operations per sample (`--iterations`); null: grown to sample_ms.
    pub iterations: Option<u64>,
    pub cpu: Option<usize>,
    pub mmap_bytes: usize,
    pub prot_exec: bool,
    pub select_fds: usize,
    pub ctx_procs: usize,
    pub ctx_size_kib: usize,
    pub landlock: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct BenchResult {
    pub schema: &'static str,
    pub provenance: BenchProvenance,
    pub options: BenchOptions,
    /// Subtracted from every sample: one pair of clock reads.
    pub clock_overhead_ns: f64,
    pub landlock: Option<LandlockInfo>,
    pub results: Vec<OpResult>,
    pub wall_s: f64,
}
