//! `schema/*.schema.json`, generated from the result types (schemars) for
//! other tools. A unit test fails when a committed file differs from what
//! the types generate; `LSMPMON_WRITE_SCHEMA=1` makes it rewrite them.
use schemars::{generate::SchemaSettings, JsonSchema, Schema};

use super::bench::{BenchResult, BENCH_SCHEMA};
use super::cell::{CellResult, CELL_SCHEMA};
use super::compare::{CompareResult, COMPARE_SCHEMA};
use super::floor::{FloorTable, FLOOR_SCHEMA};
use super::index::{Index, INDEX_SCHEMA};
use super::report::{ReportResult, REPORT_SCHEMA};
use super::trace::{TraceResult, TRACE_SCHEMA};

/// (file name under schema/, its JSON Schema) for every result kind.
pub fn all() -> Vec<(&'static str, Schema)> {
    vec![
        (
            "bench.schema.json",
            of::<BenchResult>("bench", BENCH_SCHEMA),
        ),
        (
            "trace.schema.json",
            of::<TraceResult>("trace", TRACE_SCHEMA),
        ),
        (
            "lab-cell.schema.json",
            of::<CellResult>("lab cell", CELL_SCHEMA),
        ),
        (
            "lab-index.schema.json",
            of::<Index>("lab index", INDEX_SCHEMA),
        ),
        (
            "report.schema.json",
            of::<ReportResult>("report", REPORT_SCHEMA),
        ),
        (
            "compare.schema.json",
            of::<CompareResult>("compare", COMPARE_SCHEMA),
        ),
        (
            "floor.schema.json",
            of::<FloorTable>("layout floor", FLOOR_SCHEMA),
        ),
    ]
}

fn of<T: JsonSchema>(what: &str, schema_id: &str) -> Schema {
    let mut s = SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    s.insert(
        "title".into(),
        format!("lsmpmon {what} result ({schema_id})").into(),
    );
    // The `schema` field of every document holds exactly its schema's name.
    if let Some(field) = s
        .get_mut("properties")
        .and_then(|p| p.get_mut("schema"))
        .and_then(|f| f.as_object_mut())
    {
        field.insert("const".into(), schema_id.into());
    }
    s
}

/// A schema file's text: pretty JSON and a final newline.
pub fn text(s: &Schema) -> String {
    serde_json::to_string_pretty(s).unwrap_or_default() + "\n"
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn committed_schemas_are_the_generated_ones() {
        let dir = Path::new(base::SOURCE_TREE).join("schema");
        let write = std::env::var_os("LSMPMON_WRITE_SCHEMA").is_some_and(|v| v == "1");
        for (file, schema) in super::all() {
            let path = dir.join(file);
            let want = super::text(&schema);
            if write {
                std::fs::write(&path, &want).unwrap();
            }
            let have = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                have == want,
                "schema/{file} differs from the types in crates/model/src: \
                 rewrite it with LSMPMON_WRITE_SCHEMA=1 cargo test -p lsmpmon-model --lib schema"
            );
        }
    }
}
