//! A change between two configurations measured over layout draws (each
//! draw one boot with its own layout, each exactly repeatable): the change
//! of the medians over draws, its interval, and whether it is established —
//! its interval excludes 0 and it exceeds what the baseline's draws alone
//! move (the layout floor). Stabilizer's lesson: without draws a layout
//! effect reads as a result.
use serde::{Deserialize, Serialize};

use super::stats::{median, overhead_pct};

/// Below this many draws a side the interval is the range over all pairs
/// of draws; from it on, a bootstrap 95 % interval of the change of medians.
pub const BOOTSTRAP_FROM: usize = 5;
const RESAMPLES: usize = 2000;
/// Draws that all agree still repeat only to virtual time's determinism.
pub const MIN_FLOOR_PCT: f64 = super::stats::VIRTUAL_DETERMINISM_PCT;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Interval {
    /// Bootstrap 95 % percentile interval of the change of medians.
    Bootstrap95,
    /// Smallest to largest change over every pair of draws (few draws).
    PairRange,
    /// One draw a side: the change ± the kernel's committed layout floor
    /// for the op (what draws of `none` alone spread over several builds).
    ReferenceFloor,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DrawnChange {
    /// Change of the median over draws, percent (positive = slower).
    pub pct: f64,
    pub low_pct: f64,
    pub high_pct: f64,
    pub interval: Interval,
    /// What the baseline's draws alone spread: (max − min) / min, percent,
    /// and never less than virtual time's determinism.
    pub floor_pct: f64,
    /// The interval excludes 0 and |pct| exceeds the floor, against each
    /// mode of a side whose draws fall into two.
    pub established: bool,
    /// A side's draws fall into two modes and the change does not hold
    /// against each of them: no verdict (the draws, not the modules, decide
    /// the sign).
    #[serde(default)]
    pub two_modes: bool,
}

/// A gap between two groups of draws must be this many times wider than
/// the two groups' own ranges together to call them two modes …
const MODE_GAP_FACTOR: f64 = 4.0;
/// … and at least this wide, percent of the median (deterministic ops
/// repeat to hundredths of a percent; a tenth is not a mode).
const MIN_MODE_GAP_PCT: f64 = 0.5;

/// The draws split at their widest gap when they fall into two modes:
/// (the lower mode, the upper mode), each sorted; None for one mode or
/// fewer than three draws.
pub fn modes(draws: &[f64]) -> Option<(Vec<f64>, Vec<f64>)> {
    if draws.len() < 3 {
        return None;
    }
    let mut v = draws.to_vec();
    v.sort_by(f64::total_cmp);
    let (at, gap) = v
        .windows(2)
        .enumerate()
        .map(|(i, w)| (i + 1, w[1] - w[0]))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let (low, high) = v.split_at(at);
    let ranges = (low[low.len() - 1] - low[0]) + (high[high.len() - 1] - high[0]);
    let mid = median(&v);
    let wide = mid > 0.0 && gap / mid * 100.0 >= MIN_MODE_GAP_PCT;
    (wide && gap > MODE_GAP_FACTOR * ranges).then(|| (low.to_vec(), high.to_vec()))
}

/// Whether the change from `base` to `v` keeps its sign beyond the floor
/// against each mode of either side (a side of one mode is its own).
fn holds_in_each_mode(
    higher_is_better: bool,
    base: &[f64],
    v: &[f64],
    floor_pct: f64,
    pct: f64,
) -> bool {
    let split = |xs: &[f64]| match modes(xs) {
        Some((low, high)) => vec![low, high],
        None => vec![xs.to_vec()],
    };
    split(base).iter().all(|b| {
        split(v).iter().all(|x| {
            let p = overhead_pct(higher_is_better, median(b), median(x));
            p.signum() == pct.signum() && p.abs() > floor_pct
        })
    })
}

/// The smallest and the largest of `values` (±∞ reversed when empty).
pub fn extent(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(*x), hi.max(*x))
        })
}

/// (max − min) / min of the draws' figures, percent: how far a change of
/// layout alone moves this figure.
pub fn spread_pct(draws: &[f64]) -> f64 {
    let (min, max) = extent(draws);
    if draws.is_empty() || min <= 0.0 {
        return 0.0;
    }
    (max - min) / min * 100.0
}

/// The change from `base` to `v` (each a figure per draw); None unless the
/// baseline has at least two draws (one draw has no floor to judge
/// against). One draw of `v` is judged against the baseline's draws.
pub fn change(higher_is_better: bool, base: &[f64], v: &[f64]) -> Option<DrawnChange> {
    change_over_floor(higher_is_better, base, v, 0.0)
}

