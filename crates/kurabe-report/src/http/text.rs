//! Text: ab's report, section by section and with ab's format strings, so
//! scripts that grep ab output (`Requests per second:\s+([\d.]+)` …) keep
//! working; then kurabe's additions (sub-ms percentiles, status codes,
//! timeouts, reconciliation, the per-request breakdown) in a block of their
//! own below. [`AbText`]
//! carries ab's switches for the layout (`-d`, `-S`).

use std::io::{self, Write};

use kurabe_model::http::{HttpReport, PhaseTimes, TlsSummary};
use kurabe_model::profile::Per;

use super::ms3;
use crate::escape::terminal;
use crate::{Render, Terminal};

/// The rows of ab's percentage table; other percentiles (99.9) appear in kurabe's section.
const AB_PERCENTILES: [f64; 9] = [50.0, 66.0, 75.0, 80.0, 90.0, 95.0, 98.0, 99.0, 100.0];

/// Whole milliseconds, as ab prints its integer columns.
fn ms(us: u64) -> u64 {
    (us + 500) / 1000
}

/// ab's text layout switches; the default is ab's default layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbText {
    /// The "Percentage of the requests served" table (off with ab's `-d`).
    pub percentiles: bool,
    /// The mean[+/-sd] and median columns and ab's reliability warnings
    /// (off with ab's `-S`, which prints min, avg and max only).
    pub confidence: bool,
    /// ab's `-l`: lengths may vary, so "Document Length: Variable".
    pub variable_length: bool,
}

impl Default for AbText {
    fn default() -> Self {
        AbText {
            percentiles: true,
            confidence: true,
            variable_length: false,
        }
    }
}

fn phase_row(out: &mut dyn Write, label: &str, p: &PhaseTimes) -> io::Result<()> {
    // ab: "%-11s %5d %4d %5.1f %6d %7d"
    writeln!(
        out,
        "{label:<11} {:5} {:4} {:5.1} {:6} {:7}",
        ms(p.min),
        (p.mean / 1000.0).round() as u64,
        p.sd / 1000.0,
        ms(p.median),
        ms(p.max)
    )
}

/// ab's report: server, document, counts, bytes and rates.
fn ab_section(r: &HttpReport, variable_length: bool, out: &mut dyn Write) -> io::Result<()> {
    server_and_document(r, variable_length, out)?;
    counts(r, out)?;
    transferred(r, out)?;
    rates(r, out)
}

/// Who answered, and what was asked for.
fn server_and_document(
    r: &HttpReport,
    variable_length: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let software = r.server_software.as_deref().unwrap_or("");
    writeln!(out, "Server Software:        {}", terminal(software))?;
    writeln!(
        out,
        "Server Hostname:        {}",
        terminal(&r.server_hostname)
    )?;
    writeln!(out, "Server Port:            {}", r.server_port)?;
    if let Some(t) = &r.tls {
        tls_lines(t, out)?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "Document Path:          {}",
        terminal(&r.document_path)
    )?;
    let length = if variable_length {
        "Variable".to_owned()
    } else {
        format!("{} bytes", r.document_length_bytes)
    };
    writeln!(out, "Document Length:        {length}")?;
    writeln!(out)
}

/// ab's "SSL/TLS Protocol" (version, cipher, server key bits, cipher bits),
/// "Server Temp Key" and "TLS Server Name" (SNI, host names only) lines.
fn tls_lines(t: &TlsSummary, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "SSL/TLS Protocol:       {},{},{},{}",
        t.protocol,
        t.cipher,
        t.server_key_bits.unwrap_or(0),
        t.cipher_bits
    )?;
    if let Some(kx) = &t.key_exchange {
        writeln!(out, "Server Temp Key:        {kx}")?;
    }
    if let Some(name) = &t.server_name {
        writeln!(out, "TLS Server Name:        {name}")?;
    }
    Ok(())
}

