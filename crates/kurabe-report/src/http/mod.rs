//! Renderers of [`HttpReport`] (`kurabe http`): ab-layout text
//! ([`crate::Terminal`]), one Markdown table row ([`crate::Markdown`]) and
//! one CSV row ([`crate::Csv`]); JSON is [`crate::Json`]; the per-second
//! series as CSV ([`SeriesCsv`]). ab's own variants: [`AbText`] (`-d`, `-S`), [`AbHtml`] (`-w`) and [`AbPercentCsv`] (`-e`).
//! `kurabe replay`'s summary is `replay.rs`'s ([`replay_text`] alone); ab's
//! `-v` log lines are [`ab_log`]'s, its `-g` file's [`ab_gnuplot`]'s.
//!
//! The shared one-row table (headline figures with units in the column
//! names) lives here and the per-request breakdown in `breakdown.rs`, so
//! `markdown.rs` and `csv.rs` only decide the syntax.

pub mod ab_gnuplot;
mod ab_html;
pub mod ab_log;
pub mod breakdown;
mod csv;
mod fleet;
mod layout;
mod markdown;
mod replay;
mod series;
mod text;
mod thresholds;

pub use ab_html::AbHtml;
pub use csv::AbPercentCsv;
pub use fleet::{fleet_report, FleetTable};
pub use layout::{http_renderer, AbLayout, AbLayoutFlags, LayoutError};
pub use replay::replay_text;
pub use series::SeriesCsv;
pub use text::AbText;

use kurabe_model::http::HttpReport;

/// Microseconds as milliseconds with three decimals (ab's text).
fn ms3(us: u64) -> String {
    format!("{:.3}", us as f64 / 1000.0)
}

/// Headline figures as (column name with unit, value), shared by the table
/// formats. Units as in the JSON record (latency in µs), named in the column.
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
        ("latency_mean_us", format!("{:.1}", l.mean)),
        ("latency_p50_us", l.p50.to_string()),
        ("latency_p90_us", l.p90.to_string()),
        ("latency_p99_us", l.p99.to_string()),
        ("latency_p999_us", l.p999.to_string()),
        ("latency_max_us", l.max.to_string()),
        ("transfer_bytes", r.transfer_bytes.to_string()),
        ("interrupted", r.interrupted.to_string()),
    ]
}

#[cfg(test)]
mod tests {
    use crate::{to_string, Csv, Json, Markdown, Terminal};

    /// Snapshots of every format over the fixture (`testdata/http.json`).
    #[test]
    fn snapshots() {
        let r = crate::fixtures::http();
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path("../snapshots");
        settings.set_prepend_module_to_snapshot(false);
        settings.bind(|| {
            insta::assert_snapshot!("http_text", to_string(&Terminal { color: false }, &r));
            insta::assert_snapshot!("http_json", to_string(&Json, &r));
            insta::assert_snapshot!("http_markdown", to_string(&Markdown, &r));
            insta::assert_snapshot!("http_csv", to_string(&Csv, &r));
        });
    }

    #[test]
    fn json_round_trips_through_the_model() {
        let r = crate::fixtures::http();
        let back: kurabe_model::http::HttpReport =
            serde_json::from_str(&to_string(&Json, &r)).unwrap();
        assert_eq!(back, r);
    }
}
