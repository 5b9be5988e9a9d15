//! From finished runs to verdicts and check results.
//!
//! [`analyse`] groups the successful runs' metric values by workload,
//! metric and variant, summarises each group and compares every variant
//! with the baseline ([`kurabe_model::stats::compare`]). [`evaluate_checks`]
//! reads the plan's `[[check]]`s against that. Pure functions over data, so
//! the runner (for `--until-confident`), the binary (for its table and exit
//! code) and tests share them. No I/O, no printing.

use kurabe_model::plan::{Bound, Check, CheckStat, Plan};
use kurabe_model::stats::{compare_metric, metric, Comparison, Metric, Summary};
use kurabe_store::{RunRecord, RunStatus};

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
    let baseline = plan
        .baseline_name()
        .or_else(|| variants.first().cloned())
        .unwrap_or_default();
    let mut rows = Vec::new();
    for w in &plan.workloads {
        for name in w.selected_metrics() {
            let Some(m) = metric::lookup(&name) else {
                continue;
            };
            let m = m.clone().with_noise_band(plan.noise_band_for(&name));
            let samples_of = |variant: &str| -> Vec<f64> {
                runs.iter()
                    .filter(|r| {
                        r.status == RunStatus::Ok && r.workload == w.name && r.variant == variant
                    })
                    .filter_map(|r| r.metrics.iter().find(|v| v.name == name))
                    .map(|v| v.value)
                    .filter(|v| v.is_finite())
                    .collect()
            };
            let base = samples_of(&baseline);
            for v in variants {
                let samples = samples_of(v);
                let comparison = (*v != baseline && !samples.is_empty() && !base.is_empty())
                    .then(|| compare_metric(&name, &base, &samples, m.direction, m.noise_band));
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
            .all(|r| r.comparison.is_some_and(|c| c.verdict.is_settled()))
    }
}

/// The metrics `--until-confident` waits for: the first selected metric of
/// every workload, plus every metric a `[[check]]` names.
pub fn headline_metrics(plan: &Plan) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for w in &plan.workloads {
        let selected = w.selected_metrics();
        if let Some(first) = selected.first() {
            out.push((w.name.clone(), first.clone()));
        }
        for c in &plan.checks {
            let applies = c.workload.as_ref().is_none_or(|n| *n == w.name);
            if applies && selected.contains(&c.metric) && c.is_ratio() {
                out.push((w.name.clone(), c.metric.clone()));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The outcome of one check on one (workload, variant).
#[derive(Debug, Clone, PartialEq)]
pub struct CheckResult {
    /// Human description: `work 100us / GET / requests_per_second: ratio 0.52 ≤ 1`.
    pub description: String,
    /// Whether it passed.
    pub passed: bool,
}

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
        let rows: Vec<&Row> = analysis
            .rows
            .iter()
            .filter(|r| r.metric.name == check.metric)
            .filter(|r| check.workload.as_ref().is_none_or(|w| *w == r.workload))
            .filter(|r| match &check.variant {
                Some(v) => r.variant == *v,
                None => !check.is_ratio() || r.variant != analysis.baseline,
            })
            .collect();
        let (op, ratio_threshold, _) = describe(check);
        if rows.is_empty() {
            out.push(CheckResult {
                description: format!(
                    "{}{}: no runs report this metric",
                    check
                        .variant
                        .as_deref()
                        .map(|v| format!("{v} / "))
                        .unwrap_or_default(),
                    check.metric
                ),
                passed: false,
            });
            continue;
        }
        for r in rows {
            let who = format!("{} / {} / {}", r.variant, r.workload, r.metric.name);
            let (value, threshold, what) = if check.is_ratio() {
                (
                    r.comparison.and_then(|c| c.ratio),
                    ratio_threshold,
                    "ratio to baseline".to_owned(),
                )
            } else {
                let t = match &check.bound {
                    Bound::Min(t) | Bound::Max(t) => t.value_for(&m).unwrap_or(f64::NAN),
                    _ => f64::NAN,
                };
                let v = r.summary.as_ref().and_then(|s| match check.stat {
                    CheckStat::GeometricMean => s.geometric_mean,
                    CheckStat::Median => Some(s.median),
                    CheckStat::Min => Some(s.min),
                    CheckStat::Max => Some(s.max),
                });
                let stat = match check.stat {
                    CheckStat::GeometricMean => "geometric mean",
                    CheckStat::Median => "median",
                    CheckStat::Min => "min",
                    CheckStat::Max => "max",
                };
                (v, t, stat.to_owned())
            };
            let (passed, shown) = match value {
                Some(v) if v.is_finite() && threshold.is_finite() => {
                    (check.passes(v, threshold), format!("{v:.4}"))
                }
                _ => (false, "no value".to_owned()),
            };
            out.push(CheckResult {
                description: format!("{who}: {what} {shown} {op} {threshold}"),
                passed,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use kurabe_model::stats::Verdict;
    use kurabe_store::MetricValue;

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
}
