//! The one line chart: lines over x, with ticks, marks, a legend and, for
//! callers that need them, extra layers in the chart's coordinates (soak
//! runs draw their floor dots and fitted lines there).
//!
//! Owns the layout (frame, ticks, axis titles, legend) of every line chart
//! kurabe draws: the HTML report's CPU and memory per run, `kurabe watch
//! --svg`, a history's series and a soak's memory over requests. Must not
//! compute statistics: callers bring the points (and any fitted line).

use std::fmt::Write as _;

use kurabe_model::stats::Unit;

use super::{colour, range_ticks, scale, tick_label, ticks, truncate};
use crate::escape::html as esc;
use crate::words;

/// One line of a line chart.
pub(crate) struct Line<'a> {
    /// Tooltip text (variant and round).
    pub label: String,
    /// Legend text (the variant); lines with the same legend share one entry.
    pub legend: String,
    /// Colour index.
    pub colour: usize,
    /// (x, y) points.
    pub points: &'a [(f64, f64)],
}

/// Width and height of a [`line_chart`], for callers that stack several.
pub(crate) const LINE_CHART_SIZE: (f64, f64) = (654.0, 236.0);

/// Lines over time: x in seconds from 0 (titled `x_title`), y from 0 in `unit`.
pub(crate) fn line_chart(lines: &[Line<'_>], unit: Unit, x_title: &str, y_title: &str) -> String {
    let axes = Axes {
        x_title,
        y_title,
        x_suffix: " s",
        marks: &[],
    };
    line_chart_on(lines, unit, &axes)
}

/// Titles and decorations of a [`line_chart_on`].
pub(crate) struct Axes<'a> {
    /// Title under the x axis.
    pub x_title: &'a str,
    /// Title beside the y axis.
    pub y_title: &'a str,
    /// Appended to each x tick (` s`; empty for experiment numbers).
    pub x_suffix: &'a str,
    /// x positions marked with a dashed vertical line and their label
    /// (a history's change points).
    pub marks: &'a [(f64, String)],
}

/// Lines over x from 0, y from 0 in `unit`, with `axes`' titles and marks.
pub(crate) fn line_chart_on(lines: &[Line<'_>], unit: Unit, axes: &Axes<'_>) -> String {
    let suffix = axes.x_suffix;
    LineChart {
        lines,
        unit,
        axes,
        frame: Frame::STANDARD,
        y_from_zero: true,
        x_label: &|t| format!("{}{}", words::num(t), esc(suffix)),
        overlay: None,
        legend_below: None,
    }
    .svg()
}

/// Width of one character of a tick label (12 px), generously.
const TICK_CHAR: f64 = 7.2;
/// Room left of the tick labels for the rotated y title and a gap.
const Y_TITLE_ROOM: f64 = 26.0;

/// Where the plot sits in the picture.
#[derive(Clone, Copy)]
pub(crate) struct Frame {
    /// Room left of the plot for the y ticks and title.
    pub left: f64,
    /// Plot width.
    pub width: f64,
    /// Plot height.
    pub height: f64,
    /// Room right of the plot (the legend's, when it is beside it).
    pub right: f64,
}

impl Frame {
    /// The report's standard panel, legend on the right.
    pub const STANDARD: Frame = Frame {
        left: 64.0,
        width: 440.0,
        height: 180.0,
        right: 150.0,
    };
    /// Space above the plot.
    const TOP: f64 = 12.0;
}

/// One legend row under the plot: text, colour index, and detail.
pub(crate) type LegendRow = (String, usize, String);

/// Draws extra layers; gets the mapping from data (x, y) to picture coordinates.
pub(crate) type Overlay<'a> = &'a dyn Fn(&dyn Fn(f64, f64) -> (f64, f64)) -> String;

/// A line chart with every option; [`line_chart_on`] fills in the usual ones.
pub(crate) struct LineChart<'a> {
    /// The lines.
    pub lines: &'a [Line<'a>],
    /// Unit of y.
    pub unit: Unit,
    /// Titles and marks.
    pub axes: &'a Axes<'a>,
    /// Layout.
    pub frame: Frame,
    /// y from 0 (levels); else a padded range around the data (slopes:
    /// a 2 MB rise on a 300 MB heap must show), with the unit in the y title.
    pub y_from_zero: bool,
    /// Text of an x tick (already escaped).
    pub x_label: &'a dyn Fn(f64) -> String,
    /// Extra layers drawn over the lines.
    pub overlay: Option<Overlay<'a>>,
    /// Legend rows under the plot instead of the legend beside it.
    pub legend_below: Option<&'a [LegendRow]>,
}

