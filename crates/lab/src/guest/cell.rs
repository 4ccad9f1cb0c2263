//! The guest side of a cell (`lab guest`, hidden; the guest's command):
//! prepare, set up the policy, prove it, bench untraced, bench traced,
//! footprint; one JSON report on stdout.
use std::{
    fs,
    io::{BufRead, BufReader},
    os::unix::process::CommandExt,
    path::Path,
    process::{Command, Stdio},
    time::Instant,
};

use anyhow::{bail, Context, Result};

use super::{
    access::{self, Outcome},
    footprint, per_op, proof,
    workload::{bench_args, workload, LSMPMON},
};
use crate::guest_plan::{GuestPlan, CONFIG_DIR, PLAN_PATH, PUBLIC, SECRET, WORKLOAD, WORK_DIR};
pub use model::cell::{GuestReport as Report, GuestStage as Stage};
use model::{account::OpCalls, bench::BenchResult, trace::TraceResult};

/// `lab guest PLAN`: always prints a report; exits non-zero unless the cell
/// was proved and measured.
pub fn main(plan_path: &Path) -> Result<i32> {
    let plan: GuestPlan = serde_json::from_slice(&fs::read(plan_path)?)
        .with_context(|| format!("reading {}", plan_path.display()))?;
    let mut report = Report::default();
    if let Err(e) = run(&plan, &mut report) {
        report.error = Some(base::error::one_line(&e));
    }
    base::output::line(&serde_json::to_string(&report)?)?;
    let ok = report.error.is_none() && report.proof.as_ref().is_some_and(|p| p.passed);
    Ok(if ok { 0 } else { 1 })
}

fn stage<T>(report: &mut Report, name: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    base::say!("lab: stage {name}");
    let t = Instant::now();
    let r = f().with_context(|| name.to_string());
    report.stages.push(Stage {
        name: name.into(),
        guest_ms: t.elapsed().as_secs_f64() * 1e3,
    });
    r
}

fn run(plan: &GuestPlan, report: &mut Report) -> Result<()> {
    stage(report, "prepare", || prepare(plan))?;
    let before = stage(report, "access-unconfined", || {
        access_as_workload(plan, false)
    })?;
    let (mem_before, _) = footprint::quiet_meminfo()?;
    if plan.spec.lsm.as_deref() == Some("selinux") {
        footprint::ask_kernel_avtab_eval();
    }
    let marked = stage(report, "setup", || setup(plan))?;
    report.stages.extend(marked);
    report.active_lsms = model::provenance::active_lsms();
    let p = stage(report, "proof", || {
        proof::prove(plan, &before, || access_as_workload(plan, true))
    })?;
    let passed = p.passed;
    base::say!(
        "lab: proof {}: {}",
        if passed { "passed" } else { "FAILED" },
        p.summary
    );
    report.proof = Some(p);
    if !passed {
        return Ok(());
    }
    report.footprint = Some(footprint::collect(&plan.spec, mem_before)?);
    if let Some(expect) = &plan.spec.avtab {
        let figures = report.footprint.as_ref().and_then(|f| f.avtab.as_ref());
        super::avtab::check(expect, figures).map_err(|why| anyhow::anyhow!("avtab: {why}"))?;
    }
    if plan.web_server {
        stage(report, "web-server", || {
            super::webserver::main(Path::new(crate::guest_plan::NGINX)).map(|_| ())
        })?;
    }
    let bench = stage(report, "bench", || bench(plan, None)).inspect_err(|e| {
        // An op failed: the others' figures stay in the report.
        report.bench = e.downcast_ref::<Partial>().map(|p| p.0.clone());
    })?;
    report.bench = Some(bench);
    if plan.spec.proof.tpm {
        proof::tpm_still_answers()?;
    }
    if plan.trace {
        let (trace, traced, calls) = stage(report, "trace", || traced_bench(plan))?;
        report.trace = Some(trace);
        report.traced_bench = Some(traced);
        report.op_calls = Some(calls);
    }
    Ok(())
}

