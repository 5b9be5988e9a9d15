//! Compare a candidate variant against the baseline on one metric.
//!
//! The answer is the ratio of geometric means (candidate / baseline) with a
//! 95 % Welch confidence interval computed on log values — logs because
//! performance figures are positive and multiplicative ("1.18× faster"), and
//! Welch because two variants rarely have the same spread. The verdict then
//! reads the interval against the metric's noise band ±δ:
//!
//! - **better / worse** only when the *whole* interval lies beyond the band
//!   on one side (direction decides which word);
//! - otherwise **within noise**: settled when the whole interval lies inside
//!   the band, and *inconclusive* when it straddles a band edge — then with
//!   an estimate of the runs per variant that would settle it, Lehr's rule
//!   n ≈ 16·(CV/δ)² (80 % power at α = 0.05 for a difference of δ). An
//!   inconclusive result is still "within noise" (DESIGN.md): the data do
//!   not show a difference beyond the band, they just do not rule one out;
//! - **no interval** with fewer than 3 runs on a side (two points give a
//!   spread estimate so poor the interval would be decoration) or with a
//!   zero or negative value (its log does not exist).
//!
//! Metrics whose values may be zero or negative (a soak run's memory
//! slope) are compared by the difference of means instead:
//! [`compare_metric`] picks the scale by name, see [`super::difference`].
//!
//! Pure arithmetic; it must not decide which metrics to compare or print.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::difference::{compare_difference_at, Difference};
use super::estimate::{LogEstimate, LogMoments};
use super::metric::Direction;
use super::power::detectable_change_pct;
use super::student_t;
use super::summary::logs;
use super::trend::difference_scale;
use super::verdict::{read_interval, runs_needed, NoIntervalReason, Verdict, CONFIDENCE, MIN_RUNS};

/// The candidate-versus-baseline answer for one metric.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct Comparison {
    /// Geometric mean of the candidate / geometric mean of the baseline;
    /// `None` when either side is empty or has a value ≤ 0.
    #[schemars(required, transform = crate::schema::nullable)]
    pub ratio: Option<f64>,
    /// Lower end of the 95 % interval of the ratio.
    #[schemars(required, transform = crate::schema::nullable)]
    pub ratio_low: Option<f64>,
    /// Upper end of the 95 % interval of the ratio.
    #[schemars(required, transform = crate::schema::nullable)]
    pub ratio_high: Option<f64>,
    /// Welch–Satterthwaite degrees of freedom used for the t quantile.
    #[schemars(required, transform = crate::schema::nullable)]
    pub degrees_of_freedom: Option<f64>,
    /// Noise band the verdict was judged against (0.02 = ±2 %).
    pub noise_band: f64,
    /// What the interval says (of the difference, when there is one).
    pub verdict: Verdict,
    /// The smallest change, in percent of the baseline, this comparison
    /// could have detected: its minimum detectable effect at the
    /// interval's confidence and 80 % power (docs/trust.md); absent
    /// without an interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detectable_change_pct: Option<f64>,
    /// Candidate − baseline with its interval, for metrics compared on the
    /// difference scale ([`compare_metric`]); absent for ratio metrics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difference: Option<Difference>,
}

/// Compare `candidate` samples against `baseline` samples of one metric.
///
/// `noise_band` is relative (0.02 for ±2 %). Non-finite samples count as
/// non-positive: there is no meaningful interval through them.
pub fn compare(
    baseline: &[f64],
    candidate: &[f64],
    direction: Direction,
    noise_band: f64,
) -> Comparison {
    compare_at(baseline, candidate, direction, noise_band, CONFIDENCE)
}

/// [`compare`] with an interval at `confidence` (0.99 for 99 %) instead of
/// [`CONFIDENCE`]: for decisions that look at the data more than once,
/// such as when `--until-confident` may stop, which need a stricter level.
pub fn compare_at(
    baseline: &[f64],
    candidate: &[f64],
    direction: Direction,
    noise_band: f64,
    confidence: f64,
) -> Comparison {
    let (Some(lb), Some(lc)) = (logs(baseline), logs(candidate)) else {
        return Comparison::without_interval(None, NoIntervalReason::NonPositiveValue, noise_band);
    };
    let (Some(b), Some(c)) = (LogMoments::of_logs(&lb), LogMoments::of_logs(&lc)) else {
        let reason = NoIntervalReason::TooFewRuns {
            baseline_runs: lb.len(),
            candidate_runs: lc.len(),
        };
        return Comparison::without_interval(None, reason, noise_band);
    };
    decide_moments(b, c, direction, noise_band, confidence)
}