/// `change`, judged against `kernel_floor_pct` where it exceeds the
/// baseline's own spread: what the layout moves the op by on that kernel,
/// as the widest spread any configuration shows over its own draws (a
/// configuration adds work, not layout variance; five draws of the
/// baseline alone understate the floor).
pub fn change_over_floor(
    higher_is_better: bool,
    base: &[f64],
    v: &[f64],
    kernel_floor_pct: f64,
) -> Option<DrawnChange> {
    if base.len() < 2 || v.is_empty() {
        return None;
    }
    let pct = overhead_pct(higher_is_better, median(base), median(v));
    // Checked results give finite changes; anything else is no change to judge.
    if !pct.is_finite() {
        return None;
    }
    let (low_pct, high_pct, interval) = if base.len().min(v.len()) >= BOOTSTRAP_FROM {
        let (lo, hi) = bootstrap(higher_is_better, base, v);
        (lo, hi, Interval::Bootstrap95)
    } else {
        let pairs: Vec<f64> = base
            .iter()
            .flat_map(|b| {
                v.iter()
                    .map(move |x| overhead_pct(higher_is_better, *b, *x))
            })
            .collect();
        let (lo, hi) = extent(&pairs);
        (lo, hi, Interval::PairRange)
    };
    let floor_pct = spread_pct(base).max(kernel_floor_pct).max(MIN_FLOOR_PCT);
    let excludes_zero = low_pct > 0.0 || high_pct < 0.0;
    let over = excludes_zero && pct.abs() > floor_pct;
    let bimodal = modes(base).is_some() || modes(v).is_some();
    let two_modes = bimodal && !holds_in_each_mode(higher_is_better, base, v, floor_pct, pct);
    Some(DrawnChange {
        pct,
        low_pct,
        high_pct,
        interval,
        floor_pct,
        established: over && !two_modes,
        two_modes,
    })
}

/// The change from one draw `base` to one draw `v`, judged against the
/// kernel's committed floor for the op: established only when it exceeds
/// what a change of layout alone moved that op (its interval, the change ±
/// the floor, then excludes 0).
pub fn against_reference(
    higher_is_better: bool,
    base: f64,
    v: f64,
    reference_floor_pct: f64,
) -> Option<DrawnChange> {
    let pct = overhead_pct(higher_is_better, base, v);
    if !pct.is_finite() || !reference_floor_pct.is_finite() {
        return None;
    }
    let floor_pct = reference_floor_pct.max(MIN_FLOOR_PCT);
    Some(DrawnChange {
        pct,
        low_pct: pct - floor_pct,
        high_pct: pct + floor_pct,
        interval: Interval::ReferenceFloor,
        floor_pct,
        established: pct.abs() > floor_pct,
        two_modes: false,
    })
}

/// The 2.5th and 97.5th percentiles of the change of medians over
/// resamples of each side; a fixed generator, so a table repeats exactly.
fn bootstrap(higher_is_better: bool, base: &[f64], v: &[f64]) -> (f64, f64) {
    let mut rng = SplitMix64(0x6c73_6d70_6d6f_6e21);
    let mut resample = |xs: &[f64]| -> f64 {
        let picked: Vec<f64> = (0..xs.len())
            .map(|_| xs[(rng.next_u64() % xs.len() as u64) as usize])
            .collect();
        median(&picked)
    };
    let mut changes: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let (b, x) = (resample(base), resample(v));
            overhead_pct(higher_is_better, b, x)
        })
        .collect();
    changes.sort_by(f64::total_cmp);
    let at = |q: f64| changes[((q * (RESAMPLES - 1) as f64).round() as usize).min(RESAMPLES - 1)];
    (at(0.025), at(0.975))
}

