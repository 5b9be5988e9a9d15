//! `kurabe http` end to end: the built binary against `kurabe serve` (as a
//! child) and against tiny in-process servers on 127.0.0.1:0 that misbehave
//! on purpose, one per failure bucket.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kurabe_model::http::HttpReport;
use predicates::Predicate;
use serde_json::Value;

use crate::serve::ServeChild;
use crate::util::kurabe;

pub(crate) struct Out {
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

pub(crate) fn http(args: &[&str]) -> Out {
    let out = kurabe().arg("http").arg("-q").args(args).output().unwrap();
    Out {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Run with `--format json`, check the output against the committed schema and
/// deserialize it into the typed model.
pub(crate) fn http_json(args: &[&str]) -> HttpReport {
    http_json_exit(args, 0).0
}

/// As [`http_json`] for a run that must exit with `code`; also returns stderr.
pub(crate) fn http_json_exit(args: &[&str], code: i32) -> (HttpReport, String) {
    let mut full = vec!["--format", "json"];
    full.extend_from_slice(args);
    let out = http(&full);
    assert_eq!(out.code, Some(code), "stderr: {}", out.stderr);
    let value: Value = serde_json::from_str(&out.stdout).expect("JSON on stdout");
    kurabe_testkit::schema::assert_valid("http-report.schema.json", &value);
    let report = serde_json::from_value(value).expect("JSON matches the model");
    (report, out.stderr)
}

/// A run in which no request succeeds: exit 1, and the one error bucket it
/// reports (kind, first error, count) matches the failure counts.
pub(crate) fn http_failed(args: &[&str], kind: &str) -> (HttpReport, String) {
    let (r, stderr) = http_json_exit(args, 1);
    assert_eq!(r.complete_requests, 0);
    assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
    assert_eq!(r.errors[0].kind, kind);
    assert_eq!(r.errors[0].count, r.failed_requests);
    assert!(
        stderr.contains(&format!(
            "kurabe: no request succeeded: {kind}: {}",
            r.errors[0].first_error
        )),
        "{stderr}"
    );
    (r, stderr)
}

/// A port on 127.0.0.1 where nothing listens: bound to port 0, then released.
pub(crate) fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn schema_checker_rejects_a_broken_report() {
    let mut bad = serde_json::to_value(sample_report()).unwrap();
    bad["complete_requests"] = Value::from(-1);
    bad["extra"] = Value::from(1);
    bad.as_object_mut().unwrap().remove("failures");
    let schema = kurabe_testkit::schema::load("http-report.schema.json");
    let errors = kurabe_testkit::schema::violations(&schema, &bad);
    assert_eq!(errors.len(), 3, "{errors:#?}");
}

fn sample_report() -> HttpReport {
    // Any real report will do; a tiny in-process server keeps it fast.
    let server = TestServer::start(|mut s| {
        if read_request(&mut s).is_some() {
            let _ =
                s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        }
    });
    http_json(&["-n", "1", &server.url()])
}

// ---------------------------------------------------------------------------
// In-process servers.

/// A loopback server running `handler` on every connection in its own thread.
pub(crate) struct TestServer {
    pub(crate) addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    pub(crate) fn start(handler: impl Fn(TcpStream) + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let handler = Arc::new(handler);
        let thread = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((s, _)) => {
                            s.set_nonblocking(false).unwrap();
                            let h = handler.clone();
                            std::thread::spawn(move || h(s));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                }
            })
        };
        Self {
            addr,
            stop,
            thread: Some(thread),
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Read one request (head and Content-Length body); `None` if the peer closed first.
pub(crate) fn read_request(s: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().unwrap())
        })
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some((head, buf[head_end..head_end + len].to_vec()))
}

/// Wait until the peer closes (so our close does not turn into a reset).
fn drain_until_closed(s: &mut TcpStream) {
    let mut sink = [0u8; 1024];
    while matches!(s.read(&mut sink), Ok(n) if n > 0) {}
}

// ---------------------------------------------------------------------------
// Against `kurabe serve`.