/// [`decide`] on two sides' log moments, or a ratio without an interval
/// when a side has fewer than [`MIN_RUNS`] values.
pub fn decide_moments(
    baseline: LogMoments,
    candidate: LogMoments,
    direction: Direction,
    noise_band: f64,
    confidence: f64,
) -> Comparison {
    let (nb, nc) = (baseline.n as usize, candidate.n as usize);
    if nb < MIN_RUNS || nc < MIN_RUNS {
        let ratio = Some((candidate.mean - baseline.mean).exp());
        let reason = NoIntervalReason::TooFewRuns {
            baseline_runs: nb,
            candidate_runs: nc,
        };
        return Comparison::without_interval(ratio, reason, noise_band);
    }
    let estimate = LogEstimate::welch(baseline, candidate);
    decide(&estimate, direction, noise_band, confidence)
}

/// The one place a ratio verdict is decided: the ratio of `estimate`,
/// its interval at `confidence` (a t interval on the log scale, turned
/// back into a ratio) and the verdict that interval gives against the
/// band ±`noise_band` ([`judge`]). Experiments, `kurabe check`, history,
/// bisect and `kurabe system compare` all come here, whether their sides
/// are samples, summaries, pooled experiments or a combined score.
pub fn decide(
    estimate: &LogEstimate,
    direction: Direction,
    noise_band: f64,
    confidence: f64,
) -> Comparison {
    let t = student_t::quantile(0.5 + confidence / 2.0, estimate.df);
    let (d, half) = (estimate.log_ratio, t * estimate.variance.sqrt());
    let (low, high) = ((d - half).exp(), (d + half).exp());
    let (spread, runs) = (estimate.spread, estimate.runs);
    Comparison {
        ratio: Some(d.exp()),
        ratio_low: Some(low),
        ratio_high: Some(high),
        degrees_of_freedom: Some(estimate.df),
        noise_band,
        verdict: judge(low, high, direction, noise_band, spread, runs),
        detectable_change_pct: Some(detectable_change_pct(estimate, confidence)),
        difference: None,
    }
}

impl Comparison {
    /// A comparison with no interval (and so no verdict in words), for `reason`.
    pub fn without_interval(
        ratio: Option<f64>,
        reason: NoIntervalReason,
        noise_band: f64,
    ) -> Comparison {
        Comparison {
            ratio,
            ratio_low: None,
            ratio_high: None,
            degrees_of_freedom: None,
            noise_band,
            verdict: Verdict::NoInterval { reason },
            detectable_change_pct: None,
            difference: None,
        }
    }
}

/// Compare one metric by name: the ratio of geometric means
/// ([`compare`]), or for a metric on the difference scale
/// ([`difference_scale`]: soak slopes) the difference of means with its
/// Welch interval, whose verdict is then the answer. Such a comparison
/// carries the ratio too when every run on both sides exceeds the band
/// (both variants leak, so "2.0× the growth" means something);
/// `noise_band` is the relative band of that ratio.
pub fn compare_metric(
    metric: &str,
    baseline: &[f64],
    candidate: &[f64],
    direction: Direction,
    noise_band: f64,
) -> Comparison {
    compare_metric_at(
        metric, baseline, candidate, direction, noise_band, CONFIDENCE,
    )
}

