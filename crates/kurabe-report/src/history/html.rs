//! HTML: a history as one self-contained page — each series charted over
//! its experiments with the change points marked (dashed lines), the
//! changes in words, and the points in a collapsible table. The chart code
//! is the experiment report's (`chart.rs`); no script, no external
//! resource, so the page opens from `file://`.

use std::io::{self, Write};

use kurabe_model::history::{HistoryReport, HistorySeries};
use kurabe_model::stats::Verdict;

use super::text::{change_sentence, hosts_line, series_title};
use crate::chart::{line_chart_on, Axes, Line};
use crate::escape::html as esc;
use crate::html::page_start;
use crate::{words, Render};

/// HTML history renderer; `report_links` makes each point's experiment a
/// link to `<prefix><id>.html` (the static site's experiment pages).
#[derive(Debug, Clone, Default)]
pub struct HistoryHtml {
    /// Prefix of the link to each experiment's report; none: no links.
    pub report_links: Option<String>,
}

/// The chart of one series: its values over experiment number, changes marked.
pub(crate) fn series_chart(s: &HistorySeries) -> String {
    let pts: Vec<(f64, f64)> = s
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| ((i + 1) as f64, p.value))
        .collect();
    let line = Line {
        label: series_title(s),
        legend: s.variant.clone(),
        colour: 0,
        points: &pts,
    };
    let marks = change_marks(s);
    let y_title = format!("{} ({})", words::label(&s.metric), s.unit.symbol());
    let axes = Axes {
        x_title: "experiment",
        y_title: &y_title,
        x_suffix: "",
        marks: &marks,
    };
    line_chart_on(&[line], s.unit, &axes)
}

/// A mark per change, between the last old point and the first new one.
fn change_marks(s: &HistorySeries) -> Vec<(f64, String)> {
    s.changes
        .iter()
        .map(|c| {
            (
                c.index as f64 + 0.5,
                format!("{}: {}", c.experiment, c.phrase),
            )
        })
        .collect()
}

fn changes(s: &HistorySeries, out: &mut dyn Write) -> io::Result<()> {
    if s.changes.is_empty() {
        return writeln!(out, "<p class=\"meta\">No change point.</p>");
    }
    writeln!(out, "<ul>")?;
    for c in &s.changes {
        let class = match c.verdict {
            Verdict::Worse => "bad",
            Verdict::Better => "good",
            _ => "neutral",
        };
        let span = format!("<span class=\"{class}\">");
        let sentence = change_sentence(c, &esc, ["<strong>", "</strong>"], [&span, "</span>"]);
        writeln!(out, "<li>{sentence}</li>")?;
    }
    writeln!(out, "</ul>")
}

impl HistoryHtml {
    fn experiment_cell(&self, id: &str) -> String {
        match &self.report_links {
            Some(prefix) => format!(
                "<a href=\"{}{}.html\">{}</a>",
                esc(prefix),
                esc(id),
                esc(id)
            ),
            None => esc(id),
        }
    }

    fn points(&self, s: &HistorySeries, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "<details><summary>{} points</summary><div class=\"scroll\"><table><thead><tr><th>experiment</th><th>rev</th><th>started</th><th>runs</th><th>value</th></tr></thead><tbody>", s.points.len())?;
        for p in &s.points {
            writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                self.experiment_cell(&p.experiment),
                esc(&p.rev),
                esc(&p.started_at),
                p.samples.len(),
                esc(&words::value(s.unit, p.value))
            )?;
        }
        writeln!(out, "</tbody></table></div></details>")
    }

    /// One series as a `<section>`: title, chart, changes, points.
    pub(crate) fn series(&self, s: &HistorySeries, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "<section><h2>{}</h2>", esc(&series_title(s)))?;
        writeln!(out, "<figure>{}</figure>", series_chart(s))?;
        changes(s, out)?;
        self.points(s, out)?;
        writeln!(out, "</section>")
    }
}

impl Render<HistoryReport> for HistoryHtml {
    fn render(&self, r: &HistoryReport, out: &mut dyn Write) -> io::Result<()> {
        page_start(out, &format!("History of {}", r.name))?;
        writeln!(
            out,
            "<header><h1>History of {}</h1><p class=\"meta\">{}</p></header>",
            esc(&r.name),
            esc(&hosts_line(r))
        )?;
        for s in &r.series {
            self.series(s, out)?;
        }
        writeln!(out, "</main>\n</body>\n</html>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{history_report, Hosts};
    use crate::testdata::sample_experiment;
    use kurabe_model::stats::changepoint::Config;

    /// Three experiments of the sample plan, the newest a little slower.
    fn report() -> HistoryReport {
        let experiments: Vec<_> = (1..=3)
            .map(|i| {
                let mut e = sample_experiment();
                e.id = kurabe_model::record::ExperimentId(i);
                e.started_at = format!("2026-01-0{i}T10:00:00Z");
                e
            })
            .collect();
        history_report(
            "ruby <gc>",
            &experiments,
            &Hosts::Newest,
            &Config::default(),
        )
    }

    #[test]
    fn a_page_of_charts_that_reads_on_a_narrow_screen() {
        let r = report();
        assert!(!r.series.is_empty());
        let links = HistoryHtml {
            report_links: Some("e/".into()),
        };
        let mut out = Vec::new();
        links.render(&r, &mut out).unwrap();
        let html = String::from_utf8(out).unwrap();
        kurabe_testkit::html::balanced(&html).unwrap();
        assert!(!html.contains("<script"));
        assert!(html.contains("History of ruby &lt;gc&gt;"));
        assert_eq!(html.matches("<svg").count(), r.series.len());
        assert_eq!(
            html.matches("<a href=\"e/e3.html\">").count(),
            r.series.len()
        );
        crate::html::tests::assert_reads_on_a_narrow_screen(&html);
    }
}
