//! The log-scale estimate every ratio verdict is read from: one side's
//! log values by their moments ([`LogMoments`]), and the Welch estimate of
//! candidate / baseline built from two of them ([`LogEstimate`]).
//!
//! Samples, harness summaries (pytest-benchmark keeps n, mean and sd),
//! pooled history and `kurabe system`'s passes all become a
//! [`LogEstimate`]; [`super::compare::decide`] turns it into the ratio,
//! its interval and the verdict. Owns the moments and the Welch
//! arithmetic (standard error, Welch–Satterthwaite degrees of freedom);
//! must not read an interval against a band or word anything. Pure
//! arithmetic, no I/O.

use super::summary::{logs, mean, sample_variance};

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
        logs(samples).and_then(|l| LogMoments::of_logs(&l))
    }

    /// The moments of values already on the log scale; `None` for none.
    pub fn of_logs(logs: &[f64]) -> Option<LogMoments> {
        (!logs.is_empty()).then(|| LogMoments {
            n: logs.len() as f64,
            mean: mean(logs),
            variance: sample_variance(logs).unwrap_or(0.0),
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

/// ln(candidate / baseline) with what its interval and verdict need.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogEstimate {
    /// Mean log of the candidate − mean log of the baseline.
    pub log_ratio: f64,
    /// Variance of `log_ratio` (the squared standard error).
    pub variance: f64,
    /// Degrees of freedom of the t quantile.
    pub df: f64,
    /// Spread of one run's log value (≈ the CV of the raw values), for
    /// the runs an inconclusive verdict needs.
    pub spread: f64,
    /// Runs per variant so far (the larger side).
    pub runs: usize,
}

impl LogEstimate {
    /// Welch's estimate of `candidate` against `baseline`: unequal
    /// variances and sizes, Welch–Satterthwaite degrees of freedom.
    pub fn welch(baseline: LogMoments, candidate: LogMoments) -> LogEstimate {
        let (nb, nc) = (baseline.n, candidate.n);
        let (eb, ec) = (baseline.variance / nb, candidate.variance / nc);
        // With no spread on either side the formula is 0/0; the interval
        // is then a point and df only matters for reporting.
        let df = if eb + ec > 0.0 {
            (eb + ec).powi(2) / (eb * eb / (nb - 1.0) + ec * ec / (nc - 1.0))
        } else {
            nb + nc - 2.0
        };
        LogEstimate {
            log_ratio: candidate.mean - baseline.mean,
            variance: eb + ec,
            df,
            // Pooled spread of the logs ≈ the CV of the raw values.
            spread: ((baseline.variance + candidate.variance) / 2.0).sqrt(),
            runs: nb.max(nc) as usize,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(LogMoments::of_samples(&[1.0, 0.0]), None);
        assert_eq!(LogMoments::of_samples(&[]), None);
    }

    /// Logs {0, 1, 2} against {1, 2, 3}: means 1 and 2, variances 1 and 1,
    /// variance of the difference 1/3 + 1/3, df (2/3)² / (2·(1/3)²/2) = 4.
    #[test]
    fn welch_by_hand() {
        let b = LogMoments::of_logs(&[0.0, 1.0, 2.0]).unwrap();
        let c = LogMoments::of_logs(&[1.0, 2.0, 3.0]).unwrap();
        let e = LogEstimate::welch(b, c);
        assert!((e.log_ratio - 1.0).abs() < 1e-12);
        assert!((e.variance - 2.0 / 3.0).abs() < 1e-12);
        assert!((e.df - 4.0).abs() < 1e-12);
        assert!((e.spread - 1.0).abs() < 1e-12);
        assert_eq!(e.runs, 3);
    }
}
