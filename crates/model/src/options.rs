//! What a lab run asks of each of its cells: the one options type. The
//! command line builds it, a plan file records it (its hash is the plan's
//! id), every cell records it, and a rerun reads it back from the cell.
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const DEFAULT_BENCH_DIR: &str = "/tmp/lsmpmon-bench";

/// The limits of each option: one definition for the command line, plan
/// files and recorded cells.
pub const SAMPLES: std::ops::RangeInclusive<u32> = 1..=1000;
pub const SAMPLE_MS: std::ops::RangeInclusive<u32> = 1..=10_000;
pub const ITERATIONS: std::ops::RangeInclusive<u64> = 1..=100_000_000;
pub const MEMORY_MB: std::ops::RangeInclusive<u32> = 256..=65_536;
pub const TIMEOUT_S: std::ops::RangeInclusive<u64> = 10..=86_400;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct LabOptions {
    /// Benchmark operations and groups, as `bench --ops`.
    pub ops: String,
    /// Samples per op (the median is reported).
    pub samples: usize,
    /// Minimum length of one sample, guest milliseconds.
    pub sample_ms: f64,
    /// Fixed operations per sample (`--iterations`), if any.
    #[serde(default)]
    pub iterations: Option<u64>,
    /// The ops also ran under `trace --per-lsm` (in a cell: this draw was traced).
    pub trace: bool,
    /// Guest memory, MiB.
    pub memory_mb: u32,
    /// Wall-clock seconds before the guest is killed.
    pub timeout_s: u64,
    /// Where the benchmark's files lived (cells from before it was an option: the default).
    #[serde(default = "default_bench_dir")]
    pub bench_dir: String,
    /// The user's program run as the `workload` op (`lab run --workload`),
    /// by its path on the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<crate::bench::WorkloadProgram>,
}

fn default_bench_dir() -> String {
    DEFAULT_BENCH_DIR.into()
}

impl LabOptions {
    /// Within what `lab run` accepts: a plan file or a cell edited by hand
    /// is held to the command line's limits. The ops are the bench's to check.
    pub fn check(&self) -> Result<(), String> {
        let whole_ms = self.sample_ms.fract() == 0.0 && self.sample_ms >= 0.0;
        let checks = [
            (
                !in_range(self.samples as u64, &SAMPLES),
                format!(
                    "{} samples: {} to {}",
                    self.samples,
                    SAMPLES.start(),
                    SAMPLES.end()
                ),
            ),
            (
                !whole_ms || !in_range(self.sample_ms as u64, &SAMPLE_MS),
                format!(
                    "sample {} ms: a whole number from {} to {}",
                    self.sample_ms,
                    SAMPLE_MS.start(),
                    SAMPLE_MS.end()
                ),
            ),
            (
                self.iterations.is_some_and(|n| !ITERATIONS.contains(&n)),
                format!(
                    "iterations {:?}: 1 to {}",
                    self.iterations,
                    ITERATIONS.end()
                ),
            ),
            (
                !MEMORY_MB.contains(&self.memory_mb),
                format!(
                    "memory {} MiB: {} to {}",
                    self.memory_mb,
                    MEMORY_MB.start(),
                    MEMORY_MB.end()
                ),
            ),
            (
                !TIMEOUT_S.contains(&self.timeout_s),
                format!(
                    "timeout {} s: {} to {}",
                    self.timeout_s,
                    TIMEOUT_S.start(),
                    TIMEOUT_S.end()
                ),
            ),
        ];
        match checks.into_iter().find(|(bad, _)| *bad) {
            Some((_, why)) => Err(why),
            None => {
                bench_dir(&self.bench_dir).map_err(|e| format!("bench directory: {e}"))?;
                self.check_workload()
            }
        }
    }

    /// A program exactly when the ops name its op, and a timeout that fails
    /// the op before the guest's own timeout kills the whole cell.
    fn check_workload(&self) -> Result<(), String> {
        let named = self.ops.split(',').any(|o| o.trim() == WORKLOAD_OP);
        match (&self.workload, named) {
            (None, true) => Err(format!("ops name `{WORKLOAD_OP}` but no --workload program is given")),
            (Some(_), false) => Err(format!("a --workload program is given but the ops do not name `{WORKLOAD_OP}`")),
            (Some(w), true) if !WORKLOAD_TIMEOUT_S.contains(&w.timeout_s) || w.timeout_s >= self.timeout_s => Err(format!(
                "--workload-timeout {} s: 1 to {}, and below the guest's --timeout {} s (a hung program must fail its op, not the whole cell)",
                w.timeout_s,
                WORKLOAD_TIMEOUT_S.end(),
                self.timeout_s
            )),
            _ => Ok(()),
        }
    }
}

/// The op `--workload` adds (bench's `workload::OP`; the model cannot see the bench).
const WORKLOAD_OP: &str = "workload";
/// Seconds one run of a --workload program may last.
pub const WORKLOAD_TIMEOUT_S: std::ops::RangeInclusive<u64> = 1..=86_400;

fn in_range(n: u64, r: &std::ops::RangeInclusive<u32>) -> bool {
    (*r.start() as u64..=*r.end() as u64).contains(&n)
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
    base::parse::printable(s)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    pub fn options() -> LabOptions {
        LabOptions {
            ops: "null,stat".into(),
            workload: None,
            samples: 3,
            sample_ms: 10.0,
            iterations: None,
            trace: false,
            memory_mb: 1024,
            timeout_s: 1800,
            bench_dir: DEFAULT_BENCH_DIR.into(),
        }
    }

    #[test]
    fn options_beyond_the_command_lines_limits_are_refused() {
        assert_eq!(options().check(), Ok(()));
        let refused = |f: &dyn Fn(&mut LabOptions), expect: &str| {
            let mut o = options();
            f(&mut o);
            let err = o.check().unwrap_err();
            assert!(err.contains(expect), "{expect}: {err}");
        };
        refused(&|o| o.samples = 0, "0 samples: 1 to 1000");
        refused(&|o| o.samples = 1001, "1001 samples");
        refused(&|o| o.sample_ms = 0.5, "sample 0.5 ms");
        refused(&|o| o.sample_ms = -1.0, "sample -1 ms");
        refused(&|o| o.sample_ms = f64::NAN, "sample NaN ms");
        refused(&|o| o.sample_ms = 10_001.0, "sample 10001 ms");
        refused(&|o| o.iterations = Some(0), "iterations Some(0)");
        refused(&|o| o.memory_mb = 255, "memory 255 MiB");
        refused(&|o| o.timeout_s = 9, "timeout 9 s");
        refused(&|o| o.ops = "null,workload".into(), "no --workload program");
        let program = |timeout_s| crate::bench::WorkloadProgram {
            path: "/w".into(),
            sha256: "0".repeat(64),
            timeout_s,
        };
        refused(
            &|o| o.workload = Some(program(60)),
            "the ops do not name `workload`",
        );
        refused(
            &|o| {
                o.ops = "workload".into();
                o.workload = Some(program(1800));
            },
            "below the guest's --timeout 1800 s",
        );
        let mut fine = options();
        fine.ops = "null,workload".into();
        fine.workload = Some(program(600));
        assert_eq!(fine.check(), Ok(()));
        refused(&|o| o.bench_dir = "/proc/x".into(), "guest mounts");
        refused(&|o| o.bench_dir = "/a/../etc".into(), "absolute directory");
    }

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
