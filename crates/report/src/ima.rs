//! The integrity-measurement paper's Tables 1-3 from lab cells that ran the
//! `ima` ops: mmap and open-read latency by case with the hook's share over
//! `none`, and the re-hash latency by file size with the throughput it
//! implies. One table of each per kernel.
use super::forms::{by_kernel, median, missing, op, time_mode};
use super::input::{Run, BASELINE};
use base::papers;
use base::table::{Cell, Row, Table};
use bench::op_names;

/// (our op, case label, paper's latency µs, paper's hook share µs).
type PaperCase = (&'static str, &'static str, f64, Option<f64>);

/// Table 1 (mmap, file of 2 bytes; reference mmap 1.65 µs).
const MMAP: &[PaperCase] = &[
    (
        op_names::IMA_MMAP_CACHED,
        "cached (clean, measured)",
        1.73,
        Some(0.08),
    ),
    (
        op_names::IMA_MMAP_REHASH,
        "rehash (changed, digest listed)",
        4.21,
        Some(2.56),
    ),
    (
        op_names::IMA_MMAP_EXTEND,
        "extend (new file)",
        5430.0,
        Some(5430.0),
    ),
];
const MMAP_REFERENCE_US: f64 = 1.65;

/// Table 2 (user-level measurement through /sys/security/measure; the
/// paper gives the whole request's latency; reference open/write/close).
const READ: &[PaperCase] = &[
    (
        op_names::IMA_READ_CACHED,
        "cached (clean, measured)",
        4.32,
        None,
    ),
    (
        op_names::IMA_READ_REHASH,
        "rehash (changed, digest listed)",
        7.50,
        None,
    ),
    (op_names::IMA_READ_EXTEND, "extend (new file)", 5430.0, None),
];
const READ_REFERENCE_US: f64 = 4.32;

/// Table 3 (SHA-1, mmap in the re-hash case, µs, mmap's 1.65 µs included).
const PAPER_HASH_US: &[f64] = &[4.21, 10.3, 16.3, 197.0, 1550.0, 12700.0];

fn median_us(r: &Run, op: &str) -> Option<f64> {
    median(r, op).map(|m| m / 1e3)
}

pub fn tables(runs: &[Run], order: &[String]) -> Vec<Table> {
    let mut out = Vec::new();
    for (kernel, cols) in by_kernel(runs, order) {
        let kernel = kernel.to_string();
        let measured: Vec<&Run> = cols
            .iter()
            .copied()
            .filter(|c| c.measured.is_some() && has_ima_ops(c))
            .collect();
        if measured.is_empty() {
            continue;
        }
        let base = cols
            .iter()
            .copied()
            .find(|c| c.config == BASELINE && has_ima_ops(c));
        out.push(cases(&kernel, &measured, base, Path::Mmap));
        out.push(cases(&kernel, &measured, base, Path::Read));
        out.push(hashing(&kernel, &measured, base));
    }
    out
}

fn has_ima_ops(r: &Run) -> bool {
    !r.passed() || median_us(r, op_names::IMA_MMAP_CACHED).is_some()
}

#[derive(Clone, Copy, PartialEq)]
/// Which of IMA's measuring paths a case table is about.
enum Path {
    Mmap,
    Read,
}

