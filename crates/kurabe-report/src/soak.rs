//! Soak runs in reports: the memory-over-requests series of each soak run
//! (from `record.soak` of a stored run) and its HTML chart — memory on the
//! y axis, requests served on the x axis, one thin line per run in its
//! variant's colour, the per-window floor as dots and the Theil–Sen line
//! through it dashed, so a reader sees the slope the verdict rests on.
//!
//! Pure: a stored run in, [`SoakSeries`] out; the chart is a string of
//! inline SVG in which every user string goes through [`esc`]. It must not
//! fit anything itself — the line is the one the run stored.

use std::fmt::Write as _;
use std::io::{self, Write};

use kurabe_model::experiment::{ExperimentReport, SoakPoint, SoakSeries, WorkloadReport};
use kurabe_model::record::StoredRun;
use kurabe_model::run_detail::OWNED_COLUMN;
use kurabe_model::stats::Unit;

use crate::chart::{colour, Axes, Frame, LegendRow, Line, LineChart};
use crate::escape::html as esc;
use crate::words;

/// The soak series of a run, if its record has one with at least two samples.
///
/// Records written before the fitted column existed hold
/// `[t_s, requests, pss_bytes]` and were fitted on Σ PSS; newer ones name
/// the fitted column in `fitted`.
pub(crate) fn soak_series(run: &StoredRun) -> Option<SoakSeries> {
    let soak = run.run.record.as_ref()?.soak()?;
    let memory = soak.fitted_column();
    let points: Vec<SoakPoint> = soak
        .samples
        .iter()
        .filter_map(|s| {
            Some(SoakPoint {
                requests: s.requests() as f64,
                bytes: s.memory(memory)? as f64,
            })
        })
        .collect();
    if points.len() < 2 {
        return None;
    }
    let floor = soak.floor.as_deref().unwrap_or_default();
    let ts = soak.theil_sen.as_ref();
    Some(SoakSeries {
        variant: run.run.variant.clone(),
        round: run.run.round,
        memory: memory.to_owned(),
        points,
        floor: floor
            .iter()
            .map(|&[requests, bytes]| SoakPoint { requests, bytes })
            .collect(),
        slope_bytes_per_request: ts.map(|t| t.slope),
        slope_low_bytes_per_request: ts.map(|t| t.slope_low),
        slope_high_bytes_per_request: ts.map(|t| t.slope_high),
        intercept_bytes: ts.map(|t| t.intercept),
        verdict: soak.verdict.as_str().to_owned(),
    })
}

/// What the y axis shows, for the axis title and the caption.
fn memory_words(memory: &str) -> (&'static str, &'static str) {
    match memory {
        OWNED_COLUMN => (
            "memory the target owns",
            "Σ (Pss_Anon + Pss_Shmem + Swap) of the target tree; file-backed pages are left out because their share moves with other processes",
        ),
        _ => ("Σ PSS", "Σ PSS of the target tree"),
    }
}

/// The soak section of a workload in the HTML report: nothing when no run soaked.
pub(crate) fn html(
    r: &ExperimentReport,
    w: &WorkloadReport,
    out: &mut dyn Write,
) -> io::Result<()> {
    if w.soak.is_empty() {
        return Ok(());
    }
    let colour_of = |v: &str| {
        r.variants
            .iter()
            .position(|x| x == v)
            .or_else(|| w.variants.iter().position(|x| x == v))
            .unwrap_or(0)
    };
    let (_, caption) = memory_words(&w.soak[0].memory);
    writeln!(
        out,
        "<h3>Memory over requests served, per soak run</h3><figure><figcaption>Soak <span>{}; dots: the floor of each window, dashed: the Theil–Sen line through it</span></figcaption>{}</figure>",
        esc(caption),
        chart(&w.soak, &colour_of)
    )
}

/// `0`, `500`, `20k`, `1.5M`: requests on the x axis.
fn requests_label(v: f64) -> String {
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s
        }
    };
    if v.abs() >= 1e6 {
        format!("{}M", trim(format!("{:.2}", v / 1e6)))
    } else if v.abs() >= 1e3 {
        format!("{}k", trim(format!("{:.1}", v / 1e3)))
    } else {
        format!("{v:.0}")
    }
}