const CLOCKSOURCE: &str = "/sys/devices/system/clocksource/clocksource0/current_clocksource";

/// The first seconds after boot are not quiet: the kernel runs on its
/// provisional clock source (`tsc-early`) and kernel threads still work, and a
/// 6.12 guest then measures a null syscall at twice its cost. Wait (at most
/// 30 s of guest time, cheap in wall time with `sleep=off`) for the final
/// clock source and a CPU that stays idle while we sleep; fail otherwise.
fn settle() -> Result<()> {
    let t = Instant::now();
    loop {
        let cs = fs::read_to_string(CLOCKSOURCE).unwrap_or_default();
        let idle = idle_share(std::time::Duration::from_millis(200));
        let uptime_s: f64 = fs::read_to_string("/proc/uptime")
            .ok()
            .and_then(|u| u.split_whitespace().next()?.parse().ok())
            .unwrap_or(0.0);
        if !cs.trim().ends_with("-early") && idle >= 0.98 {
            base::say!(
                "lab: settled after {uptime_s:.1} s: clock source {}, {:.1} % idle",
                cs.trim(),
                idle * 100.0
            );
            return Ok(());
        }
        if t.elapsed().as_secs() >= 30 {
            // Figures from a busy guest would be wrong: none rather than those.
            bail!(
                "the guest did not settle in 30 s (clock source {}, {:.1} % idle): nothing measured",
                cs.trim(),
                idle * 100.0
            );
        }
    }
}

/// Share of CPU time idle over `window` (from /proc/stat), while we sleep.
fn idle_share(window: std::time::Duration) -> f64 {
    let read = || -> Option<(u64, u64)> {
        let stat = fs::read_to_string("/proc/stat").ok()?;
        let v: Vec<u64> = stat
            .lines()
            .next()?
            .split_whitespace()
            .skip(1)
            .filter_map(|x| x.parse().ok())
            .collect();
        Some((v.get(3)? + v.get(4).unwrap_or(&0), v.iter().take(8).sum()))
    };
    let (Some(a), ()) = (read(), std::thread::sleep(window)) else {
        return 0.0;
    };
    match read() {
        Some(b) if b.1 > a.1 => (b.0 - a.0) as f64 / (b.1 - a.1) as f64,
        _ => 0.0,
    }
}

/// The benchmark's `--dir` (the lab's --bench-dir).
fn bench_dir(plan: &GuestPlan) -> &str {
    plan.bench_args
        .iter()
        .skip_while(|a| *a != "--dir")
        .nth(1)
        .map_or(WORK_DIR, String::as_str)
}

fn prepare(plan: &GuestPlan) -> Result<()> {
    settle()?;
    // bench makes its --dir (0700) but not the parents a deep one needs.
    if let Some(parent) = Path::new(bench_dir(plan)).parent() {
        fs::create_dir_all(parent)
            .with_context(|| format!("making {} for the benchmark", parent.display()))?;
    }
    for (path, text) in [(PUBLIC, "public\n"), (SECRET, "secret\n")] {
        fs::create_dir_all(Path::new(path).parent().unwrap_or(Path::new("/")))?;
        fs::write(path, text)?;
    }
    fs::create_dir_all(WORK_DIR)?;
    // The host puts the workload in the initramfs (host::cell::guest_files):
    // a copy made here, after the guest settled, was a layout draw.
    if !Path::new(WORKLOAD).is_file() {
        bail!("{WORKLOAD} is not in the guest's initramfs: the host that booted it is not this lsmpmon");
    }
    Ok(())
}

