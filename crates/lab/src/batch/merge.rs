//! `lab merge OUT DIR…`: results directories joined into one. A cell that
//! is there twice (copied, or run again) is kept once when the runs agree
//! (virtual time: every median within 0.5 %) and reported when they do
//! not; cells of other lsmpmon versions or kernel packages are refused
//! unless forced, and then flagged (`merge.json`, the tables). Cells of
//! several plans (submissions into one directory) merge as they are.
use std::{
    collections::BTreeMap,
    fs,
    path::{Path, PathBuf},
};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::{
    files,
    tagged::{self, TaggedCell},
};
use crate::results::{log_rel, CellStatus, ResultsDir};
use base::error::usage;

pub const MERGE_SCHEMA: &str = "lsmpmon.lab-merge/1";
/// Two virtual-time runs of one cell agree within this (`lab rerun`'s tolerance).
pub const TOLERANCE: f64 = 0.005;
/// What the model's reader reads a cell up to.
const MAX_CELL_BYTES: u64 = model::read::MAX_RESULT_BYTES;

/// What the merge did, kept in `OUT/merge.json`.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Merged {
    pub schema: String,
    pub inputs: Vec<PathBuf>,
    pub cells: usize,
    /// Mixed versions or kernel packages, merged with --force.
    pub forced: Vec<String>,
    /// Runs of one cell whose figures differ beyond the tolerance.
    pub disagreements: Vec<String>,
    /// Cells left out: another run of the same cell counts.
    pub superseded: Vec<String>,
    /// Files under an input's `cells/` that are not cells (one line each).
    #[serde(default)]
    pub skipped: Vec<String>,
}

impl Merged {
    /// The record of a merged directory, if it is one.
    pub fn read(dir: &Path) -> Result<Option<Self>> {
        let p = dir.join("merge.json");
        if !p.exists() {
            return Ok(None);
        }
        files::read_json(&p, "a merge record").map(Some)
    }
}

pub fn merge(out: &Path, dirs: &[PathBuf], force: bool) -> Result<Merged> {
    let (all, skipped) = read_inputs(dirs)?;
    if all.is_empty() {
        return Err(usage(format!(
            "no cell to merge in {}{}: pass lab results directories",
            dirs.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            skipped
                .first()
                .map(|s| format!(" ({} unreadable, e.g. {s})", skipped.len()))
                .unwrap_or_default()
        )));
    }
    let mismatches = mismatches(&all);
    if let (Some(first), false) = (mismatches.first(), force) {
        return Err(usage(format!(
            "refusing to merge: {first}: use --force to merge them anyway (flagged in the tables)"
        )));
    }
    let out_dir = ResultsDir::open_as(out, "name a new directory to merge into")?;
    let (existing, _) = tagged::read_all(out)?;
    if !existing.is_empty() {
        return Err(usage(format!(
            "{} already holds cells: give it as an input and merge into a new directory",
            out.display()
        )));
    }
    logs_target(out)?;
    let mut merged = Merged {
        schema: MERGE_SCHEMA.into(),
        inputs: dirs.to_vec(),
        forced: mismatches,
        skipped,
        ..Merged::default()
    };
    let absent = |name: &str| fs::symlink_metadata(out.join(name)).is_err();
    let mut written = Written {
        made: ["logs", "index.json", "merge.json"]
            .into_iter()
            .filter(|n| absent(n))
            .map(|n| out.join(n))
            .collect(),
        ..Written::default()
    };
    let wrote = write_cells(out, by_identity(all), &mut merged, &mut written)
        .and_then(|()| out_dir.write_index())
        .and_then(|_| files::write_json(&out.join("merge.json"), &merged));
    if let Err(e) = wrote {
        // OUT held no cell when the merge began: it is left so, and a
        // retry is not refused as a directory that already holds cells.
        written.remove();
        return Err(e);
    }
    Ok(merged)
}

