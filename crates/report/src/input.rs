//! What `report` and `compare` read: lab cells (files or result
//! directories), `bench` and `trace` results. Each becomes a [`Run`]: one
//! configuration measured on one kernel, with where its numbers come from.
use std::{
    collections::HashMap,
    fs,
    path::{Path, PathBuf},
};

use anyhow::Result;

use base::error::usage;
use model::account::OpCalls;
use model::bench::{BenchResult, OpResult, Unit, BENCH_SCHEMA};
use model::cell::{CellResult, CellStatus, Footprint, ProofKind, ProofReport, CELL_SCHEMA};
use model::identity::{Alike, KernelId, Origin};
use model::provenance::TimeMode;
use model::read::{self, AnyResult};
use model::trace::{TraceResult, TRACE_SCHEMA};

/// One configuration on one kernel: a lab cell, or a single bench/trace result.
#[derive(Debug, Clone)]
pub struct Run {
    pub source: PathBuf,
    /// The kernel its figures belong to; tables show it by its label.
    pub kernel: KernelId,
    /// The lab configuration, or a single result's file name.
    pub config: String,
    pub status: CellStatus,
    /// A lab cell (its baseline is always the `none` configuration).
    pub from_lab: bool,
    pub reason: Option<String>,
    pub time: TimeMode,
    pub started_unix_s: u64,
    /// Its layout draw (a lab cell run with --draws; 0 otherwise).
    pub draw: u32,
    /// A lab cell's guest clock where it is not a layout draw's (a rerun
    /// with `--rtc clock=host`, say): it counts as draw 0, which is said.
    pub clock_not_a_draw: Option<String>,
    /// Runs with equal identities were measured alike (same kernel package
    /// or release, samples, time mode): only then is a percentage between them shown.
    pub alike: Alike,
    /// Whose own functions fill the Table 4 form (empty: the hook itself).
    pub measured_lsms: Vec<String>,
    /// The LSMs the guest ran (a lab cell's /sys/kernel/security/lsm).
    pub active_lsms: Vec<String>,
    /// A lab cell whose proof read IMA's measurement list.
    pub measured: Option<Measured>,
    pub bench: Option<BenchResult>,
    pub trace: Option<TraceResult>,
    /// A lab cell's benchmark under trace (the observer effect's numerator).
    pub traced_bench: Option<BenchResult>,
    /// A lab cell's traced run op by op: each op's module calls.
    pub op_calls: Vec<OpCalls>,
    pub footprint: Option<Footprint>,
    /// Guest ms of the span a setup script marked `policy-load`.
    pub policy_load_ms: Option<f64>,
    pub bytes_added: Option<u64>,
    pub origin: Origin,
    /// The lsmpmon that measured it: its version, and its commit where recorded.
    pub build: String,
    /// A lab cell's kernel: its packages and, for a kernel lsmpmon built,
    /// its image sizes.
    pub kernel_ref: Option<model::KernelRef>,
}

/// What a `measure` proof showed about IMA.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// PCR 10 was read: a TPM took the extends.
    pub tpm: bool,
    /// The file digests' algorithm in the list ("sha256", "sha1").
    pub algo: Option<String>,
    /// The guest idled in host time (`-icount sleep=on`): swtpm answered
    /// while the driver slept (vm/machine.rs, ICOUNT_WITH_TPM).
    pub idled_in_host_time: bool,
}

impl Measured {
    fn from_proof(p: &ProofReport, icount: &str) -> Option<Self> {
        if p.kind != ProofKind::Measure {
            return None;
        }
        // "10 <template digest> <template> <algo>:<file digest> <path>"
        let algo = p.measurements.iter().find_map(|l| {
            let field = l.split_whitespace().nth(3)?;
            Some(field.split_once(':')?.0.to_string())
        });
        Some(Self {
            tpm: p.pcr10_before.is_some(),
            algo,
            // QEMU's default is sleep=on; "off" is real time, no icount at all.
            idled_in_host_time: icount != "off" && !icount.split(',').any(|o| o == "sleep=off"),
        })
    }
}

impl Run {
    pub fn passed(&self) -> bool {
        self.status == CellStatus::Passed
    }
}

/// The configuration every other is measured against.
pub const BASELINE: &str = "none";

/// Each op the run's benchmark measured.
pub fn ops(c: &Run) -> &[OpResult] {
    c.bench.as_ref().map_or(&[], |b| &b.results)
}

