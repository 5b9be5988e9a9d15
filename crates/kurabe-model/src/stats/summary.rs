//! Summary of one variant's samples of one metric.
//!
//! Owns the descriptive numbers a report shows per variant: n, mean, median,
//! geometric mean, standard deviation, coefficient of variation, min and max.
//! It must not judge or compare; that is [`super::compare()`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Descriptive statistics of a set of samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (mean of the two middle values for an even count).
    pub median: f64,
    /// Geometric mean; `None` when a sample is zero or negative (the log is undefined).
    #[schemars(required, transform = crate::schema::nullable)]
    pub geometric_mean: Option<f64>,
    /// Sample standard deviation (n − 1 denominator); `None` with fewer than 2 samples.
    #[schemars(required, transform = crate::schema::nullable)]
    pub stdev: Option<f64>,
    /// Coefficient of variation, `stdev / |mean|`; `None` without a stdev or with a zero mean.
    #[schemars(required, transform = crate::schema::nullable)]
    pub cv: Option<f64>,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
}

impl Summary {
    /// Summarise `samples`; `None` when there are none or one is not finite
    /// (a NaN or infinity is a bug upstream, not a measurement).
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let n = samples.len();
        let mean = mean(samples);
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        let stdev = sample_stdev(samples);
        let cv = stdev.filter(|_| mean != 0.0).map(|s| s / mean.abs());
        Some(Summary {
            n,
            mean,
            median,
            geometric_mean: geometric_mean(samples),
            stdev,
            cv,
            min: sorted[0],
            max: sorted[n - 1],
        })
    }
}

/// Arithmetic mean of a non-empty slice.
pub(crate) fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample variance (n − 1 denominator); `None` with fewer than 2 values.
pub(crate) fn sample_variance(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let m = mean(xs);
    // Two-pass formula: subtracting the mean first avoids the cancellation
    // of the textbook Σx² − n·m² form on large, close values (req/s ~ 1e5).
    let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    Some(ss / (xs.len() - 1) as f64)
}

/// Sample standard deviation; `None` with fewer than 2 values.
pub(crate) fn sample_stdev(xs: &[f64]) -> Option<f64> {
    sample_variance(xs).map(f64::sqrt)
}

/// Natural logs of the values, `None` if any is not strictly positive.
pub(crate) fn logs(xs: &[f64]) -> Option<Vec<f64>> {
    xs.iter()
        .map(|&x| (x > 0.0 && x.is_finite()).then(|| x.ln()))
        .collect()
}

/// Geometric mean, computed through logs so large products cannot overflow.
pub(crate) fn geometric_mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    logs(xs).map(|l| mean(&l).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn summary_of_hand_computed_set() {
        // mean 5, deviations² sum = 32, sample variance 32/7, stdev 2.138089935
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        assert!(close(s.mean, 5.0));
        assert!(close(s.median, 4.5));
        assert!(close(s.stdev.unwrap(), (32.0f64 / 7.0).sqrt()));
        assert!(close(s.cv.unwrap(), (32.0f64 / 7.0).sqrt() / 5.0));
        assert_eq!((s.min, s.max), (2.0, 9.0));
        // (2·4·4·4·5·5·7·9)^(1/8) = 201600^(1/8)
        assert!(close(s.geometric_mean.unwrap(), 201600f64.powf(0.125)));
    }

    #[test]
    fn odd_count_median_is_middle_value_regardless_of_order() {
        let s = Summary::of(&[9.0, 1.0, 3.0]).unwrap();
        assert_eq!(s.median, 3.0);
        assert!(close(s.geometric_mean.unwrap(), 3.0));
    }

    #[test]
    fn single_sample_has_no_spread() {
        let s = Summary::of(&[42.0]).unwrap();
        assert_eq!(s.n, 1);
        assert_eq!(s.median, 42.0);
        assert_eq!(s.stdev, None);
        assert_eq!(s.cv, None);
    }

    #[test]
    fn zero_or_negative_sample_has_no_geometric_mean() {
        assert_eq!(Summary::of(&[0.0, 1.0]).unwrap().geometric_mean, None);
        assert_eq!(Summary::of(&[-1.0, 1.0]).unwrap().geometric_mean, None);
    }

    #[test]
    fn zero_mean_has_no_cv() {
        let s = Summary::of(&[-1.0, 1.0]).unwrap();
        assert_eq!(s.mean, 0.0);
        assert!(s.stdev.is_some());
        assert_eq!(s.cv, None);
    }

    #[test]
    fn empty_or_non_finite_is_rejected() {
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[1.0, f64::NAN]), None);
        assert_eq!(Summary::of(&[f64::INFINITY]), None);
    }

    #[test]
    fn variance_is_stable_for_large_close_values() {
        // Naive Σx² − n·m² loses all digits here; the two-pass form does not.
        let base = 1e9;
        let s = Summary::of(&[base + 4.0, base + 7.0, base + 13.0, base + 16.0]).unwrap();
        assert!(close(s.stdev.unwrap().powi(2), 30.0));
    }

    #[test]
    fn geometric_mean_does_not_overflow() {
        let g = geometric_mean(&[1e200, 1e200, 1e200]).unwrap();
        assert!((g / 1e200 - 1.0).abs() < 1e-12);
    }
}
