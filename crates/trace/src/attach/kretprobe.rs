//! Return probes of the kprobe fallback (kernels before 5.17), made through
//! tracefs `kprobe_events` so that lsmpmon sets their `maxactive`.
//!
//! A kretprobe keeps one instance per call in progress; when all are taken,
//! the return is lost (the kernel only counts it). Through the perf kprobe
//! PMU a kretprobe gets the kernel's default, the number of CPUs without
//! CONFIG_PREEMPTION: 1 in a 1-CPU guest, so while one task sleeps in a hook
//! every other task's return from it is lost. Here each gets enough for every
//! thread on the system twice over, and its losses (`kprobe_profile`'s
//! nmissed) are read into the hook's `dropped`.
//!
//! The events live in group `lsmpmon_<pid>` and are removed after their perf
//! events are closed (by the release child, see detach.rs); a group whose
//! process is gone (a SIGKILLed trace) is removed by the next trace.
use std::{
    cell::RefCell,
    collections::HashMap,
    ffi::CString,
    os::fd::OwnedFd,
    path::{Path, PathBuf},
};

use super::perf;

const TRACEFS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
const GROUP_PREFIX: &str = "lsmpmon_";
/// Bounds of maxactive: the least worth having, and what 260 hooks may take
/// (an instance is about 64 bytes: 1024 × 260 hooks ≈ 17 MiB at most).
const MAXACTIVE: (u32, u32) = (64, 1024);
const PERF_TYPE_TRACEPOINT: u32 = 2;

/// This trace's return probes, made through tracefs.
pub struct ReturnProbes {
    tracefs: PathBuf,
    group: String,
    maxactive: u32,
    /// (hook id, event name) of every event made.
    events: RefCell<Vec<(u32, String)>>,
}

/// tracefs, mounted if it is not; None if it cannot be (return probes are
/// then the perf PMU's, with the kernel's default maxactive).
pub fn mounted_tracefs() -> Option<PathBuf> {
    if tracefs().is_none() {
        // SAFETY: constant C strings; a failure leaves nothing mounted.
        unsafe {
            libc::mount(
                c"tracefs".as_ptr(),
                c"/sys/kernel/tracing".as_ptr(),
                c"tracefs".as_ptr(),
                0,
                std::ptr::null(),
            );
        }
    }
    tracefs()
}

fn tracefs() -> Option<PathBuf> {
    TRACEFS
        .iter()
        .map(PathBuf::from)
        .find(|d| d.join("kprobe_events").exists())
}

/// Instances per return probe: every thread now, twice, and two per CPU.
pub fn choose_maxactive(threads: u32, cpus: u32) -> u32 {
    (2 * threads + 2 * cpus).clamp(MAXACTIVE.0, MAXACTIVE.1)
}

/// Threads on the system: /proc/loadavg's "running/total" field.
fn threads() -> u32 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().nth(3)?.split_once('/')?.1.parse().ok())
        .unwrap_or(MAXACTIVE.0)
}

fn append(path: &Path, line: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(path)?;
    f.write_all(line.as_bytes())
}

impl ReturnProbes {
    /// None where tracefs has no `kprobe_events`.
    pub fn new() -> Option<Self> {
        Some(Self {
            tracefs: mounted_tracefs()?,
            group: format!("{GROUP_PREFIX}{}", std::process::id()),
            maxactive: choose_maxactive(threads(), super::super::arrays::possible_cpus() as u32),
            events: RefCell::new(Vec::new()),
        })
    }

    /// A return probe on `function` for hook `hook_id`, as an enabled perf
    /// event running `prog`.
    pub fn attach(&self, prog: &OwnedFd, function: &str, hook_id: u32) -> Result<OwnedFd, String> {
        let (group, maxactive) = (&self.group, self.maxactive);
        let event = format!("{group}_{hook_id}");
        let definition = format!("r{maxactive}:{group}/{event} {function}\n");
        append(&self.tracefs.join("kprobe_events"), &definition).map_err(|e| {
            format!("tracefs kprobe_events refused a return probe on {function}: {e}")
        })?;
        self.events.borrow_mut().push((hook_id, event.clone()));
        let id_path = self.tracefs.join(format!("events/{group}/{event}/id"));
        let id: u64 = std::fs::read_to_string(id_path)
            .map_err(|e| format!("kprobe event id of {event}: {e}"))?
            .trim()
            .parse()
            .map_err(|e| format!("kprobe event id of {event}: {e}"))?;
        let attr = libbpf_sys::perf_event_attr {
            type_: PERF_TYPE_TRACEPOINT,
            size: std::mem::size_of::<libbpf_sys::perf_event_attr>() as u32,
            config: id,
            ..Default::default()
        };
        perf::attach(&attr, prog, "kretprobe event")
    }