/// Runs the configuration's setup script; the spans it marks on its stdout
/// (`lab-mark: NAME begin` … `lab-mark: NAME end`, e.g. the policy load) as
/// stages of their own, timed by when the lines arrive.
fn setup(plan: &GuestPlan) -> Result<Vec<Stage>> {
    let Some(script) = &plan.spec.setup else {
        return Ok(Vec::new());
    };
    let mut child = Command::new("/bin/sh")
        .arg(script)
        .current_dir(CONFIG_DIR)
        .env("LAB_WORKLOAD", WORKLOAD)
        .env("LAB_PUBLIC", PUBLIC)
        .env("LAB_SECRET", SECRET)
        .env("LAB_WORK_DIR", WORK_DIR)
        .env("LAB_BENCH_DIR", bench_dir(plan))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {script}"))?;
    let stderr = child.stderr.take().context("the setup script's stderr")?;
    let errors = std::thread::spawn(move || {
        BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    });
    let stdout = child.stdout.take().context("the setup script's stdout")?;
    let mut marks = SetupMarks::default();
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        marks.see(&line, Instant::now());
        base::say!("lab: setup: {line}");
    }
    let status = child.wait()?;
    for line in errors.join().unwrap_or_default() {
        base::say!("lab: setup: {line}");
    }
    if !status.success() {
        bail!("{script} failed ({status})");
    }
    Ok(marks.stages)
}

/// The spans a setup script marked, in the order they ended.
#[derive(Default)]
struct SetupMarks {
    open: Vec<(String, Instant)>,
    stages: Vec<Stage>,
}

impl SetupMarks {
    fn see(&mut self, line: &str, at: Instant) {
        let Some(mark) = line.trim().strip_prefix("lab-mark: ") else {
            return;
        };
        match mark.rsplit_once(' ') {
            Some((name, "begin")) => self.open.push((name.to_string(), at)),
            Some((name, "end")) => {
                if let Some(i) = self.open.iter().position(|(n, _)| n == name) {
                    let (name, began) = self.open.remove(i);
                    self.stages.push(Stage {
                        name,
                        guest_ms: at.duration_since(began).as_secs_f64() * 1e3,
                    });
                }
            }
            _ => {}
        }
    }
}

/// The workload command, confined (through `lab confine`) or not.
fn access_as_workload(plan: &GuestPlan, confined: bool) -> Result<Vec<Outcome>> {
    let out = workload(plan, confined, &["lab", "access", PLAN_PATH])
        .output()
        .context("running the workload's access check")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!(
            "the workload's access check failed ({}): {}",
            out.status,
            stderr.lines().last().unwrap_or("")
        );
    }
    serde_json::from_slice(&out.stdout).context("reading the access check's result")
}

fn bench(plan: &GuestPlan, trace_out: Option<&str>) -> Result<BenchResult> {
    let out_file = "/tmp/lsmpmon-lab-bench.json";
    let mut cmd = match trace_out {
        None => workload(plan, true, &bench_args(plan, false)),
        Some(trace_json) => {
            let mut c = Command::new(LSMPMON);
            // A cell measures: the cheapest probe per call (fentry/fexit
            // where the kernel has it), not the fastest attach.
            c.args([
                "trace",
                "--per-lsm",
                "--weigh",
                "per-call",
                "--json",
                "-o",
                trace_json,
            ]);
            // The ops' own calls: only they run under the workload's name (per_op.rs).
            // and what their traffic runs in softirq on top of them (a
            // loopback packet's receive: tcp and udp's socket_sock_rcv_skb).
            c.args(["--comm", &per_op::traced_comm(), "--with-interrupts"]);
            // A BPF LSM configuration's own lsm/ programs sit on the very
            // bpf_lsm_* functions --per-lsm times: they are the module being
            // measured, not someone else's probes (the result lists them).
            if plan.spec.measured_lsms.iter().any(|l| l == "bpf") {
                c.arg("--allow-other-probes");
            }
            c.args(["--", LSMPMON, "lab", "per-op", PLAN_PATH]);
            c.stdin(Stdio::null());
            c
        }
    };
    let (status, failures) = status_and_failures(cmd.stdout(fs::File::create(out_file)?))?;
    let written = fs::read(out_file).ok();
    if !status.success() {
        let mut why = format!("the confined benchmark failed ({status})");
        if !failures.is_empty() {
            why = format!("{why}: {}", failures.join("; "));
        }
        return match written.and_then(|b| serde_json::from_slice(&b).ok()) {
            Some(partial) => Err(Partial(partial, why).into()),
            None => bail!("{why}"),
        };
    }
    serde_json::from_slice(&written.unwrap_or_default()).context("reading the benchmark's JSON")
}

