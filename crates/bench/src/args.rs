//! `lsmpmon bench`'s options, and the copy of them a result records.
use std::path::PathBuf;

use clap::Args;

use super::ops::workload::OP as WORKLOAD_OP;
use super::result::BenchOptions;
use model::bench::WorkloadProgram;

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Operations and groups: syscall, files, ipc, proc, yield, bw, lmbench (all of those), ima, paper
    /// (LSMPMON, Table 3; embedded SELinux, Tables 1-2), or op names, comma-separated.
    #[arg(long, default_value = "paper", value_parser = base::parse::list,
        default_value_if("workload", clap::builder::ArgPredicate::IsPresent, Some(WORKLOAD_OP)))]
    pub ops: String,
    /// Your own program as the op `workload` (a script with #! or a static
    /// binary): one op = one run of it, in the op's private directory. With
    /// it --ops defaults to `workload`, and gains it when it does not name it.
    #[arg(long, value_name = "FILE", value_parser = base::parse::path)]
    pub workload: Option<PathBuf>,
    /// Seconds one run of --workload may last before it is killed (the op fails).
    #[arg(long = "workload-timeout", value_name = "S", default_value_t = 600,
        value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub workload_timeout_s: u64,
    /// The program's sha256, taken before anything runs.
    #[arg(skip)]
    pub workload_sha256: Option<String>,
    /// The private copy of the program that the runs run.
    #[arg(skip)]
    pub workload_copy: Option<PathBuf>,
    /// Where file operations run: each op gets a fresh private directory
    /// DIR/<op>.XXXXXX, removed after; DIR is left as it was (made 0700 and
    /// removed if missing). Refused if another user could change it. Keep it
    /// identical across compared runs: path depth changes LSM costs.
    #[arg(long, default_value = "/tmp/lsmpmon-bench", value_parser = base::parse::path)]
    pub dir: PathBuf,
    /// Samples per operation (the median is reported).
    #[arg(long, default_value_t = 11, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=10_000))]
    pub samples: usize,
    /// Minimum duration of one sample; iterations grow until it is reached.
    #[arg(long, default_value_t = 10.0, value_parser = base::parse::sample_ms)]
    pub sample_ms: f64,
    /// Operations per sample, fixed instead of grown to --sample-ms: the yield
    /// group's rounds (the pseudo multi-process paper times 100 000 and 1 000 000).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub iterations: Option<u64>,
    /// Pin the benchmark to this CPU.
    #[arg(long, value_parser = base::parse::cpu)]
    pub cpu: Option<usize>,
    /// Bytes mapped by the mmap op.
    #[arg(long, default_value_t = 64 * 1024, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1 << 30))]
    pub mmap_bytes: usize,
    /// Map executable in the mmap op (what IMA's MMAP_CHECK measures).
    #[arg(long)]
    pub prot_exec: bool,
    /// Descriptors watched by select_file and select_tcp (at most 1000: select() stops at 1024).
    #[arg(long, default_value_t = 100, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1000))]
    pub select_fds: usize,
    /// Processes in the ctx op's token ring (lat_ctx's #procs).
    #[arg(long, default_value_t = 2, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(2..=64))]
    pub ctx_procs: usize,
    /// KiB each ctx process sums per hop (lat_ctx's -s).
    #[arg(long, default_value_t = 0, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=65536))]
    pub ctx_size: usize,
    /// Run inside a Landlock ruleset (allowing the work directory and what the ops need).
    #[arg(long)]
    pub landlock: bool,
    /// Machine-readable output (schema/bench.schema.json).
    #[arg(long)]
    pub json: bool,
    /// Compare with an earlier --json result: `value (+x %)` per op.
    #[arg(long, value_name = "BASE.json")]
    pub compare: Option<PathBuf>,
    /// Run under NAME except while an op runs (calibration and warm-up
    /// too), and report each op's runs (`ops_run`): `trace --comm` with the
    /// bench's own name then counts the ops' own calls, not the setup.
    #[arg(long, value_name = "NAME", value_parser = untimed_name)]
    pub untimed_name: Option<String>,
    /// Compare even if the baseline comes from another kernel, mode or machine (flagged).
    #[arg(long, requires = "compare")]
    pub force: bool,
}

impl BenchArgs {
    /// The options as the result records them.
    pub fn options(&self) -> BenchOptions {
        BenchOptions {
            ops: self.ops.clone(),
            dir: self.dir.display().to_string(),
            samples: self.samples,
            sample_ms: self.sample_ms,
            iterations: self.iterations,
            cpu: self.cpu,
            mmap_bytes: self.mmap_bytes,
            prot_exec: self.prot_exec,
            select_fds: self.select_fds,
            ctx_procs: self.ctx_procs,
            ctx_size_kib: self.ctx_size,
            landlock: self.landlock,
            dir_path: None,
            workload: self.workload.as_ref().map(|p| WorkloadProgram {
                path: super::ops::workload::recorded_path(p),
                sha256: self.workload_sha256.clone().unwrap_or_default(),
                timeout_s: self.workload_timeout_s,
            }),
            settled: false,
        }
    }
}

fn untimed_name(s: &str) -> Result<String, String> {
    let max = base::task_name::MAX_LEN;
    if s.is_empty() || s.len() > max || s.contains('\0') {
        return Err(format!("1 to {max} bytes, no NUL"));
    }
    Ok(s.to_string())
}
