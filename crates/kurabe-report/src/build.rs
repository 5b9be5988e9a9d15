//! Stored experiment → [`ExperimentReport`]: group runs by workload and
//! variant, summarise every metric, compare each variant with the baseline.
//!
//! A pure function of the stored data. The experiment's layout (its plan,
//! read once by the store) gives the variant and workload order, the
//! baseline and the noise bands; without one (an import, a plan from a
//! future kurabe), the order runs were first seen in is used and the
//! baseline is the first variant. Every verdict comes from
//! `kurabe_model::stats` ([`kurabe_model::stats::decide`]). It must not
//! parse the plan, read files or the clock.

use std::collections::BTreeMap;

use crate::summarised::{compare_parts, Parts, FROM_SUMMARY};
use kurabe_model::experiment::{
    ExperimentReport, FailedRun, MetricReport, RunLoad, RunSeries, SeriesPoint, VariantMetric,
    VersusBaseline, WarmupCheck, WorkloadReport,
};
use kurabe_model::layout::{noise_band_for, Layout};
use kurabe_model::profile::{Per, ProfileReport, ProfiledRun};
use kurabe_model::record::{Experiment, RunStatus, StoredRun};
use kurabe_model::run_detail::RunDetail;
use kurabe_model::stats::warmup::Settling;
use kurabe_model::stats::{compare_metric, metric, Direction, Summary, Unit};
use kurabe_model::SCHEMA_VERSION;

use crate::words;

/// Metrics shown in the compact table when present, most telling first.
const HEADLINE: &[&str] = &[
    "requests_per_second",
    // A soak workload's answer; absent from every other workload.
    "pss_slope_bytes_per_request",
    // A command measured by instructions: the count is its only metric.
    "instructions",
    "wall_time_s",
    "system_index",
    "latency_p99_us",
    "cpu_percent_mean",
    "pss_peak_bytes",
    "max_rss_bytes",
    "user_time_s",
    "system_time_s",
    "system_used_bytes",
    "cpu_ms_per_request",
    "pss_steady_bytes",
];

/// Columns of the compact table.
const HEADLINE_COLUMNS: usize = 4;

/// Build the report of a stored experiment.
pub fn experiment_report(exp: &Experiment) -> ExperimentReport {
    let plan = exp.layout.as_deref();
    let mut runs: Vec<&StoredRun> = exp.runs.iter().collect();
    // Stable: runs of one round keep the order they were recorded in.
    runs.sort_by_key(|s| s.run.round);
    let (variants, baseline) = variant_order(plan, &runs);
    let failures = failed_runs(exp);
    ExperimentReport {
        schema_version: SCHEMA_VERSION,
        id: exp.id.to_string(),
        name: exp.name.clone(),
        status: exp.status.to_string(),
        started_at: exp.started_at.clone(),
        finished_at: exp.finished_at.clone(),
        tool_version: exp.tool_version.clone(),
        host: exp.host.clone(),
        variants_without_runs: without_runs(&variants, &runs),
        workloads: workloads(plan, &runs, &variants, baseline.as_deref()),
        baseline,
        variants,
        runs_total: exp.runs.len() as u64,
        runs_failed: failures.len() as u64,
        failures,
        plan_text: exp.plan_text.clone(),
    }
}

/// The variants in plan order (then as first seen), and the baseline: the
/// declared one stays the baseline even when it has no runs (interrupted
/// before it ran): it is listed, marked, never replaced; else the first.
fn variant_order(plan: Option<&Layout>, runs: &[&StoredRun]) -> (Vec<String>, Option<String>) {
    let plan_variants: Vec<String> = plan.map(|p| p.variants.clone()).unwrap_or_default();
    let declared = plan.and_then(|p| p.baseline.clone());
    let seen = runs.iter().map(|r| r.run.variant.as_str());
    let variants = ordered(plan_variants, seen.chain(declared.as_deref()));
    let baseline = declared.or_else(|| variants.first().cloned());
    (variants, baseline)
}

/// The variants without a successful run.
fn without_runs(variants: &[String], runs: &[&StoredRun]) -> Vec<String> {
    variants
        .iter()
        .filter(|v| {
            !runs
                .iter()
                .any(|r| &r.run.variant == *v && r.run.status == RunStatus::Ok)
        })
        .cloned()
        .collect()
}