/// Runs the benchmark, its stderr passed on line by line as it comes (the
/// progress the host shows) and its failed ops' lines kept for the reason.
fn status_and_failures(cmd: &mut Command) -> Result<(std::process::ExitStatus, Vec<String>)> {
    let mut child = cmd
        .stderr(Stdio::piped())
        .spawn()
        .context("starting the benchmark")?;
    let stderr = child.stderr.take().context("the benchmark's stderr")?;
    let mut failures = Vec::new();
    // Bytes, not UTF-8 lines: a stray byte must not stop the relay (the
    // bench would then die writing to a closed pipe).
    for line in BufReader::new(stderr).split(b'\n').map_while(Result::ok) {
        let line = base::text::escaped(&line, 4000);
        base::say!("{line}");
        if line.contains(" FAILED: ") {
            failures.push(line.trim_start_matches("bench: ").to_string());
        }
    }
    Ok((child.wait()?, failures))
}

/// A benchmark that failed after writing the figures of the ops that did not.
#[derive(Debug)]
struct Partial(BenchResult, String);

impl std::fmt::Display for Partial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.1)
    }
}

impl std::error::Error for Partial {}

fn traced_bench(plan: &GuestPlan) -> Result<(TraceResult, BenchResult, Vec<OpCalls>)> {
    let trace_file = "/tmp/lsmpmon-lab-trace.json";
    let bench = bench(plan, Some(trace_file))?;
    let trace = serde_json::from_slice(&fs::read(trace_file)?).context("reading the trace")?;
    let calls =
        serde_json::from_slice(&fs::read(per_op::OP_CALLS)?).context("reading the op calls")?;
    Ok((trace, bench, calls))
}

/// `lab confine PLAN -- PROGRAM ARGS`: apply the configuration's
/// confinement to this process, then become PROGRAM.
pub fn confine(plan_path: &Path, argv: &[String]) -> Result<i32> {
    let plan: GuestPlan = serde_json::from_slice(&fs::read(plan_path)?)?;
    let c = &plan.spec.confine;
    if let (Some(file), Some(value)) = (&c.attr_file, &c.attr_value) {
        fs::write(file, value).with_context(|| format!("writing '{value}' to {file}"))?;
    }
    let (prog, args) = argv.split_first().context("lab confine: no command")?;
    let err = Command::new(prog).args(args).exec();
    Err(err).with_context(|| format!("executing {prog}"))
}

/// `lab access PLAN [--landlock]`: the rows, as the calling process sees them.
pub fn access(plan_path: &Path, landlock: bool) -> Result<i32> {
    let plan: GuestPlan = serde_json::from_slice(&fs::read(plan_path)?)?;
    if landlock {
        bench::landlock::enter(Path::new(WORK_DIR))?;
    }
    base::output::line(&serde_json::to_string(&access::try_all(&plan.matrix))?)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn marked_spans_become_stages() {
        let t0 = Instant::now();
        let mut m = SetupMarks::default();
        m.see("lab-mark: policy-load begin", t0);
        m.see("loaded", t0 + Duration::from_millis(3));
        m.see("lab-mark: relabel begin", t0 + Duration::from_millis(5));
        m.see("lab-mark: policy-load end", t0 + Duration::from_millis(7));
        m.see("lab-mark: unknown end", t0 + Duration::from_millis(8));
        m.see("lab-mark: relabel end", t0 + Duration::from_millis(9));
        let got: Vec<(&str, f64)> = m
            .stages
            .iter()
            .map(|s| (s.name.as_str(), s.guest_ms.round()))
            .collect();
        assert_eq!(got, vec![("policy-load", 7.0), ("relabel", 4.0)]);
    }
}
