//! Load over time (issue 25) against `kurabe serve`: the per-second series
//! of the JSON record and of `--series-csv`.
//!
//! No assertion depends on a quiet machine: sums are exact by construction
//! (each second's counts are differences of the workers' running totals),
//! and rates are checked with wide bounds only.

use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kurabe_model::http::HttpReport;
use kurabe_model::series::{sums, CSV_COLUMNS};
use serde_json::Value;

use crate::http::{read_request, TestServer};
use crate::serve::ServeChild;
use crate::util::kurabe;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `kurabe http URL ARGS --format json -q`: the exit status and the record.
fn http_json(url: &str, args: &[&str]) -> (Output, HttpReport) {
    let out = kurabe()
        .args(["http", url, "-k", "-q", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let value: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    kurabe_testkit::schema::assert_valid("http-report.schema.json", &value);
    (out, serde_json::from_value(value).unwrap())
}

/// The rows sum to the report's own totals. Sends are counted when their
/// last byte is written (an io_uring send when it completes), so the
/// requests in flight at the end may not all be among them yet.
fn assert_sums(r: &HttpReport) {
    let dropped = r.rate.map_or(0, |x| x.dropped_sends);
    let (sent, completed, failed, d) = sums(&r.series);
    assert_eq!(
        (completed, failed, d),
        (r.complete_requests, r.failed_requests, dropped),
        "{:#?}",
        r.series
    );
    let most = r.complete_requests + r.failed_requests + r.in_flight_at_end;
    assert!(
        sent >= completed && sent <= most,
        "sent {sent}, at most {most}"
    );
}

#[test]
fn a_closed_run_has_one_row_a_second_summing_to_its_totals() {
    let server = ServeChild::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("series.csv");
    let csv_arg = csv.to_str().unwrap();
    let (_, r) = http_json(
        &server.url,
        &["-c", "4", "-t", "2.5", "--series-csv", csv_arg],
    );
    assert_eq!(r.series.len(), 3, "{:#?}", r.series);
    assert_eq!(r.series[2].start_s, 2.0);
    assert!(
        (r.series[2].duration_s - 0.5).abs() < 0.05,
        "{:?}",
        r.series[2]
    );
    assert!(r
        .series
        .iter()
        .all(|s| s.completed > 0 && s.target_per_s.is_none()));
    assert!(r.series.iter().all(|s| s.latency_p50_us <= s.latency_p99_us
        && s.latency_p99_us <= s.latency_max_us
        && s.latency_max_us <= r.latency_us.max + r.latency_us.max / 100));
    assert_sums(&r);

    let file = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<_> = file.lines().collect();
    assert_eq!(lines[0], CSV_COLUMNS.join(","));
    assert_eq!(lines.len(), 1 + r.series.len());
    let completed: u64 = lines[1..]
        .iter()
        .map(|l| l.split(',').nth(3).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(completed, r.complete_requests);
}

#[test]
fn a_rate_runs_series_carries_its_target_and_a_warmup_is_not_in_it() {
    let server = ServeChild::start(&[]);
    let (_, r) = http_json(
        &server.url,
        &["-c", "8", "--rate", "200", "-t", "2", "--warmup", "0.5"],
    );
    assert_eq!(r.series.len(), 2, "{:#?}", r.series);
    for s in &r.series {
        assert_eq!(s.target_per_s, Some(200.0));
        // 200/s intended: generous bounds, a busy machine sends late, not more.
        assert!((60.0..=230.0).contains(&s.achieved_per_s), "{s:?}");
    }
    assert_sums(&r);
}

/// Two client threads: the thread that makes its last cut first does not
/// settle the last second without the other's share.
#[test]
fn two_threads_rows_sum_to_the_totals_last_second_included() {
    let server = ServeChild::start(&[]);
    let args = ["-c", "2", "--threads", "2", "--rate", "100", "-t", "1.5"];
    let (_, r) = http_json(&server.url, &args);
    assert_eq!(r.series.len(), 2, "{:#?}", r.series);
    assert_sums(&r);
}

#[test]
fn stages_ramp_the_rate_and_each_second_carries_its_target() {
    let server = ServeChild::start(&[]);
    let args = ["-c", "16", "--stage", "1s:100", "--stage", "1s:300"];
    let (_, r) = http_json(&server.url, &args);
    assert_eq!(r.series.len(), 2, "{:#?}", r.series);
    // The mean target of each second: 0 → 100 is 50/s, 100 → 300 is 200/s.
    let target = |i: usize| r.series[i].target_per_s.unwrap();
    assert!(
        (target(0) - 50.0).abs() < 0.5 && (target(1) - 200.0).abs() < 0.5,
        "{:#?}",
        r.series
    );
    let rate = r.rate.unwrap();
    assert!((rate.requested_per_s - 125.0).abs() < 0.5, "{rate:?}");
    // 250 sends intended: never more, and the second second sends more.
    let sent = r.complete_requests + r.failed_requests + r.in_flight_at_end;
    assert!(
        sent <= 251 && sent + rate.late_sends + rate.dropped_sends >= 240,
        "sent {sent}, {rate:?}"
    );
    assert!(r.series[1].sent > r.series[0].sent, "{:#?}", r.series);
    assert!((r.duration_s - 2.0).abs() < 0.2, "{}", r.duration_s);
    assert_sums(&r);
}

#[test]
fn sends_no_connection_takes_within_the_timeout_are_dropped() {
    // One connection to a server that answers 100 a second: of 300/s, at
    // most 100 go out, and what waits over -s 0.3 s is given up.
    let server = ServeChild::start(&["--service-us", "10000"]);
    let args = ["-c", "1", "--rate", "300", "-t", "2", "-s", "0.3"];
    let (_, r) = http_json(&server.url, &args);
    let rate = r.rate.unwrap();
    assert!(rate.dropped_sends >= 100, "{rate:?}");
    assert!(r.complete_requests <= 220, "{}", r.complete_requests);
    assert!(
        r.series.iter().skip(1).all(|s| s.dropped > 0),
        "{:#?}",
        r.series
    );
    assert_sums(&r);
    let out = kurabe()
        .args([
            "http",
            &server.url,
            "-k",
            "-q",
            "-c",
            "1",
            "--rate",
            "300",
            "-t",
            "1",
            "-s",
            "0.2",
        ])
        .output()
        .unwrap();
    assert!(
        text(&out.stdout).contains("Dropped sends:"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_stage_that_does_not_parse_is_one_line_and_exit_2() {
    // Port 9 (discard) is never reached: the flags are refused first.
    for (stage, says) in [
        ("30s:fast", "'fast'"),
        ("soon:200", "soon"),
        ("30s", "no ':'"),
        ("30s:c=-1", "whole number"),
    ] {
        let out = kurabe()
            .args(["http", "http://127.0.0.1:9/", "--stage", stage])
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stage}: {err}");
        assert_eq!(err.lines().count(), 1, "{stage}: {err}");
        assert!(err.contains(stage) && err.contains(says), "{stage}: {err}");
    }
    let out = kurabe()
        .args(["http", "http://127.0.0.1:9/", "--stage", "1s:10", "-t", "5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("-t with --stage"),
        "{}",
        text(&out.stderr)
    );
}

/// The points of the polyline titled `title` in `html`.
fn polyline_points(html: &str, title: &str) -> usize {
    let end = html
        .find(&format!("<title>{title}</title>"))
        .unwrap_or_else(|| panic!("no line '{title}' in {html}"));
    let start = html[..end].rfind("<polyline points=\"").unwrap() + 18;
    let points = &html[start..start + html[start..].find('"').unwrap()];
    points.split(' ').count()
}

#[test]
fn ab_html_draws_the_series_with_the_stages_target_under_abs_table() {
    let server = ServeChild::start(&[]);
    let out = kurabe()
        .args(["http", &server.url, "-k", "-q", "-c", "16", "-w"])
        .args(["--stage", "1s:100", "--stage", "1s:300"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let html = text(&out.stdout);
    assert!(html.starts_with("<table "), "ab's table first: {html}");
    let charts = &html[html.find("</table>").expect("ab's table")..];
    assert!(charts.contains("<figure class=\"load-rate\">"), "{html}");
    assert!(charts.contains("<figure class=\"load-latency\">"), "{html}");
    // One point a second for the achieved rate, the target, p50 and p99.
    let url = &server.url;
    for line in ["achieved", "target (stages)"].map(String::from) {
        let title = if line == "achieved" {
            format!("{url} achieved")
        } else {
            line
        };
        assert_eq!(polyline_points(charts, &title), 2, "{title}");
    }
    assert_eq!(polyline_points(charts, &format!("{url} p99")), 2);
    assert!(charts.contains("the target rate in grey"), "{charts}");
}

#[test]
fn the_experiment_page_of_an_ab_draws_each_variants_series() {
    let (a, b) = (ServeChild::start(&[]), ServeChild::start(&[]));
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.sqlite");
    let store = store.to_str().unwrap();
    let out = kurabe()
        .args([
            "http", &a.url, &b.url, "-k", "-q", "-c", "8", "--rounds", "1",
        ])
        .args([
            "--stage", "1s:50", "--stage", "1s:50", "--save", "--store", store,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = kurabe()
        .args(["report", "e1", "--format", "html", "--store", store])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let html = text(&out.stdout);
    assert!(html.contains("The load per second, per run"), "{html}");
    for url in [&a.url, &b.url] {
        assert_eq!(
            polyline_points(&html, &format!("{url} round 1 achieved")),
            2
        );
        assert_eq!(
            polyline_points(&html, &format!("{url} round 1")),
            2,
            "p50 and p99 per run"
        );
    }
    assert_eq!(polyline_points(&html, "target (stages)"), 2);
    let json = kurabe()
        .args(["report", "e1", "--format", "json", "--store", store])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    kurabe_testkit::schema::assert_valid("experiment-report.schema.json", &v);
    assert_eq!(v["workloads"][0]["load"].as_array().map(Vec::len), Some(2));
}

/// When each connection opened (+1) and closed (-1), as the server saw it.
type Opens = Arc<Mutex<Vec<(Instant, i32)>>>;

/// A server that answers each request 10 ms after it arrived (keep-alive)
/// and logs when each connection opened and closed.
fn counting_server() -> (TestServer, Opens) {
    let log: Opens = Arc::default();
    let seen = log.clone();
    let server = TestServer::start(move |mut s| {
        seen.lock().unwrap().push((Instant::now(), 1));
        while read_request(&mut s).is_some() {
            std::thread::sleep(Duration::from_millis(10));
            let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
            if std::io::Write::write_all(&mut s, resp).is_err() {
                break;
            }
        }
        seen.lock().unwrap().push((Instant::now(), -1));
    });
    (server, log)
}

/// The open connections over time: (the most at once, the number open
/// `at` each of these seconds after the first opened), once the server
/// has seen every connection close (within 5 s of the client's exit).
fn open_connections(log: &Opens, at: &[f64]) -> (i32, Vec<i32>) {
    let open = || log.lock().unwrap().iter().map(|e| e.1).sum::<i32>();
    let deadline = Instant::now() + Duration::from_secs(5);
    while open() != 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(open(), 0, "every connection closed");
    let mut events = log.lock().unwrap().clone();
    events.sort_by_key(|e| e.0);
    let t0 = events.first().expect("a connection opened").0;
    let open_at = |secs: f64| {
        let t = t0 + Duration::from_secs_f64(secs);
        events.iter().filter(|e| e.0 <= t).map(|e| e.1).sum::<i32>()
    };
    let peak = events
        .iter()
        .scan(0, |n, e| {
            *n += e.1;
            Some(*n)
        })
        .max()
        .unwrap_or(0);
    (peak, at.iter().map(|&s| open_at(s)).collect())
}

#[test]
fn connection_stages_open_and_close_connections_as_they_ramp() {
    let (server, log) = counting_server();
    let url = format!("http://{}/", server.addr);
    let stages = [
        "--stage", "1s:c=8", "--stage", "1s:c=8", "--stage", "1s:c=0",
    ];
    for engine in ["epoll", "io_uring"] {
        log.lock().unwrap().clear();
        let mut args = vec!["--engine", engine];
        args.extend_from_slice(&stages);
        let (_, r) = http_json(&url, &args);
        assert_eq!(r.series.len(), 3, "{engine}: {:#?}", r.series);
        // The mean target of each second: 0 → 8 is 4, then 8, then 8 → 0 is 4.
        let targets: Vec<f64> = r
            .series
            .iter()
            .map(|s| s.target_connections.unwrap())
            .collect();
        assert!(
            (targets[0] - 4.0).abs() < 0.05
                && (targets[1] - 8.0).abs() < 1e-6
                && (targets[2] - 4.0).abs() < 0.1,
            "{engine}: {targets:?}"
        );
        assert!(r.series.iter().all(|s| s.target_per_s.is_none()));
        assert!(
            r.rate.is_none() && r.failed_requests == 0,
            "{engine}: {r:?}"
        );
        assert_sums(&r);
        // The server saw the ramp: never more than the peak, all of it on
        // the hold, few at the start of the ramp up and the end of the ramp down.
        let (peak, open) = open_connections(&log, &[0.1, 1.5, 2.9]);
        assert_eq!(peak, 8, "{engine}: {open:?}");
        assert!(
            open[0] <= 3 && open[1] >= 6 && open[2] <= 4,
            "{engine}: {open:?}"
        );
        assert!(
            r.series[1].completed > r.series[0].completed,
            "{:#?}",
            r.series
        );
        assert!(
            r.series[1].completed > r.series[2].completed,
            "{:#?}",
            r.series
        );
    }
}

#[test]
fn a_plan_with_ramping_vus_stages_connections() {
    let (server, log) = counting_server();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    let http = r#"{ path = "/", keep_alive = true, executor = "ramping-vus", stages = [{ duration = "1s", target = 5 }, { duration = "500ms", target = 0 }] }"#;
    let text_plan = format!(
        "name = \"vus\"\nrepeat = 1\n[[variant]]\nname = \"a\"\nurl = \"http://{}\"\n[[workload]]\nname = \"ramp\"\nhttp = {http}\nmetrics = [\"requests_per_second\"]\n",
        server.addr
    );
    std::fs::write(&plan, text_plan).unwrap();
    let out = kurabe()
        .arg("run")
        .arg(&plan)
        .arg("--store")
        .arg(dir.path().join("r.db"))
        .args(["-q", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (peak, _) = open_connections(&log, &[]);
    assert_eq!(peak, 5, "the peak stage's connections");
}

#[test]
fn bad_connection_stages_are_one_line_and_exit_2() {
    for (args, says) in [
        (&["--stage", "1s:10", "--stage", "1s:c=3"][..], "not both"),
        (
            &["--stage", "1s:c=3", "--rate", "10"][..],
            "--rate with --stage",
        ),
        (&["--stage", "1s:c=3", "-c", "4"][..], "-c 4 with --stage"),
        (
            &["--stage", "1s:c=3", "--http2"][..],
            "--http2 with connection stages",
        ),
        (&["--stage", "1s:c=0"][..], "open no connection"),
        (&["--stage", "1s:c=3", "-t", "5"][..], "-t with --stage"),
    ] {
        let out = kurabe()
            .args(["http", "http://127.0.0.1:9/"])
            .args(args)
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
