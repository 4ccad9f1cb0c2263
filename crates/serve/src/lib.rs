//! `lsmpmon serve`: the trace engine kept attached, its statistics served in
//! Prometheus' text exposition format on `/metrics`.
pub mod args;
pub mod exposition;
pub mod http;
pub mod metrics;

use std::{
    net::{SocketAddr, TcpListener},
    sync::mpsc,
    time::{Duration, Instant},
};

use anyhow::Result;
use hyper::body::Bytes;

pub use args::{By, ServeArgs};
use base::error::{usage, with_code, EXIT_FAILURE};
use trace::live::{self, Live, Reset};

/// Why `trace ctl reset` is refused while serving.
const NO_RESET: &str = "lsmpmon serve's counters only grow (Prometheus computes rates): reset refused; restart serve to start afresh";

pub use http::limits;

/// Binds before anything is attached: a taken address costs no attach.
pub fn bind(addr: SocketAddr) -> Result<TcpListener> {
    // An address in use or not this host's is the environment: exit 2.
    let listener = TcpListener::bind(addr).map_err(|e| {
        usage(format!(
            "cannot listen on {addr}: {e}; choose another address with --listen"
        ))
    })?;
    if !addr.ip().is_loopback() {
        base::say!(
            "lsmpmon: warning: serving on {addr}, not loopback: anyone who can reach it sees which hooks this host runs"
        );
    }
    Ok(listener)
}

pub fn main(args: ServeArgs) -> Result<i32> {
    let listener = bind(args.listen)?;
    let addr = listener.local_addr()?;
    let breakdown = metrics::Breakdown {
        syscall: args.by.contains(&By::Syscall),
        cpu: args.by.contains(&By::Cpu),
        all_hooks: args.all_hooks,
    };
    let engine = engine_args(&args);
    live::attached(&engine, Reset::Refused(NO_RESET), |live| {
        let (asks, scrapes) = mpsc::channel();
        let _server = http::start(listener, limits(args.max_connections), asks)?;
        base::say!("lsmpmon: serving http://{addr}/metrics; Ctrl-C to stop");
        serve(live, &scrapes, breakdown)?;
        Ok(0)
    })
}

/// The engine as serve runs it: timing windows unless told otherwise
/// (`--sample N` for per-call sampling, `--sample 1` to time every call);
/// with `--by cgroup`, per-call sampling, which times every cgroup's calls
/// whenever they come.
fn engine_args(args: &ServeArgs) -> trace::EngineArgs {
    let e = &args.engine;
    let by_cgroup = args.by.contains(&By::Cgroup);
    // --syscall-time sums the timed calls' time per syscall: every call then.
    let told = e.count_only
        || e.empty_probes
        || e.syscall_time
        || e.sample.is_some()
        || e.timing_windows.is_some();
    // Windows need fentry/fexit (5.17+): elsewhere, and for another
    // --method, per-call sampling.
    let windows = !by_cgroup && trace::timing_windows_possible(e.method);
    let (timing_windows, sample) = match (told, windows) {
        (true, _) => (e.timing_windows, e.sample),
        (false, true) => (Some(args::DEFAULT_WINDOWS), None),
        (false, false) => (None, Some(args::DEFAULT_SAMPLE)),
    };
    trace::EngineArgs {
        by_cgroup,
        timing_windows,
        sample,
        ..e.clone()
    }
}

/// Answers scrapes until SIGINT/SIGTERM; scrapes waiting together share one reading.
fn serve(
    live: &mut Live,
    scrapes: &mpsc::Receiver<http::Ask>,
    by: metrics::Breakdown,
) -> Result<()> {
    while !live.stopped() {
        live.answer_ctl()?;
        live.tick();
        let first = match scrapes.recv_timeout(Duration::from_millis(20)) {
            Ok(ask) => ask,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(with_code(EXIT_FAILURE, "the HTTP server stopped"));
            }
        };
        let asks: Vec<http::Ask> = std::iter::once(first).chain(scrapes.try_iter()).collect();
        let reading = read(live, by);
        for ask in asks {
            let text = reading
                .clone()
                .and_then(|families| encode(families, ask.format));
            let _ = ask.reply.send(text);
        }
    }
    Ok(())
}

