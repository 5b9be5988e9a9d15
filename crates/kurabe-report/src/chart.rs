//! Hand-written SVG charts: a horizontal bar chart with 95 % interval
//! whiskers and the individual runs as dots, and the one line chart
//! ([`line`]: CPU and memory per run, `kurabe watch --svg`, histories,
//! soak runs), with the ticks, scales and colours they share.
//!
//! Output is a string of inline SVG with axis labels and units; every text
//! from the user goes through [`esc`]. No scripts, no external resources.

use std::fmt::Write as _;

use kurabe_model::stats::{student_t, Unit};

use crate::escape::html as esc;
use crate::words;

mod line;
pub(crate) use line::{
    line_chart, line_chart_on, Axes, Frame, LegendRow, Line, LineChart, LINE_CHART_SIZE,
};

/// Colours of variants, in variant order (Tableau 10, readable on white and in print).
pub(crate) const PALETTE: &[&str] = &[
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

/// Colour of the variant at `index`.
pub(crate) fn colour(index: usize) -> &'static str {
    PALETTE[index % PALETTE.len()]
}

/// Display divisor and suffix for axis ticks of `unit` up to `max`.
pub(crate) fn scale(unit: Unit, max: f64) -> (f64, &'static str) {
    const K: f64 = 1024.0;
    match unit {
        Unit::Bytes if max >= K * K * K => (K * K * K, " GiB"),
        Unit::Bytes if max >= K * K => (K * K, " MiB"),
        Unit::Bytes if max >= K => (K, " KiB"),
        Unit::Bytes => (1.0, " B"),
        Unit::Microseconds if max >= 1e6 => (1e6, " s"),
        Unit::Microseconds if max >= 1e3 => (1e3, " ms"),
        Unit::Microseconds => (1.0, " µs"),
        Unit::Milliseconds => (1.0, " ms"),
        Unit::Seconds => (1.0, " s"),
        Unit::PerSecond => (1.0, "/s"),
        Unit::Percent => (1.0, " %"),
        Unit::Count | Unit::Score => (1.0, ""),
    }
}

/// Tick values 0, step, 2·step … covering `max`, step 1/2/5·10ⁿ in display units.
fn ticks(unit: Unit, max: f64) -> (Vec<f64>, f64, &'static str) {
    let (div, suffix) = scale(unit, max);
    (range_ticks(0.0, max, div), div, suffix)
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

pub(crate) fn tick_label(v: f64, div: f64, suffix: &str) -> String {
    let n = words::num(v / div);
    // Axis ticks are round numbers: 5, not 5.00.
    let n = if n.contains('.') {
        n.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        n
    };
    format!("{n}{suffix}")
}

/// One bar of a bar chart.
pub(crate) struct Bar<'a> {
    /// Variant name.
    pub label: &'a str,
    /// Colour index.
    pub colour: usize,
    /// The samples.
    pub samples: &'a [f64],
}

/// Geometric mean and its 95 % interval from log values; `None` without
/// positive samples. With fewer than 3 samples there is no interval (the
/// tables say so too), so the whisker collapses onto the value and cannot
/// stretch the axis.
fn centre_and_interval(samples: &[f64]) -> Option<(f64, f64, f64)> {
    if samples.is_empty() || samples.iter().any(|x| !(x.is_finite() && *x > 0.0)) {
        let m = samples.iter().sum::<f64>() / samples.len().max(1) as f64;
        return (!samples.is_empty()).then_some((m, m, m));
    }
    let logs: Vec<f64> = samples.iter().map(|x| x.ln()).collect();
    let n = logs.len() as f64;
    let mean = logs.iter().sum::<f64>() / n;
    if logs.len() < kurabe_model::stats::verdict::MIN_RUNS {
        return Some((mean.exp(), mean.exp(), mean.exp()));
    }
    let var = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let half = student_t::quantile(0.975, n - 1.0) * (var / n).sqrt();
    Some((mean.exp(), (mean - half).exp(), (mean + half).exp()))
}

/// The geometry of a bar chart: a label column, then the plot, one row per bar.
struct BarFrame {
    label_w: f64,
    plot_w: f64,
    row_h: f64,
    top: f64,
    /// The value at the right end of the plot (the last tick).
    x_max: f64,
    /// The y of the x axis, below the last row.
    plot_bottom: f64,
    /// The unit of the values (for the tooltips).
    unit: Unit,
}

impl BarFrame {
    /// 150 px of labels, 340 px of plot, 30 px a row of `rows`, 10 px above.
    fn new(rows: usize, x_max: f64, unit: Unit) -> BarFrame {
        let (row_h, top) = (30.0, 10.0);
        BarFrame {
            label_w: 150.0,
            plot_w: 340.0,
            row_h,
            top,
            x_max,
            plot_bottom: top + row_h * rows as f64,
            unit,
        }
    }

    /// x of value `v` (negative values sit on the axis).
    fn x(&self, v: f64) -> f64 {
        self.label_w + (v.max(0.0) / self.x_max) * self.plot_w
    }
}

