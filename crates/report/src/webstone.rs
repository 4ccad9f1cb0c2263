//! The LSM paper's Webstone tables: connections per second with 8, 16, 24
//! and 32 clients, per configuration and CPU count (UP vs SMP), and the
//! request latency percentiles behind them (bench ops web_c8 … web_c32).
use super::forms::{op, time_mode};
use super::input::{Run, BASELINE};
use base::papers;
use base::table::{Cell, Row, Table};
use bench::op_names;
use model::bench::Latency;
use model::identity::KernelId;
use model::provenance::TimeMode;

const OPS: [(&str, &str); 4] = [
    (op_names::WEB_C8, "8 clients"),
    (op_names::WEB_C16, "16 clients"),
    (op_names::WEB_C24, "24 clients"),
    (op_names::WEB_C32, "32 clients"),
];

/// The paper's SELinux overhead on connection rate (UP, SMP) beside ours.
const PAPER: &str = "The paper (Linux 2.5.7, real hardware): SELinux cost 16.4 / 15.5 / 16.6 / 16.8 % of the connection rate on one CPU (766.58 vs 916.56 conn/s at 8 clients) and 21.3 / 21.3 / 21.6 / 20.1 % on SMP (949.56 vs 1206.05); the LSM framework alone 4.7-5.2 % UP, 6.7-7.5 % SMP.";

/// Connections per second: one op is one connection, its median ns each.
fn conn_per_s(r: &Run, name: &str) -> Option<f64> {
    let ns = op(r, name)?.summary.median;
    (ns > 0.0).then(|| 1e9 / ns)
}

fn has_web(r: &Run) -> bool {
    OPS.iter().any(|(o, _)| op(r, o).is_some())
}

/// The runs with web figures, grouped by kernel label (which carries the CPU
/// count; one CPU first), configurations in `order` (others after, as found).
fn groups<'a>(runs: &[&'a Run], order: &[String]) -> Vec<(KernelId, Vec<&'a Run>)> {
    let mut out: Vec<(KernelId, Vec<&Run>)> = Vec::new();
    for r in runs.iter().copied().filter(|r| r.passed() && has_web(r)) {
        match out.iter_mut().find(|g| g.0 == r.kernel) {
            Some(g) => g.1.push(r),
            None => out.push((r.kernel.clone(), vec![r])),
        }
    }
    let rank = |c: &str| order.iter().position(|o| o == c).unwrap_or(order.len());
    for g in &mut out {
        // Stable: equal ranks keep the order found.
        g.1.sort_by_key(|r| (r.config != BASELINE, rank(&r.config)));
    }
    out.sort_by_key(|g| g.0.smp());
    out
}

fn rate_row(r: &Run, base: Option<&Run>) -> Row {
    let cells = OPS
        .iter()
        .map(|(o, _)| match conn_per_s(r, o) {
            None => Cell::missing("–"),
            Some(v) => {
                let pct = base
                    .filter(|b| b.alike == r.alike && !std::ptr::eq(*b, r))
                    .and_then(|b| conn_per_s(b, o))
                    // Positive = slower: fewer connections per second.
                    .map(|b| (b - v) / b * 100.0);
                Cell::Value {
                    value: v,
                    pct,
                    mark: None,
                }
            }
        })
        .collect();
    Row {
        label: format!("{} ({})", r.config, r.kernel),
        cells,
    }
}

fn latency_row(r: &Run) -> Row {
    let cells = OPS
        .iter()
        .map(|(o, _)| {
            let l = op(r, o).and_then(|v| v.latency.as_ref());
            let us = |f: fn(&Latency) -> f64| l.map(|l| f(l) / 1e3);
            match (us(|l| l.p50_ns), us(|l| l.p90_ns), us(|l| l.p99_ns)) {
                (Some(a), Some(b), Some(c)) => Cell::text(format!("{a:.0} / {b:.0} / {c:.0}")),
                _ => Cell::missing("–"),
            }
        })
        .collect();
    Row {
        label: format!("{} ({})", r.config, r.kernel),
        cells,
    }
}

/// Both Webstone tables over every run holding web figures.
/// What the 2-CPU cells' time is: virtual since the guest brings its second
/// CPU online after boot (`maxcpus=1`), real time in cells made before.
fn smp_note(all: &[&Run]) -> String {
    let smp_real = all
        .iter()
        .any(|r| r.kernel.smp() && r.time == TimeMode::Real);
    let head = "Kernels named `… 2cpu`: 2 guest CPUs.";
    if smp_real {
        format!("{head} Some of these cells ran without -icount, in the emulation's real time (host-dependent, not deterministic, two host threads on a shared machine; lsmpmon before the second CPU was brought online after boot): compare them with each other, not with the virtual-time figures.")
    } else {
        format!("{head} The guest boots on one (maxcpus=1) and brings the second online before the workload, so they run in virtual time and repeat as 1-CPU cells do.")
    }
}

pub fn tables(runs: &[&Run], order: &[String]) -> Vec<Table> {
    let groups = groups(runs, order);
    if groups.is_empty() {
        return Vec::new();
    }
    let all: Vec<&Run> = groups.iter().flat_map(|g| g.1.iter().copied()).collect();
    let kernels = groups
        .iter()
        .map(|g| g.0.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let header = || {
        std::iter::once("configuration (kernel, CPUs)".to_string())
            .chain(OPS.iter().map(|(_, h)| h.to_string()))
            .collect::<Vec<_>>()
    };
    let mut rates = Vec::new();
    let mut lats = Vec::new();
    for (_, cols) in &groups {
        let base = cols.iter().copied().find(|c| c.config == BASELINE);
        for r in cols {
            rates.push(rate_row(r, base));
            lats.push(latency_row(r));
        }
    }
    vec![
        Table {
            form: base::form::Form::Webstone,
            title: format!(
                "Web server connection rate, connections/s ({})",
                papers::cite(&papers::LSM, "Webstone, UP and SMP")
            ),
            kernel: kernels.clone(),
            notes: vec![
                format!("Time: {}. nginx (Debian) serving a Webstone-like mix (500 B 35 %, 5 KiB 50 %, 50 KiB 14 %, 500 KiB 1 %) on the guest's loopback, started as the system (unconfined); the clients are the confined workload, one new connection per request, every response checked byte for byte. 1e9 / median ns per connection; (x %) = fewer connections/s than `{BASELINE}` on the same kernel and CPU count.", time_mode(&all)),
                smp_note(&all),
                PAPER.into(),
            ],
            header: header(),
            rows: rates,
        },
        Table {
            form: base::form::Form::WebstoneLatency,
            title: "Web request latency p50 / p90 / p99, µs (one connection, request and whole response)".into(),
            kernel: kernels,
            notes: vec![format!(
                "Time: {}. Every sampled request of the op, nearest-rank percentiles.",
                time_mode(&all)
            )],
            header: header(),
            rows: lats,
        },
    ]
}