/// Every run in PATHS (files or lab result directories) that counts (see
/// [`counting`]). A file that is not an lsmpmon result is an error naming
/// it, never a run; with `skip` it is named on stderr and left out.
pub fn load(paths: &[PathBuf], skip: bool) -> Result<Vec<Run>> {
    Ok(load_counting(paths, skip)?.0)
}

/// The runs that count, and a line for each run another one superseded
/// (and one for the copies of single results read once).
pub fn load_counting(paths: &[PathBuf], skip: bool) -> Result<(Vec<Run>, Vec<String>)> {
    let (runs, singles) = load_every(paths, skip)?;
    let (runs, mut lines) = counting(runs);
    lines.extend(singles.copies_line());
    Ok((runs, lines))
}

/// Every run in PATHS, each copy of one read once, none superseded: a
/// cell run again by another build is another layout draw (what the floor
/// is made of), not a replacement.
pub fn load_all(paths: &[PathBuf], skip: bool) -> Result<Vec<Run>> {
    Ok(load_every(paths, skip)?.0)
}

fn load_every(paths: &[PathBuf], skip: bool) -> Result<(Vec<Run>, SinglesSeen)> {
    let mut runs = Vec::new();
    let mut cells = CellsSeen::default();
    let mut singles = SinglesSeen::default();
    for p in paths {
        let meta =
            fs::metadata(p).map_err(|e| usage(format!("cannot read {}: {e}", p.display())))?;
        let (files, listed) = if meta.is_dir() {
            (result_files(p)?, true)
        } else {
            (vec![p.clone()], false)
        };
        for f in files {
            let entry = if listed {
                base::secure_fs::not_a_link(&f).and_then(|()| load_entry(&f))
            } else {
                load_entry(&f)
            };
            match entry {
                Ok((r, Seen::Cell(key))) => {
                    if cells.add(key, &f)? {
                        runs.push(r)
                    }
                }
                Ok((r, Seen::Single(contents))) => {
                    if singles.first(contents, &f) {
                        runs.push(r)
                    }
                }
                Err(e) if skip => {
                    base::say!("lsmpmon: skipping {}", base::error::one_line(&e))
                }
                Err(e) => return Err(e),
            }
        }
    }
    if runs.is_empty() {
        return Err(usage(
            "no results in the given paths: pass lab result directories or result files",
        ));
    }
    one_unit_per_op(&runs)?;
    label_standalone(&mut runs);
    Ok((runs, singles))
}

/// What identifies a result read: a cell by its id and start time, a
/// single result by its contents (a copy of one run is that run).
enum Seen {
    Cell(CellKey),
    Single(String),
}

/// The single results read so far, and the copies left out.
#[derive(Default)]
struct SinglesSeen {
    first: HashMap<String, PathBuf>,
    copies: Vec<(PathBuf, PathBuf)>,
}

impl SinglesSeen {
    /// Whether `path` is the first file with these contents.
    fn first(&mut self, contents: String, path: &Path) -> bool {
        match self.first.get(&contents) {
            // The same file given twice is simply read once.
            Some(first) if first == path => false,
            Some(first) => {
                self.copies.push((path.to_path_buf(), first.clone()));
                false
            }
            None => {
                self.first.insert(contents, path.to_path_buf());
                true
            }
        }
    }

    /// One line saying how many copies were left out, naming the first.
    fn copies_line(&self) -> Option<String> {
        let n = self.copies.len();
        let (copy, of) = self.copies.first()?;
        let more = match n - 1 {
            0 => String::new(),
            1 => " and 1 more".into(),
            k => format!(" and {k} more"),
        };
        Some(format!(
            "{n} identical {} of results already read left out, each counted once (a copy of one run is not another run): {} is {}{more}",
            if n == 1 { "copy" } else { "copies" },
            copy.display(),
            of.display()
        ))
    }
}

/// A cell's identity (id and start time) and its contents.
struct CellKey {
    id: String,
    started_unix_s: u64,
    contents: String,
}

/// The cells read so far: the same cell read twice (a file given twice, or
/// a copy) is one cell; two different cells under one identity cannot both
/// be it, and no file name decides which.
#[derive(Default)]
struct CellsSeen(HashMap<(String, u64), (String, PathBuf)>);

