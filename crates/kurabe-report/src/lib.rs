//! kurabe's reports: a stored experiment turned into an answer people read.
//!
//! [`experiment_report`] builds the one report model
//! ([`kurabe_model::experiment::ExperimentReport`]) from a stored
//! experiment; one renderer per format turns it into bytes behind the
//! [`Renderer`] trait: terminal table, Markdown, JSON, CSV and a
//! self-contained HTML page with SVG charts. [`compare_entries`] puts two
//! stored entries side by side.
//!
//! It must not touch the store, the terminal or the file system: renderers
//! write to a `Write` they are given, and whether to colour is the caller's
//! decision (TTY and `NO_COLOR` live in the binary).

mod build;
mod csv;
mod entries;
mod html;
mod json;
mod markdown;
mod soak;
mod svg;
mod terminal;
mod words;

#[cfg(test)]
mod testdata;

use std::io::{self, Write};

use kurabe_model::experiment::ExperimentReport;

pub use build::experiment_report;
pub use csv::Csv;
pub use entries::{compare_entries, render_comparison};
pub use html::Html;
pub use json::Json;
pub use markdown::Markdown;
pub use terminal::Terminal;

/// Turns a report into one output format.
pub trait Renderer {
    /// Write the whole report to `out`.
    fn render(&self, report: &ExperimentReport, out: &mut dyn Write) -> io::Result<()>;
}

/// The report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned plain-text table for a terminal.
    Text,
    /// GitHub-flavoured Markdown, ready to paste.
    Markdown,
    /// The report model as JSON (`schema/experiment-report.schema.json`).
    Json,
    /// One row per workload × metric × variant.
    Csv,
    /// One self-contained HTML file with inline SVG charts.
    Html,
}

/// The renderer of `format`; `color` applies to the terminal table only.
pub fn renderer(format: Format, color: bool) -> Box<dyn Renderer> {
    match format {
        Format::Text => Box::new(Terminal { color }),
        Format::Markdown => Box::new(Markdown),
        Format::Json => Box::new(Json),
        Format::Csv => Box::new(Csv),
        Format::Html => Box::new(Html),
    }
}

/// "interrupted · 6 of 7 runs ok, 1 failed" for report headers.
fn status_line(r: &ExperimentReport) -> String {
    let ok = r.runs_total - r.runs_failed;
    let mut s = format!("{} · {ok} of {} runs ok", r.status, r.runs_total);
    if r.runs_failed > 0 {
        s.push_str(&format!(", {} failed", r.runs_failed));
    }
    s
}

/// "bench1 · x86_64 · 2 cores · Intel … · 2.00 GiB RAM · kernel 6.1.0".
fn host_line(r: &ExperimentReport) -> Option<String> {
    let h = r.host.as_ref()?;
    Some(format!(
        "{} · {} · {} cores · {} · {} RAM · kernel {}",
        h.hostname,
        h.arch,
        h.cores,
        h.cpu_model,
        words::value(kurabe_model::stats::Unit::Bytes, h.memory_bytes as f64),
        h.kernel
    ))
}

/// Header text of a variant row: the baseline is marked.
fn variant_title(r: &ExperimentReport, variant: &str) -> String {
    if r.baseline.as_deref() == Some(variant) {
        format!("{variant} (baseline)")
    } else {
        variant.to_owned()
    }
}

/// The cell of a variant's headline value: `106.2/s ±1.1%` (median ± CV).
fn cell(m: &kurabe_model::experiment::MetricReport, variant: &str) -> String {
    let Some(s) = m
        .variants
        .iter()
        .find(|v| v.variant == variant)
        .and_then(|v| v.summary)
    else {
        return "–".to_owned();
    };
    let sp = words::spread(s.cv);
    let v = words::value(m.unit, s.median);
    if sp.is_empty() {
        v
    } else {
        format!("{v} {sp}")
    }
}

/// What the numbers mean, printed under every report.
const LEGEND: &str = "Values are medians of successful runs ± coefficient of variation. \
Ratios are geometric means against the baseline with 95 % Welch intervals; \
better or worse only when the whole interval clears the noise band (default ±2 %), otherwise within noise (inconclusive while the interval straddles a band edge).";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::sample_experiment;

    /// An experiment interrupted before any run finished still renders in
    /// every format, and says so.
    #[test]
    fn empty_experiment_renders_everywhere() {
        let mut e = sample_experiment();
        e.runs.clear();
        e.status = kurabe_store::ExperimentStatus::Running;
        e.finished_at = None;
        let report = experiment_report(&e);
        assert!(report.workloads.is_empty());
        for format in [
            Format::Text,
            Format::Markdown,
            Format::Json,
            Format::Csv,
            Format::Html,
        ] {
            let mut out = Vec::new();
            renderer(format, false).render(&report, &mut out).unwrap();
            let text = String::from_utf8(out).unwrap();
            assert!(!text.is_empty(), "{format:?}");
            if format == Format::Text {
                assert!(text.contains("running · 0 of 0 runs ok"), "{text}");
                assert!(text.contains("no successful runs recorded"), "{text}");
            }
        }
    }
}
