//! Renderers for [`HttpReport`]: ab-layout text, JSON, Markdown and CSV.
//!
//! The shared one-row table (headline figures with units in the column names)
//! lives here so `markdown.rs` and `csv.rs` only decide the syntax.

mod csv;
mod json;
mod markdown;
mod text;

use std::io::{self, Write};

use kurabe_model::http::HttpReport;

/// Output formats of `kurabe http`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// ab's report layout plus kurabe's additions.
    Text,
    /// The versioned `kurabe-model` record, pretty-printed.
    Json,
    /// One Markdown table row of headline figures.
    Md,
    /// A header and one row of headline figures.
    Csv,
}

/// Writes one [`HttpReport`] in one format.
pub trait Render {
    /// Write `report` to `out`.
    fn render(&self, report: &HttpReport, out: &mut dyn Write) -> io::Result<()>;
}

/// The renderer for `format`.
pub fn renderer(format: Format) -> Box<dyn Render> {
    match format {
        Format::Text => Box::new(text::Text),
        Format::Json => Box::new(json::Json),
        Format::Md => Box::new(markdown::Markdown),
        Format::Csv => Box::new(csv::Csv),
    }
}

/// Microseconds as milliseconds with three decimals.
pub(crate) fn ms3(us: u64) -> String {
    format!("{:.3}", us as f64 / 1000.0)
}

/// Headline figures as (column name with unit, value), shared by the table formats.
fn summary_columns(r: &HttpReport) -> Vec<(&'static str, String)> {
    let l = &r.latency_us;
    vec![
        ("url", r.url.clone()),
        ("concurrency", r.concurrency.to_string()),
        ("keep_alive", r.keep_alive.to_string()),
        ("duration_s", format!("{:.3}", r.duration_s)),
        ("complete_requests", r.complete_requests.to_string()),
        ("failed_requests", r.failed_requests.to_string()),
        ("in_flight_at_end", r.in_flight_at_end.to_string()),
        ("non_2xx_responses", r.non_2xx_responses.to_string()),
        (
            "requests_per_second",
            format!("{:.2}", r.requests_per_second),
        ),
        ("latency_mean_ms", format!("{:.3}", l.mean / 1000.0)),
        ("latency_p50_ms", ms3(l.p50)),
        ("latency_p90_ms", ms3(l.p90)),
        ("latency_p99_ms", ms3(l.p99)),
        ("latency_p999_ms", ms3(l.p999)),
        ("latency_max_ms", ms3(l.max)),
        ("transfer_bytes", r.transfer_bytes.to_string()),
        ("interrupted", r.interrupted.to_string()),
    ]
}

#[cfg(test)]
pub(crate) mod fixture {
    //! A hand-built report for renderer tests.

    use std::collections::BTreeMap;

    use kurabe_model::http::*;

    /// A plausible keep-alive run with a few failures and a non-2xx status.
    pub(crate) fn report() -> HttpReport {
        let lat = LatencySummary {
            min: 95,
            mean: 412.5,
            stdev: 80.25,
            p50: 398,
            p90: 530,
            p99: 1210,
            p999: 2502,
            max: 3120,
        };
        let phase = |min, mean, sd, median, max| PhaseTimes {
            min,
            mean,
            sd,
            median,
            max,
        };
        HttpReport {
            schema_version: kurabe_model::SCHEMA_VERSION,
            tool_version: "0.1.0".into(),
            started_at: "2026-11-29T22:00:00Z".into(),
            url: "http://127.0.0.1:8080/index.html".into(),
            method: "GET".into(),
            server_software: Some("kurabe/0.1.0".into()),
            server_hostname: "127.0.0.1".into(),
            server_port: 8080,
            document_path: "/index.html".into(),
            document_length_bytes: 13,
            concurrency: 50,
            threads: 1,
            keep_alive: true,
            pipeline: 1,
            duration_s: 2.5,
            warmup_s: 0.0,
            interrupted: false,
            complete_requests: 99_990,
            failed_requests: 10,
            failures: Failures {
                connect: 1,
                receive: 2,
                length: 3,
                exceptions: 0,
                timeout: 4,
            },
            errors: Vec::new(),
            non_2xx_responses: 5,
            status_codes: BTreeMap::from([("200".into(), 99_985), ("503".into(), 5)]),
            in_flight_at_end: 0,
            requests_per_second: 39_996.0,
            transfer_bytes: 9_999_000,
            body_bytes: 1_299_870,
            sent_body_bytes: 0,
            latency_us: lat,
            latency_percentiles_us: [50.0, 66.0, 75.0, 80.0, 90.0, 95.0, 98.0, 99.0, 100.0]
                .iter()
                .zip([398, 450, 480, 500, 530, 700, 900, 1210, 3120])
                .map(|(&percentile, latency_us)| PercentileValue {
                    percentile,
                    latency_us,
                })
                .collect(),
            connection_times_us: ConnectionTimes {
                connect: phase(0, 12.0, 3.0, 0, 950),
                processing: phase(90, 400.0, 80.0, 390, 3100),
                waiting: phase(80, 380.0, 75.0, 370, 3000),
                total: phase(95, 412.5, 80.25, 398, 3120),
            },
            rate: None,
            server: None,
            fleet: None,
        }
    }
}
