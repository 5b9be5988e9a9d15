//! `kurabe system compare A B`: B relative to A, per copy count and test.
//!
//! Every UnixBench figure is higher-is-better, so ratio = B / A and > 1 means
//! B is faster. Where both sides have per-pass rates (kurabe runs), the ratio
//! of the geometric means gets a 95 % Welch interval on the log rates of the
//! kept passes, and the verdict follows kurabe's house rule: **better** or
//! **worse** only when the whole interval clears the noise band (±2 % by
//! default), **within noise** when it lies inside the band, otherwise
//! **inconclusive** with an estimate of the passes needed. With fewer than 3
//! kept passes on a side there is no honest interval and no verdict; an
//! imported UnixBench report has single numbers only, so any row involving
//! one gets "no verdict" and says why. The overall score's interval combines
//! the tests' intervals (its log is the mean of their logs).
//!
//! Pure: records in, record out.

use kurabe_model::system::{
    CompareRow, CompareRun, CompareSide, SystemCompare, SystemReport, SystemRun, SystemSource,
    SystemTest, SystemVerdict,
};

use crate::score::{mean_of_logs_spread, mean_var, t975, LogSpread};

/// Default half-width of the noise band (2 %).
pub const NOISE_BAND: f64 = 0.02;

/// Minimum kept passes per side for an interval.
pub const MIN_PASSES: usize = 3;

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

/// A row's log-ratio estimate: mean difference of logs and its spread.
struct LogDiff {
    d: f64,
    spread: LogSpread,
}

