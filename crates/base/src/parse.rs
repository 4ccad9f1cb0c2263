//! Checks of command-line values, run by clap before anything else (no root,
//! no BPF, no guest needed): a value that cannot make sense is a usage error
//! (exit 2, one line), never a panic or an empty result.
use std::path::PathBuf;

/// Longest duration or interval accepted: one year.
pub const MAX_SECONDS: f64 = 365.0 * 86_400.0;
/// Shortest: a millisecond (the trace loop ticks every 20 ms anyway).
pub const MIN_SECONDS: f64 = 0.001;

fn finite(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number"))?;
    if !v.is_finite() {
        return Err(format!("'{s}' is not a finite number"));
    }
    Ok(v)
}

fn within(s: &str, min: f64, max: f64, unit: &str) -> Result<f64, String> {
    let v = finite(s)?;
    if !(min..=max).contains(&v) {
        return Err(format!("must be between {min} and {max} {unit}"));
    }
    Ok(v)
}

/// `--duration`, `--interval`: seconds, finite, positive, at most a year.
pub fn seconds(s: &str) -> Result<f64, String> {
    within(s, MIN_SECONDS, MAX_SECONDS, "seconds")
}

/// `--timing-windows ON/EVERY`: seconds, ON at least 0.1 and less than
/// EVERY, EVERY at most a day.
pub fn windows(s: &str) -> Result<(f64, f64), String> {
    let (on, every) = s
        .split_once('/')
        .ok_or_else(|| format!("'{s}' is not ON/EVERY (seconds, e.g. 5/60)"))?;
    let on = within(on, 0.1, 86_400.0, "seconds")?;
    let every = within(every, 0.1, 86_400.0, "seconds")?;
    if on >= every {
        return Err(format!(
            "'{s}': a window ({on} s) must be shorter than the time between windows ({every} s)"
        ));
    }
    Ok((on, every))
}

/// `bench --sample-ms`: a sample of 1 µs to one minute.
pub fn sample_ms(s: &str) -> Result<f64, String> {
    within(s, 0.001, 60_000.0, "milliseconds")
}

/// A comma-separated list with at least one non-empty item.
pub fn list(s: &str) -> Result<String, String> {
    if s.split(',').all(|w| w.trim().is_empty()) {
        return Err("the list is empty".into());
    }
    Ok(s.to_string())
}

/// Text without control characters: it is echoed in messages and recorded
/// in results, which refuse them.
pub fn printable(s: &str) -> Result<String, String> {
    match s.chars().find(|c| c.is_control()) {
        Some(c) => Err(format!("a control character ({c:?}) in the value")),
        None => Ok(s.to_string()),
    }
}

/// A path without control characters.
pub fn path(s: &str) -> Result<std::path::PathBuf, String> {
    printable(s).map(std::path::PathBuf::from)
}

/// A string that must not be empty.
pub fn non_empty(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        return Err("must not be empty".into());
    }
    Ok(s.to_string())
}

/// A bounded text that the kernel compares byte for byte (comm, base name).
pub fn bounded(s: &str, max: usize) -> Result<String, String> {
    let s = non_empty(s)?;
    if s.len() > max {
        return Err(format!("longer than {max} bytes: nothing could match"));
    }
    Ok(s)
}

/// `trace --pid`: a process that exists now.
pub fn live_pid(s: &str) -> Result<u32, String> {
    let pid: u32 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a process id"))?;
    if pid == 0 || !std::path::Path::new(&format!("/proc/{pid}")).exists() {
        return Err(format!("no process {pid}: nothing could match"));
    }
    Ok(pid)
}

/// `trace --uid`: any user id but (uid_t)-1, which no task has.
pub fn uid(s: &str) -> Result<u32, String> {
    let uid: u32 = s.parse().map_err(|_| format!("'{s}' is not a user id"))?;
    if uid == u32::MAX {
        return Err("4294967295 is (uid_t)-1, no task's user id".into());
    }
    Ok(uid)
}

/// The cgroup v2 file system's magic (statfs f_type).
const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;

/// `trace --cgroup`: a cgroup v2 directory (absolute, or under /sys/fs/cgroup).
pub fn cgroup(s: &str) -> Result<String, String> {
    let s = non_empty(s)?;
    let abs = PathBuf::from(&s);
    let p = if s.starts_with('/') && abs.exists() {
        abs
    } else {
        PathBuf::from("/sys/fs/cgroup").join(s.trim_start_matches('/'))
    };
    if !p.is_dir() || !on_cgroup2(&p) {
        return Err(format!("{} is not a cgroup v2 directory", p.display()));
    }
    Ok(s)
}

fn on_cgroup2(p: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: valid path and a zeroed out-buffer.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    (unsafe { libc::statfs(c.as_ptr(), &mut st) } == 0) && st.f_type as i64 == CGROUP2_SUPER_MAGIC
}

/// `bench --cpu`: a CPU this machine has (and that fits a cpu_set_t).
pub fn cpu(s: &str) -> Result<usize, String> {
    let cpu: usize = s
        .parse()
        .map_err(|_| format!("'{s}' is not a CPU number"))?;
    // SAFETY: plain query.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1) as usize;
    if cpu >= n.min(libc::CPU_SETSIZE as usize) {
        return Err(format!("this machine has CPUs 0 to {}", n - 1));
    }
    Ok(cpu)
}

/// Comma-separated names, in order, each once.
pub fn split_list(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        if !out.iter().any(|o| o == w) {
            out.push(w.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timing_windows_are_a_shorter_window_in_a_longer_period() {
        assert_eq!(windows("5/120"), Ok((5.0, 120.0)));
        assert_eq!(windows(" 0.5/2"), Ok((0.5, 2.0)));
        for bad in [
            "5", "5/5", "6/5", "0/5", "0.01/5", "nan/5", "5/inf", "-1/5", "5/1e9", "/", "5/", "a/b",
        ] {
            assert!(windows(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn seconds_are_finite_positive_and_bounded() {
        for bad in ["nan", "inf", "-inf", "-1", "0", "1e300", "", "x", "1e-9"] {
            assert!(seconds(bad).is_err(), "{bad}");
        }
        assert_eq!(seconds("0.5"), Ok(0.5));
        assert!(sample_ms("nan").is_err() && sample_ms("1e300").is_err());
        assert_eq!(sample_ms("2"), Ok(2.0));
    }

    #[test]
    fn filters_that_cannot_match_are_refused() {
        assert!(live_pid("0").is_err() && live_pid("4294967295").is_err());
        assert!(live_pid(&std::process::id().to_string()).is_ok());
        assert!(uid("4294967295").is_err() && uid("4294967296").is_err());
        assert_eq!(uid("0"), Ok(0));
        assert!(cgroup("").is_err() && cgroup("/etc").is_err());
        assert!(cgroup("no-such-cgroup-lsmpmon").is_err());
        assert!(list("").is_err() && list(" , ").is_err() && list("a,").is_ok());
        assert!(cpu("5000").is_err() && cpu("0").is_ok());
    }

    #[test]
    fn lists_keep_their_order_once_each() {
        assert_eq!(super::split_list(" b,a,,b , c"), ["b", "a", "c"]);
        assert!(super::split_list(",").is_empty());
    }
}
