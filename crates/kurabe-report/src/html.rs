//! HTML: one self-contained file — inline CSS and SVG, no script, no
//! external resource — with the headline table and verdicts, a bar chart
//! with interval whiskers per metric, CPU and memory over time per run
//! where runs recorded a time series, every metric in detail, failed runs
//! and the plan.
//!
//! Every user string (names, error output, plan text) goes through
//! [`esc`]; a test checks a `<script>` variant name arrives as text.

use std::io::{self, Write};

use kurabe_model::experiment::{ExperimentReport, MetricReport, SeriesPoint, Tone, WorkloadReport};
use kurabe_model::stats::{Direction, Unit};

use crate::chart::{bar_chart, colour, line_chart, Bar, Line};
use crate::escape::html as esc;
use crate::{
    baseline_of, cell, headline_metrics, host_line, legend, status_line, variant_title, versus_of,
    words, Render,
};

/// HTML renderer.
pub struct Html;

const STYLE: &str = r#"
:root { --ink: #1f2933; --muted: #616e7c; --rule: #e4e7eb; --good: #1e7b34; --bad: #b42318; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: var(--ink); background: #f5f7fa; }
main { max-width: 1120px; margin: 0 auto; padding: 32px 28px 48px; }
header h1 { margin: 0 0 4px; font-size: 26px; font-weight: 650; letter-spacing: -0.01em; }
.meta { margin: 2px 0; color: var(--muted); font-size: 14px; }
.status { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 12px; font-weight: 600; text-transform: uppercase; letter-spacing: 0.04em; background: #e4e7eb; }
.status.complete { background: #d3f2dc; color: var(--good); }
.status.interrupted, .status.running { background: #fff1c2; color: #8a5a00; }
.status.failed { background: #fde0dd; color: var(--bad); }
section { background: #fff; border: 1px solid var(--rule); border-radius: 8px; padding: 20px 24px; margin: 24px 0; }
h2 { margin: 0 0 14px; font-size: 19px; font-weight: 650; }
h3 { margin: 22px 0 8px; font-size: 15px; font-weight: 650; color: var(--muted); text-transform: uppercase; letter-spacing: 0.05em; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; font-size: 14px; }
th, td { padding: 7px 10px; border-bottom: 1px solid var(--rule); text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; white-space: normal; min-width: 13em; }
th { font-weight: 600; color: var(--muted); font-size: 13px; }
tr.vs td { background: #fafbfc; font-size: 13px; white-space: normal; }
.scroll { overflow-x: auto; }
td.note { text-align: left; white-space: normal; }
.good { color: var(--good); font-weight: 600; }
.bad { color: var(--bad); font-weight: 600; }
.neutral { color: var(--muted); }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 7px; vertical-align: baseline; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(480px, 100%), 1fr)); gap: 18px 28px; }
figure { margin: 0; }
figcaption { font-weight: 600; font-size: 14px; margin-bottom: 4px; }
figcaption span { font-weight: 400; color: var(--muted); }
svg { max-width: 100%; height: auto; font-family: inherit; }
svg .tick { font-size: 12px; fill: var(--muted); }
svg .label { font-size: 13px; fill: var(--ink); }
svg .axis { font-size: 13px; fill: var(--ink); }
details { margin-top: 14px; }
summary { cursor: pointer; color: var(--muted); font-weight: 600; }
pre { background: #f5f7fa; border: 1px solid var(--rule); border-radius: 6px; padding: 12px; overflow-x: auto; font-size: 13px; }
footer { color: var(--muted); font-size: 13px; }
@media (max-width: 600px) {
  main { padding: 16px 8px 32px; }
  section { padding: 14px 12px; }
  th:first-child, td:first-child { min-width: 8em; }
}
"#;

/// The head of every kurabe page: doctype, title, the one style sheet;
/// leaves `<main>` open.
pub(crate) fn page_start(out: &mut dyn Write, title: &str) -> io::Result<()> {
    writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{} · kurabe</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>",
        esc(title)
    )
}

/// x axis of the per-run time series.
const RUN_TIME: &str = "time since run start (s)";

fn tone_class(t: Tone) -> &'static str {
    match t {
        Tone::Good => "good",
        Tone::Bad => "bad",
        Tone::Neutral => "neutral",
    }
}

fn headline_table(r: &ExperimentReport, w: &WorkloadReport, out: &mut dyn Write) -> io::Result<()> {
    let metrics = headline_metrics(w);
    write!(
        out,
        "<div class=\"scroll\"><table class=\"headline\"><thead><tr><th>variant</th>"
    )?;
    for m in &metrics {
        write!(out, "<th>{}</th>", esc(&words::label(&m.name)))?;
    }
    writeln!(out, "</tr></thead><tbody>")?;
    for (i, v) in w.variants.iter().enumerate() {
        write!(
            out,
            "<tr><td><span class=\"swatch\" style=\"background:{}\"></span>{}</td>",
            colour(variant_index(r, v, i)),
            esc(&variant_title(r, w, v))
        )?;
        for m in &metrics {
            write!(out, "<td>{}</td>", esc(&cell(m, v)))?;
        }
        writeln!(out, "</tr>")?;
    }
    versus_rows(r, w, &metrics, out)?;
    writeln!(out, "</tbody></table></div>")
}

/// A row per variant but the baseline: its phrase against the baseline per metric.
fn versus_rows(
    r: &ExperimentReport,
    w: &WorkloadReport,
    metrics: &[&MetricReport],
    out: &mut dyn Write,
) -> io::Result<()> {
    let base = baseline_of(r, w).unwrap_or_default();
    for v in w.variants.iter().filter(|v| *v != base) {
        write!(out, "<tr class=\"vs\"><td>{} vs {}</td>", esc(v), esc(base))?;
        for m in metrics {
            match versus_of(m, v) {
                Some(x) => write!(
                    out,
                    "<td class=\"{}\">{}</td>",
                    tone_class(x.tone),
                    esc(&x.phrase)
                )?,
                None => write!(out, "<td>–</td>")?,
            }
        }
        writeln!(out, "</tr>")?;
    }
    Ok(())
}

/// Colour index of a variant: its position in the experiment, so a
/// variant keeps its colour across workloads.
fn variant_index(r: &ExperimentReport, v: &str, fallback: usize) -> usize {
    r.variants.iter().position(|x| x == v).unwrap_or(fallback)
}

fn axis_title(m: &MetricReport) -> String {
    // The tick labels carry the unit; the title says which way is good.
    let dir = match m.direction {
        Some(Direction::HigherIsBetter) => " — higher is better",
        Some(Direction::LowerIsBetter) => " — lower is better",
        None => "",
    };
    format!("{}{dir}", words::label(&m.name))
}

fn charts(r: &ExperimentReport, w: &WorkloadReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "<h3>Per metric: geometric mean, 95 % interval, runs as dots</h3><div class=\"charts\">"
    )?;
    for m in &w.metrics {
        let bars: Vec<Bar<'_>> = m
            .variants
            .iter()
            .enumerate()
            .map(|(i, v)| Bar {
                label: &v.variant,
                colour: variant_index(r, &v.variant, i),
                samples: &v.samples,
            })
            .collect();
        writeln!(
            out,
            "<figure><figcaption>{} <span>{}</span></figcaption>{}</figure>",
            esc(&m.name),
            esc(&m.description),
            bar_chart(&bars, m.unit, &axis_title(m))
        )?;
    }
    writeln!(out, "</div>")?;
    load_charts(r, w, out)?;
    if w.series.is_empty() {
        return Ok(());
    }
    series_charts(r, w, out)
}

/// The load's per-second series of every HTTP run that recorded one.
fn load_charts(r: &ExperimentReport, w: &WorkloadReport, out: &mut dyn Write) -> io::Result<()> {
    let runs: Vec<crate::load_chart::RunRows<'_>> = w
        .load
        .iter()
        .enumerate()
        .map(|(i, l)| crate::load_chart::RunRows {
            label: format!("{} round {}", l.variant, l.round + 1),
            legend: l.variant.clone(),
            colour: variant_index(r, &l.variant, i),
            rows: &l.intervals,
        })
        .collect();
    let charts = crate::load_chart::load_charts("The load per second, per run", &runs);
    if charts.is_empty() {
        return Ok(());
    }
    writeln!(out, "{charts}")
}

/// CPU and memory over time, one line per run that recorded a time series.
fn series_charts(r: &ExperimentReport, w: &WorkloadReport, out: &mut dyn Write) -> io::Result<()> {
    let cpu = per_run(w, |p| p.cpu_percent);
    let pss = per_run(w, |p| p.pss_bytes);
    writeln!(
        out,
        "<h3>CPU and memory over time, per run</h3><div class=\"charts\">"
    )?;
    let cl = series_lines(r, w, &cpu);
    if !cl.is_empty() {
        writeln!(
            out,
            "<figure><figcaption>CPU <span>percent of one core, whole process tree</span></figcaption>{}</figure>",
            line_chart(&cl, Unit::Percent, RUN_TIME, "CPU (%)")
        )?;
    }
    let ml = series_lines(r, w, &pss);
    if !ml.is_empty() {
        writeln!(
            out,
            "<figure><figcaption>Memory <span>Σ PSS of the process tree</span></figcaption>{}</figure>",
            line_chart(&ml, Unit::Bytes, RUN_TIME, "PSS")
        )?;
    }
    writeln!(out, "</div>")
}

/// Per run, the (time, value) points where `value` was sampled.
fn per_run(w: &WorkloadReport, value: fn(&SeriesPoint) -> Option<f64>) -> Vec<Vec<(f64, f64)>> {
    w.series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .filter_map(|p| Some((p.t_s, value(p)?)))
                .collect()
        })
        .collect()
}