/// A report per workload (plan order, then as first seen) that has variants.
fn workloads(
    plan: Option<&Layout>,
    runs: &[&StoredRun],
    variants: &[String],
    baseline: Option<&str>,
) -> Vec<WorkloadReport> {
    let plan_workloads: Vec<String> = plan.map(|p| p.workloads.clone()).unwrap_or_default();
    let names = ordered(plan_workloads, runs.iter().map(|r| r.run.workload.as_str()));
    let band = |m: &str| noise_band_for(plan, m);
    names
        .iter()
        .map(|w| {
            let wr: Vec<&StoredRun> = runs
                .iter()
                .copied()
                .filter(|r| &r.run.workload == w)
                .collect();
            // Without a plan (an import: each workload has its own
            // variants) the baseline is the workload's first variant.
            let own = plan
                .is_none()
                .then(|| wr.first().map(|r| r.run.variant.as_str()));
            let mut report = workload(w, &wr, variants, own.unwrap_or(baseline), &band);
            report.baseline = own
                .flatten()
                .filter(|o| Some(*o) != baseline)
                .map(str::to_owned);
            report
        })
        .filter(|w| !w.variants.is_empty())
        .collect()
}

/// The failed runs, with the tail of their error output.
fn failed_runs(exp: &Experiment) -> Vec<FailedRun> {
    exp.runs
        .iter()
        .filter(|r| r.run.status == RunStatus::Failed)
        .map(|r| FailedRun {
            variant: r.run.variant.clone(),
            workload: r.run.workload.clone(),
            round: r.run.round,
            error_tail: r.run.error_tail.clone(),
        })
        .collect()
}

/// `preferred` names that occur in `seen`, then the rest of `seen` in first-seen order.
fn ordered<'a>(preferred: Vec<String>, seen: impl Iterator<Item = &'a str>) -> Vec<String> {
    let seen: Vec<&str> = seen.collect();
    let mut out: Vec<String> = preferred
        .into_iter()
        .filter(|p| seen.contains(&p.as_str()))
        .collect();
    for s in seen {
        if !out.iter().any(|o| o == s) {
            out.push(s.to_owned());
        }
    }
    out
}

fn workload(
    name: &str,
    runs: &[&StoredRun],
    all_variants: &[String],
    baseline: Option<&str>,
    band: &dyn Fn(&str) -> f64,
) -> WorkloadReport {
    let variants = ran(all_variants, runs, baseline);
    let ok: Vec<&StoredRun> = runs.iter().copied().filter(|r| is_ok(r)).collect();
    let (units, names) = metric_names(&ok);
    let metrics: Vec<MetricReport> = names
        .iter()
        .map(|&m| metric_report(m, units[m], &ok, &variants, baseline, band(m)))
        .collect();
    WorkloadReport {
        baseline: None,
        name: name.to_owned(),
        headline: headline(&units, &names),
        metrics,
        series: ok.iter().filter_map(|r| run_series(r)).collect(),
        load: ok.iter().filter_map(|r| run_load(r)).collect(),
        soak: ok
            .iter()
            .filter_map(|r| crate::soak::soak_series(r))
            .collect(),
        warmup: warmup_checks(&variants, &ok),
        requests: crate::requests::request_reports(&ok, &variants, baseline, band),
        slos: slos(&ok),
        thresholds: crate::thresholds::variant_thresholds(&variants, &ok),
        profile: profile_report(&ok, &variants, baseline, band("cpu_ms_per_request")),
        variants,
    }
}

/// The profiled runs (`--profile`: a command's executions, an http run's
/// server) and each variant against the baseline; none when no run was
/// profiled.
fn profile_report(
    ok: &[&StoredRun],
    variants: &[String],
    baseline: Option<&str>,
    band: f64,
) -> Option<ProfileReport> {
    let mut per = Per::Execution;
    let runs: Vec<ProfiledRun> = ok
        .iter()
        .filter_map(|r| {
            let profile = match r.run.record.as_ref()? {
                RunDetail::Command(c) => c.profile.clone()?,
                RunDetail::Http(h) => {
                    per = Per::Request;
                    h.http.profile.clone()?
                }
                _ => return None,
            };
            let (variant, round) = (r.run.variant.clone(), r.run.round);
            Some(ProfiledRun {
                variant,
                round,
                profile,
            })
        })
        .collect();
    if runs.is_empty() {
        return None;
    }
    let names: Vec<&str> = baseline
        .into_iter()
        .chain(
            variants
                .iter()
                .map(String::as_str)
                .filter(|v| Some(*v) != baseline),
        )
        .collect();
    Some(ProfileReport::of(per, runs, &names, band))
}