fn cases(kernel: &str, cols: &[&Run], base: Option<&Run>, path: Path) -> Table {
    let (paper_rows, reference, what, op_ref) = match path {
        Path::Mmap => (
            MMAP,
            MMAP_REFERENCE_US,
            "mmap + munmap, PROT_EXEC (MMAP_CHECK)",
            "Table 1",
        ),
        Path::Read => (
            READ,
            READ_REFERENCE_US,
            "open + read + close (FILE_CHECK)",
            "Table 2",
        ),
    };
    let mut header = vec!["case".to_string()];
    for c in cols {
        header.push(format!("{} µs", c.config));
        header.push(format!("{} − none µs", c.config));
    }
    header.extend(["paper µs".to_string(), "paper hook µs".to_string()]);
    let base_us = |op: &str| base.and_then(|b| median_us(b, op));
    let mut rows: Vec<Row> = paper_rows
        .iter()
        .map(|&(op, label, paper, share)| {
            let mut cells = Vec::new();
            for c in cols {
                cells.extend(case_cells(c, op, base_us(op)));
            }
            cells.push(Cell::value(paper));
            cells.push(share.map_or(Cell::missing("–"), Cell::value));
            Row {
                label: label.into(),
                cells,
            }
        })
        .collect();
    let mut reference_row = Vec::new();
    for _ in cols {
        // The reference is `none` running the cached case's op.
        reference_row
            .push(base_us(paper_rows[0].0).map_or(Cell::missing("no none cell"), Cell::value));
        reference_row.push(Cell::missing("–"));
    }
    reference_row.extend([Cell::value(reference), Cell::missing("–")]);
    rows.push(Row {
        label: "reference (none)".into(),
        cells: reference_row,
    });
    Table {
        form: if path == Path::Mmap {
            base::form::Form::ImaMmap
        } else {
            base::form::Form::ImaRead
        },
        title: format!(
            "IMA measure-call latency, {what}, a 2-byte file ({}), kernel {kernel}",
            papers::cite(&papers::IMA, op_ref)
        ),
        kernel: kernel.into(),
        notes: case_notes(cols, path),
        header,
        rows,
    }
}

/// A run's latency and hook share (minus `none`) for one case.
fn case_cells(c: &Run, op: &str, base_us: Option<f64>) -> [Cell; 2] {
    if let Some(m) = missing(c) {
        return [m.clone(), m];
    }
    let Some(us) = median_us(c, op) else {
        return [Cell::missing("not run"), Cell::missing("–")];
    };
    let share = base_us.map_or(Cell::missing("no none cell"), |b| Cell::value(us - b));
    let no_tpm = op.ends_with("_extend") && c.measured.as_ref().is_some_and(|m| !m.tpm);
    if no_tpm {
        // Listed, not extended: the figure must not read as the paper's extend.
        return [
            Cell::text(format!("{} (no TPM)", base::table::fmt_value(us))),
            share,
        ];
    }
    [Cell::value(us), share]
}

fn case_notes(cols: &[&Run], path: Path) -> Vec<String> {
    let mut notes = vec![format!(
        "{} time; median µs per op, each op timed alone (making the file dirty or new is not timed). \
         − none: minus the same op on the `none` configuration of the same kernel, the hook's own share.",
        time_mode(cols)
    )];
    notes.push(
        "cached: the file was measured and is clean; rehash: it was rewritten with the same bytes, so \
         IMA hashes it again and finds the digest already listed (no new entry, no extend); extend: a \
         new file each op, hashed, listed and, with a TPM, extended into PCR 10. Without a TPM \
         (`(no TPM)`) extend adds the list entry only."
            .into(),
    );
    if path == Path::Read {
        notes.push(
            "Modern IMA has no /sys/security/measure: a program's own files are measured when it opens \
             them for reading, through a `measure func=FILE_CHECK mask=MAY_READ` rule. The paper's \
             figures are the whole sysfs request (open, write, close); its reference is that request \
             without measuring."
                .into(),
        );
    }
    for c in cols.iter() {
        let Some(m) = c.measured.as_ref().filter(|m| m.tpm) else {
            continue;
        };
        let extend = if path == Path::Mmap {
            op_names::IMA_MMAP_EXTEND
        } else {
            op_names::IMA_READ_EXTEND
        };
        if let Some(r) = op(c, extend) {
            notes.push(extend_note(&c.config, m, r.summary.min, r.summary.max));
        }
    }
    notes
}

