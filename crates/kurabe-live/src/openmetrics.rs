//! One [`Frame`] as OpenMetrics text (what Prometheus scrapes): requests
//! by name, method and status, failures by bucket, requests sent and sent
//! late, the latency histogram (native-friendly buckets, see
//! [`crate::board::bucket_bounds`]), achieved and target rate, in flight,
//! elapsed time, and the local server's CPU and memory when it is watched.
//!
//! Owns the metric names, their help texts and the exposition syntax
//! (escaping, `# EOF`). Must not do I/O.

use std::fmt::Write as _;

use kurabe_model::failures::Failures;

use crate::board::{bucket_bounds, Frame};

/// The content type of [`render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// `frame` as an OpenMetrics exposition.
pub fn render(frame: &Frame) -> String {
    let mut o = String::with_capacity(8192);
    let who = format!(
        "name=\"{}\",method=\"{}\"{}",
        escape(&frame.info.name),
        escape(&frame.info.method),
        run_labels(frame)
    );
    let c = &frame.counters;
    answers(&mut o, frame, &who);
    family(
        &mut o,
        "kurabe_requests_sent",
        "counter",
        "Requests written to the server.",
    );
    let _ = writeln!(o, "kurabe_requests_sent_total{{{who}}} {}", c.sent_requests);
    family(
        &mut o,
        "kurabe_late_sends",
        "counter",
        "Open model: sends that left later than scheduled.",
    );
    let _ = writeln!(o, "kurabe_late_sends_total{{{who}}} {}", c.late_sends);
    family(
        &mut o,
        "kurabe_dropped_sends",
        "counter",
        "Open model: sends given up unsent (no connection could take them within the request timeout).",
    );
    let _ = writeln!(o, "kurabe_dropped_sends_total{{{who}}} {}", c.dropped_sends);
    histogram(&mut o, frame, &who);
    gauges(&mut o, frame, &who);
    stage(&mut o, frame);
    server(&mut o, frame);
    o.push_str("# EOF\n");
    o
}

/// Responses by status and failures by bucket: one series per request name
/// when the run has several (a request set, a replay), else the run's.
fn answers(o: &mut String, frame: &Frame, who: &str) {
    let c = &frame.counters;
    let method = escape(&frame.info.method);
    let extra = run_labels(frame);
    let whose = |n: &str| format!("name=\"{}\",method=\"{method}\"{extra}", escape(n));
    family(
        o,
        "kurabe_requests",
        "counter",
        "Complete responses, by status code.",
    );
    if c.names.is_empty() {
        for (code, n) in c.status.seen() {
            let _ = writeln!(o, "kurabe_requests_total{{{who},status=\"{code}\"}} {n}");
        }
    }
    for row in &c.names {
        let w = whose(&row.name);
        for (code, n) in &row.status {
            let _ = writeln!(o, "kurabe_requests_total{{{w},status=\"{code}\"}} {n}");
        }
    }
    family(
        o,
        "kurabe_failures",
        "counter",
        "Failed requests, by failure bucket (as in the report).",
    );
    match c.names.is_empty() {
        true => failures(o, who, &c.failures),
        false => c
            .names
            .iter()
            .for_each(|row| failures(o, &whose(&row.name), &row.failures)),
    }
}

/// `f` by bucket (every kind, zeros included), for the series `who`.
fn failures(o: &mut String, who: &str, f: &Failures) {
    for (kind, n) in f.by_kind() {
        let bucket = kind.name();
        let _ = writeln!(o, "kurabe_failures_total{{{who},bucket=\"{bucket}\"}} {n}");
    }
}

/// The latency histogram: cumulative buckets, `+Inf`, count and sum.
fn histogram(o: &mut String, frame: &Frame, who: &str) {
    let name = "kurabe_request_duration_seconds";
    family(
        o,
        name,
        "histogram",
        "Request latency (open model: from the intended send time).",
    );
    let _ = writeln!(o, "# UNIT {name} seconds");
    for (le, n) in bucket_bounds().iter().zip(&frame.buckets) {
        let _ = writeln!(o, "{name}_bucket{{{who},le=\"{le:e}\"}} {n}");
    }
    let total = frame.whole.count;
    let _ = writeln!(o, "{name}_bucket{{{who},le=\"+Inf\"}} {total}");
    let _ = writeln!(o, "{name}_count{{{who}}} {total}");
    let _ = writeln!(o, "{name}_sum{{{who}}} {}", frame.latency_sum_s);
}

