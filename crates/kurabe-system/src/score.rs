//! Scoring exactly as UnixBench's `Run` driver does it, plus the spread it
//! never reported.
//!
//! Pure functions, no I/O. The steps, as in `Run`:
//! 1. one pass = all copies run at once: their counts are **summed** and their
//!    times **averaged** ([`aggregate_copies`]);
//! 2. a pass's rate is `count / (time / timebase)` for loop counts (timebase 1
//!    = lps, 60 = lpm) and the count itself for tests that report a rate
//!    (KBps, MWIPS: timebase 0) ([`pass_rate`]);
//! 3. the passes are sorted by count and the lowest `⌊n/3⌋` dropped;
//! 4. the result is the geometric mean of the kept rates and the time is the
//!    arithmetic mean of the kept times ([`combine`]);
//! 5. INDEX = result / baseline × 10, and the overall score is the geometric
//!    mean of the indices ([`overall`]).
//!
//! Deliberate difference: `Run` adds `log(rate)` only for positive counts but
//! still counts the pass, so a zero pass silently scores as rate 1, and a zero
//! index is skipped in the sum but counted in the mean. Here a kept zero pass
//! makes the test *failed* (result 0, no index), and failed tests are left out
//! of the overall score, which is then marked partial.
//!
//! Spread: the 95 % interval of the geometric mean is a Student-t interval on
//! the log rates of the kept passes; the overall score's interval combines the
//! tests' log variances (the score's log is their mean) with
//! Welch–Satterthwaite degrees of freedom.

use crate::catalog::Timebase;

/// What one copy of a test reported for one pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CopySample {
    /// Loops done, or the rate for rate-reporting tests.
    pub count: f64,
    /// Seconds: the test's own timing when it reports one (file copy, Whetstone), else wall time.
    pub time_s: f64,
}

/// One pass, all copies together.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PassSample {
    /// Sum of the copies' counts.
    pub count: f64,
    /// Mean of the copies' times, seconds.
    pub time_s: f64,
}

/// Sum counts, average times (`Run`'s `runOnePass`).
pub fn aggregate_copies(copies: &[CopySample]) -> PassSample {
    if copies.is_empty() {
        return PassSample {
            count: 0.0,
            time_s: 0.0,
        };
    }
    let count = copies.iter().map(|c| c.count).sum();
    let time_s = copies.iter().map(|c| c.time_s).sum::<f64>() / copies.len() as f64;
    PassSample { count, time_s }
}

/// The rate of one pass in the test's unit.
pub fn pass_rate(pass: PassSample, timebase: Timebase) -> f64 {
    match timebase {
        Timebase::PerSeconds(base) if pass.time_s > 0.0 => {
            pass.count / (pass.time_s / f64::from(base))
        }
        _ => pass.count,
    }
}

/// A test's combined result over its passes.
#[derive(Debug, Clone, PartialEq)]
pub struct Combined {
    /// Geometric mean of the kept rates; 0 when a kept pass counted nothing.
    pub result: f64,
    /// Mean time of the kept passes, seconds.
    pub time_s: f64,
    /// Number of kept passes.
    pub samples: u32,
    /// Per pass (input order): its rate and whether it was dropped.
    pub rates: Vec<(f64, bool)>,
    /// Spread of `ln(result)`, when at least 2 passes were kept and all are positive.
    pub log_spread: Option<LogSpread>,
}

/// Variance of a log-scale mean and its degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogSpread {
    /// Variance of the mean of the logs (s² / n).
    pub var_of_mean: f64,
    /// Degrees of freedom.
    pub df: f64,
}

impl LogSpread {
    /// 95 % interval around `center` (a value on the natural scale).
    pub fn ci95(&self, center: f64) -> (f64, f64) {
        let half = t975(self.df) * self.var_of_mean.sqrt();
        (center * (-half).exp(), center * half.exp())
    }
}

