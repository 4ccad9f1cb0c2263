//! The statistics every comparison shares: the change between two figures,
//! and the verdict on it — exact against virtual time's determinism, or in
//! real time a Mann-Whitney U test (two-sided) on the medians of several
//! runs a side: exact (the U distribution counted) for small samples
//! without ties, the normal approximation with tie correction otherwise.
//! One run a side cannot tell: the samples of one run share whatever drift
//! that run met, so a test on them calls any drift between runs a change.
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What virtual time repeats to across boots (LAB-FACTS; BENCHMARKS.md, 'Determinism of a guest').
pub const VIRTUAL_DETERMINISM_PCT: f64 = 0.5;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Faster,
    Slower,
    WithinNoise,
    // Real time, too few runs a side to separate a change from drift between runs.
    CannotTell,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::WithinNoise => "within noise",
            Verdict::CannotTell => "cannot tell",
        }
    }
}

/// The middle value (the mean of the two middle ones for an even count); 0 for none.
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Change from `base` to `v`, in percent; positive = slower (where higher
/// is better, as bandwidth: less of it).
pub fn overhead_pct(higher_is_better: bool, base: f64, v: f64) -> f64 {
    let change = (v / base - 1.0) * 100.0;
    if higher_is_better {
        -change
    } else {
        change
    }
}

/// How a verdict was reached: the verdict, the test column, the p-value of
/// the test that decided it.
pub type Judged = (Verdict, String, Option<f64>);

fn direction(overhead: f64) -> Verdict {
    if overhead > 0.0 {
        Verdict::Slower
    } else {
        Verdict::Faster
    }
}

fn shown_p(p: f64) -> String {
    if p >= 0.001 {
        format!("{p:.3}")
    } else {
        format!("{p:.1e}")
    }
}

/// A change that is not a number (checked results never give one): no verdict.
fn not_a_figure() -> Judged {
    (
        Verdict::CannotTell,
        "the change is not a figure".into(),
        None,
    )
}

/// The verdict on a change of `overhead` percent between one run a side
/// (`sa`, `sb`: their samples). Virtual time: exact against its
/// determinism. Real time: cannot tell; the within-run test is shown for
/// information only.
pub fn verdict(virtual_time: bool, overhead: f64, sa: &[f64], sb: &[f64]) -> Judged {
    if !overhead.is_finite() {
        return not_a_figure();
    }
    if virtual_time {
        let v = if overhead.abs() <= VIRTUAL_DETERMINISM_PCT {
            Verdict::WithinNoise
        } else {
            direction(overhead)
        };
        return (v, format!("exact (±{VIRTUAL_DETERMINISM_PCT} %)"), None);
    }
    let test = match mann_whitney_p(sa, sb) {
        Some(p) => format!(
            "one run a side; within-run p={} (information only)",
            shown_p(p)
        ),
        None => "one run a side".into(),
    };
    (Verdict::CannotTell, test, None)
}

/// The verdict in real time on a change of `overhead` percent between
/// several runs a side, each run one observation (`a`, `b`: each run's
/// median): a Mann-Whitney U test on them, or "cannot tell" where these
/// run counts cannot reach p < `alpha` whatever the figures.
pub fn runs_verdict(overhead: f64, a: &[f64], b: &[f64], alpha: f64) -> Judged {
    if !overhead.is_finite() {
        return not_a_figure();
    }
    let (n1, n2) = (a.len(), b.len());
    let counts = if n1 == n2 {
        format!("{n1} runs a side")
    } else {
        format!("{n1} vs {n2} runs")
    };
    if n1 == 1 && n2 == 1 {
        return (Verdict::CannotTell, "one run a side".into(), None);
    }
    if min_p(n1, n2) >= alpha {
        let need = runs_needed(alpha);
        return (
            Verdict::CannotTell,
            format!("{counts} cannot reach p < {alpha}: need {need} a side"),
            None,
        );
    }
    let Some(p) = mann_whitney_p(a, b) else {
        return (Verdict::CannotTell, format!("{counts}: no figures"), None);
    };
    let v = if p < alpha && overhead != 0.0 {
        direction(overhead)
    } else {
        Verdict::WithinNoise
    };
    let test = format!("Mann-Whitney on run medians, {counts}: p={}", shown_p(p));
    (v, test, Some(p))
}

/// The smallest two-sided p a Mann-Whitney test of `n1` against `n2`
/// values can give (the two sides fully apart): 2 / C(n1 + n2, n1).
pub fn min_p(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    // C(n1 + n2, n1) as a float product: exact enough far past any alpha.
    let ways = (1..=n1).fold(1.0, |c, i| c * (n2 + i) as f64 / i as f64);
    (2.0 / ways).min(1.0)
}

/// The fewest runs a side with which a Mann-Whitney test can reach p < `alpha`.
pub fn runs_needed(alpha: f64) -> usize {
    (1..).find(|&n| min_p(n, n) < alpha).unwrap_or(usize::MAX)
}

/// Two-sided p-value that `a` and `b` come from one distribution.
/// `None` when either sample is empty.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> Option<f64> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let (u, ties) = u_statistic(a, b);
    if !ties && n1 <= 30 && n2 <= 30 {
        return Some(exact_p(u, n1, n2));
    }
    Some(normal_p(a, b, u))
}

