//! A `trace` result (schema `lsmpmon.trace/1`): every LSM hook's calls and
//! time, per LSM and per syscall, with how they were probed.
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::provenance::Provenance;

pub const TRACE_SCHEMA: &str = "lsmpmon.trace/1";

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TraceResult {
    pub schema: String,
    pub provenance: Provenance,
    pub options: TraceOptions,
    pub probe: ProbeInfo,
    /// Time the trace was enabled, in the unit of `provenance.time`.
    pub elapsed_ns: u64,
    pub hooks: Vec<HookResult>,
    /// With --per-lsm: each active LSM's own implementation of each hook.
    pub per_lsm: Vec<LsmHookResult>,
    pub syscalls: Vec<SyscallResult>,
    /// With --by cgroup: the hooks' calls by the cgroup of the task making them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroups: Option<CgroupBreakdown>,
}

/// `--by cgroup`: every call counted in the cgroup (v2) of the task that
/// made it, timed calls' time too; the cgroups with most calls first.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct CgroupBreakdown {
    /// Cgroups kept by name (`--max-cgroups`); calls of any others are in
    /// the "(other)" row.
    pub max_cgroups: usize,
    /// Cgroups whose calls went to "(other)".
    pub folded_cgroups: usize,
    /// Calls in no row: the probes' table of (cgroup, hook) cells was full.
    pub lost_calls: u64,
    pub cgroups: Vec<CgroupResult>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct CgroupResult {
    /// The cgroup's path as /proc/PID/cgroup shows it ("/" the root,
    /// "/system.slice/docker-<id>.scope"); "(interrupt)" for calls from
    /// interrupt handlers, "(other)" beyond --max-cgroups, "(removed)" for
    /// cgroups gone before their first reading.
    pub cgroup: String,
    /// Its id (the inode number of its directory); none for the rows above
    /// that are no single cgroup.
    pub id: Option<u64>,
    #[serde(flatten)]
    pub total: CgroupCalls,
    pub hooks: Vec<CgroupHook>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct CgroupHook {
    pub hook: String,
    #[serde(flatten)]
    pub calls: CgroupCalls,
}

/// Calls in one cgroup (of one hook, or of all).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct CgroupCalls {
    /// Every call, timed or not.
    pub calls: u64,
    /// Calls without a context switch (none with --count-only).
    pub timed: u64,
    /// Their time.
    pub sum_ns: u64,
    /// Calls that returned -EACCES or -EPERM.
    pub deny: u64,
}