/// Concurrency, time taken, and requests complete, failed, non-2xx, kept alive.
fn counts(r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "Concurrency Level:      {}", r.concurrency)?;
    writeln!(out, "Time taken for tests:   {:.3} seconds", r.duration_s)?;
    writeln!(out, "Complete requests:      {}", r.complete_requests)?;
    failed(r, out)?;
    if r.non_2xx_responses > 0 {
        writeln!(out, "Non-2xx responses:      {}", r.non_2xx_responses)?;
    }
    if r.keep_alive {
        writeln!(out, "Keep-Alive requests:    {}", r.keep_alive_requests)?;
    }
    Ok(())
}

/// ab's "Failed requests" with its breakdown, and "Write errors".
fn failed(r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "Failed requests:        {}", r.failed_requests)?;
    let f = &r.failures;
    if r.failed_requests > 0 {
        // ab's line; kurabe's own failures only when there are any.
        let client = match f.client {
            0 => String::new(),
            n => format!(", Client: {n}"),
        };
        let check = match f.check {
            0 => String::new(),
            n => format!(", Check: {n}"),
        };
        writeln!(
            out,
            "   (Connect: {}, Receive: {}, Length: {}, Exceptions: {}{client}{check})",
            f.connect, f.receive, f.length, f.exceptions
        )?;
    }
    if f.write > 0 {
        // ab's line, where ab puts it; these requests are in "Failed requests" too.
        writeln!(out, "Write errors:           {}", f.write)?;
    }
    Ok(())
}

/// Bytes received and sent.
fn transferred(r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "Total transferred:      {} bytes", r.transfer_bytes)?;
    if r.sent_body_bytes > 0 {
        writeln!(out, "Total body sent:        {}", r.sent_body_bytes)?;
    }
    writeln!(out, "HTML transferred:       {} bytes", r.body_bytes)
}

/// Requests per second, time per request, transfer rates.
fn rates(r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
    let secs = r.duration_s.max(f64::MIN_POSITIVE);
    writeln!(
        out,
        "Requests per second:    {:.2} [#/sec] (mean)",
        r.requests_per_second
    )?;
    let done = r.complete_requests.max(1) as f64;
    writeln!(
        out,
        "Time per request:       {:.3} [ms] (mean)",
        f64::from(r.concurrency) * secs * 1000.0 / done
    )?;
    writeln!(
        out,
        "Time per request:       {:.3} [ms] (mean, across all concurrent requests)",
        secs * 1000.0 / done
    )?;
    writeln!(
        out,
        "Transfer rate:          {:.2} [Kbytes/sec] received",
        r.transfer_bytes as f64 / 1024.0 / secs
    )?;
    if r.sent_body_bytes > 0 {
        sent_rates(r, secs, out)?;
    }
    Ok(())
}

/// With a request body: kb/s sent, and sent and received together.
fn sent_rates(r: &HttpReport, secs: f64, out: &mut dyn Write) -> io::Result<()> {
    let sent = r.sent_body_bytes as f64 / 1024.0 / secs;
    writeln!(out, "                        {sent:.2} kb/s sent")?;
    let total = (r.transfer_bytes + r.sent_body_bytes) as f64 / 1024.0 / secs;
    writeln!(out, "                        {total:.2} kb/s total")
}

/// ab's "Connection Times" and percentage tables, as `layout` asks, when
/// there is something to show (ab: one response for the first, two for the second).
fn ab_tables(r: &HttpReport, layout: AbText, out: &mut dyn Write) -> io::Result<()> {
    if r.complete_requests == 0 {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "Connection Times (ms)")?;
    let t = &r.connection_times_us;
    let rows = [
        ("Connect:", &t.connect, "the initial connection time"),
        ("Processing:", &t.processing, "the processing time"),
        ("Waiting:", &t.waiting, "the waiting time"),
        ("Total:", &t.total, "the total time"),
    ];
    if layout.confidence {
        confidence_table(&rows, out)?;
    } else {
        writeln!(out, "              min   avg   max")?;
        for (label, p, _) in rows {
            // ab: "%5d %5d%5d" (no space before max).
            let mean = (p.mean / 1000.0).round() as u64;
            writeln!(out, "{label:<11} {:5} {mean:5}{:5}", ms(p.min), ms(p.max))?;
        }
    }
    if layout.percentiles && r.complete_requests > 1 {
        percentage_table(r, out)?;
    }
    Ok(())
}