fn compare_run(
    a: &SystemRun,
    b: &SystemRun,
    sa: SystemSource,
    sb: SystemSource,
    band: f64,
) -> CompareRun {
    let (tests, diffs, all_have_spread) = compare_tests(a, b, sa, sb, band);
    let same_tests = a.tests.iter().filter(|t| t.index.is_some()).count()
        == b.tests.iter().filter(|t| t.index.is_some()).count()
        && a.tests.iter().filter(|t| t.index.is_some()).count() == diffs.len();
    let score_diff = (all_have_spread && same_tests)
        .then(|| mean_diff(&diffs))
        .flatten();
    let mut score = row(
        "score",
        "System Benchmarks Index Score",
        "index",
        a.score,
        b.score,
        ratio_of(a.score, b.score),
        score_diff.as_ref(),
        band,
    );
    if score_diff.is_none() && score.reason.is_none() {
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

/// The score's log difference: the mean of the tests' (none without tests).
fn mean_diff(diffs: &[LogDiff]) -> Option<LogDiff> {
    if diffs.is_empty() {
        return None;
    }
    let spreads: Vec<LogSpread> = diffs.iter().map(|d| d.spread).collect();
    mean_of_logs_spread(&spreads).map(|s| LogDiff {
        d: diffs.iter().map(|d| d.d).sum::<f64>() / diffs.len() as f64,
        spread: s,
    })
}

/// The rows of the tests both runs have, the log differences of those both
/// indexed, and whether every such pair had a spread.
fn compare_tests(
    a: &SystemRun,
    b: &SystemRun,
    sa: SystemSource,
    sb: SystemSource,
    band: f64,
) -> (Vec<CompareRow>, Vec<LogDiff>, bool) {
    let mut diffs = Vec::new();
    let mut all_have_spread = true;
    let mut tests = Vec::new();
    for ta in &a.tests {
        let Some(tb) = b.tests.iter().find(|t| t.id == ta.id) else {
            continue;
        };
        let (row, diff) = compare_test(ta, tb, sa, sb, band);
        if ta.index.is_some() && tb.index.is_some() {
            match diff {
                Some(d) => diffs.push(d),
                None => all_have_spread = false,
            }
        }
        tests.push(row);
    }
    (tests, diffs, all_have_spread)
}

fn ratio_of(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if a > 0.0 && b > 0.0 => Some(b / a),
        _ => None,
    }
}

fn kept_logs(t: &SystemTest) -> Vec<f64> {
    t.passes
        .iter()
        .filter(|p| !p.dropped && p.rate > 0.0)
        .map(|p| p.rate.ln())
        .collect()
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
) -> (CompareRow, Option<LogDiff>) {
    let ra = (a.result > 0.0).then_some(a.result);
    let rb = (b.result > 0.0).then_some(b.result);
    let ratio = ratio_of(ra, rb);
    let la = kept_logs(a);
    let lb = kept_logs(b);
    let diff = if ratio.is_some() && la.len() >= MIN_PASSES && lb.len() >= MIN_PASSES {
        welch(&la, &lb)
    } else {
        None
    };
    let mut r = row(&a.id, &a.name, &a.unit, ra, rb, ratio, diff.as_ref(), band);
    if diff.is_none() {
        r.reason = Some(no_interval_reason(
            ratio.is_some(),
            sa,
            sb,
            la.len(),
            lb.len(),
        ));
    }
    (r, diff)
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

/// Welch: difference of log means, its variance and Welch–Satterthwaite df.
fn welch(a: &[f64], b: &[f64]) -> Option<LogDiff> {
    let (ma, va) = mean_var(a);
    let (mb, vb) = mean_var(b);
    let (va, vb) = (va? / a.len() as f64, vb? / b.len() as f64);
    let var = va + vb;
    let denom = va * va / (a.len() - 1) as f64 + vb * vb / (b.len() - 1) as f64;
    let df = if denom > 0.0 {
        var * var / denom
    } else {
        (a.len() + b.len() - 2) as f64
    };
    Some(LogDiff {
        d: mb - ma,
        spread: LogSpread {
            var_of_mean: var,
            df,
        },
    })
}

#[allow(clippy::too_many_arguments)]
fn row(
    id: &str,
    name: &str,
    unit: &str,
    a: Option<f64>,
    b: Option<f64>,
    ratio: Option<f64>,
    diff: Option<&LogDiff>,
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
        verdict: SystemVerdict::NoVerdict,
        reason: None,
    };
    if let (Some(_), Some(d)) = (ratio, diff) {
        add_interval(&mut r, d, band);
    }
    r
}

/// The ratio's 95 % interval from the log difference, and its verdict.
fn add_interval(r: &mut CompareRow, d: &LogDiff, band: f64) {
    let half = t975(d.spread.df) * d.spread.var_of_mean.sqrt();
    let (lo, hi) = ((d.d - half).exp(), (d.d + half).exp());
    r.ratio_ci95_low = Some(lo);
    r.ratio_ci95_high = Some(hi);
    (r.verdict, r.reason) = verdict(lo, hi, d, band);
}

fn verdict(lo: f64, hi: f64, d: &LogDiff, band: f64) -> (SystemVerdict, Option<String>) {
    if lo > 1.0 + band {
        (SystemVerdict::Better, None)
    } else if hi < 1.0 - band {
        (SystemVerdict::Worse, None)
    } else if lo >= 1.0 - band && hi <= 1.0 + band {
        (SystemVerdict::WithinNoise, None)
    } else {
        // Passes per side so the half-width shrinks below the band:
        // n ≈ 16·(CV/δ)², CV the per-pass spread of the log rates. With n
        // passes a side and equal spreads, var_of_mean = 2σ²/n and
        // df ≈ 2n − 2, so σ² ≈ var_of_mean · (df + 2) / 4.
        let per_pass_sd = (d.spread.var_of_mean * (d.spread.df + 2.0) / 4.0).sqrt();
        let need = (16.0 * (per_pass_sd / band).powi(2)).ceil().max(3.0);
        (
            SystemVerdict::Inconclusive,
            Some(format!(
                "the 95 % interval [{lo:.3}, {hi:.3}] straddles the ±{:.0} % noise band; need ≈{need:.0} passes per side",
                band * 100.0
            )),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
            NOISE_BAND,
        )
        .0
    }

    #[test]
    fn clear_speedup_is_better_and_slowdown_worse() {
        let a = [100.0, 101.0, 99.0, 100.5];
        let b = [120.0, 121.0, 119.0, 120.5];
        let r = d(&a, &b);
        assert_eq!(r.verdict, SystemVerdict::Better);
        assert!((r.ratio.unwrap() - 1.2).abs() < 0.01);
        assert!(r.ratio_ci95_low.unwrap() > 1.02);
        assert_eq!(d(&b, &a).verdict, SystemVerdict::Worse);
    }

    #[test]
    fn same_numbers_are_within_noise_and_wide_spread_inconclusive() {
        let a = [100.0, 100.2, 99.8, 100.1];
        assert_eq!(d(&a, &a).verdict, SystemVerdict::WithinNoise);
        let wide = [60.0, 150.0, 90.0, 120.0];
        let r = d(&a, &wide);
        assert_eq!(r.verdict, SystemVerdict::Inconclusive);
        assert!(r.reason.unwrap().contains("passes per side"));
    }

    #[test]
    fn too_few_passes_and_imports_get_no_verdict_with_reason() {
        let r = d(&[100.0, 101.0], &[120.0, 121.0]);
        assert_eq!(r.verdict, SystemVerdict::NoVerdict);
        assert!(r.reason.unwrap().contains("too few kept passes"));
        let mut imp = test_with(&[100.0]);
        imp.passes.clear();
        let (r, _) = compare_test(
            &imp,
            &test_with(&[120.0, 121.0, 119.0]),
            SystemSource::UnixbenchImport,
            SystemSource::Kurabe,
            NOISE_BAND,
        );
        assert_eq!(r.verdict, SystemVerdict::NoVerdict);
        assert!(r.reason.unwrap().contains("single numbers"));
        assert!((r.ratio.unwrap() - 1.2).abs() < 0.01);
    }

    #[test]
    fn welch_by_hand() {
        // logs a = {0, 1, 2}: mean 1, var 1; b = {1, 2, 3}: mean 2, var 1.
        // var of diff = 1/3 + 1/3, df = (2/3)² / (2·(1/3)²/2) = 4.
        let l = welch(&[0.0, 1.0, 2.0], &[1.0, 2.0, 3.0]).unwrap();
        assert!((l.d - 1.0).abs() < 1e-12);
        assert!((l.spread.var_of_mean - 2.0 / 3.0).abs() < 1e-12);
        assert!((l.spread.df - 4.0).abs() < 1e-12);
    }
}
