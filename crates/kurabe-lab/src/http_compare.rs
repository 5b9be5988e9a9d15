//! `kurabe http URL_A URL_B …` as an experiment plan: one variant per URL
//! (its `url`), one http workload carrying the resolved request and load
//! settings, a number of interleaved rounds, the first URL the baseline.
//!
//! Owns the A/B plan's shape (the metrics compared, the default rounds),
//! which URLs ended without a successful round, and its progress lines.
//! Must not parse flags, touch the store or print: the binary resolves the flags into a
//! [`LoadConfig`] and runs the plan with [`crate::run_experiment`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kurabe_http::client::{LoadConfig, StopCondition, Target, UrlError};
use kurabe_model::load::{Engine, Header, LoadSpec};
use kurabe_model::plan::{HumanDuration, OnFailure, Plan, Variant, Workload, WorkloadKind};
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

/// Rounds when none are asked for.
pub const DEFAULT_ROUNDS: u32 = 5;

/// What makes an A/B of URLs impossible to plan.
#[derive(Debug, thiserror::Error)]
pub enum AbError {
    /// The same URL twice: its variants would share a name.
    #[error("{0} is given twice; compare different URLs")]
    Duplicate(String),
    /// The plan built from the settings does not validate.
    #[error("{0}")]
    Invalid(String),
    /// A URL that cannot be load-tested.
    #[error(transparent)]
    Url(#[from] UrlError),
    /// ab's default of one request per URL: nothing to compare.
    #[error("comparing URLs needs -n REQUESTS or -t TIME per round (ab's default of one request says nothing)")]
    NoLength,
    /// The body file's absolute path cannot be made.
    #[error("cannot resolve the path of the body file")]
    BodyFile(#[source] std::io::Error),
}

/// The comparison asked for: the URLs, the one load every URL gets, and the rounds.
#[derive(Debug)]
pub struct AbSpec<'a> {
    /// The URLs, the first being the baseline.
    pub urls: &'a [String],
    /// The resolved load settings (its target is ignored: each variant has its URL).
    pub load: &'a LoadConfig,
    /// Whether a request count was asked for (`-n`), rather than ab's default of one.
    pub requests_given: bool,
    /// The body's file (`-p`/`-u`), as given; the plan holds its absolute
    /// path, as the body is re-read per run.
    pub body_file: Option<&'a Path>,
    /// Interleaved rounds, each running every URL once.
    pub rounds: u32,
}

/// The plan of an A/B: one variant per URL, one http workload.
pub fn plan(spec: &AbSpec<'_>) -> Result<Plan, AbError> {
    let urls = spec.urls;
    for url in urls {
        Target::parse(url)?;
    }
    if matches!(spec.load.stop, StopCondition::Requests(1)) && !spec.requests_given {
        return Err(AbError::NoLength);
    }
    let body_file = spec.body_file.map(std::path::absolute).transpose();
    let body_file = body_file.map_err(AbError::BodyFile)?;
    if let Some(twice) = urls
        .iter()
        .enumerate()
        .find(|(i, u)| urls[..*i].contains(u))
    {
        return Err(AbError::Duplicate(twice.1.clone()));
    }
    let plan = Plan {
        name: format!("http: {}", urls.join(" vs ")),
        description: Some("kurabe http A/B".into()),
        repeat: spec.rounds,
        warmup: None,
        baseline: urls.first().cloned(),
        on_failure: OnFailure::Continue,
        seed: None,
        noise_band: None,
        noise_bands: BTreeMap::new(),
        target: None,
        build: None,
        variants: urls.iter().map(|u| variant(u)).collect(),
        matrix: BTreeMap::new(),
        workloads: vec![Workload {
            name: "load".into(),
            metrics: Some(METRICS.iter().map(|m| m.to_string()).collect()),
            kind: WorkloadKind::Http(Box::new(workload(spec.load, body_file))),
        }],
        checks: Vec::new(),
    };
    match plan.validate() {
        Ok(()) => Ok(plan),
        Err(problems) => Err(AbError::Invalid(problems[0].to_string())),
    }
}

/// A variant standing for the server at `url`.
fn variant(url: &str) -> Variant {
    Variant {
        name: url.to_owned(),
        env: BTreeMap::new(),
        vars: BTreeMap::new(),
        url: Some(url.to_owned()),
        args: Vec::new(),
        command: None,
        limits: None,
        rev: None,
    }
}

/// The load settings as a plan's http workload.
fn workload(load: &LoadConfig, body_file: Option<PathBuf>) -> LoadSpec {
    let (requests, duration) = match load.stop {
        StopCondition::Requests(n) => (Some(n), None),
        StopCondition::Duration(d) => (None, Some(HumanDuration(d))),
        StopCondition::RequestsOrDuration(n, d) => (Some(n), Some(HumanDuration(d))),
    };
    LoadSpec {
        method: Some(load.method.clone()),
        // The resolved headers already hold the cookies, credentials and type.
        headers: load
            .headers
            .iter()
            .map(|(k, v)| Header::new(k, v))
            .collect(),
        body_file,
        variable_length: !load.check_length,
        abort_on_error: load.abort_on_error,
        insecure: load.insecure,
        requests,
        concurrency: load.concurrency,
        duration,
        timeout: Some(HumanDuration(load.timeout)),
        keep_alive: load.keep_alive,
        rate: load.rate,
        warmup: load.warmup.map(HumanDuration),
        pipeline: load.pipeline,
        http2: load.http2,
        streams: (load.streams > 1).then_some(load.streams),
        threads: Some(load.threads),
        engine: Engine::parse(load.engine.name()).unwrap_or_default(),
        ..LoadSpec::default()
    }
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
    use kurabe_http::client::Target;

    fn load() -> LoadConfig {
        LoadConfig {
            target: Target::parse("http://127.0.0.1:1/").unwrap(),
            method: "GET".into(),
            headers: vec![("X-A".into(), "1".into())],
            body: None,
            concurrency: 2,
            threads: 1,
            keep_alive: true,
            pipeline: 1,
            http2: false,
            streams: 1,
            stop: StopCondition::Requests(10),
            rate: None,
            warmup: None,
            timeout: std::time::Duration::from_secs(30),
            abort_on_error: false,
            check_length: true,
            insecure: false,
            gnuplot_file: None,
            setup: Default::default(),
            engine: Default::default(),
        }
    }

    #[test]
    fn one_variant_per_url_with_the_first_as_baseline() {
        let urls = ["http://a/".to_owned(), "http://b/".to_owned()];
        let load = load();
        let spec = AbSpec {
            urls: &urls,
            load: &load,
            requests_given: true,
            body_file: None,
            rounds: 3,
        };
        let p = plan(&spec).unwrap();
        assert_eq!(p.repeat, 3);
        assert_eq!(p.baseline.as_deref(), Some("http://a/"));
        let names: Vec<_> = p.variants.iter().map(|v| v.url.as_deref()).collect();
        assert_eq!(names, [Some("http://a/"), Some("http://b/")]);
        let WorkloadKind::Http(h) = &p.workloads[0].kind else {
            panic!("an http workload");
        };
        assert_eq!(h.requests, Some(10));
        assert_eq!(h.headers, [Header::new("X-A", "1")]);
    }

    #[test]
    fn the_same_url_twice_is_refused() {
        let urls = ["http://a/".to_owned(), "http://a/".to_owned()];
        let load = load();
        let spec = AbSpec {
            urls: &urls,
            load: &load,
            requests_given: true,
            body_file: None,
            rounds: 1,
        };
        let e = plan(&spec).unwrap_err().to_string();
        assert_eq!(e, "http://a/ is given twice; compare different URLs");
    }

    #[test]
    fn ab_default_of_one_request_and_bad_urls_are_refused() {
        fn spec<'a>(urls: &'a [String], load: &'a LoadConfig, requests_given: bool) -> AbSpec<'a> {
            AbSpec {
                urls,
                load,
                requests_given,
                body_file: None,
                rounds: 1,
            }
        }
        let mut load = load();
        let bad = ["http://a/".to_owned(), "ftp://b/".to_owned()];
        assert!(matches!(
            plan(&spec(&bad, &load, true)),
            Err(AbError::Url(_))
        ));
        load.stop = StopCondition::Requests(1);
        let urls = ["http://a/".to_owned(), "http://b/".to_owned()];
        let refused = plan(&spec(&urls, &load, false));
        assert!(matches!(refused, Err(AbError::NoLength)));
        let given = plan(&spec(&urls, &load, true));
        assert!(!matches!(given, Err(AbError::NoLength)), "{given:?}");
    }
}