/// What a merge wrote into OUT, removed again when it fails part way.
#[derive(Default)]
struct Written {
    files: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
    /// What OUT did not have before the merge (`logs/`, the index, the record).
    made: Vec<PathBuf>,
}

impl Written {
    fn remove(&self) {
        for f in &self.files {
            let _ = fs::remove_file(f);
        }
        for d in &self.dirs {
            let _ = fs::remove_dir_all(d);
        }
        for p in &self.made {
            let _ = if p.is_dir() {
                fs::remove_dir_all(p)
            } else {
                fs::remove_file(p)
            };
        }
    }
}

fn write_cells(
    out: &Path,
    groups: BTreeMap<Identity, Vec<TaggedCell>>,
    merged: &mut Merged,
    written: &mut Written,
) -> Result<()> {
    for group in groups.into_values() {
        let keep = choose(&group, merged);
        // Byte for byte, but never through a link already in OUT, and
        // without the source's mode (a set-id bit stays behind).
        let bytes = base::secure_fs::read_regular("a cell", &keep.file, MAX_CELL_BYTES)?;
        let path = tagged::cell_path(out, &keep.cell.id);
        base::secure_fs::write_atomic(&path, &bytes)?;
        written.files.push(path);
        if let Some(logs) = copy_logs(keep, out)? {
            written.dirs.push(logs);
        }
        merged.cells += 1;
    }
    Ok(())
}

/// OUT's `logs/`, if there is one, must be a directory and not a link: it
/// is checked before the first cell is written.
fn logs_target(out: &Path) -> Result<()> {
    let out_logs = out.join("logs");
    if fs::symlink_metadata(&out_logs).is_ok() && !real_dir(&out_logs) {
        return Err(usage(format!(
            "{} is not a directory (a symbolic link?): the logs are not written through it; remove it or merge into a new directory",
            out_logs.display()
        )));
    }
    Ok(())
}

/// The cells of every input, and a line for each file that is not one. A
/// cell id met twice is one cell when both files say the same; two
/// different cells under one id are refused as `report` refuses them (the
/// merge would otherwise keep whichever input came first). Each cell is
/// kept only as far as the merge reads it ([`slim`]) and compared by the
/// digest of its contents, so a merge of many cells holds a little of each.
fn read_inputs(dirs: &[PathBuf]) -> Result<(Vec<TaggedCell>, Vec<String>)> {
    let mut by_id: BTreeMap<String, (TaggedCell, String)> = BTreeMap::new();
    let mut skipped = Vec::new();
    for d in dirs {
        if base::secure_fs::cells_dir(d)?.is_none() {
            return Err(usage(format!(
                "{} is not a lab results directory (no cells/)",
                d.display()
            )));
        }
        let mut any = false;
        let bad = tagged::read_each(d, |c| {
            any = true;
            let digest = base::digest::sha256_hex(&serde_json::to_vec(&c.cell)?);
            match by_id.get(&c.cell.id) {
                Some((first, v)) if *v != digest => Err(usage(format!(
                    "{} and {}: two different cells with id {}: remove the wrong one",
                    first.file.display(),
                    c.file.display(),
                    c.cell.id
                ))),
                Some(_) => Ok(()),
                None => {
                    by_id.insert(c.cell.id.clone(), (slim(c), digest));
                    Ok(())
                }
            }
        })?;
        if !any && bad.is_empty() {
            return Err(usage(format!(
                "{} holds no cell (cells/ is empty): leave it out",
                d.display()
            )));
        }
        for b in bad {
            base::say!("lsmpmon: skipping {b}");
            skipped.push(b);
        }
    }
    let mut all: Vec<TaggedCell> = by_id.into_values().map(|(c, _)| c).collect();
    all.sort_by_key(|c| c.cell.started_unix_s);
    Ok((all, skipped))
}