#[test]
fn keep_alive_counts_reconcile_exactly_with_the_server() {
    let server = ServeChild::start(&[]);
    let r = http_json(&["-n", "20000", "-c", "50", "-k", &server.url]);
    assert_eq!(r.complete_requests, 20000);
    assert_eq!(r.failed_requests, 0);
    assert_eq!(r.in_flight_at_end, 0);
    assert_eq!(r.status_codes.get("200"), Some(&20000));
    assert!(r.keep_alive && r.concurrency == 50);
    assert_eq!(server.served_settled(20000), 20000);
}

#[test]
fn without_keep_alive_every_request_opens_a_connection() {
    let server = ServeChild::start(&[]);
    let before = server.stats()["connections_accepted"].as_u64().unwrap();
    let r = http_json(&["-n", "200", "-c", "4", &server.url]);
    assert_eq!((r.complete_requests, r.failed_requests), (200, 0));
    assert!(!r.keep_alive);
    let after = server.stats()["connections_accepted"].as_u64().unwrap();
    // +1: the stats request itself uses a connection.
    assert_eq!(after - before, 201);
    assert_eq!(server.served(), 200);
}

#[test]
fn time_limit_reconciles_completed_failed_and_in_flight_with_the_server() {
    let server = ServeChild::start(&["--latency-ms", "2"]);
    let r = http_json(&["-t", "2", "-c", "20", "-k", &server.url]);
    let sent = r.complete_requests + r.failed_requests + r.in_flight_at_end;
    assert!(r.complete_requests > 100, "{r:?}");
    assert!(
        r.duration_s >= 1.9 && r.duration_s < 3.0,
        "{}",
        r.duration_s
    );
    assert_eq!(server.served_settled(sent), sent);
}

#[test]
fn pipelined_requests_reconcile_with_the_server() {
    let server = ServeChild::start(&[]);
    let r = http_json(&[
        "-n",
        "5000",
        "-c",
        "10",
        "-k",
        "--pipeline",
        "8",
        &server.url,
    ]);
    assert_eq!((r.complete_requests, r.failed_requests), (5000, 0));
    assert_eq!(r.pipeline, 8);
    assert_eq!(server.served_settled(5000), 5000);
}

/// Both engines run against the same server and give the same exact counts
/// (keep-alive, pipelined, and one connection per request), and the record
/// names the engine that ran.
#[test]
fn epoll_and_io_uring_engines_give_the_same_counts() {
    let server = ServeChild::start(&[]);
    let mut expected = server.served();
    for engine in ["epoll", "io_uring"] {
        for extra in [&["-k"][..], &["-k", "--pipeline", "4"][..], &[][..]] {
            let mut args = vec!["-n", "3000", "-c", "20", "--engine", engine];
            args.extend_from_slice(extra);
            args.push(&server.url);
            let r = http_json(&args);
            assert_eq!(
                (r.complete_requests, r.failed_requests),
                (3000, 0),
                "{args:?}"
            );
            assert_eq!(r.engine.as_deref(), Some(engine), "{args:?}");
            expected += 3000;
            assert_eq!(server.served_settled(expected), expected, "{args:?}");
        }
    }
    // auto picks one of the two and says which.
    let r = http_json(&["-n", "100", "-k", &server.url]);
    assert!(
        matches!(r.engine.as_deref(), Some("epoll" | "io_uring")),
        "{:?}",
        r.engine
    );
}

#[test]
fn an_unknown_engine_is_a_usage_error() {
    let out = http(&["-n", "1", "--engine", "kqueue", "http://127.0.0.1:9/"]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("kqueue") && out.stderr.contains("io_uring"),
        "{}",
        out.stderr
    );
}

#[test]
fn ipv6_loopback_works_end_to_end() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        eprintln!("skipped: this machine has no IPv6 loopback");
        return;
    }
    let server = ServeChild::start(&["--bind", "::1"]);
    assert!(server.url.starts_with("http://[::1]:"), "{}", server.url);
    let r = http_json(&["-n", "20", "-k", &server.url]);
    assert_eq!((r.complete_requests, r.failed_requests), (20, 0));
    assert_eq!(r.server_hostname, "::1");
}