    /// maxactive of the return probes, if any were made.
    pub fn maxactive(&self) -> Option<u32> {
        (!self.events.borrow().is_empty()).then_some(self.maxactive)
    }

    /// Returns lost so far (all instances taken), by hook id.
    pub fn missed(&self) -> HashMap<u32, u64> {
        let profile =
            std::fs::read_to_string(self.tracefs.join("kprobe_profile")).unwrap_or_default();
        let by_event = parse_profile(&profile);
        self.events
            .borrow()
            .iter()
            .filter_map(|(hook, event)| Some((*hook, *by_event.get(event.as_str())?)))
            .collect()
    }

    /// The removal of every event made, if any.
    pub fn removal(&self) -> Option<Removal> {
        let events = self.events.borrow();
        if events.is_empty() {
            return None;
        }
        let path = self.tracefs.join("kprobe_events");
        let path = CString::new(path.into_os_string().into_encoded_bytes()).ok()?;
        let lines = events
            .iter()
            .map(|(_, e)| format!("-:{}/{e}\n", self.group).into_bytes())
            .collect();
        Some(Removal { path, lines })
    }
}

/// `kprobe_profile`: "  EVENT  NHIT  NMISSED" per line -> EVENT -> NMISSED.
pub fn parse_profile(text: &str) -> HashMap<&str, u64> {
    text.lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let event = words.next()?;
            let _hits = words.next()?;
            Some((event, words.next()?.parse().ok()?))
        })
        .collect()
}

/// Removes a group's events: made ready before fork, run with raw syscalls
/// (the release child may call nothing else).
pub struct Removal {
    path: CString,
    lines: Vec<Vec<u8>>,
}

impl Removal {
    /// Removes each event, retrying while it is still busy (another copy of
    /// its perf event is being closed), for at most about 30 s in all.
    pub fn run(&self) {
        let mut budget_ms = 30_000u32;
        for line in &self.lines {
            loop {
                // SAFETY: open/write/close/nanosleep on our own buffers: async-signal-safe.
                let done = unsafe {
                    let fd = libc::open(self.path.as_ptr(), libc::O_WRONLY | libc::O_APPEND);
                    if fd < 0 {
                        return;
                    }
                    let n = libc::write(fd, line.as_ptr() as *const _, line.len());
                    libc::close(fd);
                    n >= 0
                };
                if done || budget_ms < 50 {
                    break;
                }
                budget_ms -= 50;
                let pause = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 50_000_000,
                };
                // SAFETY: as above.
                unsafe { libc::nanosleep(&pause, std::ptr::null_mut()) };
            }
        }
    }
}

/// Removes the events of lsmpmon traces whose process is gone.
pub fn remove_stale() {
    let Some(tracefs) = tracefs() else {
        return;
    };
    let path = tracefs.join("kprobe_events");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    for (group, event) in stale_events(&text, process_alive) {
        let _ = append(&path, &format!("-:{group}/{event}\n"));
    }
}

fn process_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    alive || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// (group, event) of lsmpmon's events whose trace process is not alive.
/// A line reads "r64:lsmpmon_123/lsmpmon_123_5 security_file_open".
fn stale_events(kprobe_events: &str, alive: impl Fn(i32) -> bool) -> Vec<(String, String)> {
    kprobe_events
        .lines()
        .filter_map(|l| {
            let (_, name) = l.split_whitespace().next()?.split_once(':')?;
            let (group, event) = name.split_once('/')?;
            let pid: i32 = group.strip_prefix(GROUP_PREFIX)?.parse().ok()?;
            (pid > 0 && !alive(pid)).then(|| (group.to_string(), event.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maxactive_covers_every_thread_within_bounds() {
        assert_eq!(choose_maxactive(5, 1), 64);
        assert_eq!(choose_maxactive(100, 2), 204);
        assert_eq!(choose_maxactive(100_000, 64), 1024);
    }

    #[test]
    fn profile_lines_give_nmissed_by_event() {
        let text = "  lsmpmon_42_0                                  120               0\n\
                    \x20 lsmpmon_42_3                                   17               5\n\
                    \x20 garbage\n";
        let m = parse_profile(text);
        assert_eq!(m.get("lsmpmon_42_3"), Some(&5));
        assert_eq!(m.get("lsmpmon_42_0"), Some(&0));
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn only_dead_lsmpmon_groups_are_stale() {
        let text = "r64:lsmpmon_7/lsmpmon_7_0 security_file_open\n\
                    r64:lsmpmon_8/lsmpmon_8_0 security_file_open\n\
                    p:kprobes/mine do_sys_open\n\
                    r:lsmpmonx_9/e security_inode_create\n";
        let stale = stale_events(text, |pid| pid == 8);
        assert_eq!(
            stale,
            [("lsmpmon_7".to_string(), "lsmpmon_7_0".to_string())]
        );
    }
}
