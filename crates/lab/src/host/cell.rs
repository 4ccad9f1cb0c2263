//! The host side of one cell: the guest's files (configuration after its
//! host build, programs with their libraries), a TPM if asked, the boot, and
//! the cell's result with its provenance.
use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
    sync::atomic::AtomicBool,
    time::Instant,
};

use anyhow::{bail, Context, Result};

use super::libs::with_libraries;
use crate::{
    guest_plan::{self, GuestPlan},
    host::swtpm::Swtpm,
    results::{CellResult, CellStatus, ConfigRef, KernelRef, StageTime},
    spec::{self, Config},
};
use vm::{self, initramfs::Entry, kernel::Kernel, qemu, Machine};

/// Everything one cell needs, decided before it runs.
pub struct CellJob {
    pub kernel: Kernel,
    pub config: Config,
    pub plan: GuestPlan,
    pub machine: Machine,
    /// The unpacked nginx binary on the host, for the `web` ops.
    pub nginx: Option<PathBuf>,
    /// The `build` op's compiler, headers and sources: (host, guest) paths.
    pub build_files: Vec<(PathBuf, String)>,
    /// The user's --workload program, as checked (`guest_plan::USER_WORKLOAD`).
    pub user_workload: Option<std::sync::Arc<[u8]>>,
}

/// Runs the cell; never fails: a failure is a cell result with its reason.
pub fn run(
    job: &CellJob,
    base: CellResult,
    work: &Path,
    progress: &(dyn Fn(&str) + Sync),
    cancel: &AtomicBool,
) -> CellResult {
    let mut result = base;
    let started = Instant::now();
    let mut stages: Vec<StageTime> = Vec::new();
    let outcome = boot(
        job,
        work,
        &mut result,
        &mut stages,
        started,
        progress,
        cancel,
    );
    result.wall_s = started.elapsed().as_secs_f64();
    result.stages = stages;
    if let Err(e) = outcome {
        let interrupted = cancel.load(std::sync::atomic::Ordering::SeqCst);
        result.status = if interrupted {
            CellStatus::Interrupted
        } else {
            CellStatus::Failed
        };
        let full = (!interrupted)
            .then(|| super::space::out_of_space(work, &e))
            .flatten();
        result.reason = Some(full.unwrap_or_else(|| base::error::one_line(&e)));
    }
    result
}

fn boot(
    job: &CellJob,
    work: &Path,
    result: &mut CellResult,
    stages: &mut Vec<StageTime>,
    started: Instant,
    progress: &(dyn Fn(&str) + Sync),
    cancel: &AtomicBool,
) -> Result<()> {
    fs::create_dir_all(work)?;
    let (extra, bytes_added) = guest_files(job, work)?;
    result.bytes_added = bytes_added;
    let mut tpm = if job.config.spec.proof.tpm {
        Some(Swtpm::start(work)?)
    } else {
        None
    };
    // The configuration's host build, libraries and TPM, before QEMU starts.
    stages.push(StageTime::wall(
        "host-build",
        started.elapsed().as_secs_f64(),
    ));
    let guest = launch(job, work, extra, tpm.as_ref(), progress, cancel);
    // swtpm must outlive the guest: had it gone, TPM commands failed.
    let tpm_died = tpm.as_mut().and_then(|t| tpm_failure(t, work));
    drop(tpm);
    stages.extend(guest.stage_times());
    let code = match (guest.code, &tpm_died) {
        (Err(_), Some(why)) => bail!("{why}"),
        (code, _) => code?,
    };
    let report = read_report(work, code, tpm_died.as_deref())?;
    for s in &report.stages {
        if let Some(st) = stages.iter_mut().find(|x| x.name == s.name) {
            st.guest_ms = Some(s.guest_ms);
        }
    }
    judge(result, report)?;
    if let Some(why) = tpm_died {
        // What the guest measured is kept; the cell is not valid.
        result.status = CellStatus::Failed;
        result.reason = Some(why);
    }
    Ok(())
}