/// Horizontal bars (geometric mean) with 95 % interval whiskers and one
/// dot per run; x axis from 0 with ticks in the metric's unit.
pub(crate) fn bar_chart(bars: &[Bar<'_>], unit: Unit, axis_title: &str) -> String {
    let stats: Vec<Option<(f64, f64, f64)>> = bars
        .iter()
        .map(|b| centre_and_interval(b.samples))
        .collect();
    // The axis covers every run and every interval's upper end.
    let max = bars
        .iter()
        .flat_map(|b| b.samples.iter().copied())
        .chain(stats.iter().flatten().map(|s| s.2))
        .fold(0.0f64, f64::max);
    let (ticks, div, suffix) = ticks(unit, if max > 0.0 { max } else { 1.0 });
    let f = BarFrame::new(bars.len(), *ticks.last().unwrap_or(&1.0), unit);
    let mut s = bar_chart_start(&f, axis_title);
    for t in &ticks {
        bar_tick(&mut s, &f, f.x(*t), &tick_label(*t, div, suffix));
    }
    for (i, (b, st)) in bars.iter().zip(&stats).enumerate() {
        bar_row(&mut s, &f, i, b, *st);
    }
    bar_chart_end(&mut s, &f, axis_title);
    s
}

/// A vertical grid line at `tx` with its label below the plot.
fn bar_tick(s: &mut String, f: &BarFrame, tx: f64, label: &str) {
    let _ = write!(
        s,
        r##"<line x1="{tx:.1}" y1="{}" x2="{tx:.1}" y2="{}" stroke="#e3e6ea"/><text x="{tx:.1}" y="{:.1}" class="tick" text-anchor="middle">{}</text>"##,
        f.top,
        f.plot_bottom,
        f.plot_bottom + 14.0,
        esc(label)
    );
}

/// The x axis line and its title; closes the `<svg>`.
fn bar_chart_end(s: &mut String, f: &BarFrame, axis_title: &str) {
    let _ = write!(
        s,
        r##"<line x1="{}" y1="{}" x2="{:.1}" y2="{}" stroke="#9aa5b1"/><text x="{:.1}" y="{:.1}" class="axis" text-anchor="middle">{}</text></svg>"##,
        f.label_w,
        f.plot_bottom,
        f.label_w + f.plot_w,
        f.plot_bottom,
        f.label_w + f.plot_w / 2.0,
        f.plot_bottom + 36.0,
        esc(axis_title)
    );
}

/// The `<svg>` tag of a bar chart: 30 px right of the plot, 46 px below it.
fn bar_chart_start(f: &BarFrame, axis_title: &str) -> String {
    let width = f.label_w + f.plot_w + 30.0;
    let height = f.plot_bottom + 46.0;
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" aria-label="{}">"#,
        esc(axis_title)
    )
}

/// Row `i`: the label, and when the bar has a centre, the bar (with its
/// value as a tooltip), the interval whisker and a dot per run.
fn bar_row(s: &mut String, f: &BarFrame, i: usize, b: &Bar<'_>, st: Option<(f64, f64, f64)>) {
    let y = f.top + f.row_h * i as f64;
    let cy = y + f.row_h / 2.0;
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" class="label" text-anchor="end">{}</text>"#,
        f.label_w - 8.0,
        cy + 4.0,
        esc(&truncate(b.label, 20))
    );
    let Some((g, lo, hi)) = st else { return };
    bar_rect(s, f, y, b, &words::value(f.unit, g), f.x(g));
    if hi > lo {
        whisker(s, f.x(lo), f.x(hi), cy);
    }
    for v in b.samples {
        let _ = write!(
            s,
            r##"<circle cx="{:.1}" cy="{cy:.1}" r="2.4" fill="#ffffff" stroke="#1f2933" stroke-width="0.9"/>"##,
            f.x(*v)
        );
    }
}

/// The bar of row top `y`, ending at `x_end`, its value as a tooltip.
fn bar_rect(s: &mut String, f: &BarFrame, y: f64, b: &Bar<'_>, value: &str, x_end: f64) {
    let _ = write!(
        s,
        r#"<rect x="{}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}" fill-opacity="0.78" rx="2"><title>{}: {}</title></rect>"#,
        f.label_w,
        y + 6.0,
        x_end - f.label_w,
        f.row_h - 12.0,
        colour(b.colour),
        esc(b.label),
        esc(value)
    );
}

/// An interval whisker from `x_lo` to `x_hi` at height `cy`, with end caps.
fn whisker(s: &mut String, x_lo: f64, x_hi: f64, cy: f64) {
    let _ = write!(
        s,
        r##"<g stroke="#1f2933" stroke-width="1.4"><line x1="{x_lo:.1}" y1="{cy:.1}" x2="{x_hi:.1}" y2="{cy:.1}"/><line x1="{x_lo:.1}" y1="{:.1}" x2="{x_lo:.1}" y2="{:.1}"/><line x1="{x_hi:.1}" y1="{:.1}" x2="{x_hi:.1}" y2="{:.1}"/></g>"##,
        cy - 6.0,
        cy + 6.0,
        cy - 6.0,
        cy + 6.0
    );
}

