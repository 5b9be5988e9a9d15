//! `kurabe system compare A B`: B relative to A, per copy count and test.
//!
//! Every UnixBench figure is higher-is-better, so ratio = B / A and > 1 means
//! B is faster. Where both sides have per-pass rates (kurabe runs), the kept
//! passes' log rates become a Welch estimate and the verdict is decided as
//! every kurabe verdict is ([`kurabe_model::stats::decide`]): **better** or
//! **worse** only when the whole 95 % interval clears the noise band (±2 %
//! by default, [`kurabe_model::stats::DEFAULT_NOISE_BAND`]), **within noise** when it lies inside
//! the band, otherwise **inconclusive** with an estimate of the passes
//! needed. With fewer than 3 kept passes on a side there is no honest
//! interval and no verdict; an imported UnixBench report has single numbers
//! only, so any row involving one gets "no verdict" and says why. The
//! overall score's estimate combines the tests' (its log is the mean of
//! their logs).
//!
//! Owns pairing the tests and saying why a row has no verdict; must not
//! compute an interval or read one against the band itself. Pure: records
//! in, record out.

use kurabe_model::stats::verdict::MIN_RUNS;
use kurabe_model::stats::{
    decide, Direction, LogEstimate, LogMoments, NoIntervalReason, Verdict, CONFIDENCE,
};
use kurabe_model::system::{
    CompareRow, CompareRun, CompareSide, SystemCompare, SystemReport, SystemRun, SystemSource,
    SystemTest,
};

use crate::score::{mean_of_logs_spread, LogSpread};

/// Minimum kept passes per side for an interval: the fewest runs any
/// kurabe interval is computed from.
pub const MIN_PASSES: usize = MIN_RUNS;

/// Compare two results; `labels` name them (usually the file names).
pub fn compare(
    a: &SystemReport,
    b: &SystemReport,
    labels: (&str, &str),
    band: f64,
) -> SystemCompare {
    let runs = a
        .runs
        .iter()
        .filter_map(|ra| {
            let rb = b.runs.iter().find(|rb| rb.copies == ra.copies)?;
            Some(compare_run(ra, rb, a.source, b.source, band))
        })
        .collect();
    SystemCompare {
        schema_version: kurabe_model::SCHEMA_VERSION,
        a: side(a, labels.0),
        b: side(b, labels.1),
        noise_band: band,
        runs,
    }
}

fn side(r: &SystemReport, label: &str) -> CompareSide {
    CompareSide {
        label: label.to_string(),
        source: r.source,
        host: r.host.clone(),
        kernel: r.kernel.clone(),
        arch: r.arch.clone(),
    }
}

fn compare_run(
    a: &SystemRun,
    b: &SystemRun,
    sa: SystemSource,
    sb: SystemSource,
    band: f64,
) -> CompareRun {
    let (tests, estimates, all_have_spread) = compare_tests(a, b, sa, sb, band);
    let same_tests = a.tests.iter().filter(|t| t.index.is_some()).count()
        == b.tests.iter().filter(|t| t.index.is_some()).count()
        && a.tests.iter().filter(|t| t.index.is_some()).count() == estimates.len();
    let score_estimate = (all_have_spread && same_tests)
        .then(|| mean_estimate(&estimates))
        .flatten();
    let mut score = row(
        "score",
        "System Benchmarks Index Score",
        "index",
        a.score,
        b.score,
        ratio_of(a.score, b.score),
        score_estimate.as_ref(),
        band,
    );
    if score_estimate.is_none() && score.reason.is_none() {
        score.reason = Some(no_score_interval_reason(sa, sb, same_tests));
    }
    CompareRun {
        copies: a.copies,
        score,
        tests,
    }
}

/// Why the score has no interval though both sides have one.
fn no_score_interval_reason(sa: SystemSource, sb: SystemSource, same_tests: bool) -> String {
    no_spread_reason(sa, sb).unwrap_or_else(|| {
        let why = if same_tests {
            "some test lacks an interval, so the score has none"
        } else {
            "A and B indexed different tests"
        };
        why.to_string()
    })
}

/// The score's estimate: its log is the mean of the tests' logs, so its
/// log ratio is the mean of theirs, with the spread of a mean (none
/// without tests).
fn mean_estimate(tests: &[LogEstimate]) -> Option<LogEstimate> {
    if tests.is_empty() {
        return None;
    }
    let spreads: Vec<LogSpread> = tests
        .iter()
        .map(|e| LogSpread {
            var_of_mean: e.variance,
            df: e.df,
        })
        .collect();
    let s = mean_of_logs_spread(&spreads)?;
    // Passes per side that spread stands for: with n passes a side and
    // equal spreads, variance = 2σ²/n and df ≈ 2n − 2, so n ≈ (df + 2)/2
    // and σ² ≈ variance · (df + 2)/4.
    Some(LogEstimate {
        log_ratio: tests.iter().map(|e| e.log_ratio).sum::<f64>() / tests.len() as f64,
        variance: s.var_of_mean,
        df: s.df,
        spread: (s.var_of_mean * (s.df + 2.0) / 4.0).sqrt(),
        runs: ((s.df + 2.0) / 2.0).round() as usize,
    })
}

