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
use kurabe_model::stats::Unit;
use serde_json::Value;

use crate::chart::{colour, scale, tick_label, truncate};
use crate::escape::html as esc;
use crate::words;

/// The soak series of a run, if its record has one with at least two samples.
///
/// Records written before the fitted column existed hold
/// `[t_s, requests, pss_bytes]` and were fitted on Σ PSS; newer ones name
/// the fitted column in `fitted` and list it in `samples_columns`.
pub(crate) fn soak_series(run: &StoredRun) -> Option<SoakSeries> {
    let soak = run.run.record.as_ref()?.get("soak")?;
    let memory = soak
        .get("fitted")
        .and_then(Value::as_str)
        .unwrap_or("pss_bytes");
    let columns: Vec<&str> = soak
        .get("samples_columns")
        .and_then(Value::as_array)
        .map(|c| c.iter().filter_map(Value::as_str).collect())
        .unwrap_or_else(|| vec!["t_s", "requests", "pss_bytes"]);
    let col = |name: &str| columns.iter().position(|c| *c == name);
    let (xi, yi) = (col("requests")?, col(memory)?);
    let points: Vec<SoakPoint> = soak
        .get("samples")?
        .as_array()?
        .iter()
        .filter_map(|s| {
            Some(SoakPoint {
                requests: s.get(xi)?.as_f64()?,
                bytes: s.get(yi)?.as_f64()?,
            })
        })
        .collect();
    if points.len() < 2 {
        return None;
    }
    let floor = soak
        .get("floor")
        .and_then(Value::as_array)
        .map(|f| {
            f.iter()
                .filter_map(|p| {
                    Some(SoakPoint {
                        requests: p.get(0)?.as_f64()?,
                        bytes: p.get(1)?.as_f64()?,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let ts = soak.get("theil_sen");
    let fit = |k: &str| ts.and_then(|t| t.get(k)).and_then(Value::as_f64);
    Some(SoakSeries {
        variant: run.run.variant.clone(),
        round: run.run.round,
        memory: memory.to_owned(),
        points,
        floor,
        slope_bytes_per_request: fit("slope"),
        slope_low_bytes_per_request: fit("slope_low"),
        slope_high_bytes_per_request: fit("slope_high"),
        intercept_bytes: fit("intercept"),
        verdict: soak
            .get("verdict")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_owned(),
    })
}

/// What the y axis shows, for the axis title and the caption.
fn memory_words(memory: &str) -> (&'static str, &'static str) {
    match memory {
        "pss_anon_shmem_swap_bytes" => (
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

/// Round tick values covering [`lo`, `hi`] (display units of `div`), step 1/2/5·10ⁿ.
fn range_ticks(lo: f64, hi: f64, div: f64) -> Vec<f64> {
    let (a, b) = (lo / div, hi / div);
    let span = (b - a).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf((span / 4.0).log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 5.0)
        .unwrap_or(10.0 * mag);
    let first = (a / step).floor();
    let last = (b / step).ceil().max(first + 1.0);
    (0..=(last - first) as usize)
        .map(|i| (first + i as f64) * step * div)
        .collect()
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
fn chart(series: &[SoakSeries], colour_of: &dyn Fn(&str) -> usize) -> String {
    let (left, plot_w, plot_h, top) = (70.0, 640.0, 240.0, 12.0);
    let mut variants: Vec<&str> = Vec::new();
    for s in series {
        if !variants.contains(&s.variant.as_str()) {
            variants.push(&s.variant);
        }
    }
    let legend_top = top + plot_h + 58.0;
    let width = left + plot_w + 24.0;
    let height = legend_top + 20.0 * variants.len() as f64 + 4.0;
    let all = || series.iter().flat_map(|s| s.points.iter());
    let x_top = all().map(|p| p.requests).fold(0.0f64, f64::max);
    let y_lo = all().map(|p| p.bytes).fold(f64::INFINITY, f64::min);
    let y_hi = all().map(|p| p.bytes).fold(0.0f64, f64::max);
    // A line chart of a slope need not start at zero: a 2 MB rise on a
    // 300 MB heap must be visible. The ticks carry the values.
    // A flat series still gets a readable band around its level.
    let pad = ((y_hi - y_lo) * 0.05).max(y_hi * 0.01).max(64.0 * 1024.0);
    let (div, suffix) = scale(Unit::Bytes, y_hi + pad);
    let yt = range_ticks((y_lo.min(y_hi) - pad).max(0.0), y_hi + pad, div);
    let (y_min, y_max) = (yt[0], *yt.last().unwrap_or(&1.0));
    let xt = range_ticks(0.0, x_top.max(1.0), 1.0);
    let x_max = *xt.last().unwrap_or(&1.0);
    let x = |v: f64| left + v / x_max * plot_w;
    let y = |v: f64| top + plot_h - (v - y_min) / (y_max - y_min).max(1.0) * plot_h;
    let (title, _) = memory_words(&series[0].memory);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" aria-label="{} over requests served">"#,
        esc(title)
    );
    for t in &yt {
        let _ = write!(
            s,
            r##"<line x1="{left}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#e3e6ea"/><text x="{2:.1}" y="{3:.1}" class="tick" text-anchor="end">{4}</text>"##,
            y(*t),
            left + plot_w,
            left - 6.0,
            y(*t) + 4.0,
            esc(&tick_label(*t, div, suffix))
        );
    }
    for t in &xt {
        let _ = write!(
            s,
            r##"<line x1="{0:.1}" y1="{top}" x2="{0:.1}" y2="{1:.1}" stroke="#f0f2f4"/><text x="{0:.1}" y="{2:.1}" class="tick" text-anchor="middle">{3}</text>"##,
            x(*t),
            top + plot_h,
            top + plot_h + 16.0,
            requests_label(*t)
        );
    }
    for run in series {
        let c = colour(colour_of(&run.variant));
        let path: Vec<String> = run
            .points
            .iter()
            .map(|p| format!("{:.1},{:.1}", x(p.requests), y(p.bytes)))
            .collect();
        let slope = run.slope_bytes_per_request.map_or_else(
            || "no fit".to_owned(),
            |v| format!("{} B/request", words::num(v)),
        );
        let _ = write!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{c}" stroke-width="1.1" stroke-opacity="0.55"><title>{} round {}: {slope}, {}</title></polyline>"#,
            path.join(" "),
            esc(&run.variant),
            run.round + 1,
            esc(&run.verdict)
        );
        for p in &run.floor {
            let _ = write!(
                s,
                r##"<circle cx="{:.1}" cy="{:.1}" r="2.3" fill="{c}" stroke="#ffffff" stroke-width="0.7"/>"##,
                x(p.requests),
                y(p.bytes)
            );
        }
        if let (Some(b), Some(a), Some(first), Some(last)) = (
            run.slope_bytes_per_request,
            run.intercept_bytes,
            run.floor.first(),
            run.floor.last(),
        ) {
            let (x0, x1) = (first.requests, last.requests);
            let _ = write!(
                s,
                r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{c}" stroke-width="2.2" stroke-dasharray="7 4"><title>{} round {}: floor fit {slope}</title></line>"#,
                x(x0),
                y(a + b * x0),
                x(x1),
                y(a + b * x1),
                esc(&run.variant),
                run.round + 1
            );
        }
    }
    let _ = write!(
        s,
        r##"<line x1="{left}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#9aa5b1"/><line x1="{left}" y1="{top}" x2="{left}" y2="{0:.1}" stroke="#9aa5b1"/><text x="{2:.1}" y="{3:.1}" class="axis" text-anchor="middle">requests served (measured phase)</text><text transform="translate(14 {4:.1}) rotate(-90)" class="axis" text-anchor="middle">{5} ({6})</text>"##,
        top + plot_h,
        left + plot_w,
        left + plot_w / 2.0,
        top + plot_h + 36.0,
        top + plot_h / 2.0,
        esc(title),
        esc(suffix.trim())
    );
    for (i, v) in variants.iter().enumerate() {
        let runs: Vec<&SoakSeries> = series.iter().filter(|s| s.variant == *v).collect();
        let c = colour(colour_of(v));
        let ly = legend_top + 20.0 * i as f64;
        let _ = write!(
            s,
            r#"<line x1="{left}" y1="{ly}" x2="{:.1}" y2="{ly}" stroke="{c}" stroke-width="2.2" stroke-dasharray="7 4"/><text x="{:.1}" y="{:.1}" class="label">{}<tspan class="tick"> · {}</tspan></text>"#,
            left + 24.0,
            left + 32.0,
            ly + 4.0,
            esc(&truncate(v, 40)),
            esc(&legend_text(&runs))
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use kurabe_model::record::{MetricValue, RunRecord, RunStatus};
    use serde_json::json;

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
                record: Some(json!({ "kind": "http", "soak": soak })),
            },
        }
    }

    /// A soak record as `kurabe-lab` writes it: 1 KiB per request on top of 5 MB.
    pub(crate) fn leak_record() -> Value {
        let samples: Vec<Value> = (0..50)
            .map(|i| {
                let req = i * 100;
                json!([
                    1.0 + f64::from(i) * 0.1,
                    req,
                    9e6 + 1024.0 * f64::from(req),
                    5e6 + 1024.0 * f64::from(req)
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
            "samples": [[1.0, 10, 4e6], [1.1, 20, 4e6]],
            "verdict": "unknown",
        });
        let s = soak_series(&stored("a", 0, old)).unwrap();
        assert_eq!(s.memory, "pss_bytes");
        assert_eq!(s.points[1].bytes, 4e6);
        assert_eq!(s.slope_bytes_per_request, None);
        let too_short = json!({ "samples": [[1.0, 10, 4e6]] });
        assert!(soak_series(&stored("a", 0, too_short)).is_none());
    }

    #[test]
    fn ticks_and_labels() {
        let mib = 1024.0 * 1024.0;
        let t = range_ticks(4.7 * mib, 11.2 * mib, mib);
        assert_eq!(t.first(), Some(&(4.0 * mib)));
        assert_eq!(t.last(), Some(&(12.0 * mib)));
        assert!(t.len() <= 7, "{t:?}");
        assert_eq!(range_ticks(0.0, 6000.0, 1.0), [0.0, 2000.0, 4000.0, 6000.0]);
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
        e.runs[1].run.record = Some(json!({ "soak": leak_record() }));
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
            "samples": [[1.0, 0, 8e6, 4e6], [2.0, 4900, 8e6, 4e6]],
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
