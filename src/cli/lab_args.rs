//! The command line of `lab run` (and `plan`, `submit`) and `lab rerun`,
//! turned into the lab's typed requests: nothing below the CLI sees clap.
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use base::{error::usage, parse::split_list};
use lab::{
    host::rerun::RerunRequest,
    plan::{Draws, Paths, Request},
    DEFAULT_CONFIGS,
};
use model::bench::WorkloadProgram;
use model::options::{self, LabOptions, DEFAULT_BENCH_DIR};

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Kernel series, comma-separated: 5.10, 6.1, 6.12, 7.3 (the names `vm run` knows).
    #[arg(long, default_value = "6.1", value_name = "LIST")]
    pub kernels: String,
    /// Debian kernel flavour (the package's suffix: linux-image-<release>-cloud-amd64).
    #[arg(long, default_value = "cloud")]
    pub flavour: String,
    /// Configurations (directories under configs/, /usr/share/lsmpmon/configs
    /// when installed, or a --config-dir), comma-separated.
    #[arg(long, default_value = DEFAULT_CONFIGS, value_name = "LIST")]
    pub configs: String,
    /// More configuration directories (searched first). Repeatable.
    #[arg(long = "config-dir", value_name = "DIR", value_parser = base::parse::path)]
    pub config_dirs: Vec<PathBuf>,
    /// Guest CPU counts, comma-separated (1 to 8): one cell per kernel,
    /// configuration and CPU count.
    #[arg(long, default_value = "1", value_name = "LIST")]
    pub cpus: String,
    /// Benchmark operations and groups, as `bench --ops` (`web`: nginx in the
    /// guest, loaded by 8/16/24/32 clients).

    #[arg(
        long,
        default_value = "paper",
        default_value_if("workload", clap::builder::ArgPredicate::IsPresent, Some("workload"))
    )]
    pub ops: String,
    /// Your own program as the op `workload` in every cell (a script with #!
    /// or a static binary, copied into each guest): one op = one run of it.
    /// With it --ops defaults to `workload`, and gains it when it does not name it.
    #[arg(long, value_name = "FILE", value_parser = base::parse::path)]
    pub workload: Option<PathBuf>,
    /// Guest seconds one run of --workload may last before it is killed (the cell fails).
    #[arg(long = "workload-timeout", value_name = "S", default_value_t = 600,
        value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub workload_timeout_s: u64,
    /// Samples per op for the untraced run (the median is reported; bench's default).
    #[arg(long, default_value_t = 11, value_parser = clap::value_parser!(u32).range(range(&options::SAMPLES)))]
    pub samples: u32,
    /// Minimum length of one sample, guest milliseconds.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(range(&options::SAMPLE_MS)))]
    pub sample_ms: u32,
    /// Operations per sample, fixed (bench --iterations; e.g. the sched_yield rounds).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(options::ITERATIONS))]
    pub iterations: Option<u64>,
    /// Layout draws per cell: each boots with its own recorded wall clock,
    /// which seeds the kernel's layout (slab order, hash salts), and repeats
    /// exactly; the tables give the median over draws with an interval.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=model::draw::MAX_DRAWS as i64))]
    pub draws: u32,
    /// Also run the ops under `trace --per-lsm` (the Table 4 form).
    #[arg(long)]
    pub trace: bool,
    /// With --trace: trace only each cell's first N draws (the others run
    /// the untraced benchmark only; hook costs need one draw, overheads many).
    #[arg(long, value_name = "N", requires = "trace", value_parser = clap::value_parser!(u32).range(1..=model::draw::MAX_DRAWS as i64))]
    pub trace_draws: Option<u32>,
    /// Where the benchmark's files live in the guest (`bench --dir`; its
    /// parents are made). Path depth changes what path-based modules cost:
    /// only cells with the same directory are compared.
    #[arg(long, default_value = DEFAULT_BENCH_DIR, value_name = "DIR", value_parser = options::bench_dir)]
    pub bench_dir: String,
    /// Guests at once (default: the number of CPUs).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: Option<u32>,
    /// Wall-clock seconds before a cell's guest is killed.
    #[arg(long = "timeout", default_value_t = 1800, value_parser = clap::value_parser!(u64).range(options::TIMEOUT_S))]
    pub timeout_s: u64,
    /// Results directory (created; cells accumulate, newest per cell wins in tables).
    #[arg(long, default_value = "lab-results", value_parser = base::parse::path)]
    pub results: PathBuf,
    /// Guest memory, MiB (256 to 65536).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(range(&options::MEMORY_MB)))]
    pub memory_mb: u32,
    #[command(flatten)]
    pub cache: vm::CacheDir,
    /// Debian archive to fetch kernels from. Default: this machine's apt sources.
    #[arg(long, env = "LSMPMON_MIRROR", value_name = "URL")]
    pub mirror: Option<String>,
}

