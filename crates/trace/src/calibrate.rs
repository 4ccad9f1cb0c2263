//! What lsmpmon's probes cost, measured on the running kernel before tracing
//! starts, on an empty kernel function lsmpmon can call at will
//! (`bpf_fentry_test1`, called once per BPF_PROG_TEST_RUN of a tracing
//! program):
//!
//! - the **floor**: what the probe pair measures around that empty function
//!   (the probe's own share of every timing, `--subtract-floor`);
//! - the **pair cost**: what the probe pair adds to the call *around* it, from
//!   the time of the test runs with the pair attached and without. A hook that
//!   calls other traced functions (a per-LSM implementation, a nested hook)
//!   contains their whole probe pairs; the probes count them and take this
//!   cost out once per pair (`nested_probes`).
use std::time::{Duration, Instant};

use libbpf_rs::{ProgramInput, ProgramMut};

use base::task_name;

/// The empty kernel function both are measured on (net/bpf/test_run.c).
pub const FUNCTION: &str = "bpf_fentry_test1";
/// Test runs are timed in blocks; the fastest block counts (the others met
/// interrupts or another task).
const BLOCKS: u32 = 5;
const RUNS_PER_BLOCK: u32 = 400;
const SETTLE: Duration = Duration::from_millis(300);

/// Runs the kernel's tracing test run once: one call of [`FUNCTION`].
fn test_run(driver: &ProgramMut) -> bool {
    driver.test_run(ProgramInput::default()).is_ok()
}

/// The time of one test run, the fastest block's average; None if the kernel
/// refuses test runs.
fn time_test_run(driver: &ProgramMut) -> Option<Duration> {
    let mut best: Option<Duration> = None;
    for _ in 0..BLOCKS {
        let start = Instant::now();
        for _ in 0..RUNS_PER_BLOCK {
            if !test_run(driver) {
                return None;
            }
        }
        let per_run = start.elapsed() / RUNS_PER_BLOCK;
        best = Some(best.map_or(per_run, |b| b.min(per_run)));
    }
    best
}

/// As many test runs as one measurement of `run` (under `comm`, as there),
/// with the calibration probe attached: its statistics then hold what it
/// measured. False if the kernel refuses test runs.
pub fn runs(driver: &ProgramMut, comm: Option<&str>) -> bool {
    let _name = comm.map(|c| task_name::Scoped::set(&task_name::comm(c)));
    time_test_run(driver).is_some()
}

/// The time of one test run in ns, the fastest block's (under `comm`, as
/// [`run`]); None if the kernel refuses test runs.
pub fn test_run_ns(driver: &ProgramMut, comm: Option<&str>) -> Option<f64> {
    let _name = comm.map(|c| task_name::Scoped::set(&task_name::comm(c)));
    time_test_run(driver).map(|d| d.as_secs_f64() * 1e9)
}

/// Attaches the calibration probe with `attach` (false: it could not be),
/// and returns the pair cost in ns (None if test runs do not work here).
/// The probe records the floor while the runs are timed: the caller reads it
/// from the probe's statistics. With `comm` (--comm), lsmpmon calibrates
/// under that name, so that the probe's name check costs what it costs for
/// a traced task.
pub fn run(driver: &ProgramMut, comm: Option<&str>, attach: impl FnOnce() -> bool) -> Option<f64> {
    let _name = comm.map(|c| task_name::Scoped::set(&task_name::comm(c)));
    // The test runs pass through traced hooks (security_bpf): let the
    // hooks' fresh attach settle too.
    std::thread::sleep(SETTLE);
    let without = time_test_run(driver);
    if !attach() {
        return None;
    }
    // Right after an attach the kernel may still route the call through a
    // slower path until its deferred work has run: on 7.3, in about one first
    // trace after boot in three, +1 800 ns per call for more than 20 ms
    // (a pair cost of 2 461 instead of 692); never in 8 boots after 300 ms.
    std::thread::sleep(SETTLE);
    let with = time_test_run(driver);
    match (without, with) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a).as_secs_f64() * 1e9),
        _ => None,
    }
}