/// A guest's run: its exit status, and when each of its stages began.
struct GuestRun {
    code: Result<i32>,
    /// (stage, seconds after the boot began), from the guest's
    /// `lab: stage NAME` lines.
    marks: Vec<(String, f64)>,
    wall_s: f64,
}

impl GuestRun {
    /// Wall time from one stage mark to the next; "boot" runs up to the first.
    fn stage_times(&self) -> Vec<StageTime> {
        let mut times = Vec::new();
        let mut prev = ("boot", 0.0);
        for (name, at) in &self.marks {
            times.push(StageTime::wall(prev.0, at - prev.1));
            prev = (name, *at);
        }
        times.push(StageTime::wall(prev.0, self.wall_s - prev.1));
        times
    }
}

fn launch(
    job: &CellJob,
    work: &Path,
    extra: Vec<Entry>,
    tpm: Option<&Swtpm>,
    progress: &(dyn Fn(&str) + Sync),
    cancel: &AtomicBool,
) -> GuestRun {
    let started = Instant::now();
    let marks = std::sync::Mutex::new(Vec::<(String, f64)>::new());
    let track = |line: &str| {
        if let Some(name) = line.strip_prefix("lab: stage ") {
            marks
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((name.to_string(), started.elapsed().as_secs_f64()));
        }
        progress(line);
    };
    let code = vm::launch(&vm::Launch {
        kernel: &job.kernel,
        lsm: job.config.spec.lsm.as_deref(),
        append: &job.config.spec.append,
        extra,
        argv: vec![
            "/bin/lsmpmon".into(),
            "lab".into(),
            "guest".into(),
            guest_plan::PLAN_PATH.into(),
        ],
        // The running binary, even if a rebuild has replaced the file since.
        lsmpmon_bin: PathBuf::from("/proc/self/exe"),
        machine: &job.machine,
        qemu_args: tpm.map(Swtpm::qemu_args).unwrap_or_default(),
        tty: None,
        run_dir: work,
        output: qemu::Output::Quiet {
            progress: &track,
            cancel,
        },
    });
    GuestRun {
        code,
        marks: marks.into_inner().unwrap_or_else(|p| p.into_inner()),
        wall_s: started.elapsed().as_secs_f64(),
    }
}

/// Why the TPM's figures are not valid, if swtpm failed during the cell.
/// QEMU shuts it down as it exits (status 0): only a failure or signal
/// counts here; a clean exit mid-cell shows in the guest (PCR 10 unreadable).
fn tpm_failure(tpm: &mut Swtpm, work: &Path) -> Option<String> {
    let st = tpm.exited().filter(|st| !st.success())?;
    Some(format!(
        "swtpm (pid {}, the guest's TPM) exited during the cell ({st}): TPM figures after that are not valid; log: {}",
        tpm.pid(),
        work.join("swtpm.log").display()
    ))
}

/// The guest's report from its stdout; a dead TPM explains a missing one.
fn read_report(work: &Path, code: i32, tpm_died: Option<&str>) -> Result<model::cell::GuestReport> {
    let stdout = fs::read(work.join("stdout")).unwrap_or_default();
    // The guest's text as text every reader of the cell takes: what a
    // workload printed (escape sequences, carriage returns) escaped.
    let parsed: Result<model::cell::GuestReport, _> =
        serde_json::from_slice(&stdout).and_then(|mut v: serde_json::Value| {
            base::text::printable_json(&mut v);
            serde_json::from_value(v)
        });
    if let (Err(_), Some(why)) = (&parsed, tpm_died) {
        bail!("{why}");
    }
    parsed.with_context(|| {
        format!(
            "the guest's cell report is missing or malformed (exit status {code}); console log: {}",
            work.join("console.log").display()
        )
    })
}

/// Characters of the guest's error a cell's reason keeps.
const MAX_REASON_CHARS: usize = 4000;

