//! `kurabe http URL --find-rate --slo …` against `kurabe serve` with a
//! known capacity, and its bad input.
//!
//! The server's capacity comes from `--service-us`: one simulated serial
//! resource held for that much wall-clock time per request, so 1000 µs is
//! exactly 1000 requests/s whatever CPU the server gets (`--work-us` would
//! burn CPU, and on a shared 2-core machine its capacity is the CPU share
//! the server happens to get). Why the bounds hold on a busy machine:
//! - above capacity a step must fail: the server answers at most
//!   1000/s, and requests queued during the warm-up finish inside the
//!   measured part uncounted, so a step at ≥ 1.05× its rate answers under
//!   95 % of it ("fell behind") however well the client is scheduled;
//! - below capacity a step passes unless the client cannot send
//!   (1000 req/s needs a few % of one core, even from a debug build) or
//!   scheduling stalls delay more than 1 % of a step's requests by over
//!   500 ms (the SLO is generous on purpose: the knee is found by the
//!   server falling behind, the SLO only has to stay out of the noise; at
//!   100 ms, 1 % of a 200/s step of 0.5 s is one request, and one stall of
//!   a loaded machine failed it).

use std::net::TcpListener;
use std::process::Output;

use kurabe_model::capacity::{CapacityReport, CapacityVerdict};
use serde_json::Value;

use crate::serve::ServeChild;
use crate::util::kurabe;

/// Steps short enough for a test: ~20 steps of 0.65 s per search of a URL.
const STEPS: [&str; 6] = [
    "--step",
    "500ms",
    "--step-warmup",
    "150ms",
    "--start-rate",
    "200",
];

