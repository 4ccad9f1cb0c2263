//! The machine a run measures: its kernel parameters, CPU and clock, and
//! pinning the run to one of its CPUs.
use anyhow::Result;

use super::result::BenchProvenance;
use base::error::usage;

/// Kernel parameters that change what an LSM costs.
const BOOT_PARAMS: &[&str] = &[
    "lsm=",
    // vm run boots a guest of several CPUs under -icount on one, then hotplugs.
    "maxcpus=",
    "security=",
    "selinux=",
    "enforcing=",
    "apparmor=",
    "ima",
    "evm",
    "lockdown=",
];

pub fn provenance() -> BenchProvenance {
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let boot_params = cmdline
        .split_whitespace()
        .filter(|p| BOOT_PARAMS.iter().any(|k| p.starts_with(k)))
        .map(String::from)
        .collect();
    let clocksource =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .unwrap_or_default()
            .trim()
            .to_string();
    BenchProvenance {
        base: model::provenance::collect(),
        boot_params,
        cpu_model: cpu_model(),
        clocksource,
        online_cpus: online_cpus(),
        workload_contained: None,
    }
}

/// CPUs online, from the kernel's own list ("0-1,3"); 1 if unreadable.
fn online_cpus() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| cpu_list_len(s.trim()))
        .unwrap_or(1)
}

/// How many CPUs a kernel CPU list names: "0", "0-1", "0-3,6".
fn cpu_list_len(list: &str) -> Option<usize> {
    list.split(',')
        .map(|part| match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                b.checked_sub(a).map(|d| d + 1)
            }
            None => part.parse::<usize>().ok().map(|_| 1),
        })
        .sum()
}

pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_default()
}

/// `--cpu`: the whole run on one CPU.
pub fn pin(cpu: usize) -> Result<()> {
    // SAFETY: cpu_set_t manipulation for this thread; cpu < CPU_SETSIZE (checked by the parser).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(usage(format!(
                "cannot pin to CPU {cpu}: {}",
                std::io::Error::last_os_error()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::cpu_list_len;

    #[test]
    fn cpu_lists_are_counted() {
        assert_eq!(cpu_list_len("0"), Some(1));
        assert_eq!(cpu_list_len("0-1"), Some(2));
        assert_eq!(cpu_list_len("0-3,6"), Some(5));
        assert_eq!(cpu_list_len("3-1"), None);
        assert_eq!(cpu_list_len(""), None);
    }
}