/// Median slope and verdict counts of a variant's runs, for the legend.
fn legend_text(runs: &[&SoakSeries]) -> String {
    let mut slopes: Vec<f64> = runs
        .iter()
        .filter_map(|s| s.slope_bytes_per_request)
        .collect();
    slopes.sort_by(f64::total_cmp);
    let median = match slopes.len() {
        0 => None,
        n if n % 2 == 1 => Some(slopes[n / 2]),
        n => Some((slopes[n / 2 - 1] + slopes[n / 2]) / 2.0),
    };
    let growing = runs.iter().filter(|s| s.verdict == "growing").count();
    let flat = runs.iter().filter(|s| s.verdict == "flat").count();
    let verdicts = match (growing, flat) {
        (g, 0) if g > 0 => format!("growing in {g}/{}", runs.len()),
        (0, f) if f > 0 => format!("flat in {f}/{}", runs.len()),
        (g, f) => format!("growing {g}, flat {f} of {}", runs.len()),
    };
    match median {
        Some(m) => format!("{} B/request (median), {verdicts}", words::num(m)),
        None => verdicts,
    }
}

/// Memory (y) over requests served (x): every run's samples as a thin
/// line, its floor as dots and its fitted line dashed; a legend per
/// variant below the plot with the median slope and the verdicts.
/// A soak run's memory line, labelled with its slope and verdict.
fn run_line<'a>(run: &SoakSeries, points: &'a [(f64, f64)], colour: usize) -> Line<'a> {
    Line {
        label: format!(
            "{} round {}: {}, {}",
            run.variant,
            run.round + 1,
            slope_words(run),
            run.verdict
        ),
        legend: run.variant.clone(),
        colour,
        points,
    }
}

fn chart(series: &[SoakSeries], colour_of: &dyn Fn(&str) -> usize) -> String {
    let points: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|s| s.points.iter().map(|p| (p.requests, p.bytes)).collect())
        .collect();
    let lines: Vec<Line<'_>> = series
        .iter()
        .zip(&points)
        .map(|(run, pts)| run_line(run, pts, colour_of(&run.variant)))
        .collect();
    let (title, _) = memory_words(&series[0].memory);
    let axes = Axes {
        x_title: "requests served (measured phase)",
        y_title: title,
        x_suffix: "",
        marks: &[],
    };
    let legend = legend_rows(series, colour_of);
    let overlay = |map: &dyn Fn(f64, f64) -> (f64, f64)| fits(series, colour_of, map);
    LineChart {
        lines: &lines,
        unit: Unit::Bytes,
        axes: &axes,
        frame: Frame {
            left: 70.0,
            width: 640.0,
            height: 240.0,
            right: 24.0,
        },
        y_from_zero: false,
        x_label: &requests_label,
        overlay: Some(&overlay),
        legend_below: Some(&legend),
    }
    .svg()
}

/// `12.5 B/request`, or `no fit`.
fn slope_words(run: &SoakSeries) -> String {
    run.slope_bytes_per_request.map_or_else(
        || "no fit".to_owned(),
        |v| format!("{} B/request", words::num(v)),
    )
}

/// One legend row per variant, in order of first appearance.
fn legend_rows(series: &[SoakSeries], colour_of: &dyn Fn(&str) -> usize) -> Vec<LegendRow> {
    let mut variants: Vec<&str> = Vec::new();
    for s in series {
        if !variants.contains(&s.variant.as_str()) {
            variants.push(&s.variant);
        }
    }
    variants
        .iter()
        .map(|v| {
            let runs: Vec<&SoakSeries> = series.iter().filter(|s| s.variant == *v).collect();
            (v.to_string(), colour_of(v), legend_text(&runs))
        })
        .collect()
}

/// Each run's floor as dots and its stored Theil–Sen line, dashed.
fn fits(
    series: &[SoakSeries],
    colour_of: &dyn Fn(&str) -> usize,
    map: &dyn Fn(f64, f64) -> (f64, f64),
) -> String {
    let mut s = String::new();
    for run in series {
        let c = colour(colour_of(&run.variant));
        for p in &run.floor {
            let (x, y) = map(p.requests, p.bytes);
            let _ = write!(
                s,
                r##"<circle cx="{x:.1}" cy="{y:.1}" r="2.3" fill="{c}" stroke="#ffffff" stroke-width="0.7"/>"##
            );
        }
        fit_line(&mut s, run, c, map);
    }
    s
}