fn find_rate(url: &str, extra: &[&str]) -> Output {
    kurabe()
        .args(["http", url, "--find-rate", "-k", "-q"])
        .args(STEPS)
        .args(extra)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn the_found_rate_is_the_servers_computed_capacity() {
    let server = ServeChild::start(&["--service-us", "1000"]);
    let out = find_rate(&server.url, &["--slo", "p(99)<500ms", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let value: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    kurabe_testkit::schema::assert_valid("capacity-report.schema.json", &value);
    let r: CapacityReport = serde_json::from_value(value).unwrap();
    assert!(
        matches!(
            r.verdict,
            CapacityVerdict::Found | CapacityVerdict::Imprecise
        ),
        "{:?}",
        r.verdict
    );
    let found = r.rate_per_s.unwrap();
    assert!(
        (900.0..=1100.0).contains(&found),
        "found {found}/s, the server's capacity is 1000/s: {r:#?}"
    );
    assert!(r.searches.len() >= 3);
    assert!(r.rate_low_per_s.unwrap() <= found && found <= r.rate_high_per_s.unwrap());
    // The curve: every step above capacity by 10 % failed, every step
    // failed for a reason it names.
    for s in r.steps() {
        if s.target_per_s > 1100.0 {
            assert!(!s.pass && !s.kept_up, "{s:?}");
        }
        assert_eq!(s.pass, s.why_failed().is_none());
        assert_eq!(s.slos.len(), 1);
        // Each step's measured phase second by second, at the step's rate.
        assert!(!s.series.is_empty(), "{s:?}");
        let at_rate = |t: Option<f64>| t.is_some_and(|t| (t - s.target_per_s).abs() < 1e-3);
        assert!(s.series.iter().all(|i| at_rate(i.target_per_s)), "{s:?}");
    }
}

#[test]
fn a_search_whose_lowest_step_breaks_the_slo_says_so_and_exits_1() {
    let server = ServeChild::start(&["--latency-ms", "30"]);
    let out = kurabe()
        .args(["http", &server.url, "--find-rate", "-k", "-q"])
        .args([
            "--slo",
            "p(99)<10ms",
            "--start-rate",
            "20",
            "--step",
            "300ms",
        ])
        .args(["--step-warmup", "0s"])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("Even the lowest rate searched, 20/s, breaks p(99)<10ms"),
        "{stdout}"
    );
    assert!(stdout.contains("(p(99)<10ms was "), "{stdout}");
}

/// A listener nobody accepts on: a request would show as a pending connection.
fn silent() -> (TcpListener, String) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let url = format!("http://{}/", l.local_addr().unwrap());
    (l, url)
}

fn refused(args: &[&str], expect: &[&str]) {
    let (listener, url) = silent();
    let out = kurabe().args(["http", &url]).args(args).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    for e in expect {
        assert!(stderr.contains(e), "{args:?}: {stderr} lacks {e}");
    }
    assert!(listener.accept().is_err(), "{args:?} sent a request");
}

#[test]
fn bad_slos_and_contradicting_flags_are_one_line_before_any_request() {
    refused(
        &["--find-rate", "--slo", "p99<50ms"],
        &[
            "--slo",
            "'p99<50ms'",
            "unknown metric 'p'",
            "expected METRIC",
        ],
    );
    refused(
        &["--find-rate", "--slo", "p(99)<fast"],
        &["got `fast`", "expected METRIC"],
    );
    refused(
        &["--find-rate", "--slo", "checks>99%"],
        &["no response checks"],
    );
    refused(&["--find-rate", "--slo", "p(99){name:x}<1s"], &["{name:"]);
    refused(&["--find-rate"], &["--find-rate", "at least one SLO"]);
    refused(&["--slo", "p(99)<1s"], &["--slo belongs to --find-rate"]);
    let slo = ["--find-rate", "--slo", "p(99)<1s"];
    // --stage was refused as "--rate with --stage … drop --rate", a flag
    // never given (the search's first step sets the rate).
    for (flag, value) in [
        ("-n", "100"),
        ("-t", "5s"),
        ("--rate", "100"),
        ("--stage", "10s:100"),
    ] {
        let mut args = slo.to_vec();
        args.extend([flag, value]);
        refused(&args, &[&format!("{flag} contradicts --find-rate")]);
    }
    let mut args = slo.to_vec();
    args.extend(["--max-searches", "2"]);
    refused(&args, &["--max-searches 2"]);
    let mut args = slo.to_vec();
    args.extend(["-w", "--format", "json"]);
    refused(
        &args,
        &["-w contradicts --find-rate", "in place of the text"],
    );
    let mut args = slo.to_vec();
    args.extend(["-w", "-x", "border=1"]);
    refused(&args, &["-x/-y/-z contradicts --find-rate", "-w alone"]);
    let mut args = slo.to_vec();
    args.push("--save=nightly");
    refused(
        &args,
        &[
            "--save=LABEL contradicts --find-rate",
            "named after its URL",
        ],
    );
}

#[test]
fn half_the_service_time_is_found_at_least_1_6_times_the_rate_in_an_ab() {
    // Capacities 1000/s and 2000/s; three interleaved rounds, each one
    // search per URL. The ratio is the repo's ratio of geometric means
    // with its Welch interval (the A/B's capacity_per_second metric).
    let a = ServeChild::start(&["--service-us", "1000"]);
    let b = ServeChild::start(&["--service-us", "500"]);
    let out = kurabe()
        .args(["http", &a.url, &b.url, "--find-rate", "-k", "-q"])
        .args(["--slo", "p(99)<500ms", "--rounds", "3", "--format", "json"])
        .args([
            "--step",
            "500ms",
            "--step-warmup",
            "150ms",
            "--start-rate",
            "400",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let workload = &v["comparison"]["workloads"][0];
    assert_eq!(workload["slos"], serde_json::json!(["p(99)<500ms"]));
    let metric = &workload["metrics"][0];
    assert_eq!(metric["name"], "capacity_per_second", "{metric:#}");
    let versus = &metric["versus_baseline"][0];
    let ratio = versus["comparison"]["ratio"].as_f64().unwrap();
    assert!(ratio >= 1.6, "B/A {ratio}: {versus:#}");
    assert!(versus["comparison"]["ratio_low"].as_f64().unwrap() <= ratio);
    assert_eq!(
        versus["comparison"]["verdict"]["kind"], "better",
        "{versus:#}"
    );
}

#[test]
fn a_saved_search_is_an_experiment_history_follows() {
    let server = ServeChild::start(&["--service-us", "1000"]);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.sqlite");
    let store = store.to_str().unwrap();
    let args = ["--slo", "p(99)<500ms", "--format", "json", "--save"];
    let out = find_rate(&server.url, &[&args[..], &["--store", store]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("saved as e1"),
        "{}",
        text(&out.stderr)
    );
    let r: CapacityReport = serde_json::from_slice(&out.stdout).expect("the search's JSON");
    let out = kurabe()
        .args(["report", "e1", "--format", "json", "--store", store])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    kurabe_testkit::schema::assert_valid("experiment-report.schema.json", &v);
    // One run per search, each its search's estimate.
    let export = kurabe()
        .args(["results", "export", "e1", "--store", store])
        .output()
        .unwrap();
    assert_eq!(export.status.code(), Some(0), "{}", text(&export.stderr));
    let e: Value = serde_json::from_slice(&export.stdout).unwrap();
    let runs = e["entries"][0]["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), r.searches.len(), "{e:#}");
    for (run, search) in runs.iter().zip(&r.searches) {
        assert_eq!(run["variant"], server.url.as_str());
        let want = search.end.unwrap().estimate().unwrap();
        let got = run["metrics"][0]["value"].as_f64().unwrap();
        assert_eq!(run["metrics"][0]["name"], "capacity_per_second");
        assert!((got - want).abs() < 1e-6, "{got} vs {want}");
    }
    let history = kurabe()
        .args([
            "history",
            &format!("http: {}", server.url),
            "--store",
            store,
        ])
        .output()
        .unwrap();
    assert_eq!(history.status.code(), Some(0), "{}", text(&history.stderr));
    assert!(text(&history.stdout).contains("capacity_per_second: 1 points"));
}
