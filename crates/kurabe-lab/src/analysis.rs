//! From finished runs to verdicts and check results.
//!
//! [`analyse`] groups the successful runs' metric values by workload,
//! metric and variant, summarises each group and compares every variant
//! with the baseline ([`kurabe_model::stats::compare()`]). [`evaluate_checks`]
//! reads the plan's `[[check]]`s against that. Pure functions over data, so
//! the runner (for `--until-confident`), the binary (for its table and exit
//! code) and tests share them. No I/O, no printing.

use kurabe_model::plan::{Bound, Check, CheckStat, Plan};
use kurabe_model::record::{RunRecord, RunStatus};
use kurabe_model::stats::{
    compare_metric_at, metric, Comparison, Metric, NoIntervalReason, Summary, Verdict, CONFIDENCE,
};
use kurabe_model::tree_counters::Counter;

/// One variant's figures on one metric of one workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Workload name.
    pub workload: String,
    /// The metric, with the plan's noise band.
    pub metric: Metric,
    /// Variant name.
    pub variant: String,
    /// Successful runs' values, in run order.
    pub samples: Vec<f64>,
    /// Summary of `samples` (None without samples).
    pub summary: Option<Summary>,
    /// Against the baseline (None for the baseline itself).
    pub comparison: Option<Comparison>,
}

/// Every row of an experiment, in plan order (workload, metric, variant).
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    /// Baseline variant.
    pub baseline: String,
    /// The rows.
    pub rows: Vec<Row>,
}

/// Analyse `runs` of `plan` whose variants are `variants` (resolved names, plan order).
pub fn analyse(plan: &Plan, variants: &[String], runs: &[RunRecord]) -> Analysis {
    analyse_at(plan, variants, runs, CONFIDENCE)
}

/// The process-tree counters (`minor_faults_per_request`, …) the runs of
/// `workload` recorded and it did not select, in catalogue order: judged
/// beside the selected metrics in every report, but not headline metrics
/// (`--until-confident` does not wait for them).
fn counters_seen(runs: &[RunRecord], workload: &str, selected: &[String]) -> Vec<String> {
    let seen: std::collections::HashSet<&str> = runs
        .iter()
        .filter(|r| r.workload == workload)
        .flat_map(|r| r.metrics.iter().map(|m| m.name.as_str()))
        .collect();
    metric::names()
        .filter(|n| Counter::is_metric(n) && seen.contains(n))
        .filter(|n| !selected.iter().any(|s| s == n))
        .map(str::to_owned)
        .collect()
}

/// The finite values of `metric` in the successful runs of `variant` × `workload`.
fn samples_of(runs: &[RunRecord], workload: &str, metric: &str, variant: &str) -> Vec<f64> {
    runs.iter()
        .filter(|r| r.status == RunStatus::Ok && r.workload == workload && r.variant == variant)
        .filter_map(|r| r.metrics.iter().find(|v| v.name == metric))
        .map(|v| v.value)
        .filter(|v| v.is_finite())
        .collect()
}

/// [`analyse`] with intervals at `confidence` instead of the reported 95 %:
/// the `--until-confident` stop decision reads [`STOP_CONFIDENCE`] intervals.
pub fn analyse_at(
    plan: &Plan,
    variants: &[String],
    runs: &[RunRecord],
    confidence: f64,
) -> Analysis {
    let baseline = plan
        .baseline_name()
        .or_else(|| variants.first().cloned())
        .unwrap_or_default();
    let mut rows = Vec::new();
    for w in &plan.workloads {
        let selected = w.selected_metrics();
        let counters = counters_seen(runs, &w.name, &selected);
        for name in selected.into_iter().chain(counters) {
            let Some(m) = metric::lookup(&name) else {
                continue;
            };
            let m = m.clone().with_noise_band(plan.noise_band_for(&name));
            let base = samples_of(runs, &w.name, &name, &baseline);
            for v in variants {
                let samples = samples_of(runs, &w.name, &name, v);
                let compared = *v != baseline && !samples.is_empty() && !base.is_empty();
                let comparison = compared.then(|| {
                    let (d, band) = (m.direction, m.noise_band);
                    compare_metric_at(&name, &base, &samples, d, band, confidence)
                });
                rows.push(Row {
                    workload: w.name.clone(),
                    metric: m.clone(),
                    variant: v.clone(),
                    summary: Summary::of(&samples),
                    samples,
                    comparison,
                });
            }
        }
    }
    Analysis { baseline, rows }
}

