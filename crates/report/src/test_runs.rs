//! Lab runs made up for the forms' unit tests: a kernel, a configuration,
//! a draw and the ops' medians (ns), on a bench result's template.
use super::input::Run;
use model::bench::BenchResult;
use model::cell::CellStatus;
use model::identity::{Alike, KernelId, Origin};
use model::provenance::{Environment, TimeMode};

/// A passed lab cell of `config` on kernel `series`/`flavour` with `cpus`.
pub fn run(series: &str, flavour: &str, cpus: u32, config: &str, medians: &[(&str, f64)]) -> Run {
    let mut bench: BenchResult = serde_json::from_str(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/report/bench-host.json"
    )))
    .unwrap();
    let template = bench.results[0].clone();
    bench.results = medians
        .iter()
        .map(|(op, ns)| {
            let mut r = template.clone();
            r.op = op.to_string();
            (r.summary.median, r.summary.min, r.summary.max) = (*ns, ns * 0.5, ns * 2.0);
            r
        })
        .collect();
    let origin = Origin {
        kernel_release: series.into(),
        environment: Environment::Guest,
        time: TimeMode::Virtual,
        hostname: "h".into(),
        cpu_model: "c".into(),
    };
    Run {
        source: format!("{series}-{config}").into(),
        kernel: KernelId::Lab {
            series: series.into(),
            flavour: flavour.into(),
            cpus,
        },
        config: config.into(),
        status: CellStatus::Passed,
        from_lab: true,
        reason: None,
        time: TimeMode::Virtual,
        started_unix_s: 1,
        draw: 0,
        clock_not_a_draw: None,
        alike: Alike::of_bench(&bench),
        measured_lsms: Vec::new(),
        active_lsms: Vec::new(),
        measured: None,
        bench: Some(bench),
        trace: None,
        traced_bench: None,
        op_calls: Vec::new(),
        footprint: None,
        policy_load_ms: None,
        bytes_added: None,
        kernel_ref: None,
        origin,
        build: String::new(),
    }
}
