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

/// The rows sum to the report's own totals.
fn assert_sums(r: &HttpReport) {
    let sent = r.complete_requests + r.failed_requests + r.in_flight_at_end;
    let dropped = r.rate.map_or(0, |x| x.dropped_sends);
    assert_eq!(
        sums(&r.series),
        (sent, r.complete_requests, r.failed_requests, dropped),
        "{:#?}",
        r.series
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