#[test]
fn warmup_load_reaches_the_server_but_is_not_counted() {
    // The warm-up is a window of wall time from the start of the run. On a
    // loaded machine the connections may only be up after it ended, and the
    // run then rightly sends no warm-up request; so the window doubles until
    // a run's warm-up reached the server. Every run must count exactly its
    // 100 requests, whatever the server saw before them.
    for warmup_ms in [300u64, 600, 1200, 2400, 4800] {
        let server = ServeChild::start(&[]);
        let warmup = format!("{warmup_ms}ms");
        let r = http_json(&[
            "--warmup",
            &warmup,
            "-n",
            "100",
            "-c",
            "2",
            "-k",
            &server.url,
        ]);
        assert_eq!((r.complete_requests, r.failed_requests), (100, 0));
        assert!(
            (r.warmup_s - warmup_ms as f64 / 1e3).abs() < 1e-9,
            "{}",
            r.warmup_s
        );
        let served = server.served();
        assert!(
            served >= 100,
            "the server saw {served} of 100 counted requests"
        );
        if served > 100 {
            return;
        }
    }
    panic!("no warm-up request reached the server, even in a 4.8 s warm-up");
}

#[test]
fn chunked_responses_are_decoded() {
    let server = ServeChild::start(&["--chunked", "--body-bytes", "20000"]);
    let r = http_json(&["-n", "50", "-c", "5", "-k", &server.url]);
    assert_eq!((r.complete_requests, r.failed_requests), (50, 0));
    assert_eq!(r.document_length_bytes, 20000);
    assert_eq!(r.body_bytes, 50 * 20000);
}

#[test]
fn head_requests_get_no_body() {
    let server = ServeChild::start(&["--body-bytes", "100"]);
    let r = http_json(&["-i", "-n", "20", "-k", &server.url]);
    assert_eq!(r.method, "HEAD");
    assert_eq!((r.complete_requests, r.failed_requests), (20, 0));
    assert_eq!(r.body_bytes, 0);
    assert_eq!(server.served(), 20);
}

#[test]
fn post_body_from_file_reaches_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body.json");
    std::fs::write(&body, br#"{"hello":"kurabe"}"#).unwrap();
    let server = ServeChild::start(&[]);
    let r = http_json(&[
        "-p",
        body.to_str().unwrap(),
        "-T",
        "application/json",
        "-n",
        "100",
        "-c",
        "4",
        "-k",
        &server.url,
    ]);
    assert_eq!((r.complete_requests, r.failed_requests), (100, 0));
    assert_eq!(r.method, "POST");
    let stats = server.stats();
    assert_eq!(stats["requests_with_body"], 100);
    assert_eq!(stats["body_bytes_received"], 100 * 18);
}

#[test]
fn rate_limited_run_reports_corrected_latency_above_uncorrected_when_the_server_stalls() {
    // Two connections to a server that takes 50 ms per response serve at most
    // 40 req/s; asking for 100 req/s makes requests queue behind the stall.
    let server = ServeChild::start(&["--latency-ms", "50"]);
    let r = http_json(&["--rate", "100", "-n", "60", "-c", "2", "-k", &server.url]);
    assert_eq!((r.complete_requests, r.failed_requests), (60, 0));
    let rate = r.rate.expect("rate figures with --rate");
    assert_eq!(rate.requested_per_s, 100.0);
    let uncorrected = rate.latency_uncorrected_us;
    assert!(uncorrected.p50 >= 50_000, "uncorrected {uncorrected:?}");
    assert!(
        r.latency_us.mean > 2.0 * uncorrected.mean && r.latency_us.max > uncorrected.max,
        "corrected {:?} vs uncorrected {uncorrected:?}",
        r.latency_us
    );
}

