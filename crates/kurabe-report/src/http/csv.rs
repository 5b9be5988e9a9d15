//! CSV: a header line and one row of headline figures (units in the column names).

use std::io::{self, Write};

use kurabe_model::http::HttpReport;

use super::summary_columns;
use crate::escape::csv as field;
use crate::{Csv, Render};

impl Render<HttpReport> for Csv {
    fn render(&self, report: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
        let cols = summary_columns(report);
        let header: Vec<_> = cols.iter().map(|(h, _)| field(h)).collect();
        let row: Vec<_> = cols.iter().map(|(_, v)| field(v)).collect();
        writeln!(out, "{}", header.join(","))?;
        writeln!(out, "{}", row.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