/// ab's table with spread and median (`-S` not given), then its warnings.
fn confidence_table(rows: &[(&str, &PhaseTimes, &str)], out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "              min  mean[+/-sd] median   max")?;
    for (label, p, _) in rows {
        phase_row(out, label, p)?;
    }
    for (_, p, what) in rows {
        sanity_warning(out, what, p)?;
    }
    Ok(())
}

/// ab's warning when a phase's mean and median are more than one (or two)
/// standard deviations apart, on ab's rounded milliseconds.
fn sanity_warning(out: &mut dyn Write, what: &str, p: &PhaseTimes) -> io::Result<()> {
    let mean = (p.mean / 1000.0).round();
    let d = (mean - ms(p.median) as f64).abs();
    let sd = p.sd / 1000.0;
    if d > 2.0 * sd {
        writeln!(
            out,
            "ERROR: The median and mean for {what} are more than twice the standard"
        )?;
        writeln!(
            out,
            "       deviation apart. These results are NOT reliable."
        )?;
    } else if d > sd {
        writeln!(
            out,
            "WARNING: The median and mean for {what} are not within a normal deviation"
        )?;
        writeln!(out, "        These results are probably not that reliable.")?;
    }
    Ok(())
}

fn percentage_table(r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "Percentage of the requests served within a certain time (ms)"
    )?;
    for p in &r.latency_percentiles_us {
        if !AB_PERCENTILES.contains(&p.percentile) {
            continue;
        }
        if p.percentile >= 100.0 {
            writeln!(out, " 100%  {:5} (longest request)", ms(p.latency_us))?;
        } else {
            writeln!(out, "  {}%  {:5}", p.percentile, ms(p.latency_us))?;
        }
    }
    Ok(())
}

/// kurabe's additions to ab's report: latency, outcomes, warm-up, the
/// server's cost, and the per-request breakdown when there are several names.
fn kurabe_section(r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
    latency(r, out)?;
    outcomes(r, out)?;
    if r.warmup_s > 0.0 {
        writeln!(out, "Warm-up (not counted):  {:.3} seconds", r.warmup_s)?;
    }
    server_line(r, out)?;
    super::breakdown::text(r, out)?;
    super::replay::text(r, out)?;
    super::thresholds::text(r, out)?;
    match &r.profile {
        Some(p) => crate::profile::write_run(p, Per::Request, false, out),
        None => Ok(()),
    }
}

/// Latency percentiles, and for a fixed rate the uncorrected ones and the rate reached.
fn latency(r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
    let l = &r.latency_us;
    writeln!(out)?;
    writeln!(out, "Latency (ms)")?;
    writeln!(
        out,
        "  min {}  mean {:.3}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
        ms3(l.min),
        l.mean / 1000.0,
        ms3(l.p50),
        ms3(l.p90),
        ms3(l.p99),
        ms3(l.p999),
        ms3(l.max)
    )?;
    if let Some(rate) = &r.rate {
        let u = &rate.latency_uncorrected_us;
        writeln!(
            out,
            "  uncorrected (from actual send): mean {:.3}  p50 {}  p99 {}  max {}",
            u.mean / 1000.0,
            ms3(u.p50),
            ms3(u.p99),
            ms3(u.max)
        )?;
        writeln!(
            out,
            "Rate:                   {:.2} [#/sec] requested, {:.2} [#/sec] sent, {} late sends",
            rate.requested_per_s, rate.achieved_per_s, rate.late_sends
        )?;
        if rate.dropped_sends > 0 {
            writeln!(
                out,
                "Dropped sends:          {} (no connection free within the timeout, -s)",
                rate.dropped_sends
            )?;
        }
    }
    Ok(())
}