/// The runs' lines (`data` per run) that have two points or more, in their variants' colours.
fn series_lines<'a>(
    r: &ExperimentReport,
    w: &WorkloadReport,
    data: &'a [Vec<(f64, f64)>],
) -> Vec<Line<'a>> {
    w.series
        .iter()
        .zip(data)
        .enumerate()
        .filter(|(_, (_, d))| d.len() >= 2)
        .map(|(i, (s, d))| Line {
            label: format!("{} round {}", s.variant, s.round + 1),
            legend: s.variant.clone(),
            colour: variant_index(r, &s.variant, i),
            points: d,
        })
        .collect()
}

fn details(w: &WorkloadReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "<details><summary>All metrics</summary><div class=\"scroll\"><table><thead><tr><th>metric</th><th>variant</th><th>n</th><th>median</th><th>geometric mean</th><th>min</th><th>max</th><th>CV</th><th>vs baseline</th></tr></thead><tbody>"
    )?;
    for m in &w.metrics {
        for v in &m.variants {
            let Some(s) = v.summary else { continue };
            let vs = versus_of(m, &v.variant);
            writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"note {}\">{}</td></tr>",
                esc(&m.name),
                esc(&v.variant),
                s.n,
                esc(&words::value(m.unit, s.median)),
                esc(&s.geometric_mean.map_or_else(|| "–".into(), |g| words::value(m.unit, g))),
                esc(&words::value(m.unit, s.min)),
                esc(&words::value(m.unit, s.max)),
                esc(&words::spread(s.cv)),
                vs.map_or("neutral", |x| tone_class(x.tone)),
                esc(vs.map_or("", |x| x.phrase.as_str()))
            )?;
        }
    }
    writeln!(out, "</tbody></table></div></details>")
}

