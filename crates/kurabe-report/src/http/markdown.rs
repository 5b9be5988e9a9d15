//! Markdown: one table with a header and one row of headline figures (and
//! with several request names, a row per name after the whole mix's).

use std::io::{self, Write};

use kurabe_model::http::HttpReport;
use kurabe_model::profile::Per;

use super::breakdown::table;
use crate::escape::markdown;
use crate::{Markdown, Render};

impl Render<HttpReport> for Markdown {
    fn render(&self, report: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
        let rows = table(report);
        let header: Vec<_> = rows[0].iter().map(|(h, _)| *h).collect();
        let rule: Vec<_> = header
            .iter()
            .map(|h| {
                if matches!(*h, "url" | "name") {
                    ":--"
                } else {
                    "--:"
                }
            })
            .collect();
        writeln!(out, "| {} |", header.join(" | "))?;
        writeln!(out, "|{}|", rule.join("|"))?;
        for cols in &rows {
            let row: Vec<_> = cols.iter().map(|(_, v)| markdown(v)).collect();
            writeln!(out, "| {} |", row.join(" | "))?;
        }
        match &report.profile {
            Some(p) => crate::profile::write_run(p, Per::Request, true, out),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_the_expected_table() {
        let mut out = Vec::new();
        Markdown.render(&crate::fixtures::http(), &mut out).unwrap();
        let expected = "\
| url | concurrency | keep_alive | duration_s | complete_requests | failed_requests | in_flight_at_end | non_2xx_responses | requests_per_second | latency_mean_us | latency_p50_us | latency_p90_us | latency_p99_us | latency_p999_us | latency_max_us | transfer_bytes | interrupted |
|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|
| http://127.0.0.1:8080/index.html | 50 | true | 2.500 | 99990 | 10 | 0 | 5 | 39996.00 | 412.5 | 398 | 530 | 1210 | 2502 | 3120 | 9999000 | false |
";
        assert_eq!(String::from_utf8(out).unwrap(), expected);
    }
}
