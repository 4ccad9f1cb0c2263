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
/// with a fixed one they repeat exactly (BENCHMARKS.md, 'Determinism of a guest').
pub use model::draw::RTC_FIXED_BASE;
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
/// stays host time's decision (a busy host: tens of µs; BENCHMARKS.md, 'IMA: Tables 1-3').
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
    /// hotplug and time runs on (found with 6.1; BENCHMARKS.md, 'Two and four
    /// CPUs in virtual time').
    pub fn hotplugs_cpus(&self) -> bool {
        self.cpus > 1 && self.accel == Accel::Tcg && self.icount != "off"
    }
}

type Suboptions<'a> = &'a [(&'a str, &'a dyn Fn(&str) -> bool, &'a str)];

/// QEMU's `key=value,…` (each key once, known values; a first part without
/// `=` is the `implied` key's value, as QEMU reads it) as (key, value) pairs.
fn suboptions<'s>(
    s: &'s str,
    implied: Option<&'s str>,
    known: Suboptions,
) -> Result<Vec<(&'s str, &'s str)>, String> {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for (i, part) in s.split(',').enumerate() {
        let (key, value) = match (part.split_once('='), implied) {
            (Some(kv), _) => kv,
            (None, Some(k)) if i == 0 => (k, part),
            (None, _) => return Err(format!("'{part}' is not KEY=VALUE")),
        };
        let Some((_, ok, values)) = known.iter().find(|(k, _, _)| *k == key) else {
            let keys: Vec<&str> = known.iter().map(|(k, _, _)| *k).collect();
            return Err(format!("unknown key '{key}' (give {})", keys.join(", ")));
        };
        if !ok(value) {
            return Err(format!("'{value}' is not a {key} (give {key}={values})"));
        }
        if seen.iter().any(|(k, _)| *k == key) {
            return Err(format!("{key} given twice"));
        }
        seen.push((key, value));
    }
    Ok(seen)
}

/// `--icount`: "off", or QEMU's `shift=0..10|auto` with `sleep=on|off`,
/// `align=on|off`, in the combinations QEMU accepts: checked before the
/// boot, where QEMU would refuse it only after the kernel was fetched.
pub fn icount(s: &str) -> Result<String, String> {
    if s == "off" {
        return Ok(s.into());
    }
    let shift = |v: &str| v == "auto" || v.parse::<u8>().is_ok_and(|n| n <= 10);
    let on_off = |v: &str| v == "on" || v == "off";
    let opts = suboptions(
        s,
        Some("shift"),
        &[
            ("shift", &shift, "0..10|auto"),
            ("sleep", &on_off, "on|off"),
            ("align", &on_off, "on|off"),
        ],
    )?;
    let get = |k: &str| opts.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
    let incompatible = match (get("shift"), get("sleep"), get("align")) {
        (None, _, _) => Some("give shift=N|auto (or off for no -icount)"),
        (_, Some("off"), Some("on")) => Some("align=on needs sleep=on"),
        (Some("auto"), _, Some("on")) => Some("shift=auto and align=on do not go together"),
        (Some("auto"), Some("off"), _) => Some("shift=auto and sleep=off do not go together"),
        _ => None,
    };
    match incompatible {
        Some(why) => Err(why.into()),
        None => Ok(s.into()),
    }
}

/// `--rtc`: empty (QEMU's default), or `base=utc|localtime|DATE` (DATE
/// 2006-06-17 or 2006-06-17T16:01:21), `clock=host|rt|vm`,
/// `driftfix=none|slew`.
pub fn rtc(s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Ok(String::new());
    }
    let base = |v: &str| v == "utc" || v == "localtime" || is_datetime(v);
    let clock = |v: &str| matches!(v, "host" | "rt" | "vm");
    let driftfix = |v: &str| v == "none" || v == "slew";
    suboptions(
        s,
        None,
        &[
            ("base", &base, "utc|localtime|YYYY-MM-DD[THH:MM:SS]"),
            ("clock", &clock, "host|rt|vm"),
            ("driftfix", &driftfix, "none|slew"),
        ],
    )?;
    Ok(s.into())
}

/// QEMU's `-rtc base=` date: 2006-06-17 or 2006-06-17T16:01:21 (from 1970).
fn is_datetime(v: &str) -> bool {
    let (date, time) = v.split_once('T').unwrap_or((v, "00:00:00"));
    let numbers = |text: &str, sep: char, widths: [usize; 3]| -> Option<[u32; 3]> {
        let parts: Vec<&str> = text.split(sep).collect();
        let mut out = [0; 3];
        for (i, p) in parts.iter().enumerate() {
            let digits = p.len() == *widths.get(i)? && p.bytes().all(|b| b.is_ascii_digit());
            out[i] = p.parse().ok().filter(|_| digits)?;
        }
        (parts.len() == 3).then_some(out)
    };
    matches!(
        (numbers(date, '-', [4, 2, 2]), numbers(time, ':', [2, 2, 2])),
        (Some([y, m, d]), Some([h, min, s]))
            if y >= 1970 && (1..=12).contains(&m) && (1..=31).contains(&d)
                && h <= 23 && min <= 59 && s <= 59
    )
}

/// The least memory `vm run` accepts: the kernel's 64 MiB and twice an
/// initramfs of this lsmpmon padded to 24 MiB, busybox and the rest (see
/// `initramfs::max_bytes`). On 6.1, 112 MiB panicked unpacking it, 128 booted.
pub const MIN_MEMORY_MB: u32 = 128;
/// QEMU's `-m` above this is refused before booting.
pub const MAX_MEMORY_MB: u32 = 65_536;

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

    /// Issue 34 item 9: a bad --icount or --rtc reached QEMU after the boot
    /// began (124); they are refused as they are parsed.
    #[test]
    fn icount_and_rtc_values_qemu_refuses_are_refused_first() {
        for ok in [
            "off",
            "shift=0,sleep=off",
            "0",
            "shift=auto",
            "shift=10,align=on,sleep=on",
        ] {
            assert_eq!(icount(ok).as_deref(), Ok(ok), "{ok}");
        }
        for bad in [
            "",
            "bogus",
            "shift=11",
            "shift=-1",
            "shift=0,sleep=maybe",
            "shift=0,shift=1",
            "sleep=off",
            "shift=0,align=on,sleep=off",
            "shift=auto,sleep=off",
            "shift=0,rr=record",
            "shift=0,",
        ] {
            assert!(icount(bad).is_err(), "{bad}");
        }
        for ok in [
            "",
            RTC_DEFAULT,
            "base=utc",
            "clock=host,driftfix=slew",
            "base=2006-06-17T16:01:21",
        ] {
            assert_eq!(rtc(ok).as_deref(), Ok(ok), "{ok}");
        }
        for bad in [
            "bogus",
            "clock=wall",
            "base=yesterday",
            "base=2000-13-01",
            "base=2000-00-10",
            "base=2000-01-01T24:00:00",
            "base=1969-12-31",
            "clock=vm,clock=vm",
            "base=2000-1-1",
        ] {
            assert!(rtc(bad).is_err(), "{bad}");
        }
        assert_eq!(
            icount("shift=0,sleep=on,align=on"),
            Ok("shift=0,sleep=on,align=on".into())
        );
        assert!(icount("shift=x")
            .unwrap_err()
            .contains("give shift=0..10|auto"));
    }
}