/// The cell's status from the guest's report: proved and measured, not
/// proved, or failed with the guest's own reason.
fn judge(result: &mut CellResult, report: model::cell::GuestReport) -> Result<()> {
    let mut report = report;
    // One line, bounded: the reason is printed with every status.
    report.error = report
        .error
        .map(|e| base::text::one_line(&e, MAX_REASON_CHARS));
    result.status = match (&report.proof, &report.error) {
        (_, Some(e)) => {
            result.reason = Some(e.clone());
            CellStatus::Failed
        }
        (Some(p), None) if p.passed => CellStatus::Passed,
        (Some(p), None) => {
            result.reason = Some(format!("proof failed: {}", p.summary));
            CellStatus::ProofFailed
        }
        (None, None) => bail!("the guest reported no proof"),
    };
    result.guest = Some(report);
    Ok(())
}

/// What a configuration needs on the host, checked before a matrix starts:
/// its Debian packages, and its programs with their libraries.
pub fn check_host_files(config: &Config) -> Result<()> {
    check_packages(config)?;
    for prog in &config.spec.programs {
        with_libraries(prog)?;
    }
    Ok(())
}

/// The configuration directory after its host build, the programs it
/// lists with their libraries, and the plan. Returns them with their size.
fn guest_files(job: &CellJob, work: &Path) -> Result<(Vec<Entry>, u64)> {
    let spec = &job.config.spec;
    check_packages(&job.config)?;
    let copy = work.join("config");
    let _ = fs::remove_dir_all(&copy);
    for layer in job.config.base_dirs.iter().chain([&job.config.dir]) {
        base::secure_fs::copy_tree_over(layer, &copy)?;
    }
    if let Some(build) = &spec.host_build {
        base::command::run(Command::new("sh").args(["-c", build]).current_dir(&copy))
            .with_context(|| format!("{}: host_build", job.config.name))?;
    }
    let mut entries = Vec::new();
    let mut files = Vec::new();
    crate::spec::collect_files(&copy, &copy, &mut files)?;
    for rel in files {
        entries.push(Entry::host(
            copy.join(&rel),
            &format!("{}/{rel}", guest_plan::CONFIG_DIR),
            0o755,
        ));
    }
    for prog in &spec.programs {
        for path in with_libraries(prog)? {
            if !entries
                .iter()
                .any(|e| Path::new("/").join(&e.guest) == path)
            {
                entries.push(Entry::host(path.clone(), &path.to_string_lossy(), 0o755));
            }
        }
    }
    let bytes = entries
        .iter()
        .map(|e| match &e.source {
            vm::initramfs::Source::Host(p) => fs::metadata(p).map(|m| m.len()).unwrap_or(0),
            vm::initramfs::Source::Bytes(b) => b.len() as u64,
            vm::initramfs::Source::Lsmpmon => 0,
        })
        .sum();
    // The web ops' server and the build op's compiler are the workload's,
    // not the configuration's: not in its footprint.
    if let Some(nginx) = &job.nginx {
        add_program(&mut entries, nginx, guest_plan::NGINX)?;
    }
    for (host, guest) in &job.build_files {
        if !entries
            .iter()
            .any(|e| Path::new("/").join(&e.guest) == Path::new(guest))
        {
            entries.push(Entry::host(host.clone(), guest, 0o755));
        }
    }
    // In the archive, not copied in the guest after it settled: a copy's
    // pages, allocated just before the benchmark, made the build's size a
    // draw of the layout the benchmark runs in.
    entries.push(Entry::lsmpmon(guest_plan::WORKLOAD));
    if let Some(program) = &job.user_workload {
        entries.push(Entry::bytes(
            guest_plan::USER_WORKLOAD,
            0o755,
            program.to_vec(),
        ));
    }
    entries.push(Entry::bytes(
        guest_plan::PLAN_PATH,
        0o644,
        serde_json::to_vec(&job.plan)?,
    ));
    Ok((entries, bytes))
}

