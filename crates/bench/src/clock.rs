//! The clock's own cost, subtracted from every timing.
use std::time::Instant;

/// `timed_ns` summed over `iters` ops each timed alone (one clock pair
/// each), as the runner reads a run timed once: one clock pair in all.
pub fn with_one_clock_pair(timed_ns: f64, iters: u64, clock_ns: f64) -> f64 {
    timed_ns - iters.saturating_sub(1) as f64 * clock_ns
}

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
