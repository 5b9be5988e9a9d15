//! `--series-csv FILE`: the run's per-second series, one row per second of
//! the measured phase under the columns of [`CSV_COLUMNS`] (units in the
//! names, as in the JSON record; `target_per_s` empty in the closed model,
//! `target_connections` empty but with connection stages).

use std::io::{self, Write};

use kurabe_model::http::HttpReport;
use kurabe_model::series::{Interval, CSV_COLUMNS};

use crate::Render;

/// The per-second series as CSV.
#[derive(Debug, Clone, Copy, Default)]
pub struct SeriesCsv;

impl Render<HttpReport> for SeriesCsv {
    fn render(&self, report: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{}", CSV_COLUMNS.join(","))?;
        for r in &report.series {
            writeln!(out, "{}", row(r))?;
        }
        Ok(())
    }
}

fn row(r: &Interval) -> String {
    let target = r.target_per_s.map_or(String::new(), |t| format!("{t:.2}"));
    let conns = r
        .target_connections
        .map_or(String::new(), |t| format!("{t:.2}"));
    format!(
        "{:.0},{:.3},{},{},{},{},{:.2},{target},{},{},{},{},{conns}",
        r.start_s,
        r.duration_s,
        r.sent,
        r.completed,
        r.failed,
        r.dropped,
        r.achieved_per_s,
        r.latency_p50_us,
        r.latency_p90_us,
        r.latency_p99_us,
        r.latency_max_us
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_a_second_under_the_named_columns() {
        let mut report = crate::fixtures::http();
        report.series = vec![
            Interval {
                duration_s: 1.0,
                sent: 10,
                completed: 9,
                failed: 1,
                achieved_per_s: 10.0,
                target_per_s: Some(10.0),
                latency_p50_us: 100,
                latency_p90_us: 200,
                latency_p99_us: 300,
                latency_max_us: 400,
                ..Interval::default()
            },
            Interval {
                start_s: 1.0,
                duration_s: 0.5,
                target_connections: Some(2.5),
                ..Interval::default()
            },
        ];
        let text = crate::to_string(&SeriesCsv, &report);
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines[0], CSV_COLUMNS.join(","));
        assert_eq!(lines[1], "0,1.000,10,9,1,0,10.00,10.00,100,200,300,400,");
        assert_eq!(lines[2], "1,0.500,0,0,0,0,0.00,,0,0,0,0,2.50");
    }
}