/// Why a TPM cell's extend is (or is not) a figure to compare across runs.
fn extend_note(config: &str, m: &super::input::Measured, lo_ns: f64, hi_ns: f64) -> String {
    let range = format!(
        "{config}: extend samples range {:.0}-{:.0} µs (×{:.2})",
        lo_ns / 1e3,
        hi_ns / 1e3,
        if lo_ns > 0.0 { hi_ns / lo_ns } else { 0.0 }
    );
    if m.idled_in_host_time {
        return format!(
            "{range}. QEMU's tpm-tis gives the guest no interrupt, so the driver polls and sleeps 1 ms \
             (tpm_msleep(TPM_TIMEOUT_POLL)) while swtpm, on the host, has not answered. This cell ran \
             with -icount sleep=on: the idle guest waits that millisecond in host time, swtpm has \
             answered by then, and an extend that polls costs one interval (≈ 1.04 ms more than \
             without a TPM; medians within 3 % across boots on a quiet host). Whether swtpm answers \
             before the driver's first read is still host time's decision: a busy host can make it \
             answer before the first read (tens of µs), so compare extends only between cells whose \
             medians fall in the same regime."
        );
    }
    format!(
        "{range}, not deterministic: swtpm runs on the host, outside virtual time, and QEMU's \
         tpm-tis gives the guest no interrupt, so the driver polls: a command swtpm has not finished \
         at the first status read costs a 1 ms sleep (tpm_msleep(TPM_TIMEOUT_POLL)), which -icount \
         sleep=off turns into ≈1 ms of virtual time without waiting for swtpm. An extend therefore \
         costs tens to hundreds of µs or ≈1.03 ms and more, as host wall time decides (the lab now \
         runs TPM cells with sleep=on)."
    )
}

