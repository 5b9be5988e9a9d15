//! `kurabe http URL --find-rate`: the capacity under the SLOs and the
//! latency curve it was found on. Text is [`CapacityText`], HTML
//! [`CapacityHtml`] (the curve drawn), JSON the record itself ([`crate::Json`]).
//!
//! Owns the words of a capacity answer (shared by the formats) and which
//! renderer draws which format. Must not compute: the searches, the
//! interval and each step's judgement are the record's.

mod html;
mod text;

use kurabe_model::capacity::{CapacityReport, CapacityStep, CapacityVerdict};

use crate::words::num;
use crate::{Format, Json, Render};

pub use html::CapacityHtml;
pub use text::CapacityText;

/// The renderer of a capacity report in `format`: text, HTML, or the JSON record.
pub fn capacity_renderer(format: Format) -> Box<dyn Render<CapacityReport>> {
    match format {
        Format::Json => Box::new(Json),
        Format::Html => Box::new(CapacityHtml),
        _ => Box::new(CapacityText),
    }
}

/// A format a capacity search is not written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CapacityFormatError {
    /// `-w` beside another `--format`.
    #[error("-w contradicts --find-rate: -w is the HTML page in place of the text")]
    HtmlBeside,
    /// Neither text nor JSON.
    #[error("--format with --find-rate: text or json (-w for the HTML page)")]
    Format,
}

/// The format a search is written in: `format` (text or JSON), or with
/// `html` (`-w`) the page that draws it, in place of the text.
pub fn capacity_format(format: Format, html: bool) -> Result<Format, CapacityFormatError> {
    match (html, format) {
        (true, Format::Text) => Ok(Format::Html),
        (true, _) => Err(CapacityFormatError::HtmlBeside),
        (false, Format::Text | Format::Json) => Ok(format),
        (false, _) => Err(CapacityFormatError::Format),
    }
}

/// A rate as `1234/s` (`12.5/s` below 100).
fn rate(r: f64) -> String {
    format!("{}/s", num(r))
}

/// A latency in µs as `1.23ms` (µs below 1 ms).
fn latency(us: u64) -> String {
    if us < 1000 {
        format!("{us}µs")
    } else {
        format!("{}ms", num(us as f64 / 1000.0))
    }
}

/// The SLOs joined: `p(99)<50ms, failed<0.1%`.
fn slos(r: &CapacityReport) -> String {
    r.slos.join(", ")
}

/// The answer in one sentence.
fn answer(r: &CapacityReport) -> String {
    let within = slos(r);
    let searches = r.searches.len();
    let interval = match (r.rate_per_s, r.rate_low_per_s, r.rate_high_per_s) {
        (Some(m), Some(lo), Some(hi)) => format!(
            " [{}, {}] (95 % interval, ±{:.1} %)",
            num(lo),
            num(hi),
            100.0 * (hi / m - 1.0).max(1.0 - lo / m)
        ),
        _ => String::new(),
    };
    let m = r.rate_per_s.map(rate).unwrap_or_default();
    match r.verdict {
        CapacityVerdict::Found => {
            format!("Sustains {m}{interval} within {within} ({searches} searches)")
        }
        CapacityVerdict::Imprecise => format!(
            "Sustains about {m}{interval} within {within}: wider than the ±{:.0} % asked after {searches} searches (longer steps or more searches would narrow it)",
            r.precision * 100.0
        ),
        CapacityVerdict::BelowLowest => format!(
            "Even the lowest rate searched, {}, breaks {within}{}: lower the start rate",
            rate(r.start_rate_per_s),
            first_failure(r).map(|w| format!(" ({w})")).unwrap_or_default()
        ),
        CapacityVerdict::AtMax => format!(
            "Sustains at least {}, the highest rate searched, within {within}: raise the max rate",
            rate(r.max_rate_per_s)
        ),
        CapacityVerdict::Interrupted => {
            format!("Interrupted after {searches} searches, before an answer")
        }
    }
}

/// Why the first failing step failed.
fn first_failure(r: &CapacityReport) -> Option<String> {
    r.steps().find_map(CapacityStep::why_failed)
}

/// Every step sorted by target rate: the latency curve.
fn curve(r: &CapacityReport) -> Vec<&CapacityStep> {
    let mut steps: Vec<&CapacityStep> = r.steps().collect();
    steps.sort_by(|a, b| a.target_per_s.total_cmp(&b.target_per_s));
    steps
}