/// Rates, requests in flight and the time so far.
fn gauges(o: &mut String, frame: &Frame, who: &str) {
    let bare = bare_labels(frame);
    family(
        o,
        "kurabe_achieved_rate",
        "gauge",
        "Requests sent per second over the last second.",
    );
    let _ = writeln!(o, "kurabe_achieved_rate{{{who}}} {}", frame.sent_rate);
    if let Some(r) = frame.target_rate() {
        family(
            o,
            "kurabe_target_rate",
            "gauge",
            "Open model: the requests per second asked for now (on a staged ramp, the ramp's).",
        );
        let _ = writeln!(o, "kurabe_target_rate{{{who}}} {r}");
    }
    family(
        o,
        "kurabe_in_flight_requests",
        "gauge",
        "Requests written and not yet answered.",
    );
    let _ = writeln!(o, "kurabe_in_flight_requests{{{who}}} {}", frame.in_flight);
    family(
        o,
        "kurabe_elapsed_seconds",
        "gauge",
        "Time since the measured phase began.",
    );
    let _ = writeln!(
        o,
        "kurabe_elapsed_seconds{bare} {}",
        frame.measured.as_secs_f64()
    );
    family(
        o,
        "kurabe_finished",
        "gauge",
        "1 once the run is over and these are its final figures.",
    );
    let _ = writeln!(o, "kurabe_finished{bare} {}", u8::from(frame.finished));
}

/// The local server's process tree, when it is watched.
fn server(o: &mut String, frame: &Frame) {
    let Some(p) = frame.server else { return };
    let bare = bare_labels(frame);
    family(
        o,
        "kurabe_server_cpu_seconds",
        "counter",
        "CPU time of the server's process tree since the measured phase began.",
    );
    let _ = writeln!(o, "kurabe_server_cpu_seconds_total{bare} {}", p.cpu_seconds);
    family(
        o,
        "kurabe_server_pss_bytes",
        "gauge",
        "Σ PSS of the server's process tree.",
    );
    let _ = writeln!(o, "kurabe_server_pss_bytes{bare} {}", p.size.pss_bytes);
    family(
        o,
        "kurabe_server_rss_bytes",
        "gauge",
        "Σ RSS of the server's process tree (over-counts shared pages).",
    );
    let _ = writeln!(o, "kurabe_server_rss_bytes{bare} {}", p.size.rss_bytes);
    family(
        o,
        "kurabe_server_processes",
        "gauge",
        "Processes in the server's tree.",
    );
    let _ = writeln!(o, "kurabe_server_processes{bare} {}", p.size.processes);
}

/// A staged load's current stage and its target now.
fn stage(o: &mut String, frame: &Frame) {
    let Some(st) = frame.stage() else { return };
    let bare = bare_labels(frame);
    family(
        o,
        "kurabe_stage",
        "gauge",
        "The load's current stage, 1-based (--stage).",
    );
    let _ = writeln!(o, "kurabe_stage{bare} {}", st.index);
    family(o, "kurabe_stages", "gauge", "The load's stages in all.");
    let _ = writeln!(o, "kurabe_stages{bare} {}", st.count);
    if frame.info.stages_connections {
        family(
            o,
            "kurabe_target_connections",
            "gauge",
            "Closed model: the open connections the stages ask for now.",
        );
        let _ = writeln!(o, "kurabe_target_connections{bare} {}", st.now);
    }
}

/// The run's own labels (a plan's variant and workload) as `,k="v"…`.
fn run_labels(frame: &Frame) -> String {
    frame
        .info
        .labels
        .iter()
        .map(|(k, v)| format!(",{k}=\"{}\"", escape(v)))
        .collect()
}

/// The run's own labels as a whole label set, `{k="v"}` (empty without any).
fn bare_labels(frame: &Frame) -> String {
    let l = run_labels(frame);
    match l.strip_prefix(',') {
        Some(inner) => format!("{{{inner}}}"),
        None => String::new(),
    }
}

