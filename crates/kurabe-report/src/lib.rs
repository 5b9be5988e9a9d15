//! kurabe's reports: a stored experiment turned into an answer people read.
//!
//! Every report kind kurabe prints — an experiment, one `kurabe http` run,
//! a `watch`, a `mem` snapshot, a `system` index and its comparison — is
//! rendered here behind the one [`Render`] trait, one type per format:
//! [`Terminal`] (text for a terminal), [`Markdown`], [`Csv`], [`Json`]
//! (any serde record), [`Html`] (experiments) and [`Svg`] (watch series),
//! with [`Free`] for `mem`'s free-style text. Each report kind has one file
//! per format (`http/text.rs`, `watch/csv.rs`, …; the experiment's at the
//! top level); charts live in `chart.rs`, every escaper in [`escape`].
//!
//! [`experiment_report`] builds the experiment report model
//! ([`kurabe_model::experiment::ExperimentReport`]) from a stored
//! experiment; [`compare_entries`] puts two stored entries side by side.
//!
//! [`mod@write`] is the one file writer every output goes through (atomic for
//! regular files, in place for devices and FIFOs).
//!
//! The lines people read while work runs are words too, so they live here:
//! the runner's progress and `--dry-run` schedule ([`progress`]), the
//! fleet's worker and coordinator lines ([`fleet_events`]), and one-line
//! errors ([`error_text`]); the libraries report the events as data.
//!
//! The terminal edge is here too, in two modules and nowhere else:
//! [`mod@write`] puts a report in its file or on stdout and says whether stdout
//! takes colour; [`bars`] draws the progress bars and the live status line
//! on stderr.
//!
//! It must not touch the store: renderers write to a `Write` they are
//! given, with colour only when the caller asks; only [`mod@write`] touches
//! files.

pub mod bars;
pub mod baseline;
pub mod bench;
mod bisect;
mod build;
mod capacity;
mod chart;
mod csv;
mod entries;
pub mod error_text;
pub mod escape;
mod flame;
pub mod fleet_events;
mod history;
mod html;
mod http;
mod json;
pub mod listing;
mod load_chart;
mod markdown;
mod mem;
mod noise;
pub mod notice;
mod pick;
pub mod profile;
pub mod progress;
mod requests;
mod site;
pub mod site_files;
mod soak;
mod summarised;
mod system;
mod terminal;
pub mod thresholds;
mod watch;
mod words;
pub mod write;

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod testdata;

use std::io::{self, Write};
use std::path::Path;

use kurabe_model::experiment::{
    ExperimentReport, MetricReport, RequestReport, VersusBaseline, WorkloadReport,
};
use kurabe_model::record::Experiment;

pub use build::{experiment_report, http_compare};
pub use capacity::{capacity_format, capacity_renderer, CapacityFormatError, CapacityText};
pub use csv::Csv;
pub use entries::{compare_entries, render_comparison, write_comparison_in};
pub use history::gate::{check_entry, Gate, GateError};
pub use history::thresholds as check_thresholds;
pub use history::{
    check_report, history_report, history_to_show, results_as_experiments, CheckInput, HistoryCsv,
    HistoryHtml, HistoryMarkdown, HistoryText, Hosts,
};
pub use html::Html;
pub use http::{
    ab_gnuplot, ab_log, fleet_report, http_renderer, replay_text, AbHtml, AbLayout, AbLayoutFlags,
    AbPercentCsv, AbText, FleetTable, LayoutError, SeriesCsv,
};
pub use json::Json;
pub use markdown::Markdown;
pub use mem::{Free, FreeFlags, FreeUnit};
pub use pick::{bisect_renderer, http_compare_doc, mem_renderer, record_renderer, watch_renderer};
pub use site::{site_pages, SitePage};
pub use terminal::Terminal;
pub use watch::Svg;
pub use words::{demo_banner, mib, served_line, system_pass, watch_live_line};

/// Writes one kind of report (`R`) in one format (the implementing type).
///
/// Every renderer writes to the `Write` it is given and nothing else: no
/// terminal detection, no files, no colour unless the caller asked.
pub trait Render<R: ?Sized> {
    /// Write the whole report to `out`.
    fn render(&self, report: &R, out: &mut dyn Write) -> io::Result<()>;
}