impl Analysis {
    /// The row for (workload, metric, variant).
    pub fn row(&self, workload: &str, metric: &str, variant: &str) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.workload == workload && r.metric.name == metric && r.variant == variant)
    }

    /// True when every comparison on the `headline` metrics (workload,
    /// metric pairs) has a settled verdict: better, worse, or within noise
    /// with the whole interval inside the band (not inconclusive).
    pub fn settled(&self, headline: &[(String, String)]) -> bool {
        self.rows
            .iter()
            .filter(|r| r.variant != self.baseline)
            .filter(|r| {
                headline
                    .iter()
                    .any(|(w, m)| *w == r.workload && *m == r.metric.name)
            })
            .all(|r| {
                r.comparison
                    .is_some_and(|c| c.verdict.is_settled() || unsettleable(&c))
            })
    }
}

/// A ratio with a zero on one side (a command's system time below the
/// clock's resolution) has no interval however many rounds run; waiting
/// for it would only burn the time budget.
fn unsettleable(c: &Comparison) -> bool {
    matches!(
        c.verdict,
        Verdict::NoInterval {
            reason: NoIntervalReason::NonPositiveValue
        }
    )
}

/// The headline metrics `--until-confident` waits for: every metric a
/// workload selects (its `metrics`, else its kind's defaults) — the same
/// metrics the report shows verdicts for — as (workload, metric) pairs.
pub fn headline_metrics(plan: &Plan) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for w in &plan.workloads {
        for m in w.selected_metrics() {
            out.push((w.name.clone(), m));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Most looks `--until-confident` takes at the data. The first look is
/// after the plan's `repeat` rounds; each later one after the rounds done
/// so far have doubled, so five looks reach 16 × `repeat` rounds.
pub const MAX_LOOKS: u32 = 5;

/// Confidence level of the intervals the `--until-confident` stop decision
/// reads: Bonferroni over [`MAX_LOOKS`] looks, 1 − 0.05 / 5 = 99 %.
///
/// Looking after every round and stopping at the first settled verdict is
/// optional stopping: with enough looks a 95 % interval will, by chance,
/// clear the band for a difference that is not there. Spending the 5 %
/// error over at most five looks keeps the chance of stopping on a false
/// verdict at or below 5 % in total. The reported verdicts use the normal
/// 95 % interval; a verdict settled at 99 % is settled at 95 % too.
pub const STOP_CONFIDENCE: f64 = 1.0 - (1.0 - CONFIDENCE) / MAX_LOOKS as f64;

/// What `--until-confident` does after a look at the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopDecision {
    /// Every headline verdict is settled at [`STOP_CONFIDENCE`]: stop.
    Settled,
    /// Run this many more rounds, then look again.
    MoreRounds(usize),
    /// Not settled after [`MAX_LOOKS`] looks: stop, verdicts as they are.
    OutOfLooks,
}

/// The `--until-confident` stop rule, after `rounds` rounds (at least the
/// plan's `repeat`) and look number `look` (1-based) whose stop-level
/// analysis ([`analyse_at`] with [`STOP_CONFIDENCE`]) is `at_stop_level`.
/// The time budget is the runner's business: it may run fewer rounds.
pub fn stop_decision(
    at_stop_level: &Analysis,
    headline: &[(String, String)],
    look: u32,
    rounds: usize,
) -> StopDecision {
    if at_stop_level.settled(headline) {
        StopDecision::Settled
    } else if look >= MAX_LOOKS {
        StopDecision::OutOfLooks
    } else {
        StopDecision::MoreRounds(rounds.max(1))
    }
}

pub use kurabe_model::progress::CheckResult;

fn describe(check: &Check) -> (String, f64, &'static str) {
    let (word, v) = match &check.bound {
        Bound::MinRatio(v) => ("≥", *v),
        Bound::MaxRatio(v) => ("≤", *v),
        Bound::Min(_) => ("≥", f64::NAN),
        Bound::Max(_) => ("≤", f64::NAN),
    };
    (
        word.to_owned(),
        v,
        if check.is_ratio() { "ratio" } else { "" },
    )
}

/// Evaluate every `[[check]]` against `analysis`. A check with nothing to
/// look at (no runs of that variant) fails: CI must not pass on no data.
pub fn evaluate_checks(plan: &Plan, analysis: &Analysis) -> Vec<CheckResult> {
    let mut out = Vec::new();
    for check in &plan.checks {
        let Some(m) = metric::lookup(&check.metric) else {
            continue;
        };
        let rows = check_rows(check, analysis);
        if rows.is_empty() {
            let variant = check.variant.as_deref().map(|v| format!("{v} / "));
            out.push(CheckResult {
                description: format!(
                    "{}{}: no runs report this metric",
                    variant.unwrap_or_default(),
                    check.metric
                ),
                passed: false,
            });
            continue;
        }
        out.extend(rows.into_iter().map(|r| check_row(check, &m, r)));
    }
    out
}

/// The rows `check` looks at: its metric, workload and variant (a ratio
/// check without a variant: every variant but the baseline).
fn check_rows<'a>(check: &Check, analysis: &'a Analysis) -> Vec<&'a Row> {
    analysis
        .rows
        .iter()
        .filter(|r| r.metric.name == check.metric)
        .filter(|r| check.workload.as_ref().is_none_or(|w| *w == r.workload))
        .filter(|r| match &check.variant {
            Some(v) => r.variant == *v,
            None => !check.is_ratio() || r.variant != analysis.baseline,
        })
        .collect()
}