/// The value ranges of a chart: ticks and the mapping to the plot.
struct Scales {
    xt: Vec<f64>,
    yt: Vec<f64>,
    div: f64,
    suffix: &'static str,
}

impl LineChart<'_> {
    /// The chart as inline SVG.
    pub fn svg(&self) -> String {
        let sc = self.scales();
        let chart = self.roomy(&sc);
        chart.draw(&sc)
    }

    /// This chart with room left of the plot for its widest y tick and,
    /// beside it, the y title (taken from the plot's width, so the
    /// picture keeps its size).
    fn roomy(&self, sc: &Scales) -> LineChart<'_> {
        let left = self.frame.left.max(Y_TITLE_ROOM + widest_tick(sc));
        let frame = Frame {
            left,
            width: self.frame.width - (left - self.frame.left),
            ..self.frame
        };
        LineChart { frame, ..*self }
    }

    /// x of the rotated y title: clear of the widest tick label.
    fn y_title_x(&self, sc: &Scales) -> f64 {
        (self.frame.left - 13.0 - widest_tick(sc)).max(14.0)
    }

    fn draw(&self, sc: &Scales) -> String {
        let mut s = self.open();
        self.grid(&mut s, sc);
        let map = |px: f64, py: f64| self.map(sc, px, py);
        self.marks(&mut s, sc);
        self.polylines(&mut s, &map);
        if let Some(draw) = self.overlay {
            s.push_str(&draw(&map));
        }
        match self.legend_below {
            Some(rows) => {
                self.frame_and_titles(&mut s, sc);
                self.legend_rows(&mut s, rows);
            }
            None => {
                legend_entries(&mut s, self.lines, self.frame);
                self.frame_and_titles(&mut s, sc);
            }
        }
        s.push_str("</svg>");
        s
    }

    /// Dashed vertical lines at the marked x positions, with their label.
    fn marks(&self, s: &mut String, sc: &Scales) {
        let (top, bottom) = (Frame::TOP, Frame::TOP + self.frame.height);
        for (mx, label) in self.axes.marks {
            let (x, _) = self.map(sc, *mx, 0.0);
            let _ = write!(
                s,
                r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{bottom:.1}" stroke="#b42318" stroke-dasharray="4 3" class="mark"><title>{}</title></line>"##,
                esc(label)
            );
        }
    }

    fn scales(&self) -> Scales {
        let pts = || self.lines.iter().flat_map(|l| l.points.iter());
        let x_top = pts().map(|p| p.0).fold(0.0f64, f64::max);
        let y_hi = pts().map(|p| p.1).fold(0.0f64, f64::max);
        let (xt, _, _) = ticks(Unit::Seconds, if x_top > 0.0 { x_top } else { 1.0 });
        if self.y_from_zero {
            let (yt, div, suffix) = ticks(self.unit, if y_hi > 0.0 { y_hi } else { 1.0 });
            return Scales {
                xt,
                yt,
                div,
                suffix,
            };
        }
        let y_lo = pts().map(|p| p.1).fold(f64::INFINITY, f64::min);
        // A flat series still gets a readable band around its level.
        let pad = ((y_hi - y_lo) * 0.05).max(y_hi * 0.01).max(64.0 * 1024.0);
        let (div, suffix) = scale(self.unit, y_hi + pad);
        let yt = range_ticks((y_lo.min(y_hi) - pad).max(0.0), y_hi + pad, div);
        Scales {
            xt,
            yt,
            div,
            suffix,
        }
    }

    /// Picture coordinates of the data point (x, y).
    fn map(&self, sc: &Scales, x: f64, y: f64) -> (f64, f64) {
        let f = self.frame;
        let x_max = *sc.xt.last().unwrap_or(&1.0);
        let (y_min, y_max) = (sc.yt[0], *sc.yt.last().unwrap_or(&1.0));
        let span = if self.y_from_zero {
            y_max
        } else {
            (y_max - y_min).max(1.0)
        };
        (
            f.left + x / x_max * f.width,
            Frame::TOP + f.height - (y - y_min) / span * f.height,
        )
    }

    fn size(&self) -> (f64, f64) {
        let f = self.frame;
        let rows = self.legend_below.map_or(0, <[LegendRow]>::len);
        let height = match rows {
            0 => Frame::TOP + f.height + 44.0,
            n => Frame::TOP + f.height + 58.0 + 20.0 * n as f64 + 4.0,
        };
        (f.left + f.width + f.right, height)
    }

    fn open(&self) -> String {
        let (width, height) = self.size();
        format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" aria-label="{}">"#,
            esc(self.axes.y_title)
        )
    }

    /// Horizontal lines with y ticks; x ticks (with vertical lines when the
    /// y axis does not start at 0, where a slope is read against them).
    fn grid(&self, s: &mut String, sc: &Scales) {
        let f = self.frame;
        for t in &sc.yt {
            let (_, y) = self.map(sc, 0.0, *t);
            let _ = write!(
                s,
                r##"<line x1="{0}" y1="{1:.1}" x2="{2:.1}" y2="{1:.1}" stroke="#e3e6ea"/><text x="{3:.1}" y="{4:.1}" class="tick" text-anchor="end">{5}</text>"##,
                f.left,
                y,
                f.left + f.width,
                f.left - 6.0,
                y + 4.0,
                esc(&tick_label(*t, sc.div, sc.suffix))
            );
        }
        self.x_ticks(s, sc);
    }

    /// The x ticks' labels, and their vertical lines when y is not from 0.
    fn x_ticks(&self, s: &mut String, sc: &Scales) {
        let bottom = Frame::TOP + self.frame.height;
        for t in &sc.xt {
            let (x, _) = self.map(sc, *t, 0.0);
            if !self.y_from_zero {
                let _ = write!(
                    s,
                    r##"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{bottom:.1}" stroke="#f0f2f4"/>"##,
                    Frame::TOP
                );
            }
            let _ = write!(
                s,
                r#"<text x="{x:.1}" y="{:.1}" class="tick" text-anchor="middle">{}</text>"#,
                bottom + 16.0,
                (self.x_label)(*t)
            );
        }
    }

    fn polylines(&self, s: &mut String, map: &dyn Fn(f64, f64) -> (f64, f64)) {
        // Many thin lines (soak runs) read better lighter than a few.
        let style = match self.legend_below {
            Some(_) => r#"stroke-width="1.1" stroke-opacity="0.55""#,
            None => r#"stroke-width="1.6""#,
        };
        for l in self.lines {
            let path: Vec<String> = l
                .points
                .iter()
                .map(|(px, py)| {
                    let (x, y) = map(*px, *py);
                    format!("{x:.1},{y:.1}")
                })
                .collect();
            let _ = write!(
                s,
                r#"<polyline points="{}" fill="none" stroke="{}" {style}><title>{}</title></polyline>"#,
                path.join(" "),
                colour(l.colour),
                esc(&l.label)
            );
        }
    }

    fn frame_and_titles(&self, s: &mut String, sc: &Scales) {
        let f = self.frame;
        let (top, bottom) = (Frame::TOP, Frame::TOP + f.height);
        let y_title = match self.y_from_zero {
            true => self.axes.y_title.to_owned(),
            false => format!("{} ({})", self.axes.y_title, sc.suffix.trim()),
        };
        let _ = write!(
            s,
            r##"<line x1="{0}" y1="{1:.1}" x2="{2:.1}" y2="{1:.1}" stroke="#9aa5b1"/><line x1="{0}" y1="{top}" x2="{0}" y2="{1:.1}" stroke="#9aa5b1"/><text x="{3:.1}" y="{4:.1}" class="axis" text-anchor="middle">{5}</text><text transform="translate({8:.1} {6:.1}) rotate(-90)" class="axis" text-anchor="middle">{7}</text>"##,
            f.left,
            bottom,
            f.left + f.width,
            f.left + f.width / 2.0,
            bottom + 36.0,
            esc(self.axes.x_title),
            top + f.height / 2.0,
            esc(&y_title),
            self.y_title_x(sc)
        );
    }

    /// Legend under the plot: a dashed sample, the text and its detail.
    fn legend_rows(&self, s: &mut String, rows: &[LegendRow]) {
        let left = self.frame.left;
        for (i, (text, colour_index, detail)) in rows.iter().enumerate() {
            let ly = Frame::TOP + self.frame.height + 58.0 + 20.0 * i as f64;
            let _ = write!(
                s,
                r#"<line x1="{left}" y1="{ly}" x2="{:.1}" y2="{ly}" stroke="{}" stroke-width="2.2" stroke-dasharray="7 4"/><text x="{:.1}" y="{:.1}" class="label">{}<tspan class="tick"> · {}</tspan></text>"#,
                left + 24.0,
                colour(*colour_index),
                left + 32.0,
                ly + 4.0,
                esc(&truncate(text, 40)),
                esc(detail)
            );
        }
    }
}