/// The SLOs of the workload's capacity searches (the first run's: a
/// workload's runs share its spec).
fn slos(ok: &[&StoredRun]) -> Vec<String> {
    ok.iter()
        .find_map(|r| match r.run.record.as_ref()? {
            RunDetail::Capacity(c) => Some(c.slos.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

fn is_ok(r: &StoredRun) -> bool {
    r.run.status == RunStatus::Ok
}

/// The variants that ran this workload, and the baseline in any case.
fn ran(all_variants: &[String], runs: &[&StoredRun], baseline: Option<&str>) -> Vec<String> {
    all_variants
        .iter()
        .filter(|v| runs.iter().any(|r| &r.run.variant == *v) || baseline == Some(v.as_str()))
        .cloned()
        .collect()
}

/// The unit of each metric the runs measured, and the names: catalogue
/// order first, then unknown ones as first seen.
fn metric_names<'a>(ok: &[&'a StoredRun]) -> (BTreeMap<&'a str, &'a str>, Vec<&'a str>) {
    let mut units: BTreeMap<&str, &str> = BTreeMap::new();
    let mut seen: Vec<&str> = Vec::new();
    for r in ok {
        for m in &r.run.metrics {
            if units.insert(&m.name, &m.unit).is_none() {
                seen.push(&m.name);
            }
        }
    }
    let mut names: Vec<&str> = metric::names().filter(|n| units.contains_key(n)).collect();
    names.extend(seen.iter().filter(|n| metric::lookup(n).is_none()));
    (units, names)
}

/// The compact table's columns: the headline metrics measured, else the first ones.
fn headline(units: &BTreeMap<&str, &str>, names: &[&str]) -> Vec<String> {
    let headline: Vec<String> = HEADLINE
        .iter()
        .filter(|h| units.contains_key(*h))
        .take(HEADLINE_COLUMNS)
        .map(|h| h.to_string())
        .collect();
    if !headline.is_empty() {
        return headline;
    }
    names
        .iter()
        .take(HEADLINE_COLUMNS)
        .map(|n| n.to_string())
        .collect()
}

/// Per variant, the runs whose series settled after their warm-up ended
/// (`record.settling`, written by the runner), when there are any.
fn warmup_checks(variants: &[String], ok: &[&StoredRun]) -> Vec<WarmupCheck> {
    let series: [(&str, SettlingOf); 2] = [
        ("cpu_percent", RunDetail::settling),
        ("completed_per_s", RunDetail::throughput_settling),
    ];
    let mut checks = Vec::new();
    for v in variants {
        for (name, of) in series {
            let found: Vec<(f64, Settling)> = ok
                .iter()
                .filter(|r| &r.run.variant == v)
                .filter_map(|r| settling_of(r, of))
                .collect();
            checks.extend(warmup_check(v, name, &found));
        }
    }
    checks
}

/// Which of a run's settling judgements to read.
type SettlingOf = fn(&RunDetail) -> Option<&kurabe_model::run_detail::SettlingDetail>;

/// The run's warm-up and where its series settled, if it was judged.
fn settling_of(run: &StoredRun, of: SettlingOf) -> Option<(f64, Settling)> {
    let s = of(run.run.record.as_ref()?)?;
    Some((s.warmup_s, s.found?))
}

fn warmup_check(variant: &str, series: &str, found: &[(f64, Settling)]) -> Option<WarmupCheck> {
    let mut late: Vec<f64> = found
        .iter()
        .filter(|(_, s)| s.settled_at_s > 0.0)
        .map(|(w, s)| w + s.settled_at_s)
        .collect();
    if late.is_empty() {
        return None;
    }
    late.sort_by(f64::total_cmp);
    Some(WarmupCheck {
        variant: variant.to_owned(),
        series: series.into(),
        warmup_s: found[0].0,
        settled_after_s: late[late.len() / 2],
        runs_late: late.len() as u32,
        runs: found.len() as u32,
        runs_unsteady: found.iter().filter(|(_, s)| !s.steady).count() as u32,
    })
}

/// One metric in a workload's successful runs, with what judges it.
struct MetricRuns<'a> {
    name: &'a str,
    ok: &'a [&'a StoredRun],
    unit: Unit,
    direction: Option<Direction>,
    band: f64,
}

