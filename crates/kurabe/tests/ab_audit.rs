//! ab's report lines that `abflags` does not cover, end to end through the
//! built binary: "Write errors" (a request that could not be sent), and
//! the lines of flags compared with what `/usr/bin/ab` prints against the
//! same loopback server.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};

use crate::abflags::{ab, assert_same_shape, kurabe_out, self_signed, SServer};
use crate::http::{http, http_failed, read_request, TestServer};
use crate::serve::ServeChild;

/// Close `s` with a reset (SO_LINGER 0) instead of an orderly FIN.
fn reset(s: TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt on a socket we own with a valid linger struct of the given size.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as u32,
        )
    };
    assert_eq!(rc, 0, "SO_LINGER: {}", std::io::Error::last_os_error());
    drop(s);
}

/// A server that reads the first 64 KiB of each request (so the client is
/// surely sending) and then resets the connection: the rest of a large
/// body can no longer be written.
fn resets_mid_request() -> TestServer {
    TestServer::start(|mut s| {
        let mut first = vec![0u8; 64 * 1024];
        if s.read_exact(&mut first).is_ok() {
            reset(s);
        }
    })
}

#[test]
fn a_request_the_server_resets_mid_body_is_a_write_error() {
    let server = resets_mid_request();
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body.bin");
    // Far more than loopback's socket buffers hold while the server reads nothing.
    std::fs::write(&body, vec![b'x'; 16 << 20]).unwrap();
    let b = body.to_str().unwrap();
    for engine in ["epoll", "io_uring"] {
        let args = ["-n", "6", "--engine", engine, "-p", b, &server.url()];
        let (r, _) = http_failed(&args, "write");
        assert_eq!(r.failures.write, 6, "{engine}: {:?}", r.failures);
        assert_eq!((r.failures.exceptions, r.failed_requests), (0, 6));
        assert!(
            r.errors[0].first_error.starts_with("send: "),
            "{engine}: {:?}",
            r.errors
        );
    }
    let out = http(&["-n", "2", "-p", b, &server.url()]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stdout.contains(
            "\nFailed requests:        2\n   \
             (Connect: 0, Receive: 0, Length: 0, Exceptions: 0)\n\
             Write errors:           2\n"
        ),
        "{}",
        out.stdout
    );
}

#[test]
fn socket_buffer_and_local_address_leave_abs_report_as_ab_prints_it() {
    for args in [
        &["-n", "20", "-b", "65536"][..],
        &["-n", "20", "-c", "2", "-B", "127.0.0.1"][..],
        &["-n", "20", "-k", "-b", "8192", "-B", "127.0.0.1"][..],
    ] {
        assert_same_shape(args, "Server Software:");
    }
}

/// A proxy that keeps every request head and answers 200 itself.
fn recording_proxy() -> (TestServer, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let server = TestServer::start(move |mut s| {
        if let Some((head, _)) = read_request(&mut s) {
            log.lock().unwrap().push(head);
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nConnection: close\r\n\r\nvia-proxy",
            );
        }
    });
    (server, seen)
}

/// The lines of a request head a proxy acts on: the request target and
/// the credentials, plus Host (the version and User-Agent differ by design).
fn proxy_facts(head: &str) -> Vec<String> {
    let mut lines = head.lines();
    let first = lines.next().unwrap();
    let target = first.rsplit_once(' ').unwrap().0.to_owned();
    let mut facts: Vec<String> = lines
        .filter(|l| l.starts_with("Proxy-Authorization:") || l.starts_with("Host:"))
        .map(str::to_owned)
        .collect();
    facts.sort();
    facts.insert(0, target);
    facts
}

#[test]
fn proxy_and_its_credentials_reach_the_proxy_as_abs_do() {
    let (server, seen) = recording_proxy();
    let addr = server.addr.to_string();
    let target = "http://origin.invalid:8080/page?x=1";
    let args = ["-n", "1", "-X", &addr, "-P", "user:s3cret"];
    let theirs = ab(&args, target);
    let ours = kurabe_out(&args, target);
    let heads = seen.lock().unwrap().clone();
    assert_eq!(heads.len(), 2, "{heads:?}");
    assert_eq!(proxy_facts(&heads[1]), proxy_facts(&heads[0]));
    assert_eq!(
        proxy_facts(&heads[0])[0],
        "GET http://origin.invalid:8080/page?x=1"
    );
    // The report names the origin, not the proxy, in both.
    for text in [&theirs, &ours] {
        assert!(
            text.contains("Server Hostname:        origin.invalid\nServer Port:            8080\n"),
            "{text}"
        );
    }
}

