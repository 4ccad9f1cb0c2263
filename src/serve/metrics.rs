//! A trace snapshot as Prometheus metric families (the `prometheus` crate's
//! data model; its encoder writes the exposition). Every per-hook figure is
//! a counter that only grows: `serve` refuses `trace ctl reset`.
use prometheus::proto::{
    Bucket as PromBucket, Counter, Gauge, Histogram, LabelPair, Metric, MetricFamily, MetricType,
};

use crate::model::{HookResult, TraceResult};

/// The histogram's `le` bounds: log2 buckets from 128 ns to 2^28 ns
/// (≈ 268 ms); faster calls fall in the first, slower ones in `+Inf`.
/// 22 bounds + `+Inf` + `_sum` + `_count` = 25 series a hook.
pub const LE_NS: [u64; 22] = {
    let mut b = [0u64; 22];
    let mut i = 0;
    while i < 22 {
        b[i] = 1u64 << (i + 7);
        i += 1;
    }
    b
};

/// Breakdowns beyond one series set a hook, only when asked (`--by`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Breakdown {
    /// Hook calls and time per syscall × hook.
    pub syscall: bool,
}

/// The exporter's own figures for this scrape.
#[derive(Debug, Clone, Copy)]
pub struct Own {
    /// Reading the maps and building the families, this scrape.
    pub scrape_seconds: f64,
}

const NS_PER_S: f64 = 1e9;

fn labels(pairs: &[(&str, &str)]) -> Vec<LabelPair> {
    pairs
        .iter()
        .map(|(k, v)| {
            let mut l = LabelPair::default();
            l.set_name(k.to_string());
            l.set_value(v.to_string());
            l
        })
        .collect()
}

fn counter(pairs: &[(&str, &str)], value: f64) -> Metric {
    let mut c = Counter::default();
    c.set_value(value);
    let mut m = Metric::from_label(labels(pairs));
    m.set_counter(c);
    m
}

fn gauge(pairs: &[(&str, &str)], value: f64) -> Metric {
    let mut g = Gauge::default();
    g.set_value(value);
    let mut m = Metric::from_label(labels(pairs));
    m.set_gauge(g);
    m
}

/// The hook's log2 buckets as cumulative counts at each `le` bound; a model
/// bucket [low, high) counts below `le` = high (calls are whole ns).
fn histogram(pairs: &[(&str, &str)], h: &HookResult) -> Metric {
    let buckets = LE_NS
        .iter()
        .map(|&le| {
            let mut b = PromBucket::default();
            b.set_upper_bound(le as f64 / NS_PER_S);
            let below: u64 = h
                .hist
                .iter()
                .filter(|b| b.high_ns <= le)
                .map(|b| b.count)
                .sum();
            b.set_cumulative_count(below);
            b
        })
        .collect();
    let mut hist = Histogram::default();
    hist.set_bucket(buckets);
    hist.set_sample_count(h.hist.iter().map(|b| b.count).sum());
    hist.set_sample_sum(h.sum_ns as f64 / NS_PER_S);
    let mut m = Metric::from_label(labels(pairs));
    m.set_histogram(hist);
    m
}

/// Families in order; an empty one is left out (the encoder refuses it).
#[derive(Default)]
struct Families(Vec<MetricFamily>);

impl Families {
    fn add(&mut self, name: &str, help: &str, kind: MetricType, metrics: Vec<Metric>) {
        if metrics.is_empty() {
            return;
        }
        let mut f = MetricFamily::default();
        f.set_name(name.into());
        f.set_help(help.into());
        f.set_field_type(kind);
        f.set_metric(metrics);
        self.0.push(f);
    }
}

/// One row of a per-hook table: its labels and figures.
struct Row<'a> {
    labels: Vec<(&'static str, &'a str)>,
    stats: &'a HookResult,
}