impl Combined {
    /// True when the test produced no usable result.
    pub fn failed(&self) -> bool {
        self.samples == 0 || self.result <= 0.0
    }
}

/// Drop the lowest-count third and take the geometric mean of the rest.
pub fn combine(passes: &[PassSample], timebase: Timebase) -> Combined {
    let dropped = lowest_third(passes);
    let rates: Vec<(f64, bool)> = passes
        .iter()
        .zip(&dropped)
        .map(|(p, &d)| (pass_rate(*p, timebase), d))
        .collect();
    let kept: Vec<usize> = (0..passes.len()).filter(|&i| !dropped[i]).collect();
    let samples = kept.len() as u32;
    let time_s = if kept.is_empty() {
        0.0
    } else {
        kept.iter().map(|&i| passes[i].time_s).sum::<f64>() / kept.len() as f64
    };
    let mut c = Combined {
        result: 0.0,
        time_s,
        samples,
        rates,
        log_spread: None,
    };
    let rates = &c.rates;
    if kept.is_empty()
        || kept
            .iter()
            .any(|&i| rates[i].0 <= 0.0 || !rates[i].0.is_finite())
    {
        return c;
    }
    let logs: Vec<f64> = kept.iter().map(|&i| rates[i].0.ln()).collect();
    let (mean, var) = mean_var(&logs);
    c.log_spread = var.map(|v| LogSpread {
        var_of_mean: v / logs.len() as f64,
        df: (logs.len() - 1) as f64,
    });
    c.result = mean.exp();
    c
}

/// Which passes UnixBench drops: the third with the lowest counts.
fn lowest_third(passes: &[PassSample]) -> Vec<bool> {
    let ndump = passes.len() / 3;
    let mut order: Vec<usize> = (0..passes.len()).collect();
    // Stable sort by count, as Perl's sort keeps equal counts in pass order.
    order.sort_by(|&a, &b| passes[a].count.total_cmp(&passes[b].count));
    let mut dropped = vec![false; passes.len()];
    for &i in order.iter().take(ndump) {
        dropped[i] = true;
    }
    dropped
}

/// INDEX = result / baseline × 10.
pub fn index(result: f64, baseline: f64) -> f64 {
    result / baseline * 10.0
}

/// The overall score and its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Overall {
    /// Geometric mean of the indices.
    pub score: f64,
    /// 95 % interval, when every index has a spread.
    pub ci95: Option<(f64, f64)>,
}

/// Geometric mean of the indices of the tests that did not fail; each entry
/// is an index and the log spread of the test's result (the index has the
/// same log spread). `None` when there is nothing to average.
pub fn overall(indices: &[(f64, Option<LogSpread>)]) -> Option<Overall> {
    let ok: Vec<_> = indices
        .iter()
        .filter(|(i, _)| *i > 0.0 && i.is_finite())
        .collect();
    if ok.is_empty() {
        return None;
    }
    let k = ok.len() as f64;
    let score = (ok.iter().map(|(i, _)| i.ln()).sum::<f64>() / k).exp();
    let spreads: Option<Vec<LogSpread>> = ok.iter().map(|(_, s)| *s).collect();
    let ci95 = spreads
        .and_then(|s| mean_of_logs_spread(&s))
        .map(|s| s.ci95(score));
    Some(Overall { score, ci95 })
}

/// Spread of the mean of k independent log means: variance Σv/k², df by
/// Welch–Satterthwaite. `None` for an empty list.
pub fn mean_of_logs_spread(parts: &[LogSpread]) -> Option<LogSpread> {
    if parts.is_empty() {
        return None;
    }
    let k2 = (parts.len() * parts.len()) as f64;
    let var: f64 = parts.iter().map(|p| p.var_of_mean).sum::<f64>() / k2;
    let denom: f64 = parts
        .iter()
        .map(|p| (p.var_of_mean / k2).powi(2) / p.df)
        .sum();
    let df = if denom > 0.0 {
        var * var / denom
    } else {
        parts.iter().map(|p| p.df).sum()
    };
    Some(LogSpread {
        var_of_mean: var,
        df,
    })
}