/// What the merge reads of a cell: its identity, status, build and kernel,
/// and its untraced benchmark's summaries (`differs`). The file is copied
/// byte for byte, so nothing dropped here is lost.
fn slim(mut c: TaggedCell) -> TaggedCell {
    c.cell.guest = c.cell.guest.take().map(|g| model::cell::GuestReport {
        bench: g.bench.map(|mut b| {
            for r in &mut b.results {
                r.samples = Vec::new();
            }
            b
        }),
        ..Default::default()
    });
    c
}

/// The cell's log directory, when it is where the cell says, relative to
/// the results directory it was read from (older cells named absolute
/// paths: those stay where they are). Returns the directory it made.
fn copy_logs(c: &TaggedCell, out: &Path) -> Result<Option<PathBuf>> {
    let rel = Path::new(&c.cell.log_dir);
    let Some(src_results) = c.file.parent().and_then(Path::parent) else {
        return Ok(None);
    };
    let from = src_results.join(rel);
    if c.cell.log_dir != log_rel(&c.cell.id) || fs::symlink_metadata(&from).is_err() {
        return Ok(None);
    }
    logs_target(out)?;
    if !real_dir(&src_results.join("logs")) || !real_dir(&from) {
        base::say!(
            "lsmpmon: {} is not a directory (a symbolic link?): the logs of {} are not copied",
            from.display(),
            c.cell.id
        );
        return Ok(None);
    }
    let to = out.join(rel);
    let made = fs::symlink_metadata(&to).is_err();
    if let Err(e) = base::secure_fs::copy_tree(&from, &to) {
        if made {
            let _ = fs::remove_dir_all(&to);
        }
        return Err(e.context(format!("copying the logs of {}", c.cell.id)));
    }
    Ok(made.then_some(to))
}

/// A directory and not a link to one.
fn real_dir(p: &Path) -> bool {
    fs::symlink_metadata(p).is_ok_and(|m| m.is_dir())
}

/// Everything that makes two cells the same cell of a matrix.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Identity {
    series: String,
    flavour: String,
    config: String,
    config_hash: String,
    cpus: u32,
    ops: String,
    samples: usize,
    sample_ms_bits: u64,
    iterations: Option<u64>,
    trace: bool,
    bench_dir: String,
    icount: String,
    memory_mb: u32,
    /// The --workload program's sha256.
    workload: Option<String>,
    /// Each layout draw is a cell of its own.
    draw: u32,
}

fn identity(c: &TaggedCell) -> Identity {
    let (k, o) = (&c.cell.kernel, &c.cell.options);
    Identity {
        series: k.series.clone(),
        flavour: k.flavour.clone(),
        config: c.cell.config.name.clone(),
        config_hash: c.cell.config.hash.clone(),
        cpus: o.cpus,
        ops: o.lab.ops.clone(),
        samples: o.lab.samples,
        sample_ms_bits: o.lab.sample_ms.to_bits(),
        iterations: o.lab.iterations,
        trace: o.lab.trace,
        bench_dir: o.lab.bench_dir.clone(),
        icount: o.icount.clone(),
        memory_mb: o.lab.memory_mb,
        workload: o.lab.workload.as_ref().map(|w| w.sha256.clone()),
        draw: o.draw(),
    }
}

fn by_identity(cells: Vec<TaggedCell>) -> BTreeMap<Identity, Vec<TaggedCell>> {
    let mut groups: BTreeMap<Identity, Vec<TaggedCell>> = BTreeMap::new();
    for c in cells {
        groups.entry(identity(&c)).or_default().push(c);
    }
    groups
}

/// The newest passed run of a cell (else its newest run); the others are
/// superseded, and a passed run whose figures differ is a disagreement.
fn choose<'a>(group: &'a [TaggedCell], merged: &mut Merged) -> &'a TaggedCell {
    let passed = |c: &&TaggedCell| c.cell.status == CellStatus::Passed;
    let keep = group
        .iter()
        .filter(passed)
        .max_by_key(|c| c.cell.started_unix_s)
        .or_else(|| group.iter().max_by_key(|c| c.cell.started_unix_s))
        .unwrap_or(&group[0]);
    for other in group.iter().filter(|c| c.cell.id != keep.cell.id) {
        if passed(&other) {
            if let Some(why) = differs(keep, other) {
                merged.disagreements.push(format!(
                    "{} {} ({} CPU): {} and {} differ: {why}",
                    keep.cell.kernel.series,
                    keep.cell.config.name,
                    keep.cell.options.cpus,
                    keep.file.display(),
                    other.file.display()
                ));
            }
        }
        merged.superseded.push(other.file.display().to_string());
    }
    keep
}

