//! HTTP/3 loads through the engine (`load::run` of a spec with `http3`)
//! against two independent real servers from Debian — Caddy 2.6 (Go,
//! quic-go) and ngtcp2's example server (C, GnuTLS) — counted against what
//! each server itself logged; and the failures a client meets without a
//! server (nothing listening, an untrusted certificate). Servers that
//! misbehave on purpose are `kurabe http`'s tests (`tests/http3.rs`).

use std::time::{Duration, Instant};

use kurabe_model::failures::FailureKind;
use kurabe_model::http::HttpReport;
use kurabe_model::load::LoadSpec;
use kurabe_model::load_stats::Stats;
use kurabe_model::plan::HumanDuration;
use kurabe_stop::Stop;
use kurabe_testkit::caddy::{free_port, Caddy, Ngtcp2};

/// `n` requests to `url` over `c` HTTP/3 connections of `streams` streams.
fn load(url: String, c: u32, streams: u32, n: u64) -> LoadSpec {
    LoadSpec {
        http3: true,
        streams: Some(streams),
        concurrency: c,
        requests: Some(n),
        timeout: Some(HumanDuration(Duration::from_secs(20))),
        ..LoadSpec::for_url(&url)
    }
}

/// What a run measured, and how long it took.
struct H3Run {
    report: HttpReport,
    stats: Stats,
    elapsed: Duration,
}

impl H3Run {
    /// The first error of `kind`.
    fn why(&self, kind: FailureKind) -> String {
        let errors = &self.stats.counters.first_errors;
        errors.get(kind.name()).cloned().unwrap_or_default()
    }
}

fn run(spec: &LoadSpec) -> H3Run {
    let start = Instant::now();
    let r = crate::load::run(spec, &Stop::new(), &crate::load::Quiet).unwrap();
    H3Run {
        report: r.report,
        stats: r.stats,
        elapsed: start.elapsed(),
    }
}

fn failures(r: &H3Run) -> u64 {
    r.stats.counters.failures.total()
}

#[test]
fn caddy_answers_every_request_and_logs_each_as_http3() {
    let dir = tempfile::tempdir().unwrap();
    let Some(caddy) = Caddy::serving_www(dir.path()) else {
        return;
    };
    let url = format!("https://localhost:{}/index.html", caddy.port());
    let mut l = load(url, 4, 8, 300);
    l.ca_file = Some(caddy.ca_file());
    let r = run(&l);
    assert_eq!(failures(&r), 0, "{:?}", r.stats.counters.first_errors);
    assert_eq!(r.stats.counters.completed, 300);
    assert_eq!(r.stats.counters.status.get(200), 300);
    assert_eq!(r.stats.counters.body_bytes, 300 * 26);
    // Every request but each connection's first went on a reused one.
    let handshakes = r.report.http3.as_ref().map_or(0, |h| h.handshakes);
    assert_eq!(r.report.keep_alive_requests, 300 - handshakes);
    assert_eq!(r.report.server_software.as_deref(), Some("Caddy"));
    assert_eq!(r.report.protocol, "h3");
    assert_eq!(caddy.h3_logged("/index.html"), 300);
    assert_eq!(
        caddy.logged(&["\"proto\""]),
        300,
        "nothing but these requests"
    );
    let h3 = r.report.http3.as_ref().expect("an HTTP/3 block");
    assert!(h3.handshakes >= 4, "{h3:?}");
    assert!(h3.packets_sent > 0 && h3.rtt_mean_us > 0.0, "{h3:?}");
    assert_eq!(h3.streams, 8);
}

#[test]
fn caddy_large_bodies_and_missing_pages_are_counted_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let Some(caddy) = Caddy::serving_www(dir.path()) else {
        return;
    };
    let base = format!("https://localhost:{}", caddy.port());
    let mut big = load(format!("{base}/big.bin"), 2, 4, 24);
    big.insecure = true;
    let r = run(&big);
    assert_eq!(failures(&r), 0, "{:?}", r.stats.counters.first_errors);
    assert_eq!(r.stats.counters.completed, 24);
    assert_eq!(r.stats.counters.body_bytes, 24 * 300_000);
    let mut missing = load(format!("{base}/nothing-here"), 1, 3, 10);
    missing.insecure = true;
    missing.variable_length = true;
    let r = run(&missing);
    assert_eq!(r.stats.counters.status.get(404), 10);
    assert_eq!(r.stats.counters.non_2xx, 10);
    assert_eq!(caddy.h3_logged("/big.bin"), 24);
    assert_eq!(caddy.h3_logged("/nothing-here"), 10);
}

#[test]
fn ngtcp2s_server_answers_every_request_it_printed() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = Ngtcp2::serving_www(dir.path()) else {
        return;
    };
    let url = format!("https://localhost:{}/index.html", server.port());
    let mut l = load(url, 2, 10, 120);
    l.insecure = true;
    let r = run(&l);
    assert_eq!(failures(&r), 0, "{:?}", r.stats.counters.first_errors);
    assert_eq!(r.stats.counters.completed, 120);
    assert_eq!(r.stats.counters.body_bytes, 120 * 26);
    assert_eq!(server.requests("/index.html"), 120);
    assert_eq!(server.responses(), 120);
}

#[test]
fn nothing_listening_fails_every_request_as_connect_at_once() {
    let port = free_port();
    let mut l = load(format!("https://localhost:{port}/"), 2, 4, 6);
    l.insecure = true;
    let r = run(&l);
    assert_eq!(r.stats.counters.completed, 0);
    assert_eq!(r.stats.counters.failures.get(FailureKind::Connect), 6);
    assert!(
        r.elapsed < Duration::from_secs(10),
        "ICMP, not the timeout: {:?}",
        r.elapsed
    );
    let why = r.why(FailureKind::Connect);
    assert!(why.contains("UDP port"), "{why}");
}

#[test]
fn an_untrusted_certificate_fails_the_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = Ngtcp2::serving_www(dir.path()) else {
        return;
    };
    // The system store does not know the server's self-signed certificate.
    let l = load(
        format!("https://localhost:{}/index.html", server.port()),
        1,
        1,
        3,
    );
    let r = run(&l);
    assert_eq!(r.stats.counters.completed, 0);
    assert_eq!(
        r.stats.counters.failures.get(FailureKind::Connect),
        3,
        "{:?}",
        r.stats.counters.first_errors
    );
    assert_eq!(server.responses(), 0);
}