impl CellsSeen {
    /// Whether the cell is new (not a copy of one already read).
    fn add(&mut self, key: CellKey, path: &Path) -> Result<bool> {
        let id = (key.id, key.started_unix_s);
        match self.0.get(&id) {
            Some((contents, first)) if *contents != key.contents => Err(usage(format!(
                "{} and {}: two different cells with id {} started at {}: remove the wrong one",
                first.display(),
                path.display(),
                id.0,
                id.1
            ))),
            Some(_) => Ok(false),
            None => {
                self.0.insert(id, (key.contents, path.to_path_buf()));
                Ok(true)
            }
        }
    }
}

/// Each op in one unit across the runs read together: a percentage between
/// "MB/s" and "ns/op" figures means nothing.
pub fn one_unit_per_op<'a>(runs: impl IntoIterator<Item = &'a Run>) -> Result<()> {
    let mut seen: HashMap<&str, (Unit, &Path)> = HashMap::new();
    for r in runs {
        for o in r.bench.iter().flat_map(|b| &b.results) {
            match seen.get(o.op.as_str()) {
                Some((unit, first)) if *unit != o.unit => {
                    return Err(usage(format!(
                        "{}: op {} is in {}, but in {} in {}: not compared",
                        r.source.display(),
                        o.op,
                        o.unit.name(),
                        unit.name(),
                        first.display()
                    )))
                }
                Some(_) => {}
                None => {
                    seen.insert(&o.op, (o.unit, &r.source));
                }
            }
        }
    }
    Ok(())
}

/// The ops a run's benchmark was asked for (None: it recorded no benchmark).
fn ops_asked(r: &Run) -> Option<&str> {
    let b = r.bench.as_ref().or(r.traced_bench.as_ref())?;
    Some(&b.options.ops)
}

/// Two runs of one cell: the same kernel and configuration, and (where both
/// recorded a benchmark) the same ops — the AVC sweep runs each op in a
/// boot of its own, and those runs do not replace one another.
fn same_cell(a: &Run, b: &Run) -> bool {
    a.kernel == b.kernel
        && a.config == b.config
        && a.draw == b.draw
        && match (ops_asked(a), ops_asked(b)) {
            (Some(x), Some(y)) => x == y,
            _ => true,
        }
}

/// The one rule for the run that counts: per kernel and configuration, the
/// newest run that passed, else (none passed) the newest, which says why.
/// The others are superseded: left out of every table, each named in a line
/// (a file given twice is simply read once). Runs keep the order in which
/// their kernel and configuration were first seen.
pub fn counting(runs: Vec<Run>) -> (Vec<Run>, Vec<String>) {
    let rank = |r: &Run| (r.passed(), r.started_unix_s);
    let mut kept: Vec<Run> = Vec::new();
    let mut dropped: Vec<Run> = Vec::new();
    for r in runs {
        match kept.iter_mut().find(|k| same_cell(k, &r)) {
            // Equal rank: the later given wins, as it always has.
            Some(k) if rank(k) <= rank(&r) => dropped.push(std::mem::replace(k, r)),
            Some(_) => dropped.push(r),
            None => kept.push(r),
        }
    }
    let superseded = dropped
        .iter()
        .filter_map(|d| {
            let k = kept.iter().find(|k| same_cell(k, d))?;
            (k.source != d.source).then(|| {
                format!(
                    "{} ({} on {}, {}): superseded by {} (the newest {}run){}",
                    d.source.display(),
                    d.config,
                    d.kernel,
                    d.status,
                    k.source.display(),
                    if k.passed() { "passed " } else { "" },
                    why_it_matters(k, d)
                )
            })
        })
        .collect();
    (kept, superseded)
}

/// What a reader of a superseded line must know: runs of one draw whose
/// figures differ (one is shown, the other is not), and a run whose clock
/// is not a draw's, counted as draw 0.
fn why_it_matters(kept: &Run, dropped: &Run) -> String {
    let mut out = String::new();
    if let Some(d) = figures_differ(kept, dropped) {
        out.push_str(&format!(
            "; their figures differ ({d}): only the kept one is shown"
        ));
    }
    for r in [kept, dropped] {
        if let Some(clock) = &r.clock_not_a_draw {
            out.push_str(&format!(
                "; {}'s guest clock {clock:?} is not a layout draw's: it counts as draw 0",
                r.source.display()
            ));
        }
    }
    out
}

