//! The comparison of [`super::compare()`] when a side is known only by its
//! summary — n, mean and standard deviation, as a harness that kept no
//! samples reports them (pytest-benchmark's saved runs).
//!
//! The ratio of geometric means and its Welch interval need the mean and
//! variance of the log values. From samples they are exact; from a summary
//! they are the log-normal ones with that mean and spread
//! (σ² = ln(1 + (sd/m)²), μ = ln m − σ²/2), which is how timings are
//! spread to a first approximation. Sides made of several parts (pooled
//! baseline experiments, some sampled, some summarised) are pooled by the
//! law of total variance. Pure arithmetic; it must not decide when a
//! summary is good enough, nor print.

pub use super::estimate::LogMoments;

use super::compare::{decide_moments, Comparison};
use super::metric::Direction;
use super::verdict::CONFIDENCE;

/// [`super::compare()`] on moments: the candidate's ratio to the baseline
/// with its 95 % Welch interval and verdict ([`super::compare::decide`]).
pub fn compare_moments(
    baseline: LogMoments,
    candidate: LogMoments,
    direction: Direction,
    noise_band: f64,
) -> Comparison {
    decide_moments(baseline, candidate, direction, noise_band, CONFIDENCE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{compare, Verdict};

    #[test]
    fn moments_of_samples_compare_exactly_as_the_samples_do() {
        let a = [10.0, 10.4, 9.8, 10.1, 10.2];
        let b = [11.0, 11.3, 10.9, 11.2];
        let got = compare_moments(
            LogMoments::of_samples(&a).unwrap(),
            LogMoments::of_samples(&b).unwrap(),
            Direction::LowerIsBetter,
            0.02,
        );
        assert_eq!(got, compare(&a, &b, Direction::LowerIsBetter, 0.02));
        assert_eq!(got.verdict, Verdict::Worse);
    }

    #[test]
    fn summaries_compare_as_log_normal_sides() {
        let m = LogMoments::of_summary(30, 100.0, 10.0).unwrap();
        // 30 rounds each, 20 % slower with 10 % spread: clearly worse.
        let slower = LogMoments::of_summary(30, 120.0, 12.0).unwrap();
        let c = compare_moments(m, slower, Direction::LowerIsBetter, 0.02);
        assert_eq!(c.verdict, Verdict::Worse);
        assert!((c.ratio.unwrap() - 1.2).abs() < 1e-9);
        // One round a side: a ratio, no interval.
        let one = LogMoments::of_summary(1, 100.0, 0.0).unwrap();
        let c = compare_moments(one, one, Direction::LowerIsBetter, 0.02);
        assert!(matches!(c.verdict, Verdict::NoInterval { .. }));
    }
}
