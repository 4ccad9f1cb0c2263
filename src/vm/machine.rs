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
            rtc: RTC_DEFAULT.into(),
            kaslr: false,
            timeout,
            cpus: 1,
        }
    }
}

/// The guest's wall clock at boot: always the same date, then virtual time.
/// The kernel seeds its random pool with the wall clock at boot (slab
/// freelist order, hash salts, userland ASLR follow): with the host's date
/// there two boots of the same guest differed by up to 0.75 % on file ops,
/// with a fixed one they repeat exactly (BENCHMARKS.md §17).
pub const RTC_FIXED_BASE: &str = "2000-01-01";
/// QEMU -rtc by default: `clock=vm,base=` [`RTC_FIXED_BASE`].
pub const RTC_DEFAULT: &str = "clock=vm,base=2000-01-01";

/// Why `--cpus N` needs `--icount off`: found by booting 6.1 with -smp 2.
pub const SMP_ICOUNT: &str = "QEMU 7.2 hangs bringing up a second vCPU under -icount \
     (\"x86: Booting SMP configuration:\", virtual time stops)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_rtc_starts_at_the_fixed_date() {
        assert!(RTC_DEFAULT
            .split(',')
            .any(|p| p == format!("base={RTC_FIXED_BASE}")));
        assert_eq!(Machine::deterministic(Duration::ZERO).rtc, RTC_DEFAULT);
    }
}
