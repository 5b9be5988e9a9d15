//! CPU % and memory of a [`WatchReport`] over time as an SVG image.

use std::fmt::Write as _;
use std::io::{self, Write};

use kurabe_model::probe::WatchReport;

use crate::escape::html as xml;
use crate::Render;

/// SVG renderer: a standalone image of a time series.
pub struct Svg;

impl Render<WatchReport> for Svg {
    fn render(&self, r: &WatchReport, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(chart(r).as_bytes())
    }
}

/// CPU % and memory over time: two stacked line charts, hand-written SVG.
fn chart(r: &WatchReport) -> String {
    const W: f64 = 720.0;
    const H: f64 = 180.0;
    const LEFT: f64 = 70.0;
    const PAD: f64 = 30.0;
    let t_max = r
        .series
        .iter()
        .map(|p| p.t_s)
        .fold(r.duration_s, f64::max)
        .max(1e-3);
    let cpu_max = r.series.iter().map(|p| p.cpu_percent).fold(100.0, f64::max);
    let mem_max = r
        .series
        .iter()
        .map(|p| p.rss_bytes.max(p.pss_bytes) as f64 / 1048576.0)
        .fold(1.0, f64::max);
    let x = |t: f64| LEFT + t / t_max * (W - LEFT - PAD);
    let mut o = String::new();
    let total_h = 2.0 * (H + PAD) + PAD;
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{total_h}" viewBox="0 0 {W} {total_h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(o, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let mut panel = |top: f64, title: &str, max: f64, unit: &str, lines: &[(&str, Vec<f64>)]| {
        let y = |v: f64| top + H - v / max * H;
        let _ = writeln!(
            o,
            r##"<text x="{LEFT}" y="{:.1}" font-weight="bold">{}</text>"##,
            top - 8.0,
            xml(title)
        );
        let _ = writeln!(
            o,
            r##"<rect x="{LEFT}" y="{top}" width="{:.1}" height="{H}" fill="none" stroke="#999"/>"##,
            W - LEFT - PAD
        );
        for i in 0..=4 {
            let v = max * f64::from(i) / 4.0;
            let _ = writeln!(
                o,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="end">{v:.0} {unit}</text><line x1="{LEFT}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#eee"/>"##,
                LEFT - 4.0,
                y(v) + 4.0,
                W - PAD,
                y(v),
                y(v)
            );
        }
        let _ = writeln!(
            o,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end">{t_max:.1} s</text>"##,
            W - PAD,
            top + H + 14.0
        );
        for (li, (color, vals)) in lines.iter().enumerate() {
            let pts: Vec<String> = r
                .series
                .iter()
                .zip(vals)
                .map(|(p, v)| format!("{:.1},{:.1}", x(p.t_s), y(*v)))
                .collect();
            let _ = writeln!(
                o,
                r##"<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{}"/>"##,
                pts.join(" ")
            );
            let _ = li;
        }
    };
    let cpu: Vec<f64> = r.series.iter().map(|p| p.cpu_percent).collect();
    panel(PAD, "CPU, % of one core", cpu_max, "%", &[("#1f77b4", cpu)]);
    let pss: Vec<f64> = r
        .series
        .iter()
        .map(|p| p.pss_bytes as f64 / 1048576.0)
        .collect();
    let rss: Vec<f64> = r
        .series
        .iter()
        .map(|p| p.rss_bytes as f64 / 1048576.0)
        .collect();
    panel(
        2.0 * PAD + H,
        "Memory: Σ PSS (orange), Σ RSS (grey, over-counts shared pages)",
        mem_max,
        "MiB",
        &[("#bbbbbb", rss), ("#ff7f0e", pss)],
    );
    o.push_str("</svg>\n");
    o
}