/// U of `a` (pairs where a > b, ties count one half), and whether any value ties.
fn u_statistic(a: &[f64], b: &[f64]) -> (f64, bool) {
    let mut u = 0.0;
    let mut ties = false;
    for x in a {
        for y in b {
            if x > y {
                u += 1.0;
            } else if x == y {
                u += 0.5;
                ties = true;
            }
        }
    }
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    all.sort_by(f64::total_cmp);
    ties |= all.windows(2).any(|w| w[0] == w[1]);
    (u, ties)
}

/// P(U ≤ u) and P(U ≥ u) counted over every split of n1 + n2 ranks.
fn exact_p(u: f64, n1: usize, n2: usize) -> f64 {
    let max_u = n1 * n2;
    // ways[i][j][k]: arrangements of i a-values and j b-values with U = k.
    let mut prev: Vec<Vec<f64>> = vec![vec![0.0; max_u + 1]; n2 + 1];
    for row in prev.iter_mut() {
        row[0] = 1.0;
    }
    for _ in 1..=n1 {
        let mut cur: Vec<Vec<f64>> = vec![vec![0.0; max_u + 1]; n2 + 1];
        cur[0][0] = 1.0;
        for j in 1..=n2 {
            for k in 0..=max_u {
                // Largest value is an a (beats all j b's) or a b.
                let from_a = if k >= j { prev[j][k - j] } else { 0.0 };
                cur[j][k] = from_a + cur[j - 1][k];
            }
        }
        prev = cur;
    }
    let dist = &prev[n2];
    let total: f64 = dist.iter().sum();
    let k = u.round() as usize;
    let lower: f64 = dist[..=k.min(max_u)].iter().sum::<f64>() / total;
    let upper: f64 = dist[k.min(max_u)..].iter().sum::<f64>() / total;
    (2.0 * lower.min(upper)).min(1.0)
}

fn normal_p(a: &[f64], b: &[f64], u: f64) -> f64 {
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    let n = n1 + n2;
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    all.sort_by(f64::total_cmp);
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < all.len() {
        let j = all[i..].iter().take_while(|x| **x == all[i]).count();
        let t = j as f64;
        tie_term += t * t * t - t;
        i += j;
    }
    let var = n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let mean = n1 * n2 / 2.0;
    // Continuity correction towards the mean.
    let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
    (2.0 * (1.0 - std_normal_cdf(z))).min(1.0)
}

