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
pub use crate::model::draw::RTC_FIXED_BASE;
/// QEMU -rtc by default: `clock=vm,base=` [`RTC_FIXED_BASE`].
pub const RTC_DEFAULT: &str = "clock=vm,base=2000-01-01";

/// -icount for a guest with a TPM. QEMU's tpm-tis gives the guest no
/// interrupt, so the driver polls: a command swtpm (on the host) has not
/// answered at a status read costs a 1 ms sleep. With `sleep=off` that
/// sleep is skipped in host time, and whether swtpm answered before the
/// next read was a race (extends of 0.07 to 1.1 ms, medians moving ×2.7
/// between runs); with `sleep=on` the idle guest waits the millisecond in
/// host time, swtpm has answered, and a poll costs one interval (on a quiet
/// host: medians within 3 %). Whether swtpm answers before the first read
/// stays host time's decision (a busy host: tens of µs; BENCHMARKS.md §8).
/// Code that never idles counts instructions exactly as with `sleep=off`.
pub const ICOUNT_WITH_TPM: &str = "shift=0,sleep=on";

impl Machine {
    /// A guest that drives a TPM: [`ICOUNT_WITH_TPM`] unless time is not
    /// counted in instructions at all.
    pub fn with_tpm(mut self) -> Self {
        if self.accel == Accel::Tcg && self.icount == "shift=0,sleep=off" {
            self.icount = ICOUNT_WITH_TPM.into();
        }
        self
    }

    /// Whether the guest boots on one CPU and brings the others online from
    /// userland before COMMAND. QEMU 7.2 stops virtual time when a guest with
    /// two vCPUs boots under -icount (before "x86: Booting SMP
    /// configuration:"); booted with `maxcpus=1`, the second comes online by
    /// hotplug and time runs on (found with 6.1, BENCHMARKS.md §17).
    pub fn hotplugs_cpus(&self) -> bool {
        self.cpus > 1 && self.accel == Accel::Tcg && self.icount != "off"
    }
}

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

    #[test]
    fn a_tpm_guest_idles_in_host_time_unless_told_otherwise() {
        let m = Machine::deterministic(Duration::ZERO).with_tpm();
        assert_eq!(m.icount, "shift=0,sleep=on");
        let mut real = Machine::deterministic(Duration::ZERO);
        real.icount = "off".into();
        assert_eq!(real.with_tpm().icount, "off");
        let mut shifted = Machine::deterministic(Duration::ZERO);
        shifted.icount = "shift=1,sleep=off".into();
        assert_eq!(shifted.with_tpm().icount, "shift=1,sleep=off");
    }

    #[test]
    fn only_several_cpus_in_virtual_time_are_hotplugged() {
        let mut m = Machine::deterministic(Duration::ZERO);
        assert!(!m.hotplugs_cpus());
        m.cpus = 2;
        assert!(m.hotplugs_cpus());
        m.icount = "off".into();
        assert!(!m.hotplugs_cpus());
    }
}
