//! Load over time (issue 25) against `kurabe serve`: the per-second series
//! of the JSON record and of `--series-csv`.
//!
//! No assertion depends on a quiet machine: sums are exact by construction
//! (each second's counts are differences of the workers' running totals),
//! and rates are checked with wide bounds only.

use std::process::Output;

use kurabe_model::http::HttpReport;
use kurabe_model::series::{sums, CSV_COLUMNS};
use serde_json::Value;

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
        sent <= 251 && sent + rate.late_sends >= 240,
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
        ("30s:c=100", "not supported yet"),
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