#[cfg(test)]
pub(crate) mod tests {
    use kurabe_model::capacity::{CapacitySearch, SearchEnd, SloResult};

    use super::*;

    #[test]
    fn a_search_is_text_json_or_with_w_the_page() {
        assert_eq!(capacity_format(Format::Text, true), Ok(Format::Html));
        assert_eq!(capacity_format(Format::Json, false), Ok(Format::Json));
        let e = capacity_format(Format::Json, true).unwrap_err();
        assert_eq!(e, CapacityFormatError::HtmlBeside);
        let e = capacity_format(Format::Markdown, false).unwrap_err();
        assert!(e.to_string().starts_with("--format with --find-rate"));
    }
    use crate::to_string;

    fn step(search: u32, target: f64, achieved: f64, p99_us: u64, pass: bool) -> CapacityStep {
        CapacityStep {
            search,
            target_per_s: target,
            sent_per_s: target,
            achieved_per_s: achieved,
            latency_p50_us: p99_us / 3,
            latency_p99_us: p99_us,
            failed_percent: 0.0,
            slos: vec![SloResult {
                text: "p(99)<50ms".into(),
                measured: p99_us as f64 / 1e6,
                shown: format!("{:.1}ms", p99_us as f64 / 1e3),
                pass: p99_us < 50_000,
                aborted: false,
            }],
            kept_up: achieved >= 0.95 * target,
            pass,
            series: Vec::new(),
        }
    }

    /// A search of a 1000/s server: three searches, the third imprecise-free.
    pub(crate) fn sample() -> CapacityReport {
        let found = |index, steps| CapacitySearch {
            index,
            steps,
            end: Some(SearchEnd::Found {
                low_per_s: 980.0,
                high_per_s: 1020.0,
            }),
        };
        CapacityReport {
            schema_version: 1,
            tool_version: "0.0.0".into(),
            started_at: "2026-12-02T05:00:00Z".into(),
            url: "http://127.0.0.1:8080/".into(),
            slos: vec!["p(99)<50ms".into()],
            step_s: 5.0,
            step_warmup_s: 1.0,
            start_rate_per_s: 250.0,
            max_rate_per_s: 100_000.0,
            concurrency: 64,
            precision: 0.05,
            verdict: CapacityVerdict::Found,
            rate_per_s: Some(1001.3),
            rate_low_per_s: Some(975.2),
            rate_high_per_s: Some(1028.1),
            searches: vec![
                found(
                    0,
                    vec![
                        step(0, 250.0, 250.0, 1800, true),
                        step(0, 500.0, 499.8, 2100, true),
                        step(0, 1000.0, 996.0, 9_800, true),
                        step(0, 2000.0, 870.0, 230_000, false),
                    ],
                ),
                found(
                    1,
                    vec![
                        step(1, 770.0, 770.0, 2500, true),
                        step(1, 1540.0, 874.0, 216_000, false),
                    ],
                ),
                found(2, vec![step(2, 1046.0, 932.0, 44_000, false)]),
            ],
        }
    }

    #[test]
    fn snapshots() {
        let r = sample();
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path("../snapshots");
        settings.set_prepend_module_to_snapshot(false);
        settings.bind(|| {
            insta::assert_snapshot!("capacity_text", to_string(&CapacityText, &r));
        });
    }

    #[test]
    fn every_verdict_has_its_sentence() {
        let mut r = sample();
        let of = |r: &CapacityReport| answer(r);
        assert!(of(&r).starts_with("Sustains 1001/s [975.2, 1028] (95 % interval, ±2.7 %)"));
        r.verdict = CapacityVerdict::Imprecise;
        assert!(of(&r).contains("wider than the ±5 % asked after 3 searches"));
        r.verdict = CapacityVerdict::BelowLowest;
        assert!(of(&r).starts_with("Even the lowest rate searched, 250/s, breaks p(99)<50ms (p(99)<50ms was 230.0ms; fell behind: 870/s of 2000/s)"), "{}", of(&r));
        r.verdict = CapacityVerdict::AtMax;
        assert!(of(&r).contains("at least 100000/s"));
        r.verdict = CapacityVerdict::Interrupted;
        assert!(of(&r).starts_with("Interrupted"));
    }
}
