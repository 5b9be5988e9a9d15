//! End-to-end tests of the engine against small in-process servers on
//! 127.0.0.1:0, one behaviour each (the CLI's integration tests cover the binary).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;

/// What a test server does with request number `i` (0-based, over all connections).
/// Returns false to close the connection after it.
type Respond = dyn Fn(&mut TcpStream, u64) -> std::io::Result<bool> + Send + Sync;

struct Server {
    port: u16,
    /// Requests read (complete heads) so far.
    count: Arc<AtomicU64>,
}

impl Server {
    fn start(
        respond: impl Fn(&mut TcpStream, u64) -> std::io::Result<bool> + Send + Sync + 'static,
    ) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let count = Arc::new(AtomicU64::new(0));
        let respond: Arc<Respond> = Arc::new(respond);
        let c2 = count.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                // Responses are written in pieces; Nagle + delayed ACK would add 40 ms stalls.
                stream.set_nodelay(true).unwrap();
                let (count, respond) = (c2.clone(), respond.clone());
                std::thread::spawn(move || {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    loop {
                        while let Some(end) = find(&buf, b"\r\n\r\n") {
                            buf.drain(..end + 4);
                            let i = count.fetch_add(1, Ordering::SeqCst);
                            match respond(&mut stream, i) {
                                Ok(true) => {}
                                _ => return,
                            }
                        }
                        match stream.read(&mut chunk) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                });
            }
        });
        Server { port, count }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/x", self.port)
    }

    /// The server's count once it stops changing toward `expected` (it may lag the client briefly).
    fn count_settles_at(&self, expected: u64) -> u64 {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let n = self.count.load(Ordering::SeqCst);
            if n == expected || Instant::now() > deadline {
                return n;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn ok_response(
    body: &'static str,
) -> impl Fn(&mut TcpStream, u64) -> std::io::Result<bool> + Send + Sync {
    move |s, _| {
        write!(
            s,
            "HTTP/1.1 200 OK\r\nServer: test\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )?;
        Ok(true)
    }
}

thread_local! {
    /// The engine `config` asks for: epoll, unless an `io_uring::` copy of the test set it.
    static ENGINE: std::cell::Cell<Engine> = const { std::cell::Cell::new(Engine::Epoll) };
}

fn test_engine() -> Engine {
    ENGINE.with(|e| e.get())
}

fn config(url: &str, stop: StopCondition) -> Load {
    Load {
        target: Target::parse(url).unwrap(),
        requests: one("GET", None),
        concurrency: 4,
        threads: 2,
        protocol: Protocol::H1 {
            keep_alive: true,
            pipeline: 1,
        },
        stop,
        arrival: Arrival::Closed,
        warmup: None,
        timeout: Duration::from_secs(5),
        abort_on_error: false,
        check_length: true,
        insecure: false,
        gnuplot_file: None,
        setup: Default::default(),
        engine: test_engine(),
        labels: Default::default(),
        thresholds: Vec::new(),
    }
}

/// One request of `method`, with `body`.
fn one(method: &str, body: Option<Vec<u8>>) -> Requests {
    Requests::One {
        method: method.into(),
        headers: vec![],
        body: body.map(Into::into),
    }
}

/// HTTP/1.1, a new connection per request.
const H1_CLOSE: Protocol = Protocol::H1 {
    keep_alive: false,
    pipeline: 1,
};

/// HTTP/1.1 keep-alive with `n` requests in flight per connection.
fn pipelined(n: u32) -> Protocol {
    Protocol::H1 {
        keep_alive: true,
        pipeline: n,
    }
}

fn run_ok(cfg: &Load) -> HttpReport {
    run(cfg, &RunControl::default()).unwrap()
}

#[test]
fn keep_alive_issues_exactly_n_requests() {
    let srv = Server::start(ok_response("hello"));
    let r = run_ok(&config(&srv.url(), StopCondition::Requests(2000)));
    assert_eq!(r.complete_requests, 2000);
    assert_eq!(r.failed_requests, 0);
    assert_eq!(srv.count_settles_at(2000), 2000);
    assert_eq!(r.document_length_bytes, 5);
    assert_eq!(r.server_software.as_deref(), Some("test"));
    assert_eq!(r.status_codes.get("200"), Some(&2000));
    assert_eq!(r.body_bytes, 2000 * 5);
    assert!(r.latency_us.p50 > 0 && r.latency_us.max >= r.latency_us.p99);
    // Four connections for 2000 requests: the median request paid no connect.
    assert_eq!(r.connection_times_us.connect.median, 0);
}

#[test]
fn without_keep_alive_every_request_has_its_own_connection() {
    let conns = Arc::new(AtomicU64::new(0));
    let seen = conns.clone();
    let srv = Server::start(move |s, _| {
        seen.fetch_add(1, Ordering::SeqCst);
        s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")?;
        Ok(false)
    });
    let mut cfg = config(&srv.url(), StopCondition::Requests(300));
    cfg.protocol = H1_CLOSE;
    let r = run_ok(&cfg);
    assert_eq!((r.complete_requests, r.failed_requests), (300, 0));
    assert_eq!(srv.count_settles_at(300), 300);
    assert!(r.connection_times_us.connect.max > 0);
}

#[test]
fn server_connection_close_is_honoured_without_failures() {
    // Every third response closes the connection, as nginx does after keepalive_requests.
    let srv = Server::start(|s, i| {
        let close = i % 3 == 2;
        let hdr = if close { "Connection: close\r\n" } else { "" };
        write!(s, "HTTP/1.1 200 OK\r\n{hdr}Content-Length: 1\r\n\r\nx")?;
        Ok(!close)
    });
    let r = run_ok(&config(&srv.url(), StopCondition::Requests(600)));
    assert_eq!((r.complete_requests, r.failed_requests), (600, 0));
    assert_eq!(srv.count_settles_at(600), 600);
}

#[test]
fn chunked_and_close_delimited_bodies() {
    let srv = Server::start(|s, _| {
        s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n4\r\ndefg\r\n0\r\nT: 1\r\n\r\n")?;
        Ok(true)
    });
    let r = run_ok(&config(&srv.url(), StopCondition::Requests(200)));
    assert_eq!((r.complete_requests, r.failed_requests), (200, 0));
    assert_eq!(r.document_length_bytes, 7);

    let srv = Server::start(|s, _| {
        s.write_all(b"HTTP/1.1 200 OK\r\n\r\nuntil close")?;
        Ok(false)
    });
    let r = run_ok(&config(&srv.url(), StopCondition::Requests(50)));
    assert_eq!((r.complete_requests, r.failed_requests), (50, 0));
    assert_eq!(r.document_length_bytes, 11);
}

#[test]
fn head_interim_and_bodiless_statuses() {
    let srv = Server::start(|s, i| {
        if i % 2 == 0 {
            s.write_all(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n")?;
        } else {
            s.write_all(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n")?;
        }
        Ok(true)
    });
    let mut cfg = config(&srv.url(), StopCondition::Requests(100));
    cfg.concurrency = 1;
    cfg.threads = 1;
    let r = run_ok(&cfg);
    assert_eq!((r.complete_requests, r.failed_requests), (100, 0));
    assert_eq!(r.status_codes.get("204"), Some(&50));
    assert_eq!(r.non_2xx_responses, 50);

    let srv = Server::start(|s, _| {
        s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 381\r\n\r\n")?;
        Ok(true)
    });
    let mut cfg = config(&srv.url(), StopCondition::Requests(100));
    cfg.requests = one("HEAD", None);
    let r = run_ok(&cfg);
    assert_eq!((r.complete_requests, r.failed_requests), (100, 0));
}

#[test]
fn refused_connections_are_connect_failures() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let cfg = config(
        &format!("http://127.0.0.1:{port}/"),
        StopCondition::Requests(40),
    );
    let r = run_ok(&cfg);
    assert_eq!(r.complete_requests, 0);
    assert_eq!(r.failures.connect, 40);
    assert_eq!(r.failed_requests, 40);

    // With a time limit the failures are counted until it hits, and the run ends.
    let mut timed = cfg.clone();
    timed.stop = StopCondition::Duration(Duration::from_millis(200));
    let t0 = Instant::now();
    let r = run_ok(&timed);
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert!(r.failures.connect > 0 && r.complete_requests == 0);

    let mut cfg = cfg;
    cfg.abort_on_error = true;
    let r = run_ok(&cfg);
    assert!(r.interrupted);
    assert!(
        r.failures.connect >= 1 && r.failures.connect < 40,
        "{:?}",
        r.failures
    );
}

#[test]
fn reset_mid_body_is_a_receive_failure() {
    let srv = Server::start(|s, _| {
        s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")?;
        s.flush()?;
        // Let the partial body arrive first, then reset (linger 0 sends RST).
        std::thread::sleep(Duration::from_millis(20));
        socket2::SockRef::from(&*s).set_linger(Some(Duration::ZERO))?;
        Ok(false)
    });
    let r = run_ok(&config(&srv.url(), StopCondition::Requests(8)));
    assert_eq!(r.failures.receive, 8, "{:?}", r.failures);
}

#[test]
fn short_body_then_close_is_a_length_failure() {
    let srv = Server::start(|s, _| {
        s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")?;
        Ok(false)
    });
    let r = run_ok(&config(&srv.url(), StopCondition::Requests(8)));
    assert_eq!(r.failures.length, 8, "{:?}", r.failures);
}

#[test]
fn differing_document_length_is_a_length_failure_unless_disabled() {
    let srv = Server::start(|s, i| {
        let body = if i == 0 {
            "aaaa"
        } else if i % 2 == 0 {
            "bb"
        } else {
            "aaaa"
        };
        write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )?;
        Ok(true)
    });
    let mut cfg = config(&srv.url(), StopCondition::Requests(101));
    cfg.concurrency = 1;
    cfg.threads = 1;
    let r = run_ok(&cfg);
    assert_eq!((r.complete_requests, r.failures.length), (51, 50));
    cfg.check_length = false;
    let r = run_ok(&cfg);
    assert_eq!((r.complete_requests, r.failed_requests), (101, 0));
}

#[test]
fn garbage_status_line_is_an_exception() {
    let srv = Server::start(|s, _| {
        s.write_all(b"SMTP ready\r\n\r\n")?;
        Ok(true)
    });
    let r = run_ok(&config(&srv.url(), StopCondition::Requests(10)));
    assert_eq!(r.failures.exceptions, 10, "{:?}", r.failures);
}

#[test]
fn a_server_that_never_answers_times_out() {
    let srv = Server::start(|_, _| {
        std::thread::sleep(Duration::from_secs(3));
        Ok(false)
    });
    let mut cfg = config(&srv.url(), StopCondition::Requests(4));
    cfg.timeout = Duration::from_millis(150);
    let t0 = Instant::now();
    let r = run_ok(&cfg);
    assert_eq!(r.failures.timeout, 4, "{:?}", r.failures);
    assert!(t0.elapsed() < Duration::from_secs(2));
}

#[test]
fn time_limit_counts_reconcile_with_the_server() {
    let srv = Server::start(ok_response("hi"));
    let mut cfg = config(
        &srv.url(),
        StopCondition::Duration(Duration::from_millis(300)),
    );
    cfg.protocol = pipelined(3);
    let r = run_ok(&cfg);
    let client = r.complete_requests + r.failed_requests + r.in_flight_at_end;
    assert!(r.complete_requests > 0);
    assert_eq!(srv.count_settles_at(client), client, "{r:?}");
    assert!((0.25..1.0).contains(&r.duration_s), "{}", r.duration_s);
}

#[test]
fn pipelining_issues_exactly_n() {
    let srv = Server::start(ok_response("p"));
    let mut cfg = config(&srv.url(), StopCondition::Requests(1001));
    cfg.protocol = pipelined(8);
    let r = run_ok(&cfg);
    assert_eq!((r.complete_requests, r.failed_requests), (1001, 0));
    assert_eq!(srv.count_settles_at(1001), 1001);
}

/// A server that reads each request's `Content-Length` body and answers
/// 200 when it is `want`, else 400 (and counts the requests it read).
fn body_checker(port_out: &mut u16, want: Arc<Vec<u8>>) -> Arc<AtomicU64> {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    *port_out = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&count);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            let (want, seen) = (Arc::clone(&want), Arc::clone(&seen));
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut chunk = vec![0u8; 1 << 16];
                loop {
                    if let Some(end) = find(&buf, b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                        let len: usize = head
                            .split("content-length: ")
                            .nth(1)
                            .and_then(|v| v.split("\r\n").next()?.parse().ok())
                            .unwrap_or(0);
                        if buf.len() >= end + 4 + len {
                            let ok = buf[end + 4..end + 4 + len] == want[..];
                            buf.drain(..end + 4 + len);
                            seen.fetch_add(1, Ordering::SeqCst);
                            let status = if ok { "200 OK" } else { "400 Bad" };
                            let r = format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n");
                            if s.write_all(r.as_bytes()).is_err() {
                                return;
                            }
                            continue;
                        }
                    }
                    match s.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    count
}

#[test]
fn a_large_body_is_sent_whole_from_one_copy_pipelined() {
    // Over SPLIT_BODY, not a multiple of anything the engine uses.
    let body: Vec<u8> = (0..(SPLIT_BODY * 3 + 7))
        .map(|i| (i * 7 % 251) as u8)
        .collect();
    let want = Arc::new(body.clone());
    let mut port = 0;
    let count = body_checker(&mut port, want);
    let mut cfg = config(
        &format!("http://127.0.0.1:{port}/b"),
        StopCondition::Requests(23),
    );
    cfg.requests = one("POST", Some(body));
    cfg.protocol = pipelined(3);
    let r = run_ok(&cfg);
    assert_eq!((r.complete_requests, r.failed_requests), (23, 0), "{r:?}");
    assert_eq!(r.status_codes.get("200").copied(), Some(23), "{r:?}");
    assert_eq!(count.load(Ordering::SeqCst), 23);
    assert_eq!(r.sent_body_bytes, 23 * (SPLIT_BODY as u64 * 3 + 7));
}

/// A held set whose targets share one large body (one `@file`): each
/// request's head, then the body from its one copy (not copied into the
/// table per target), whole, on every connection.
#[test]
fn a_sets_shared_large_body_is_sent_whole_from_its_one_copy() {
    let body: Vec<u8> = (0..(SPLIT_BODY * 2 + 5))
        .map(|i| (i * 7 % 251) as u8)
        .collect();
    let mut port = 0;
    let count = body_checker(&mut port, Arc::new(body.clone()));
    let url = format!("http://127.0.0.1:{port}/");
    let mut cfg = config(&url, StopCondition::Requests(12));
    let shared = crate::request::Body::from(body);
    let target = |path: &str| set::SetTarget {
        method: "POST".into(),
        target: Target::parse(&format!("{url}{path}")).unwrap(),
        headers: vec![],
        body: Some(shared.clone()),
        tag: Default::default(),
        weight: 1,
        checks: vec![],
    };
    let set = set::RequestSet {
        targets: vec![target("a"), target("b"), target("c")],
        order: kurabe_model::load::Order::RoundRobin,
        seed: 1,
        source: "-".into(),
        format: kurabe_model::load::TargetsFormat::Http,
    };
    let set = Arc::new(set);
    cfg.requests = Requests::Set(Arc::clone(&set));
    cfg.concurrency = 2;
    let r = run_ok(&cfg);
    assert_eq!((r.complete_requests, r.failed_requests), (12, 0), "{r:?}");
    assert_eq!(r.status_codes.get("200").copied(), Some(12), "{r:?}");
    assert_eq!(count.load(Ordering::SeqCst), 12);
    let held = set_bytes(&cfg, &set);
    assert!(held.bytes.len() < 3 * 1024, "the table holds heads only");
    assert!(held
        .split
        .iter()
        .all(|b| b.as_ref().is_some_and(|b| b.len() == SPLIT_BODY * 2 + 5)));
}

/// A streamed set of three targets naming one shared body, pass after
/// pass (a file too large to hold whose targets name one `@file`).
#[derive(Debug)]
struct SharedBodyStream {
    url: String,
    body: crate::request::Body,
}

/// A pass over a [`SharedBodyStream`]: the targets read so far.
struct SharedBodyPass(SharedBodyStream, usize);

impl set::Stream for SharedBodyStream {
    fn pass(&self, _: &Arc<AtomicBool>) -> Result<Box<dyn set::Pass>, String> {
        let (url, body) = (self.url.clone(), self.body.clone());
        Ok(Box::new(SharedBodyPass(SharedBodyStream { url, body }, 0)))
    }
}

impl set::Pass for SharedBodyPass {
    fn next_target(
        &mut self,
        labels: &mut crate::tags::Labels,
    ) -> Option<Result<set::SetTarget, String>> {
        if self.1 == 3 {
            return None;
        }
        self.1 += 1;
        let url = format!("{}{}", self.0.url, self.1);
        let tag = labels.tag("POST", &url, None, &[] as &[&str]).unwrap();
        Some(Ok(set::SetTarget {
            method: "POST".into(),
            target: Target::parse(&url).unwrap(),
            headers: vec![],
            body: Some(self.0.body.clone()),
            tag,
            weight: 1,
            checks: vec![],
        }))
    }
}

/// A streamed set's large body is sent whole after each request's head
/// from its one shared copy, not copied into each chunk and connection.
#[test]
fn a_streamed_sets_shared_large_body_is_sent_whole_from_its_one_copy() {
    let body: Vec<u8> = (0..(SPLIT_BODY * 2 + 5))
        .map(|i| (i * 7 % 251) as u8)
        .collect();
    let mut port = 0;
    let count = body_checker(&mut port, Arc::new(body.clone()));
    let url = format!("http://127.0.0.1:{port}/");
    let mut cfg = config(&url, StopCondition::Requests(12));
    let stream = SharedBodyStream {
        url: url.clone(),
        body: body.into(),
    };
    // A streamed set keeps its first target (its origin and method).
    use set::Stream as _;
    let first = stream
        .pass(&Default::default())
        .unwrap()
        .next_target(&mut cfg.labels);
    let set = set::RequestSet {
        targets: vec![first.unwrap().unwrap()],
        order: kurabe_model::load::Order::Sequential,
        seed: 1,
        source: "-".into(),
        format: kurabe_model::load::TargetsFormat::Http,
    };
    let stream = set::Streamed(Arc::new(stream));
    cfg.requests = Requests::Streamed(Arc::new(set), stream);
    cfg.concurrency = 2;
    let r = run_ok(&cfg);
    assert_eq!((r.complete_requests, r.failed_requests), (12, 0), "{r:?}");
    assert_eq!(r.status_codes.get("200").copied(), Some(12), "{r:?}");
    assert_eq!(count.load(Ordering::SeqCst), 12);
    assert_eq!(r.sent_body_bytes, 12 * (SPLIT_BODY as u64 * 2 + 5));
}

#[test]
fn rate_is_held_and_latency_is_corrected() {
    let srv = Server::start(ok_response("r"));
    let mut cfg = config(
        &srv.url(),
        StopCondition::Duration(Duration::from_millis(500)),
    );
    cfg.arrival = Arrival::Constant(400.0);
    // Enough connections that one is free whenever a send is due even when
    // the machine is loaded (with 4, a test server slower than 10 ms per
    // response held sends back: "sent 93"). The engine must still send
    // exactly on schedule.
    cfg.concurrency = 32;
    let r = run_ok(&cfg);
    let info = r.rate.unwrap();
    // 200 intended sends in 0.5 s: never more, and each one not sent is
    // reported dropped (a thread the machine did not run until after the
    // end finds its connections still waiting for answers).
    let sent = r.complete_requests + r.failed_requests + r.in_flight_at_end;
    assert!(sent <= 201, "sent {sent}");
    assert!(sent + info.dropped_sends >= 199, "sent {sent}, {info:?}");
    assert!(r.latency_us.p50 >= info.latency_uncorrected_us.p50);

    // A server that stalls: latency from the intended time exceeds latency from the send.
    let srv = Server::start(|s, i| {
        if i == 5 {
            std::thread::sleep(Duration::from_millis(200));
        }
        s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")?;
        Ok(true)
    });
    let mut cfg = config(&srv.url(), StopCondition::Requests(60));
    cfg.arrival = Arrival::Constant(200.0);
    cfg.concurrency = 1;
    cfg.threads = 1;
    let r = run_ok(&cfg);
    let info = r.rate.unwrap();
    assert_eq!(r.complete_requests, 60);
    assert!(
        r.latency_us.p90 > 2 * info.latency_uncorrected_us.p90,
        "{r:?}"
    );
    assert!(info.late_sends > 0);
}

#[test]
fn sends_a_stalled_connection_held_back_are_dropped_not_lost() {
    // One connection; the server holds its fourth answer past the end of
    // the run (a server that is not scheduled, as on a loaded machine), so
    // every later send of the schedule finds no free connection.
    let srv = Server::start(|s, i| {
        if i == 3 {
            std::thread::sleep(Duration::from_millis(800));
        }
        s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")?;
        Ok(true)
    });
    let mut cfg = config(
        &srv.url(),
        StopCondition::Duration(Duration::from_millis(300)),
    );
    cfg.arrival = Arrival::Constant(200.0);
    cfg.concurrency = 1;
    cfg.threads = 1;
    let r = run_ok(&cfg);
    let info = r.rate.unwrap();
    let sent = r.complete_requests + r.failed_requests + r.in_flight_at_end;
    assert!((1..=4).contains(&sent), "sent {sent}: {r:?}");
    // 60 sends intended in 0.3 s: each one went out or is reported
    // dropped, at the end, never sent.
    assert!(sent + info.dropped_sends >= 60, "{info:?}, sent {sent}");
    assert!(info.dropped_sends <= 60, "{info:?}");
}

#[test]
fn ctrl_c_interrupts_with_partial_numbers() {
    let srv = Server::start(ok_response("c"));
    let cfg = config(&srv.url(), StopCondition::Duration(Duration::from_secs(60)));
    let ctl = RunControl::default();
    let t0 = Instant::now();
    let r = std::thread::scope(|s| {
        let h = s.spawn(|| run(&cfg, &ctl).unwrap());
        while ctl.progress.completed.load(Ordering::Relaxed) < 100 {
            std::thread::sleep(Duration::from_millis(5));
        }
        ctl.stop.store(true, Ordering::Relaxed);
        h.join().unwrap()
    });
    assert!(r.interrupted);
    assert!(r.complete_requests >= 100);
    assert!(t0.elapsed() < Duration::from_secs(10));
}

#[test]
fn warmup_is_not_counted() {
    let srv = Server::start(ok_response("w"));
    let mut cfg = config(&srv.url(), StopCondition::Requests(500));
    cfg.warmup = Some(Duration::from_millis(100));
    let r = run_ok(&cfg);
    assert_eq!((r.complete_requests, r.failed_requests), (500, 0));
    // The server counts a request before answering it, and every answer has arrived.
    let served = srv.count.load(Ordering::SeqCst);
    assert!(
        served > 500,
        "warm-up requests reached the server too ({served})"
    );
    assert!((r.warmup_s - 0.1).abs() < 1e-9);
}

/// A warm-up longer than u64 nanoseconds, stopped while it runs: the
/// report says the warm-up that ran and no measured time (it said the
/// configured warm-up wrapped: `--warmup 1e13s` as 1 864 712 049 s).
#[test]
fn a_run_stopped_in_its_warm_up_reports_the_warm_up_that_ran() {
    let srv = Server::start(ok_response("w"));
    let mut cfg = config(&srv.url(), StopCondition::Requests(3));
    cfg.warmup = Some(Duration::from_secs(10_000_000_000_000));
    let ctl = RunControl::default();
    let t0 = Instant::now();
    let r = std::thread::scope(|s| {
        let h = s.spawn(|| run(&cfg, &ctl).unwrap());
        while srv.count.load(Ordering::SeqCst) < 10 {
            std::thread::sleep(Duration::from_millis(5));
        }
        ctl.stop.store(true, Ordering::Relaxed);
        h.join().unwrap()
    });
    let ran = t0.elapsed().as_secs_f64();
    assert!(r.interrupted);
    assert!(
        r.warmup_s > 0.0 && r.warmup_s <= ran,
        "{} of {ran} s",
        r.warmup_s
    );
    assert_eq!((r.duration_s, r.complete_requests), (0.0, 0));
}

#[test]
fn gnuplot_file_has_one_line_per_request() {
    let srv = Server::start(ok_response("g"));
    // A directory of its own: the epoll and io_uring runs of this test run at once.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.tsv");
    let mut cfg = config(&srv.url(), StopCondition::Requests(250));
    cfg.gnuplot_file = Some(super::GnuplotFile {
        path: path.clone(),
        file: std::sync::Arc::new(std::fs::File::create(&path).unwrap()),
        header: kurabe_report::ab_gnuplot::HEADER,
        line: kurabe_report::ab_gnuplot::line,
    });
    let r = run_ok(&cfg);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(r.complete_requests, 250);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "starttime\tseconds\tctime\tdtime\tttime\twait");
    assert_eq!(lines.len(), 251);
    assert!(lines[1..].iter().all(|l| l.split('\t').count() == 6));
}

#[test]
fn setup_errors_are_errors() {
    let cfg = config("http://no-such-host.invalid/", StopCondition::Requests(1));
    assert!(matches!(
        run(&cfg, &RunControl::default()),
        Err(LoadError::Resolve { .. })
    ));
    let mut cfg = config("http://127.0.0.1:1/", StopCondition::Requests(1));
    cfg.concurrency = 0;
    assert!(matches!(
        run(&cfg, &RunControl::default()),
        Err(LoadError::Config(_))
    ));
}

/// Self-signed P-256 certificate for localhost / 127.0.0.1 (test only, valid to 2126).
const TEST_CERT: &str = "-----BEGIN CERTIFICATE-----
MIIBnDCCAUGgAwIBAgIUXIqTQj0ow03n8MBt8rbYyRztvqkwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyOTIyNDgyOFoYDzIxMjYxMTA1
MjI0ODI4WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAATyOBMGMHd48u8PdcCPZYQxs61XGF+3m2ePdTZL1atvh4WasiVyqTBM
tfTNXNBazKa6xS/20ea37ULeyMh/dQpdo28wbTAdBgNVHQ4EFgQU9scDguN8PylE
JjueKc1AnS8uBNkwHwYDVR0jBBgwFoAU9scDguN8PylEJjueKc1AnS8uBNkwDwYD
VR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwCgYIKoZI
zj0EAwIDSQAwRgIhALQA8jPEsUHxtL1Q0egT/pdh6ASZtOAjBbDsA9PQXIqcAiEA
2GjxHhFxByRFgJiDaoM0eYDBcXWbQkGb0MulEciL4Ts=
-----END CERTIFICATE-----
";
const TEST_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgIRhM8blO28xVD17Y
k+pdr3aj4axZYwEESjSSVDObz/6hRANCAATyOBMGMHd48u8PdcCPZYQxs61XGF+3
m2ePdTZL1atvh4WasiVyqTBMtfTNXNBazKa6xS/20ea37ULeyMh/dQpd
-----END PRIVATE KEY-----
";

/// An HTTPS server (rustls, blocking, thread per connection) answering "tls!" with keep-alive.
fn tls_server() -> Server {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = vec![CertificateDer::from_pem_slice(TEST_CERT.as_bytes()).unwrap()];
    let key = PrivateKeyDer::from_pem_slice(TEST_KEY.as_bytes()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicU64::new(0));
    let c2 = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            stream.set_nodelay(true).unwrap();
            let (count, config) = (c2.clone(), config.clone());
            std::thread::spawn(move || {
                let conn = rustls::ServerConnection::new(config).unwrap();
                let mut tls = rustls::StreamOwned::new(conn, stream);
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    while let Some(end) = find(&buf, b"\r\n\r\n") {
                        let close = find(&buf[..end], b"Connection: close").is_some();
                        buf.drain(..end + 4);
                        count.fetch_add(1, Ordering::SeqCst);
                        let hdr = if close { "Connection: close\r\n" } else { "" };
                        let resp = format!("HTTP/1.1 200 OK\r\n{hdr}Content-Length: 4\r\n\r\ntls!");
                        if tls
                            .write_all(resp.as_bytes())
                            .and_then(|_| tls.flush())
                            .is_err()
                            || close
                        {
                            tls.conn.send_close_notify();
                            let _ = tls.flush();
                            return;
                        }
                    }
                    match tls.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    Server { port, count }
}

#[test]
fn https_with_and_without_keep_alive() {
    let srv = tls_server();
    let url = format!("https://127.0.0.1:{}/", srv.port);
    let mut cfg = config(&url, StopCondition::Requests(200));
    cfg.insecure = true;
    let r = run_ok(&cfg);
    assert_eq!(
        (r.complete_requests, r.failed_requests),
        (200, 0),
        "{:?}",
        r.failures
    );
    assert_eq!(r.document_length_bytes, 4);
    cfg.protocol = H1_CLOSE;
    cfg.stop = StopCondition::Requests(20);
    let r = run_ok(&cfg);
    assert_eq!(
        (r.complete_requests, r.failed_requests),
        (20, 0),
        "{:?}",
        r.failures
    );
    assert_eq!(srv.count_settles_at(220), 220);
}

#[test]
fn https_untrusted_certificate_fails_to_connect() {
    let srv = tls_server();
    let cfg = config(
        &format!("https://127.0.0.1:{}/", srv.port),
        StopCondition::Requests(6),
    );
    match run(&cfg, &RunControl::default()) {
        // A machine without CA certificates: a setup error that names --insecure.
        Err(LoadError::Tls(msg)) => assert!(msg.contains("--insecure"), "{msg}"),
        Ok(r) => assert_eq!(r.failures.connect, 6, "{:?}", r.failures),
        Err(e) => panic!("unexpected error: {e}"),
    }
}

/// Run the named tests again on the io_uring engine (same assertions).
macro_rules! on_io_uring {
    ($($name:ident),* $(,)?) => {
        mod io_uring {
            $(
                #[test]
                fn $name() {
                    super::ENGINE.with(|e| e.set(super::Engine::IoUring));
                    super::$name();
                }
            )*
        }
    };
}

on_io_uring!(
    keep_alive_issues_exactly_n_requests,
    without_keep_alive_every_request_has_its_own_connection,
    server_connection_close_is_honoured_without_failures,
    chunked_and_close_delimited_bodies,
    head_interim_and_bodiless_statuses,
    refused_connections_are_connect_failures,
    reset_mid_body_is_a_receive_failure,
    short_body_then_close_is_a_length_failure,
    differing_document_length_is_a_length_failure_unless_disabled,
    garbage_status_line_is_an_exception,
    a_server_that_never_answers_times_out,
    time_limit_counts_reconcile_with_the_server,
    pipelining_issues_exactly_n,
    a_large_body_is_sent_whole_from_one_copy_pipelined,
    rate_is_held_and_latency_is_corrected,
    ctrl_c_interrupts_with_partial_numbers,
    warmup_is_not_counted,
    gnuplot_file_has_one_line_per_request,
);

#[test]
fn a_worker_panic_ends_the_run_with_an_error() {
    let srv = Server::start(ok_response("hello"));
    super::engine::panic_hook::arm(srv.port);
    // Without the fix the other worker runs to the end and the panic is
    // re-raised; with -t 60 the test would take a minute, so a quick return
    // also shows the surviving worker was stopped.
    let mut cfg = config(&srv.url(), StopCondition::Duration(Duration::from_secs(60)));
    cfg.threads = 2;
    let started = Instant::now();
    let err = run(&cfg, &RunControl::default()).unwrap_err();
    assert!(
        matches!(&err, LoadError::WorkerPanic { message, .. } if message.contains("test hook")),
        "{err}"
    );
    assert!(err.to_string().contains("internal error"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn io_uring_refused_falls_back_or_fails_by_choice() {
    let enomem = || Err(std::io::Error::from_raw_os_error(libc::ENOMEM));
    // auto, where it would prefer io_uring: epoll instead of a failed run.
    let auto = Engine::Auto.resolve_with(false, true, enomem).unwrap();
    assert_eq!(auto, Engine::Epoll);
    assert_eq!(
        Engine::Auto.resolve_with(false, true, || Ok(())).unwrap(),
        Engine::IoUring
    );
    // explicit io_uring: a setup error naming the cause and the way out, no request sent.
    let srv = Server::start(ok_response("hello"));
    let mut cfg = config(&srv.url(), StopCondition::Requests(10));
    cfg.engine = Engine::IoUring;
    super::engine::uring::refuse::set(Some(libc::ENOMEM));
    let err = run(&cfg, &RunControl::default()).unwrap_err();
    let sent = srv.count.load(Ordering::SeqCst);
    cfg.engine = Engine::Auto;
    let auto = run(&cfg, &RunControl::default());
    super::engine::uring::refuse::set(None);
    let msg = err.to_string();
    assert!(matches!(err, LoadError::Config(_)), "{msg}");
    assert!(
        msg.contains("--engine io_uring") && msg.contains("ulimit -l"),
        "{msg}"
    );
    assert!(msg.contains("--engine epoll"), "{msg}");
    assert_eq!(sent, 0);
    let auto = auto.unwrap();
    assert_eq!(auto.complete_requests, 10);
    assert_eq!(auto.engine.as_deref(), Some("epoll"));
}