/// Width of the widest y tick label, pixels.
fn widest_tick(sc: &Scales) -> f64 {
    let chars = sc
        .yt
        .iter()
        .map(|t| tick_label(*t, sc.div, sc.suffix).chars().count())
        .max()
        .unwrap_or(0);
    TICK_CHAR * chars as f64
}

/// The legend beside a line chart: one entry per distinct legend text.
fn legend_entries(s: &mut String, lines: &[Line<'_>], f: Frame) {
    let (lx, top) = (f.left + f.width + 14.0, Frame::TOP);
    let mut legends: Vec<(&str, usize)> = Vec::new();
    for l in lines {
        if !legends.iter().any(|(t, _)| *t == l.legend) {
            legends.push((&l.legend, l.colour));
        }
    }
    for (i, (text, colour_index)) in legends.iter().enumerate() {
        let c = colour(*colour_index);
        let ly = top + 10.0 + 18.0 * i as f64;
        let _ = write!(
            s,
            r#"<line x1="{lx}" y1="{ly}" x2="{:.1}" y2="{ly}" stroke="{c}" stroke-width="3"/><text x="{:.1}" y="{:.1}" class="tick">{}</text>"#,
            lx + 16.0,
            lx + 22.0,
            ly + 4.0,
            esc(&truncate(text, 18))
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The y title's x (from the SVG) and the widest tick's left end.
    fn title_and_ticks(unit: Unit, y_max: f64) -> (f64, f64) {
        let points = [(0.0, 0.0), (10.0, y_max)];
        let lines = [Line {
            label: "a".into(),
            legend: "a".into(),
            colour: 0,
            points: &points,
        }];
        let svg = line_chart(&lines, unit, "time (s)", "memory");
        let x = |after: &str| -> f64 {
            let rest = &svg[svg.find(after).unwrap() + after.len()..];
            rest[..rest.find([' ', '"']).unwrap()].parse().unwrap()
        };
        let title_x = x("translate(");
        let chart = LineChart {
            lines: &lines,
            unit,
            axes: &Axes {
                x_title: "",
                y_title: "",
                x_suffix: "",
                marks: &[],
            },
            frame: Frame::STANDARD,
            y_from_zero: true,
            x_label: &|t| t.to_string(),
            overlay: None,
            legend_below: None,
        };
        let sc = chart.scales();
        let roomy = chart.roomy(&sc);
        (title_x, roomy.frame.left - 6.0 - widest_tick(&sc))
    }

    #[test]
    fn the_y_title_clears_the_widest_tick_label() {
        for (unit, y_max) in [
            (Unit::Bytes, 900.0 * 1024.0 * 1024.0),
            (Unit::PerSecond, 12_000.0),
            (Unit::Microseconds, 1500.0),
            (Unit::Percent, 50.0),
        ] {
            let (title_x, ticks_start) = title_and_ticks(unit, y_max);
            // The rotated title's glyphs reach ~3 px right of its baseline
            // and ~10 px left of it.
            assert!(
                title_x + 3.0 < ticks_start,
                "{unit:?}: title at {title_x}, ticks from {ticks_start}"
            );
            assert!(
                title_x - 10.0 >= 0.0,
                "{unit:?}: title cut off at {title_x}"
            );
        }
    }

    #[test]
    fn widening_the_margin_keeps_the_picture_size() {
        let points = [(0.0, 0.0), (10.0, 900.0 * 1024.0 * 1024.0)];
        let lines = [Line {
            label: "a".into(),
            legend: "a".into(),
            colour: 0,
            points: &points,
        }];
        let svg = line_chart(&lines, Unit::Bytes, "t", "PSS");
        let (w, h) = LINE_CHART_SIZE;
        assert!(
            svg.contains(&format!(r#"width="{w}" height="{h}""#)),
            "{svg}"
        );
    }
}
