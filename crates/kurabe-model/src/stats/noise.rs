//! A workload's noise from an A/A experiment: the run-to-run spread, the
//! drift over the run, and what an experiment of a given size could
//! detect with that spread (`kurabe noise`).
//!
//! Nothing here is a second statistics engine: the detectable change of
//! an experiment of n runs a side is [`super::power::detectable_change_pct`]
//! of the Welch estimate ([`LogEstimate::welch`]) two sides of n runs with
//! the measured log spread would give, the very estimate every verdict is
//! read from; the spread is [`Summary`]'s CV beside a median absolute
//! deviation, the drift [`super::trend::least_squares`] on the logs in run
//! order. Owns those three readings and the rounding of a suggested band.
//! Pure arithmetic, no I/O; it must not word anything.

use super::estimate::{LogEstimate, LogMoments};
use super::power::detectable_change_pct;
use super::summary::{logs, Summary};
use super::trend::{least_squares, Point};
use super::verdict::{CONFIDENCE, MIN_RUNS};

/// 1 / Φ⁻¹(3/4): scales a median absolute deviation to the standard
/// deviation a normal spread with that MAD has.
const MAD_TO_SD: f64 = 1.482_602_2;

/// How one metric's values spread and moved over an A/A run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// Runs read.
    pub runs: usize,
    /// Mean value.
    pub mean: f64,
    /// Coefficient of variation, percent.
    pub cv_pct: Option<f64>,
    /// 1.4826 · MAD / median, percent.
    pub robust_pct: Option<f64>,
    /// Fitted change from the first run to the last, with its 95 %
    /// interval, percent.
    pub drift_pct: Option<(f64, f64, f64)>,
    /// Variance of one run's log value within a side (the two sides
    /// pooled), what an experiment's interval is built from.
    pub log_variance: Option<f64>,
}

/// The spread of `in_order` (every run's value, both sides, in run
/// order) and of each side (`sides`); `None` without values.
pub fn spread(in_order: &[f64], sides: [&[f64]; 2]) -> Option<Spread> {
    let summary = Summary::of(in_order)?;
    Some(Spread {
        runs: summary.n,
        mean: summary.mean,
        cv_pct: summary.cv.map(|c| c * 100.0),
        robust_pct: robust_spread(in_order, summary.median),
        drift_pct: drift(in_order),
        log_variance: within_sides(sides),
    })
}

/// 1.4826 · MAD / median in percent; `None` for a median of 0.
fn robust_spread(xs: &[f64], median: f64) -> Option<f64> {
    if median == 0.0 {
        return None;
    }
    let deviations: Vec<f64> = xs.iter().map(|x| (x - median).abs()).collect();
    let mad = Summary::of(&deviations)?.median;
    Some(MAD_TO_SD * mad / median.abs() * 100.0)
}

/// The change along a least-squares line through the logs in run order,
/// from the first run to the last, in percent with its 95 % interval.
fn drift(in_order: &[f64]) -> Option<(f64, f64, f64)> {
    let points: Vec<Point> = logs(in_order)?
        .into_iter()
        .enumerate()
        .map(|(i, y)| Point { x: i as f64, y })
        .collect();
    let fit = least_squares(&points)?;
    let span = (points.len() - 1) as f64;
    let pct = |slope: f64| (slope * span).exp_m1() * 100.0;
    Some((pct(fit.slope), pct(fit.slope_low), pct(fit.slope_high)))
}

/// The two sides' log variances pooled; `None` when a value is ≤ 0 or a
/// side has fewer than 2 runs.
fn within_sides(sides: [&[f64]; 2]) -> Option<f64> {
    let [a, b] = sides.map(LogMoments::of_samples);
    let (a, b) = (a?, b?);
    if a.n < 2.0 || b.n < 2.0 {
        return None;
    }
    let pooled = ((a.n - 1.0) * a.variance + (b.n - 1.0) * b.variance) / (a.n + b.n - 2.0);
    Some(pooled)
}

/// The smallest change, percent, an experiment of `runs` runs a side
/// detects when one run's log value has `log_variance` (95 %, 80 % power):
/// the detectable change of the Welch estimate two such sides give.
/// `None` below 3 runs, and for a metric that did not vary at all (a count
/// that was the same every run): it has no smallest change to state.
pub fn detectable_at(log_variance: f64, runs: u32) -> Option<f64> {
    if (runs as usize) < MIN_RUNS || log_variance <= 0.0 {
        return None;
    }
    let side = LogMoments {
        n: f64::from(runs),
        mean: 0.0,
        variance: log_variance,
    };
    let estimate = LogEstimate::welch(side, side);
    Some(detectable_change_pct(&estimate, CONFIDENCE))
}

