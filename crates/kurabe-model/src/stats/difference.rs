//! Compare a candidate against the baseline by the *difference* of means,
//! for metrics whose values may be zero or negative — a soak run's memory
//! slope (bytes/request) is the one kurabe has.
//!
//! Why not the ratio of geometric means that [`super::compare()`] gives every
//! other metric: the ratio needs logs, and a server that does not leak has
//! a slope scattered around 0 (−1.6 to +2.6 B/request over 10 runs of
//! `kurabe serve`), so "candidate / baseline" is undefined or meaningless
//! exactly when the question is most common — "does B leak where A does
//! not?". The difference is defined for every value and has the unit
//! people think in ("+1 056 B/request"). So:
//!
//! - **estimate**: mean(candidate) − mean(baseline) of the per-run slopes;
//! - **interval**: 95 % Welch t interval on that difference (unequal
//!   variances: a leaking variant's slopes spread by a few B/request, a
//!   flat one's by less), the same interval [`super::compare()`] puts on the
//!   log scale, here on the raw scale;
//! - **verdict** against an *absolute* band ±δ in the metric's unit (a
//!   relative band means nothing around 0): growing faster (worse) when the
//!   whole interval is above +δ, slower (better) when below −δ, within
//!   noise when inside [−δ, +δ], otherwise inconclusive with Lehr's
//!   n ≈ 16·(s/δ)² runs per variant; fewer than 3 runs a side: no interval.
//!
//! The default bands live with the soak metrics in
//! [`super::trend::difference_scale`]. Pure arithmetic, no I/O.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::metric::Direction;
use super::student_t;
use super::summary::{mean, sample_variance};
use super::verdict::{read_interval, runs_needed, NoIntervalReason, Verdict, CONFIDENCE, MIN_RUNS};

/// Candidate minus baseline on the metric's own scale.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct Difference {
    /// Mean of the candidate − mean of the baseline, in the metric's unit.
    pub difference: f64,
    /// Lower end of the 95 % Welch interval of the difference.
    #[schemars(required, transform = crate::schema::nullable)]
    pub difference_low: Option<f64>,
    /// Upper end of the 95 % Welch interval of the difference.
    #[schemars(required, transform = crate::schema::nullable)]
    pub difference_high: Option<f64>,
    /// Welch–Satterthwaite degrees of freedom of that interval.
    #[schemars(required, transform = crate::schema::nullable)]
    pub difference_degrees_of_freedom: Option<f64>,
    /// The absolute noise band ±δ the verdict was judged against, in the metric's unit.
    pub difference_noise_band: f64,
}

/// The difference of means of `candidate` and `baseline`, its 95 % Welch
/// interval and the verdict against ±`band` (absolute, in the metric's
/// unit); `None` when a side has no finite value.
pub fn compare_difference(
    baseline: &[f64],
    candidate: &[f64],
    direction: Direction,
    band: f64,
) -> Option<(Difference, Verdict)> {
    compare_difference_at(baseline, candidate, direction, band, CONFIDENCE)
}

