//! `kurabe http URL_A URL_B …` as an experiment plan: one variant per URL
//! (its `url`), one http workload that is the flags' [`LoadSpec`] as
//! given (every option, nothing converted), a number of interleaved
//! rounds, the first URL the baseline.
//!
//! Owns the A/B plan's shape (the metrics compared, the default rounds),
//! which URLs ended without a successful round, and its progress lines.
//! Must not parse flags, touch the store or print: the binary builds the
//! flags' [`LoadSpec`] and runs the plan with [`crate::run_experiment`].

use kurabe_model::ending::Ending;
use kurabe_model::notice::Notice;
use std::collections::BTreeMap;
use std::path::PathBuf;

use kurabe_http::{Target, UrlError};
use kurabe_model::load::{HttpVersion, LoadSpec};
use kurabe_model::plan::{OnFailure, Plan, Variant, Workload, WorkloadKind};
use kurabe_model::record::RunStatus;

use crate::Outcome;

/// Metrics compared between URLs: throughput, latency, failures, and the
/// server's CPU and memory where the server is on this machine.
pub const METRICS: [&str; 6] = [
    "requests_per_second",
    "latency_p50_us",
    "latency_p99_us",
    "failed_percent",
    "cpu_ms_per_request",
    "pss_peak_bytes",
];

/// The metric compared with `--find-rate`: each run is one capacity
/// search, its estimate the run's value, so the ratio of the URLs'
/// geometric means with its Welch interval is "B sustains 1.42× A's rate".
pub const CAPACITY_METRIC: &str = "capacity_per_second";

/// Rounds when none are asked for.
pub const DEFAULT_ROUNDS: u32 = 5;