/// The first benchmark op whose medians in two passed virtual-time runs
/// differ beyond its determinism (0.5 %): `a` kept, `b` left out.
fn figures_differ(a: &Run, b: &Run) -> Option<String> {
    let exact = |r: &Run| r.passed() && r.time == TimeMode::Virtual;
    if !exact(a) || !exact(b) {
        return None;
    }
    let (xa, xb) = (a.bench.as_ref()?, b.bench.as_ref()?);
    xa.results.iter().find_map(|x| {
        let y = xb.results.iter().find(|y| y.op == x.op)?;
        let (m, n) = (x.summary.median, y.summary.median);
        let pct = base::stats::overhead_pct(false, m, n);
        (pct.abs() > base::stats::VIRTUAL_DETERMINISM_PCT).then(|| {
            format!(
                "{} median {} {unit} kept, {} {unit} left out",
                x.op,
                base::table::fmt_value(m),
                base::table::fmt_value(n),
                unit = x.unit.name()
            )
        })
    })
}

fn result_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let cells = base::secure_fs::cells_dir(dir)?.unwrap_or_else(|| dir.to_path_buf());
    let mut files: Vec<PathBuf> = fs::read_dir(&cells)
        .map_err(|e| usage(format!("cannot read {}: {e}", cells.display())))?
        .flatten()
        .map(|e| e.path())
        // Every *.json entry, whatever it is: one that is not a regular file
        // is named when it is read, never skipped in silence.
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(usage(format!(
            "{} holds no result files (*.json, or cells/*.json of a lab results directory)",
            dir.display()
        )));
    }
    Ok(files)
}

pub fn load_file(p: &Path) -> Result<Run> {
    Ok(load_entry(p)?.0)
}

/// The run in `p`, and what identifies it.
fn load_entry(p: &Path) -> Result<(Run, Seen)> {
    let readable = [CELL_SCHEMA, BENCH_SCHEMA, TRACE_SCHEMA];
    Ok(match read::load_one_of("", p, &readable, "report")? {
        AnyResult::Cell(c) => {
            let key = CellKey {
                id: c.id.clone(),
                started_unix_s: c.started_unix_s,
                contents: serde_json::to_string(&c)?,
            };
            (from_cell(p, &c), Seen::Cell(key))
        }
        AnyResult::Bench(b) => {
            let origin = Origin::of_bench(&b.provenance);
            let build = build_name(
                &b.provenance.base.version,
                b.provenance.base.commit.as_deref(),
            );
            let (alike, started) = (Alike::of_bench(&b), b.provenance.base.started_unix_s);
            let seen = Seen::Single(serde_json::to_string(&b)?);
            let mut run = standalone(p, origin, alike, started, Some(*b), None);
            run.build = build;
            (run, seen)
        }
        AnyResult::Trace(t) => {
            let origin = Origin::of_trace(&t.provenance);
            let build = build_name(&t.provenance.version, t.provenance.commit.as_deref());
            let (alike, started) = (Alike::of_trace(&t), t.provenance.started_unix_s);
            let seen = Seen::Single(serde_json::to_string(&t)?);
            let mut run = standalone(p, origin, alike, started, None, Some(*t));
            run.build = build;
            (run, seen)
        }
        other => {
            return Err(usage(format!(
                "{}: schema {} is not one report reads ({})",
                p.display(),
                other.schema(),
                readable.join(", ")
            )))
        }
    })
}

/// An lsmpmon build as `lab merge` names it: the version, and the commit's
/// first 12 digits where one was recorded.
fn build_name(version: &str, commit: Option<&str>) -> String {
    match commit {
        Some(c) => format!("{version} ({})", c.chars().take(12).collect::<String>()),
        None => version.to_string(),
    }
}