/// [`compare_difference`] with an interval at `confidence` instead of [`CONFIDENCE`].
pub fn compare_difference_at(
    baseline: &[f64],
    candidate: &[f64],
    direction: Direction,
    band: f64,
    confidence: f64,
) -> Option<(Difference, Verdict)> {
    let finite = |s: &[f64]| -> Vec<f64> { s.iter().copied().filter(|x| x.is_finite()).collect() };
    let (b, c) = (finite(baseline), finite(candidate));
    if b.is_empty() || c.is_empty() {
        return None;
    }
    let d = mean(&c) - mean(&b);
    let mut out = Difference {
        difference: d,
        difference_low: None,
        difference_high: None,
        difference_degrees_of_freedom: None,
        difference_noise_band: band,
    };
    if b.len() < MIN_RUNS || c.len() < MIN_RUNS {
        let reason = NoIntervalReason::TooFewRuns {
            baseline_runs: b.len(),
            candidate_runs: c.len(),
        };
        return Some((out, Verdict::NoInterval { reason }));
    }
    let (nb, nc) = (b.len() as f64, c.len() as f64);
    let (vb, vc) = (
        sample_variance(&b).unwrap_or(0.0),
        sample_variance(&c).unwrap_or(0.0),
    );
    let (eb, ec) = (vb / nb, vc / nc);
    let df = if eb + ec > 0.0 {
        (eb + ec).powi(2) / (eb * eb / (nb - 1.0) + ec * ec / (nc - 1.0))
    } else {
        nb + nc - 2.0
    };
    let half = student_t::quantile(0.5 + confidence / 2.0, df) * (eb + ec).sqrt();
    let (low, high) = (d - half, d + half);
    out.difference_low = Some(low);
    out.difference_high = Some(high);
    out.difference_degrees_of_freedom = Some(df);
    let sd = ((vb + vc) / 2.0).sqrt();
    let verdict = judge_difference(low, high, direction, band, sd, b.len().max(c.len()));
    Some((out, verdict))
}

