//! The clock's own cost, subtracted from every timing.
use std::time::Instant;

/// Cost of one pair of clock reads, ns (median of many).
pub fn clock_overhead_ns() -> f64 {
    let mut v: Vec<f64> = (0..1001)
        .map(|_| {
            let a = Instant::now();
            let b = Instant::now();
            (b - a).as_nanos() as f64
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
