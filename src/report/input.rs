//! What `report` and `compare` read: lab cells (files or result
//! directories), `bench` and `trace` results. Each becomes a [`Run`]: one
//! configuration measured on one kernel, with where its numbers come from.
use std::{
    fs,
    io::Read,
    path::{Path, PathBuf},
};

use anyhow::Result;
use serde_json::Value;

use crate::base::error::usage;
use crate::lab::{
    footprint::Footprint,
    results::{CellResult, CellStatus, CELL_SCHEMA},
};

/// One configuration on one kernel: a lab cell, or a single bench/trace result.
#[derive(Debug, Clone)]
pub struct Run {
    pub source: PathBuf,
    /// The kernel as tables name it: a lab cell's series ("6.1"), a single
    /// result's kernel release.
    pub kernel: String,
    /// The lab configuration, or a single result's file name.
    pub config: String,
    pub status: CellStatus,
    /// A lab cell (its baseline is always the `none` configuration).
    pub from_lab: bool,
    pub reason: Option<String>,
    /// "virtual" or "real".
    pub time: String,
    pub started_unix_s: u64,
    /// Runs with equal keys were measured alike (same kernel package or
    /// release, samples, time mode): only then is a percentage between them shown.
    pub like_key: String,
    /// Whose own functions fill the Table 4 form (empty: the hook itself).
    pub measured_lsms: Vec<String>,
    /// A lab cell whose proof read IMA's measurement list.
    pub measured: Option<Measured>,
    pub bench: Option<Value>,
    pub trace: Option<Value>,
    pub footprint: Option<Footprint>,
    pub bytes_added: Option<u64>,
    pub origin: Origin,
}

/// Where a run was measured, for `compare`'s like-with-like check.
#[derive(Debug, Clone, PartialEq)]
pub struct Origin {
    pub kernel_release: String,
    pub environment: String,
    pub time: String,
    pub hostname: String,
    pub cpu_model: String,
}

/// What a `measure` proof showed about IMA.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// PCR 10 was read: a TPM took the extends.
    pub tpm: bool,
    /// The file digests' algorithm in the list ("sha256", "sha1").
    pub algo: Option<String>,
}

impl Measured {
    fn from_proof(p: &crate::lab::proof::ProofReport) -> Option<Self> {
        if p.kind != crate::lab::spec::ProofKind::Measure {
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
        })
    }
}

impl Run {
    pub fn passed(&self) -> bool {
        self.status == CellStatus::Passed
    }
}

const MAX_BYTES: u64 = 256 << 20;