/// Status codes, HTTP/2, timeouts, reconnects, the reconciliation and the errors.
fn outcomes(r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
    let codes: Vec<_> = r
        .status_codes
        .iter()
        .map(|(code, n)| format!("{code}: {n}"))
        .collect();
    writeln!(out, "Status codes:           {}", codes.join(", "))?;
    http2_line(r, out)?;
    http3_lines(r, out)?;
    writeln!(out, "Timeouts:               {}", r.failures.timeout)?;
    if r.keep_alive {
        writeln!(
            out,
            "Reconnects:             {} (the server ended keep-alive connections)",
            r.reconnects
        )?;
    }
    let sent = r.complete_requests + r.failed_requests + r.in_flight_at_end;
    writeln!(
        out,
        "Reconciliation:         {} completed + {} failed + {} in flight = {} sent",
        r.complete_requests, r.failed_requests, r.in_flight_at_end, sent
    )?;
    checks_line(r, out)?;
    error_lines(r, out)
}

/// With response checks: which, and how many responses passed them.
fn checks_line(r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
    let Some(pass) = r.check_pass_percent() else {
        return Ok(());
    };
    writeln!(
        out,
        "Checks:                 {} passed of {} judged ({pass:.2} %): {}",
        r.complete_requests,
        r.complete_requests + r.failures.check,
        terminal(&r.checks.join("; "))
    )
}

/// The local server's CPU per request and memory, when it was watched.
fn server_line(r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
    if let Some(s) = &r.server {
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        // No response: a cost per response is unknown, never 0.
        let per = s
            .cpu_ms_per_request
            .map_or_else(|| "n/a".to_owned(), |ms| format!("{ms:.4} ms"));
        writeln!(
            out,
            "Server (pid {}):         {per} CPU/request, {:.1} % CPU, PSS {:.1} → {:.1} MiB (peak {:.1})",
            s.pid,
            s.cpu_percent_mean,
            mib(s.pss_start_bytes),
            mib(s.pss_end_bytes),
            mib(s.pss_peak_bytes)
        )?;
        if !s.counters_per_request.is_empty() {
            let line = crate::words::counters_line(&s.counters_per_request);
            let mut head = "Server per request:";
            for part in crate::words::wrap_parts(&line, 100 - 24) {
                writeln!(out, "{head:<24}{part}")?;
                head = "";
            }
        }
    }
    Ok(())
}

/// HTTP/2 runs: the protocol, streams per connection, GOAWAYs and resets by code.
fn http2_line(r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
    let Some(h) = &r.http2 else {
        return Ok(());
    };
    let mut line = format!(
        "Protocol:               {}, {} stream(s) per connection, {} GOAWAY",
        r.protocol, h.streams, h.goaways
    );
    if !h.stream_resets.is_empty() {
        let codes: Vec<_> = h
            .stream_resets
            .iter()
            .map(|(code, n)| format!("{code} {n}"))
            .collect();
        line.push_str(&format!(", RST_STREAM: {}", codes.join(", ")));
    }
    writeln!(out, "{line}")
}

/// HTTP/3 runs: the protocol, streams per connection, GOAWAYs and resets
/// by code (as HTTP/2's line), then what QUIC measured.
fn http3_lines(r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
    let Some(h) = &r.http3 else {
        return Ok(());
    };
    let mut line = format!(
        "Protocol:               {}, {} stream(s) per connection, {} GOAWAY",
        r.protocol, h.streams, h.goaways
    );
    if !h.stream_resets.is_empty() {
        let codes: Vec<_> = (h.stream_resets.iter())
            .map(|(code, n)| format!("{code} {n}"))
            .collect();
        line.push_str(&format!(", resets: {}", codes.join(", ")));
    }
    writeln!(out, "{line}")?;
    let lost = match h.packets_sent {
        0 => 0.0,
        sent => 100.0 * h.packets_lost as f64 / sent as f64,
    };
    writeln!(
        out,
        "QUIC handshakes:        {}, {:.3} ms mean; RTT {:.3} ms (mean of connections)",
        h.handshakes,
        h.handshake_mean_us / 1000.0,
        h.rtt_mean_us / 1000.0
    )?;
    writeln!(
        out,
        "QUIC packets:           {} sent, {} lost ({lost:.2} %)",
        h.packets_sent, h.packets_lost
    )
}