/// `report` rendered by `renderer` into a string (for callers that need
/// the text before writing it, and for tests).
pub fn to_string<R: ?Sized>(renderer: &dyn Render<R>, report: &R) -> String {
    let mut out = Vec::new();
    renderer
        .render(report, &mut out)
        .expect("writing to a Vec cannot fail");
    String::from_utf8_lossy(&out).into_owned()
}

/// Render `report` with `renderer` and write it to `path` (`-o FILE`) or stdout.
pub fn write_rendered<R: ?Sized>(
    path: Option<&Path>,
    renderer: &dyn Render<R>,
    report: &R,
) -> Result<(), write::OutputWriteError> {
    write::write_output(path, &to_string(renderer, report))
}

/// `--html FILE` (`kurabe run`, `kurabe cmd`): the stored experiment as a
/// self-contained page with charts, written to `path`; returns the line
/// that says so, for stderr.
pub fn write_html_page(exp: &Experiment, path: &Path) -> Result<String, write::OutputWriteError> {
    let page = to_string(&Html, &experiment_report(exp));
    write::write_file(path, page.as_bytes()).map_err(|source| write::OutputWriteError::File {
        flag: "--html",
        source,
    })?;
    Ok(format!("wrote {} (open it in a browser)", path.display()))
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

/// The experiment renderer of `format`; `color` applies to the terminal table only.
pub fn renderer(format: Format, color: bool) -> Box<dyn Render<ExperimentReport>> {
    match format {
        Format::Text => Box::new(Terminal { color }),
        Format::Markdown => Box::new(Markdown),
        Format::Json => Box::new(Json),
        Format::Csv => Box::new(Csv),
        Format::Html => Box::new(Html),
    }
}

/// The history renderer of `format`.
pub fn history_renderer(format: Format) -> Box<dyn Render<kurabe_model::history::HistoryReport>> {
    match format {
        Format::Text => Box::new(HistoryText),
        Format::Markdown => Box::new(HistoryMarkdown),
        Format::Json => Box::new(Json),
        Format::Csv => Box::new(HistoryCsv),
        Format::Html => Box::new(HistoryHtml::default()),
    }
}

/// The `kurabe check` renderer of `format`: text, Markdown or JSON
/// (`None` for the others).
pub fn check_renderer(
    format: Format,
) -> Option<Box<dyn Render<kurabe_model::history::CheckReport>>> {
    match format {
        Format::Text => Some(Box::new(HistoryText)),
        Format::Markdown => Some(Box::new(HistoryMarkdown)),
        Format::Json => Some(Box::new(Json)),
        Format::Csv | Format::Html => None,
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

/// The baseline of workload `w`: its own, else the experiment's.
fn baseline_of<'a>(r: &'a ExperimentReport, w: &'a WorkloadReport) -> Option<&'a str> {
    w.baseline.as_deref().or(r.baseline.as_deref())
}

/// Header text of a variant row of `w`: the baseline is marked.
fn variant_title(r: &ExperimentReport, w: &WorkloadReport, variant: &str) -> String {
    let no_runs = r.variants_without_runs.iter().any(|v| v == variant);
    match (baseline_of(r, w) == Some(variant), no_runs) {
        (true, true) => format!("{variant} (baseline, no runs)"),
        (true, false) => format!("{variant} (baseline)"),
        (false, true) => format!("{variant} (no runs)"),
        (false, false) => variant.to_owned(),
    }
}

/// The workload's headline metrics, in column order.
/// A request name's rows as a workload of their own (`workload · name`,
/// the name's metrics all in its headline), so every renderer shows the
/// per-request breakdown with the table and verdict lines it already has.
fn request_workload(w: &WorkloadReport, q: &RequestReport) -> WorkloadReport {
    WorkloadReport {
        name: format!("{} · {}", w.name, q.name),
        variants: w.variants.clone(),
        baseline: w.baseline.clone(),
        headline: q.metrics.iter().map(|m| m.name.clone()).collect(),
        metrics: q.metrics.clone(),
        series: Vec::new(),
        load: Vec::new(),
        soak: Vec::new(),
        warmup: Vec::new(),
        requests: Vec::new(),
        slos: Vec::new(),
        thresholds: Vec::new(),
        profile: None,
    }
}

fn headline_metrics(w: &WorkloadReport) -> Vec<&MetricReport> {
    w.headline
        .iter()
        .filter_map(|h| w.metrics.iter().find(|m| &m.name == h))
        .collect()
}

/// Variant `v` against the baseline in metric `m`; none for the baseline itself.
fn versus_of<'a>(m: &'a MetricReport, v: &str) -> Option<&'a VersusBaseline> {
    m.versus_baseline.iter().find(|x| x.variant == v)
}

/// The cell of a variant's headline value: `106.2/s ±1.1%` (median ± CV).
fn cell(m: &MetricReport, variant: &str) -> String {
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

/// What the numbers mean, printed under every report, with the noise
/// bands the verdicts were actually judged against ([`noise_bands`]).
fn legend(r: &ExperimentReport) -> String {
    format!(
        "Values are medians of successful runs ± coefficient of variation. \
Ratios are geometric means against the baseline with 95 % Welch intervals; \
better or worse only when the whole interval clears the noise band ({}), otherwise within noise (inconclusive while the interval straddles a band edge). \
\"Could detect\" is the smallest change the run finds 4 times in 5 (95 %, 80 % power).",
        noise_bands(r)
    )
}

/// The noise bands of the report's comparisons: `±2 %` when every metric
/// uses one band, else `±5 % for requests_per_second; ±2 % for …`; the
/// default when nothing was compared.
fn noise_bands(r: &ExperimentReport) -> String {
    let mut by_band: Vec<(f64, Vec<&str>)> = Vec::new();
    for m in r.workloads.iter().flat_map(|w| &w.metrics) {
        for v in &m.versus_baseline {
            let band = v.comparison.noise_band;
            match by_band.iter_mut().find(|(b, _)| *b == band) {
                Some((_, names)) if names.contains(&m.name.as_str()) => {}
                Some((_, names)) => names.push(&m.name),
                None => by_band.push((band, vec![&m.name])),
            }
        }
    }
    let percent = |b: f64| {
        let p = (b * 100.0 * 100.0).round() / 100.0;
        format!("±{p} %")
    };
    match by_band.as_slice() {
        [] => format!(
            "default {}",
            percent(kurabe_model::stats::DEFAULT_NOISE_BAND)
        ),
        [(band, _)] => percent(*band),
        many => many
            .iter()
            .map(|(band, names)| format!("{} for {}", percent(*band), names.join(", ")))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::sample_experiment;

    /// The footer names the bands the plan set, not always "default ±2 %".
    #[test]
    fn the_legend_names_the_noise_bands_used() {
        let mut r = experiment_report(&sample_experiment());
        assert!(legend(&r).contains("noise band (±2 %)"), "{}", legend(&r));
        for m in r.workloads.iter_mut().flat_map(|w| &mut w.metrics) {
            for v in &mut m.versus_baseline {
                v.comparison.noise_band = 0.05;
            }
        }
        assert!(legend(&r).contains("noise band (±5 %)"), "{}", legend(&r));
        let m = &mut r.workloads[0].metrics[0];
        m.versus_baseline[0].comparison.noise_band = 0.005;
        let name = m.name.clone();
        let text = legend(&r);
        assert!(text.contains(&format!("±0.5 % for {name};")), "{text}");
        assert!(text.contains("±5 % for "), "{text}");
        r.workloads.clear();
        assert!(legend(&r).contains("(default ±2 %)"), "{}", legend(&r));
    }

    /// `--html FILE` writes the page and says so; a failure names `--html`.
    #[test]
    fn the_html_page_is_written_and_announced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.html");
        let said = write_html_page(&sample_experiment(), &path).unwrap();
        assert_eq!(
            said,
            format!("wrote {} (open it in a browser)", path.display())
        );
        assert!(std::fs::read_to_string(&path).unwrap().contains("<svg"));
        let err = write_html_page(&sample_experiment(), dir.path()).unwrap_err();
        assert!(
            error_text::error_line(&err).starts_with("--html: '"),
            "{err}"
        );
    }

    /// An experiment interrupted before any run finished still renders in
    /// every format, and says so.
    #[test]
    fn empty_experiment_renders_everywhere() {
        let mut e = sample_experiment();
        e.runs.clear();
        e.status = kurabe_model::record::ExperimentStatus::Running;
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