/// The rows of the tests both runs have, the estimates of those both
/// indexed, and whether every such pair had a spread.
fn compare_tests(
    a: &SystemRun,
    b: &SystemRun,
    sa: SystemSource,
    sb: SystemSource,
    band: f64,
) -> (Vec<CompareRow>, Vec<LogEstimate>, bool) {
    let mut estimates = Vec::new();
    let mut all_have_spread = true;
    let mut tests = Vec::new();
    for ta in &a.tests {
        let Some(tb) = b.tests.iter().find(|t| t.id == ta.id) else {
            continue;
        };
        let (row, estimate) = compare_test(ta, tb, sa, sb, band);
        if ta.index.is_some() && tb.index.is_some() {
            match estimate {
                Some(e) => estimates.push(e),
                None => all_have_spread = false,
            }
        }
        tests.push(row);
    }
    (tests, estimates, all_have_spread)
}

fn ratio_of(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if a > 0.0 && b > 0.0 => Some(b / a),
        _ => None,
    }
}

/// The log moments of a test's kept passes; `None` without any.
fn kept(t: &SystemTest) -> Option<LogMoments> {
    let rates: Vec<f64> = t
        .passes
        .iter()
        .filter(|p| !p.dropped && p.rate > 0.0)
        .map(|p| p.rate)
        .collect();
    LogMoments::of_samples(&rates)
}

fn no_spread_reason(sa: SystemSource, sb: SystemSource) -> Option<String> {
    let which = match (sa, sb) {
        (SystemSource::UnixbenchImport, SystemSource::UnixbenchImport) => "A and B are",
        (SystemSource::UnixbenchImport, _) => "A is",
        (_, SystemSource::UnixbenchImport) => "B is",
        _ => return None,
    };
    Some(format!(
        "no verdict possible: single numbers — {which} imported from a UnixBench report, which keeps no per-pass results, so the noise cannot be estimated"
    ))
}

fn compare_test(
    a: &SystemTest,
    b: &SystemTest,
    sa: SystemSource,
    sb: SystemSource,
    band: f64,
) -> (CompareRow, Option<LogEstimate>) {
    let ra = (a.result > 0.0).then_some(a.result);
    let rb = (b.result > 0.0).then_some(b.result);
    let ratio = ratio_of(ra, rb);
    let (ka, kb) = (kept(a), kept(b));
    let passes = |k: Option<LogMoments>| k.map_or(0, |k| k.n as usize);
    let (na, nb) = (passes(ka), passes(kb));
    let estimate = match (ka, kb) {
        (Some(ka), Some(kb)) if ratio.is_some() && na >= MIN_PASSES && nb >= MIN_PASSES => {
            Some(LogEstimate::welch(ka, kb))
        }
        _ => None,
    };
    let mut r = row(
        &a.id,
        &a.name,
        &a.unit,
        ra,
        rb,
        ratio,
        estimate.as_ref(),
        band,
    );
    if estimate.is_none() {
        r.reason = Some(no_interval_reason(ratio.is_some(), sa, sb, na, nb));
    }
    (r, estimate)
}

/// Why a test's row has no interval: a missing result, a side without
/// passes, or too few kept passes (`na`, `nb`).
fn no_interval_reason(
    has_ratio: bool,
    sa: SystemSource,
    sb: SystemSource,
    na: usize,
    nb: usize,
) -> String {
    if !has_ratio {
        return "a side has no result (the test failed or is missing)".to_string();
    }
    no_spread_reason(sa, sb).unwrap_or_else(|| {
        format!(
            "too few kept passes for an interval ({na} and {nb}; need {MIN_PASSES} per side — run with --passes 5 or more)"
        )
    })
}