/// A family's `# TYPE` and `# HELP` lines.
fn family(o: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(o, "# TYPE {name} {kind}");
    let _ = writeln!(o, "# HELP {name} {help}");
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::{Board, RunInfo};
    use kurabe_model::failures::FailureKind;
    use kurabe_model::load_stats::Snapshot;
    use std::time::Duration;

    #[test]
    fn an_exposition_has_every_family_once_and_ends_with_eof() {
        let board = Board::new(RunInfo {
            name: "http://127.0.0.1:1/a\"b".into(),
            method: "GET".into(),
            target_rate: Some(200.0),
            ..RunInfo::default()
        });
        let mut s = Snapshot::empty();
        s.latency.record(100).unwrap();
        s.latency.record(2_000_000).unwrap();
        s.counters.completed = 2;
        s.counters.status.count(200);
        s.counters.status.count(503);
        s.counters.failures.timeout = 4;
        s.counters.failures.check = 5;
        s.counters.sent_requests = 7;
        s.counters.dropped_sends = 3;
        board.update(&s);
        let text = render(&board.frame());
        assert!(text.ends_with("# EOF\n"));
        let who = r#"name="http://127.0.0.1:1/a\"b",method="GET""#;
        for line in [
            format!("kurabe_requests_total{{{who},status=\"200\"}} 1"),
            format!("kurabe_requests_total{{{who},status=\"503\"}} 1"),
            format!("kurabe_failures_total{{{who},bucket=\"timeout\"}} 4"),
            format!("kurabe_failures_total{{{who},bucket=\"check\"}} 5"),
            format!("kurabe_failures_total{{{who},bucket=\"client\"}} 0"),
            format!("kurabe_requests_sent_total{{{who}}} 7"),
            format!("kurabe_dropped_sends_total{{{who}}} 3"),
            format!("kurabe_request_duration_seconds_bucket{{{who},le=\"+Inf\"}} 2"),
            format!("kurabe_request_duration_seconds_count{{{who}}} 2"),
            format!("kurabe_target_rate{{{who}}} 200"),
        ] {
            assert!(text.lines().any(|l| l == line), "no line {line} in\n{text}");
        }
        // Cumulative buckets: 1 at and above 100 µs, 2 from 2 s on.
        let bucket = |le: &str| {
            let l = format!("kurabe_request_duration_seconds_bucket{{{who},le=\"{le}\"}} ");
            text.lines()
                .find_map(|x| x.strip_prefix(&l))
                .unwrap()
                .to_owned()
        };
        assert_eq!(bucket("6.103515625e-5"), "0");
        assert_eq!(bucket("1.220703125e-4"), "1");
        assert_eq!(bucket("1.4142135623730951e0"), "1");
        assert_eq!(bucket("2e0"), "2");
        assert_eq!(bucket("2.8284271247461903e0"), "2");
        let types = text.lines().filter(|l| l.starts_with("# TYPE")).count();
        let mut names: Vec<_> = text.lines().filter(|l| l.starts_with("# TYPE")).collect();
        names.dedup();
        assert_eq!(names.len(), types);
        assert!(!text.contains("kurabe_server"), "no server watched");
    }

    #[test]
    fn a_plans_run_labels_every_series_and_a_staged_one_says_its_stage() {
        let board = Board::new(RunInfo {
            name: "http://127.0.0.1:1/".into(),
            method: "GET".into(),
            target_rate: Some(50.0),
            stages: vec![
                (Duration::from_secs(4), 100.0),
                (Duration::from_secs(4), 0.0),
            ],
            labels: vec![
                ("variant".into(), "b\"2".into()),
                ("workload".into(), "api".into()),
            ],
            ..RunInfo::default()
        });
        let mut s = Snapshot::empty();
        s.measured = Duration::from_secs(1);
        s.counters.completed = 1;
        s.counters.status.count(200);
        board.update(&s);
        let text = render(&board.frame());
        let l = r#"variant="b\"2",workload="api""#;
        for line in [
            format!("kurabe_requests_total{{name=\"http://127.0.0.1:1/\",method=\"GET\",{l},status=\"200\"}} 1"),
            format!("kurabe_target_rate{{name=\"http://127.0.0.1:1/\",method=\"GET\",{l}}} 25"),
            format!("kurabe_stage{{{l}}} 1"),
            format!("kurabe_stages{{{l}}} 2"),
            format!("kurabe_finished{{{l}}} 0"),
        ] {
            assert!(text.lines().any(|x| x == line), "no line {line} in\n{text}");
        }
        assert!(!text.contains("kurabe_target_connections"));
    }

    #[test]
    fn a_run_of_several_names_counts_by_name() {
        let board = Board::new(RunInfo::default());
        let mut s = Snapshot::empty();
        let mut a = kurabe_model::counters::NameCounts::new("checkout");
        a.answered(200, 10);
        a.answered(200, 10);
        a.failures.timeout = 1;
        let mut b = kurabe_model::counters::NameCounts::new("POST /cart");
        b.answered(503, 0);
        s.counters.names = vec![a, b];
        s.counters.status.set(200, 2);
        s.counters.status.set(503, 1);
        board.update(&s);
        let text = render(&board.frame());
        let requests: Vec<_> = text
            .lines()
            .filter(|l| l.starts_with("kurabe_requests_total"))
            .collect();
        assert_eq!(
            requests,
            [
                r#"kurabe_requests_total{name="checkout",method="",status="200"} 2"#,
                r#"kurabe_requests_total{name="POST /cart",method="",status="503"} 1"#,
            ]
        );
        let timeout = r#"kurabe_failures_total{name="checkout",method="",bucket="timeout"} 1"#;
        assert!(text.lines().any(|l| l == timeout), "{text}");
        let failures = text
            .lines()
            .filter(|l| l.starts_with("kurabe_failures_total"));
        assert_eq!(failures.count(), 2 * FailureKind::ALL.len());
    }
}