/// The fewest runs a side, from `from` up to `most`, at which the
/// detectable change is at most `band` (a fraction); `None` when even
/// `most` is not enough.
pub fn runs_for_band(log_variance: f64, band: f64, from: u32, most: u32) -> Option<u32> {
    let from = from.max(MIN_RUNS as u32);
    if log_variance <= 0.0 {
        // A metric that did not vary needs no more runs than the fewest.
        return (most >= from).then_some(from);
    }
    let enough = |n: u32| detectable_at(log_variance, n).is_some_and(|d| d <= band * 100.0);
    if most < from || !enough(most) {
        return None;
    }
    // The detectable change falls as runs grow: the first n that is enough.
    let (mut lo, mut hi) = (from, most);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if enough(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(lo)
}

/// A detectable change in percent rounded up to a band one would write:
/// 0.1 % steps below 1 %, 0.5 % steps below 5 %, whole percents above;
/// as a fraction (0.02 = 2 %).
pub fn band_rounded_up(detectable_pct: f64) -> f64 {
    let step = if detectable_pct < 1.0 {
        0.1
    } else if detectable_pct < 5.0 {
        0.5
    } else {
        1.0
    };
    // A hair off a step (1.5000000002 from floating point) is that step.
    let steps = (detectable_pct / step - 1e-9).ceil().max(1.0);
    (steps * step * 1e6).round() / 1e8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_reads_the_cv_the_robust_spread_and_no_drift_of_a_flat_series() {
        let xs = [10.0, 11.0, 9.0, 10.0, 11.0, 9.0, 10.0, 100.0];
        let s = spread(&xs, [&xs[..4], &xs[4..]]).unwrap();
        assert_eq!(s.runs, 8);
        // The outlier inflates the CV; the MAD (median 10, deviations
        // 0 0 0 1 1 1 1 90 → 1) does not notice it.
        assert!(s.cv_pct.unwrap() > 100.0, "{s:?}");
        let robust = s.robust_pct.unwrap();
        assert!((robust - 14.826).abs() < 1e-3, "{robust}");
        let flat = [5.0, 5.0, 5.0, 5.0];
        let (d, lo, hi) = spread(&flat, [&flat[..2], &flat[2..]])
            .unwrap()
            .drift_pct
            .unwrap();
        assert!(d.abs() < 1e-9 && lo <= d && d <= hi);
    }

    /// A series that rises 1 % per run over 11 runs drifts by e^(10·ln 1.01) − 1 = 10.46 %.
    #[test]
    fn drift_is_the_fitted_change_from_first_to_last() {
        let xs: Vec<f64> = (0..11).map(|i| 100.0 * 1.01f64.powi(i)).collect();
        let (d, lo, hi) = drift(&xs).unwrap();
        assert!((d - 10.462).abs() < 1e-2, "{d}");
        assert!(lo <= d && d <= hi);
        assert!(drift(&[1.0, 0.0, 2.0]).is_none(), "no log of 0");
    }

    /// The sides' own variances are pooled; a level between the sides
    /// (which interleaving spreads over both) is not counted twice.
    #[test]
    fn within_sides_pools_the_two_variances() {
        let a = [1.0, std::f64::consts::E];
        let b = [1.0, std::f64::consts::E];
        // Logs 0 and 1: variance 0.5 each.
        assert!((within_sides([&a, &b]).unwrap() - 0.5).abs() < 1e-12);
        assert!(within_sides([&a, &[1.0]]).is_none());
        assert!(within_sides([&a, &[0.0, 1.0]]).is_none());
    }

    /// With 16·(CV/δ)² runs a side the detectable change is about the
    /// band (Lehr's rule, see power.rs); fewer runs detect less.
    #[test]
    fn runs_for_the_band_agree_with_lehr() {
        let (cv, band) = (0.05f64, 0.02f64);
        let n = runs_for_band(cv * cv, band, 3, 10_000).unwrap();
        assert!((95..=106).contains(&n), "{n}");
        assert!(detectable_at(cv * cv, n).unwrap() <= 2.0);
        assert!(detectable_at(cv * cv, n - 1).unwrap() > 2.0);
        assert_eq!(
            runs_for_band(cv * cv, band, 3, 50),
            None,
            "50 are not enough"
        );
        assert_eq!(
            runs_for_band(1e-8, band, 5, 50),
            Some(5),
            "never below from"
        );
        assert_eq!(detectable_at(cv * cv, 2), None, "no interval below 3 runs");
    }

    #[test]
    fn bands_round_up_to_steps_one_would_write() {
        assert_eq!(band_rounded_up(0.03), 0.001);
        assert_eq!(band_rounded_up(0.42), 0.005);
        assert_eq!(band_rounded_up(1.0), 0.01);
        assert_eq!(band_rounded_up(1.2), 0.015);
        assert_eq!(band_rounded_up(4.9), 0.05);
        assert_eq!(band_rounded_up(7.3), 0.08);
    }
}