/// [`compare_metric`] with intervals at `confidence` instead of [`CONFIDENCE`].
pub fn compare_metric_at(
    metric: &str,
    baseline: &[f64],
    candidate: &[f64],
    direction: Direction,
    noise_band: f64,
    confidence: f64,
) -> Comparison {
    let ratio = compare_at(baseline, candidate, direction, noise_band, confidence);
    let Some(scale) = difference_scale(metric) else {
        return ratio;
    };
    let Some((difference, verdict)) =
        compare_difference_at(baseline, candidate, direction, scale.band, confidence)
    else {
        return ratio;
    };
    let clearly_positive = |s: &[f64]| s.iter().all(|x| *x > scale.band);
    let keep_ratio = clearly_positive(baseline) && clearly_positive(candidate);
    Comparison {
        ratio: ratio.ratio.filter(|_| keep_ratio),
        ratio_low: ratio.ratio_low.filter(|_| keep_ratio),
        ratio_high: ratio.ratio_high.filter(|_| keep_ratio),
        degrees_of_freedom: ratio.degrees_of_freedom.filter(|_| keep_ratio),
        noise_band,
        verdict,
        detectable_change_pct: ratio.detectable_change_pct.filter(|_| keep_ratio),
        difference: Some(difference),
    }
}

/// Read an interval of the ratio against the band [1 − δ, 1 + δ].
///
/// `cv` is the spread of the log values, `runs` the runs per variant so far;
/// both only feed the runs-needed estimate of an inconclusive verdict.
pub fn judge(
    low: f64,
    high: f64,
    direction: Direction,
    noise_band: f64,
    cv: f64,
    runs: usize,
) -> Verdict {
    let band = (1.0 - noise_band, 1.0 + noise_band);
    read_interval(low, high, band, direction, || {
        runs_needed(cv, noise_band, runs)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Direction::{HigherIsBetter as Hi, LowerIsBetter as Lo};

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1.0)
    }

    /// Verdict table, intervals and numbers worked out by hand. Band ±2 %
    /// unless stated, so the band is [0.98, 1.02].
    #[test]
    fn verdict_table() {
        let inc = |n| Verdict::Inconclusive { runs_needed: n };
        #[rustfmt::skip]
        let table: &[(f64, f64, Direction, f64, f64, usize, Verdict)] = &[
            // low,  high,  dir, band, cv,   runs, verdict
            (1.05,  1.10,  Hi, 0.02, 0.01, 5, Verdict::Better),      // clears 1.02 upward, more is good
            (1.05,  1.10,  Lo, 0.02, 0.01, 5, Verdict::Worse),       // same interval, less is good
            (0.90,  0.97,  Hi, 0.02, 0.01, 5, Verdict::Worse),       // below 0.98
            (0.90,  0.97,  Lo, 0.02, 0.01, 5, Verdict::Better),
            (0.99,  1.01,  Hi, 0.02, 0.01, 5, Verdict::WithinNoise), // inside [0.98, 1.02]
            (0.98,  1.02,  Lo, 0.02, 0.01, 5, Verdict::WithinNoise), // edges belong to the band
            (1.02,  1.05,  Hi, 0.02, 0.01, 5, inc(6)),               // touches the edge: not clear
            // straddles 1.02; 16·(0.03/0.02)² = 36
            (1.01,  1.06,  Hi, 0.02, 0.03, 5, inc(36)),
            // straddles 0.98; 16·(0.05/0.02)² = 100
            (0.95,  0.99,  Lo, 0.02, 0.05, 5, inc(100)),
            // wider than the whole band: 16·(0.1/0.02)² = 400
            (0.90,  1.10,  Hi, 0.02, 0.10, 5, inc(400)),
            // Lehr says 16·(0.01/0.02)² = 4 but 10 runs are already in: ask for 11
            (1.015, 1.025, Hi, 0.02, 0.01, 10, inc(11)),
            // wider band 10 %: [0.92, 1.08] is within noise, [1.12, 1.3] better
            (0.92,  1.08,  Hi, 0.10, 0.05, 5, Verdict::WithinNoise),
            (1.12,  1.30,  Hi, 0.10, 0.05, 5, Verdict::Better),
            // 16·(0.05/0.1)² = 4 → at least runs + 1 = 6
            (1.05,  1.15,  Lo, 0.10, 0.05, 5, inc(6)),
        ];
        for (i, &(low, high, dir, band, cv, runs, want)) in table.iter().enumerate() {
            assert_eq!(
                judge(low, high, dir, band, cv, runs),
                want,
                "row {i}: [{low}, {high}] {dir:?} ±{band}"
            );
        }
    }

    /// Symmetric log samples make the Welch numbers exact by hand: each side
    /// is g·e^{−a}, g, g·e^{a}, so both log variances are a², se = a·√(2/3),
    /// and with equal variances and n = 3 the Welch df is exactly 2·(3 − 1) = 4.
    #[test]
    fn welch_interval_hand_computed() {
        let a: f64 = 0.01;
        let side = |g: f64| [g * (-a).exp(), g, g * a.exp()];
        let c = compare(&side(100.0), &side(110.0), Hi, 0.02);
        assert!(close(c.ratio.unwrap(), 1.1, 1e-12));
        assert!(close(c.degrees_of_freedom.unwrap(), 4.0, 1e-12));
        let half = 2.776_445_105 * a * (2.0f64 / 3.0).sqrt(); // t(0.975, 4)·se = 0.0226693
        assert!(close(c.ratio_low.unwrap(), 1.1 * (-half).exp(), 1e-9)); // 1.075343
        assert!(close(c.ratio_high.unwrap(), 1.1 * half.exp(), 1e-9)); // 1.125219
        assert_eq!(c.verdict, Verdict::Better);
        // (t(0.975, 4) + t(0.8, 4))·se = 3.717410·0.0081650 → e^0.0303525 − 1.
        assert!(close(c.detectable_change_pct.unwrap(), 3.081_786, 1e-5));
        // Lower is better: the same 10 % increase is a regression.
        assert_eq!(
            compare(&side(100.0), &side(110.0), Lo, 0.02).verdict,
            Verdict::Worse
        );
    }

    #[test]
    fn welch_df_with_unequal_spread_and_sizes() {
        // Baseline logs {−0.02, 0, 0.02}: variance 0.0004, n 3. Candidate logs
        // ln 1.01 + {−0.01, −0.005, 0, 0.005, 0.01}: variance 6.25e-5, n 5.
        let b = [(-0.02f64).exp(), 1.0, 0.02f64.exp()];
        let cl = [-0.01f64, -0.005, 0.0, 0.005, 0.01]; // mean 0, Σd² = 0.00025, var 6.25e-5
        let c: Vec<f64> = cl.iter().map(|l| 1.01 * l.exp()).collect();
        let cmp = compare(&b, &c, Hi, 0.02);
        let (eb, ec): (f64, f64) = (0.0004 / 3.0, 6.25e-5 / 5.0);
        let df = (eb + ec).powi(2) / (eb * eb / 2.0 + ec * ec / 4.0); // 2.3687…
        assert!(close(cmp.degrees_of_freedom.unwrap(), df, 1e-9));
        let half = student_t::quantile(0.975, df) * (eb + ec).sqrt();
        assert!(close(cmp.ratio_low.unwrap(), 1.01 * (-half).exp(), 1e-9));
        // ratio 1.01 with an interval far wider than the band: inconclusive.
        assert!(
            matches!(cmp.verdict, Verdict::Inconclusive { .. }),
            "{:?}",
            cmp.verdict
        );
    }

    #[test]
    fn identical_samples_are_within_noise() {
        let s = [100.0, 100.0, 100.0];
        let c = compare(&s, &s, Hi, 0.02);
        assert_eq!(c.ratio, Some(1.0));
        assert_eq!((c.ratio_low, c.ratio_high), (Some(1.0), Some(1.0)));
        assert_eq!(c.degrees_of_freedom, Some(4.0));
        assert_eq!(c.verdict, Verdict::WithinNoise);
    }

    #[test]
    fn constant_but_different_samples_are_decided() {
        let c = compare(&[100.0; 3], &[90.0; 4], Lo, 0.02);
        assert!(close(c.ratio.unwrap(), 0.9, 1e-12));
        assert_eq!(c.verdict, Verdict::Better);
    }

    #[test]
    fn fewer_than_three_runs_has_no_interval_but_a_ratio() {
        let c = compare(&[100.0, 101.0], &[120.0, 121.0, 119.0], Hi, 0.02);
        assert_eq!(
            c.verdict,
            Verdict::NoInterval {
                reason: NoIntervalReason::TooFewRuns {
                    baseline_runs: 2,
                    candidate_runs: 3
                }
            }
        );
        assert!(c.ratio.unwrap() > 1.18);
        assert_eq!(c.ratio_low, None);
        assert_eq!(c.detectable_change_pct, None);
        assert_eq!(
            c.verdict.to_string(),
            "no interval: needs at least 3 runs per variant (baseline has 2, candidate 3)"
        );
    }

    #[test]
    fn empty_side_has_no_ratio() {
        let c = compare(&[], &[1.0, 2.0, 3.0], Hi, 0.02);
        assert_eq!(c.ratio, None);
        assert!(matches!(c.verdict, Verdict::NoInterval { .. }));
    }

    #[test]
    fn zero_value_has_no_interval() {
        let c = compare(&[0.0, 1.0, 2.0], &[1.0, 2.0, 3.0], Lo, 0.02);
        assert_eq!(c.ratio, None);
        assert_eq!(
            c.verdict,
            Verdict::NoInterval {
                reason: NoIntervalReason::NonPositiveValue
            }
        );
    }

    #[test]
    fn verdicts_display_and_serialize() {
        assert_eq!(Verdict::WithinNoise.to_string(), "within noise");
        assert_eq!(
            Verdict::Inconclusive { runs_needed: 36 }.to_string(),
            "within noise (inconclusive: ≈36 runs per variant needed)"
        );
        let json = serde_json::to_string(&Verdict::Inconclusive { runs_needed: 36 }).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"inconclusive","within_noise":true,"runs_needed":36}"#
        );
        let back: Verdict = serde_json::from_str(&json).unwrap();
        assert_eq!(back, Verdict::Inconclusive { runs_needed: 36 });
        // Files written before the field existed still read.
        let old: Verdict =
            serde_json::from_str(r#"{"kind":"inconclusive","runs_needed":7}"#).unwrap();
        assert_eq!(old, Verdict::Inconclusive { runs_needed: 7 });
        for v in [
            Verdict::Better,
            Verdict::Worse,
            Verdict::WithinNoise,
            Verdict::NoInterval {
                reason: NoIntervalReason::NonPositiveValue,
            },
        ] {
            let back: Verdict = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
            assert_eq!(back, v);
        }
        assert_eq!(
            serde_json::to_string(&Verdict::WithinNoise).unwrap(),
            r#"{"kind":"within_noise"}"#
        );
    }

    #[test]
    fn inconclusive_is_within_noise_but_not_settled() {
        let inc = Verdict::Inconclusive { runs_needed: 9 };
        assert!(inc.is_within_noise() && !inc.is_settled());
        assert!(Verdict::WithinNoise.is_within_noise() && Verdict::WithinNoise.is_settled());
        assert!(!Verdict::Better.is_within_noise() && Verdict::Better.is_settled());
        let none = Verdict::NoInterval {
            reason: NoIntervalReason::NonPositiveValue,
        };
        assert!(!none.is_within_noise() && !none.is_settled());
    }

    /// Deterministic standard normal samples (xorshift64* + Box–Muller).
    struct Normal(u64);

    impl Normal {
        fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
            ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }

        fn sample(&mut self) -> f64 {
            let (u1, u2) = (self.uniform(), self.uniform());
            (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        }

        /// `n` log-normal values around `median` with log-spread `sd`.
        fn lognormal(&mut self, n: usize, median: f64, sd: f64) -> Vec<f64> {
            (0..n)
                .map(|_| median * (sd * self.sample()).exp())
                .collect()
        }
    }

    /// The 95 % interval must cover the true ratio about 95 % of the time,
    /// also with unequal spreads and sizes (where a pooled-variance t
    /// interval would not). 4000 simulated experiments: the binomial
    /// standard error of the coverage is 0.34 %, so 93.5–96.5 % is > 4 σ.
    #[test]
    fn interval_coverage_is_95_percent() {
        let mut rng = Normal(0x9E37_79B9_7F4A_7C15);
        for &(nb, sb, nc, sc, true_ratio) in &[
            (5, 0.03, 5, 0.03, 1.0),
            (3, 0.01, 8, 0.05, 1.1),
            (10, 0.05, 4, 0.02, 0.9),
        ] {
            let trials = 4000;
            let mut covered = 0;
            for _ in 0..trials {
                let b = rng.lognormal(nb, 100.0, sb);
                let c = rng.lognormal(nc, 100.0 * true_ratio, sc);
                let cmp = compare(&b, &c, Hi, 0.02);
                if cmp.ratio_low.unwrap() <= true_ratio && true_ratio <= cmp.ratio_high.unwrap() {
                    covered += 1;
                }
            }
            let coverage = f64::from(covered) / f64::from(trials);
            assert!(
                (0.935..=0.965).contains(&coverage),
                "n {nb}/{nc}, sd {sb}/{sc}: coverage {coverage}"
            );
        }
    }

    /// A/A comparisons with 1 % noise and 10 runs: nearly always settled
    /// within noise, never "better" or "worse" more often than the 2.5 % per side
    /// the interval allows.
    #[test]
    fn a_a_comparisons_are_mostly_within_noise() {
        let mut rng = Normal(42);
        let (mut within, mut decided) = (0, 0);
        for _ in 0..1000 {
            let b = rng.lognormal(10, 100.0, 0.01);
            let c = rng.lognormal(10, 100.0, 0.01);
            let v = compare(&b, &c, Hi, 0.02).verdict;
            if v == Verdict::WithinNoise {
                within += 1;
            } else if !v.is_within_noise() {
                decided += 1;
            }
        }
        assert!(within >= 900, "within noise {within} / 1000");
        assert!(decided <= 25, "false verdicts {decided} / 1000");
    }

    /// A real 10 % slowdown with 2 % noise and 5 runs is found, in the
    /// right direction.
    #[test]
    fn a_ten_percent_difference_is_detected() {
        let mut rng = Normal(7);
        let mut worse = 0;
        for _ in 0..200 {
            let b = rng.lognormal(5, 1000.0, 0.02);
            let c = rng.lognormal(5, 1000.0 / 1.1, 0.02);
            if compare(&b, &c, Hi, 0.02).verdict == Verdict::Worse {
                worse += 1;
            }
        }
        assert!(worse >= 190, "detected as worse in {worse} / 200");
    }

    #[test]
    fn slopes_are_compared_by_difference_ratio_only_when_both_leak() {
        let flat = [-1.6, 0.4, 2.6, 0.0];
        let leak = [1050.0, 1055.0, 1058.5];
        let c = compare_metric("pss_slope_bytes_per_request", &flat, &leak, Lo, 0.02);
        assert_eq!(c.verdict, Verdict::Worse);
        assert_eq!(c.ratio, None, "no ratio against a flat slope");
        let d = c.difference.unwrap();
        assert!((d.difference - (1054.5 - 0.35)).abs() < 1e-9);
        assert_eq!(d.difference_noise_band, 16.0);
        // Two leaks: the ratio is back, beside the difference.
        let double = [2100.0, 2110.0, 2117.0];
        let c = compare_metric("pss_slope_bytes_per_request", &leak, &double, Lo, 0.02);
        assert_eq!(c.verdict, Verdict::Worse);
        assert!((c.ratio.unwrap() - 2.0).abs() < 0.01);
        assert!(c.ratio_low.is_some() && c.difference.is_some());
        // Other metrics are untouched.
        let r = compare_metric("pss_peak_bytes", &[100.0; 3], &[90.0; 3], Lo, 0.02);
        assert_eq!(r, compare(&[100.0; 3], &[90.0; 3], Lo, 0.02));
        assert!(serde_json::to_string(&r)
            .unwrap()
            .find("difference")
            .is_none());
    }

    #[test]
    fn more_runs_narrow_the_interval() {
        // Same spread, 3 runs vs 12 runs: the 12-run interval is narrower.
        let base = [100.0, 103.0, 97.0];
        let cand = [104.0, 107.0, 101.0];
        let narrow = |xs: &[f64]| xs.iter().cycle().take(12).copied().collect::<Vec<_>>();
        let few = compare(&base, &cand, Hi, 0.02);
        let many = compare(&narrow(&base), &narrow(&cand), Hi, 0.02);
        let width = |c: Comparison| c.ratio_high.unwrap() / c.ratio_low.unwrap();
        assert!(width(many) < width(few));
        assert!(close(few.ratio.unwrap(), many.ratio.unwrap(), 1e-12));
    }
}