/// The page header: name, status, id, run counts and times, host, baseline.
fn header(r: &ExperimentReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "<header><h1>{}</h1><p class=\"meta\"><span class=\"status {}\">{}</span> &nbsp;{} · {} · started {}{}</p>",
        esc(&r.name),
        esc(&r.status),
        esc(&r.status),
        esc(&r.id),
        esc(status_line(r).split_once(" · ").map_or("", |x| x.1)),
        esc(&r.started_at),
        r.finished_at.as_deref().map_or_else(String::new, |f| format!(", finished {}", esc(f)))
    )?;
    if let Some(h) = host_line(r) {
        writeln!(out, "<p class=\"meta\">{}</p>", esc(&h))?;
    }
    if let Some(b) = &r.baseline {
        writeln!(
            out,
            "<p class=\"meta\">Baseline: <strong>{}</strong></p>",
            esc(b)
        )?;
    }
    writeln!(out, "</header>")
}

/// One workload's section: table, warm-up notes, charts, soak, details.
fn workload(r: &ExperimentReport, w: &WorkloadReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "<section>\n<h2>{}</h2>", esc(&w.name))?;
    headline_table(r, w, out)?;
    for c in &w.warmup {
        let text = crate::words::warmup(c);
        writeln!(
            out,
            "<p class=\"note\"><strong>Warm-up:</strong> {}</p>",
            esc(&text)
        )?;
    }
    charts(r, w, out)?;
    if let Some(p) = &w.profile {
        crate::flame::html(p, out)?;
    }
    crate::soak::html(r, w, out)?;
    details(w, out)?;
    for q in &w.requests {
        let rw = crate::request_workload(w, q);
        writeln!(out, "<h3>{}</h3>", esc(&rw.name))?;
        headline_table(r, &rw, out)?;
    }
    writeln!(out, "</section>")
}