/// Why requests failed: one line per failure kind, its first error and its share,
/// e.g. "connect: Connection refused (os error 111) — 20 of 20".
fn error_lines(r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
    let ended = r.ended_requests();
    for (i, e) in r.errors.iter().enumerate() {
        let label = if i == 0 { "Errors:" } else { "" };
        writeln!(
            out,
            "{label:<24}{}: {} — {} of {ended}",
            e.kind,
            terminal(&e.first_error),
            e.count
        )?;
    }
    Ok(())
}

impl Render<HttpReport> for AbText {
    fn render(&self, report: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
        if report.interrupted {
            writeln!(out, "*** interrupted: partial results ***")?;
            writeln!(out)?;
        }
        ab_section(report, self.variable_length, out)?;
        ab_tables(report, *self, out)?;
        kurabe_section(report, out)
    }
}

impl Render<HttpReport> for Terminal {
    fn render(&self, report: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
        AbText::default().render(report, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(report: &HttpReport) -> String {
        let mut out = Vec::new();
        Terminal { color: false }.render(report, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn renders_ab_layout_then_kurabe_additions() {
        let expected = "\
Server Software:        kurabe/0.1.0
Server Hostname:        127.0.0.1
Server Port:            8080

Document Path:          /index.html
Document Length:        13 bytes

Concurrency Level:      50
Time taken for tests:   2.500 seconds
Complete requests:      99990
Failed requests:        10
   (Connect: 1, Receive: 2, Length: 3, Exceptions: 0)
Non-2xx responses:      5
Keep-Alive requests:    99940
Total transferred:      9999000 bytes
HTML transferred:       1299870 bytes
Requests per second:    39996.00 [#/sec] (mean)
Time per request:       1.250 [ms] (mean)
Time per request:       0.025 [ms] (mean, across all concurrent requests)
Transfer rate:          3905.86 [Kbytes/sec] received

Connection Times (ms)
              min  mean[+/-sd] median   max
Connect:        0    0   0.0      0       1
Processing:     0    0   0.1      0       3
Waiting:        0    0   0.1      0       3
Total:          0    0   0.1      0       3

Percentage of the requests served within a certain time (ms)
  50%      0
  66%      0
  75%      0
  80%      1
  90%      1
  95%      1
  98%      1
  99%      1
 100%      3 (longest request)

Latency (ms)
  min 0.095  mean 0.412  p50 0.398  p90 0.530  p99 1.210  p99.9 2.502  max 3.120
Status codes:           200: 99985, 503: 5
Timeouts:               4
Reconnects:             2 (the server ended keep-alive connections)
Reconciliation:         99990 completed + 10 failed + 0 in flight = 100000 sent
";
        assert_eq!(render(&crate::fixtures::http()), expected);
    }

    #[test]
    fn an_http3_run_shows_its_streams_and_what_quic_measured() {
        let mut r = crate::fixtures::http();
        r.protocol = "h3".into();
        r.http3 = Some(kurabe_model::http::Http3Summary {
            streams: 8,
            goaways: 1,
            stream_resets: [("H3_REQUEST_REJECTED".to_owned(), 2)].into(),
            handshakes: 4,
            handshake_mean_us: 1234.0,
            packets_sent: 2000,
            packets_lost: 5,
            rtt_mean_us: 98.0,
        });
        let text = render(&r);
        let want = "\
Protocol:               h3, 8 stream(s) per connection, 1 GOAWAY, resets: H3_REQUEST_REJECTED 2
QUIC handshakes:        4, 1.234 ms mean; RTT 0.098 ms (mean of connections)
QUIC packets:           2000 sent, 5 lost (0.25 %)
";
        assert!(text.contains(want), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    }

    #[test]
    fn marks_interrupted_runs_and_rate_figures() {
        let mut r = crate::fixtures::http();
        r.interrupted = true;
        r.in_flight_at_end = 7;
        r.rate = Some(kurabe_model::http::RateInfo {
            requested_per_s: 1000.0,
            achieved_per_s: 999.5,
            latency_uncorrected_us: r.latency_us,
            late_sends: 2,
            dropped_sends: 0,
        });
        let text = render(&r);
        assert!(text.starts_with("*** interrupted: partial results ***\n"));
        assert!(text.contains("uncorrected (from actual send): mean 0.412"));
        assert!(text.contains("1000.00 [#/sec] requested, 999.50 [#/sec] sent, 2 late sends"));
        assert!(text.contains("+ 7 in flight = 100007 sent"));
    }

    #[test]
    fn names_the_first_error_of_each_failure_kind_with_its_count() {
        let mut r = crate::fixtures::http();
        r.errors = vec![
            kurabe_model::http::ErrorBucket {
                kind: "connect".into(),
                first_error: "Connection refused (os error 111)".into(),
                count: 1,
            },
            kurabe_model::http::ErrorBucket {
                kind: "timeout".into(),
                first_error: "no complete response within 1s (-s)".into(),
                count: 4,
            },
        ];
        let text = render(&r);
        assert!(text.contains(
            "\nErrors:                 connect: Connection refused (os error 111) — 1 of 100000\n\
             \x20                       timeout: no complete response within 1s (-s) — 4 of 100000\n"
        ));
    }

    #[test]
    fn server_counters_per_request_show_what_was_counted_and_nothing_else() {
        use kurabe_model::tree_counters::{Counter, Counts};
        let mut r = crate::fixtures::http();
        let mut c = Counts::default();
        c.set(Counter::VoluntarySwitches, 1.5);
        c.set(Counter::MajorFaults, 0.0);
        c.set(Counter::WriteSyscalls, 2.0);
        c.set(Counter::WriteBytes, 2048.0);
        r.server = Some(kurabe_model::http::ServerMetrics {
            pid: 7,
            cpu_ms_per_request: Some(0.25),
            cpu_percent_mean: 29.5,
            pss_start_bytes: 1 << 20,
            pss_peak_bytes: 3 << 20,
            pss_end_bytes: 2 << 20,
            counters_per_request: c,
        });
        let text = render(&r);
        let line = text
            .lines()
            .find(|l| l.starts_with("Server per request:"))
            .unwrap_or_else(|| panic!("{text}"));
        assert_eq!(
            line,
            "Server per request:     vol. switches 1.50, major faults 0, write calls 2, bytes written 2.0 KiB"
        );
        // Not counted is left out, never shown as 0.
        assert!(!line.contains("instructions") && !line.contains("migrations"));
    }

    #[test]
    fn server_cpu_per_request_is_n_a_when_no_response_arrived_never_zero() {
        let mut r = crate::fixtures::http();
        let mut server = kurabe_model::http::ServerMetrics {
            pid: 7,
            cpu_ms_per_request: Some(0.25),
            cpu_percent_mean: 29.5,
            pss_start_bytes: 1 << 20,
            pss_peak_bytes: 3 << 20,
            pss_end_bytes: 2 << 20,
            counters_per_request: Default::default(),
        };
        r.server = Some(server);
        let line = "Server (pid 7):         0.2500 ms CPU/request, 29.5 % CPU, PSS 1.0 → 2.0 MiB (peak 3.0)\n";
        assert!(render(&r).contains(line), "{}", render(&r));
        server.cpu_ms_per_request = None;
        r.server = Some(server);
        let text = render(&r);
        assert!(
            text.contains("Server (pid 7):         n/a CPU/request, 29.5 % CPU"),
            "{text}"
        );
    }

    #[test]
    fn write_errors_get_abs_line_after_the_breakdown_only_when_there_are_some() {
        let mut r = crate::fixtures::http();
        assert!(!render(&r).contains("Write errors:"));
        r.failures = Default::default();
        r.failures.write = 3;
        r.failures.receive = 1;
        r.failed_requests = 4;
        let text = render(&r);
        assert!(
            text.contains(
                "Failed requests:        4\n\
                 \x20  (Connect: 0, Receive: 1, Length: 0, Exceptions: 0)\n\
                 Write errors:           3\n"
            ),
            "{text}"
        );
    }
}