/// The `-v` log of ab or kurabe: what comes before the report, without
/// ab's banner and the request head (HTTP/1.0 and ab's User-Agent there).
fn verbose_log(text: &str) -> Vec<String> {
    let log = text.split("Server Software:").next().unwrap();
    let log = log.rsplit("\n---\n").next().unwrap();
    log.lines()
        .filter(|l| !l.is_empty() && !l.starts_with("..done"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn verbose_levels_log_what_ab_logs_for_every_status() {
    for status in ["200", "404"] {
        let server = ServeChild::start(&["--status", status]);
        for v in ["2", "3", "4"] {
            let args = ["-n", "2", "-v", v];
            let theirs = verbose_log(&ab(&args, &server.url));
            let out = http(&["-n", "2", "-v", v, &server.url]);
            let ours = verbose_log(&out.stdout);
            assert!(!theirs.is_empty());
            assert_eq!(ours, theirs, "-v {v} against a {status} server");
        }
    }
}

/// ab's TLS lines ("SSL/TLS Protocol", "Server Temp Key", "TLS Server Name") in a report.
fn tls_lines(text: &str) -> Vec<&str> {
    const HEADS: [&str; 3] = ["SSL/TLS Protocol:", "Server Temp Key:", "TLS Server Name:"];
    text.lines()
        .filter(|l| HEADS.iter().any(|h| l.starts_with(h)))
        .collect()
}

#[test]
fn tls_protocol_cipher_and_key_lines_are_abs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    self_signed(d, "server");
    let server = SServer::start(d, &[]);
    for extra in [
        &[][..],
        &["-f", "TLS1.2", "-Z", "ECDHE-ECDSA-AES128-GCM-SHA256"][..],
        &["-f", "TLS1.3", "-Z", "TLS_CHACHA20_POLY1305_SHA256"][..],
    ] {
        let mut args = vec!["-n", "2", "-l"];
        args.extend_from_slice(extra);
        let theirs = ab(&args, &server.url);
        args.push("--insecure");
        let ours = kurabe_out(&args, &server.url);
        assert_eq!(tls_lines(&ours), tls_lines(&theirs), "{extra:?}");
        assert_eq!(tls_lines(&ours).len(), 2, "{ours}");
    }
    let r = crate::http::http_json(&["-n", "1", "-l", "--insecure", "-f", "TLS1.2", &server.url]);
    let tls = r.tls.expect("an https run records its TLS summary");
    assert_eq!(
        (tls.protocol.as_str(), tls.server_key_bits),
        ("TLSv1.2", Some(256))
    );
    assert_eq!(http_plain_tls(), None);
    server_name_line_and_refused_certificate(&server.url);
}

/// Through a host name, the handshake sends it (SNI) and the report says so
/// as ab does; without --insecure the self-signed certificate is refused in
/// words, with the way out.
fn server_name_line_and_refused_certificate(ip_url: &str) {
    use std::net::ToSocketAddrs;
    let url = ip_url.replace("127.0.0.1", "localhost");
    let ours = kurabe_out(&["-n", "2", "--insecure"], &url);
    assert!(
        ours.contains("\nTLS Server Name:        localhost\n"),
        "{ours}"
    );
    // ab takes the first address only: compare where that is the server's.
    let first = ("localhost", 443)
        .to_socket_addrs()
        .unwrap()
        .next()
        .unwrap();
    if first.ip() == std::net::Ipv4Addr::LOCALHOST {
        assert_eq!(tls_lines(&ours), tls_lines(&ab(&["-n", "2"], &url)));
    }
    let out = http(&["-n", "2", &url]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let why = out.stderr.lines().last().unwrap_or_default();
    assert!(
        why.contains("certificate was refused")
            && why.contains("--insecure")
            && !why.contains("Other("),
        "{why}"
    );
}

/// A plain http:// run has no TLS summary.
fn http_plain_tls() -> Option<kurabe_model::http::TlsSummary> {
    let server = ServeChild::start(&[]);
    crate::http::http_json(&["-n", "1", &server.url]).tls
}
