//! The options of `lab run` and `lab rerun`. They live in the lab, not the
//! CLI, because a rerun parses a cell's recorded options with them.
use std::path::PathBuf;

use clap::Args;

use super::results;
use crate::vm;

pub const DEFAULT_CONFIGS: &str = "none,selinux-mini,apparmor,tomoyo,landlock,ima,bpf-lsm";
/// Every shipped configuration in the tables' order: the baseline, the
/// label-based, path-based and stacked modules, then integrity, then BPF.
pub const TABLE_ORDER: &str = "none,debian-default,selinux-mini,selinux-refpolicy,apparmor,tomoyo,smack,landlock,ima,ima-sha1,ima-tpm,bpf-lsm,mac-label,mac-path,mac-inode";

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
    #[arg(long = "config-dir", value_name = "DIR")]
    pub config_dirs: Vec<PathBuf>,
    /// Guest CPU counts, comma-separated (1 to 8): one cell per kernel,
    /// configuration and CPU count.
    #[arg(long, default_value = "1", value_name = "LIST")]
    pub cpus: String,
    /// Benchmark operations and groups, as `bench --ops` (`web`: nginx in the
    /// guest, loaded by 8/16/24/32 clients).

    #[arg(long, default_value = "paper")]
    pub ops: String,
    /// Samples per op for the untraced run (the median is reported; bench's default).
    #[arg(long, default_value_t = 11, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub samples: u32,
    /// Minimum length of one sample, guest milliseconds.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub sample_ms: u32,
    /// Operations per sample, fixed (bench --iterations; e.g. the sched_yield rounds).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub iterations: Option<u64>,
    /// Layout draws per cell: each boots with its own recorded wall clock,
    /// which seeds the kernel's layout (slab order, hash salts), and repeats
    /// exactly; the tables give the median over draws with an interval.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=crate::model::draw::MAX_DRAWS as i64))]
    pub draws: u32,
    /// The first draw's number (a plan's cell runs its one draw).
    #[arg(skip)]
    pub first_draw: u32,
    /// Also run the ops under `trace --per-lsm` (the Table 4 form).
    #[arg(long)]
    pub trace: bool,
    /// With --trace: trace only each cell's first N draws (the others run
    /// the untraced benchmark only; hook costs need one draw, overheads many).
    #[arg(long, value_name = "N", requires = "trace", value_parser = clap::value_parser!(u32).range(1..=crate::model::draw::MAX_DRAWS as i64))]
    pub trace_draws: Option<u32>,
    /// Where the benchmark's files live in the guest (`bench --dir`; its
    /// parents are made). Path depth changes what path-based modules cost:
    /// only cells with the same directory are compared.
    #[arg(long, default_value = results::DEFAULT_BENCH_DIR, value_name = "DIR", value_parser = bench_dir)]
    pub bench_dir: String,
    /// Guests at once (default: the number of CPUs).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: Option<u32>,
    /// Wall-clock seconds before a cell's guest is killed.
    #[arg(long = "timeout", default_value_t = 1800, value_parser = clap::value_parser!(u64).range(10..=86_400))]
    pub timeout_s: u64,
    /// Results directory (created; cells accumulate, newest per cell wins in tables).
    #[arg(long, default_value = "lab-results", value_parser = crate::base::parse::path)]
    pub results: PathBuf,
    /// Guest memory, MiB (256 to 65536).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(256..=65_536))]
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
    #[arg(long = "config-dir", value_name = "DIR")]
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

/// A guest directory the benchmark can make files in: absolute, plain, and
/// not below a file system the guest mounts (/proc, /sys, /dev).
pub fn bench_dir(s: &str) -> std::result::Result<String, String> {
    let dir = absolute_dir(s)?;
    let mounted = ["/proc", "/sys", "/dev"]
        .iter()
        .find(|m| dir == **m || dir.starts_with(&format!("{m}/")));
    match mounted {
        Some(m) => Err(format!(
            "{m} is a file system the guest mounts, not one the benchmark can make files in: \
             give a directory such as /tmp/lsmpmon-bench"
        )),
        None => Ok(dir),
    }
}

/// An absolute guest path without empty, `.` or `..` components.
fn absolute_dir(s: &str) -> std::result::Result<String, String> {
    crate::base::parse::printable(s)?;
    let ok = s.starts_with('/')
        && s.len() > 1
        && s[1..]
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..");
    if ok {
        Ok(s.to_string())
    } else {
        Err("give an absolute directory such as /tmp/lsmpmon-bench (no '.', '..' or '//')".into())
    }
}

impl RunArgs {
    /// Whether draw `draw` of a cell is traced.
    pub fn traced(&self, draw: u32) -> bool {
        self.trace && self.trace_draws.is_none_or(|n| draw < n)
    }
}

#[cfg(test)]
mod tests {
    use super::{absolute_dir, bench_dir};

    #[test]
    fn bench_dir_is_not_below_a_guest_mount() {
        for bad in ["/proc", "/proc/x", "/sys/kernel", "/dev/shm/x"] {
            let e = bench_dir(bad).unwrap_err();
            assert!(e.contains("the guest mounts"), "{bad}: {e}");
        }
        for ok in ["/tmp/x", "/procx", "/devices"] {
            assert_eq!(bench_dir(ok).as_deref(), Ok(ok));
        }
    }

    #[test]
    fn bench_dir_is_an_absolute_plain_path() {
        for ok in ["/tmp/lsmpmon-bench", "/d1", "/d1/d2/d3/d4"] {
            assert_eq!(absolute_dir(ok).as_deref(), Ok(ok));
        }
        for bad in ["", "/", "tmp/x", "/a//b", "/a/../b", "/a/./b", "/a/"] {
            assert!(absolute_dir(bad).is_err(), "{bad:?}");
        }
    }
}
