//! The observer effect of a cell's trace: each op's time under `trace
//! --per-lsm` (every hook and each LSM's own functions: the run behind
//! Table 4) over its untraced median (Table 3). 1.47 means the op took 47 %
//! longer while every hook was timed.
use model::bench::{BenchResult, Unit};

/// One op's traced / untraced figure.
#[derive(Debug, Clone, PartialEq)]
pub struct OpEffect {
    pub op: String,
    /// How many times slower under trace (> 1: slower).
    pub ratio: f64,
}

/// The ops measured in both runs, in the untraced run's order. For MB/s
/// ops the ratio is inverted, so that > 1 is slower there too.
pub fn effects(untraced: &BenchResult, traced: &BenchResult) -> Vec<OpEffect> {
    untraced
        .results
        .iter()
        .filter_map(|u| {
            let t = traced
                .results
                .iter()
                .find(|t| t.op == u.op && t.unit == u.unit)?;
            let (base, under) = (u.summary.median, t.summary.median);
            if base <= 0.0 || under <= 0.0 {
                return None;
            }
            let ratio = match u.unit {
                Unit::NsPerOp => under / base,
                Unit::MBps => base / under,
            };
            Some(OpEffect {
                op: u.op.clone(),
                ratio,
            })
        })
        .collect()
}

/// "×1.47" (two decimals).
pub fn times(ratio: f64) -> String {
    format!("×{ratio:.2}")
}

/// "stat ×1.47, open_close ×1.31" for the first `max` ops (and how many more).
pub fn summary(effects: &[OpEffect], max: usize) -> String {
    let mut parts: Vec<String> = effects
        .iter()
        .take(max)
        .map(|e| format!("{} {}", e.op, times(e.ratio)))
        .collect();
    if effects.len() > max {
        parts.push(format!("{} more in the report", effects.len() - max));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench(ops: &[(&str, Unit, f64)]) -> BenchResult {
        let mut b: BenchResult = serde_json::from_str(include_str!(
            "../../../../tests/fixtures/report/bench-host.json"
        ))
        .expect("fixture");
        let template = b.results[0].clone();
        b.results = ops
            .iter()
            .map(|(op, unit, median)| {
                let mut r = template.clone();
                r.op = op.to_string();
                r.unit = *unit;
                r.summary.median = *median;
                r
            })
            .collect();
        b
    }

    #[test]
    fn traced_over_untraced_for_ops_in_both_runs() {
        let untraced = bench(&[
            ("stat", Unit::NsPerOp, 3570.0),
            ("pipe_bw", Unit::MBps, 1000.0),
            ("fork", Unit::NsPerOp, 90000.0),
        ]);
        let traced = bench(&[
            ("stat", Unit::NsPerOp, 5249.0),
            ("pipe_bw", Unit::MBps, 800.0),
        ]);
        let e = effects(&untraced, &traced);
        assert_eq!(e.len(), 2, "fork was not traced: {e:?}");
        assert_eq!(e[0].op, "stat");
        assert!((e[0].ratio - 1.47).abs() < 0.01);
        // Less bandwidth under trace is slower too.
        assert!((e[1].ratio - 1.25).abs() < 1e-9);
        assert_eq!(summary(&e, 1), "stat ×1.47, 1 more in the report");
        assert_eq!(summary(&e, 5), "stat ×1.47, pipe_bw ×1.25");
    }
}