/// What makes an A/B of URLs impossible to plan.
#[derive(Debug, thiserror::Error)]
pub enum AbError {
    /// The same URL twice: its variants would share a name.
    #[error("{0} is given twice; compare different URLs")]
    Duplicate(String),
    /// HTTP versions neither one for all nor one per URL.
    #[error("{0} HTTP versions for {1} URLs: give none or one per URL")]
    Versions(usize, usize),
    /// The plan built from the settings does not validate.
    #[error("{0}")]
    Invalid(String),
    /// A URL that cannot be load-tested.
    #[error(transparent)]
    Url(#[from] UrlError),
    /// ab's default of one request per URL: nothing to compare.
    #[error("comparing URLs needs -n REQUESTS, -t TIME or --stage per round (ab's default of one request says nothing)")]
    NoLength,
    /// A file's absolute path (`-p`, `-u`, `-E`) cannot be made.
    #[error("cannot resolve the path of {0}")]
    File(PathBuf, #[source] std::io::Error),
}

/// The comparison asked for: the URLs, the one load every URL gets, and the rounds.
#[derive(Debug)]
pub struct AbSpec<'a> {
    /// The URLs, the first being the baseline.
    pub urls: &'a [String],
    /// One HTTP version per URL (e.g. one server's `2` and `3`), or
    /// none: every URL at the load's.
    pub versions: &'a [HttpVersion],
    /// The load every URL gets, as the flags describe it (its `url` is
    /// ignored: each variant has its own).
    pub load: &'a LoadSpec,
    /// Interleaved rounds, each running every URL once.
    pub rounds: u32,
}

/// The plan of an A/B: one variant per URL, one http workload.
pub fn plan(spec: &AbSpec<'_>) -> Result<Plan, AbError> {
    let urls = spec.urls;
    for url in urls {
        Target::parse(url)?;
    }
    let names = names(urls, spec.versions)?;
    let searching = spec.load.find_rate.is_some();
    // A search and stages set their own length.
    let sized = searching || !spec.load.stages.is_empty();
    if spec.load.requests.is_none() && spec.load.duration.is_none() && !sized {
        return Err(AbError::NoLength);
    }
    if let Some(twice) = names
        .iter()
        .enumerate()
        .find(|(i, u)| names[..*i].contains(u))
    {
        return Err(AbError::Duplicate(twice.1.clone()));
    }
    let plan = Plan {
        name: kurabe_model::plan::joined_name(
            "http",
            &urls.iter().map(String::as_str).collect::<Vec<_>>(),
        ),
        description: Some("kurabe http A/B".into()),
        repeat: spec.rounds,
        warmup: None,
        baseline: names.first().cloned(),
        on_failure: OnFailure::Continue,
        seed: None,
        noise_band: None,
        noise_bands: BTreeMap::new(),
        target: None,
        build: None,
        variants: (0..urls.len())
            .map(|i| variant(&names[i], &urls[i], spec.versions.get(i).copied()))
            .collect(),
        matrix: BTreeMap::new(),
        workloads: vec![Workload {
            name: "load".into(),
            metrics: Some(if searching {
                vec![CAPACITY_METRIC.to_owned()]
            } else {
                METRICS.iter().map(|m| m.to_string()).collect()
            }),
            kind: WorkloadKind::Http(Box::new(workload(spec.load)?)),
        }],
        checks: Vec::new(),
    };
    match plan.validate() {
        Ok(()) => Ok(plan),
        Err(problems) => Err(AbError::Invalid(problems[0].to_string())),
    }
}

/// Each URL's variant name: the URL, or with one HTTP version per URL
/// the URL and its version (`https://h/ (HTTP/3)`), so one server's
/// HTTP/2 and HTTP/3 are two variants.
pub fn names(urls: &[String], versions: &[HttpVersion]) -> Result<Vec<String>, AbError> {
    match versions.len() {
        0 => Ok(urls.to_vec()),
        n if n == urls.len() => Ok(urls
            .iter()
            .zip(versions)
            .map(|(u, v)| format!("{u} (HTTP/{})", v.name()))
            .collect()),
        n => Err(AbError::Versions(n, urls.len())),
    }
}

/// A variant named `name` standing for the server at `url`, at `version`.
fn variant(name: &str, url: &str, version: Option<HttpVersion>) -> Variant {
    Variant {
        name: name.to_owned(),
        env: BTreeMap::new(),
        vars: BTreeMap::new(),
        url: Some(url.to_owned()),
        http_version: version,
        args: Vec::new(),
        command: None,
        limits: None,
        rev: None,
    }
}

/// The flags' load as the plan's http workload: no URL of its own, and
/// its files by absolute path (a plan resolves them against its folder).
fn workload(load: &LoadSpec) -> Result<LoadSpec, AbError> {
    let absolute = |p: &Option<PathBuf>| {
        p.as_deref()
            .map(|p| std::path::absolute(p).map_err(|e| AbError::File(p.to_owned(), e)))
            .transpose()
    };
    Ok(LoadSpec {
        url: None,
        path: None,
        body_file: absolute(&load.body_file)?,
        client_cert: absolute(&load.client_cert)?,
        ca_file: absolute(&load.ca_file)?,
        targets: absolute(&load.targets)?,
        ..load.clone()
    })
}

/// How a comparison of the variants named `urls` ([`names`]) ended:
/// interrupted, failed when some URL has no successful round (the
/// notice names them), else done.
pub fn ending(outcome: &Outcome, urls: &[String]) -> Ending {
    if outcome.status == kurabe_model::record::ExperimentStatus::Interrupted {
        return Ending::Signalled(None);
    }
    let dead = urls_without_ok_round(outcome, urls);
    if dead.is_empty() {
        return Ending::Done;
    }
    let urls = dead.into_iter().map(str::to_owned).collect();
    Ending::Failed(Some(Notice::NoRoundSucceeded { urls }))
}

/// The URLs (variants) of `urls` with no successful run in `outcome`.
pub fn urls_without_ok_round<'a>(outcome: &Outcome, urls: &'a [String]) -> Vec<&'a str> {
    urls.iter()
        .filter(|u| {
            !outcome
                .runs
                .iter()
                .any(|r| &r.variant == *u && r.status == RunStatus::Ok)
        })
        .map(String::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kurabe_model::load::Header;
    use std::path::Path;

    fn load() -> LoadSpec {
        LoadSpec {
            headers: vec![Header::new("X-B", "2"), Header::new("X-A", "1")],
            concurrency: 2,
            keep_alive: true,
            requests: Some(10),
            proxy: Some("127.0.0.1:3128".into()),
            body_file: Some("body.txt".into()),
            ..LoadSpec::for_url("http://127.0.0.1:1/")
        }
    }

    fn spec<'a>(urls: &'a [String], load: &'a LoadSpec, rounds: u32) -> AbSpec<'a> {
        AbSpec {
            urls,
            versions: &[],
            load,
            rounds,
        }
    }

    #[test]
    fn one_variant_per_url_with_the_first_as_baseline_and_the_whole_load() {
        let urls = ["http://a/".to_owned(), "http://b/".to_owned()];
        let load = load();
        let p = plan(&spec(&urls, &load, 3)).unwrap();
        assert_eq!(p.repeat, 3);
        assert_eq!(p.baseline.as_deref(), Some("http://a/"));
        let names: Vec<_> = p.variants.iter().map(|v| v.url.as_deref()).collect();
        assert_eq!(names, [Some("http://a/"), Some("http://b/")]);
        let WorkloadKind::Http(h) = &p.workloads[0].kind else {
            panic!("an http workload");
        };
        assert_eq!(h.url, None, "each variant has its URL");
        assert!(h.body_file.as_deref().is_some_and(Path::is_absolute));
        let as_given = LoadSpec {
            url: load.url.clone(),
            body_file: load.body_file.clone(),
            ..(**h).clone()
        };
        assert_eq!(as_given, load, "nothing dropped, headers in their order");
    }

    #[test]
    fn the_same_url_twice_is_refused() {
        let urls = ["http://a/".to_owned(), "http://a/".to_owned()];
        let load = load();
        let e = plan(&spec(&urls, &load, 1)).unwrap_err().to_string();
        assert_eq!(e, "http://a/ is given twice; compare different URLs");
    }

    #[test]
    fn one_url_at_two_versions_is_two_variants_named_by_version() {
        let urls = ["https://a/".to_owned(), "https://a/".to_owned()];
        let load = load();
        let versions = [HttpVersion::H2, HttpVersion::H3];
        let p = plan(&AbSpec {
            versions: &versions,
            ..spec(&urls, &load, 2)
        })
        .unwrap();
        let named: Vec<_> = p
            .variants
            .iter()
            .map(|v| (v.name.as_str(), v.url.as_deref(), v.http_version))
            .collect();
        assert_eq!(
            named,
            [
                (
                    "https://a/ (HTTP/2)",
                    Some("https://a/"),
                    Some(HttpVersion::H2)
                ),
                (
                    "https://a/ (HTTP/3)",
                    Some("https://a/"),
                    Some(HttpVersion::H3)
                ),
            ]
        );
        assert_eq!(p.baseline.as_deref(), Some("https://a/ (HTTP/2)"));
        let one = [HttpVersion::H3];
        let e = plan(&AbSpec {
            versions: &one,
            ..spec(&urls, &load, 2)
        });
        assert!(matches!(e, Err(AbError::Versions(1, 2))), "{e:?}");
    }

    #[test]
    fn ab_default_of_one_request_and_bad_urls_are_refused() {
        let mut load = load();
        let bad = ["http://a/".to_owned(), "ftp://b/".to_owned()];
        assert!(matches!(plan(&spec(&bad, &load, 1)), Err(AbError::Url(_))));
        load.requests = None;
        let urls = ["http://a/".to_owned(), "http://b/".to_owned()];
        let refused = plan(&spec(&urls, &load, 1));
        assert!(matches!(refused, Err(AbError::NoLength)));
        load.requests = Some(1);
        let given = plan(&spec(&urls, &load, 1));
        assert!(!matches!(given, Err(AbError::NoLength)), "{given:?}");
    }
}
