//! `lsmpmon serve` in a real 6.1 guest, scraped through `vm run --forward` by
//! a real Prometheus server on the host.
mod common;
#[path = "common/prometheus.rs"]
mod prometheus;

use std::{
    io::Read,
    net::TcpStream,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use common::{scrape_helper, LSMPMON};
use prometheus::{free_ports, get, Prometheus};

/// The guest's side: serve, then wait for the host at each step (a line on
/// the control port), so the host reads Prometheus before and after.
const GUEST_SCRIPT: &str = r#"
mkdir /tmp/w
lsmpmon serve --listen 0.0.0.0:9464 --by cpu --timing-windows 1/4 &
serve=$!
(while :; do cat /proc/version > /dev/null; sleep 0.2; done) &
echo before | nc -l -p 9000 > /dev/null
for i in $(seq 200); do touch /tmp/w/f$i; done
echo after | nc -l -p 9000 > /dev/null
lsmpmon trace ctl reset; echo "reset exit $?"
echo done | nc -l -p 9000 > /dev/null
kill $!
kill -INT $serve
wait
"#;

/// `vm run`, stopped (SIGTERM: it stops its guest) if the test fails.
struct Guest(Option<Child>);

impl Guest {
    /// Waits for `vm run` to succeed: the guest's standard output.
    fn finish(mut self) -> String {
        let mut child = self.0.take().unwrap();
        let mut text = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        let st = child.wait().unwrap();
        assert!(st.success(), "vm run: {st:?}\n{text}");
        text
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            // SAFETY: a signal to our own child.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let _ = child.wait();
        }
    }
}

/// Waits for the guest to reach step `word` and lets it go on.
fn step(control_port: u16, word: &str) {
    let start = Instant::now();
    loop {
        // Through the forward a connection is taken before the guest listens:
        // only the guest's word tells that it was there.
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", control_port)) {
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut got = String::new();
            let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(&mut s), &mut got);
            if got.trim() == word {
                return;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "guest never reached {word}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn promtool_check(text: &str) {
    use std::io::Write;
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (scripts/setup.sh --tests installs prometheus)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool: {said}"
    );
}

/// Every query of the Grafana dashboard (docs/grafana/lsmpmon.json) runs on
/// the real Prometheus and, but for the --per-lsm panel, finds series.
fn dashboard_queries_answer(prom: &Prometheus) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/grafana/lsmpmon.json");
    let dash: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut checked = 0;
    for panel in dash["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"]
                .as_str()
                .unwrap()
                .replace("$__rate_interval", "15s");
            let found = prom.query(&expr);
            if !expr.contains("lsm_function") {
                assert!(
                    !found.is_empty(),
                    "{}: {expr} found nothing",
                    panel["title"]
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 10, "{checked} queries");
}

