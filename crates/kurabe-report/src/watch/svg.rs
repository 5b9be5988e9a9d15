//! CPU % and memory of a [`WatchReport`] over time as a standalone SVG
//! image: the report's two line charts ([`crate::chart::line_chart`], the
//! same as the HTML report's) stacked, with the styles they need inline.

use std::fmt::Write as _;
use std::io::{self, Write};

use kurabe_model::probe::WatchReport;
use kurabe_model::stats::Unit;

use crate::chart::{line_chart, Line, LINE_CHART_SIZE};
use crate::Render;

/// SVG renderer: a standalone image of a time series.
pub struct Svg;

impl Render<WatchReport> for Svg {
    fn render(&self, r: &WatchReport, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(chart(r).as_bytes())
    }
}

/// Colour indices in the shared palette: blue CPU, orange PSS, grey RSS
/// (RSS counts pages the processes share once per process: "overcounts").
const CPU: usize = 0;
const PSS: usize = 1;
const RSS: usize = 9;

/// The text styles the charts' classes expect (the HTML report has them in its page).
const STYLE: &str = "text{font-family:sans-serif}.tick{font-size:12px;fill:#616e7c}.label,.axis{font-size:13px;fill:#1f2933}";

/// CPU over time above memory over time.
fn chart(r: &WatchReport) -> String {
    let series = |f: &dyn Fn(&kurabe_model::probe::WatchPoint) -> f64| -> Vec<(f64, f64)> {
        r.series.iter().map(|p| (p.t_s, f(p))).collect()
    };
    let cpu = series(&|p| p.cpu_percent);
    let pss = series(&|p| p.size.pss_bytes as f64);
    let rss = series(&|p| p.size.rss_bytes as f64);
    let line = |legend: &str, colour: usize, points| Line {
        label: legend.to_owned(),
        legend: legend.to_owned(),
        colour,
        points,
    };
    const X: &str = "time since the watch started (s)";
    let panels = [
        line_chart(
            &[line("CPU", CPU, &cpu)],
            Unit::Percent,
            X,
            "CPU, % of one core",
        ),
        line_chart(
            &[
                line("Σ RSS, overcounts", RSS, &rss),
                line("Σ PSS", PSS, &pss),
            ],
            Unit::Bytes,
            X,
            "memory",
        ),
    ];
    stack(&panels)
}

/// Charts one above the other in one standalone SVG on white: each chart
/// is an `<svg>` of its own; nested, it is placed by its y.
fn stack(panels: &[String]) -> String {
    let (w, h) = LINE_CHART_SIZE;
    let total = h * panels.len() as f64;
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{total}" viewBox="0 0 {w} {total}"><style>{STYLE}</style><rect width="100%" height="100%" fill="white"/>"#
    );
    for (i, panel) in panels.iter().enumerate() {
        let placed = panel.replacen("<svg ", &format!(r#"<svg y="{}" "#, h * i as f64), 1);
        let _ = writeln!(o, "{placed}");
    }
    o.push_str("</svg>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_panels_of_the_shared_line_chart() {
        let svg = chart(&crate::fixtures::watch());
        kurabe_testkit::html::balanced(&svg).unwrap();
        assert_eq!(svg.matches("<svg ").count(), 3, "{svg}");
        assert_eq!(svg.matches("<polyline ").count(), 3, "CPU, RSS, PSS");
        assert!(svg.contains(r#"<svg y="236" "#));
        assert!(svg.contains("time since the watch started (s)"));
    }
}