impl MetricRuns<'_> {
    /// The finite values variant `v`'s runs measured.
    fn samples(&self, v: &str) -> Vec<f64> {
        self.ok
            .iter()
            .filter(|r| r.run.variant == v)
            .flat_map(|r| r.run.metrics.iter().filter(|m| m.name == self.name))
            .map(|m| m.value)
            .filter(|x| x.is_finite())
            .collect()
    }

    /// Each variant's samples and their summary.
    fn per_variant(&self, variants: &[String]) -> Vec<VariantMetric> {
        variants
            .iter()
            .map(|v| {
                let s = self.samples(v);
                VariantMetric {
                    variant: v.clone(),
                    summary: Summary::of(&s),
                    samples: s,
                }
            })
            .collect()
    }

    /// Variant `v` against the baseline `base` (whose samples are `base_samples`).
    fn versus(&self, base: &str, base_samples: &[f64], v: &str) -> VersusBaseline {
        // An unknown metric still gets an interval; its verdict is not worded as good or bad.
        let dir = self.direction.unwrap_or(Direction::HigherIsBetter);
        let parts = |v: &str| {
            let runs = self.ok.iter().filter(|r| r.run.variant == v);
            Parts::of(runs.map(|r| &r.run), self.name)
        };
        let summarised = compare_parts(&parts(base), &parts(v), dir, self.band);
        let c = summarised.map_or_else(
            || compare_metric(self.name, base_samples, &self.samples(v), dir, self.band),
            |s| s.0,
        );
        let (tone, mut phrase) = words::verdict(self.name, self.unit, self.direction, &c);
        if summarised.is_some() {
            phrase.push_str(FROM_SUMMARY);
        }
        VersusBaseline {
            variant: v.to_owned(),
            baseline: base.to_owned(),
            comparison: c,
            tone,
            phrase,
        }
    }

    /// Every variant but the baseline against it; none when the baseline
    /// has no runs (nothing to compare against).
    fn versus_all(&self, variants: &[String], baseline: Option<&str>) -> Vec<VersusBaseline> {
        let Some(base) = baseline else {
            return Vec::new();
        };
        let base_samples = self.samples(base);
        if base_samples.is_empty() {
            return Vec::new();
        }
        variants
            .iter()
            .filter(|v| *v != base)
            .map(|v| self.versus(base, &base_samples, v))
            .collect()
    }
}

fn metric_report(
    name: &str,
    unit_text: &str,
    ok: &[&StoredRun],
    variants: &[String],
    baseline: Option<&str>,
    band: f64,
) -> MetricReport {
    let known = metric::lookup(name);
    let m = MetricRuns {
        name,
        ok,
        unit: known
            .as_ref()
            .map_or_else(|| unit_from_text(unit_text), |m| m.unit),
        direction: known.as_ref().map(|m| m.direction),
        band,
    };
    MetricReport {
        name: name.to_owned(),
        unit: m.unit,
        direction: m.direction,
        description: known.map(|m| m.description).unwrap_or_default(),
        variants: m.per_variant(variants),
        versus_baseline: m.versus_all(variants, baseline),
    }
}

/// Best guess of the unit of a metric kurabe does not know, from its unit text.
pub(crate) fn unit_from_text(text: &str) -> Unit {
    match text.trim().to_ascii_lowercase().as_str() {
        "b" | "bytes" | "byte" => Unit::Bytes,
        "s" | "seconds" => Unit::Seconds,
        "ms" | "milliseconds" => Unit::Milliseconds,
        "us" | "µs" | "microseconds" => Unit::Microseconds,
        "%" | "percent" => Unit::Percent,
        "/s" | "per_second" | "req/s" => Unit::PerSecond,
        "score" | "index" => Unit::Score,
        _ => Unit::Count,
    }
}

/// CPU and memory over time from a run's record: the sampled tree's
/// series (the target of an HTTP run, the watched tree).
fn run_series(run: &StoredRun) -> Option<RunSeries> {
    let series = &run.run.record.as_ref()?.target()?.series;
    let points: Vec<SeriesPoint> = series
        .iter()
        .map(|p| SeriesPoint {
            t_s: p.t_s,
            cpu_percent: Some(p.cpu_percent),
            pss_bytes: Some(p.size.pss_bytes as f64),
        })
        .collect();
    (points.len() >= 2).then(|| RunSeries {
        variant: run.run.variant.clone(),
        round: run.run.round,
        points,
    })
}