/// What Debian 12's Prometheus asks for: OpenMetrics first.
const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// A scrape with Prometheus' Accept header gets OpenMetrics (the format
/// the real Prometheus then ingests in the test); without one, 0.0.4.
fn openmetrics_when_asked(url: &str) {
    let content_type = |accept: Option<&str>| {
        let mut curl = Command::new("curl");
        curl.args([
            "-sf",
            "-m",
            "30",
            "-o",
            "/dev/null",
            "-w",
            "%{content_type}",
        ]);
        if let Some(a) = accept {
            curl.args(["-H", &format!("Accept: {a}")]);
        }
        let out = curl.arg(url).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(
        content_type(Some(PROMETHEUS_ACCEPT))
            .starts_with("application/openmetrics-text; version=1.0.0"),
        "{}",
        content_type(Some(PROMETHEUS_ACCEPT))
    );
    assert!(content_type(None).starts_with("text/plain; version=0.0.4"));
}

#[test]
fn serve_6_1_prometheus_counts_200_creations() {
    prometheus_counts_200_creations("6.1");
}

#[test]
fn serve_6_12_prometheus_counts_200_creations() {
    prometheus_counts_200_creations("6.12");
}

#[test]
fn serve_7_3_prometheus_counts_200_creations() {
    prometheus_counts_200_creations("7.3");
}

/// `vm run` with serve forwarded to two free host ports, once serve answers:
/// (guest, metrics port, control port, first scrape). Another test may take
/// a port between its choice and QEMU's bind (CI saw `vm run` refuse its
/// `--forward` as in use): then `vm run` exits at once with 2, and new ports
/// are tried, three times at most.
fn serve_in_guest(series: &str, script: &str) -> (Guest, u16, u16, String) {
    for _ in 0..3 {
        let [metrics_port, control_port] = free_ports::<2>();
        let mut guest = Guest(Some(
            Command::new(LSMPMON)
                .args(["vm", "run", "--kernel", series, "--timeout", "900"])
                // Real time: with -icount's virtual clock an idle guest's
                // timers (and so every network timeout) would run ahead.
                .args(["--icount", "off"])
                .arg(format!("--forward={metrics_port}:9464"))
                .arg(format!("--forward={control_port}:9000"))
                .arg("--copy")
                .arg(common::workload())
                .args(["--", "sh", "-c", script])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap(),
        ));
        let metrics = format!("http://127.0.0.1:{metrics_port}/metrics");
        let start = Instant::now();
        loop {
            if let Some(text) = get(&metrics, 10) {
                return (guest, metrics_port, control_port, text);
            }
            let exited = guest.0.as_mut().unwrap().try_wait().unwrap();
            if let Some(st) = exited {
                guest.0 = None;
                assert_eq!(
                    st.code(),
                    Some(2),
                    "vm run exited before serve answered: {st}"
                );
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(600),
                "serve never answered"
            );
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    panic!("vm run refused three pairs of forwarded ports");
}

fn prometheus_counts_200_creations(series: &str) {
    let (guest, metrics_port, control_port, scrape) = serve_in_guest(series, GUEST_SCRIPT);
    let metrics = format!("http://127.0.0.1:{metrics_port}/metrics");
    promtool_check(&scrape);
    openmetrics_when_asked(&metrics);
    let index = get(&format!("http://127.0.0.1:{metrics_port}/"), 10).unwrap();
    assert_eq!(index.lines().count(), 1, "{index}");
    assert!(get(&format!("http://127.0.0.1:{metrics_port}/reset"), 10).is_none());

    let prom = Prometheus::start(&format!("127.0.0.1:{metrics_port}"));
    let creates = r#"lsmpmon_hook_calls_total{hook="inode_create"}"#;
    let attached = prom.wait_for("lsmpmon_hooks_attached", Duration::from_secs(60), |_| true);
    // Only hooks called so far have series: inode_create's may be absent.
    let before = prom.value(creates).unwrap_or(0.0);
    let called = prom
        .value("lsmpmon_hooks_called")
        .expect("hooks called exported");
    assert!(
        called > 0.0 && called < attached,
        "{called} of {attached} hooks called"
    );
    // One query, one scrape: the hooks with series are the ones called.
    let without = "vector(scalar(count(lsmpmon_hook_calls_total)) - scalar(lsmpmon_hooks_called))";
    assert_eq!(prom.value(without), Some(0.0));
    // Two more scrapes: nothing creates files while the guest waits.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(prom.value(creates).unwrap_or(0.0), before);
    let misses = "lsmpmon_recursion_misses_total";
    let missed_before = prom.value(misses).expect("recursion misses exported");
    step(control_port, "before");
    // The guest listens for "after" once its 200 files exist.
    step(control_port, "after");
    prom.wait_for(creates, Duration::from_secs(120), |v| v > before);
    std::thread::sleep(Duration::from_secs(3));
    let after = prom.value(creates).unwrap();
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(prom.value(creates), Some(after));
    // Exactly 200, unless the kernel skipped probe runs meanwhile. One program
    // for every hook (7.3's multi-link, 6.12's kprobe session) has one
    // recursion guard per CPU: a task preempted inside it (the trampoline
    // takes the guard before the program can disable preemption) makes
    // another task's hook call on that CPU be skipped. Each skip is counted,
    // never hidden: a shortfall must be covered by the misses (CI once saw
    // 199 on 7.3, in real time).
    let missed = prom.value(misses).unwrap() - missed_before;
    let short = before + 200.0 - after;
    // 6.1 has one fentry/fexit pair per hook: a guard of its own, no skip.
    let covered = series != "6.1" && short > 0.0 && short <= missed;
    assert!(
        short == 0.0 || covered,
        "inode_create: {before} then {after}, {missed} probe runs skipped meanwhile"
    );
    // Serve times calls in windows (here 1 s every 4 s): the 200 are
    // counted exactly all the same, the calls between windows have their
    // counter, and each window's close values the hook's calls at its mean.
    assert_eq!(prom.value("lsmpmon_timing_window_seconds"), Some(1.0));
    assert_eq!(prom.value("lsmpmon_timing_window_every_seconds"), Some(4.0));
    let closed = "lsmpmon_timing_windows_closed_total";
    let by_now = prom.wait_for(closed, Duration::from_secs(120), |v| v >= 2.0);
    // One more close: the creations' opens are valued by then.
    prom.wait_for(closed, Duration::from_secs(60), |v| v > by_now);
    let untimed = prom.value("sum(lsmpmon_hook_untimed_calls_total)").unwrap();
    let timed_all = prom.value("sum(lsmpmon_hook_timed_calls_total)").unwrap();
    assert!(
        timed_all > 0.0 && untimed > 0.0,
        "{timed_all} calls timed, {untimed} untimed"
    );
    // The guest's loop opens a file five times a second, in and out of windows.
    let open_s = prom
        .value(r#"lsmpmon_hook_time_seconds_total{hook="file_open"}"#)
        .unwrap();
    let opens = prom
        .value(r#"lsmpmon_hook_calls_total{hook="file_open"}"#)
        .unwrap();
    // Its estimate per call is about its timed calls' mean (a steady loop).
    let mean_s = prom
        .value(r#"lsmpmon_hook_duration_seconds_sum{hook="file_open"} / lsmpmon_hook_duration_seconds_count{hook="file_open"}"#)
        .unwrap();
    let per_call_s = open_s / opens;
    // (Lower when opens since the last close are not valued yet.)
    assert!(
        per_call_s > mean_s / 4.0 && per_call_s < mean_s * 2.0,
        "file_open: {open_s} s estimated for {opens} calls, {mean_s} s a timed call"
    );
    // --by cpu: the CPUs' series add up to the hook's.
    let on_cpus = r#"sum(lsmpmon_cpu_hook_calls_total{hook="inode_create"})"#;
    assert_eq!(prom.value(on_cpus), Some(after));

    let q = r#"histogram_quantile(0.99, lsmpmon_hook_duration_seconds_bucket{hook="file_open"})"#;
    let p99_s = prom.value(q).expect("file_open's p99");
    let (low_s, high_s) = (128e-9, 1_048_576e-9);
    assert!((low_s..=high_s).contains(&p99_s), "p99 {p99_s} s");
    // The probes' own p50 and p99 (16 buckets an octave) as gauges: for every
    // hook called, within its calls' range (--all-hooks: uncalled have none).
    let gauge = |q: &str| prom.value(&format!("count(lsmpmon_hook_duration_{q}_seconds)"));
    let timed = prom.value("count(lsmpmon_hook_timed_calls_total > 0)");
    assert_eq!((gauge("p50"), gauge("p99")), (timed, timed));
    let inverted = r#"count(lsmpmon_hook_duration_p50_seconds > on(hook) lsmpmon_hook_duration_p99_seconds) or vector(0)"#;
    assert_eq!(prom.value(inverted), Some(0.0));
    let up = prom.value(r#"up{job="lsmpmon"}"#);
    assert_eq!(up, Some(1.0));
    dashboard_queries_answer(&prom);

    step(control_port, "done");
    let out = guest.finish();
    assert!(
        out.contains("reset exit 1"),
        "trace ctl reset must be refused: {out}"
    );
}

/// The guest's side of the hostile-clients test: serve, and when it
/// answers, tests/helpers/scrape.c's hostile clients against it.
const HOSTILE_SCRIPT: &str = r#"
lsmpmon serve --all-hooks &
pid=$!
i=0; until scrape 9464 1 > /dev/null 2>&1; do i=$((i+1)); [ $i -lt 600 ] || exit 9; sleep 1; done
scrape 9464 hostile $pid
kill -INT $pid
wait $pid; echo "serve exit $?"
"#;

/// 1 000 idle connections, a head that never ends, a 10 MB header and a
/// non-HTTP byte stream against the real `serve` with every hook attached
/// and given its series (--all-hooks: the largest scrape; a 6.1 guest, real time): a normal scrape still answers within 1 s,
/// memory stays bounded, and the bad clients are answered or dropped.
#[test]
fn serve_6_1_hostile_clients_cannot_stall_a_scrape() {
    let out = Command::new(LSMPMON)
        .args(["vm", "run", "--kernel", "6.1", "--timeout", "900"])
        .args(["--icount", "off", "--copy"])
        .arg(scrape_helper())
        .args(["--", "sh", "-c", HOSTILE_SCRIPT])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let field = |key: &str| -> String {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .unwrap_or_else(|| panic!("no {key} in:\n{text}"))
            .trim()
            .to_string()
    };
    let number = |key: &str| -> f64 { field(key).parse().unwrap() };
    assert_eq!(field("scrape_status"), "HTTP/1.1 200 OK", "{text}");
    assert!(number("scrape_bytes") > 100_000.0, "{text}");
    assert!(number("scrape_ms") < 1000.0, "{text}");
    assert!(field("garbage_reply").starts_with("HTTP/1.1 400"), "{text}");
    assert!(
        number("big_header_sent_mib") < 10.0
            || field("big_header_reply").starts_with("HTTP/1.1 431"),
        "a 10 MB header was read whole: {text}"
    );
    assert!(number("endless_dropped_after_ms") < 10_000.0, "{text}");
    let grown_kib = number("rss_during_kib") - number("rss_before_kib");
    assert!(
        grown_kib < 64.0 * 1024.0,
        "RSS grew {grown_kib} KiB: {text}"
    );
    assert_eq!(field("after_scrape_status"), "HTTP/1.1 200 OK", "{text}");
    assert!(text.contains("serve exit 0"), "{text}");
}

/// One machine of the fleet test: serve by cgroup, then, when the host says
/// so, workload STATS stats in /a and 100 opens in /B (a path a container
/// runtime would make, on one machine).
const FLEET_SCRIPT: &str = r#"
mkdir -p /sys/fs/cgroup/a /sys/fs/cgroup/B; : > /tmp/x
lsmpmon serve --listen 0.0.0.0:9464 --by cgroup --comm workload --hooks 'inode_getattr,file_open,file_permission' &
echo go | nc -l -p 9000 > /dev/null
sh -c 'echo $$ > /sys/fs/cgroup/a/cgroup.procs; exec workload stat STATS /tmp/x' > /dev/null
sh -c 'echo $$ > /sys/fs/cgroup/B/cgroup.procs; exec workload open_close 100 /tmp/x' > /dev/null
echo ran | nc -l -p 9000 > /dev/null
echo done | nc -l -p 9000 > /dev/null
kill -INT $!
wait
"#;

/// Issue 38 item 5: two guests ("machines", 6.1 and 7.3) scraped by one real
/// Prometheus with the shipped recording rules: its API gives the exact
/// calls per machine x cgroup x hook, and each cgroup's share of its
/// machine's LSM time.
#[test]
fn serve_fleet_of_two_by_cgroup() {
    const POD: &str = "0a1b2c3d_4e5f_6a7b_8c9d_0e1f2a3b4c5d";
    let container = "c0ffee".repeat(10) + "abcd";
    let pod_b = format!("/kubepods.slice/kubepods-pod{POD}.slice/cri-containerd-{container}.scope");
    let machines = [("6.1", 300, "/b"), ("7.3", 200, pod_b.as_str())];
    let guests: Vec<(Guest, u16, u16, String)> = machines
        .iter()
        .map(|(series, stats, b)| {
            let script = FLEET_SCRIPT.replace("STATS", &stats.to_string());
            serve_in_guest(series, &script.replace("/B", b))
        })
        .collect();
    let targets: Vec<String> = guests
        .iter()
        .map(|g| format!("127.0.0.1:{}", g.1))
        .collect();
    let rules = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/grafana/lsmpmon-rules.yml"
    );
    let check = Command::new("promtool")
        .args(["check", "rules", rules])
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    let refs: Vec<&str> = targets.iter().map(String::as_str).collect();
    let relabel = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/grafana/relabel-containers.yml"
    );
    let prom = Prometheus::start_fleet(&refs, Some(rules), Some(relabel));
    prom.wait_for("count(up == 1)", Duration::from_secs(60), |v| v == 2.0);
    for g in &guests {
        step(g.2, "go");
    }
    for g in &guests {
        step(g.2, "ran");
    }
    for ((_, stats, b), target) in machines.iter().zip(&targets) {
        let calls = |cgroup: &str, hook: &str| {
            format!(
                r#"lsmpmon_cgroup_hook_calls_total{{instance="{target}",cgroup="{cgroup}",hook="{hook}"}}"#
            )
        };
        // N stats and stdio's fstat of stdout; open_close's fstat alone.
        let want = (*stats + 1) as f64;
        prom.wait_for(
            &calls("/a", "inode_getattr"),
            Duration::from_secs(60),
            |v| v == want,
        );
        assert_eq!(
            prom.value(&calls(b, "inode_getattr")),
            Some(1.0),
            "{target}"
        );
        assert_eq!(
            prom.value(&calls("/a", "file_open")),
            None,
            "{target}: /a opened nothing"
        );
        let opens = prom.value(&calls(b, "file_open")).unwrap();
        assert!(opens >= 100.0, "{target}: {opens} opens in /b");
        // Only the two cgroups ran `workload`: --comm keeps everything else out.
        let cgroups = format!(
            r#"count(count by (cgroup) (lsmpmon_cgroup_hook_calls_total{{instance="{target}"}}))"#
        );
        assert_eq!(prom.value(&cgroups), Some(2.0), "{target}");
        // The rule's shares: each cgroup's time over the machine's, summing to 1.
        let share = |cgroup: &str| {
            let q = format!(
                r#"instance_cgroup:lsmpmon_hook_time_share:total{{instance="{target}",cgroup="{cgroup}"}}"#
            );
            prom.wait_for(&q, Duration::from_secs(30), |v| v > 0.0 && v < 1.0)
        };
        let time = |cgroup: &str| {
            let q = format!(
                r#"sum(lsmpmon_cgroup_hook_time_seconds_total{{instance="{target}",cgroup="{cgroup}"}})"#
            );
            prom.value(&q).unwrap()
        };
        let (in_a, in_b) = (share("/a"), share(b));
        assert!(
            (in_a + in_b - 1.0).abs() < 1e-9,
            "{target}: shares {in_a} + {in_b}"
        );
        let exact = time("/a") / (time("/a") + time(b));
        assert!(
            (in_a - exact).abs() < 1e-9,
            "{target}: share {in_a}, counters give {exact}"
        );
    }
    // The relabel recipe: the pod's UID and the container's id as labels.
    let by_pod = format!(
        r#"sum(lsmpmon_cgroup_hook_calls_total{{pod_uid="{POD}",container_id="{container}",hook="file_open"}})"#
    );
    assert!(prom.value(&by_pod).unwrap() >= 100.0, "{by_pod}");
    let unlabelled = r#"count(lsmpmon_cgroup_hook_calls_total{cgroup="/b",pod_uid=""})"#;
    assert!(
        prom.value(unlabelled).unwrap() >= 1.0,
        "other paths keep no pod_uid"
    );
    // The 5-minute rate's share, once each series has two samples.
    let rated = "count(instance_cgroup:lsmpmon_hook_time_share:rate5m)";
    prom.wait_for(rated, Duration::from_secs(30), |v| v == 4.0);
    for (g, _, control, _) in guests.into_iter().map(|g| (g.0, g.1, g.2, g.3)) {
        step(control, "done");
        g.finish();
    }
}