/// Steele, Lea and Flood's SplitMix64: small, seedable, good enough to
/// pick resamples (and to draw tests' sample sets).
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// A uniform draw in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_baseline_draw_gives_no_verdict_and_one_draw_is_judged_against_the_floor() {
        assert_eq!(change(false, &[100.0], &[110.0, 111.0]), None);
        assert_eq!(change(false, &[100.0, 101.0], &[]), None);
        // Beyond every baseline draw and the floor: established.
        let c = change(false, &[100.0, 101.0, 102.0], &[110.0]).unwrap();
        assert!(c.established && c.interval == Interval::PairRange, "{c:?}");
        // Inside the baseline's spread: layout noise.
        let c = change(false, &[100.0, 101.0, 102.0], &[101.5]).unwrap();
        assert!(!c.established, "{c:?}");
    }

    #[test]
    fn one_draw_a_side_is_judged_against_the_committed_floor() {
        // 2 % slower against a floor of 0.8 %: established, interval ± floor.
        let c = against_reference(false, 100.0, 102.0, 0.8).unwrap();
        assert!(
            c.established && c.interval == Interval::ReferenceFloor,
            "{c:?}"
        );
        assert!((c.low_pct - 1.2).abs() < 1e-9 && (c.high_pct - 2.8).abs() < 1e-9);
        // The same change against a floor of 3 %: within it, no verdict.
        let c = against_reference(false, 100.0, 102.0, 3.0).unwrap();
        assert!(!c.established && c.low_pct < 0.0, "{c:?}");
        // A floor under virtual time's determinism is raised to it.
        let c = against_reference(false, 100.0, 100.3, 0.0).unwrap();
        assert!(!c.established && c.floor_pct == MIN_FLOOR_PCT, "{c:?}");
        // Bandwidth: less is slower.
        let c = against_reference(true, 100.0, 90.0, 1.0).unwrap();
        assert!(c.established && c.pct > 0.0, "{c:?}");
        assert!(against_reference(false, 0.0, 1.0, 1.0).is_none());
    }

    #[test]
    fn a_change_inside_the_layout_floor_is_not_established() {
        // The baseline's draws spread 6 %; a 3 % change whose draws all lie
        // above the baseline's median is still layout.
        let base = [100.0, 103.0, 106.0];
        let v = [104.0, 106.0, 108.0];
        let c = change(false, &base, &v).unwrap();
        assert!((c.floor_pct - 6.0).abs() < 1e-9, "{c:?}");
        // Draws that agree exactly still have virtual time's floor.
        let z = change(false, &[100.0, 100.0], &[100.1, 100.1]).unwrap();
        assert_eq!(z.floor_pct, MIN_FLOOR_PCT);
        assert!(!z.established, "{z:?}");
        assert!((c.pct - 2.912_621).abs() < 1e-3, "{c:?}");
        assert_eq!(c.interval, Interval::PairRange);
        assert!(c.low_pct < 0.0 && !c.established, "{c:?}");
    }

    #[test]
    fn a_speed_up_by_layout_alone_is_not_established() {
        // What issue 33 found on 6.12 delete_10k: −5.5 % from one draw, while
        // the baseline's own draws spread 16 %.
        let base = [17_269.0, 19_158.0, 16_500.0, 18_900.0, 19_100.0, 17_000.0];
        let v = [16_400.0, 18_800.0, 17_100.0, 16_900.0, 19_000.0, 16_600.0];
        let c = change(false, &base, &v).unwrap();
        assert_eq!(c.interval, Interval::Bootstrap95);
        assert!(c.pct < 0.0 && !c.established, "{c:?}");
        assert!(c.low_pct < 0.0 && c.high_pct > 0.0, "{c:?}");
    }

    #[test]
    fn the_kernels_floor_judges_where_the_baselines_draws_understate_it() {
        let base = [100.0, 100.5, 100.2, 100.4, 100.1];
        let v = [98.0, 98.2, 98.1, 98.3, 98.2];
        // Against the baseline's 0.5 % alone, −1.9 % is established …
        assert!(change(false, &base, &v).unwrap().established);
        // … but another configuration's draws spread 2.5 % on this kernel.
        let c = change_over_floor(false, &base, &v, 2.5).unwrap();
        assert!(!c.established && c.floor_pct == 2.5, "{c:?}");
    }

    #[test]
    fn a_real_overhead_is_established_with_an_interval_around_it() {
        let base = [4180.0, 4182.0, 4185.0, 4179.0, 4190.0];
        let v = [14_470.0, 14_480.0, 14_460.0, 14_500.0, 14_475.0];
        let c = change(false, &base, &v).unwrap();
        assert!(c.established, "{c:?}");
        assert!(c.low_pct <= c.pct && c.pct <= c.high_pct, "{c:?}");
        assert!(c.low_pct > 240.0 && c.high_pct < 250.0, "{c:?}");
        // Bandwidth: less of it is the overhead.
        let c = change(true, &[100.0, 101.0], &[50.0, 51.0]).unwrap();
        assert!(c.pct > 0.0 && c.established, "{c:?}");
        // The same inputs give the same interval (a table repeats exactly).
        assert_eq!(change(false, &base, &v), change(false, &base, &v));
    }

    #[test]
    fn draws_in_two_modes_are_found_and_one_mode_is_not() {
        // 7.3 udp `none` in the atlas: one draw in a faster mode.
        let (low, high) = modes(&[27.37, 27.36, 27.02, 27.35, 27.36]).unwrap();
        assert_eq!(low, [27.02]);
        assert_eq!(high, [27.35, 27.36, 27.36, 27.37]);
        // Draws spread evenly over 0.9 %: one mode.
        assert!(modes(&[6600.0, 6620.0, 6650.0, 6640.0, 6660.0]).is_none());
        // A deterministic op a tenth of a percent apart: not a mode.
        assert!(modes(&[1000.0, 1000.0, 1001.0, 1001.0]).is_none());
        assert!(modes(&[1.0, 2.0]).is_none());
    }

    #[test]
    fn a_change_that_one_mode_of_the_baseline_explains_has_no_verdict() {
        // What the atlas called an established IMA speed-up on 7.3 udp: it
        // is below the baseline's slower mode but not its faster one.
        let none = [27.37, 27.36, 27.02, 27.35, 27.36];
        let ima = [26.98, 26.99, 26.98, 26.98, 26.98];
        let c = change(false, &none, &ima).unwrap();
        assert!(c.two_modes && !c.established, "{c:?}");
        // A real overhead holds against both modes: it stays established.
        let tomoyo = [95.0, 95.1, 95.2, 95.0, 95.1];
        let c = change(false, &none, &tomoyo).unwrap();
        assert!(c.established && !c.two_modes, "{c:?}");
        // Two modes on the configuration's side count as well.
        let c = change(false, &ima, &none).unwrap();
        assert!(c.two_modes && !c.established, "{c:?}");
    }
}