#[derive(Args, Debug)]
pub struct RerunArgs {
    /// A cell result (results/cells/*.json).
    pub result: PathBuf,
    /// Where to write the new cell (default: the directory the result is in).
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// More configuration directories, searched first (the cell's configuration must be
    /// found unchanged). Repeatable.
    #[arg(long = "config-dir", value_name = "DIR", value_parser = base::parse::path)]
    pub config_dirs: Vec<PathBuf>,
    /// Run even if the configuration or kernel package changed since (recorded).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub cache: vm::CacheDir,
    /// Debian archive to fetch kernels from. Default: this machine's apt sources.
    #[arg(long, env = "LSMPMON_MIRROR", value_name = "URL")]
    pub mirror: Option<String>,
}

impl RunArgs {
    /// The request: lists split (each name once, in order), options typed.
    pub fn request(&self) -> Result<Request> {
        let options = LabOptions {
            ops: bench::with_workload(&self.ops, self.workload.is_some())?,
            workload: self.workload_program()?,
            samples: self.samples as usize,
            sample_ms: self.sample_ms as f64,
            iterations: self.iterations,
            trace: self.trace,
            memory_mb: self.memory_mb,
            timeout_s: self.timeout_s,
            bench_dir: self.bench_dir.clone(),
        };
        // What a plan file or a rerun is held to, checked before anything boots.
        options.check().map_err(usage)?;
        lab::plan::Draws::traced_within(self.draws, self.trace_draws).map_err(usage)?;
        Ok(Request {
            kernels: split_list(&self.kernels),
            flavour: self.flavour.clone(),
            configs: split_list(&self.configs),
            cpus: cpu_counts(&self.cpus)?,
            options,
            draws: Draws {
                first: 0,
                count: self.draws,
                traced: self.trace_draws,
            },
            paths: Paths {
                config_dirs: self.config_dirs.clone(),
                cache_dir: self.cache.path(),
                mirror: self.mirror.clone(),
                results: self.results.clone(),
            },
        })
    }
}

impl RunArgs {
    /// The --workload program as the cells record it.
    fn workload_program(&self) -> Result<Option<WorkloadProgram>> {
        let Some(p) = &self.workload else {
            return Ok(None);
        };
        let program = bench::workload::Program::read(p).map_err(usage)?;
        Ok(Some(WorkloadProgram {
            path: bench::workload::recorded_path(&program.real),
            sha256: program.sha256,
            timeout_s: self.workload_timeout_s,
        }))
    }
}

impl RerunArgs {
    pub fn request(&self) -> RerunRequest {
        RerunRequest {
            result: self.result.clone(),
            results: self.results.clone(),
            config_dirs: self.config_dirs.clone(),
            force: self.force,
            cache_dir: self.cache.path(),
            mirror: self.mirror.clone(),
        }
    }
}

/// An option's limits as clap takes them.
fn range(r: &std::ops::RangeInclusive<u32>) -> std::ops::RangeInclusive<i64> {
    *r.start() as i64..=*r.end() as i64
}

/// `--cpus 1,2`: each count once, 1 to MAX_CPUS.
fn cpu_counts(s: &str) -> Result<Vec<u32>> {
    let counts = split_list(s)
        .iter()
        .map(|w| match w.parse::<u32>() {
            Ok(n) if (1..=vm::MAX_CPUS).contains(&n) => Ok(n),
            _ => Err(usage(format!(
                "--cpus {s}: '{w}' is not a CPU count from 1 to {}",
                vm::MAX_CPUS
            ))),
        })
        .collect::<Result<Vec<u32>>>()?;
    if counts.is_empty() {
        return Err(usage("--cpus is empty"));
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::cpu_counts;

    #[test]
    fn cpu_counts_are_checked_and_kept_once_in_order() {
        assert_eq!(cpu_counts("2,1,2").unwrap(), [2, 1]);
        for bad in ["0", "9", "two", "1,x", "-1"] {
            let e = cpu_counts(bad).unwrap_err().to_string();
            assert!(e.contains("is not a CPU count from 1 to 8"), "{bad}: {e}");
        }
        for empty in ["", ","] {
            let e = cpu_counts(empty).unwrap_err().to_string();
            assert_eq!(e, "--cpus is empty");
        }
    }
}