/// The failed runs with the tail of their error output; nothing when none failed.
fn failures(r: &ExperimentReport, out: &mut dyn Write) -> io::Result<()> {
    if r.failures.is_empty() {
        return Ok(());
    }
    writeln!(out, "<section>\n<h2>Failed runs</h2><div class=\"scroll\"><table><thead><tr><th>variant</th><th>workload</th><th>round</th><th>error output (last lines)</th></tr></thead><tbody>")?;
    for f in &r.failures {
        writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"note\"><pre>{}</pre></td></tr>",
            esc(&f.variant),
            esc(&f.workload),
            f.round,
            esc(f.error_tail.as_deref().unwrap_or("(no error output)"))
        )?;
    }
    writeln!(out, "</tbody></table></div></section>")
}

impl Render<ExperimentReport> for Html {
    fn render(&self, r: &ExperimentReport, out: &mut dyn Write) -> io::Result<()> {
        page_start(out, &r.name)?;
        header(r, out)?;
        if r.workloads.is_empty() {
            writeln!(
                out,
                "<section><p>No successful runs recorded.</p></section>"
            )?;
        }
        for w in &r.workloads {
            workload(r, w, out)?;
        }
        failures(r, out)?;
        writeln!(
            out,
            "<section>\n<h2>Plan</h2><pre>{}</pre></section>\n<footer><p>{}</p><p>Generated by kurabe {}.</p></footer>\n</main>\n</body>\n</html>",
            esc(&r.plan_text),
            esc(&legend(r)),
            esc(&r.tool_version)
        )
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::experiment_report;
    use crate::testdata::sample_experiment;
    use kurabe_testkit::html::balanced;

    fn render(e: &kurabe_model::record::Experiment) -> String {
        let mut out = Vec::new();
        Html.render(&experiment_report(e), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn self_contained_balanced_with_charts() {
        let html = render(&sample_experiment());
        balanced(&html).unwrap();
        assert!(!html.contains("<script"));
        assert!(!html.contains("src="), "no external resources");
        assert_eq!(
            html.matches("<svg").count(),
            3 + 2,
            "3 bar charts + CPU + memory"
        );
        assert!(html.contains("class=\"good\">1.18×"), "verdict coloured");
        assert_reads_on_a_narrow_screen(&html);
    }

    /// A 400-pixel screen (scripts/html-narrow.sh measures it in Chromium):
    /// every table scrolls inside its own box, every chart scales (a
    /// viewBox, and the style sheet's max-width) and the chart grid never
    /// asks for 480 px. Every kurabe page is checked with this.
    pub(crate) fn assert_reads_on_a_narrow_screen(html: &str) {
        assert_eq!(
            html.matches("<table").count(),
            html.matches("<div class=\"scroll\"><table").count(),
            "a table outside a scrolling box"
        );
        assert!(html.contains(".scroll { overflow-x: auto; }"));
        assert!(html.contains("minmax(min(480px, 100%), 1fr)"));
        assert!(html.contains("svg { max-width: 100%; height: auto;"));
        assert_eq!(
            html.matches("<svg").count(),
            html.matches(" viewBox=").count(),
            "a chart without a viewBox does not scale"
        );
    }

    #[test]
    fn user_strings_are_escaped() {
        let mut e = sample_experiment();
        for r in &mut e.runs {
            r.run.variant = r
                .run
                .variant
                .replace("big heap", "<script>alert(1)</script>");
            r.run.error_tail = r.run.error_tail.as_ref().map(|_| "</pre><b>x</b>".into());
        }
        e.plan_text.push_str("# <script>alert(2)</script>\n");
        e.name = "a & <b>".into();
        let html = render(&e);
        balanced(&html).unwrap();
        assert!(!html.contains("<script>"), "raw script tag in output");
        assert!(!html.contains("<b>x</b>"));
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("a &amp; &lt;b&gt;"));
    }
}
