//! The load's per-second series drawn: the achieved rate of each run with
//! the stages' target rate over it, the target connections of connection
//! stages, and the latency percentiles per second (p50 and p99). Drawn under ab's `-w` table of one run, in the
//! experiment page per HTTP run (an A/B's variants, a plan's) and per step
//! of a capacity search.
//!
//! Owns which lines the series make and their captions; the layout is the
//! one line chart's. Must not compute: every point is a row of the series
//! as the engine recorded it.

use std::fmt::Write as _;

use kurabe_model::series::Interval;
use kurabe_model::stats::Unit;

use crate::chart::{line_chart, Line};
use crate::escape::html as esc;

/// Colour of the target line: the palette's grey, apart from the variants'.
const TARGET_COLOUR: usize = 9;

/// One run's series and how its lines are named and coloured.
pub(crate) struct RunRows<'a> {
    /// Tooltip text (variant and round, or the URL).
    pub label: String,
    /// Legend text (the variant).
    pub legend: String,
    /// Colour index.
    pub colour: usize,
    /// The rows.
    pub rows: &'a [Interval],
}

/// (start of the second, value) per row.
fn points(rows: &[Interval], value: Value) -> Vec<(f64, f64)> {
    rows.iter().map(|r| (r.start_s, value(r))).collect()
}

/// The charts of `runs` in one `<div class="charts">`, under `title`;
/// nothing when no run has two rows or more.
pub(crate) fn load_charts(title: &str, runs: &[RunRows<'_>]) -> String {
    let runs: Vec<&RunRows<'_>> = runs.iter().filter(|r| r.rows.len() >= 2).collect();
    if runs.is_empty() {
        return String::new();
    }
    let mut s = format!("<h3>{}</h3><div class=\"charts\">", esc(title));
    s.push_str(&rate_figure(&runs));
    s.push_str(&connections_figure(&runs));
    s.push_str(&latency_figures(&runs));
    s.push_str("</div>");
    s
}

/// One run: its p50 and p99 on one chart. Several: a chart per
/// percentile, a line per run in its variant's colour.
fn latency_figures(runs: &[&RunRows<'_>]) -> String {
    if let [one] = runs {
        let data: Vec<Vec<(f64, f64)>> = PERCENTILES
            .iter()
            .map(|(_, v)| points(one.rows, *v))
            .collect();
        let lines: Vec<Line<'_>> = PERCENTILES
            .iter()
            .zip(&data)
            .enumerate()
            .map(|(i, ((name, _), d))| Line {
                label: format!("{} {name}", one.label),
                legend: (*name).to_owned(),
                colour: i,
                points: d,
            })
            .collect();
        return latency_figure("p50 and p99", &lines);
    }
    PERCENTILES
        .iter()
        .map(|(name, value)| {
            let data: Vec<Vec<(f64, f64)>> = runs.iter().map(|r| points(r.rows, *value)).collect();
            latency_figure(name, &run_lines(runs, &data, ""))
        })
        .collect()
}

/// A latency chart captioned `what`.
fn latency_figure(what: &str, lines: &[Line<'_>]) -> String {
    format!(
        "<figure class=\"load-latency\"><figcaption>Latency per second <span>{}, of the responses completed in each second</span></figcaption>{}</figure>",
        esc(what),
        line_chart(lines, Unit::Microseconds, "time (s)", "latency")
    )
}

/// A row's value drawn.
type Value = fn(&Interval) -> f64;

/// The percentiles drawn, by name.
const PERCENTILES: [(&str, Value); 2] = [
    ("p50", |r| r.latency_p50_us as f64),
    ("p99", |r| r.latency_p99_us as f64),
];

/// One line per run over `data` (its points, in run order), `suffix` after the tooltip.
fn run_lines<'a>(
    runs: &[&RunRows<'_>],
    data: &'a [Vec<(f64, f64)>],
    suffix: &str,
) -> Vec<Line<'a>> {
    runs.iter()
        .zip(data)
        .map(|(r, d)| Line {
            label: format!("{}{suffix}", r.label),
            legend: r.legend.clone(),
            colour: r.colour,
            points: d,
        })
        .collect()
}

/// Achieved requests per second of every run, the first target over them.
fn rate_figure(runs: &[&RunRows<'_>]) -> String {
    let data: Vec<Vec<(f64, f64)>> = runs
        .iter()
        .map(|r| points(r.rows, |i| i.achieved_per_s))
        .collect();
    let mut lines = run_lines(runs, &data, " achieved");
    let target: Vec<(f64, f64)> = runs
        .iter()
        .find(|r| r.rows.iter().any(|i| i.target_per_s.is_some()))
        .map(|r| points(r.rows, |i| i.target_per_s.unwrap_or(0.0)))
        .unwrap_or_default();
    if !target.is_empty() {
        lines.push(Line {
            label: "target (stages)".into(),
            legend: "target".into(),
            colour: TARGET_COLOUR,
            points: &target,
        });
    }
    let mut s = String::new();
    let _ = write!(
        s,
        "<figure class=\"load-rate\"><figcaption>Achieved rate <span>requests sent per second{}</span></figcaption>{}</figure>",
        if target.is_empty() { "" } else { ", the target rate in grey" },
        line_chart(&lines, Unit::PerSecond, "time (s)", "requests/s")
    );
    s
}

/// Connection stages (closed model): the open connections the stages aimed
/// at, per second, as recorded; nothing for other loads.
fn connections_figure(runs: &[&RunRows<'_>]) -> String {
    let data: Vec<Vec<(f64, f64)>> = runs
        .iter()
        .filter(|r| r.rows.iter().any(|i| i.target_connections.is_some()))
        .map(|r| points(r.rows, |i| i.target_connections.unwrap_or(0.0)))
        .collect();
    let Some(first) = data.first() else {
        return String::new();
    };
    let line = Line {
        label: "target connections (stages)".into(),
        legend: "target".into(),
        colour: TARGET_COLOUR,
        points: first,
    };
    format!(
        "<figure class=\"load-connections\"><figcaption>Connections <span>the open connections the stages aimed at, per second</span></figcaption>{}</figure>",
        line_chart(&[line], Unit::Count, "time (s)", "connections")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(target_connections: Option<f64>) -> Vec<Interval> {
        (0..3)
            .map(|i| Interval {
                start_s: f64::from(i),
                duration_s: 1.0,
                achieved_per_s: 10.0,
                target_connections: target_connections.map(|c| c * f64::from(i)),
                ..Interval::default()
            })
            .collect()
    }

    fn charts(rows: &[Interval]) -> String {
        let run = RunRows {
            label: "a".into(),
            legend: "a".into(),
            colour: 0,
            rows,
        };
        load_charts("Load", &[run])
    }

    #[test]
    fn connection_stages_draw_their_target_connections() {
        let html = charts(&rows(Some(4.0)));
        assert!(
            html.contains("<figure class=\"load-connections\">"),
            "{html}"
        );
        assert!(html.contains("<title>target connections (stages)</title>"));
        assert!(!html.contains("the target rate in grey"), "{html}");
    }

    #[test]
    fn other_loads_draw_no_connections_chart() {
        let html = charts(&rows(None));
        assert!(html.contains("<figure class=\"load-rate\">"), "{html}");
        assert!(!html.contains("load-connections"), "{html}");
    }
}