fn size_label(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

fn hashing(kernel: &str, cols: &[&Run], base: Option<&Run>) -> Table {
    let mut header = vec!["file size".to_string()];
    for c in cols {
        let algo = c
            .measured
            .as_ref()
            .and_then(|m| m.algo.clone())
            .unwrap_or_else(|| "?".into());
        header.push(format!("{} ({algo}) µs", c.config));
        header.push(format!("{} − none µs", c.config));
        header.push(format!("{} MB/s", c.config));
    }
    header.extend(["paper (SHA-1) µs".to_string(), "paper MB/s".to_string()]);
    let base_us = |op: &str| base.and_then(|b| median_us(b, op));
    let mut rows: Vec<Row> = bench::IMA_HASH_SIZES
        .iter()
        .zip(PAPER_HASH_US)
        .map(|(&(op, bytes), &paper)| {
            let mut cells = Vec::new();
            for c in cols {
                cells.extend(hash_cells(c, op, bytes, base_us(op)));
            }
            cells.push(Cell::value(paper));
            cells.push(Cell::fixed(bytes as f64 / (paper - MMAP_REFERENCE_US), 1));
            Row {
                label: size_label(bytes),
                cells,
            }
        })
        .collect();
    rows.push(incremental_row(cols));
    Table {
        form: base::form::Form::ImaHash,
        title: format!(
            "IMA re-hash latency by file size, mmap PROT_EXEC ({}), kernel {kernel}",
            papers::cite(&papers::IMA, "Table 3")
        ),
        kernel: kernel.into(),
        notes: vec![
            format!(
                "{} time; median µs per mmap + munmap of a file changed since its measurement (IMA hashes \
                 it again; nothing is listed or extended). − none: minus the same op without a policy; \
                 MB/s: file size ÷ that share (1 MB = 10^6 bytes), fixed costs included, as the paper's \
                 ≈80 MB/s.",
                time_mode(cols)
            ),
            "The last row is the hashing rate alone: (1 MiB − 128 KiB) ÷ the latency between them. \
             Virtual time counts instructions: it prices the hash's instructions, not memory \
             traffic. QEMU's emulated CPU (\"QEMU Virtual CPU\") has no SSSE3, AVX or SHA \
             extensions, so every kernel hashes with its generic C code."
                .into(),
        ],
        header,
        rows,
    }
}

fn hash_cells(c: &Run, op: &str, bytes: usize, base_us: Option<f64>) -> [Cell; 3] {
    if let Some(m) = missing(c) {
        return [m.clone(), m.clone(), m];
    }
    let Some(us) = median_us(c, op) else {
        return [
            Cell::missing("not run"),
            Cell::missing("–"),
            Cell::missing("–"),
        ];
    };
    match base_us {
        Some(b) if us > b => [
            Cell::value(us),
            Cell::value(us - b),
            Cell::fixed(bytes as f64 / (us - b), 1),
        ],
        _ => [
            Cell::value(us),
            Cell::missing("no none cell"),
            Cell::missing("–"),
        ],
    }
}

fn incremental_row(cols: &[&Run]) -> Row {
    let sizes = bench::IMA_HASH_SIZES;
    let (small, large) = (sizes[sizes.len() - 2], sizes[sizes.len() - 1]);
    let mut cells = Vec::new();
    for c in cols {
        let rate = match (median_us(c, small.0), median_us(c, large.0)) {
            (Some(a), Some(b)) if b > a && missing(c).is_none() => {
                Cell::fixed((large.1 - small.1) as f64 / (b - a), 1)
            }
            _ => Cell::missing("–"),
        };
        cells.extend([Cell::missing("–"), Cell::missing("–"), rate]);
    }
    let paper = (large.1 - small.1) as f64 / (PAPER_HASH_US[5] - PAPER_HASH_US[4]);
    cells.extend([Cell::missing("–"), Cell::fixed(paper, 1)]);
    Row {
        label: "hash rate 128 KiB → 1 MiB".into(),
        cells,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Measured;

    /// A lab cell of kernel 6.1 with these ops' medians (ns).
    fn run(config: &str, measured: Option<Measured>, medians: &[(&str, f64)]) -> Run {
        let mut r = crate::test_runs::run("6.1", "cloud", 1, config, medians);
        r.source = config.into();
        r.measured = measured;
        r
    }

    fn ops(cached: f64, rehash: f64, extend: f64, hash_1m: f64) -> Vec<(&'static str, f64)> {
        let mut v = vec![
            (op_names::IMA_MMAP_CACHED, cached),
            (op_names::IMA_MMAP_REHASH, rehash),
            (op_names::IMA_MMAP_EXTEND, extend),
            (op_names::IMA_HASH_128K, hash_1m / 8.0),
            (op_names::IMA_HASH_1M, hash_1m),
        ];
        v.extend([
            (op_names::IMA_READ_CACHED, cached),
            (op_names::IMA_READ_REHASH, rehash),
        ]);
        v
    }

    fn value(c: &Cell) -> f64 {
        match c {
            Cell::Value { value, .. } | Cell::Fixed { value, .. } | Cell::Drawn { value, .. } => {
                *value
            }
            other => panic!("not a figure: {other:?}"),
        }
    }

    #[test]
    fn shares_are_over_none_and_an_extend_without_tpm_says_so() {
        let tpm = |t| {
            Some(Measured {
                tpm: t,
                algo: Some("sha256".into()),
                idled_in_host_time: false,
            })
        };
        let runs = vec![
            run("none", None, &ops(10_000.0, 10_000.0, 10_000.0, 10_000.0)),
            run(
                "ima",
                tpm(false),
                &ops(11_000.0, 40_000.0, 42_000.0, 1_058_576.0),
            ),
            run(
                "ima-tpm",
                tpm(true),
                &ops(11_000.0, 40_000.0, 900_000.0, 1_058_576.0),
            ),
        ];
        let t = tables(&runs, &["none".into(), "ima".into(), "ima-tpm".into()]);
        let forms: Vec<&str> = t.iter().map(|t| t.form.name()).collect();
        assert_eq!(forms, ["ima_mmap", "ima_read", "ima_hash"]);
        let mmap = &t[0];
        assert_eq!(
            mmap.header[1..5],
            ["ima µs", "ima − none µs", "ima-tpm µs", "ima-tpm − none µs"]
        );
        let rehash = &mmap.rows[1].cells;
        assert_eq!(value(&rehash[1]), 30.0);
        let extend = &mmap.rows[2].cells;
        assert_eq!(extend[0], Cell::text("42 (no TPM)"));
        assert_eq!(value(&extend[3]), 890.0);
        assert!(mmap
            .notes
            .iter()
            .any(|n| n.starts_with("ima-tpm: extend samples range 450-1800 µs")));
        // Read ran no extend: said, not invented.
        assert_eq!(t[1].rows[2].cells[0], Cell::missing("not run"));
        // 1 MiB hashed in 1048.576 µs over none: 1000 bytes per µs, 1000 MB/s.
        let hash = &t[2];
        assert!(hash.header[1].contains("(sha256)"));
        let mib = hash.rows.iter().find(|r| r.label == "1 MiB").unwrap();
        assert_eq!(value(&mib.cells[1]), 1048.576);
        assert!((value(&mib.cells[2]) - 1000.0).abs() < 1e-9);
        let rate = hash.rows.last().unwrap();
        let expected = (7 << 17) as f64 / ((1_058_576.0 - 1_058_576.0 / 8.0) / 1e3);
        assert!((value(&rate.cells[2]) - expected).abs() < 1e-9);
    }
}
