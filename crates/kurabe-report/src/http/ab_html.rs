//! ab's `-w` report: the HTML table ab prints, row for row, with the
//! user's `-x`/`-y`/`-z` attributes on `<table>`, `<tr>` and `<td>`/`<th>`.
//!
//! Owns that table. Must not add kurabe's own figures to it: a page that
//! embeds ab's table gets the same rows from kurabe. kurabe's additions
//! come after it (a table per request name with several, the per-second
//! series drawn for a run of two seconds or more). Values are
//! HTML-escaped; the attribute strings are the user's and go in verbatim,
//! as ab inserts them.

use std::io::{self, Write};

use kurabe_model::http::HttpReport;

use crate::escape::html;
use crate::Render;

/// ab's HTML table with its attribute strings (`-x`, `-y`, `-z`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbHtml {
    /// Inserted into `<table …>` (ab's `-x`, default empty).
    pub table: String,
    /// Inserted into every `<tr …>` (ab's `-y`, default empty).
    pub tr: String,
    /// Inserted into every `<td …>` and `<th …>` (ab's `-z`, default `bgcolor=white`).
    pub td: String,
}

impl Default for AbHtml {
    fn default() -> Self {
        AbHtml {
            table: String::new(),
            tr: String::new(),
            td: "bgcolor=white".into(),
        }
    }
}

/// Whole milliseconds, rounded as ab rounds.
fn ms(us: f64) -> i64 {
    ((us + 500.0) / 1000.0).floor() as i64
}

impl AbHtml {
    /// One "label: value" row, as ab writes it.
    fn row(&self, out: &mut dyn Write, label: &str, value: &str) -> io::Result<()> {
        let (tr, td) = (&self.tr, &self.td);
        writeln!(
            out,
            "<tr {tr}><th colspan=2 {td}>{label}</th><td colspan=2 {td}>{}</td></tr>",
            html(value)
        )
    }

    fn summary(&self, r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
        let server = r.server_software.as_deref().unwrap_or("");
        self.row(out, "Server Software:", server)?;
        self.row(out, "Server Hostname:", &r.server_hostname)?;
        self.row(out, "Server Port:", &r.server_port.to_string())?;
        self.row(out, "Document Path:", &r.document_path)?;
        let length = format!("{} bytes", r.document_length_bytes);
        self.row(out, "Document Length:", &length)?;
        self.row(out, "Concurrency Level:", &r.concurrency.to_string())?;
        let taken = format!("{:.3} seconds", r.duration_s);
        self.row(out, "Time taken for tests:", &taken)?;
        self.row(out, "Complete requests:", &r.complete_requests.to_string())?;
        self.failed(r, out)?;
        if r.keep_alive {
            self.row(
                out,
                "Keep-Alive requests:",
                &r.keep_alive_requests.to_string(),
            )?;
        }
        self.transfer(r, out)
    }

    /// Failed requests by kind, and non-2xx responses when there were any.
    fn failed(&self, r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
        self.row(out, "Failed requests:", &r.failed_requests.to_string())?;
        if r.failed_requests > 0 {
            let f = &r.failures;
            writeln!(
                out,
                "<tr {}><td colspan=4 {} >   (Connect: {}, Length: {}, Exceptions: {})</td></tr>",
                self.tr, self.td, f.connect, f.length, f.exceptions
            )?;
        }
        if r.non_2xx_responses > 0 {
            self.row(out, "Non-2xx responses:", &r.non_2xx_responses.to_string())?;
        }
        Ok(())
    }

    fn transfer(&self, r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
        let bytes = |n: u64| format!("{n} bytes");
        self.row(out, "Total transferred:", &bytes(r.transfer_bytes))?;
        if r.sent_body_bytes > 0 {
            self.row(out, "Total body sent:", &r.sent_body_bytes.to_string())?;
        }
        self.row(out, "HTML transferred:", &bytes(r.body_bytes))?;
        if r.duration_s <= 0.0 {
            return Ok(());
        }
        let rps = format!("{:.2}", r.requests_per_second);
        self.row(out, "Requests per second:", &rps)?;
        let kb = |n: u64| n as f64 / 1024.0 / r.duration_s;
        let received = format!("{:.2} kb/s received", kb(r.transfer_bytes));
        self.row(out, "Transfer rate:", &received)?;
        if r.sent_body_bytes > 0 {
            let sent = kb(r.sent_body_bytes);
            let total = kb(r.transfer_bytes + r.sent_body_bytes);
            self.blank_row(out, &format!("{sent:.2} kb/s sent"))?;
            self.blank_row(out, &format!("{total:.2} kb/s total"))?;
        }
        Ok(())
    }

    fn blank_row(&self, out: &mut dyn Write, value: &str) -> io::Result<()> {
        let (tr, td) = (&self.tr, &self.td);
        writeln!(
            out,
            "<tr {tr}><td colspan=2 {td}>&nbsp;</td><td colspan=2 {td}>{value}</td></tr>"
        )
    }