impl CgroupCalls {
    pub fn add(&mut self, o: &CgroupCalls) {
        self.calls += o.calls;
        self.timed += o.timed;
        self.sum_ns += o.sum_ns;
        self.deny += o.deny;
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LsmHookResult {
    pub lsm: String,
    #[serde(flatten)]
    pub stats: HookResult,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TraceOptions {
    pub hooks: String,
    pub command: Vec<String>,
    pub comm: Option<String>,
    pub pid: Option<u32>,
    pub uid: Option<u32>,
    pub cgroup: Option<String>,
    pub object: Option<String>,
    /// --with-interrupts: hooks of interrupt handlers that interrupted a
    /// task passing the subject filter are counted as that task's.
    #[serde(default)]
    pub with_interrupts: bool,
    pub subtract_floor: bool,
    pub syscall_time: bool,
    /// No histogram, per-syscall table or allow/deny were recorded.
    pub lean: bool,
    /// --count-only: calls and returns per hook, nothing timed (count,
    /// cs_count and every time field are 0).
    #[serde(default)]
    pub count_only: bool,
    pub per_lsm: bool,
    /// --by cgroup (`cgroups` holds the breakdown).
    #[serde(default)]
    pub by_cgroup: bool,
    /// `--sample N`: one call in N timed on average (drawn per CPU), the
    /// others counted only; None: every call timed.
    #[serde(default)]
    pub sample_every: Option<u32>,
    /// `--timing-windows ON/EVERY`: every call timed during windows of ON
    /// seconds, one opening every EVERY seconds, the others counted only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing_windows: Option<TimingWindows>,
}

impl TraceOptions {
    /// Which calls were timed, when not every one was: `--sample N` or
    /// `--timing-windows`.
    pub fn timing_note(&self) -> Option<String> {
        match (self.sample_every, &self.timing_windows) {
            (Some(n), _) => Some(format!("about 1 call in {n} timed")),
            (None, Some(w)) => Some(format!(
                "every call timed in windows of {} s every {} s ({} closed)",
                w.on_s, w.every_s, w.closed
            )),
            (None, None) => None,
        }
    }
}

/// `--timing-windows`: when calls are timed, and how many windows have closed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimingWindows {
    /// How long each window keeps the entries attached, in seconds.
    pub on_s: f64,
    /// A window opens every this many seconds.
    pub every_s: f64,
    /// Windows opened and closed so far (the time estimates move at each close).
    #[serde(default)]
    pub closed: u64,
    /// Entries attached or released so far (one multi-link counts once).
    #[serde(default)]
    pub entry_changes: u64,
    /// The time lsmpmon spent attaching and releasing them, in ms (what the
    /// windows cost beyond the probes).
    #[serde(default)]
    pub changing_ms: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProbeInfo {
    /// "multi session" or "session" (7.x), "kprobe session" (6.10+ with
    /// fprobe), "kprobe multi" (5.18+ with fprobe), "fentry/fexit", or
    /// "kprobe/kretprobe" (kernels before 5.17, or `--method kprobe`).
    pub method: String,
    /// The methods before it in the order (multi session, kprobe session,
    /// kprobe multi, session, fentry/fexit, kprobe/kretprobe) and why each
    /// was not used.
    #[serde(default)]
    pub not_used: Vec<NotUsed>,
    /// Why `--method auto` took this method where the kernel offered others.
    #[serde(default)]
    pub method_why: Option<String>,
    /// Why the fallback method was used, if it was: results are flagged.
    pub fallback: Option<String>,
    /// On a kernel that can preempt a task anywhere (preempt=full, lazy):
    /// its model, and that the probes run with preemption disabled.
    pub preemption: Option<String>,
    /// What an empty kernel function measures through the same probe pair.
    pub floor_ns: Option<f64>,
    pub floor_samples: u64,
    /// What one probe pair adds to the call around it; taken out of a call's
    /// time once per probe pair that ran inside it (`nested_probes`).
    pub pair_cost_ns: Option<f64>,
    /// `--sample`, `--timing-windows`: what the exit's test for a timed call
    /// adds inside it (the calibration probe's floor with that test less
    /// without), already taken out of every timed call; None without them.
    #[serde(default)]
    pub sample_skew_ns: Option<f64>,
    /// What is taken out of a call's time for each probe pair nested in it:
    /// `pair_cost_ns` when every call is timed; plus the exit's test
    /// (`sample_skew_ns`) under `--timing-windows`; under `--sample`, the
    /// pair of a call timed only for the outer one's sake, with its exit's
    /// test (measured). None when the pair cost is not measured.
    #[serde(default)]
    pub nested_cost_ns: Option<f64>,
    pub hooks_found: usize,
    pub hooks_attached: usize,
    pub attach_ms: f64,
    /// How long lsmpmon waited to release the probes; filled in after the
    /// statistics were read (detaching cannot lose them).
    pub detach_ms: Option<f64>,
    /// "background" (a child releases the links after lsmpmon exits) or "wait".
    pub detach_mode: String,
    pub failed: Vec<Excluded>,
    pub excluded: Vec<Excluded>,
    /// Hooks the --object filter cannot apply to (no file, dentry or path argument).
    pub not_filterable: Vec<String>,
    /// --per-lsm: LSM implementations found in the hook tables but not traced.
    pub unmapped: Vec<Excluded>,
    /// Probe runs the kernel skipped (recursion), all hooks together.
    pub recursion_misses: u64,
    /// kprobe fallback: instances per return probe (calls of one hook in
    /// progress at once); None with fentry/fexit or the kernel's default.
    pub kretprobe_maxactive: Option<u32>,
    /// kprobe fallback: returns lost because every instance was taken (each
    /// is also in its hook's `dropped`).
    pub kretprobe_missed: Option<u64>,
    /// Traced functions that already had other tracing programs attached
    /// (--allow-other-probes), whose cost is in the figures; empty if none.
    #[serde(default)]
    pub other_probes: Vec<String>,
    /// --per-lsm: every hook each LSM implements in the kernel's hook
    /// tables, probed or not; empty without --per-lsm and in older results.
    #[serde(default)]
    pub implemented: Vec<LsmHooks>,
    /// How each hook's callers were found; None in older results (which
    /// used the name rule).
    #[serde(default)]
    pub hook_source: Option<HookSource>,
}

/// How the functions that run each hook were found.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct HookSource {
    pub method: CallerMethod,
    /// What was read (how many functions, sites), or why the kernel's text
    /// could not be read.
    pub detail: String,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallerMethod {
    /// Up to 6.8: the functions whose code names the hook's list head in
    /// `security_hook_heads` (decoded through /proc/kcore).
    HookLists,
    /// 6.9+: the functions holding the hook's static-call and static-branch
    /// sites (the kernel's site tables) or naming its slots in
    /// `static_calls_table`.
    StaticCalls,
    /// Where the kernel's text cannot be read (no /proc/kcore, lockdown):
    /// hook X is run by `security_X` (or `security_<obj>_alloc`/`_free` for
    /// `<obj>_alloc_security`/`_free_security`). Hooks whose function is
    /// named otherwise are excluded with that reason.
    NameRule,
}

/// The hooks one LSM implements, sorted.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct LsmHooks {
    pub lsm: String,
    pub hooks: Vec<String>,
}

/// A hook (or LSM function) left out, and why.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Excluded {
    pub hook: String,
    pub reason: String,
}

/// An attach method passed over, and why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct NotUsed {
    pub method: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct HookResult {
    pub hook: String,
    /// The traced function that runs the hook (the first of `callers`).
    pub function: String,
    /// A hook run by several functions (6.1's `inode_init_security`:
    /// `security_inode_init_security` and `security_old_inode_init_security`):
    /// each, traced, their figures summed in this row. Empty for one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub callers: Vec<String>,
    /// Other hooks these functions run, whose calls and time are inside this
    /// row's and in no row of their own (7.x's `inode_xattr_skipcap` inside
    /// `security_inode_setxattr`; 6.1's `cred_free` when
    /// `security_prepare_creds` fails).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_runs: Vec<String>,
    /// count + cs_count + untimed.
    pub calls: u64,
    /// Calls without a context switch: the timed ones.
    pub count: u64,
    /// Calls during which the task was switched out (kept out of the timing).
    pub cs_count: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub ave_ns: f64,
    pub sum_ns: u64,
    pub p50_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    /// Hooks whose return is an access decision: calls that returned 0 /
    /// -EACCES or -EPERM.
    pub allow: Option<u64>,
    pub deny: Option<u64>,
    /// Int-returning hooks: calls that returned another negative value / a
    /// positive one.
    pub error: Option<u64>,
    pub value: Option<u64>,
    /// Why this int hook's return is not an access decision (no allow/deny).
    pub not_a_decision: Option<String>,
    /// Calls not measured: the CPU's hook stack was full, the kernel skipped
    /// the probe (recursion misses), or an impossible delta. Under
    /// `--sample` and `--timing-windows` a call that found the stack full is
    /// counted in `untimed` instead.
    pub dropped: u64,
    /// lsmpmon probe pairs that ran inside the timed calls; their calibrated
    /// cost (`probe.nested_cost_ns`) is already taken out of the timings.
    #[serde(default)]
    pub nested_probes: u64,
    /// `--sample N`, `--timing-windows`: calls counted but not timed (not
    /// drawn or outside a window; switched out; timed only for a timed call
    /// around them; spoiled by a traced call inside them without a frame);
    /// 0 when every call is timed.
    #[serde(default)]
    pub untimed: u64,
    /// `--timing-windows`: every call's time, estimated at each window's
    /// close as the calls since the hook's last estimate × that window's mean
    /// (never decreases); None otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_estimate_ns: Option<u64>,
    /// The timed calls by duration: [low_ns, high_ns) and count, sorted, empty
    /// buckets left out (log-linear, 16 a power of two; log2 before 2026-11-29).
    pub hist: Vec<Bucket>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct Bucket {
    pub low_ns: u64,
    pub high_ns: u64,
    pub count: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SyscallResult {
    /// Syscall name; "(none)" for hook calls of a task outside any syscall,
    /// "(softirq)" / "(irq)" for calls from an interrupt handler.
    pub syscall: String,
    pub nr: Option<u32>,
    /// Sum over the hooks below (nested hooks counted in both).
    pub hook_sum_ns: u64,
    pub hook_count: u64,
    /// With --syscall-time: time from entry to exit of this syscall.
    pub total_ns: Option<u64>,
    pub calls: Option<u64>,
    /// With --syscall-time: share of total_ns spent in outermost hooks.
    pub lsm_share: Option<f64>,
    pub hooks: Vec<SyscallHook>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SyscallHook {
    pub hook: String,
    pub count: u64,
    pub sum_ns: u64,
    pub ave_ns: f64,
}
