//! The power every verdict states: the smallest change an experiment
//! could have detected (its minimum detectable effect, MDE).
//!
//! From the same log-scale Welch estimate the interval is built on
//! ([`super::LogEstimate`]: standard error `se`, degrees of freedom `df`):
//!
//! ```text
//! MDE = (t(1 − α/2, df) + t(power, df)) · se      (log scale)
//! detectable change = e^MDE − 1                    (reported in %)
//! ```
//!
//! with 1 − α the verdict's confidence (95 %, 99 % for the
//! `--until-confident` stop rule) and [`POWER`] = 80 %.
//!
//! Why the power term and not just the interval's half-width
//! (t(1 − α/2)·se): a true change exactly as large as the half-width moves
//! the interval's edge onto "no change" only half of the time — a half-width
//! is the change found with 50 % power, a coin toss. Saying "could detect
//! changes above X %" promises more than that, so X is the change found 4
//! times in 5: the convention of power analysis (Cohen), and the same 80 %
//! Lehr's rule `16·(CV/δ)²` is built on, so "this run could only detect
//! changes above 9 %; ≈N runs would reach 2 %" says one thing twice: with N
//! runs per variant the MDE is about the 2 % band.
//!
//! The MDE is a change from "no change". A verdict of better or worse
//! asks more — the whole interval beyond the noise band — so a change
//! between the MDE and the band is seen but called within noise, by design.
//! Pure arithmetic, no I/O; it must not word anything.

use super::estimate::LogEstimate;
use super::student_t;

/// The power the detectable change is stated at: a change that large is
/// detected in 80 % of experiments like this one.
pub const POWER: f64 = 0.8;

/// The smallest change, in percent of the baseline, that an experiment
/// with `estimate`'s spread and size detects at `confidence` (0.95) with
/// [`POWER`]: `(e^((t(1 − α/2, df) + t(power, df))·se) − 1) · 100`.
pub fn detectable_change_pct(estimate: &LogEstimate, confidence: f64) -> f64 {
    let df = estimate.df;
    let t_alpha = student_t::quantile(0.5 + confidence / 2.0, df);
    let t_beta = student_t::quantile(POWER, df);
    let mde = (t_alpha + t_beta) * estimate.variance.sqrt();
    mde.exp_m1() * 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn estimate(variance: f64, df: f64) -> LogEstimate {
        LogEstimate {
            log_ratio: 0.0,
            variance,
            df,
            spread: 0.0,
            runs: 3,
        }
    }

    /// Three runs a side, log spread 0.01 each: se = 0.01·√(2/3) =
    /// 0.0081650, df = 4; from a t table t(0.975, 4) = 2.776445 and
    /// t(0.80, 4) = 0.940965, so MDE = 3.717410 · 0.0081650 = 0.0303525
    /// and e^0.0303525 − 1 = 3.0818 %.
    #[test]
    fn three_runs_a_side_by_hand() {
        let se2 = 0.01f64.powi(2) * 2.0 / 3.0;
        let got = detectable_change_pct(&estimate(se2, 4.0), 0.95);
        assert!((got - 3.081_786).abs() < 1e-4, "{got}");
    }

    /// Many runs: the t quantiles are the normal ones, 1.959964 + 0.841621
    /// = 2.801585; with se = 0.005 the MDE is 0.0140079 → 1.4106 %. The
    /// half-width alone (1.96·se = 0.98 %) would be the 50 %-power change.
    #[test]
    fn many_runs_use_the_normal_quantiles() {
        let got = detectable_change_pct(&estimate(0.005f64.powi(2), 1e6), 0.95);
        let want = ((1.959_964 + 0.841_621) * 0.005f64).exp_m1() * 100.0;
        assert!((got - want).abs() < 1e-4, "{got} vs {want}");
        assert!((got - 1.4106).abs() < 1e-3, "{got}");
    }

    /// Lehr's rule and the MDE agree: with 16·(CV/δ)² runs a side the
    /// detectable change is the band δ (within the rounding of 16 for
    /// 2·(1.96 + 0.84)² = 15.7).
    #[test]
    fn lehr_runs_bring_the_mde_to_the_band() {
        let (cv, band) = (0.05f64, 0.02f64);
        let n = (16.0 * (cv / band).powi(2)).ceil(); // 100
        let got = detectable_change_pct(&estimate(2.0 * cv * cv / n, 2.0 * n - 2.0), 0.95);
        assert!((got - band * 100.0).abs() < 0.05, "{got}");
    }

    #[test]
    fn a_stricter_confidence_detects_less() {
        let e = estimate(0.01f64.powi(2), 10.0);
        assert!(detectable_change_pct(&e, 0.99) > detectable_change_pct(&e, 0.95));
        assert_eq!(detectable_change_pct(&estimate(0.0, 4.0), 0.95), 0.0);
    }
}