#[test]
fn text_report_parses_with_the_usual_ab_regexes() {
    let server = ServeChild::start(&[]);
    let out = http(&["-n", "500", "-c", "5", "-k", &server.url]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let text = &out.stdout;
    for re in [
        r"Requests per second:\s+([\d.]+)",
        r"Failed requests:\s+(\d+)",
        r"Complete requests:\s+(\d+)",
        r"Time per request:\s+([\d.]+) \[ms\] \(mean\)",
        r"  50%\s+(\d+)",
        r"Transfer rate:\s+([\d.]+)",
    ] {
        assert!(
            predicates::str::is_match(re).unwrap().eval(text),
            "{re} in\n{text}"
        );
    }
    let value = |label: &str| -> f64 {
        let line = text.lines().find(|l| l.starts_with(label)).unwrap();
        line[label.len()..]
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(value("Complete requests:"), 500.0);
    assert_eq!(value("Failed requests:"), 0.0);
    assert!(value("Requests per second:") > 0.0);
    assert!(
        text.contains("Reconciliation:         500 completed + 0 failed + 0 in flight = 500 sent")
    );
    assert_eq!(server.served(), 500);
}

#[test]
fn output_file_percentile_csv_gnuplot_and_markdown() {
    let server = ServeChild::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.md");
    let csv = dir.path().join("percent.csv");
    let plot = dir.path().join("plot.tsv");
    let out = http(&[
        "--format",
        "md",
        "-o",
        report.to_str().unwrap(),
        "-e",
        csv.to_str().unwrap(),
        "-g",
        plot.to_str().unwrap(),
        "-n",
        "50",
        "-k",
        &server.url,
    ]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.is_empty());
    let md = std::fs::read_to_string(&report).unwrap();
    assert!(
        md.starts_with("| url | concurrency |") && md.lines().count() == 3,
        "{md}"
    );
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert!(
        csv.starts_with("Percentage served,Time in ms\n0,") && csv.lines().count() == 102,
        "{csv}"
    );
    assert!(csv.lines().last().unwrap().starts_with("100,"));
    let plot = std::fs::read_to_string(&plot).unwrap();
    assert_eq!(
        plot.lines().count(),
        51,
        "ab's header and one line per request:\n{plot}"
    );
    // No temporary files left beside the outputs.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
}

#[test]
fn ctrl_c_prints_a_partial_report_marked_interrupted() {
    let server = ServeChild::start(&[]);
    let child = kurabe()
        .args(["http", "-q", "-t", "60", "-c", "4", "-k", &server.url])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.served() < 100 {
        assert!(Instant::now() < deadline, "no load arrived");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("*** interrupted: partial results ***"),
        "{text}"
    );
    assert!(text.contains("Complete requests:"));
}

/// True once no SIGINT is pending for `pid` (its handler has taken the last one).
fn sigint_taken(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let bit = 1u64 << (libc::SIGINT - 1);
    status
        .lines()
        .filter_map(|l| {
            l.strip_prefix("ShdPnd:")
                .or_else(|| l.strip_prefix("SigPnd:"))
        })
        .all(|v| u64::from_str_radix(v.trim(), 16).is_ok_and(|m| m & bit == 0))
}

#[test]
fn a_second_ctrl_c_ends_the_drain_at_once() {
    // Responses take 30 s: after the first Ctrl-C the client would drain in-flight requests.
    let server = ServeChild::start(&["--latency-ms", "30000"]);
    let mut child = kurabe()
        .args([
            "http",
            "-q",
            "-t",
            "60",
            "-s",
            "30",
            "-c",
            "2",
            "-k",
            &server.url,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.served() < 2 {
        assert!(Instant::now() < deadline, "no load arrived");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "kurabe http did not exit");
        // A signal sent while the last is still pending would merge with it.
        if sigint_taken(pid) {
            // SAFETY: kill(2) on our own child.
            unsafe { libc::kill(pid as i32, libc::SIGINT) };
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("second signal"), "{err}");
    assert!(out.stdout.is_empty(), "a forced exit prints no report");
}

// ---------------------------------------------------------------------------
// Against misbehaving in-process servers: every failure lands in its bucket.

#[test]
fn close_delimited_bodies_are_read_to_eof() {
    let server = TestServer::start(|mut s| {
        if read_request(&mut s).is_some() {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nServer: t\r\n\r\nhello");
        }
    });
    let r = http_json(&["-n", "5", &server.url()]);
    assert_eq!(
        (r.complete_requests, r.failed_requests),
        (5, 0),
        "{:?}",
        r.failures
    );
    assert_eq!(r.body_bytes, 25);
    assert_eq!(r.server_software.as_deref(), Some("t"));
}

#[test]
fn custom_headers_cookies_auth_and_body_arrive_at_the_server() {
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let server = TestServer::start(move |mut s| {
        if let Some(req) = read_request(&mut s) {
            let _ =
                s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
            let _ = tx.lock().unwrap().send(req);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body.xml");
    std::fs::write(&body, b"<a>1</a>").unwrap();
    let r = http_json(&[
        "-n",
        "1",
        "-p",
        body.to_str().unwrap(),
        "-T",
        "application/xml",
        "-H",
        "X-Kurabe-Test: yes",
        "-C",
        "a=1",
        "-A",
        "u:p",
        &server.url(),
    ]);
    assert_eq!(r.complete_requests, 1);
    let (head, got) = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(head.starts_with("POST / HTTP/1.1\r\n"), "{head}");
    for h in [
        "X-Kurabe-Test: yes",
        "Cookie: a=1",
        "Authorization: Basic dTpw",
        "Content-Type: application/xml",
    ] {
        assert!(head.contains(h), "{h} missing in {head}");
    }
    assert_eq!(got, b"<a>1</a>");
}

#[test]
fn refused_connections_are_connect_failures_the_run_goes_on_and_exits_1() {
    let url = format!("http://127.0.0.1:{}/", closed_port());
    let (r, _) = http_failed(&["-n", "5", &url], "connect");
    assert_eq!(r.failures.connect, 5);
    assert_eq!(r.failed_requests, 5);
    assert_eq!(r.errors[0].first_error, "Connection refused (os error 111)");
    // The text report names the error and its share.
    let out = http(&["-n", "20", &url]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stdout.contains(
            "Errors:                 connect: Connection refused (os error 111) — 20 of 20\n"
        ),
        "{}",
        out.stdout
    );
}

#[test]
fn https_to_a_plain_http_port_names_the_tls_error() {
    let server = ServeChild::start(&[]);
    let url = server.url.replacen("http://", "https://", 1);
    let (r, _) = http_failed(&["-n", "3", &url], "connect");
    assert_eq!(r.failures.connect, 3);
    let first = &r.errors[0].first_error;
    assert!(first.starts_with("TLS handshake: "), "{first}");
    assert!(first.contains("plain http:// port"), "{first}");
}

#[test]
fn max_error_rate_fails_the_run_above_the_fraction_only() {
    // Every other connection is refused by an immediate close: half the requests fail.
    let n = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let server = TestServer::start(move |mut s| {
        if read_request(&mut s).is_some() && n.fetch_add(1, Ordering::SeqCst) % 2 == 0 {
            let _ =
                s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        }
    });
    let url = server.url();
    let r = http_json(&["-n", "10", &url]);
    assert_eq!((r.complete_requests, r.failed_requests), (5, 5));
    assert_eq!(r.errors[0].kind, "receive");
    http_json(&["-n", "10", "--max-error-rate", "0.5", &url]);
    let (_, stderr) = http_json_exit(&["-n", "10", "--max-error-rate", "0.2", &url], 1);
    assert!(
        stderr
            .contains("50.00 % of the requests failed, more than --max-error-rate 0.2: receive: "),
        "{stderr}"
    );
    let out = http(&["--max-error-rate", "2", &url]);
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("--max-error-rate 2: give a fraction"),
        "{}",
        out.stderr
    );
}

#[test]
fn abort_on_error_stops_at_the_first_failure_and_exits_1() {
    let port = closed_port();
    let url = format!("http://127.0.0.1:{port}/");
    let out = http(&["--format", "json", "--abort-on-error", "-n", "1000", &url]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let r: HttpReport = serde_json::from_str(&out.stdout).unwrap();
    assert!(r.interrupted);
    assert!(
        r.failures.connect >= 1 && r.failed_requests < 1000,
        "{:?}",
        r.failures
    );
    // -r is accepted and changes nothing: failures are counted, the run goes on.
    let (r, _) = http_failed(&["-r", "-n", "20", &url], "connect");
    assert_eq!(r.failures.connect, 20);
}

/// An A/B whose B never answers: A's rounds are measured and reported,
/// and the run as a whole failed: exit 1, with one line naming B alone.
#[test]
fn an_ab_where_one_url_never_succeeds_exits_1_naming_it() {
    let a = ServeChild::start(&[]);
    let port = closed_port();
    let dead = format!("http://127.0.0.1:{port}/");
    let out = http(&["-n", "20", "--rounds", "2", &a.url, &dead]);
    assert_eq!(out.code, Some(1), "{}{}", out.stdout, out.stderr);
    let line = out
        .stderr
        .lines()
        .find(|l| l.contains("no round succeeded"))
        .unwrap_or_else(|| panic!("no notice in {}", out.stderr));
    assert!(line.contains(&dead) && !line.contains(&a.url), "{line}");
    assert!(
        out.stdout.contains(&a.url),
        "A's rounds are reported: {}",
        out.stdout
    );
}

#[test]
fn reset_mid_body_is_a_receive_failure() {
    let server = TestServer::start(|mut s| {
        if read_request(&mut s).is_some() {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789");
            std::thread::sleep(Duration::from_millis(20));
            let linger = libc::linger {
                l_onoff: 1,
                l_linger: 0,
            };
            // SAFETY: setsockopt with a valid linger struct on our socket; closing then sends RST.
            unsafe {
                libc::setsockopt(
                    s.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_LINGER,
                    (&linger as *const libc::linger).cast(),
                    std::mem::size_of::<libc::linger>() as u32,
                );
            }
        }
    });
    let (r, _) = http_failed(&["-n", "3", &server.url()], "receive");
    assert_eq!(r.failures.receive, 3, "{:?}", r.failures);
    assert_eq!(
        r.errors[0].first_error,
        "Connection reset by peer (os error 104)"
    );
}

#[test]
fn short_body_against_content_length_is_a_length_failure() {
    let server = TestServer::start(|mut s| {
        if read_request(&mut s).is_some() {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n");
            let _ = s.write_all(&[b'x'; 50]);
            let _ = s.shutdown(Shutdown::Write);
            drain_until_closed(&mut s);
        }
    });
    let (r, _) = http_failed(&["-n", "3", &server.url()], "length");
    assert_eq!(r.failures.length, 3, "{:?}", r.failures);
    assert!(r.errors[0]
        .first_error
        .contains("before the end of the body"));
}

#[test]
fn garbage_status_line_is_an_exception() {
    let server = TestServer::start(|mut s| {
        if read_request(&mut s).is_some() {
            let _ = s.write_all(b"GARBAGE GARBAGE\r\n\r\n");
            let _ = s.shutdown(Shutdown::Write);
            drain_until_closed(&mut s);
        }
    });
    let (r, _) = http_failed(&["-n", "3", &server.url()], "exceptions");
    assert_eq!(r.failures.exceptions, 3, "{:?}", r.failures);
    assert!(r.errors[0].first_error.contains("not valid HTTP/1.x"));
}

#[test]
fn a_server_that_never_answers_times_out() {
    let server = TestServer::start(|mut s| {
        if read_request(&mut s).is_some() {
            drain_until_closed(&mut s);
        }
    });
    let start = Instant::now();
    let (r, _) = http_failed(&["-n", "2", "-c", "2", "-s", "1", &server.url()], "timeout");
    assert_eq!(r.failures.timeout, 2, "{:?}", r.failures);
    assert_eq!(
        r.errors[0].first_error,
        "no complete response within 1s (-s)"
    );
    assert!(start.elapsed() < Duration::from_secs(10));
}

// ---------------------------------------------------------------------------
// Bad input: exit 2, one line on stderr that names the flag.

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let url = "http://127.0.0.1:9/";
    let missing = dir.path().join("missing");
    let missing = missing.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["ftp://example/"], "invalid URL"),
        (&["http://"], "invalid URL"),
        (&["-n", "5", "-c", "10", url], "-c 10"),
        (&["-c", "0", url], "-c 0"),
        (&["-p", missing, url], "-p file"),
        (&["--pipeline", "4", "-n", "10", url], "-k"),
        (&["-H", "bad", url], "-H"),
    ];
    for (args, needle) in cases {
        let out = http(args);
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.starts_with("kurabe: error:") && out.stderr.contains(needle),
            "{args:?}: {}",
            out.stderr
        );
        assert!(out.stdout.is_empty());
    }
    // clap's own errors (unknown flag, -p with -u, -i with a body) also exit 2 and name the flag first.
    for (args, needle) in [
        (&["-Y", url][..], "-Y"),
        (&["-p", "a", "-u", "b", url], "-u"),
        (&["-i", "-p", "a", url], "-i"),
    ] {
        let out = http(args);
        assert_eq!(out.code, Some(2), "{args:?}");
        assert!(
            out.stderr.lines().next().unwrap().contains(needle),
            "{}",
            out.stderr
        );
    }
    // An unwritable -o is a setup error too, and leaves no file behind.
    let server = ServeChild::start(&[]);
    let out_path = dir.path().join("no-such-dir/report.json");
    let out = http(&["-o", out_path.to_str().unwrap(), &server.url]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(!out_path.exists());
}

// ---------------------------------------------------------------------------
// Server-side metrics, checked against the kernel's own accounting.

/// utime + stime of a process (all its threads) from `/proc/PID/stat`, in
/// seconds (USER_HZ is 100 on Linux).
fn kernel_cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_comm = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    // After "pid (comm) ", field 3 (state) is index 0: utime is field 14, stime 15.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

#[test]
fn server_metrics_match_the_kernels_accounting_of_the_server_process() {
    // 300 µs of spinning per request: about 0.9 s of server CPU for 3000 requests,
    // 90 ticks, so tick granularity is a few percent at most.
    let server = ServeChild::start(&["--work-us", "300"]);
    let before = kernel_cpu_seconds(server.pid());
    let r = http_json(&["-n", "3000", "-c", "2", "-k", &server.url]);
    let after = kernel_cpu_seconds(server.pid());
    assert_eq!(r.complete_requests, 3000);
    let s = r.server.expect("a loopback server is measured by default");
    assert_eq!(s.pid, server.pid());
    let kernel_ms_per_request = (after - before) * 1000.0 / 3000.0;
    let cpu = s.cpu_ms_per_request.expect("3000 responses");
    let diff = (cpu - kernel_ms_per_request).abs() / kernel_ms_per_request;
    assert!(
        diff < 0.15,
        "kurabe says {cpu:.4} ms CPU/request, the kernel {kernel_ms_per_request:.4}"
    );
    assert!(cpu >= 0.27, "300 µs of spin per request, got {cpu} ms");
    assert!(s.cpu_percent_mean > 0.0);
    assert!(s.pss_start_bytes > 0 && s.pss_peak_bytes >= s.pss_end_bytes);
}

/// Every response failing `--check` (the server answers 200, the check
/// wants 201): no request completed, but the server answered each one, so
/// its CPU per response is the kernel's per answer, in JSON and text alike
/// (before, it was divided by the complete requests and printed as 0).
#[test]
fn server_cpu_per_request_counts_the_responses_that_failed_a_check() {
    let server = ServeChild::start(&["--work-us", "300"]);
    let check = ["-n", "2000", "-c", "2", "-k", "--check", "status==201"];
    let before = kernel_cpu_seconds(server.pid());
    let (r, _) = http_json_exit(&[&check[..], &[&server.url]].concat(), 1);
    let after = kernel_cpu_seconds(server.pid());
    assert_eq!((r.complete_requests, r.failures.check), (0, 2000));
    let s = r.server.expect("a loopback server is measured by default");
    let kernel = (after - before) * 1000.0 / 2000.0;
    let cpu = s.cpu_ms_per_request.expect("2000 responses arrived");
    assert!(
        (cpu - kernel).abs() / kernel < 0.15 && cpu >= 0.27,
        "kurabe says {cpu:.4} ms CPU/request, the kernel {kernel:.4}"
    );
    let text = http(&[&check[..], &[&server.url]].concat());
    assert_eq!(text.code, Some(1), "{}", text.stderr);
    let line = text
        .stdout
        .lines()
        .find(|l| l.starts_with("Server (pid"))
        .unwrap_or_else(|| panic!("no server line in {}", text.stdout));
    let ms: f64 = line
        .split_whitespace()
        .nth(3)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no figure in {line}"));
    assert!(ms >= 0.27, "{line}");
}

#[test]
fn server_metrics_can_be_turned_off_or_pointed_at_a_pid() {
    let server = ServeChild::start(&[]);
    let off = http_json(&["-n", "100", "--no-server-metrics", &server.url]);
    assert!(off.server.is_none());
    let pid = server.pid().to_string();
    let named = http_json(&["-n", "100", "--server-pid", &pid, &server.url]);
    assert_eq!(named.server.map(|s| s.pid), Some(server.pid()));
    let bad = http(&["-n", "10", "--server-pid", "999999999", &server.url]);
    assert_eq!(bad.code, Some(2));
    assert!(bad.stderr.contains("--server-pid"), "{}", bad.stderr);
    assert_eq!(bad.stderr.trim().lines().count(), 1, "{}", bad.stderr);
}

/// A loopback server that keeps the raw bytes of every request it gets
/// and answers each with a small 200.
fn recording_server() -> (TestServer, Arc<std::sync::Mutex<Vec<Vec<u8>>>>) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let server = TestServer::start(move |mut s| {
        while let Some((head, body)) = read_request(&mut s) {
            let mut raw = head.into_bytes();
            raw.extend_from_slice(&body);
            log.lock().unwrap().push(raw);
            let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
            if s.write_all(ok).is_err() {
                return;
            }
        }
    });
    (server, seen)
}

/// The same settings send the same bytes from the command line and from a
/// plan: one request spec in kurabe-http is built by both.
#[test]
fn a_plan_sends_byte_for_byte_what_the_same_flags_send() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("body.txt"), "hello plan").unwrap();
    let (server, seen) = recording_server();
    let url = format!("{}p?q=1", server.url());
    let flags = [
        "-m", "put", "-H", "X-A: 1", "-H", "X-B: two", "-C", "a=1", "-C", "b=2", "-A", "user:pw",
        "-p",
    ];
    let body = dir.path().join("body.txt");
    let out = kurabe()
        .args(["http", "-q", "-n", "1"])
        .args(flags)
        .arg(&body)
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let from_cli = std::mem::take(&mut *seen.lock().unwrap());
    assert_eq!(from_cli.len(), 1);
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "name = \"same bytes\"\nrepeat = 1\n[[variant]]\nname = \"a\"\n[[workload]]\n\
             name = \"w\"\nhttp = {{ url = \"{url}\", requests = 1, method = \"put\", \
             headers = {{ \"X-A\" = \"1\", \"X-B\" = \"two\" }}, cookies = [\"a=1\", \"b=2\"], \
             auth = \"user:pw\", body_file = \"body.txt\" }}\n"
        ),
    )
    .unwrap();
    let out = kurabe()
        .args(["run", "-q", "--store"])
        .arg(dir.path().join("r.db"))
        .arg(&plan)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let from_plan = seen.lock().unwrap().clone();
    assert!(!from_plan.is_empty());
    let cli = String::from_utf8_lossy(&from_cli[0]);
    assert!(cli.starts_with("PUT /p?q=1 HTTP/1.1\r\n"), "{cli}");
    assert!(cli.contains("Content-Type: text/plain\r\n"), "{cli}");
    for raw in &from_plan {
        assert_eq!(String::from_utf8_lossy(raw), cli);
    }
}