/// A program at `guest_path` and its libraries at their own paths (once each).
fn add_program(entries: &mut Vec<Entry>, host: &Path, guest_path: &str) -> Result<()> {
    let mut files = with_libraries(host)?.into_iter();
    files.next();
    entries.push(Entry::host(host.to_path_buf(), guest_path, 0o755));
    for lib in files {
        if !entries.iter().any(|e| Path::new("/").join(&e.guest) == lib) {
            entries.push(Entry::host(lib.clone(), &lib.to_string_lossy(), 0o755));
        }
    }
    Ok(())
}

fn check_packages(config: &Config) -> Result<()> {
    let missing: Vec<&str> = config
        .spec
        .host_packages
        .iter()
        .filter(|p| {
            !Command::new("dpkg-query")
                .args(["-W", "-f=${Status}", p])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        })
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Err(base::error::usage(format!(
            "configuration {} needs Debian packages on the host: apt-get install {} (scripts/setup.sh --tests installs every configuration's)",
            config.name,
            missing.join(" ")
        )));
    }
    Ok(())
}

/// The result's references to what the cell ran on.
pub fn kernel_ref(k: &Kernel) -> KernelRef {
    k.reference()
}

pub fn config_ref(c: &Config) -> ConfigRef {
    ConfigRef {
        name: c.name.clone(),
        description: c.spec.description.clone(),
        dir: spec::shown_dir(c),
        hash: c.hash.clone(),
        lsm: c.spec.lsm.clone(),
        append: c.spec.append.clone(),
        proof: c.spec.proof.kind,
        measured_lsms: c.spec.measured_lsms.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workload's escape sequences, carriage return and a bidirectional
    /// override in the guest's report: the failed cell is written, read
    /// back by what the table step, `report`, `lab merge` and `lab status`
    /// read cells with, and its reason says what the workload printed.
    #[test]
    fn a_guest_reports_bytes_never_make_its_cell_unreadable() {
        let fixture = include_str!(
            "../../../../tests/fixtures/report/lab/cells/6.1-cloud__none__1795500718528-17793-0-vm.json"
        );
        let mut cell: CellResult = serde_json::from_str(fixture).unwrap();
        let mut report = cell.guest.take().unwrap();
        let printed = "bench: workload FAILED: its output ended: \u{1b}[2K\rall fine\u{202e}";
        report.error = Some(format!("bench: {printed}\n{}", "x".repeat(10_000)));
        if let Some(p) = report.proof.as_mut() {
            p.summary = format!("{}\r\u{1b}[1A", p.summary);
        }
        let work = std::env::temp_dir().join(format!("lsmpmon-cell-bytes-{}", std::process::id()));
        let cells = work.join("cells");
        fs::create_dir_all(&cells).unwrap();
        fs::write(work.join("stdout"), serde_json::to_vec(&report).unwrap()).unwrap();
        let report = read_report(&work, 1, None).unwrap();
        judge(&mut cell, report).unwrap();
        assert_eq!(cell.status, CellStatus::Failed);
        let reason = cell.reason.clone().unwrap();
        assert!(
            reason.contains(r"\u{1b}[2K\rall fine\u{202e}\nxxx") && reason.ends_with('…'),
            "{}",
            &reason[..200]
        );
        assert!(reason.chars().count() <= MAX_REASON_CHARS + 1);
        fs::write(
            cells.join("cell.json"),
            serde_json::to_vec_pretty(&cell).unwrap(),
        )
        .unwrap();
        let (read, bad) = crate::results::read_cells(&cells).unwrap();
        let _ = fs::remove_dir_all(&work);
        assert_eq!(bad, Vec::<String>::new());
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].status, CellStatus::Failed);
        assert_eq!(read[0].reason.as_deref(), Some(reason.as_str()));
    }
}