/// The untraced benchmark's results.
fn figures(c: &TaggedCell) -> Vec<model::bench::OpResult> {
    c.cell
        .guest
        .as_ref()
        .and_then(|g| g.bench.as_ref())
        .map(|b| b.results.clone())
        .unwrap_or_default()
}

/// Why two passed runs of one cell disagree, if they do. Real-time runs
/// differ by the host's noise: they are kept, not compared.
fn differs(a: &TaggedCell, b: &TaggedCell) -> Option<String> {
    use model::TimeMode::Virtual;
    if a.cell.time != Virtual || b.cell.time != Virtual {
        return None;
    }
    let (fa, fb) = (figures(a), figures(b));
    for x in &fa {
        let Some(y) = fb.iter().find(|y| y.op == x.op) else {
            return Some(format!("{} only in one", x.op));
        };
        let scale = x.summary.median.abs().max(y.summary.median.abs());
        if scale > 0.0 && (x.summary.median - y.summary.median).abs() / scale > TOLERANCE {
            return Some(format!(
                "{} median {} vs {} (beyond {} %)",
                x.op,
                x.summary.median,
                y.summary.median,
                TOLERANCE * 100.0
            ));
        }
    }
    (fa.len() != fb.len()).then(|| "not the same ops".into())
}

/// Versions and kernel packages that are not one each.
fn mismatches(cells: &[TaggedCell]) -> Vec<String> {
    let mut out = Vec::new();
    let distinct = |key: &dyn Fn(&TaggedCell) -> Option<String>| {
        let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
        for c in cells {
            if let Some(k) = key(c) {
                seen.entry(k).or_insert_with(|| c.file.clone());
            }
        }
        seen
    };
    let show = |seen: &BTreeMap<String, PathBuf>| {
        seen.iter()
            .map(|(k, f)| format!("{k} (e.g. {})", f.display()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let versions = distinct(&|c| Some(c.cell.lsmpmon_version.clone()));
    if versions.len() > 1 {
        out.push(format!("cells of lsmpmon versions {}", show(&versions)));
    }
    // A build is a draw of the guest's layout (BENCHMARKS.md, 'What a build moves'): cells of
    // two builds compare as two draws, not as one run.
    let builds = distinct(&|c| c.cell.build().map(|b| b.chars().take(12).collect()));
    if builds.len() > 1 {
        out.push(format!("cells of lsmpmon builds {}", show(&builds)));
    }
    // Cells of several plans are not a mismatch: two submissions into one
    // results directory make them, and what their cells must share (this
    // lsmpmon, the kernel packages; configurations by hash in the
    // identity) is checked here and in `identity`.
    let kernels = distinct(&|c| {
        Some(format!(
            "{}-{}",
            c.cell.kernel.series, c.cell.kernel.flavour
        ))
    });
    for k in kernels.keys() {
        let packages = distinct(&|c| {
            let name = format!("{}-{}", c.cell.kernel.series, c.cell.kernel.flavour);
            (&name == k).then(|| {
                format!(
                    "{} {} (sha256 {}…)",
                    c.cell.kernel.package,
                    c.cell.kernel.package_version,
                    c.cell
                        .kernel
                        .deb_sha256
                        .chars()
                        .take(12)
                        .collect::<String>()
                )
            })
        });
        if packages.len() > 1 {
            out.push(format!("kernel {k} from packages {}", show(&packages)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE_CELL: &str = include_str!(
        "../../../../tests/fixtures/report/lab/cells/6.1-cloud__none__1795500718528-17793-0-vm.json"
    );

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("lsmpmon-merge-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("cells")).unwrap();
        d
    }

    /// The fixture's `none` cell as `id`, changed by `f`, into `dir`.
    fn put(dir: &Path, id: &str, f: &dyn Fn(&mut serde_json::Value)) {
        let mut v: serde_json::Value = serde_json::from_str(NONE_CELL).unwrap();
        v["id"] = id.into();
        v["log_dir"] = format!("logs/{id}").into();
        f(&mut v);
        let path = tagged::cell_path(dir, id);
        std::fs::write(path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    }

    /// The first op's figures, all scaled (cells are checked when read: a
    /// median outside its samples is refused).
    fn scale_first_median(v: &mut serde_json::Value, by: f64) {
        let op = &mut v["guest"]["bench"]["results"][0];
        for key in ["median", "mean", "min", "max"] {
            op[key] = (op[key].as_f64().unwrap() * by).into();
        }
        for s in op["samples"].as_array_mut().unwrap() {
            *s = (s.as_f64().unwrap() * by).into();
        }
    }

    #[test]
    fn a_cell_twice_is_kept_once_and_a_differing_run_is_a_disagreement() {
        let (a, b, out) = (temp("a"), temp("b"), temp("out"));
        put(&a, "one", &|_| ());
        put(&b, "one", &|_| ());
        put(&b, "again", &|v| {
            v["started_unix_s"] = (v["started_unix_s"].as_u64().unwrap() + 10).into();
            scale_first_median(v, 1.004);
        });
        let m = merge(&out, &[a.clone(), b.clone()], false).unwrap();
        assert_eq!((m.cells, m.superseded.len()), (1, 1));
        assert!(m.disagreements.is_empty(), "{:?}", m.disagreements);
        // The newer run is the one kept.
        assert!(tagged::cell_path(&out, "again").exists());
        assert!(!tagged::cell_path(&out, "one").exists());

        let out2 = temp("out2");
        put(&b, "again", &|v| {
            v["started_unix_s"] = (v["started_unix_s"].as_u64().unwrap() + 10).into();
            scale_first_median(v, 1.01);
        });
        let m = merge(&out2, &[a.clone(), b.clone()], false).unwrap();
        assert_eq!(m.disagreements.len(), 1, "{m:?}");
        assert!(m.disagreements[0].contains("beyond 0.5 %"), "{m:?}");
        for d in [a, b, out, out2] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }

    #[test]
    fn logs_come_along_and_a_log_dir_outside_is_refused() {
        let (a, out) = (temp("logs-a"), temp("logs-out"));
        put(&a, "one", &|v| v["log_dir"] = "logs/one".into());
        std::fs::create_dir_all(a.join("logs/one/sub")).unwrap();
        std::fs::write(a.join("logs/one/console.log"), "boot\n").unwrap();
        std::fs::write(a.join("logs/one/sub/x"), "y").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", a.join("logs/one/link")).unwrap();
        // Another cell's logs are not this one's.
        std::fs::create_dir_all(a.join("logs/other")).unwrap();
        put(&a, "escape", &|v| {
            v["log_dir"] = "logs/../../escape".into();
            v["config"]["name"] = "tomoyo".into();
        });
        let m = merge(&out, std::slice::from_ref(&a), false).unwrap();
        assert_eq!(m.cells, 1, "the escaping cell is refused when read");
        let logs = out.join("logs/one");
        assert_eq!(
            std::fs::read_to_string(logs.join("console.log")).unwrap(),
            "boot\n"
        );
        assert_eq!(std::fs::read_to_string(logs.join("sub/x")).unwrap(), "y");
        assert!(!logs.join("link").exists(), "symlinks stay behind");
        assert!(!out.join("logs/other").exists());
        for d in [a, out] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }

    #[test]
    fn a_linked_log_directory_is_not_followed() {
        let (a, out) = (temp("link-a"), temp("link-out"));
        std::fs::remove_dir_all(&out).unwrap();
        put(&a, "one", &|_| ());
        std::fs::create_dir_all(a.join("logs")).unwrap();
        std::os::unix::fs::symlink("/etc", a.join("logs/one")).unwrap();
        let m = merge(&out, std::slice::from_ref(&a), false).unwrap();
        assert_eq!(m.cells, 1);
        assert!(!out.join("logs/one").exists(), "/etc was copied");
        // Nor a linked logs/ above a real cell directory.
        let (b, out2) = (temp("link-b"), temp("link-out2"));
        std::fs::remove_dir_all(&out2).unwrap();
        put(&b, "one", &|_| ());
        std::fs::create_dir_all(b.join("real/one")).unwrap();
        std::fs::write(b.join("real/one/x"), "y").unwrap();
        std::os::unix::fs::symlink(b.join("real"), b.join("logs")).unwrap();
        merge(&out2, std::slice::from_ref(&b), false).unwrap();
        assert!(!out2.join("logs/one").exists());
        for d in [a, b, out, out2] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }

    #[test]
    fn links_in_the_target_are_not_written_through() {
        let (a, out) = (temp("tlink-a"), temp("tlink-out"));
        put(&a, "one", &|_| ());
        std::fs::create_dir_all(a.join("logs/one")).unwrap();
        std::fs::write(a.join("logs/one/console.log"), "boot\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        let cell = tagged::cell_path(&a, "one");
        std::fs::set_permissions(&cell, std::fs::Permissions::from_mode(0o6777)).unwrap();
        let victim =
            std::env::temp_dir().join(format!("lsmpmon-merge-victim-{}", std::process::id()));
        std::fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, tagged::cell_path(&out, "one")).unwrap();
        merge(&out, std::slice::from_ref(&a), false).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let mode = std::fs::metadata(tagged::cell_path(&out, "one"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7000, 0, "no set-id bit: {mode:o}");
        // A link at OUT/logs is refused, not written through.
        let out2 = temp("tlink-out2");
        std::os::unix::fs::symlink(&a, out2.join("logs")).unwrap();
        let err = merge(&out2, std::slice::from_ref(&a), false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("logs is not a directory"), "{err}");
        // An input whose cells/ is empty is left out by the user, not silently.
        let empty = temp("tlink-empty");
        let err = merge(&temp("tlink-out3"), &[a.clone(), empty.clone()], false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("holds no cell"), "{err}");
        for d in [a, out, out2, empty, temp("tlink-out3")] {
            std::fs::remove_dir_all(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        }
        std::fs::remove_file(victim).unwrap();
    }

    /// A linked OUT/logs is found before the first cell is written: OUT is
    /// left as it was, and the same merge succeeds once the link is gone.
    #[test]
    fn a_linked_target_logs_leaves_the_target_as_it_was() {
        let (a, out) = (temp("llog-a"), temp("llog-out"));
        put(&a, "one", &|_| ());
        put(&a, "two", &|v| v["config"]["name"] = "tomoyo".into());
        for id in ["one", "two"] {
            std::fs::create_dir_all(a.join("logs").join(id)).unwrap();
            std::fs::write(a.join("logs").join(id).join("console.log"), "boot\n").unwrap();
        }
        std::os::unix::fs::symlink(&a, out.join("logs")).unwrap();
        let err = merge(&out, std::slice::from_ref(&a), false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("logs is not a directory"), "{err}");
        let left: Vec<_> = std::fs::read_dir(out.join("cells")).unwrap().collect();
        assert!(
            left.is_empty(),
            "cells written before the refusal: {left:?}"
        );
        assert!(!out.join("index.json").exists() && !out.join("merge.json").exists());
        std::fs::remove_file(out.join("logs")).unwrap();
        let m = merge(&out, std::slice::from_ref(&a), false).unwrap();
        assert_eq!(m.cells, 2);
        assert!(out.join("logs/two/console.log").exists());
        for d in [a, out] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }

    /// An input whose cells/ is a link (to /etc, say) is not read: its
    /// names are another directory's.
    #[test]
    fn a_linked_cells_directory_is_not_followed() {
        let (real, a, out) = (temp("lcells-real"), temp("lcells-a"), temp("lcells-out"));
        put(&real, "one", &|_| ());
        std::fs::remove_dir_all(a.join("cells")).unwrap();
        std::os::unix::fs::symlink(real.join("cells"), a.join("cells")).unwrap();
        let err = merge(&out, std::slice::from_ref(&a), false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("cells is a symbolic link"), "{err}");
        assert!(!tagged::cell_path(&out, "one").exists());
        for d in [real, a, out] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }

    #[test]
    fn one_id_with_two_different_cells_is_refused() {
        let (a, b, out) = (temp("id-a"), temp("id-b"), temp("id-out"));
        std::fs::remove_dir_all(&out).unwrap();
        put(&a, "one", &|_| ());
        put(&b, "one", &|v| scale_first_median(v, 1.5));
        let err = merge(&out, &[a.clone(), b.clone()], false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("two different cells with id one"), "{err}");
        assert!(!out.exists(), "nothing is made before the refusal");
        // The same cell in both is one cell.
        put(&b, "one", &|_| ());
        assert_eq!(
            merge(&out, &[a.clone(), b.clone()], false).unwrap().cells,
            1
        );
        for d in [a, b, out] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }

    #[test]
    fn nothing_to_merge_and_a_linked_target_are_refused() {
        let (a, out) = (temp("bad-a"), temp("bad-out"));
        std::fs::remove_dir_all(&out).unwrap();
        std::fs::write(a.join("cells/broken.json"), "{").unwrap();
        let err = merge(&out, std::slice::from_ref(&a), false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no cell to merge") && err.contains("1 unreadable"),
            "{err}"
        );
        put(&a, "one", &|_| ());
        let m = merge(&out, std::slice::from_ref(&a), false).unwrap();
        assert_eq!((m.cells, m.skipped.len()), (1, 1));
        let (target, link) = (temp("bad-target"), a.join("../lsmpmon-merge-link"));
        std::fs::remove_dir_all(target.join("cells")).unwrap();
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = merge(&link, std::slice::from_ref(&a), false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("symbolic link") && !err.contains("--results"),
            "{err}"
        );
        assert!(
            !target.join("cells").exists(),
            "cells/ made through the link"
        );
        std::fs::remove_file(&link).unwrap();
        for d in [a, out, target] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }

    #[test]
    fn other_versions_and_kernel_packages_are_refused_unless_forced() {
        let (a, b) = (temp("va"), temp("vb"));
        put(&a, "one", &|_| ());
        put(&b, "other", &|v| {
            v["config"]["name"] = "tomoyo".into();
            v["lsmpmon_version"] = "9.9.9".into();
            v["kernel"]["deb_sha256"] = "ffff".into();
        });
        let out = temp("vout");
        let err = merge(&out, &[a.clone(), b.clone()], false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("lsmpmon versions") && err.contains("--force"),
            "{err}"
        );
        assert!(!out.join("index.json").exists());
        let m = merge(&out, &[a.clone(), b.clone()], true).unwrap();
        assert_eq!(m.cells, 2);
        assert_eq!(m.forced.len(), 2, "{m:?}");
        assert!(
            m.forced[1].contains("kernel 6.1-cloud from packages"),
            "{m:?}"
        );
        assert_eq!(Merged::read(&out).unwrap().unwrap(), m);
        // A directory that already holds cells is not merged into.
        let again = merge(&out, std::slice::from_ref(&a), true)
            .unwrap_err()
            .to_string();
        assert!(again.contains("already holds cells"), "{again}");
        for d in [a, b, out] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }

    /// Cells of two builds of one version are two layout draws: refused
    /// unless forced, and then flagged. A cell that does not record its
    /// build is known by its guest benchmark's commit.
    #[test]
    fn cells_of_two_builds_are_refused_unless_forced() {
        let (a, b) = (temp("ba"), temp("bb"));
        put(&a, "one", &|v| {
            v["guest"]["bench"]["provenance"]["commit"] = "a".repeat(40).into();
        });
        put(&b, "other", &|v| {
            v["config"]["name"] = "tomoyo".into();
            v["lsmpmon_commit"] = "b".repeat(40).into();
        });
        let out = temp("bout");
        let err = merge(&out, &[a.clone(), b.clone()], false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("lsmpmon builds {} (e.g.", "a".repeat(12)))
                && err.contains(&"b".repeat(12))
                && err.contains("--force"),
            "{err}"
        );
        let m = merge(&out, &[a.clone(), b.clone()], true).unwrap();
        assert_eq!(m.forced.len(), 1, "{m:?}");
        for d in [&a, &b, &out] {
            std::fs::remove_dir_all(d).unwrap();
        }
        // One build on both sides merges without --force.
        // (What the cell records comes before its benchmark's commit.)
        let (a, b) = (temp("sa"), temp("sb"));
        put(&a, "one", &|v| {
            v["lsmpmon_commit"] = "c".repeat(40).into();
            v["guest"]["bench"]["provenance"]["commit"] = "d".repeat(40).into();
        });
        put(&b, "other", &|v| {
            v["config"]["name"] = "tomoyo".into();
            v["guest"]["bench"]["provenance"]["commit"] = "c".repeat(40).into();
        });
        let out = temp("sout");
        assert_eq!(
            merge(&out, &[a.clone(), b.clone()], false).unwrap().cells,
            2
        );
        for d in [a, b, out] {
            std::fs::remove_dir_all(d).unwrap();
        }
        // One commit built twice (a dirty tree, another toolchain) is two builds.
        let (a, b) = (temp("ha"), temp("hb"));
        for (dir, name, hash) in [(&a, "none", "e"), (&b, "tomoyo", "f")] {
            put(dir, name, &|v| {
                v["config"]["name"] = name.into();
                v["lsmpmon_commit"] = "c".repeat(40).into();
                v["lsmpmon_sha256"] = hash.repeat(64).into();
            });
        }
        let out = temp("hout");
        let err = merge(&out, &[a.clone(), b.clone()], false).unwrap_err();
        assert!(err.to_string().contains(&"f".repeat(12)), "{err}");
        for d in [a, b, out] {
            let _ = std::fs::remove_dir_all(d);
        }
    }

    /// Two submissions into one directory: cells of two plans, one cell
    /// in both. Merged without --force, each identity once.
    #[test]
    fn two_plans_in_one_directory_merge_exactly() {
        let (dir, out) = (temp("plans"), temp("plans-out"));
        let tag = |id: &'static str, index: u64| {
            move |v: &mut serde_json::Value| {
                v["plan"] = serde_json::json!({"id": id, "index": index});
            }
        };
        put(&dir, "a-none", &tag("aaaa", 0));
        put(&dir, "a-tomoyo", &|v| {
            tag("aaaa", 1)(v);
            v["config"]["name"] = "tomoyo".into();
        });
        put(&dir, "b-tomoyo", &|v| {
            tag("bbbb", 0)(v);
            v["config"]["name"] = "tomoyo".into();
            v["started_unix_s"] = (v["started_unix_s"].as_u64().unwrap() + 60).into();
        });
        // A writer killed mid-write leaves only its temporary file.
        std::fs::write(dir.join("cells/.b-none.json.123-0.tmp"), "{\"schema\":").unwrap();
        let m = merge(&out, std::slice::from_ref(&dir), false).unwrap();
        assert_eq!((m.cells, m.superseded.len()), (2, 1), "{m:?}");
        assert!(m.forced.is_empty() && m.skipped.is_empty(), "{m:?}");
        assert!(m.superseded[0].ends_with("a-tomoyo.json"), "{m:?}");
        assert!(tagged::cell_path(&out, "b-tomoyo").exists());
        for d in [dir, out] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }
}