/// A sparkline: `values` as a small line, change points (indices of the
/// first value at a new level) as red ticks; 120 × 24, no axes, no text
/// beyond a title for screen readers.
pub(crate) fn sparkline(values: &[f64], marks: &[usize]) -> String {
    let (w, h) = (120.0, 24.0);
    let step = w / (values.len().max(2) - 1) as f64;
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="trend of {} points"><polyline points="{}" fill="none" stroke="{}" stroke-width="1.4"/>"#,
        values.len(),
        sparkline_points(values, step, h),
        colour(0)
    );
    for &m in marks {
        let mx = m as f64 * step - step / 2.0;
        let _ = write!(
            s,
            r##"<line x1="{mx:.1}" y1="0" x2="{mx:.1}" y2="{h}" stroke="#b42318" stroke-dasharray="2 2"/>"##
        );
    }
    s.push_str("</svg>");
    s
}

/// The finite `values` as polyline points `x,y …`, `step` apart, scaled
/// from their minimum to their maximum into a height `h` less 2 px a side.
fn sparkline_points(values: &[f64], step: f64, h: f64) -> String {
    let finite = || values.iter().copied().filter(|v| v.is_finite());
    let lo = finite().fold(f64::INFINITY, f64::min);
    let hi = finite().fold(f64::NEG_INFINITY, f64::max);
    let span = if hi > lo { hi - lo } else { 1.0 };
    let pts: Vec<String> = values
        .iter()
        .enumerate()
        .filter(|(_, v)| v.is_finite())
        .map(|(i, v)| {
            format!(
                "{:.1},{:.1}",
                i as f64 * step,
                2.0 + (h - 4.0) * (1.0 - (v - lo) / span)
            )
        })
        .collect();
    pts.join(" ")
}

/// At most `n` characters, with an ellipsis when cut (the full name is in the table).
pub(crate) fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_in_display_units() {
        let (t, div, suffix) = ticks(Unit::Bytes, 61.0 * 1024.0 * 1024.0);
        assert_eq!((div, suffix), (1024.0 * 1024.0, " MiB"));
        let shown: Vec<String> = t.iter().map(|v| tick_label(*v, div, suffix)).collect();
        assert_eq!(shown, ["0 MiB", "20 MiB", "40 MiB", "60 MiB", "80 MiB"]);
        assert_eq!(tick_label(5.0, 1.0, " s"), "5 s");
        assert_eq!(tick_label(0.25, 1.0, ""), "0.25");
        let (t, _, _) = ticks(Unit::PerSecond, 126.6);
        assert_eq!(t, [0.0, 50.0, 100.0, 150.0]);
        let mib = 1024.0 * 1024.0;
        let t = range_ticks(4.7 * mib, 11.2 * mib, mib);
        assert_eq!(t.first(), Some(&(4.0 * mib)));
        assert_eq!(t.last(), Some(&(12.0 * mib)));
        assert!(t.len() <= 7, "{t:?}");
        assert_eq!(range_ticks(0.0, 6000.0, 1.0), [0.0, 2000.0, 4000.0, 6000.0]);
    }

    #[test]
    fn interval_of_the_geometric_mean() {
        let (g, lo, hi) = centre_and_interval(&[100.0, 100.0, 100.0]).unwrap();
        assert!([g, lo, hi].iter().all(|v| (v - 100.0).abs() < 1e-9));
        let (g, lo, hi) = centre_and_interval(&[90.0, 100.0, 110.0]).unwrap();
        assert!(lo < g && g < hi && (g - 99.67).abs() < 0.1, "{lo} {g} {hi}");
        assert!(centre_and_interval(&[]).is_none());
        // Two runs: no whisker, and no axis stretched by a t(1) interval.
        let (g, lo, hi) = centre_and_interval(&[100.0, 300.0]).unwrap();
        assert!(lo == g && g == hi, "{lo} {g} {hi}");
        let svg = bar_chart(
            &[Bar {
                label: "a",
                colour: 0,
                samples: &[100.0, 300.0],
            }],
            Unit::PerSecond,
            "req/s",
        );
        assert!(!svg.contains("stroke-width=\"1.4\""), "no whisker: {svg}");
        assert!(!svg.contains(">1000/s<"), "axis not stretched: {svg}");
    }

    #[test]
    fn labels_are_escaped() {
        let bars = [Bar {
            label: "<script>x</script>",
            colour: 0,
            samples: &[1.0, 2.0, 3.0],
        }];
        let svg = bar_chart(&bars, Unit::Count, "a & b");
        assert!(!svg.contains("<script>"));
        assert!(svg.contains("&lt;script&gt;x&lt;/script&gt;"));
        assert!(svg.contains("a &amp; b"));
    }
}
