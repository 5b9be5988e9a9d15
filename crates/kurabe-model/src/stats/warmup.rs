//! Where a run's time series settles: warm-up found rather than guessed.
//!
//! Barrett et al. ("Virtual machine warmup blows hot and cold", OOPSLA
//! 2017) found that only about half of benchmark runs warm up the way tools
//! assume. So instead of trusting a plan's `warmup`, the series a run
//! sampled (CPU % of the target, per sampling interval) is searched with
//! the same change-point method as a history ([`super::changepoint`]:
//! E-divisive means with a permutation test), each sample its own group.
//! Changes whose segments do not differ beyond the noise band are ignored.
//! The series has settled at the last change when the segment after it
//! holds at least a quarter of the samples (a steady state); a change later
//! than that is reported as no steady state.
//!
//! Pure: no I/O; the permutations are seeded.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::changepoint::{e_divisive, Config};
use super::metric::Direction;
use super::summary::mean;
use super::Verdict;

/// Fewest samples a series needs before its settling is judged.
pub const MIN_SAMPLES: usize = 8;

/// Where a series settles.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Settling {
    /// Seconds from the series' start to its last change beyond the noise
    /// band (0: flat from the start).
    pub settled_at_s: f64,
    /// False when the last change comes in the last quarter of the series:
    /// no steady state was seen.
    pub steady: bool,
    /// Changes beyond the noise band found.
    pub changes: usize,
}

/// Where the series `values` (sampled at `times_s`) settles; `None` for
/// fewer than [`MIN_SAMPLES`] samples.
pub fn settling(times_s: &[f64], values: &[f64], noise_band: f64) -> Option<Settling> {
    let n = values.len().min(times_s.len());
    if n < MIN_SAMPLES {
        return None;
    }
    let groups: Vec<Vec<f64>> = values[..n].iter().map(|v| vec![*v]).collect();
    let config = Config {
        min_segment: (n / 10).max(2),
        ..Config::default()
    };
    let changes = e_divisive(&groups, Direction::LowerIsBetter, noise_band, &config);
    let mut real: Vec<usize> = changes
        .iter()
        .filter(|c| beyond_band(c.comparison.verdict, &values[..n], c.index, noise_band))
        .map(|c| c.index)
        .collect();
    real.sort_unstable();
    let Some(&last) = real.last() else {
        return Some(Settling {
            settled_at_s: 0.0,
            steady: true,
            changes: 0,
        });
    };
    Some(Settling {
        settled_at_s: times_s[last],
        steady: (n - last) * 4 >= n,
        changes: real.len(),
    })
}

/// A change counts when its verdict clears the band, or (no interval: a
/// value ≤ 0, as CPU % at idle) when the means either side differ by more
/// than the band.
fn beyond_band(verdict: Verdict, values: &[f64], at: usize, band: f64) -> bool {
    match verdict {
        Verdict::Better | Verdict::Worse => true,
        Verdict::NoInterval { .. } => {
            let (before, after) = (mean(&values[..at]), mean(&values[at..]));
            let scale = before.abs().max(after.abs());
            scale > 0.0 && (after - before).abs() / scale > band
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` samples 0.1 s apart: `f(i)` with a deterministic ±`noise` wobble.
    fn series(n: usize, noise: f64, f: impl Fn(usize) -> f64) -> (Vec<f64>, Vec<f64>) {
        let times = (0..n).map(|i| i as f64 * 0.1).collect();
        let values = (0..n)
            .map(|i| {
                let h = (i as u64 + 1)
                    .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                    .rotate_left(29);
                let wobble = (h >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                f(i) * (1.0 + noise * wobble)
            })
            .collect();
        (times, values)
    }

    #[test]
    fn a_flat_series_is_settled_from_the_start() {
        let (t, v) = series(60, 0.04, |_| 50.0);
        let s = settling(&t, &v, 0.05).unwrap();
        assert_eq!(s.settled_at_s, 0.0);
        assert!(s.steady);
        assert_eq!(s.changes, 0);
    }

    #[test]
    fn a_warm_up_step_is_found_where_it_ends() {
        // JIT-like: slow (high CPU per unit) for 2 s, then settled.
        let (t, v) = series(80, 0.04, |i| if i < 20 { 90.0 } else { 40.0 });
        let s = settling(&t, &v, 0.05).unwrap();
        assert!((s.settled_at_s - 2.0).abs() <= 0.21, "{s:?}");
        assert!(s.steady);
    }

    #[test]
    fn a_gradual_warm_up_settles_near_its_end() {
        let (t, v) = series(100, 0.03, |i| 40.0 + 60.0 * (-(i as f64) / 8.0).exp());
        let s = settling(&t, &v, 0.05).unwrap();
        assert!(s.settled_at_s > 0.5 && s.settled_at_s < 4.0, "{s:?}");
        assert!(s.steady);
    }

    #[test]
    fn a_late_change_is_no_steady_state() {
        let (t, v) = series(80, 0.04, |i| if i < 72 { 40.0 } else { 90.0 });
        let s = settling(&t, &v, 0.05).unwrap();
        assert!(!s.steady, "{s:?}");
    }

    #[test]
    fn idle_zeros_after_busy_samples_count_as_a_change() {
        let (t, v) = series(40, 0.0, |i| if i < 10 { 100.0 } else { 0.0 });
        let s = settling(&t, &v, 0.05).unwrap();
        assert!((s.settled_at_s - 1.0).abs() <= 0.21, "{s:?}");
    }

    #[test]
    fn short_series_are_not_judged() {
        assert_eq!(settling(&[0.0, 0.1], &[1.0, 2.0], 0.05), None);
    }
}
