//! A `bench` result (schema `lsmpmon.bench/1`): each op's samples, median
//! and spread, with where and how they were measured.
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::provenance::Provenance;

pub const BENCH_SCHEMA: &str = "lsmpmon.bench/1";

/// The fork ops' helper (crates/bench/src/forker.c): its file name, looked for
/// beside lsmpmon's own binary first ...
pub const FORK_HELPER_NAME: &str = "lsmpmon-fork";
/// ... then here, where the Debian package and every guest install it.
pub const FORK_HELPER_INSTALLED: &str = "/usr/libexec/lsmpmon-fork";

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct BenchResult {
    pub schema: String,
    pub provenance: BenchProvenance,
    pub options: BenchOptions,
    /// Subtracted from every sample: one pair of clock reads.
    pub clock_overhead_ns: f64,
    pub landlock: Option<LandlockInfo>,
    pub results: Vec<OpResult>,
    /// The ops that failed (or were stopped), each with its one-line reason:
    /// beside the ones that ran, never silently missing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<FailedOp>,
    pub wall_s: f64,
}

/// An op that gave no figures, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FailedOp {
    pub op: String,
    /// One line, escaped (what the op's program printed is quoted in it).
    pub reason: String,
    /// It failed because SIGINT or SIGTERM stopped the run.
    #[serde(default)]
    pub interrupted: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct BenchProvenance {
    #[serde(flatten)]
    pub base: Provenance,
    /// LSM-related kernel parameters (lsm=, security=, selinux=, enforcing=, apparmor=, ima_*).
    pub boot_params: Vec<String>,
    pub cpu_model: String,
    pub clocksource: String,
    /// CPUs online (a guest's -smp): the web ops' UP vs SMP. Results from
    /// before it was recorded ran on one.
    #[serde(default = "one_cpu")]
    pub online_cpus: usize,
    /// With `--workload`: what holds everything the program starts, a new
    /// session too, so that it dies with the bench ("cgroup v2"; results
    /// made before runs started in it may say "cgroup v1 (pids)"), or
    /// "none: " and why (a leftover may then outlive a bench
    /// killed by SIGKILL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_contained: Option<String>,
}

fn one_cpu() -> usize {
    1
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct BenchOptions {
    pub ops: String,
    pub dir: String,
    pub samples: usize,
    pub sample_ms: f64,
    /// Fixed operations per sample (`--iterations`); null: grown to sample_ms.
    #[serde(default)]
    pub iterations: Option<u64>,
    pub cpu: Option<usize>,
    pub mmap_bytes: usize,
    pub prot_exec: bool,
    pub select_fds: usize,
    /// Results from before the ctx op's options ran lat_ctx's default: 2 processes, 0 KiB.
    #[serde(default = "two_procs")]
    pub ctx_procs: usize,
    #[serde(default)]
    pub ctx_size_kib: usize,
    pub landlock: bool,
    /// The work directory as resolved (results from before it was recorded:
    /// `dir` as given). Path-based modules' costs depend on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir_path: Option<PathShape>,
    /// The user's program the `workload` op ran (`--workload`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadProgram>,
    /// Each sample waited until the deferred work (RCU callbacks) the
    /// samples before it left had run (virtual time); false in results
    /// from before, whose figures depend on the ops sampled beside them.
    #[serde(default)]
    pub settled: bool,
}

/// A user's program as the `workload` op: where it was, what it was (its
/// sha256: two runs compare only if they ran the same program) and how long
/// one run could last.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkloadProgram {
    pub path: String,
    pub sha256: String,
    pub timeout_s: u64,
}

impl BenchOptions {
    /// The shape of the path the ops' files lived under.
    pub fn path_shape(&self) -> PathShape {
        self.dir_path.unwrap_or_else(|| PathShape::of(&self.dir))
    }
}

/// A path's length and depth: two runs whose work directories differ in
/// either were not measured alike by a module that matches paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PathShape {
    pub bytes: usize,
    /// Components below `/`.
    pub depth: usize,
}

impl PathShape {
    pub fn of(path: &str) -> Self {
        Self {
            bytes: path.len(),
            depth: path.split('/').filter(|c| !c.is_empty()).count(),
        }
    }

    /// The shape of `dir` made absolute (symlinks not followed: the
    /// path the ops name is the one a path-based module sees first).
    pub fn of_dir(dir: &std::path::Path) -> Self {
        let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        Self::of(&abs.display().to_string())
    }