/// Read an interval of the difference against [−δ, +δ]; `sd` (pooled
/// standard deviation of the values) and `runs` feed the runs-needed
/// estimate of an inconclusive verdict.
pub fn judge_difference(
    low: f64,
    high: f64,
    direction: Direction,
    band: f64,
    sd: f64,
    runs: usize,
) -> Verdict {
    read_interval(low, high, (-band, band), direction, || {
        runs_needed(sd, band, runs)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::trend::{analyse, Point, TrendConfig};
    use Direction::LowerIsBetter as Lo;

    /// Per-run Theil–Sen slopes of synthetic soak series: `runs` series
    /// of 300 samples, `leak` bytes per request on a 20 MB heap with a
    /// GC-like sawtooth and ±200 kB of deterministic noise.
    fn slopes(runs: u64, leak: f64) -> Vec<f64> {
        (1..=runs)
            .map(|seed| {
                let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                let pts: Vec<Point> = (0..300)
                    .map(|i| {
                        s ^= s << 13;
                        s ^= s >> 7;
                        s ^= s << 17;
                        let noise = (s >> 11) as f64 / (1u64 << 52) as f64 - 1.0;
                        let x = f64::from(i) * 100.0;
                        let saw = f64::from(i % 23) * 150_000.0;
                        Point {
                            x,
                            y: 20e6 + leak * x + saw + 200_000.0 * noise,
                        }
                    })
                    .collect();
                analyse(&pts, &TrendConfig::default())
                    .unwrap()
                    .bytes_per_request()
            })
            .collect()
    }

    #[test]
    fn a_leak_against_a_flat_baseline_grows_faster() {
        let (flat, leak) = (slopes(5, 0.0), slopes(5, 1024.0));
        assert!(flat.iter().any(|s| *s <= 0.0) || flat.iter().all(|s| s.abs() < 40.0));
        let (d, v) = compare_difference(&flat, &leak, Lo, 16.0).unwrap();
        assert_eq!(v, Verdict::Worse, "{d:?}");
        assert!((d.difference - 1024.0).abs() < 40.0, "{d:?}");
        let (lo, hi) = (d.difference_low.unwrap(), d.difference_high.unwrap());
        assert!(lo < d.difference && d.difference < hi && lo > 16.0);
        // The other way round it grows slower: better.
        let (d, v) = compare_difference(&leak, &flat, Lo, 16.0).unwrap();
        assert_eq!(v, Verdict::Better);
        assert!(d.difference < -1000.0);
    }

    #[test]
    fn two_flat_variants_are_within_noise() {
        let (a, b) = (slopes(6, 0.0), slopes(6, 0.0));
        let (d, v) = compare_difference(&a, &b, Lo, 16.0).unwrap();
        assert_eq!(v, Verdict::WithinNoise, "{a:?} {b:?} {d:?}");
    }

    #[test]
    fn a_sawtooth_with_a_slowly_growing_floor_is_told_apart_from_none() {
        // 200 B/request under a GC sawtooth, against no growth at all.
        let (d, v) = compare_difference(&slopes(5, 0.0), &slopes(5, 200.0), Lo, 16.0).unwrap();
        assert_eq!(v, Verdict::Worse, "{d:?}");
        assert!((d.difference - 200.0).abs() < 40.0, "{d:?}");
    }

    /// Welch numbers by hand: sides {−2, 0, 2} and {8, 10, 12}: means 0
    /// and 10, variances 4 and 4, se = √(4/3 + 4/3) = 1.63299, df = 4,
    /// t(0.975, 4) = 2.776445 → 10 ± 4.53393.
    #[test]
    fn welch_difference_by_hand() {
        let (d, v) = compare_difference(&[-2.0, 0.0, 2.0], &[8.0, 10.0, 12.0], Lo, 1.0).unwrap();
        assert!((d.difference - 10.0).abs() < 1e-12);
        assert!((d.difference_degrees_of_freedom.unwrap() - 4.0).abs() < 1e-9);
        let half = 2.776_445_105 * (8.0f64 / 3.0).sqrt();
        assert!((d.difference_low.unwrap() - (10.0 - half)).abs() < 1e-6);
        assert!((d.difference_high.unwrap() - (10.0 + half)).abs() < 1e-6);
        assert_eq!(v, Verdict::Worse);
        assert_eq!(d.difference_noise_band, 1.0);
    }

    #[test]
    fn verdict_table() {
        let hi = Direction::HigherIsBetter;
        let inc = |n| Verdict::Inconclusive { runs_needed: n };
        #[rustfmt::skip]
        let table: &[(f64, f64, Direction, f64, f64, usize, Verdict)] = &[
            // low,  high, dir, band, sd,  runs, verdict
            (20.0,  40.0, Lo, 16.0, 5.0, 5, Verdict::Worse),       // above +δ: grows faster
            (20.0,  40.0, hi, 16.0, 5.0, 5, Verdict::Better),
            (-40.0, -20.0, Lo, 16.0, 5.0, 5, Verdict::Better),     // below −δ: grows slower
            (-3.0,  4.0,  Lo, 16.0, 5.0, 5, Verdict::WithinNoise), // inside ±δ, around 0
            (-16.0, 16.0, Lo, 16.0, 5.0, 5, Verdict::WithinNoise), // edges belong to the band
            (10.0,  30.0, Lo, 16.0, 5.0, 5, inc(6)),               // 16·(5/16)² = 2 → runs + 1
            (-50.0, 50.0, Lo, 16.0, 40.0, 5, inc(100)),            // 16·(40/16)² = 100
        ];
        for (i, &(low, high, dir, band, sd, runs, want)) in table.iter().enumerate() {
            assert_eq!(
                judge_difference(low, high, dir, band, sd, runs),
                want,
                "row {i}"
            );
        }
    }

    #[test]
    fn too_few_runs_and_empty_sides() {
        let (d, v) = compare_difference(&[0.0, 1.0], &[1000.0, 1010.0, 990.0], Lo, 16.0).unwrap();
        assert!((d.difference - 999.5).abs() < 1e-9);
        assert_eq!(d.difference_low, None);
        assert_eq!(
            v,
            Verdict::NoInterval {
                reason: NoIntervalReason::TooFewRuns {
                    baseline_runs: 2,
                    candidate_runs: 3
                }
            }
        );
        assert!(compare_difference(&[], &[1.0], Lo, 16.0).is_none());
        assert!(compare_difference(&[f64::NAN], &[1.0], Lo, 16.0).is_none());
    }

    #[test]
    fn identical_constant_sides_are_within_noise() {
        let (d, v) = compare_difference(&[0.0; 4], &[0.0; 3], Lo, 16.0).unwrap();
        assert_eq!(
            (d.difference_low, d.difference_high),
            (Some(0.0), Some(0.0))
        );
        assert_eq!(v, Verdict::WithinNoise);
    }
}
