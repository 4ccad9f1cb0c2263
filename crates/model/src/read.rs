//! One way to read a result: a regular file (a FIFO or a device is refused
//! at once, never waited on or read without end), at most 256 MiB, its
//! schema named, then the typed result — or one line saying what is wrong
//! with which file, and for a result of another version which lsmpmon
//! wrote it and what to do.
use std::path::Path;

use anyhow::Result;
use serde::{de::DeserializeOwned, Deserialize};
use serde_json::Value;

use super::bench::{BenchResult, BENCH_SCHEMA};
use super::cell::{CellResult, CELL_SCHEMA};
use super::check::Check;
use super::compare::{CompareResult, COMPARE_SCHEMA};
use super::index::{Index, INDEX_SCHEMA};
use super::report::{ReportResult, REPORT_SCHEMA};
use super::trace::{TraceResult, TRACE_SCHEMA};
use base::error::usage;

/// A full trace is a few MiB: anything far larger is not a result.
pub const MAX_RESULT_BYTES: u64 = 256 << 20;

/// Every result schema this lsmpmon reads.
pub const SCHEMAS: [&str; 6] = [
    CELL_SCHEMA,
    BENCH_SCHEMA,
    TRACE_SCHEMA,
    INDEX_SCHEMA,
    REPORT_SCHEMA,
    COMPARE_SCHEMA,
];

/// A result of any kind lsmpmon writes to files.
#[derive(Debug, Clone)]
pub enum AnyResult {
    Cell(Box<CellResult>),
    Bench(Box<BenchResult>),
    Trace(Box<TraceResult>),
    Index(Index),
    Report(Box<ReportResult>),
    Compare(Box<CompareResult>),
}

impl AnyResult {
    pub fn schema(&self) -> &str {
        match self {
            AnyResult::Cell(c) => &c.schema,
            AnyResult::Bench(b) => &b.schema,
            AnyResult::Trace(t) => &t.schema,
            AnyResult::Index(i) => &i.schema,
            AnyResult::Report(r) => &r.schema,
            AnyResult::Compare(c) => &c.schema,
        }
    }
}

/// The bytes of a result file. `what` names its role in messages
/// ("baseline"); empty: the path alone.
pub fn read_bytes(what: &str, path: &Path) -> Result<Vec<u8>> {
    base::secure_fs::read_regular(what, path, MAX_RESULT_BYTES)
}

/// What every result says of itself: its schema and the version that wrote it.
#[derive(Deserialize)]
struct Header {
    schema: Option<String>,
    lsmpmon_version: Option<String>,
    provenance: Option<WrittenBy>,
}

#[derive(Deserialize)]
struct WrittenBy {
    version: Option<String>,
}

impl Header {
    fn version(&self) -> Option<&str> {
        self.lsmpmon_version
            .as_deref()
            .or(self.provenance.as_ref()?.version.as_deref())
    }
}

/// The result in `path`, typed by its schema.
pub fn load(what: &str, path: &Path) -> Result<AnyResult> {
    load_one_of(what, path, &SCHEMAS, "lsmpmon")
}

/// The result in `path`, refused (before it is parsed) unless its schema
/// is one of those `reader` reads.
pub fn load_one_of(what: &str, path: &Path, accepted: &[&str], reader: &str) -> Result<AnyResult> {
    let (name, bytes, header) = open(what, path)?;
    let schema = header.schema.as_deref().unwrap_or("");
    if SCHEMAS.contains(&schema) && !accepted.contains(&schema) {
        return Err(usage(format!(
            "{name}: schema {schema} is not one {reader} reads ({})",
            accepted.join(", ")
        )));
    }
    Ok(match schema {
        CELL_SCHEMA => AnyResult::Cell(Box::new(parse(&name, &header, &bytes)?)),
        BENCH_SCHEMA => AnyResult::Bench(Box::new(parse(&name, &header, &bytes)?)),
        TRACE_SCHEMA => AnyResult::Trace(Box::new(parse(&name, &header, &bytes)?)),
        INDEX_SCHEMA => AnyResult::Index(parse(&name, &header, &bytes)?),
        REPORT_SCHEMA => AnyResult::Report(Box::new(parse(&name, &header, &bytes)?)),
        COMPARE_SCHEMA => AnyResult::Compare(Box::new(parse(&name, &header, &bytes)?)),
        other => return Err(other_schema(&name, other, header.version())),
    })
}