/// One reading of the probes as metric families.
pub fn read(
    live: &mut Live,
    by: metrics::Breakdown,
) -> std::result::Result<Vec<exposition::Family>, String> {
    let started = Instant::now();
    let result = live
        .snapshot_with(by.syscall)
        .map_err(|e| format!("reading the probes: {e}"))?;
    let per_cpu = if by.cpu { live.per_cpu() } else { Vec::new() };
    let own = metrics::Own {
        scrape_seconds: started.elapsed().as_secs_f64(),
    };
    Ok(metrics::families(&result, &per_cpu, by, own))
}

/// `families` as the scraper asked for them.
pub fn encode(families: Vec<exposition::Family>, format: exposition::Format) -> http::Exposition {
    let text = exposition::encode(families, format).map_err(|e| format!("encoding: {e}"))?;
    Ok(Bytes::from(text))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn engine(argv: &[&str]) -> trace::EngineArgs {
        let cli = Cli::try_parse_from(std::iter::once("serve").chain(argv.iter().copied()));
        engine_args(&cli.unwrap().serve)
    }

    #[test]
    fn serve_samples_its_timing_unless_told_otherwise() {
        assert_eq!(engine(&[]).timing_windows, Some(args::DEFAULT_WINDOWS));
        assert_eq!(engine(&[]).sample_every(), None);
        let w = engine(&["--timing-windows", "2/30"]);
        assert_eq!(w.timing_windows, Some((2.0, 30.0)));
        assert_eq!(engine(&["--sample", "16"]).sample_every(), Some(16));
        assert_eq!(engine(&["--sample", "16"]).timing_windows, None);
        assert_eq!(engine(&["--sample", "1"]).timing_windows, None);
        assert_eq!(engine(&["--count-only"]).timing_windows, None);
        assert_eq!(engine(&["--syscall-time"]).timing_windows, None);
        // By cgroup: each CPU draws its timed calls, whenever a cgroup runs.
        let by = engine(&["--by", "cgroup"]);
        assert_eq!(
            (by.timing_windows, by.sample_every()),
            (None, Some(args::DEFAULT_SAMPLE))
        );
        // Another method than fentry/fexit: no windows, per-call sampling.
        let other = engine(&["--method", "kprobe"]);
        assert_eq!(
            (other.timing_windows, other.sample_every()),
            (None, Some(args::DEFAULT_SAMPLE))
        );
        let by = engine(&["--by", "cgroup", "--timing-windows", "2/30"]);
        assert_eq!(
            (by.timing_windows, by.sample_every()),
            (Some((2.0, 30.0)), None)
        );
        // Every call timed, and nothing timed, are asked for by name.
        assert_eq!(engine(&["--sample", "1"]).sample_every(), None);
        assert_eq!(engine(&["--count-only"]).sample_every(), None);
        assert_eq!(engine(&["--syscall-time"]).sample_every(), None);
        assert!(engine(&["--by", "cgroup"]).by_cgroup);
    }

    #[test]
    fn hostile_sample_values_are_refused() {
        for bad in ["0", "-1", "32769", "1e3", "x"] {
            let cli = Cli::try_parse_from(["serve", "--sample", bad]);
            assert!(cli.is_err(), "--sample {bad}");
        }
        assert!(Cli::try_parse_from(["serve", "--sample", "8", "--count-only"]).is_err());
        for bad in ["5", "60/5", "0/60", "nan/60", "5/1e12", "5/60/1"] {
            let cli = Cli::try_parse_from(["serve", "--timing-windows", bad]);
            assert!(cli.is_err(), "--timing-windows {bad}");
        }
        for clash in ["--sample", "--count-only", "--syscall-time"] {
            let mut argv = vec!["serve", "--timing-windows", "5/60", clash];
            if clash == "--sample" {
                argv.push("8");
            }
            assert!(Cli::try_parse_from(&argv).is_err(), "{clash}");
        }
    }
}
