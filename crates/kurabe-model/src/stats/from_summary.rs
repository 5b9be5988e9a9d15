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

use super::compare::{judge, Comparison};
use super::metric::Direction;
use super::student_t;
use super::summary::{logs, mean, sample_variance};
use super::verdict::{NoIntervalReason, Verdict, CONFIDENCE, MIN_RUNS};

/// One side's log values, by their moments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogMoments {
    /// How many values.
    pub n: f64,
    /// Mean of their logs.
    pub mean: f64,
    /// Sample variance of their logs (0 for a single value).
    pub variance: f64,
}

impl LogMoments {
    /// The exact moments of `samples`; `None` when one is ≤ 0 or there are none.
    pub fn of_samples(samples: &[f64]) -> Option<LogMoments> {
        let l = logs(samples).filter(|l| !l.is_empty())?;
        Some(LogMoments {
            n: l.len() as f64,
            mean: mean(&l),
            variance: sample_variance(&l).unwrap_or(0.0),
        })
    }

    /// The log-normal moments of `n` values with this mean and standard
    /// deviation; `None` when the mean is not positive or n is 0.
    pub fn of_summary(n: u64, mean: f64, stddev: f64) -> Option<LogMoments> {
        if n == 0 || !mean.is_finite() || mean <= 0.0 || !stddev.is_finite() {
            return None;
        }
        let variance = (1.0 + (stddev / mean).powi(2)).ln();
        Some(LogMoments {
            n: n as f64,
            mean: mean.ln() - variance / 2.0,
            variance,
        })
    }

    /// Several parts as one side: their values together.
    pub fn pool(parts: &[LogMoments]) -> Option<LogMoments> {
        let n: f64 = parts.iter().map(|p| p.n).sum();
        if parts.is_empty() || n <= 0.0 {
            return None;
        }
        let m = parts.iter().map(|p| p.n * p.mean).sum::<f64>() / n;
        let ss: f64 = parts
            .iter()
            .map(|p| (p.n - 1.0).max(0.0) * p.variance + p.n * (p.mean - m).powi(2))
            .sum();
        let variance = if n > 1.0 { ss / (n - 1.0) } else { 0.0 };
        Some(LogMoments {
            n,
            mean: m,
            variance,
        })
    }
}

/// [`super::compare()`] on moments: the candidate's ratio to the baseline
/// with its 95 % Welch interval and verdict.
pub fn compare_moments(
    baseline: LogMoments,
    candidate: LogMoments,
    direction: Direction,
    noise_band: f64,
) -> Comparison {
    let d = candidate.mean - baseline.mean;
    let (nb, nc) = (baseline.n, candidate.n);
    let mut c = Comparison {
        ratio: Some(d.exp()),
        ratio_low: None,
        ratio_high: None,
        degrees_of_freedom: None,
        noise_band,
        verdict: Verdict::NoInterval {
            reason: NoIntervalReason::TooFewRuns {
                baseline_runs: nb as usize,
                candidate_runs: nc as usize,
            },
        },
        difference: None,
    };
    if nb < MIN_RUNS as f64 || nc < MIN_RUNS as f64 {
        return c;
    }
    let (eb, ec) = (baseline.variance / nb, candidate.variance / nc);
    let df = if eb + ec > 0.0 {
        (eb + ec).powi(2) / (eb * eb / (nb - 1.0) + ec * ec / (nc - 1.0))
    } else {
        nb + nc - 2.0
    };
    let t = student_t::quantile(0.5 + CONFIDENCE / 2.0, df);
    let se = (eb + ec).sqrt();
    let (low, high) = ((d - t * se).exp(), (d + t * se).exp());
    let cv = ((baseline.variance + candidate.variance) / 2.0).sqrt();
    c.ratio_low = Some(low);
    c.ratio_high = Some(high);
    c.degrees_of_freedom = Some(df);
    c.verdict = judge(low, high, direction, noise_band, cv, nb.max(nc) as usize);
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::compare;

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
    fn pooling_parts_gives_the_moments_of_all_values() {
        let all = [1.0, 2.0, 4.0, 3.0, 5.0];
        let parts: Vec<LogMoments> = [&all[..2], &all[2..3], &all[3..]]
            .iter()
            .map(|p| LogMoments::of_samples(p).unwrap())
            .collect();
        let pooled = LogMoments::pool(&parts).unwrap();
        let exact = LogMoments::of_samples(&all).unwrap();
        assert_eq!(pooled.n, exact.n);
        assert!((pooled.mean - exact.mean).abs() < 1e-12);
        assert!((pooled.variance - exact.variance).abs() < 1e-12);
    }

    #[test]
    fn a_summary_reads_as_a_log_normal_side() {
        // Mean 100, sd 10: σ² = ln 1.01, μ = ln 100 − σ²/2.
        let m = LogMoments::of_summary(30, 100.0, 10.0).unwrap();
        assert!((m.variance - 1.01f64.ln()).abs() < 1e-12);
        assert!((m.mean - (100f64.ln() - 1.01f64.ln() / 2.0)).abs() < 1e-12);
        assert_eq!(LogMoments::of_summary(0, 1.0, 0.0), None);
        assert_eq!(LogMoments::of_summary(5, 0.0, 0.0), None);
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
