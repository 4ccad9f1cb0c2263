//! A trace snapshot as Prometheus metric families. Every per-hook figure is
//! a counter that only grows: `serve` refuses `trace ctl reset`.
use super::exposition::{Family, Kind, Sample, Value};
use model::hook_stat::{HookStat, Needs, StatUnit, COUNTERS, TIME, TIME_ESTIMATE, UNTIMED_CALLS};
use model::{HookResult, ProbeInfo, TraceResult};

/// The histogram's `le` bounds: powers of two from 128 ns to 16 µs, where
/// most hook calls fall, then every fourth to 1 ms; slower calls in `+Inf`.
/// 11 bounds + `+Inf` = 12 buckets, + `_sum` + `_count` = 14 series a hook.
/// The probes' own histogram is finer (16 buckets an octave): its p50 and
/// p99 are the `duration_p50_seconds` and `duration_p99_seconds` gauges.
pub const LE_NS: [u64; 11] = [
    1 << 7,
    1 << 8,
    1 << 9,
    1 << 10,
    1 << 11,
    1 << 12,
    1 << 13,
    1 << 14,
    1 << 16,
    1 << 18,
    1 << 20,
];

// At most 12 buckets a hook, +Inf included (issue 38).
const _: () = assert!(LE_NS.len() < 12);

/// The quantiles serve gives as gauges (a `quantile` label is a summary's
/// alone), as the probes' histogram gives them.
const QUANTILES: [HookStat; 2] = [model::hook_stat::P50, model::hook_stat::P99];

/// Series beyond one set for each hook called, only when asked.
#[derive(Debug, Clone, Copy, Default)]
pub struct Breakdown {
    /// Hook calls and time per syscall × hook (`--by syscall`).
    pub syscall: bool,
    /// Hook calls and time per CPU × hook (`--by cpu`).
    pub cpu: bool,
    /// A series set for every attached hook, called or not (`--all-hooks`).
    pub all_hooks: bool,
}

/// The exporter's own figures for this scrape.
#[derive(Debug, Clone, Copy)]
pub struct Own {
    /// Reading the maps and building the families, this scrape.
    pub scrape_seconds: f64,
}

const NS_PER_S: f64 = 1e9;

fn owned(labels: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    labels.iter().map(|(k, v)| (*k, v.to_string())).collect()
}