/// A row: the two values, their ratio, and — with an estimate — the
/// interval and verdict [`decide`] gives (else no verdict; the caller
/// says why).
#[allow(clippy::too_many_arguments)]
fn row(
    id: &str,
    name: &str,
    unit: &str,
    a: Option<f64>,
    b: Option<f64>,
    ratio: Option<f64>,
    estimate: Option<&LogEstimate>,
    band: f64,
) -> CompareRow {
    let mut r = CompareRow {
        id: id.to_string(),
        name: name.to_string(),
        unit: unit.to_string(),
        result_a: a,
        result_b: b,
        ratio,
        ratio_ci95_low: None,
        ratio_ci95_high: None,
        verdict: Verdict::NoInterval {
            reason: NoIntervalReason::TooFewRuns {
                baseline_runs: 0,
                candidate_runs: 0,
            },
        },
        detectable_change_pct: None,
        reason: None,
    };
    if let (Some(_), Some(e)) = (ratio, estimate) {
        let c = decide(e, Direction::HigherIsBetter, band, CONFIDENCE);
        r.ratio_ci95_low = c.ratio_low;
        r.ratio_ci95_high = c.ratio_high;
        r.verdict = c.verdict;
        r.detectable_change_pct = c.detectable_change_pct;
        if let (Verdict::Inconclusive { runs_needed }, Some(lo), Some(hi), Some(mde)) = (
            c.verdict,
            c.ratio_low,
            c.ratio_high,
            c.detectable_change_pct,
        ) {
            r.reason = Some(format!(
                "the 95 % interval [{lo:.3}, {hi:.3}] straddles the ±{:.0} % noise band: this run could only detect changes above {mde:.1} %; need ≈{runs_needed} passes per side to reach {:.0} %",
                band * 100.0,
                band * 100.0
            ));
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use kurabe_model::stats::DEFAULT_NOISE_BAND;
    use kurabe_model::system::SystemPass;

    fn test_with(rates: &[f64]) -> SystemTest {
        let n = rates.len();
        SystemTest {
            id: "pipe".into(),
            name: "Pipe Throughput".into(),
            result: (rates.iter().map(|r| r.ln()).sum::<f64>() / n as f64).exp(),
            unit: "lps".into(),
            baseline: Some(12440.0),
            index: Some(10.0),
            time_s: 10.0,
            samples: n as u32,
            passes: rates
                .iter()
                .map(|&r| SystemPass {
                    count: r * 10.0,
                    time_s: 10.0,
                    rate: r,
                    dropped: false,
                })
                .collect(),
            ci95_low: None,
            ci95_high: None,
            score_variance_share: None,
            stop: None,
            modes: Vec::new(),
            error: None,
        }
    }

    fn d(a: &[f64], b: &[f64]) -> CompareRow {
        compare_test(
            &test_with(a),
            &test_with(b),
            SystemSource::Kurabe,
            SystemSource::Kurabe,
            DEFAULT_NOISE_BAND,
        )
        .0
    }

    #[test]
    fn clear_speedup_is_better_and_slowdown_worse() {
        let a = [100.0, 101.0, 99.0, 100.5];
        let b = [120.0, 121.0, 119.0, 120.5];
        let r = d(&a, &b);
        assert_eq!(r.verdict, Verdict::Better);
        assert!((r.ratio.unwrap() - 1.2).abs() < 0.01);
        assert!(r.ratio_ci95_low.unwrap() > 1.02);
        assert_eq!(d(&b, &a).verdict, Verdict::Worse);
    }

    #[test]
    fn same_numbers_are_within_noise_and_wide_spread_inconclusive() {
        let a = [100.0, 100.2, 99.8, 100.1];
        assert_eq!(d(&a, &a).verdict, Verdict::WithinNoise);
        let wide = [60.0, 150.0, 90.0, 120.0];
        let r = d(&a, &wide);
        assert!(matches!(r.verdict, Verdict::Inconclusive { .. }));
        assert!(r.reason.unwrap().contains("passes per side"));
    }

    #[test]
    fn too_few_passes_and_imports_get_no_verdict_with_reason() {
        let r = d(&[100.0, 101.0], &[120.0, 121.0]);
        assert!(matches!(r.verdict, Verdict::NoInterval { .. }));
        assert!(r.reason.unwrap().contains("too few kept passes"));
        let mut imp = test_with(&[100.0]);
        imp.passes.clear();
        let (r, _) = compare_test(
            &imp,
            &test_with(&[120.0, 121.0, 119.0]),
            SystemSource::UnixbenchImport,
            SystemSource::Kurabe,
            DEFAULT_NOISE_BAND,
        );
        assert!(matches!(r.verdict, Verdict::NoInterval { .. }));
        assert!(r.reason.unwrap().contains("single numbers"));
        assert!((r.ratio.unwrap() - 1.2).abs() < 0.01);
    }

    /// A test row's interval and verdict are the ones any two sets of
    /// samples get: the same function decides both.
    #[test]
    fn a_test_row_is_decided_as_any_comparison() {
        let (a, b) = ([100.0, 101.0, 99.0, 100.5], [101.0, 103.5, 99.0, 102.0]);
        let r = d(&a, &b);
        let c = kurabe_model::stats::compare(&a, &b, Direction::HigherIsBetter, DEFAULT_NOISE_BAND);
        assert_eq!(
            (r.ratio_ci95_low, r.ratio_ci95_high, r.verdict),
            (c.ratio_low, c.ratio_high, c.verdict)
        );
    }
}
