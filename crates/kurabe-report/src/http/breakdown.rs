//! The per-request breakdown of an [`HttpReport`] (`requests`: one row per
//! request name), as the text report's table and as the rows the Markdown
//! and CSV tables add.
//!
//! Owns how a name's row reads. Must not compute figures: the rows are the
//! record's (the engine made them from per-name histograms and counters).

use std::io::{self, Write};

use kurabe_model::failures::Failures;
use kurabe_model::http::{HttpReport, RequestStats};

use super::ms3;
use crate::escape::terminal;

/// The name a whole-mix row carries in the Markdown and CSV tables.
pub const ALL: &str = "(all)";

/// Failure counts by kind as "check 3, timeout 1" (empty when none).
pub fn failure_kinds(f: &Failures) -> String {
    f.seen()
        .map(|(k, n)| format!("{} {n}", k.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Status codes as "200: 5, 503: 1".
pub fn codes(row: &RequestStats) -> String {
    row.status_codes
        .iter()
        .map(|(code, n)| format!("{code}: {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The text report's table: one line per name with its count, req/s,
/// latency percentiles (ms), status codes and failures. Nothing with one name.
pub fn text(r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
    if r.requests.is_empty() {
        return Ok(());
    }
    let names: Vec<_> = r.requests.iter().map(|q| terminal(&q.name)).collect();
    let width = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    writeln!(out)?;
    writeln!(out, "Requests by name (latency in ms)")?;
    writeln!(
        out,
        "  {:<width$}  {:>9} {:>7} {:>10} {:>9} {:>9} {:>9} {:>9}  status codes; failures",
        "name", "complete", "failed", "req/s", "p50", "p90", "p99", "max"
    )?;
    for (q, name) in r.requests.iter().zip(&names) {
        let l = &q.latency_us;
        let mut tail = codes(q);
        let kinds = failure_kinds(&q.failures);
        if !kinds.is_empty() {
            tail.push_str("; ");
            tail.push_str(&kinds);
        }
        writeln!(
            out,
            "  {name:<width$}  {:>9} {:>7} {:>10.2} {:>9} {:>9} {:>9} {:>9}  {tail}",
            q.complete_requests,
            q.failed_requests,
            q.requests_per_second,
            ms3(l.p50),
            ms3(l.p90),
            ms3(l.p99),
            ms3(l.max),
        )?;
    }
    Ok(())
}

/// A name's row in the headline columns of the table formats (the run's
/// own settings where a name has none, empty where it has no figure).
pub fn columns(r: &HttpReport, q: &RequestStats) -> Vec<(&'static str, String)> {
    let l = &q.latency_us;
    let non_2xx: u64 = q
        .status_codes
        .iter()
        .filter(|(c, _)| !c.starts_with('2'))
        .map(|(_, n)| n)
        .sum();
    vec![
        ("url", r.url.clone()),
        ("name", q.name.clone()),
        ("concurrency", r.concurrency.to_string()),
        ("keep_alive", r.keep_alive.to_string()),
        ("duration_s", format!("{:.3}", r.duration_s)),
        ("complete_requests", q.complete_requests.to_string()),
        ("failed_requests", q.failed_requests.to_string()),
        ("in_flight_at_end", String::new()),
        ("non_2xx_responses", non_2xx.to_string()),
        (
            "requests_per_second",
            format!("{:.2}", q.requests_per_second),
        ),
        ("latency_mean_us", format!("{:.1}", l.mean)),
        ("latency_p50_us", l.p50.to_string()),
        ("latency_p90_us", l.p90.to_string()),
        ("latency_p99_us", l.p99.to_string()),
        ("latency_p999_us", l.p999.to_string()),
        ("latency_max_us", l.max.to_string()),
        ("transfer_bytes", String::new()),
        ("interrupted", r.interrupted.to_string()),
    ]
}

/// The headline rows of the table formats: the whole mix's alone with one
/// name (today's one row); with several, a `name` column after `url`, the
/// whole mix as [`ALL`] first, then one row per name.
pub fn table(r: &HttpReport) -> Vec<Vec<(&'static str, String)>> {
    let whole = super::summary_columns(r);
    if r.requests.is_empty() {
        return vec![whole];
    }
    let mut first = whole;
    first.insert(1, ("name", ALL.to_owned()));
    std::iter::once(first)
        .chain(r.requests.iter().map(|q| columns(r, q)))
        .collect()
}

/// The fixture with two names splitting its requests.
#[cfg(test)]
pub(crate) fn two_names() -> HttpReport {
    let mut r = crate::fixtures::http();
    let mut a = RequestStats {
        name: "/item/:id".into(),
        complete_requests: 60000,
        failed_requests: 4,
        requests_per_second: 24000.0,
        ..Default::default()
    };
    a.failures.check = 3;
    a.failures.timeout = 1;
    a.latency_us.p50 = 398;
    a.latency_us.max = 3120;
    a.status_codes.insert("200".into(), 60000);
    let mut b = RequestStats {
        name: "POST http://127.0.0.1:8080/cart".into(),
        complete_requests: 39990,
        failed_requests: 6,
        requests_per_second: 15996.0,
        ..Default::default()
    };
    b.failures.connect = 6;
    b.status_codes.insert("200".into(), 39985);
    b.status_codes.insert("503".into(), 5);
    r.requests = vec![a, b];
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_table_has_a_line_per_name() {
        let mut out = Vec::new();
        text(&two_names(), &mut out).unwrap();
        let t = String::from_utf8(out).unwrap();
        let lines: Vec<_> = t.lines().collect();
        assert_eq!(lines[1], "Requests by name (latency in ms)");
        assert!(lines[3].starts_with("  /item/:id "), "{t}");
        assert!(
            lines[3].ends_with("  200: 60000; timeout 1, check 3"),
            "{t}"
        );
        assert!(lines[4].contains(" 39990       6   15996.00 "), "{t}");
        assert!(lines[4].ends_with("200: 39985, 503: 5; connect 6"), "{t}");
        let mut none = Vec::new();
        text(&crate::fixtures::http(), &mut none).unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn table_rows_add_a_name_column_only_with_several_names() {
        let one = table(&crate::fixtures::http());
        assert_eq!(one.len(), 1);
        assert!(one[0].iter().all(|(h, _)| *h != "name"));
        let rows = table(&two_names());
        assert_eq!(rows.len(), 3);
        assert!(rows
            .iter()
            .all(|r| r.len() == rows[0].len() && r[1].0 == "name"));
        assert_eq!(
            (rows[0][1].1.as_str(), rows[2][1].1.as_str()),
            (ALL, "POST http://127.0.0.1:8080/cart")
        );
        let non_2xx = rows[2]
            .iter()
            .find(|(h, _)| *h == "non_2xx_responses")
            .unwrap();
        assert_eq!(non_2xx.1, "5");
    }
}