/// Φ(z) through erfc (Numerical Recipes' Chebyshev fit, |error| < 1.2e-7).
fn std_normal_cdf(z: f64) -> f64 {
    1.0 - 0.5 * erfc(z / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// Samples of a histogram, one value per call: each bucket's lower
/// bound repeated `count` times (ties within a bucket are what they are).
pub fn from_histogram(buckets: &[(f64, u64)], cap: usize) -> Vec<f64> {
    let total: u64 = buckets.iter().map(|b| b.1).sum();
    if total == 0 {
        return Vec::new();
    }
    // Scaled down proportionally so a million calls stay cheap to test.
    let scale = (cap as f64 / total as f64).min(1.0);
    buckets
        .iter()
        .flat_map(|(low, n)| std::iter::repeat_n(*low, (*n as f64 * scale).round() as usize))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_p_matches_tables() {
        // Fully separated 5 vs 5: 2 / C(10,5) = 2/252.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [6.0, 7.0, 8.0, 9.0, 10.0];
        let p = mann_whitney_p(&a, &b).unwrap();
        assert!((p - 2.0 / 252.0).abs() < 1e-12, "{p}");
        // Interleaved: no evidence at all.
        let c = [1.0, 3.0, 5.0, 7.0, 9.0];
        let d = [2.0, 4.0, 6.0, 8.0, 10.0];
        assert!(mann_whitney_p(&c, &d).unwrap() > 0.5);
    }

    #[test]
    fn normal_approximation_agrees_with_exact_for_larger_samples() {
        let a: Vec<f64> = (0..20).map(|i| i as f64 * 2.0).collect();
        let b: Vec<f64> = (0..20).map(|i| i as f64 * 2.0 + 7.0).collect();
        let exact = mann_whitney_p(&a, &b).unwrap();
        let (u, _) = u_statistic(&a, &b);
        let approx = normal_p(&a, &b, u);
        assert!((exact - approx).abs() < 0.01, "{exact} vs {approx}");
    }

    #[test]
    fn run_counts_that_cannot_reach_alpha_say_so() {
        assert!((min_p(5, 5) - 2.0 / 252.0).abs() < 1e-15);
        assert!((min_p(3, 3) - 0.1).abs() < 1e-15);
        assert_eq!(runs_needed(0.01), 5);
        assert_eq!(runs_needed(0.001), 7);
        assert_eq!(runs_needed(0.05), 4);
        // 3 vs 3 fully apart is p = 0.1: never a verdict at 0.01.
        let (v, test, p) = runs_verdict(50.0, &[1.0, 2.0, 3.0], &[7.0, 8.0, 9.0], 0.01);
        assert_eq!(v, Verdict::CannotTell);
        assert_eq!(test, "3 runs a side cannot reach p < 0.01: need 5 a side");
        assert_eq!(p, None);
        let (v, _, p) = runs_verdict(
            50.0,
            &[1.0, 2.0, 3.0, 4.0, 5.0],
            &[6.0, 7.0, 8.0, 9.0, 10.0],
            0.01,
        );
        assert_eq!((v, p), (Verdict::Slower, Some(2.0 / 252.0)));
        let (v, _, _) = runs_verdict(
            -50.0,
            &[6.0, 7.0, 8.0, 9.0, 10.0],
            &[1.0, 2.0, 3.0, 4.0, 5.0],
            0.01,
        );
        assert_eq!(v, Verdict::Faster);
        let (v, _, _) = runs_verdict(
            1.0,
            &[1.0, 3.0, 5.0, 7.0, 9.0],
            &[2.0, 4.0, 6.0, 8.0, 10.0],
            0.01,
        );
        assert_eq!(v, Verdict::WithinNoise);
    }

    #[test]
    fn one_run_a_side_in_real_time_cannot_tell() {
        // Samples fully apart, as drift between two runs makes them: the
        // within-run test is shown, never taken as a verdict.
        let (a, b) = ([1.0, 2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0, 10.0]);
        let (v, test, p) = verdict(false, 100.0, &a, &b);
        assert_eq!((v, p), (Verdict::CannotTell, None));
        assert_eq!(
            test,
            "one run a side; within-run p=0.008 (information only)"
        );
        let (v, _, _) = verdict(true, 100.0, &a, &b);
        assert_eq!(v, Verdict::Slower);
    }

    #[test]
    fn all_ties_is_no_evidence() {
        assert_eq!(mann_whitney_p(&[5.0; 4], &[5.0; 6]), Some(1.0));
        assert_eq!(mann_whitney_p(&[], &[1.0]), None);
    }

    #[test]
    fn erfc_is_accurate() {
        assert!((std_normal_cdf(1.959_964) - 0.975).abs() < 1e-6);
        assert!((std_normal_cdf(-1.0) - 0.158_655_25).abs() < 1e-6);
    }
}
