//! How QEMU runs a guest: the `vm run` options the lab shares.
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    /// Software emulation with instruction-counted (virtual, deterministic) time.
    Tcg,
    /// Hardware virtualisation: real time, not deterministic. Only on request.
    Kvm,
}

/// How QEMU runs a guest: the `vm run` options the lab shares.
#[derive(Debug, Clone)]
pub struct Machine {
    pub memory_mb: u32,
    pub accel: Accel,
    pub icount: String,
    pub rtc: String,
    pub kaslr: bool,
    pub timeout: Duration,
    /// Guest CPUs (QEMU -smp). Under TCG with -icount they run one at a
    /// time, round-robin, on one host thread (see BENCHMARKS.md).
    pub cpus: u32,
}

impl Machine {
    /// The documented defaults: deterministic virtual time.
    pub fn deterministic(timeout: Duration) -> Self {
        Self {
            memory_mb: 1024,
            accel: Accel::Tcg,
            icount: "shift=0,sleep=off".into(),
            rtc: "clock=vm".into(),
            kaslr: false,
            timeout,
            cpus: 1,
        }
    }
}

/// Why `--cpus N` needs `--icount off`: found by booting 6.1 with -smp 2.
pub const SMP_ICOUNT: &str = "QEMU 7.2 hangs bringing up a second vCPU under -icount \
     (\"x86: Booting SMP configuration:\", virtual time stops)";