/// The result in `path`, which must be of `schema` (a `kind` result: "bench").
pub fn load_as<T: DeserializeOwned + Check>(
    what: &str,
    path: &Path,
    schema: &str,
    kind: &str,
) -> Result<T> {
    let (name, bytes, header) = open(what, path)?;
    match header.schema.as_deref().unwrap_or("") {
        s if s == schema => parse(&name, &header, &bytes),
        s if SCHEMAS.contains(&s) => Err(usage(format!(
            "{name} is not an lsmpmon {kind} result (schema {s}, expected {schema})"
        ))),
        s => Err(other_schema(&name, s, header.version())),
    }
}

/// The file's bytes and header: every result names its schema.
fn open(what: &str, path: &Path) -> Result<(String, Vec<u8>, Header)> {
    let bytes = read_bytes(what, path)?;
    let name = named(what, path);
    let header: Header = serde_json::from_slice(&bytes).map_err(|e| {
        let why = if e.is_data() {
            format!("not an lsmpmon result ({e})")
        } else {
            format!("not a JSON result (not valid JSON: {e})")
        };
        usage(format!(
            "{name}: {why}: pass files lsmpmon wrote with --json or a lab results directory"
        ))
    })?;
    if header.schema.is_none() {
        return Err(usage(format!(
            "{name}: no \"schema\" field: not an lsmpmon result"
        )));
    }
    Ok((name, bytes, header))
}

fn named(what: &str, path: &Path) -> String {
    if what.is_empty() {
        path.display().to_string()
    } else {
        format!("{what} {}", path.display())
    }
}

/// A result of a schema this version does not read: which version wrote it,
/// and what to do with it.
fn other_schema(name: &str, schema: &str, written_by: Option<&str>) -> anyhow::Error {
    let family = schema.rsplit_once('/').map(|(f, _)| f);
    let ours = SCHEMAS
        .iter()
        .find(|s| family.is_some_and(|f| s.rsplit_once('/').is_some_and(|(g, _)| g == f)));
    match ours {
        Some(ours) => usage(format!(
            "{name}: schema {schema}, written by lsmpmon {}: this lsmpmon ({}) reads {ours}: \
             read it with the lsmpmon that wrote it, or run the measurement again with this one",
            written_by.unwrap_or("of another version"),
            env!("CARGO_PKG_VERSION"),
        )),
        None => usage(format!(
            "{name}: schema {schema} is not one lsmpmon reads ({})",
            SCHEMAS.join(", ")
        )),
    }
}

/// The typed result, checked; a field that does not fit is named with its path.
fn parse<T: DeserializeOwned + Check>(name: &str, header: &Header, bytes: &[u8]) -> Result<T> {
    let schema = header.schema.as_deref().unwrap_or("");
    let malformed = |why: String| usage(format!("{name}: malformed {schema} result: {why}"));
    let value: Value = serde_json::from_slice(bytes).map_err(|e| malformed(e.to_string()))?;
    printable(&value, &mut String::new()).map_err(malformed)?;
    let typed: T = serde_path_to_error::deserialize(value).map_err(|e| {
        let version = match header.version() {
            Some(v) if v != env!("CARGO_PKG_VERSION") => format!(
                "written by lsmpmon {v}; this is {}: run the measurement again, or convert the file to schema/ of this version: ",
                env!("CARGO_PKG_VERSION")
            ),
            _ => String::new(),
        };
        malformed(format!("{version}{}: {}", e.path(), e.inner()))
    })?;
    typed.check().map_err(malformed)?;
    Ok(typed)
}

/// Every string is text a terminal shows as it is: no escape sequences, no
/// carriage returns (newlines and tabs are kept: modules' statistics files
/// are recorded verbatim).
fn printable(v: &Value, path: &mut String) -> Result<(), String> {
    let depth = path.len();
    let result = match v {
        Value::String(s) => match s
            .chars()
            .find(|c| c.is_control() && !matches!(c, '\n' | '\t'))
        {
            Some(c) => Err(format!(
                "{}: a control character ({:?}) in {:?}",
                if path.is_empty() { "." } else { path.as_str() },
                c,
                s.chars().take(40).collect::<String>()
            )),
            None => Ok(()),
        },
        Value::Array(items) => items.iter().enumerate().try_for_each(|(i, x)| {
            path.truncate(depth);
            path.push_str(&format!("[{i}]"));
            printable(x, path)
        }),
        Value::Object(map) => map.iter().try_for_each(|(k, x)| {
            path.truncate(depth);
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(k);
            printable(x, path)
        }),
        _ => Ok(()),
    };
    path.truncate(depth);
    result
}
