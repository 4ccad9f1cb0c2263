//! Summary statistics of one operation's samples.
use model::bench::Summary;

pub fn summarize(values: &[f64]) -> Summary {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len().max(1) as f64;
    let median = base::stats::median(&v);
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    let pct = |x: f64, of: f64| if of == 0.0 { 0.0 } else { x / of * 100.0 };
    Summary {
        median,
        min: v.first().copied().unwrap_or(0.0),
        max: v.last().copied().unwrap_or(0.0),
        mean,
        cov_pct: pct(var.sqrt(), mean),
        spread_pct: pct(v.last().unwrap_or(&0.0) - v.first().unwrap_or(&0.0), median),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_spread() {
        let s = summarize(&[3.0, 1.0, 2.0, 10.0, 2.0]);
        assert_eq!(s.median, 2.0);
        assert_eq!((s.min, s.max), (1.0, 10.0));
        assert_eq!(s.spread_pct, 450.0);
        assert_eq!(summarize(&[4.0, 2.0]).median, 3.0);
        assert_eq!(summarize(&[5.0, 5.0, 5.0]).cov_pct, 0.0);
    }
}
