//! CSV: a header line and one row of headline figures (units in the column
//! names; with several request names a `name` column and a row per name
//! after the whole mix's); and ab's `-e` file ([`AbPercentCsv`]).

use std::io::{self, Write};

use kurabe_model::http::HttpReport;

use super::breakdown::table;
use crate::escape::csv as field;
use crate::{Csv, Render};

impl Render<HttpReport> for Csv {
    fn render(&self, report: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
        let rows = table(report);
        let header: Vec<_> = rows[0].iter().map(|(h, _)| field(h)).collect();
        writeln!(out, "{}", header.join(","))?;
        for cols in &rows {
            let row: Vec<_> = cols.iter().map(|(_, v)| field(v)).collect();
            writeln!(out, "{}", row.join(","))?;
        }
        Ok(())
    }
}

/// ab's `-e` file: "Percentage served,Time in ms" and one row per percent,
/// 0 to 100, the time with three decimals, exactly as ab writes it. Nothing
/// but the header when no request completed.
#[derive(Debug, Clone, Copy, Default)]
pub struct AbPercentCsv;

impl Render<HttpReport> for AbPercentCsv {
    fn render(&self, report: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "Percentage served,Time in ms")?;
        for (i, us) in report.percent_served_us.iter().enumerate() {
            writeln!(out, "{i},{:.3}", *us as f64 / 1000.0)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_file_has_abs_header_and_101_rows() {
        let mut report = crate::fixtures::http();
        report.percent_served_us = (0..=100).map(|i| 95 + i * 10).collect();
        let text = crate::to_string(&AbPercentCsv, &report);
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines.len(), 102);
        assert_eq!(lines[0], "Percentage served,Time in ms");
        assert_eq!(lines[1], "0,0.095");
        assert_eq!(lines[101], "100,1.095");
    }

    #[test]
    fn header_and_one_row_with_equal_field_counts() {
        let mut report = crate::fixtures::http();
        report.url = "http://h/?a=1,2".into();
        let mut out = Vec::new();
        Csv.render(&report, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("url,concurrency,"));
        assert!(lines[1].starts_with("\"http://h/?a=1,2\",50,"));
        assert!(lines[0].contains("latency_p99_us") && lines[1].contains(",1210,"));
    }
}