/// The run's stored Theil–Sen line across its floor, dashed; nothing without a fit.
fn fit_line(s: &mut String, run: &SoakSeries, c: &str, map: &dyn Fn(f64, f64) -> (f64, f64)) {
    let fit = (run.slope_bytes_per_request, run.intercept_bytes);
    let ends = (run.floor.first(), run.floor.last());
    let ((Some(b), Some(a)), (Some(first), Some(last))) = (fit, ends) else {
        return;
    };
    let (x0, y0) = map(first.requests, a + b * first.requests);
    let (x1, y1) = map(last.requests, a + b * last.requests);
    let _ = write!(
        s,
        r#"<line x1="{x0:.1}" y1="{y0:.1}" x2="{x1:.1}" y2="{y1:.1}" stroke="{c}" stroke-width="2.2" stroke-dasharray="7 4"><title>{} round {}: floor fit {}</title></line>"#,
        esc(&run.variant),
        run.round + 1,
        slope_words(run)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use kurabe_model::http::HttpReport;
    use kurabe_model::record::{MetricValue, RunRecord, RunStatus};
    use kurabe_model::run_detail::{HttpDetail, RunDetail};
    use serde_json::{json, Value};

    fn stored(variant: &str, round: u32, soak: Value) -> StoredRun {
        StoredRun {
            id: 0,
            run: RunRecord {
                variant: variant.into(),
                workload: "soak".into(),
                round,
                status: RunStatus::Ok,
                error_tail: None,
                started_at: "2026-11-30T01:00:00.000Z".into(),
                finished_at: "2026-11-30T01:00:10.000Z".into(),
                metrics: vec![MetricValue {
                    name: "pss_slope_bytes_per_request".into(),
                    value: 1056.0,
                    unit: "".into(),
                }],
                record: Some(soak_detail(soak)),
                http: None,
            },
        }
    }

    /// A soak run's record around `soak` (the soak part as JSON, read as
    /// a stored row is).
    pub(crate) fn soak_detail(soak: Value) -> RunDetail {
        RunDetail::Http(Box::new(HttpDetail {
            http: HttpReport::default(),
            target: None,
            settling: None,
            throughput_settling: None,
            soak: Some(serde_json::from_value(soak).unwrap()),
        }))
    }

    /// A soak record as `kurabe-lab` writes it: 1 KiB per request on top of 5 MB.
    pub(crate) fn leak_record() -> Value {
        let samples: Vec<Value> = (0..50_u64)
            .map(|i| {
                let req = i * 100;
                json!([
                    1.0 + i as f64 * 0.1,
                    req,
                    9_000_000 + 1024 * req,
                    5_000_000 + 1024 * req
                ])
            })
            .collect();
        json!({
            "samples_columns": ["t_s", "requests", "pss_bytes", "pss_anon_shmem_swap_bytes"],
            "samples": samples,
            "fitted": "pss_anon_shmem_swap_bytes",
            "verdict": "growing",
            "theil_sen": { "slope": 1024.0, "intercept": 5e6, "slope_low": 1020.0, "slope_high": 1030.0, "points": 20 },
            "floor": [[0, 5e6], [2500, 5e6 + 2.56e6], [4900, 5e6 + 1024.0 * 4900.0]],
        })
    }

    #[test]
    fn series_from_the_fitted_column() {
        let s = soak_series(&stored("leak", 2, leak_record())).unwrap();
        assert_eq!(s.memory, "pss_anon_shmem_swap_bytes");
        assert_eq!(s.points.len(), 50);
        assert_eq!(
            s.points[1],
            SoakPoint {
                requests: 100.0,
                bytes: 5e6 + 102_400.0
            }
        );
        assert_eq!(s.floor.len(), 3);
        assert_eq!(s.slope_bytes_per_request, Some(1024.0));
        assert_eq!(s.intercept_bytes, Some(5e6));
        assert_eq!((s.round, s.verdict.as_str()), (2, "growing"));
    }

    #[test]
    fn old_records_are_read_as_sigma_pss() {
        let old = json!({
            "samples_columns": ["t_s", "requests", "pss_bytes"],
            "samples": [[1.0, 10, 4_000_000], [1.1, 20, 4_000_000]],
            "verdict": "unknown",
        });
        let s = soak_series(&stored("a", 0, old)).unwrap();
        assert_eq!(s.memory, "pss_bytes");
        assert_eq!(s.points[1].bytes, 4e6);
        assert_eq!(s.slope_bytes_per_request, None);
        let too_short = json!({ "samples": [[1.0, 10, 4_000_000]], "verdict": "unknown" });
        assert!(soak_series(&stored("a", 0, too_short)).is_none());
    }

    #[test]
    fn requests_labels() {
        assert_eq!(requests_label(20_000.0), "20k");
        assert_eq!(requests_label(2_500.0), "2.5k");
        assert_eq!(requests_label(1_500_000.0), "1.5M");
        assert_eq!(requests_label(500.0), "500");
    }

    /// An experiment whose first run soaked: the HTML gets the chart, and
    /// the JSON report carries the series, valid against the schema.
    #[test]
    fn report_of_a_soak_experiment() {
        use crate::{experiment_report, testdata::sample_experiment, Html, Json, Render};
        let mut e = sample_experiment();
        e.runs[1].run.record = Some(soak_detail(leak_record()));
        let report = experiment_report(&e);
        assert_eq!(report.workloads[0].soak.len(), 1);
        let mut html = Vec::new();
        Html.render(&report, &mut html).unwrap();
        let html = String::from_utf8(html).unwrap();
        assert!(html.contains("Memory over requests served, per soak run"));
        kurabe_testkit::html::balanced(&html).unwrap();
        // 3 bar charts and the soak chart (the replaced record held the
        // only CPU/memory time series).
        assert_eq!(html.matches("<svg").count(), 3 + 1);
        crate::html::tests::assert_reads_on_a_narrow_screen(&html);
        let mut out = Vec::new();
        Json.render(&report, &mut out).unwrap();
        let value: Value = serde_json::from_slice(&out).unwrap();
        kurabe_testkit::schema::assert_valid("experiment-report.schema.json", &value);
        assert_eq!(
            value["workloads"][0]["soak"][0]["floor"][1]["requests"],
            2500.0
        );
        let back: ExperimentReport = serde_json::from_slice(&out).unwrap();
        assert_eq!(back.workloads[0].soak, report.workloads[0].soak);
        // No soak run, no `soak` key: other reports are unchanged.
        let plain = experiment_report(&sample_experiment());
        let v = serde_json::to_value(&plain).unwrap();
        assert!(v["workloads"][0].get("soak").is_none());
    }

    #[test]
    fn chart_has_lines_floor_fit_and_escaped_legend() {
        let mut a = soak_series(&stored("<b>leak</b>", 0, leak_record())).unwrap();
        let flat = json!({
            "samples_columns": ["t_s", "requests", "pss_bytes", "pss_anon_shmem_swap_bytes"],
            "samples": [[1.0, 0, 8_000_000, 4_000_000], [2.0, 4900, 8_000_000, 4_000_000]],
            "fitted": "pss_anon_shmem_swap_bytes",
            "verdict": "flat",
            "theil_sen": { "slope": 0.0, "intercept": 4e6, "slope_low": -1.0, "slope_high": 1.0, "points": 2 },
            "floor": [[0, 4e6], [4900, 4e6]],
        });
        let b = soak_series(&stored("no leak", 0, flat)).unwrap();
        a.round = 1;
        let svg = chart(&[a, b], &|v| usize::from(v == "no leak"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(
            svg.matches("stroke-dasharray").count(),
            4,
            "2 fit lines + 2 legend keys"
        );
        assert_eq!(svg.matches("<circle").count(), 5);
        assert!(svg.contains("&lt;b&gt;leak&lt;/b&gt;"));
        assert!(!svg.contains("<b>"));
        assert!(svg.contains("requests served"));
        assert!(svg.contains("memory the target owns (MiB)"));
        assert!(svg.contains("1024 B/request (median), growing in 1/1"));
        assert!(svg.contains("0 B/request (median), flat in 1/1"));
        assert!(svg.contains(colour(0)) && svg.contains(colour(1)));
    }
}
