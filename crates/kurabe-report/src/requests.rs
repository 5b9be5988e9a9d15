//! A workload's per-request breakdown across variants (A/B of URLs and
//! plans): for each request name in the runs' HTTP records, its req/s,
//! p50 and p99 per variant, each with ratio, interval and
//! verdict against the baseline, by the same statistics as the workload's
//! own metrics.
//!
//! Names are matched without their URL's scheme and host
//! (`GET http://a:1/x` and `GET http://b:2/x` are one row `/x`), since an
//! A/B sends the same requests to two origins. Owns that matching and the
//! rows. Must not read files or render.

use kurabe_model::experiment::{MetricReport, RequestReport, VariantMetric, VersusBaseline};
use kurabe_model::http::{HttpReport, RequestStats};
use kurabe_model::record::StoredRun;
use kurabe_model::stats::{compare_metric, metric, Direction, Summary};

use crate::words;

/// The metrics of each name's row, in order.
const METRICS: [&str; 3] = ["requests_per_second", "latency_p50_us", "latency_p99_us"];

/// `name` without the scheme and host of its URL (a method before the
/// URL stays): the key that matches one request across origins.
pub fn name_key(name: &str) -> String {
    let (method, url) = match name.split_once(' ') {
        Some((m, rest)) if !m.contains('/') => (Some(m), rest),
        _ => (None, name),
    };
    let path = ["http://", "https://"]
        .iter()
        .find_map(|s| url.strip_prefix(s))
        .map(|rest| match rest.find('/') {
            Some(i) => &rest[i..],
            None => "/",
        })
        .unwrap_or(url);
    match method {
        Some(m) => format!("{m} {path}"),
        None => path.to_owned(),
    }
}

/// The value of `metric` in one name's row.
fn value(q: &RequestStats, metric: &str) -> f64 {
    match metric {
        "requests_per_second" => q.requests_per_second,
        "latency_p50_us" => q.latency_us.p50 as f64,
        _ => q.latency_us.p99 as f64,
    }
}

/// The rows of the runs' HTTP records, with their run's variant.
fn rows<'a>(ok: &[&'a StoredRun]) -> Vec<(&'a str, String, &'a RequestStats)> {
    ok.iter()
        .filter_map(|r| Some((r.run.variant.as_str(), r.run.record.as_ref()?.http()?)))
        .flat_map(|(v, h): (&str, &HttpReport)| {
            h.requests.iter().map(move |q| (v, name_key(&q.name), q))
        })
        .collect()
}

/// Every request name the successful runs `ok` broke down, first seen
/// first, each across `variants` against `baseline` with noise band `band`.
pub fn request_reports(
    ok: &[&StoredRun],
    variants: &[String],
    baseline: Option<&str>,
    band: &dyn Fn(&str) -> f64,
) -> Vec<RequestReport> {
    let rows = rows(ok);
    let mut names: Vec<&str> = Vec::new();
    for (_, k, _) in &rows {
        if !names.contains(&k.as_str()) {
            names.push(k);
        }
    }
    names
        .iter()
        .map(|name| RequestReport {
            name: (*name).to_owned(),
            metrics: METRICS
                .iter()
                .map(|m| {
                    let samples = |v: &str| -> Vec<f64> {
                        rows.iter()
                            .filter(|(rv, k, _)| *rv == v && k == name)
                            .map(|(_, _, q)| value(q, m))
                            .filter(|x| x.is_finite())
                            .collect()
                    };
                    metric_report(m, &samples, variants, baseline, band(m))
                })
                .collect(),
        })
        .collect()
}