/// The load's per-second series from an HTTP run's record, when it has
/// two seconds or more (one point draws no line).
fn run_load(run: &StoredRun) -> Option<RunLoad> {
    let intervals = &run.run.record.as_ref()?.http()?.series;
    (intervals.len() >= 2).then(|| RunLoad {
        variant: run.run.variant.clone(),
        round: run.run.round,
        intervals: intervals.clone(),
    })
}

/// `kurabe http URL_A URL_B --format json`: `comparison` (the experiment
/// report of `exp`) plus every run's full HTTP record.
pub fn http_compare(
    exp: &Experiment,
    urls: &[String],
    rounds: u32,
    comparison: kurabe_model::experiment::ExperimentReport,
) -> kurabe_model::http::HttpCompare {
    // As JSON values (keys in order), as this document has always printed them.
    let runs = exp.runs.iter().map(|r| {
        let detail = r.run.record.as_ref();
        kurabe_model::http::HttpCompareRun {
            url: r.run.variant.clone(),
            round: r.run.round,
            status: r.run.status,
            error: r.run.error_tail.clone(),
            // Its profile is the comparison's (`workloads[].profile.runs`), once.
            http: detail
                .and_then(RunDetail::http)
                .map(|h| kurabe_model::http::HttpReport {
                    profile: None,
                    ..h.clone()
                })
                .and_then(|h| serde_json::to_value(h).ok()),
            server: detail
                .and_then(RunDetail::target)
                .and_then(|t| serde_json::to_value(t).ok()),
        }
    });
    kurabe_model::http::HttpCompare {
        schema_version: kurabe_model::SCHEMA_VERSION,
        urls: urls.to_vec(),
        rounds,
        comparison,
        runs: runs.collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::sample_experiment;
    use kurabe_model::experiment::Tone;

    #[test]
    fn groups_summarises_and_compares_against_the_plan_baseline() {
        let r = experiment_report(&sample_experiment());
        assert_eq!(r.variants, ["ruby", "ruby + big heap"]);
        assert_eq!(r.baseline.as_deref(), Some("ruby"));
        assert_eq!(r.runs_total, 7);
        assert_eq!(r.runs_failed, 1);
        assert_eq!(r.failures[0].error_tail.as_deref(), Some("out of memory"));
        let w = &r.workloads[0];
        assert_eq!(w.name, "index page");
        assert_eq!(
            w.headline,
            [
                "requests_per_second",
                "pss_peak_bytes",
                "cpu_ms_per_request"
            ]
        );
        let rps = &w.metrics[0];
        assert_eq!(rps.name, "requests_per_second");
        assert_eq!(rps.variants[0].samples, [105.0, 106.2, 107.4]);
        assert_eq!(rps.variants[1].summary.unwrap().n, 3);
        let vs = &rps.versus_baseline[0];
        assert_eq!(vs.variant, "ruby + big heap");
        assert_eq!(vs.tone, Tone::Good);
        assert!(
            vs.phrase.contains("] faster (could detect ≥ "),
            "{}",
            vs.phrase
        );
        // Three runs a side, ±1 % spread: about 3.4 % could be detected.
        let mde = vs.comparison.detectable_change_pct.unwrap();
        assert!((3.0..4.0).contains(&mde), "{mde}");
        let pss = w
            .metrics
            .iter()
            .find(|m| m.name == "pss_peak_bytes")
            .unwrap();
        assert_eq!(pss.versus_baseline[0].tone, Tone::Bad);
        assert_eq!(w.series.len(), 1);
        assert_eq!(w.series[0].points.len(), 3);
    }

    #[test]
    fn unparsable_plan_falls_back_to_first_seen_order() {
        let mut e = sample_experiment();
        e.layout = None;
        e.runs.reverse();
        let r = experiment_report(&e);
        assert_eq!(r.baseline.as_deref(), Some(r.variants[0].as_str()));
        assert_eq!(r.variants.len(), 2);
    }

    #[test]
    fn unknown_metric_keeps_its_unit_text_and_no_direction() {
        let mut e = sample_experiment();
        for r in &mut e.runs {
            r.run.metrics.push(kurabe_model::record::MetricValue {
                name: "frobs_bytes".into(),
                value: 1000.0,
                unit: "bytes".into(),
            });
        }
        let r = experiment_report(&e);
        let m = r.workloads[0].metrics.last().unwrap();
        assert_eq!(m.name, "frobs_bytes");
        assert_eq!(m.unit, Unit::Bytes);
        assert_eq!(m.direction, None);
        assert_eq!(m.versus_baseline[0].tone, Tone::Neutral);
    }
}
