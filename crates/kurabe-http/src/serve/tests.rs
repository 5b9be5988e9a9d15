//! In-process tests of the server over real loopback sockets.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{url_of, ServeConfig, ServeStats, Server};
use std::sync::Arc;

fn start(cfg: ServeConfig) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    Server::start(listener, cfg).unwrap()
}

fn connect(server: &Server) -> TcpStream {
    let s = TcpStream::connect(server.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// Read until `n` complete responses with `Content-Length` bodies have arrived.
fn read_responses(s: &mut TcpStream, n: usize) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&got).to_string();
        if count_complete(&text) >= n {
            return text;
        }
        let k = s.read(&mut buf).unwrap();
        assert!(k > 0, "server closed early after {text:?}");
        got.extend_from_slice(&buf[..k]);
    }
}

fn count_complete(text: &str) -> usize {
    let mut count = 0;
    let mut rest = text;
    while let Some(head_end) = rest.find("\r\n\r\n") {
        let head = &rest[..head_end];
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .map_or(0, |v| v.parse().unwrap());
        if rest.len() < head_end + 4 + len {
            break;
        }
        count += 1;
        rest = &rest[head_end + 4 + len..];
    }
    count
}

fn read_to_close(s: &mut TcpStream) -> String {
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn keep_alive_and_pipelined_requests_are_answered_in_order_and_counted() {
    let server = start(ServeConfig {
        body_bytes: 3,
        threads: 2,
        ..ServeConfig::default()
    });
    let mut s = connect(&server);
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let first = read_responses(&mut s, 1);
    assert!(
        first.starts_with("HTTP/1.1 200 OK\r\n") && first.ends_with("xx\n"),
        "{first}"
    );
    s.write_all(&b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".repeat(5))
        .unwrap();
    let text = read_responses(&mut s, 5);
    assert_eq!(text.matches("HTTP/1.1 200 OK").count(), 5);
    assert_eq!(server.stats().requests_served.load(Ordering::Relaxed), 6);
    assert_eq!(
        server.stats().connections_accepted.load(Ordering::Relaxed),
        1
    );
}

#[test]
fn http10_and_connection_close_close_the_connection() {
    let server = start(ServeConfig::default());
    let mut s = connect(&server);
    s.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let text = read_to_close(&mut s);
    assert!(text.contains("Connection: close\r\n"), "{text}");
    let mut s = connect(&server);
    s.write_all(b"HEAD / HTTP/1.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let text = read_to_close(&mut s);
    assert!(
        text.ends_with("\r\n\r\n") && text.contains("Content-Length: 13"),
        "{text}"
    );
}

#[test]
fn request_bodies_are_read_with_both_framings() {
    let server = start(ServeConfig::default());
    let mut s = connect(&server);
    s.write_all(b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789")
        .unwrap();
    s.write_all(b"PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n")
        .unwrap();
    s.write_all(b"2\r\nef\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n")
        .unwrap();
    read_responses(&mut s, 3);
    let stats = server.stats();
    assert_eq!(stats.requests_served.load(Ordering::Relaxed), 3);
    assert_eq!(stats.requests_with_body.load(Ordering::Relaxed), 2);
    assert_eq!(stats.body_bytes_received.load(Ordering::Relaxed), 16);
}

#[test]
fn expect_continue_gets_an_interim_response_before_the_body() {
    let server = start(ServeConfig::default());
    let mut s = connect(&server);
    s.write_all(b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 25];
    s.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"HTTP/1.1 100 Continue\r\n\r\n");
    s.write_all(b"abc").unwrap();
    let text = read_responses(&mut s, 1);
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    assert_eq!(
        server.stats().body_bytes_received.load(Ordering::Relaxed),
        3
    );
}

#[test]
fn stats_endpoint_reports_and_is_not_counted() {
    let server = start(ServeConfig::default());
    let mut s = connect(&server);
    s.write_all(b"GET / HTTP/1.1\r\n\r\nGET /__kurabe/stats HTTP/1.1\r\n\r\n")
        .unwrap();
    let text = read_responses(&mut s, 2);
    let json = &text[text.rfind("\r\n\r\n").unwrap() + 4..];
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(v["requests_served"], 1);
    assert_eq!(server.stats().requests_served.load(Ordering::Relaxed), 1);
}

#[test]
fn latency_delays_a_response_without_blocking_other_connections() {
    let server = start(ServeConfig {
        latency_ms: 300,
        threads: 1,
        ..ServeConfig::default()
    });
    let mut slow = connect(&server);
    let start = Instant::now();
    slow.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    // A stats request on another connection of the same single worker is answered at once.
    let mut other = connect(&server);
    other
        .write_all(b"GET /__kurabe/stats HTTP/1.1\r\n\r\n")
        .unwrap();
    read_responses(&mut other, 1);
    let fast = start.elapsed();
    read_responses(&mut slow, 1);
    let delayed = start.elapsed();
    assert!(delayed >= Duration::from_millis(300), "{delayed:?}");
    assert!(fast < delayed, "stats {fast:?} vs delayed {delayed:?}");
}

#[test]
fn a_delayed_response_to_connection_close_is_written_before_the_close() {
    let server = start(ServeConfig {
        latency_ms: 50,
        ..ServeConfig::default()
    });
    for request in [
        &b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n"[..],
        &b"GET / HTTP/1.0\r\n\r\n"[..],
    ] {
        let mut s = connect(&server);
        s.write_all(request).unwrap();
        let text = read_to_close(&mut s);
        assert!(
            text.starts_with("HTTP/1.1 200 OK\r\n") && text.contains("Connection: close\r\n"),
            "{text:?}"
        );
    }
}

#[test]
fn garbage_gets_400_and_close() {
    let server = start(ServeConfig::default());
    let mut s = connect(&server);
    s.write_all(b"\x00\x01garbage\r\n\r\n").unwrap();
    let text = read_to_close(&mut s);
    assert!(text.starts_with("HTTP/1.1 400"), "{text}");
    assert_eq!(server.stats().requests_served.load(Ordering::Relaxed), 0);
}

#[test]
fn leak_and_alloc_are_accounted() {
    let server = start(ServeConfig {
        leak_bytes: 1000,
        alloc_kb: 64,
        ..ServeConfig::default()
    });
    let mut s = connect(&server);
    s.write_all(&b"GET / HTTP/1.1\r\n\r\n".repeat(3)).unwrap();
    read_responses(&mut s, 3);
    assert_eq!(server.stats().leaked_bytes.load(Ordering::Relaxed), 3000);
}

#[test]
fn stop_returns_promptly() {
    let server = start(ServeConfig::default());
    let _idle = connect(&server);
    let t = Instant::now();
    server.stop().unwrap();
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn url_brackets_ipv6() {
    assert_eq!(
        url_of("127.0.0.1:80".parse().unwrap()),
        "http://127.0.0.1:80/"
    );
    assert_eq!(url_of("[::1]:8080".parse().unwrap()), "http://[::1]:8080/");
}

#[test]
fn wait_served_wakes_when_the_goal_is_reached() {
    let stats = Arc::new(ServeStats::default());
    let counter = stats.clone();
    let t = std::thread::spawn(move || (0..3).for_each(|_| counter.note_served()));
    // An hour's timeout: only reaching the goal ends this wait in time.
    assert_eq!(stats.wait_served(3, Duration::from_secs(3600)), 3);
    t.join().unwrap();
    // A goal never reached returns the count when the timeout passes.
    let idle = ServeStats::default();
    assert_eq!(idle.wait_served(1, Duration::from_millis(1)), 0);
}

#[test]
fn service_time_queues_requests_for_one_resource_across_threads() {
    // Five requests on five connections over two worker threads, 20 ms of
    // the one resource each: the last answer cannot come before 100 ms
    // (turns follow each other), however the connections were spread.
    let server = start(ServeConfig {
        service_us: 20_000,
        threads: 2,
        ..ServeConfig::default()
    });
    let start = Instant::now();
    let mut conns: Vec<_> = (0..5).map(|_| connect(&server)).collect();
    for c in &mut conns {
        c.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    }
    for c in &mut conns {
        assert!(read_responses(c, 1).starts_with("HTTP/1.1 200 OK"));
    }
    let all = start.elapsed();
    assert!(all >= Duration::from_millis(100), "{all:?}");
    assert_eq!(server.stats().requests_served.load(Ordering::Relaxed), 5);
}