    /// Path-based modules cost more on a longer or deeper path: two work
    /// directories must have the same shape to be compared.
    pub fn mismatch(self, other: PathShape) -> Option<String> {
        (self != other).then(|| {
            format!("bench directory: {self} vs {other} (give --dir a path of the same length and depth)")
        })
    }
}

impl std::fmt::Display for PathShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} bytes, depth {}", self.bytes, self.depth)
    }
}

fn two_procs() -> usize {
    2
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LandlockInfo {
    pub abi: u32,
    /// Filesystem rights the ruleset handles (bit mask of LANDLOCK_ACCESS_FS_*).
    pub handled_access_fs: u64,
    /// How enforcement was proved before measuring.
    pub proof: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Unit {
    #[serde(rename = "ns/op")]
    NsPerOp,
    #[serde(rename = "MB/s")]
    MBps,
}

impl Unit {
    pub fn name(self) -> &'static str {
        match self {
            Unit::NsPerOp => "ns/op",
            Unit::MBps => "MB/s",
        }
    }

    /// Bandwidth: more is better, so a change is read the other way round.
    pub fn higher_is_better(self) -> bool {
        self == Unit::MBps
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct OpResult {
    pub op: String,
    pub group: String,
    pub unit: Unit,
    /// Iterations per sample: grown until a sample lasted --sample-ms, or --iterations.
    pub iterations: u64,
    pub samples: Vec<f64>,
    #[serde(flatten)]
    pub summary: Summary,
    /// What the op proved it did over all samples (operations, bytes).
    pub proof_ops: u64,
    pub proof_bytes: u64,
    /// Under `--timed-name`: every op run under that name, calibration and
    /// warm-up included (what divides a trace of the name into calls per op).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops_run: Option<u64>,
    /// Ops that hold a descriptor per call (close, creat): the calls of the
    /// smallest batch a sample was timed in. Such a sample is timed as
    /// batches, each opened (or closed) untimed; its time is the sum of the
    /// batches' timed parts, each less one clock-read pair, and the figure
    /// is that sum over the sample's calls. Below the usual batch when the
    /// descriptor limit left less room.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_calls: Option<u64>,
    /// Subtracted from every sample (ctx: lat_ctx's token passing in one process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_ns: Option<f64>,
    /// Process-creation ops: resident size of the small helper that forks
    /// (lmbench's lat_proc forks from its own small program).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helper_rss_kb: Option<u64>,
    /// Process-creation ops: the program that created the processes
    /// (lsmpmon's C helper, `lsmpmon-fork`, by the path it ran from).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helper: Option<String>,
    /// Ops serving concurrent clients (web): each sampled request's latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
    /// The AVC sweep's ops under SELinux: the access vector cache around the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avc: Option<super::avc::AvcFigures>,
}

/// Summary statistics of one operation's samples.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// Coefficient of variation, percent (stdev / mean).
    pub cov_pct: f64,
    /// (max - min) / median, percent.
    pub spread_pct: f64,
}

/// Percentiles of every sampled request's latency (nearest rank).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct Latency {
    pub requests: usize,
    pub p50_ns: f64,
    pub p90_ns: f64,
    pub p99_ns: f64,
    pub max_ns: f64,
}

impl Latency {
    /// The percentiles of `values` (ns); none of no value.
    pub fn of(values: &[f64]) -> Option<Self> {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let rank = |p: f64| v[((p / 100.0 * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Some(Self {
            requests: v.len(),
            p50_ns: (!v.is_empty()).then(|| rank(50.0))?,
            p90_ns: rank(90.0),
            p99_ns: rank(99.0),
            max_ns: *v.last()?,
        })
    }
}

impl BenchResult {
    /// The result of `op`, if this run measured it.
    pub fn op(&self, op: &str) -> Option<&OpResult> {
        self.results.iter().find(|r| r.op == op)
    }
}

#[cfg(test)]
mod latency_tests {
    use super::Latency;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=200).map(f64::from).collect();
        let l = Latency::of(&v).unwrap();
        assert_eq!(
            (l.p50_ns, l.p90_ns, l.p99_ns, l.max_ns),
            (100.0, 180.0, 198.0, 200.0)
        );
        assert_eq!(l.requests, 200);
        assert_eq!(Latency::of(&[7.0]).unwrap().p99_ns, 7.0);
        assert!(Latency::of(&[]).is_none());
    }
}
