//! Latency histograms as results hold them: sparse buckets [low, high) with
//! a count, of any width (log2 in results before the log-linear histogram,
//! 1/16 of an octave since). Quantiles, differences and display octaves.
use crate::trace::Bucket;

/// Quantile `q` (0..=1) of the calls in `buckets`, sorted by `low_ns`: the
/// middle of the bucket holding that rank, within half a bucket of the
/// exact quantile (1/32 of it with 16 buckets an octave). Reading calls as
/// spread across their bucket would be closer for smooth distributions but
/// a whole bucket off where the calls sit at one edge.
pub fn quantile(buckets: &[Bucket], q: f64) -> Option<f64> {
    let total: u64 = buckets.iter().map(|b| b.count).sum();
    if total == 0 || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let rank = (q * total as f64).ceil().max(1.0) as u64;
    let mut through = 0u64;
    buckets.iter().find_map(|b| {
        through += b.count;
        (through >= rank).then(|| (b.low_ns as f64 + b.high_ns as f64) / 2.0)
    })
}

/// The calls in `now` that were not yet in `before`, an earlier reading of
/// the same histogram (buckets matched by their bounds).
pub fn since(now: &[Bucket], before: &[Bucket]) -> Vec<Bucket> {
    now.iter()
        .filter_map(|b| {
            let old = before
                .iter()
                .find(|o| o.low_ns == b.low_ns && o.high_ns == b.high_ns)
                .map_or(0, |o| o.count);
            let count = b.count.saturating_sub(old);
            (count > 0).then(|| Bucket { count, ..b.clone() })
        })
        .collect()
}

/// The buckets folded into powers of two, [2^k, 2^(k+1)) ([0, 2) for the
/// first), for a display of one line an octave.
pub fn octaves(buckets: &[Bucket]) -> Vec<Bucket> {
    let mut out: Vec<Bucket> = Vec::new();
    for b in buckets.iter().filter(|b| b.count > 0) {
        let k = 63 - b.low_ns.max(1).leading_zeros();
        let low_ns = if k == 0 { 0 } else { 1u64 << k };
        let high_ns = 1u64.checked_shl(k + 1).unwrap_or(u64::MAX);
        match out.last_mut() {
            Some(last) if last.low_ns == low_ns => last.count += b.count,
            _ => out.push(Bucket {
                low_ns,
                high_ns,
                count: b.count,
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(low_ns: u64, high_ns: u64, count: u64) -> Bucket {
        Bucket {
            low_ns,
            high_ns,
            count,
        }
    }

    #[test]
    fn quantile_is_the_middle_of_the_bucket_holding_its_rank() {
        let h = [b(100, 110, 50), b(200, 210, 50)];
        assert_eq!(quantile(&h, 0.5), Some(105.0));
        assert_eq!(quantile(&h, 0.51), Some(205.0));
        assert_eq!(quantile(&h, 0.99), Some(205.0));
        assert_eq!(quantile(&h, 0.0), Some(105.0));
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&h, 1.5), None);
        assert_eq!(quantile(&h, f64::NAN), None);
    }

    #[test]
    fn since_keeps_only_new_calls() {
        let old = [b(100, 110, 5), b(200, 210, 7)];
        let now = [b(100, 110, 5), b(200, 210, 9), b(300, 310, 1)];
        assert_eq!(since(&now, &old), vec![b(200, 210, 2), b(300, 310, 1)]);
    }

    #[test]
    fn octaves_fold_sub_buckets_of_one_power_of_two() {
        let h = [
            b(0, 1, 1),
            b(1, 2, 1),
            b(256, 272, 3),
            b(496, 512, 4),
            b(512, 544, 1),
        ];
        assert_eq!(
            octaves(&h),
            vec![b(0, 2, 2), b(256, 512, 7), b(512, 1024, 1)]
        );
    }
}
