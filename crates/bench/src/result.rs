//! What `bench --json` writes (schema/bench.schema.json): the types live in
//! the result model, where every reader finds them too.
pub use model::bench::{BenchOptions, BenchProvenance, BenchResult, BENCH_SCHEMA as SCHEMA};