/// The per-hook families under `prefix` (`lsmpmon_hook`, `lsmpmon_lsm_function`).
fn hook_families(out: &mut Families, prefix: &str, rows: &[Row], histograms: bool) {
    use MetricType::{COUNTER, HISTOGRAM};
    let per = |f: &dyn Fn(&HookResult) -> Option<f64>| -> Vec<Metric> {
        rows.iter()
            .filter_map(|r| f(r.stats).map(|v| counter(&r.labels, v)))
            .collect()
    };
    let name = |what: &str| format!("{prefix}_{what}");
    out.add(
        &name("calls_total"),
        "Calls, timed or not.",
        COUNTER,
        per(&|h| Some(h.calls as f64)),
    );
    out.add(
        &name("timed_calls_total"),
        "Calls without a context switch: the timed ones.",
        COUNTER,
        per(&|h| Some(h.count as f64)),
    );
    out.add(
        &name("switched_calls_total"),
        "Calls during which the task was switched out (kept out of the timing).",
        COUNTER,
        per(&|h| Some(h.cs_count as f64)),
    );
    out.add(
        &name("time_seconds_total"),
        "Time in the timed calls (less the probe floor with --subtract-floor).",
        COUNTER,
        per(&|h| Some(h.sum_ns as f64 / NS_PER_S)),
    );
    out.add(
        &name("dropped_calls_total"),
        "Calls not measured: hook stack full, probe skipped by the kernel, impossible delta.",
        COUNTER,
        per(&|h| Some(h.dropped as f64)),
    );
    let mut decisions = Vec::new();
    for r in rows {
        let h = r.stats;
        for (decision, v) in [("allow", h.allow), ("deny", h.deny), ("error", h.error)] {
            if let Some(v) = v {
                let mut pairs = r.labels.clone();
                pairs.push(("decision", decision));
                decisions.push(counter(&pairs, v as f64));
            }
        }
    }
    out.add(
        &name("returns_total"),
        "Calls by what the hook returned: allow (0), deny (-EACCES, -EPERM), error (other negative).",
        COUNTER,
        decisions,
    );
    if histograms {
        let hists = rows.iter().map(|r| histogram(&r.labels, r.stats)).collect();
        out.add(
            &name("duration_seconds"),
            "Timed calls by duration (log2 buckets).",
            HISTOGRAM,
            hists,
        );
    }
}

fn syscall_families(out: &mut Families, r: &TraceResult) {
    let mut calls = Vec::new();
    let mut time = Vec::new();
    for s in &r.syscalls {
        for h in &s.hooks {
            let pairs = [("syscall", s.syscall.as_str()), ("hook", h.hook.as_str())];
            calls.push(counter(&pairs, h.count as f64));
            time.push(counter(&pairs, h.sum_ns as f64 / NS_PER_S));
        }
    }
    let help =
        "Hook calls by the syscall they were made in ((none), (irq), (softirq) outside one).";
    out.add(
        "lsmpmon_syscall_hook_calls_total",
        help,
        MetricType::COUNTER,
        calls,
    );
    let help = "Hook time by the syscall it was spent in.";
    out.add(
        "lsmpmon_syscall_hook_time_seconds_total",
        help,
        MetricType::COUNTER,
        time,
    );
}

fn engine_families(out: &mut Families, r: &TraceResult, own: Own) {
    use MetricType::{COUNTER, GAUGE};
    let p = &r.probe;
    let lsms = r.provenance.active_lsms.join(",");
    let info = [
        ("version", r.provenance.version.as_str()),
        ("kernel_release", r.provenance.kernel_release.as_str()),
        ("method", p.method.as_str()),
        ("active_lsms", lsms.as_str()),
        ("time", r.provenance.time.name()),
    ];
    let help = "lsmpmon, the kernel and how it is probed (value 1). time: real or virtual (a guest's instruction count).";
    out.add("lsmpmon_build_info", help, GAUGE, vec![gauge(&info, 1.0)]);
    let secs = |ns: Option<f64>| {
        ns.map(|v| vec![gauge(&[], v / NS_PER_S)])
            .unwrap_or_default()
    };
    let help = "What an empty kernel function measures through the probe pair.";
    out.add("lsmpmon_probe_floor_seconds", help, GAUGE, secs(p.floor_ns));
    let help = "What one probe pair adds to the call around it (taken out of nested calls).";
    out.add(
        "lsmpmon_probe_pair_cost_seconds",
        help,
        GAUGE,
        secs(p.pair_cost_ns),
    );
    let count = |v: usize| vec![gauge(&[], v as f64)];
    out.add(
        "lsmpmon_hooks_found",
        "Hook functions selected.",
        GAUGE,
        count(p.hooks_found),
    );
    out.add(
        "lsmpmon_hooks_attached",
        "Hook functions attached.",
        GAUGE,
        count(p.hooks_attached),
    );
    let help = "Probe runs the kernel skipped (recursion), all hooks together.";
    out.add(
        "lsmpmon_recursion_misses_total",
        help,
        COUNTER,
        vec![counter(&[], p.recursion_misses as f64)],
    );
    let help = "Time the probes have been recording.";
    out.add(
        "lsmpmon_traced_seconds_total",
        help,
        COUNTER,
        vec![counter(&[], r.elapsed_ns as f64 / NS_PER_S)],
    );
    let help = "Reading the probes' maps and building this scrape's metrics.";
    out.add(
        "lsmpmon_scrape_duration_seconds",
        help,
        GAUGE,
        vec![gauge(&[], own.scrape_seconds)],
    );
}