/// `check` on one row: the value looked at, its threshold, pass or fail.
fn check_row(check: &Check, m: &metric::Metric, r: &Row) -> CheckResult {
    let (op, ratio_threshold, _) = describe(check);
    let who = format!("{} / {} / {}", r.variant, r.workload, r.metric.name);
    let (value, threshold, what) = if check.is_ratio() {
        let ratio = r.comparison.and_then(|c| c.ratio);
        (ratio, ratio_threshold, "ratio to baseline")
    } else {
        let t = match &check.bound {
            Bound::Min(t) | Bound::Max(t) => t.value_for(m).unwrap_or(f64::NAN),
            _ => f64::NAN,
        };
        let (v, stat) = checked_stat(check.stat, r.summary.as_ref());
        (v, t, stat)
    };
    let (passed, shown) = match value {
        Some(v) if v.is_finite() && threshold.is_finite() => {
            (check.passes(v, threshold), format!("{v:.4}"))
        }
        _ => (false, "no value".to_owned()),
    };
    CheckResult {
        description: format!("{who}: {what} {shown} {op} {threshold}"),
        passed,
    }
}

/// The statistic a bound check compares, and its name.
fn checked_stat(stat: CheckStat, s: Option<&Summary>) -> (Option<f64>, &'static str) {
    match stat {
        CheckStat::GeometricMean => (s.and_then(|s| s.geometric_mean), "geometric mean"),
        CheckStat::Median => (s.map(|s| s.median), "median"),
        CheckStat::Min => (s.map(|s| s.min), "min"),
        CheckStat::Max => (s.map(|s| s.max), "max"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kurabe_model::record::MetricValue;
    use kurabe_model::stats::Verdict;

    fn plan(extra: &str) -> Plan {
        let text = format!(
            r#"name = "t"
[target]
command = "true"
[[variant]]
name = "a"
[[variant]]
name = "b"
[[workload]]
name = "w"
http = {{ path = "/", requests = 10 }}
metrics = ["requests_per_second"]
{extra}"#
        );
        crate::parse_plan(&text, "t.toml").unwrap()
    }

    fn run(variant: &str, rps: f64) -> RunRecord {
        RunRecord {
            variant: variant.into(),
            workload: "w".into(),
            round: 0,
            status: RunStatus::Ok,
            error_tail: None,
            started_at: String::new(),
            finished_at: String::new(),
            metrics: vec![MetricValue {
                name: "requests_per_second".into(),
                value: rps,
                unit: "req/s".into(),
            }],
            record: None,
            http: None,
        }
    }

    fn runs(a: &[f64], b: &[f64]) -> Vec<RunRecord> {
        a.iter()
            .map(|&v| run("a", v))
            .chain(b.iter().map(|&v| run("b", v)))
            .collect()
    }

    #[test]
    fn a_clear_difference_is_worse_and_fails_a_min_ratio_check() {
        let p = plan(
            "[[check]]\nvariant = \"b\"\nmetric = \"requests_per_second\"\nmin_ratio = 0.95\n",
        );
        let names = vec!["a".to_owned(), "b".to_owned()];
        let a = analyse(
            &p,
            &names,
            &runs(&[100.0, 101.0, 99.0, 100.5], &[80.0, 81.0, 79.5, 80.2]),
        );
        let row = a.row("w", "requests_per_second", "b").unwrap();
        assert_eq!(row.comparison.unwrap().verdict, Verdict::Worse);
        assert!(a.settled(&headline_metrics(&p)));
        let checks = evaluate_checks(&p, &a);
        assert_eq!(checks.len(), 1);
        assert!(!checks[0].passed, "{checks:?}");
    }

    #[test]
    fn within_noise_settles_only_when_the_interval_is_inside_the_band() {
        let p = plan("");
        let names = vec!["a".to_owned(), "b".to_owned()];
        // Same median, ±5 % spread: within noise but straddling ±2 %.
        let wide = analyse(
            &p,
            &names,
            &runs(&[95.0, 100.0, 105.0], &[95.0, 100.0, 105.0]),
        );
        let v = wide
            .row("w", "requests_per_second", "b")
            .unwrap()
            .comparison
            .unwrap()
            .verdict;
        assert!(matches!(v, Verdict::Inconclusive { .. }), "{v:?}");
        assert!(!wide.settled(&headline_metrics(&p)));
        // ±0.1 %: the whole interval is inside the band.
        let tight = analyse(
            &p,
            &names,
            &runs(&[99.9, 100.0, 100.1], &[99.9, 100.0, 100.1]),
        );
        let v = tight
            .row("w", "requests_per_second", "b")
            .unwrap()
            .comparison
            .unwrap()
            .verdict;
        assert_eq!(v, Verdict::WithinNoise);
        assert!(tight.settled(&headline_metrics(&p)));
    }

    #[test]
    fn too_few_runs_are_not_settled_and_absolute_checks_use_the_stat() {
        let p = plan("[[check]]\nmetric = \"requests_per_second\"\nmin = 90\nstat = \"min\"\n");
        let names = vec!["a".to_owned(), "b".to_owned()];
        let a = analyse(&p, &names, &runs(&[100.0, 95.0], &[100.0, 89.0]));
        assert!(!a.settled(&headline_metrics(&p)));
        let checks = evaluate_checks(&p, &a);
        assert_eq!(
            checks.iter().map(|c| c.passed).collect::<Vec<_>>(),
            vec![true, false],
            "{checks:?}"
        );
    }

    #[test]
    fn failed_runs_are_left_out_and_a_check_without_data_fails() {
        let p =
            plan("[[check]]\nvariant = \"b\"\nmetric = \"requests_per_second\"\nmax_ratio = 2\n");
        let names = vec!["a".to_owned(), "b".to_owned()];
        let mut rs = runs(&[100.0, 100.0, 100.0], &[1.0]);
        rs[3].status = RunStatus::Failed;
        let a = analyse(&p, &names, &rs);
        assert!(a
            .row("w", "requests_per_second", "b")
            .unwrap()
            .samples
            .is_empty());
        assert!(!evaluate_checks(&p, &a)[0].passed);
    }

    /// Null-effect samples: 100 · (1 + 0.02 z), z standard normal from a
    /// fixed xorshift, so the test is deterministic.
    struct Noise(u64);
    impl Noise {
        fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        fn value(&mut self) -> f64 {
            let (u, v) = (self.uniform(), self.uniform());
            let z = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
            100.0 * (1.0 + 0.02 * z)
        }
    }

    fn is_false_difference(a: &Analysis) -> bool {
        let v = a.row("w", "requests_per_second", "b").unwrap();
        matches!(
            v.comparison.unwrap().verdict,
            Verdict::Better | Verdict::Worse
        )
    }

    #[test]
    fn the_stop_rule_needs_the_stricter_interval_and_gives_up_after_max_looks() {
        let p = plan("");
        let names = vec!["a".to_owned(), "b".to_owned()];
        let h = headline_metrics(&p);
        // b is ≈ 5.5 % slower: clear of the 2 % band at 95 %, not at 99 %.
        let data = runs(&[100.0, 102.0, 98.0, 100.0], &[94.0, 96.5, 92.0, 95.5]);
        let normal = analyse(&p, &names, &data);
        assert!(normal.settled(&h), "{normal:?}");
        let strict = analyse_at(&p, &names, &data, STOP_CONFIDENCE);
        assert!(!strict.settled(&h), "{strict:?}");
        assert_eq!(
            stop_decision(&strict, &h, 1, 4),
            StopDecision::MoreRounds(4)
        );
        assert_eq!(
            stop_decision(&strict, &h, MAX_LOOKS, 64),
            StopDecision::OutOfLooks
        );
        // A difference clear at 99 % stops at once.
        let clear = runs(&[100.0, 101.0, 99.0, 100.5], &[80.0, 81.0, 79.5, 80.2]);
        let strict = analyse_at(&p, &names, &clear, STOP_CONFIDENCE);
        assert_eq!(stop_decision(&strict, &h, 1, 4), StopDecision::Settled);
    }

    #[test]
    fn headline_metrics_are_every_selected_metric() {
        let p = plan("").clone();
        let mut two = p.clone();
        two.workloads[0].metrics =
            Some(vec!["requests_per_second".into(), "latency_p99_us".into()]);
        assert_eq!(headline_metrics(&p).len(), 1);
        assert_eq!(
            headline_metrics(&two),
            vec![
                ("w".to_owned(), "latency_p99_us".to_owned()),
                ("w".to_owned(), "requests_per_second".to_owned()),
            ]
        );
    }

    /// Optional stopping, simulated on a fake sequence of null-effect
    /// rounds (no timing): stopping at the first round whose 95 % verdict
    /// is settled reports a false "better"/"worse" far more often than the
    /// stop rule, which stays near the nominal 5 %.
    #[test]
    fn the_stop_rule_keeps_false_verdicts_near_five_percent() {
        let mut p = plan("");
        p.noise_band = Some(kurabe_model::plan::Fraction(0.005));
        let names = vec!["a".to_owned(), "b".to_owned()];
        let h = headline_metrics(&p);
        let (experiments, repeat, max_rounds) = (300, 3, 48);
        let mut noise = Noise(0x9E37_79B9_7F4A_7C15);
        let (mut naive_false, mut rule_false) = (0, 0);
        for _ in 0..experiments {
            let a: Vec<f64> = (0..max_rounds).map(|_| noise.value()).collect();
            let b: Vec<f64> = (0..max_rounds).map(|_| noise.value()).collect();
            let at = |n: usize, c: f64| analyse_at(&p, &names, &runs(&a[..n], &b[..n]), c);
            // Old rule: look after every round from `repeat` on.
            if let Some(n) = (repeat..=max_rounds).find(|&n| at(n, CONFIDENCE).settled(&h)) {
                naive_false += usize::from(is_false_difference(&at(n, CONFIDENCE)));
            }
            // The stop rule; the report then reads the 95 % interval.
            let (mut n, mut look) = (repeat, 1);
            while let StopDecision::MoreRounds(more) =
                stop_decision(&at(n, STOP_CONFIDENCE), &h, look, n)
            {
                n = (n + more).min(max_rounds);
                look += 1;
            }
            rule_false += usize::from(is_false_difference(&at(n, CONFIDENCE)));
        }
        let (naive, rule) = (
            naive_false as f64 / experiments as f64,
            rule_false as f64 / experiments as f64,
        );
        eprintln!("false verdicts: every-round 95 % {naive:.3}, stop rule {rule:.3}");
        assert!(rule <= 0.08, "stop rule: {rule}");
        assert!(
            naive > 2.0 * rule.max(0.03),
            "every-round: {naive}, rule: {rule}"
        );
    }
}