fn from_cell(p: &Path, c: &CellResult) -> Run {
    let guest = c.guest.clone().unwrap_or_default();
    Run {
        source: p.to_path_buf(),
        kernel: KernelId::of_cell(c),
        config: c.config.name.clone(),
        status: c.status,
        from_lab: true,
        reason: c.reason.clone(),
        time: c.time,
        started_unix_s: c.started_unix_s,
        draw: c.options.draw(),
        clock_not_a_draw: model::draw::draw_of_rtc(&c.options.rtc)
            .is_none()
            .then(|| c.options.rtc.clone()),
        alike: Alike::of_cell(c),
        measured: guest
            .proof
            .as_ref()
            .and_then(|p| Measured::from_proof(p, &c.options.icount)),
        measured_lsms: measured_lsms(c, &guest.active_lsms),
        active_lsms: guest.active_lsms.clone(),
        op_calls: guest.op_calls.clone().unwrap_or_default(),
        origin: Origin::of_cell(c),
        build: build_name(&c.lsmpmon_version, c.build_commit()),
        bench: guest.bench,
        trace: guest.trace,
        traced_bench: guest.traced_bench,
        policy_load_ms: guest
            .stages
            .iter()
            .find(|s| s.name == "policy-load")
            .map(|s| s.guest_ms),
        footprint: guest.footprint,
        bytes_added: Some(c.bytes_added),
        kernel_ref: Some(c.kernel.clone()),
    }
}

/// The modules a cell measures: its configuration's, and where IMA and EVM
/// are LSMs themselves (6.9 on) and the configuration measures with IMA,
/// theirs too (their own functions are then what the policy costs).
fn measured_lsms(c: &CellResult, active: &[String]) -> Vec<String> {
    let mut l = c.config.measured_lsms.clone();
    if c.config.proof == ProofKind::Measure {
        for m in ["ima", "evm"] {
            if active.iter().any(|a| a == m) && !l.iter().any(|x| x == m) {
                l.push(m.into());
            }
        }
    }
    l
}

/// The LSMs whose own functions a single trace timed (capability is in every kernel).
fn traced_lsms(trace: Option<&TraceResult>) -> Vec<String> {
    let mut l: Vec<String> = Vec::new();
    for r in trace.into_iter().flat_map(|t| &t.per_lsm) {
        if r.lsm != "capability" && !l.contains(&r.lsm) {
            l.push(r.lsm.clone());
        }
    }
    l
}

/// A single `bench` or `trace` result: it has no proof, so it counts as passed.
fn standalone(
    p: &Path,
    origin: Origin,
    alike: Alike,
    started_unix_s: u64,
    bench: Option<BenchResult>,
    trace: Option<TraceResult>,
) -> Run {
    Run {
        source: p.to_path_buf(),
        kernel: KernelId::Single {
            release: origin.kernel_release.clone(),
        },
        config: String::new(),
        status: CellStatus::Passed,
        from_lab: false,
        reason: None,
        time: origin.time,
        started_unix_s,
        draw: 0,
        clock_not_a_draw: None,
        alike,
        measured_lsms: traced_lsms(trace.as_ref()),
        active_lsms: Vec::new(),
        measured: None,
        origin,
        build: String::new(),
        bench,
        trace,
        traced_bench: None,
        op_calls: Vec::new(),
        footprint: None,
        policy_load_ms: None,
        bytes_added: None,
        kernel_ref: None,
    }
}

/// Single results are named by their file (its parent too where two share a name).
fn label_standalone(runs: &mut [Run]) {
    let stem = |p: &Path| {
        p.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let stems: Vec<String> = runs.iter().map(|r| stem(&r.source)).collect();
    for (i, r) in runs.iter_mut().enumerate() {
        if !r.config.is_empty() {
            continue;
        }
        let s = &stems[i];
        r.config = if stems.iter().filter(|x| *x == s).count() > 1 {
            let parent = r
                .source
                .parent()
                .and_then(|d| d.file_name())
                .map(|d| d.to_string_lossy().into_owned())
                .unwrap_or_default();
            format!("{parent}/{s}")
        } else {
            s.clone()
        };
    }
}

/// A sentence for each reason runs did not pass, naming them (kernel and
/// configuration, once however many draws), so nobody reads their columns
/// as figures.
pub fn warnings(runs: &[Run]) -> Vec<String> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for r in runs.iter().filter(|r| !r.passed()) {
        let why = match &r.reason {
            Some(x) => format!("{} ({x})", r.status),
            None => r.status.to_string(),
        };
        let who = format!("{} on {}", r.config, r.kernel);
        match groups.iter_mut().find(|g| g.0 == why) {
            Some(g) if g.1.contains(&who) => {}
            Some(g) => g.1.push(who),
            None => groups.push((why, vec![who])),
        }
    }
    groups
        .into_iter()
        .map(|(why, who)| {
            let n = who.len();
            let cells = if n == 1 {
                "its cells are"
            } else {
                "their cells are"
            };
            format!("{}: {why}; {cells} marked, not measured", who.join(", "))
        })
        .collect()
}