/// One metric of one name: each variant's samples, and each other
/// variant against the baseline.
fn metric_report(
    name: &str,
    samples: &dyn Fn(&str) -> Vec<f64>,
    variants: &[String],
    baseline: Option<&str>,
    band: f64,
) -> MetricReport {
    let known = metric::lookup(name).expect("the breakdown's metrics are in the catalogue");
    let per_variant = variants
        .iter()
        .map(|v| {
            let s = samples(v);
            VariantMetric {
                variant: v.clone(),
                summary: Summary::of(&s),
                samples: s,
            }
        })
        .collect();
    let versus = match baseline {
        Some(base) if !samples(base).is_empty() => variants
            .iter()
            .filter(|v| *v != base && !samples(v).is_empty())
            .map(|v| {
                let dir: Direction = known.direction;
                let c = compare_metric(name, &samples(base), &samples(v), dir, band);
                let (tone, phrase) = words::verdict(name, known.unit, Some(dir), &c);
                VersusBaseline {
                    variant: v.clone(),
                    baseline: base.to_owned(),
                    comparison: c,
                    tone,
                    phrase,
                }
            })
            .collect(),
        _ => Vec::new(),
    };
    MetricReport {
        name: name.to_owned(),
        unit: known.unit,
        direction: Some(known.direction),
        description: known.description,
        variants: per_variant,
        versus_baseline: versus,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{experiment_report, to_string, Terminal};
    use kurabe_model::experiment::Tone;
    use kurabe_model::record::{Experiment, ExperimentId, ExperimentStatus, RunRecord, RunStatus};
    use kurabe_model::run_detail::{HttpDetail, RunDetail};

    /// An A/B of two origins over three rounds: `/fast` 2× the req/s on B,
    /// `/same` alike on both (within noise).
    pub(crate) fn ab_by_request() -> Experiment {
        let row = |name: &str, rps: f64, p50: u64| {
            let mut q = RequestStats {
                name: name.into(),
                complete_requests: rps as u64,
                requests_per_second: rps,
                ..Default::default()
            };
            q.latency_us.p50 = p50;
            q.latency_us.p99 = p50 * 3;
            q
        };
        let run = |variant: &str, round: u32, k: f64| {
            let origin = if variant == "a" {
                "http://127.0.0.1:1"
            } else {
                "http://127.0.0.1:2"
            };
            let mut http = HttpReport::default();
            let wobble = 1.0 + 0.002 * f64::from(round);
            http.requests = vec![
                row(
                    &format!("{origin}/fast"),
                    1000.0 * k * wobble,
                    (500.0 / k) as u64,
                ),
                row(&format!("POST {origin}/same"), 300.0 * wobble, 900),
            ];
            kurabe_model::record::StoredRun {
                id: 0,
                run: RunRecord {
                    variant: variant.into(),
                    workload: "mix".into(),
                    round,
                    status: RunStatus::Ok,
                    error_tail: None,
                    started_at: String::new(),
                    finished_at: String::new(),
                    metrics: Vec::new(),
                    record: Some(RunDetail::Http(Box::new(HttpDetail {
                        http,
                        target: None,
                        settling: None,
                        throughput_settling: None,
                        soak: None,
                    }))),
                    http: None,
                },
            }
        };
        let mut runs = Vec::new();
        for round in 0..3 {
            runs.push(run("a", round, 1.0));
            runs.push(run("b", round, 2.0));
        }
        Experiment {
            id: ExperimentId(9),
            name: "a/b".into(),
            plan_text: String::new(),
            layout: None,
            host: None,
            tool_version: "0.1.0".into(),
            status: ExperimentStatus::Complete,
            started_at: String::new(),
            runs,
            ..crate::testdata::sample_experiment()
        }
    }

    #[test]
    fn each_request_name_gets_its_own_ratio_and_verdict() {
        let r = experiment_report(&ab_by_request());
        let w = &r.workloads[0];
        let names: Vec<_> = w.requests.iter().map(|q| q.name.as_str()).collect();
        assert_eq!(names, ["/fast", "POST /same"]);
        let rps = |i: usize| &w.requests[i].metrics[0].versus_baseline[0];
        assert_eq!(rps(0).variant, "b");
        let ratio = rps(0).comparison.ratio.unwrap();
        assert!((ratio - 2.0).abs() < 0.01, "{ratio}");
        assert_eq!(rps(0).tone, Tone::Good);
        assert_eq!(rps(1).tone, Tone::Neutral);
        assert!(rps(1).phrase.contains("within noise"), "{}", rps(1).phrase);
        let p50 = &w.requests[0].metrics[1].versus_baseline[0];
        assert_eq!(p50.tone, Tone::Good);
        let text = to_string(&Terminal { color: false }, &r);
        assert!(text.contains("mix · /fast"), "{text}");
        assert!(text.contains("mix · POST /same"), "{text}");
    }

    #[test]
    fn names_match_across_origins() {
        assert_eq!(name_key("http://127.0.0.1:8080/item/1?x"), "/item/1?x");
        assert_eq!(name_key("POST https://h/cart"), "POST /cart");
        assert_eq!(name_key("http://h:1"), "/");
        assert_eq!(name_key("checkout"), "checkout");
        assert_eq!(name_key("/item/:id"), "/item/:id");
        assert_eq!(name_key("log in"), "log in");
    }
}