/// Every family of one scrape.
pub fn families(r: &TraceResult, by: Breakdown, own: Own) -> Vec<MetricFamily> {
    let mut out = Families::default();
    engine_families(&mut out, r, own);
    let histograms = !r.options.lean;
    let hooks: Vec<Row> = r
        .hooks
        .iter()
        .map(|h| Row {
            labels: vec![("hook", h.hook.as_str())],
            stats: h,
        })
        .collect();
    hook_families(&mut out, "lsmpmon_hook", &hooks, histograms);
    let functions: Vec<Row> = r
        .per_lsm
        .iter()
        .map(|l| Row {
            labels: vec![
                ("lsm", l.lsm.as_str()),
                ("hook", l.stats.hook.as_str()),
                ("function", l.stats.function.as_str()),
            ],
            stats: &l.stats,
        })
        .collect();
    hook_families(&mut out, "lsmpmon_lsm_function", &functions, histograms);
    if by.syscall {
        syscall_families(&mut out, r);
    }
    out.0
}

/// The text exposition (format 0.0.4) of `families`.
pub fn encode(families: &[MetricFamily]) -> anyhow::Result<String> {
    Ok(prometheus::TextEncoder::new().encode_to_string(families)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWN: Own = Own {
        scrape_seconds: 0.002,
    };

    fn fixture() -> TraceResult {
        let text = include_str!("../../tests/fixtures/report/trace-6.1.json");
        serde_json::from_str(text).unwrap()
    }

    fn exposition(r: &TraceResult, by: Breakdown) -> String {
        encode(&families(r, by, OWN)).unwrap()
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
    fn histogram_buckets_are_cumulative_at_log2_le_bounds() {
        let text = exposition(&fixture(), Breakdown::default());
        // file_open: 101 calls in [256, 512) ns, 200 in [512, 1024).
        let bucket = |le: &str| {
            value(
                &text,
                &format!("lsmpmon_hook_duration_seconds_bucket{{hook=\"file_open\",le=\"{le}\"}}"),
            )
        };
        assert_eq!(bucket("0.000000256"), 0.0);
        assert_eq!(bucket("0.000000512"), 101.0);
        assert_eq!(bucket("0.000001024"), 301.0);
        assert_eq!(bucket("0.268435456"), 301.0);
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
        let by = exposition(&r, Breakdown { syscall: true });
        let cells: usize = r.syscalls.iter().map(|s| s.hooks.len()).sum();
        assert!(cells > 0);
        assert_eq!(series_count(&by), series_count(&plain) + 2 * cells);
        r.options.lean = true;
        let lean = exposition(&r, Breakdown::default());
        assert!(!lean.contains("lsmpmon_hook_duration_seconds"));
    }

    /// Per hook: 5 counters + up to 3 returns + 25 histogram series; the
    /// README's series count for a whole kernel is this times its hooks.
    #[test]
    fn series_per_hook_are_bounded() {
        let r = fixture();
        let text = exposition(&r, Breakdown::default());
        let rows = r.hooks.len() + r.per_lsm.len();
        let engine = 8;
        assert!(series_count(&text) <= engine + rows * (5 + 3 + LE_NS.len() + 3));
        assert!(series_count(&text) >= engine + rows * (5 + LE_NS.len() + 3));
    }

    /// Prometheus' own parser and linter (`promtool check metrics`, from
    /// Debian's prometheus package: scripts/setup.sh) accepts the exposition.
    #[test]
    fn promtool_accepts_the_exposition() {
        use std::io::Write;
        let text = exposition(&fixture(), Breakdown { syscall: true });
        let mut child = std::process::Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("promtool (Debian package prometheus; scripts/setup.sh installs it)");
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
}