fn number(labels: &[(&'static str, &str)], value: f64) -> Sample {
    Sample {
        labels: owned(labels),
        value: Value::Number(value),
    }
}

fn count(labels: &[(&'static str, &str)], value: u64) -> Sample {
    Sample {
        labels: owned(labels),
        value: Value::Count(value),
    }
}

/// The hook's buckets (bounded at every power of two) counted at each `le`
/// bound, then `+Inf`; a model bucket [low, high) counts below `le` = high
/// (calls are whole ns).
fn histogram(labels: &[(&'static str, &str)], h: &HookResult) -> Sample {
    let count: u64 = h.hist.iter().map(|b| b.count).sum();
    let mut below_prev = 0;
    let mut buckets: Vec<(f64, u64)> = LE_NS
        .iter()
        .map(|&le| {
            let below: u64 = h
                .hist
                .iter()
                .filter(|b| b.high_ns <= le)
                .map(|b| b.count)
                .sum();
            let in_bucket = below - below_prev;
            below_prev = below;
            (le as f64 / NS_PER_S, in_bucket)
        })
        .collect();
    // OpenMetrics wants the +Inf bucket written out.
    buckets.push((f64::INFINITY, count - below_prev));
    Sample {
        labels: owned(labels),
        value: Value::Histogram {
            sum_seconds: h.sum_ns as f64 / NS_PER_S,
            count,
            buckets,
        },
    }
}

/// Families in order; the encoder leaves an empty one out.
#[derive(Default)]
struct Families(Vec<Family>);

impl Families {
    /// A counter's `name` ends in `_total` as its series do; the family
    /// itself is named without it (OpenMetrics).
    fn add(&mut self, name: &str, help: &'static str, kind: Kind, samples: Vec<Sample>) {
        let name = match kind {
            Kind::Counter => name.strip_suffix("_total").unwrap_or(name),
            _ => name,
        };
        self.0.push(Family {
            name: name.into(),
            help,
            kind,
            samples,
        });
    }
}

/// One row of a per-hook table: its labels and figures.
struct Row<'a> {
    labels: Vec<(&'static str, &'a str)>,
    stats: &'a HookResult,
}

/// What the probes measured beyond calls and returns.
#[derive(Clone, Copy)]
struct Timing {
    /// Timed calls, switched calls and time (not with `--count-only`).
    timed: bool,
    /// The latency histogram (neither with `--lean` nor `--count-only`).
    histograms: bool,
    /// `--sample N`: N, by which the timed calls' time is scaled to
    /// estimate all calls' (1: every call timed).
    scale: f64,
    /// `--timing-windows`: the hooks' time counters are the windows'
    /// estimates; the other time families hold the timed calls' own time.
    windows: bool,
}

impl Timing {
    fn of(r: &TraceResult) -> Self {
        let timed = !r.options.count_only;
        Timing {
            timed,
            histograms: timed && !r.options.lean,
            scale: r.options.sample_every.unwrap_or(1) as f64,
            windows: r.options.timing_windows.is_some(),
        }
    }

    /// Some calls are counted only.
    fn sampled(&self) -> bool {
        self.scale > 1.0 || self.windows
    }

    /// Time counters' help: as measured, or estimated from the sample.
    fn time_help(&self, measured: &'static str) -> &'static str {
        match (self.scale > 1.0, self.windows) {
            (true, _) => "Time in the hook calls, estimated under --sample N: the timed calls' time × N (lsmpmon_timing_sample_every).",
            (false, true) => "Time in the calls timed in windows (--timing-windows): not every call's; lsmpmon_hook_time_seconds_total estimates that.",
            (false, false) => measured,
        }
    }

    /// The hook's time counter: under --timing-windows, the windows' estimate.
    fn hook_time(&self, stat: &HookStat) -> (HookStat, &'static str) {
        match (self.windows, stat.name == TIME.name) {
            (true, true) => (TIME_ESTIMATE, "Time in the hook calls, estimated under --timing-windows: at each window's close, the hook's calls since its last estimate × that window's mean (lsmpmon_timing_windows_closed_total)."),
            _ => (*stat, self.time_help(stat.help)),
        }
    }
}

/// The per-hook families under `prefix` (`lsmpmon_hook`, `lsmpmon_lsm_function`).
fn hook_families(out: &mut Families, prefix: &str, rows: &[Row], timing: Timing) {
    use Kind::{Counter, Histogram};
    let name = |what: &str| format!("{prefix}_{what}");
    let shown = |stat: &HookStat| stat.needs == Needs::Counting || timing.timed;
    let untimed = timing.sampled().then_some(UNTIMED_CALLS);
    for stat in COUNTERS.iter().chain(&untimed).filter(|s| shown(s)) {
        let (valued, help) = match stat.unit {
            StatUnit::Nanoseconds => timing.hook_time(stat),
            StatUnit::Calls => (*stat, stat.help),
        };
        let samples = rows
            .iter()
            .map(|r| {
                let v = valued.metric_value(r.stats).unwrap_or(0.0);
                match stat.unit {
                    StatUnit::Calls => count(&r.labels, v as u64),
                    StatUnit::Nanoseconds => number(&r.labels, v * timing.scale),
                }
            })
            .collect();
        out.add(&stat.counter_name(prefix), help, Counter, samples);
    }
    let mut decisions = Vec::new();
    for r in rows {
        let h = r.stats;
        for (decision, v) in [("allow", h.allow), ("deny", h.deny), ("error", h.error)] {
            if let Some(v) = v {
                let mut pairs = r.labels.clone();
                pairs.push(("decision", decision));
                decisions.push(count(&pairs, v));
            }
        }
    }
    out.add(
        &name("returns_total"),
        "Calls by what the hook returned: allow (0), deny (-EACCES, -EPERM), error (other negative).",
        Counter,
        decisions,
    );
    if timing.histograms {
        let hists = rows.iter().map(|r| histogram(&r.labels, r.stats)).collect();
        out.add(
            &name("duration_seconds"),
            "Timed calls by duration (12 buckets: powers of two to 16 µs, then of four).",
            Histogram,
            hists,
        );
        for q in QUANTILES {
            let samples = rows
                .iter()
                .filter_map(|r| Some(number(&r.labels, q.metric_value(r.stats)?)))
                .collect();
            let name = name(&format!("{}_seconds", q.name));
            out.add(&name, q.help, Kind::Gauge, samples);
        }
    }
}

/// The probes sort only timed calls by syscall: under `--sample N` both
/// families are the timed calls × N, estimates.
fn syscall_families(out: &mut Families, r: &TraceResult, timing: Timing) {
    let mut calls = Vec::new();
    let mut time = Vec::new();
    for s in &r.syscalls {
        for h in &s.hooks {
            let pairs = [("syscall", s.syscall.as_str()), ("hook", h.hook.as_str())];
            calls.push(count(&pairs, h.count * timing.scale as u64));
            time.push(number(&pairs, h.sum_ns as f64 * timing.scale / NS_PER_S));
        }
    }
    let help = match (timing.scale > 1.0, timing.windows) {
        (true, _) => "Hook calls by the syscall they were made in, estimated under --sample N: the timed calls × N.",
        (false, true) => "Hook calls timed in windows (--timing-windows) by the syscall they were made in: the timed calls only.",
        (false, false) => "Hook calls by the syscall they were made in ((none), (irq), (softirq) outside one).",
    };
    out.add(
        "lsmpmon_syscall_hook_calls_total",
        help,
        Kind::Counter,
        calls,
    );
    let help = timing.time_help("Hook time by the syscall it was spent in.");
    out.add(
        "lsmpmon_syscall_hook_time_seconds_total",
        help,
        Kind::Counter,
        time,
    );
}

/// Per cgroup × hook. Rows of one name (a path reused by a new cgroup, the
/// removed ones) are one series: each row's counters only grow, so their sum does.
fn cgroup_families(out: &mut Families, b: &model::CgroupBreakdown, timing: Timing) {
    use std::collections::BTreeMap;
    let mut cells: BTreeMap<(&str, &str), model::CgroupCalls> = BTreeMap::new();
    for g in &b.cgroups {
        for h in &g.hooks {
            cells.entry((&g.cgroup, &h.hook)).or_default().add(&h.calls);
        }
    }
    let (mut calls, mut time, mut deny) = (Vec::new(), Vec::new(), Vec::new());
    for ((cgroup, hook), c) in &cells {
        let pairs = [("cgroup", *cgroup), ("hook", *hook)];
        calls.push(count(&pairs, c.calls));
        time.push(number(&pairs, c.sum_ns as f64 * timing.scale / NS_PER_S));
        if c.deny > 0 {
            deny.push(count(&pairs, c.deny));
        }
    }
    let help = "Hook calls by the cgroup of the task making them ((interrupt): none; (other): beyond --max-cgroups).";
    out.add(
        "lsmpmon_cgroup_hook_calls_total",
        help,
        Kind::Counter,
        calls,
    );
    if timing.timed {
        let help =
            timing.time_help("Time in the timed hook calls by the cgroup of the task making them.");
        out.add(
            "lsmpmon_cgroup_hook_time_seconds_total",
            help,
            Kind::Counter,
            time,
        );
    }
    let help = "Hook calls denied (-EACCES, -EPERM) by cgroup; a series from its first denial.";
    out.add(
        "lsmpmon_cgroup_hook_denied_calls_total",
        help,
        Kind::Counter,
        deny,
    );
    let help = "Cgroups whose calls are in cgroup=\"(other)\" (beyond --max-cgroups).";
    out.add(
        "lsmpmon_cgroups_folded",
        help,
        Kind::Gauge,
        vec![count(&[], b.folded_cgroups as u64)],
    );
    let help = "Hook calls in no cgroup series: the probes' table of cgroup cells was full.";
    out.add(
        "lsmpmon_cgroup_lost_calls_total",
        help,
        Kind::Counter,
        vec![count(&[], b.lost_calls)],
    );
}

/// Per CPU × hook, the hooks with calls on that CPU (index = CPU).
fn cpu_families(out: &mut Families, per_cpu: &[Vec<HookResult>], timing: Timing) {
    let mut calls = Vec::new();
    let mut time = Vec::new();
    for (cpu, hooks) in per_cpu.iter().enumerate() {
        let cpu = cpu.to_string();
        for h in hooks.iter().filter(|h| h.calls > 0) {
            let pairs = [("cpu", cpu.as_str()), ("hook", h.hook.as_str())];
            calls.push(count(&pairs, h.calls));
            time.push(number(&pairs, h.sum_ns as f64 * timing.scale / NS_PER_S));
        }
    }
    let help = "Hook calls by the CPU they ran on (hooks with calls there).";
    out.add("lsmpmon_cpu_hook_calls_total", help, Kind::Counter, calls);
    if timing.timed {
        let help = timing.time_help("Time in the timed hook calls by the CPU they ran on.");
        out.add(
            "lsmpmon_cpu_hook_time_seconds_total",
            help,
            Kind::Counter,
            time,
        );
    }
}

/// The engine's own families: what it is, what probing costs, how many
/// hooks it holds, how it times them, and how long it has run.
fn engine_families(out: &mut Families, r: &TraceResult, own: Own) {
    build_info_family(out, r);
    probe_cost_families(out, &r.probe);
    hook_count_families(out, r);
    timing_families(out, r);
    let help = "Time the probes have been recording.";
    out.add(
        "lsmpmon_traced_seconds_total",
        help,
        Kind::Counter,
        vec![number(&[], r.elapsed_ns as f64 / NS_PER_S)],
    );
    let help = "Reading the probes' maps and building this scrape's metrics.";
    out.add(
        "lsmpmon_scrape_duration_seconds",
        help,
        Kind::Gauge,
        vec![number(&[], own.scrape_seconds)],
    );
}

/// lsmpmon, the kernel and the attach method, as labels of one series.
fn build_info_family(out: &mut Families, r: &TraceResult) {
    let lsms = r.provenance.active_lsms.join(",");
    let commit = r.provenance.commit.as_deref().unwrap_or("");
    let info = [
        ("version", r.provenance.version.as_str()),
        ("commit", commit),
        ("kernel_release", r.provenance.kernel_release.as_str()),
        ("method", r.probe.method.as_str()),
        ("active_lsms", lsms.as_str()),
        ("time", r.provenance.time.name()),
    ];
    let help = "lsmpmon, the kernel and how it is probed (value 1). time: real or virtual (a guest's instruction count).";
    out.add(
        "lsmpmon_build_info",
        help,
        Kind::Gauge,
        vec![count(&info, 1)],
    );
}

/// What the probes themselves cost, as calibrated (absent where not).
fn probe_cost_families(out: &mut Families, p: &ProbeInfo) {
    use Kind::Gauge;
    let secs = |ns: Option<f64>| {
        ns.map(|v| vec![number(&[], v / NS_PER_S)])
            .unwrap_or_default()
    };
    let help = "What an empty kernel function measures through the probe pair.";
    out.add("lsmpmon_probe_floor_seconds", help, Gauge, secs(p.floor_ns));
    let help = "What one probe pair adds to the call around it.";
    out.add(
        "lsmpmon_probe_pair_cost_seconds",
        help,
        Gauge,
        secs(p.pair_cost_ns),
    );
    let help = "What is taken out of a call's time for each probe pair nested in it (the pair cost, and under sampled timing the tests it runs).";
    out.add(
        "lsmpmon_probe_nested_cost_seconds",
        help,
        Gauge,
        secs(p.nested_cost_ns),
    );
}

/// How many hooks were found, attached and called, and the probe runs skipped.
fn hook_count_families(out: &mut Families, r: &TraceResult) {
    use Kind::{Counter, Gauge};
    let p = &r.probe;
    let gauge = |v: usize| vec![count(&[], v as u64)];
    out.add(
        "lsmpmon_hooks_found",
        "Hook functions selected.",
        Gauge,
        gauge(p.hooks_found),
    );
    out.add(
        "lsmpmon_hooks_attached",
        "Hook functions attached.",
        Gauge,
        gauge(p.hooks_attached),
    );
    let called = r.hooks.iter().filter(|h| h.calls > 0).count();
    out.add(
        "lsmpmon_hooks_called",
        "Hook functions called since serve started: those with series (all attached ones with --all-hooks).",
        Gauge,
        gauge(called),
    );
    let help = "Probe runs the kernel skipped (recursion), all hooks together.";
    out.add(
        "lsmpmon_recursion_misses_total",
        help,
        Counter,
        vec![count(&[], p.recursion_misses)],
    );
}

/// How the hook calls are timed: one in N, or in timing windows.
fn timing_families(out: &mut Families, r: &TraceResult) {
    use Kind::{Counter, Gauge};
    if r.options.timing_windows.is_none() {
        let help = "One hook call in this many is timed (serve's --sample; 1: every call); the time counters are the timed calls' time × this.";
        out.add(
            "lsmpmon_timing_sample_every",
            help,
            Gauge,
            vec![count(&[], r.options.sample_every.unwrap_or(1) as u64)],
        );
    }
    if let Some(w) = &r.options.timing_windows {
        let help = "How long each timing window keeps the hooks' entries attached (serve's --timing-windows ON).";
        out.add(
            "lsmpmon_timing_window_seconds",
            help,
            Gauge,
            vec![number(&[], w.on_s)],
        );
        let help = "A timing window opens every this many seconds (--timing-windows EVERY).";
        out.add(
            "lsmpmon_timing_window_every_seconds",
            help,
            Gauge,
            vec![number(&[], w.every_s)],
        );
        let help = "Timing windows closed: the hooks' time estimates move at each close.";
        out.add(
            "lsmpmon_timing_windows_closed_total",
            help,
            Counter,
            vec![count(&[], w.closed)],
        );
    }
}

/// Every family of one scrape; `per_cpu` is read only with `by.cpu`.
pub fn families(
    r: &TraceResult,
    per_cpu: &[Vec<HookResult>],
    by: Breakdown,
    own: Own,
) -> Vec<Family> {
    let mut out = Families::default();
    engine_families(&mut out, r, own);
    let timing = Timing::of(r);
    let shown = |h: &HookResult| by.all_hooks || h.calls > 0;
    let hooks: Vec<Row> = r
        .hooks
        .iter()
        .filter(|h| shown(h))
        .map(|h| Row {
            labels: vec![("hook", h.hook.as_str())],
            stats: h,
        })
        .collect();
    hook_families(&mut out, "lsmpmon_hook", &hooks, timing);
    let functions: Vec<Row> = r
        .per_lsm
        .iter()
        .filter(|l| shown(&l.stats))
        .map(|l| Row {
            labels: vec![
                ("lsm", l.lsm.as_str()),
                ("hook", l.stats.hook.as_str()),
                ("function", l.stats.function.as_str()),
            ],
            stats: &l.stats,
        })
        .collect();
    hook_families(&mut out, "lsmpmon_lsm_function", &functions, timing);
    if by.syscall {
        syscall_families(&mut out, r, timing);
    }
    if let Some(b) = &r.cgroups {
        cgroup_families(&mut out, b, timing);
    }
    if by.cpu {
        cpu_families(&mut out, per_cpu, timing);
    }
    out.0
}

#[cfg(test)]
mod tests {
    use super::super::exposition::{encode, Format};
    use super::*;

    const OWN: Own = Own {
        scrape_seconds: 0.002,
    };

    fn fixture() -> TraceResult {
        let text = include_str!("../../../tests/fixtures/report/trace-6.1.json");
        serde_json::from_str(text).unwrap()
    }

    fn exposition(r: &TraceResult, by: Breakdown) -> String {
        in_format(r, by, Format::Text004)
    }

    fn in_format(r: &TraceResult, by: Breakdown, format: Format) -> String {
        encode(families(r, &two_cpus(r), by, OWN), format).unwrap()
    }

    /// The result's hooks as if their calls had run on two CPUs: a third of
    /// each hook's calls on CPU 1, the rest on CPU 0.
    fn two_cpus(r: &TraceResult) -> Vec<Vec<HookResult>> {
        let split = |cpu: u64| {
            r.hooks
                .iter()
                .map(|h| {
                    let mut h = h.clone();
                    let on_1 = h.calls / 3;
                    h.calls = if cpu == 1 { on_1 } else { h.calls - on_1 };
                    h
                })
                .collect()
        };
        vec![split(0), split(1)]
    }

    /// The value of the one series `series` (name and labels as written).
    fn value(text: &str, series: &str) -> f64 {
        let hits: Vec<f64> = text
            .lines()
            .filter_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
            .collect();
        assert_eq!(hits.len(), 1, "{series} in:\n{text}");
        hits[0]
    }

    fn series_count(text: &str) -> usize {
        text.lines().filter(|l| !l.starts_with('#')).count()
    }

    #[test]
    fn histogram_buckets_are_cumulative_at_their_le_bounds() {
        let text = exposition(&fixture(), Breakdown::default());
        // file_open: 101 calls in [256, 512) ns, 200 in [512, 1024).
        let bucket = |le: &str| {
            value(
                &text,
                &format!("lsmpmon_hook_duration_seconds_bucket{{hook=\"file_open\",le=\"{le}\"}}"),
            )
        };
        assert_eq!(bucket("2.56e-07"), 0.0);
        assert_eq!(bucket("5.12e-07"), 101.0);
        assert_eq!(bucket("1.024e-06"), 301.0);
        assert_eq!(bucket("0.001048576"), 301.0);
        assert_eq!(bucket("+Inf"), 301.0);
        let count = value(
            &text,
            "lsmpmon_hook_duration_seconds_count{hook=\"file_open\"}",
        );
        assert_eq!(count, 301.0);
        let sum = value(
            &text,
            "lsmpmon_hook_duration_seconds_sum{hook=\"file_open\"}",
        );
        assert!((sum - 157_419e-9).abs() < 1e-12, "{sum}");
        let le_lines = text
            .lines()
            .filter(|l| l.starts_with("lsmpmon_hook_duration_seconds_bucket{hook=\"file_open\""))
            .count();
        assert_eq!(le_lines, LE_NS.len() + 1);
        // The result's own quantiles (log2 in this old fixture), one gauge each.
        let p99 = "lsmpmon_hook_duration_p99_seconds{hook=\"file_open\"}";
        assert_eq!(value(&text, p99), 1024e-9);
        let unset = text
            .lines()
            .filter(|l| l.starts_with("lsmpmon_hook_duration_p50_seconds{"))
            .count();
        let set = fixture()
            .hooks
            .iter()
            .filter(|h| h.p50_ns.is_some())
            .count();
        assert_eq!(unset, set);
    }

    #[test]
    fn counters_returns_and_info_carry_the_result() {
        let r = fixture();
        let text = exposition(&r, Breakdown::default());
        assert_eq!(
            value(&text, "lsmpmon_hook_calls_total{hook=\"file_open\"}"),
            301.0
        );
        let allow = "lsmpmon_hook_returns_total{hook=\"file_open\",decision=\"allow\"}";
        assert_eq!(value(&text, allow), 301.0);
        assert!(text.contains("# TYPE lsmpmon_hook_calls_total counter"));
        assert!(text.contains("# TYPE lsmpmon_hook_duration_seconds histogram"));
        assert_eq!(value(&text, "lsmpmon_probe_floor_seconds"), 176e-9);
        // The nested pairs' cost only where it was measured.
        assert!(!text.contains("\nlsmpmon_probe_nested_cost_seconds "));
        let mut sampled = fixture();
        sampled.probe.nested_cost_ns = Some(1037.0);
        let nested = value(
            &exposition(&sampled, Breakdown::default()),
            "lsmpmon_probe_nested_cost_seconds",
        );
        assert!((nested - 1037e-9).abs() < 1e-15, "{nested}");
        assert_eq!(
            value(&text, "lsmpmon_hooks_attached"),
            r.probe.hooks_attached as f64
        );
        let info = text
            .lines()
            .find(|l| l.starts_with("lsmpmon_build_info{"))
            .unwrap();
        assert!(info.contains("method=\"fentry/fexit\""), "{info}");
        assert!(info.contains(&format!(
            "kernel_release=\"{}\"",
            r.provenance.kernel_release
        )));
        assert!(info.ends_with(" 1"), "{info}");
        assert_eq!(value(&text, "lsmpmon_scrape_duration_seconds"), 0.002);
    }

    /// --sample N: the time counters estimate all calls' time from the
    /// timed ones (× N), the untimed calls have their counter, and the
    /// histogram and quantiles stay the timed calls' own.
    #[test]
    fn sampled_time_is_scaled_and_untimed_calls_counted() {
        let plain = exposition(&fixture(), Breakdown::default());
        assert_eq!(value(&plain, "lsmpmon_timing_sample_every"), 1.0);
        assert!(!plain.contains("lsmpmon_hook_untimed_calls_total"));
        let time = "lsmpmon_hook_time_seconds_total{hook=\"file_open\"}";
        let measured = value(&plain, time);
        let mut r = fixture();
        r.options.sample_every = Some(8);
        let open = r.hooks.iter_mut().find(|h| h.hook == "file_open").unwrap();
        open.untimed = 2107;
        let text = exposition(&r, Breakdown::default());
        assert_eq!(value(&text, "lsmpmon_timing_sample_every"), 8.0);
        assert!((value(&text, time) - 8.0 * measured).abs() < 1e-12);
        let untimed = "lsmpmon_hook_untimed_calls_total{hook=\"file_open\"}";
        assert_eq!(value(&text, untimed), 2107.0);
        assert!(text.contains("estimated under --sample N"));
        for series in [
            "lsmpmon_hook_duration_seconds_count{hook=\"file_open\"}",
            "lsmpmon_hook_duration_p99_seconds{hook=\"file_open\"}",
        ] {
            assert_eq!(value(&text, series), value(&plain, series), "{series}");
        }
    }

    /// --timing-windows: the hook's time counter is the windows' estimate
    /// (not the timed calls' time, nor × anything), the untimed calls have
    /// their counter, and the windows are described by their own series.
    #[test]
    fn windowed_time_is_the_estimate_and_the_windows_are_told() {
        let plain = exposition(&fixture(), Breakdown::default());
        assert!(!plain.contains("lsmpmon_timing_windows_closed_total"));
        let mut r = fixture();
        r.options.timing_windows = Some(model::TimingWindows {
            on_s: 5.0,
            every_s: 60.0,
            closed: 3,
            entry_changes: 0,
            changing_ms: 0.0,
        });
        let open = r.hooks.iter_mut().find(|h| h.hook == "file_open").unwrap();
        open.untimed = 90_000;
        open.time_estimate_ns = Some(7_250_000_000);
        let text = exposition(&r, Breakdown::default());
        let time = "lsmpmon_hook_time_seconds_total{hook=\"file_open\"}";
        assert_eq!(value(&text, time), 7.25);
        let untimed = "lsmpmon_hook_untimed_calls_total{hook=\"file_open\"}";
        assert_eq!(value(&text, untimed), 90_000.0);
        assert_eq!(value(&text, "lsmpmon_timing_windows_closed_total"), 3.0);
        assert_eq!(value(&text, "lsmpmon_timing_window_seconds"), 5.0);
        assert_eq!(value(&text, "lsmpmon_timing_window_every_seconds"), 60.0);
        // No "1 call in 1 timed" under windows.
        assert!(!text.contains("lsmpmon_timing_sample_every"));
        assert!(text.contains("estimated under --timing-windows"));
        // The timed calls' histogram is theirs, unscaled.
        let count = "lsmpmon_hook_duration_seconds_count{hook=\"file_open\"}";
        assert_eq!(value(&text, count), value(&plain, count));
    }

    #[test]
    fn module_functions_are_their_own_families_labelled_with_the_module() {
        let r = fixture();
        let text = exposition(&r, Breakdown::default());
        let l = &r.per_lsm[0];
        let series = format!(
            "lsmpmon_lsm_function_calls_total{{lsm=\"{}\",hook=\"{}\",function=\"{}\"}}",
            l.lsm, l.stats.hook, l.stats.function
        );
        assert_eq!(value(&text, &series), l.stats.calls as f64);
        // Hook series never carry an lsm label: summing them counts each call once.
        assert!(!text
            .lines()
            .any(|s| s.starts_with("lsmpmon_hook_") && s.contains("lsm=")));
    }

    #[test]
    fn syscall_series_only_when_asked_and_lean_has_no_histogram() {
        let mut r = fixture();
        let plain = exposition(&r, Breakdown::default());
        assert!(!plain.contains("lsmpmon_syscall_hook_calls_total"));
        let by = exposition(
            &r,
            Breakdown {
                syscall: true,
                cpu: false,
                ..Breakdown::default()
            },
        );
        let cells: usize = r.syscalls.iter().map(|s| s.hooks.len()).sum();
        assert!(cells > 0);
        assert_eq!(series_count(&by), series_count(&plain) + 2 * cells);
        r.options.lean = true;
        let lean = exposition(&r, Breakdown::default());
        assert!(!lean.contains("lsmpmon_hook_duration_seconds"));
        // Counting only: calls and returns, nothing that would read as a time.
        (r.options.lean, r.options.count_only) = (false, true);
        let counts = exposition(&r, Breakdown::default());
        assert!(counts.contains("lsmpmon_hook_calls_total{"));
        assert!(counts.contains("lsmpmon_hook_returns_total{"));
        for timed in [
            "duration_seconds",
            "time_seconds",
            "timed_calls",
            "switched_calls",
        ] {
            assert!(
                !counts.contains(&format!("lsmpmon_hook_{timed}")),
                "{timed}"
            );
        }
    }

    #[test]
    fn cpu_series_only_when_asked_and_they_add_up_to_the_hook() {
        let mut r = fixture();
        let idle = r.hooks.iter_mut().find(|h| h.hook != "file_open").unwrap();
        idle.calls = 0;
        let idle = format!("hook=\"{}\"", idle.hook);
        let plain = exposition(&r, Breakdown::default());
        assert!(!plain.contains("lsmpmon_cpu_hook"));
        let by = Breakdown {
            syscall: false,
            cpu: true,
            ..Breakdown::default()
        };
        let text = exposition(&r, by);
        let on = |cpu: u32| {
            value(
                &text,
                &format!("lsmpmon_cpu_hook_calls_total{{cpu=\"{cpu}\",hook=\"file_open\"}}"),
            )
        };
        assert_eq!(on(0) + on(1), 301.0);
        assert_eq!(on(1), 100.0);
        // A hook without calls has no per-CPU series.
        assert!(!text
            .lines()
            .any(|l| l.starts_with("lsmpmon_cpu_hook") && l.contains(&idle)));
    }

    /// OpenMetrics: counters' families named without `_total`, their
    /// series with it, and the `# EOF` the format ends with.
    #[test]
    fn openmetrics_when_asked_names_counters_and_ends_with_eof() {
        let r = fixture();
        let text = in_format(&r, Breakdown::default(), Format::OpenMetrics);
        assert!(text.ends_with("# EOF\n"), "{}", &text[text.len() - 40..]);
        assert!(text.contains("# TYPE lsmpmon_hook_calls counter\n"));
        assert_eq!(
            value(&text, "lsmpmon_hook_calls_total{hook=\"file_open\"}"),
            301.0
        );
        let plain = exposition(&r, Breakdown::default());
        assert_eq!(series_count(&text), series_count(&plain));
    }

    #[test]
    fn cgroup_series_merge_rows_of_one_name_and_deny_appears_at_its_first() {
        use model::{CgroupBreakdown, CgroupCalls, CgroupHook, CgroupResult};
        let cell = |calls, deny| CgroupCalls {
            calls,
            timed: calls,
            sum_ns: 1000 * calls,
            deny,
        };
        let row = |cgroup: &str, id, hooks: Vec<(&str, CgroupCalls)>| CgroupResult {
            cgroup: cgroup.into(),
            id,
            total: CgroupCalls::default(),
            hooks: hooks
                .into_iter()
                .map(|(h, c)| CgroupHook {
                    hook: h.into(),
                    calls: c,
                })
                .collect(),
        };
        let mut r = fixture();
        r.cgroups = Some(CgroupBreakdown {
            max_cgroups: 2,
            folded_cgroups: 3,
            lost_calls: 4,
            cgroups: vec![
                row(
                    "/a",
                    Some(10),
                    vec![("file_open", cell(5, 1)), ("inode_getattr", cell(9, 0))],
                ),
                row("(removed)", Some(11), vec![("file_open", cell(2, 0))]),
                row("(removed)", Some(12), vec![("file_open", cell(3, 0))]),
            ],
        });
        let text = exposition(&r, Breakdown::default());
        let v = |s: &str| value(&text, s);
        assert_eq!(
            v("lsmpmon_cgroup_hook_calls_total{cgroup=\"(removed)\",hook=\"file_open\"}"),
            5.0
        );
        assert_eq!(
            v("lsmpmon_cgroup_hook_time_seconds_total{cgroup=\"/a\",hook=\"inode_getattr\"}"),
            9e-6
        );
        assert_eq!(
            v("lsmpmon_cgroup_hook_denied_calls_total{cgroup=\"/a\",hook=\"file_open\"}"),
            1.0
        );
        assert!(!text.contains(
            "lsmpmon_cgroup_hook_denied_calls_total{cgroup=\"/a\",hook=\"inode_getattr\"}"
        ));
        assert_eq!(
            (
                v("lsmpmon_cgroups_folded"),
                v("lsmpmon_cgroup_lost_calls_total")
            ),
            (3.0, 4.0)
        );
        r.cgroups = None;
        assert!(!exposition(&r, Breakdown::default()).contains("lsmpmon_cgroup"));
    }

    /// Per hook: 5 counters + up to 3 returns + 14 histogram series + 2
    /// quantiles; the
    /// series count in docs/serve.md for a whole kernel is this times its hooks.
    #[test]
    fn series_per_hook_are_bounded() {
        let r = fixture();
        let text = exposition(&r, Breakdown::default());
        let rows = r.hooks.len() + r.per_lsm.len();
        let engine = 10;
        assert!(series_count(&text) <= engine + rows * (5 + 3 + LE_NS.len() + 3 + 2));
        assert!(series_count(&text) >= engine + rows * (5 + LE_NS.len() + 3));
    }

    /// Prometheus' own parser and linter (`promtool check metrics`, from
    /// Debian's prometheus package: scripts/setup.sh --tests) accepts the exposition.
    #[test]
    fn promtool_accepts_the_exposition() {
        use std::io::Write;
        let text = exposition(
            &fixture(),
            Breakdown {
                syscall: true,
                cpu: false,
                ..Breakdown::default()
            },
        );
        let mut child = std::process::Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("promtool (Debian package prometheus; scripts/setup.sh --tests installs it)");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "promtool: {said}");
        assert!(said.trim().is_empty(), "promtool: {said}");
    }

    #[test]
    fn only_called_hooks_get_series_unless_all_are_asked_for() {
        let mut r = fixture();
        // An attached hook nothing called: a trace's table keeps it with 0s.
        let mut never = r.hooks[0].clone();
        never.hook = "sb_pivotroot".into();
        (never.calls, never.count, never.cs_count, never.sum_ns) = (0, 0, 0, 0);
        (never.deny, never.allow, never.hist) = (Some(0), Some(0), vec![]);
        r.hooks.push(never);
        let idle = r.hooks.iter().filter(|h| h.calls == 0).count();
        let called = r.hooks.len() - idle;
        assert!(idle > 0 && called > 0, "the fixture has both");
        let text = exposition(&r, Breakdown::default());
        let all = exposition(
            &r,
            Breakdown {
                all_hooks: true,
                ..Breakdown::default()
            },
        );
        let hooks_with_calls_series = |text: &str| {
            text.lines()
                .filter(|l| l.starts_with("lsmpmon_hook_calls_total{"))
                .count()
        };
        assert_eq!(hooks_with_calls_series(&text), called);
        assert_eq!(hooks_with_calls_series(&all), r.hooks.len());
        let never = r.hooks.iter().find(|h| h.calls == 0).unwrap();
        let label = format!("hook=\"{}\"", never.hook);
        assert!(!text.contains(&label), "{label}");
        assert!(all.contains(&label), "{label}");
        // What was attached and what was called stay counted either way.
        for t in [&text, &all] {
            assert_eq!(value(t, "lsmpmon_hooks_called"), called as f64);
            assert_eq!(
                value(t, "lsmpmon_hooks_attached"),
                r.probe.hooks_attached as f64
            );
        }
        assert!(series_count(&text) < series_count(&all));
    }
}