/// Every run in PATHS (files or lab result directories). A file that is not
/// an lsmpmon result is an error naming it, never a run; with `skip` it is
/// named on stderr and left out.
pub fn load(paths: &[PathBuf], skip: bool) -> Result<Vec<Run>> {
    let mut runs = Vec::new();
    for p in paths {
        let meta =
            fs::metadata(p).map_err(|e| usage(format!("cannot read {}: {e}", p.display())))?;
        let files = if meta.is_dir() {
            result_files(p)?
        } else {
            vec![p.clone()]
        };
        for f in files {
            match load_file(&f) {
                Ok(r) => runs.push(r),
                Err(e) if skip => {
                    eprintln!("lsmpmon: skipping {}", crate::base::error::one_line(&e))
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
    label_standalone(&mut runs);
    Ok(runs)
}

fn result_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let cells = if dir.join("cells").is_dir() {
        dir.join("cells")
    } else {
        dir.to_path_buf()
    };
    let mut files: Vec<PathBuf> = fs::read_dir(&cells)
        .map_err(|e| usage(format!("cannot read {}: {e}", cells.display())))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
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

fn read_json(p: &Path) -> Result<Value> {
    let mut buf = Vec::new();
    fs::File::open(p)
        .and_then(|f| f.take(MAX_BYTES + 1).read_to_end(&mut buf))
        .map_err(|e| usage(format!("cannot read {}: {e}", p.display())))?;
    if buf.len() as u64 > MAX_BYTES {
        return Err(usage(format!(
            "{}: larger than 256 MiB, not a result",
            p.display()
        )));
    }
    serde_json::from_slice(&buf).map_err(|e| {
        usage(format!(
            "{}: not a JSON result ({e}): pass files lsmpmon wrote with --json or a lab results directory",
            p.display()
        ))
    })
}

pub fn load_file(p: &Path) -> Result<Run> {
    let v = read_json(p)?;
    let schema = v["schema"].as_str().unwrap_or("").to_string();
    let malformed = |e: String| usage(format!("{}: malformed {schema} result: {e}", p.display()));
    match schema.as_str() {
        CELL_SCHEMA => {
            let c: CellResult = serde_json::from_value(v).map_err(|e| malformed(e.to_string()))?;
            checked(from_cell(p, c)).map_err(malformed)
        }
        crate::bench::SCHEMA => standalone(p, None, Some(v))
            .and_then(checked)
            .map_err(malformed),
        crate::model::TRACE_SCHEMA => standalone(p, Some(v), None)
            .and_then(checked)
            .map_err(malformed),
        "" => Err(usage(format!(
            "{}: no \"schema\" field: not an lsmpmon result",
            p.display()
        ))),
        other => Err(usage(format!(
            "{}: schema {other} is not one report reads ({CELL_SCHEMA}, {}, {})",
            p.display(),
            crate::bench::SCHEMA,
            crate::model::TRACE_SCHEMA
        ))),
    }
}

/// A run whose figures can be shown (one that did not pass shows none).
fn checked(r: Run) -> Result<Run, String> {
    if r.passed() {
        check_figures(&r)?;
    }
    Ok(r)
}

/// The kernel as tables name it: its series, and its flavour where the
/// series does not say it ("6.1 (amd64)"; "6.1-smack" as it is), and the
/// guest's CPUs when more than one ("6.1 2cpu"): cells on another CPU count
/// are another machine, with their own tables and baseline.
fn kernel_label(c: &CellResult) -> String {
    let k = &c.kernel;
    let base = if k.flavour == "cloud" || k.series.ends_with(&format!("-{}", k.flavour)) {
        k.series.clone()
    } else {
        format!("{} ({})", k.series, k.flavour)
    };
    match c.options.cpus {
        1 => base,
        n => format!("{base} {n}cpu"),
    }
}

fn from_cell(p: &Path, c: CellResult) -> Run {
    let guest = c.guest.clone().unwrap_or_default();
    let cpu_model = guest
        .bench
        .as_ref()
        .and_then(|b| b["provenance"]["cpu_model"].as_str())
        .unwrap_or(&c.host_cpu)
        .to_string();
    Run {
        source: p.to_path_buf(),
        kernel: kernel_label(&c),
        config: c.config.name.clone(),
        status: c.status,
        from_lab: true,
        reason: c.reason.clone(),
        time: c.time.clone(),
        started_unix_s: c.started_unix_s,
        like_key: {
            let o = &c.options;
            format!(
                "{} {} samples={} sample_ms={} iterations={:?} {} {} {} mem={} kaslr={} dir={} cpus={}",
                c.kernel.deb_sha256,
                c.time,
                o.samples,
                o.sample_ms,
                o.iterations,
                o.accel,
                o.icount,
                o.rtc,
                o.memory_mb,
                o.kaslr,
                o.bench_dir,
                o.cpus,
            )
        },
        measured_lsms: c.config.measured_lsms.clone(),
        measured: guest.proof.as_ref().and_then(Measured::from_proof),
        bench: guest.bench,
        trace: guest.trace,
        footprint: guest.footprint,
        bytes_added: Some(c.bytes_added),
        origin: Origin {
            kernel_release: c.kernel.release.clone(),
            environment: "guest".into(),
            time: c.time.clone(),
            hostname: c.hostname.clone(),
            cpu_model,
        },
    }
}

impl Origin {
    /// From a bench or trace result's `provenance` (or bench --compare's baseline).
    pub fn from_provenance(prov: &Value) -> Result<Self, String> {
        let field = |f: &str| -> Result<String, String> {
            prov[f]
                .as_str()
                .map(String::from)
                .ok_or_else(|| format!("provenance has no {f}"))
        };
        Ok(Origin {
            kernel_release: field("kernel_release")?,
            environment: field("environment")?,
            time: field("time")?,
            hostname: field("hostname")?,
            cpu_model: prov["cpu_model"].as_str().unwrap_or("").to_string(),
        })
    }
}

/// The LSMs whose own functions a single trace timed (capability is in every kernel).
fn traced_lsms(trace: Option<&Value>) -> Vec<String> {
    let mut l: Vec<String> = Vec::new();
    let rows = trace.and_then(|t| t["per_lsm"].as_array());
    for name in rows.into_iter().flatten().filter_map(|r| r["lsm"].as_str()) {
        if name != "capability" && !l.iter().any(|x| x == name) {
            l.push(name.to_string());
        }
    }
    l
}

/// A single `bench` or `trace` result: it has no proof, so it counts as passed.
fn standalone(p: &Path, trace: Option<Value>, bench: Option<Value>) -> Result<Run, String> {
    let doc = trace.as_ref().or(bench.as_ref()).ok_or("empty")?;
    let list = if bench.is_some() { "results" } else { "hooks" };
    if !doc[list].is_array() {
        return Err(format!("no {list} array"));
    }
    let origin = Origin::from_provenance(&doc["provenance"])?;
    let o = &origin;
    Ok(Run {
        source: p.to_path_buf(),
        kernel: o.kernel_release.clone(),
        config: String::new(),
        status: CellStatus::Passed,
        from_lab: false,
        reason: None,
        time: o.time.clone(),
        started_unix_s: doc["provenance"]["started_unix_s"].as_u64().unwrap_or(0),
        like_key: format!(
            "{} {} {} {} samples={} iterations={}",
            o.kernel_release,
            o.hostname,
            o.cpu_model,
            o.time,
            doc["options"]["samples"],
            doc["options"]["iterations"]
        ),
        measured_lsms: traced_lsms(trace.as_ref()),
        measured: None,
        origin,
        bench,
        trace,
        footprint: None,
        bytes_added: None,
    })
}

/// Refuses figures a table would divide by or draw: every median must be a
/// positive finite number, every sample and hook time finite and not negative.
fn check_figures(r: &Run) -> Result<(), String> {
    let positive = |v: &Value| v.as_f64().is_some_and(|x| x.is_finite() && x > 0.0);
    let sane = |v: &Value| v.as_f64().is_some_and(|x| x.is_finite() && x >= 0.0);
    for o in r
        .bench
        .iter()
        .flat_map(|b| b["results"].as_array())
        .flatten()
    {
        let op = o["op"].as_str().ok_or("a bench result without its op")?;
        if !positive(&o["median"]) {
            return Err(format!(
                "{op}: median {} is not a positive number",
                o["median"]
            ));
        }
        if let Some(bad) = o["samples"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|x| !positive(x))
        {
            return Err(format!("{op}: sample {bad} is not a positive number"));
        }
    }
    if let Some(t) = &r.trace {
        if !t["probe"]["floor_ns"].is_null() && !sane(&t["probe"]["floor_ns"]) {
            return Err(format!(
                "probe floor {} is not a time",
                t["probe"]["floor_ns"]
            ));
        }
        let rows = ["hooks", "per_lsm"]
            .iter()
            .flat_map(|k| t[*k].as_array().into_iter().flatten());
        for h in rows {
            if !sane(&h["ave_ns"]) || !h["count"].is_u64() {
                return Err(format!(
                    "hook {}: ave_ns {} / count {} are not a time and a count",
                    h["hook"], h["ave_ns"], h["count"]
                ));
            }
        }
    }
    Ok(())
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

/// A line for each run that did not pass, so nobody reads its column as a figure.
pub fn warnings(runs: &[Run]) -> Vec<String> {
    runs.iter()
        .filter(|r| !r.passed())
        .map(|r| {
            format!(
                "{} ({} on {}): {:?}{}: its cells are marked, not measured",
                r.source.display(),
                r.config,
                r.kernel,
                r.status,
                r.reason
                    .as_ref()
                    .map(|x| format!(" ({x})"))
                    .unwrap_or_default()
            )
        })
        .collect()
}