/// Sample mean and (n−1) variance; variance `None` below 2 values.
pub fn mean_var(xs: &[f64]) -> (f64, Option<f64>) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (mean, None);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, Some(var))
}

/// Two-sided 95 % Student-t quantile for `df` degrees of freedom, from
/// kurabe-model's t distribution (exact at the fractional degrees of freedom
/// Welch–Satterthwaite gives); below 1 degree of freedom it uses 1, which
/// errs wide.
pub fn t975(df: f64) -> f64 {
    let df = if df.is_nan() || df < 1.0 { 1.0 } else { df };
    kurabe_model::stats::student_t::quantile(0.975, df)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(count: f64, time_s: f64) -> PassSample {
        PassSample { count, time_s }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn ten_passes_drop_the_three_lowest_counts() {
        // Counts 1..=10 in scrambled order, all 10 s: the lowest 3 (1, 2, 3) go.
        let counts = [5.0, 1.0, 9.0, 3.0, 7.0, 2.0, 10.0, 4.0, 8.0, 6.0];
        let passes: Vec<_> = counts.iter().map(|&c| p(c * 10.0, 10.0)).collect();
        let c = combine(&passes, Timebase::PerSeconds(1));
        assert_eq!(c.samples, 7);
        let dropped: Vec<f64> = c
            .rates
            .iter()
            .zip(&counts)
            .filter(|((_, d), _)| *d)
            .map(|(_, &n)| n)
            .collect();
        assert_eq!(dropped, vec![1.0, 3.0, 2.0]);
        // Geometric mean of 4..=10 (rates = counts since count*10/10 s).
        let expected = (4.0f64 * 5.0 * 6.0 * 7.0 * 8.0 * 9.0 * 10.0).powf(1.0 / 7.0);
        assert!(close(c.result, expected), "{} vs {expected}", c.result);
        assert!(close(c.time_s, 10.0));
    }

    #[test]
    fn three_passes_drop_one_and_average_kept_times() {
        let passes = [p(300.0, 30.0), p(100.0, 29.0), p(600.0, 31.0)];
        let c = combine(&passes, Timebase::PerSeconds(1));
        assert_eq!(c.samples, 2);
        assert!(c.rates[1].1, "the lowest count is dropped");
        // rates 10 and 600/31; geomean = sqrt(10 * 19.354838...)
        assert!(close(c.result, (10.0f64 * 600.0 / 31.0).sqrt()));
        assert!(close(c.time_s, 30.5));
    }

    #[test]
    fn lpm_timebase_and_rate_timebase() {
        // 30 loops in 60.5 s → 29.752 lpm.
        assert!(close(
            pass_rate(p(30.0, 60.5), Timebase::PerSeconds(60)),
            30.0 / (60.5 / 60.0)
        ));
        // KBps and MWIPS are already rates: time does not enter.
        assert!(close(
            pass_rate(p(123456.0, 29.9), Timebase::Rate),
            123456.0
        ));
        assert!(close(pass_rate(p(3623.9, 9.8), Timebase::Rate), 3623.9));
        // lps: 1_000_000 loops in 10.02 s.
        assert!(close(
            pass_rate(p(1.0e6, 10.02), Timebase::PerSeconds(1)),
            1.0e6 / 10.02
        ));
    }

    #[test]
    fn multi_copy_sums_counts_and_averages_times() {
        let a = aggregate_copies(&[
            CopySample {
                count: 100.0,
                time_s: 10.0,
            },
            CopySample {
                count: 120.0,
                time_s: 10.2,
            },
        ]);
        assert!(close(a.count, 220.0));
        assert!(close(a.time_s, 10.1));
        assert!(close(pass_rate(a, Timebase::PerSeconds(1)), 220.0 / 10.1));
    }

    #[test]
    fn index_and_overall_geometric_mean() {
        assert!(close(index(116700.0, 116700.0), 10.0));
        assert!(close(index(33526940.9, 116700.0), 2_872.916_958_011_996));
        let o = overall(&[(10.0, None), (1000.0, None)]).unwrap();
        assert!(close(o.score, 100.0));
        assert!(o.ci95.is_none(), "no spread known, no interval");
    }

    #[test]
    fn zero_pass_fails_the_test_and_leaves_the_overall() {
        // Two zero passes of three: one is dropped, one is kept → failed.
        let c = combine(
            &[p(0.0, 10.0), p(0.0, 10.0), p(50.0, 10.0)],
            Timebase::PerSeconds(1),
        );
        assert!(c.failed());
        assert_eq!(c.result, 0.0);
        // One zero of three is dropped as the lowest: the test survives.
        let c = combine(
            &[p(0.0, 10.0), p(40.0, 10.0), p(50.0, 10.0)],
            Timebase::PerSeconds(1),
        );
        assert!(!c.failed());
        assert!(close(c.result, (4.0f64 * 5.0).sqrt()));
        // A failed test (index 0) does not drag the score to zero.
        let o = overall(&[(0.0, None), (40.0, None), (160.0, None)]).unwrap();
        assert!(close(o.score, 80.0));
        assert!(overall(&[(0.0, None)]).is_none());
        assert!(combine(&[], Timebase::Rate).failed());
    }

    #[test]
    fn ci_of_the_geometric_mean_by_hand() {
        // Kept rates e^1, e^2, e^3 (lowest of 4 passes dropped): log mean 2,
        // s² = 1, var of mean 1/3, df 2, t = 4.303 → e^(2 ± 4.303/√3).
        let passes = [
            p(1.0, 1.0),
            p(1f64.exp(), 1.0),
            p(2f64.exp(), 1.0),
            p(3f64.exp(), 1.0),
        ];
        let c = combine(&passes, Timebase::PerSeconds(1));
        assert_eq!(c.samples, 3);
        let s = c.log_spread.unwrap();
        assert!(close(s.var_of_mean, 1.0 / 3.0));
        assert!(close(s.df, 2.0));
        let (lo, hi) = s.ci95(c.result);
        assert!(close(lo, (2.0 - t975(2.0) / 3f64.sqrt()).exp()));
        assert!(close(hi, (2.0 + t975(2.0) / 3f64.sqrt()).exp()));
    }

    #[test]
    fn overall_interval_combines_test_spreads() {
        let s = LogSpread {
            var_of_mean: 0.04,
            df: 6.0,
        };
        let o = overall(&[(100.0, Some(s)), (400.0, Some(s))]).unwrap();
        assert!(close(o.score, 200.0));
        // var = (0.04 + 0.04) / 4 = 0.02; df = 0.02² / (2 · 0.01² / 6) = 12.
        let m = mean_of_logs_spread(&[s, s]).unwrap();
        assert!(close(m.var_of_mean, 0.02));
        assert!(close(m.df, 12.0));
        let (lo, hi) = o.ci95.unwrap();
        assert!(close(lo, 200.0 * (-t975(12.0) * 0.02f64.sqrt()).exp()));
        assert!(close(hi, 200.0 * (t975(12.0) * 0.02f64.sqrt()).exp()));
        assert!((t975(12.0) - 2.179).abs() < 0.001);
    }

    #[test]
    fn t_quantiles() {
        assert!((t975(1.0) - 12.706).abs() < 0.001);
        assert!((t975(2.0) - 4.303).abs() < 0.001);
        assert!((t975(0.2) - 12.706).abs() < 0.001, "below 1 df errs wide");
        assert!((t975(1000.0) - 1.962).abs() < 0.001);
        assert!((t975(60.0) - 2.000).abs() < 0.001);
    }
}