    /// ab's min/avg/max table: connect, processing (total − connect), total.
    fn times(&self, r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
        let (tr, td) = (&self.tr, &self.td);
        let (c, t) = (&r.connection_times_us.connect, &r.connection_times_us.total);
        let con = [ms(c.min as f64), ms(c.mean), ms(c.max as f64)];
        let tot = [ms(t.min as f64), ms(t.mean), ms(t.max as f64)];
        let proc = [tot[0] - con[0], tot[1] - con[1], tot[2] - con[2]];
        writeln!(
            out,
            "<tr {tr}><th {td} colspan=4>Connection Times (ms)</th></tr>"
        )?;
        writeln!(
            out,
            "<tr {tr}><th {td}>&nbsp;</th> <th {td}>min</th>   <th {td}>avg</th>   <th {td}>max</th></tr>"
        )?;
        for (label, v) in [("Connect:", con), ("Processing:", proc), ("Total:", tot)] {
            writeln!(
                out,
                "<tr {tr}><th {td}>{label}</th><td {td}>{:5}</td><td {td}>{:5}</td><td {td}>{:5}</td></tr>",
                v[0], v[1], v[2]
            )?;
        }
        Ok(())
    }
}

impl Render<HttpReport> for AbHtml {
    fn render(&self, report: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "<table {}>", self.table)?;
        self.summary(report, out)?;
        if report.complete_requests > 0 {
            self.times(report, out)?;
        }
        writeln!(out, "</table>")?;
        self.breakdown(report, out)?;
        series_charts(report, out)
    }
}

/// After ab's tables, a run of two seconds or more: its per-second series
/// drawn (achieved rate against the stages' target, p50 and p99).
fn series_charts(r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
    let run = crate::load_chart::RunRows {
        label: r.url.clone(),
        legend: "achieved".into(),
        colour: 0,
        rows: &r.series,
    };
    let charts = crate::load_chart::load_charts("Per second", &[run]);
    if charts.is_empty() {
        return Ok(());
    }
    writeln!(out, "{charts}")
}

impl AbHtml {
    /// With several request names, a second table after ab's: one row per
    /// name (count, failures, req/s, p50/p99 ms, status codes).
    fn breakdown(&self, r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
        if r.requests.is_empty() {
            return Ok(());
        }
        let (tr, td) = (&self.tr, &self.td);
        writeln!(out, "<table {}>", self.table)?;
        writeln!(
            out,
            "<tr {tr}><th {td}>name</th><th {td}>complete</th><th {td}>failed</th><th {td}>req/s</th><th {td}>p50 ms</th><th {td}>p99 ms</th><th {td}>status codes</th></tr>"
        )?;
        for q in &r.requests {
            writeln!(
                out,
                "<tr {tr}><td {td}>{}</td><td {td}>{}</td><td {td}>{}</td><td {td}>{:.2}</td><td {td}>{:.3}</td><td {td}>{:.3}</td><td {td}>{}</td></tr>",
                html(&q.name),
                q.complete_requests,
                q.failed_requests,
                q.requests_per_second,
                q.latency_us.p50 as f64 / 1000.0,
                q.latency_us.p99 as f64 / 1000.0,
                html(&super::breakdown::codes(q))
            )?;
        }
        writeln!(out, "</table>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_carry_the_attributes_and_escape_values() {
        let mut r = crate::fixtures::http();
        r.server_software = Some("<x>".into());
        let t = AbHtml {
            table: "border=1".into(),
            tr: "a=b".into(),
            td: "c=d".into(),
        };
        let text = crate::to_string(&t, &r);
        assert!(text.starts_with("<table border=1>\n<tr a=b><th colspan=2 c=d>Server Software:</th><td colspan=2 c=d>&lt;x&gt;</td></tr>\n"));
        assert!(text.contains("<tr a=b><th c=d>Connect:</th><td c=d>    0</td>"));
        assert!(text.contains(
            "<tr a=b><td colspan=4 c=d >   (Connect: 1, Length: 3, Exceptions: 0)</td></tr>"
        ));
        assert!(text.ends_with("</table>\n"));
        assert_eq!(text.matches("<tr ").count(), text.matches("</tr>").count());
        assert_eq!(
            text.matches("<table").count(),
            1,
            "no breakdown with one name"
        );
    }

    #[test]
    fn several_names_get_a_second_table() {
        let mut r = crate::http::breakdown::two_names();
        r.requests[0].name = "<a>".into();
        let text = crate::to_string(&AbHtml::default(), &r);
        assert_eq!(text.matches("<table").count(), 2);
        assert!(
            text.contains("<td bgcolor=white>&lt;a&gt;</td><td bgcolor=white>60000</td>"),
            "{text}"
        );
        assert!(text.contains("200: 39985, 503: 5</td></tr>"), "{text}");
        assert_eq!(text.matches("<tr ").count(), text.matches("</tr>").count());
    }
}
