//! ab's remaining flags of `kurabe http`, end to end: the text, HTML and
//! `-e` CSV compared with what `/usr/bin/ab` prints against the same
//! loopback server (numbers aside, which differ run to run); `-v`; the
//! keep-alive and reconnect counts; a proxy in the test that checks the
//! absolute-form request line and `Proxy-Authorization`; `-B`; and a TLS
//! server (`openssl s_server`) that demands a client certificate.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use crate::http::{closed_port, http, http_json, read_request, TestServer};
use crate::serve::ServeChild;

/// ab's output for `args` against `url` (ab is installed with the test tools).
pub(crate) fn ab(args: &[&str], url: &str) -> String {
    let out = Command::new("ab")
        .arg("-q")
        .args(args)
        .arg(url)
        .output()
        .expect("ab(1) is installed");
    assert!(
        out.status.success(),
        "ab {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// kurabe's output for `args` against `url`, which must succeed.
pub(crate) fn kurabe_out(args: &[&str], url: &str) -> String {
    let mut full = args.to_vec();
    full.push(url);
    let out = http(&full);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    out.stdout
}

/// A line with every number as `#` and every run of spaces as one space:
/// the structure that must match ab's, whatever the timings.
fn shape_line(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|n| n.is_ascii_digit() || *n == '.')
            {
                chars.next();
            }
            out.push('#');
        } else if c == ' ' {
            while chars.peek() == Some(&' ') {
                chars.next();
            }
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

/// The report part of ab's or kurabe's output, from `first` (ab's banner
/// and kurabe's own section below ab's layout cut off), as shapes. ab's
/// reliability warnings depend on the timings, so they are left out.
fn shape(text: &str, first: &str) -> Vec<String> {
    let start = text.find(first).expect("the report is there");
    let body = &text[start..];
    let body = body.split("\nLatency (ms)\n").next().unwrap();
    body.lines()
        .filter(|l| {
            !(l.starts_with("ERROR: The median")
                || l.starts_with("WARNING: The median")
                || l.starts_with("       deviation apart")
                || l.starts_with("        These results are"))
        })
        .map(shape_line)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .skip_while(|l| l.is_empty())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect()
}

pub(crate) fn assert_same_shape(args: &[&str], first: &str) {
    let server = ServeChild::start(&[]);
    let theirs = shape(&ab(args, &server.url), first);
    let ours = shape(&kurabe_out(args, &server.url), first);
    assert_eq!(ours, theirs, "kurabe http {args:?} vs ab");
}

#[test]
fn text_report_has_abs_lines_in_abs_order() {
    assert_same_shape(&["-n", "20", "-c", "2", "-k"], "Server Software:");
    assert_same_shape(&["-n", "20", "-c", "2"], "Server Software:");
    // -l: ab prints "Document Length: Variable" instead of a byte count.
    assert_same_shape(&["-n", "20", "-c", "2", "-l"], "Server Software:");
}

#[test]
fn dash_s_and_dash_d_drop_what_they_drop_in_ab() {
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body.txt");
    std::fs::write(&body, "hello=world").unwrap();
    let b = body.to_str().unwrap();
    assert_same_shape(&["-n", "20", "-c", "2", "-S"], "Server Software:");
    assert_same_shape(&["-n", "20", "-d", "-p", b], "Server Software:");
    assert_same_shape(&["-n", "20", "-S", "-d", "-k"], "Server Software:");
}

#[test]
fn html_table_matches_abs_with_the_attributes() {
    assert_same_shape(&["-n", "20", "-c", "2", "-k", "-w"], "<table");
    let attrs = [
        "-n",
        "10",
        "-x",
        "border=1",
        "-y",
        "valign=top",
        "-z",
        "class=c",
    ];
    assert_same_shape(&attrs, "<table");
    let server = ServeChild::start(&[]);
    let ours = kurabe_out(&attrs, &server.url);
    assert!(
        ours.starts_with(
            "<table border=1>\n<tr valign=top><th colspan=2 class=c>Server Software:</th>"
        ),
        "{ours}"
    );
    assert!(ours.ends_with("</table>\n"));
    let out = http(&["-w", "--format", "json", &server.url]);
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr
            .contains("-w (or -x/-y/-z) prints ab's HTML table"),
        "{}",
        out.stderr
    );
}

/// The `-e` file's rows: (percent, milliseconds text).
fn csv_rows(path: &Path) -> (String, Vec<(u32, String)>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().to_owned();
    let rows = lines
        .map(|l| {
            let (p, t) = l.split_once(',').unwrap();
            (p.parse().unwrap(), t.to_owned())
        })
        .collect();
    (header, rows)
}

#[test]
fn percent_csv_has_abs_101_rows_in_abs_format() {
    let server = ServeChild::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (a, k) = (dir.path().join("ab.csv"), dir.path().join("k.csv"));
    ab(&["-n", "50", "-e", a.to_str().unwrap()], &server.url);
    kurabe_out(&["-n", "50", "-e", k.to_str().unwrap()], &server.url);
    let (ab_header, ab_rows) = csv_rows(&a);
    let (header, rows) = csv_rows(&k);
    assert_eq!(header, ab_header);
    assert_eq!(rows.len(), 101);
    assert_eq!(rows.len(), ab_rows.len());
    let mut last = 0.0;
    for (i, (p, t)) in rows.iter().enumerate() {
        assert_eq!(*p as usize, i);
        let (whole, frac) = t.split_once('.').unwrap();
        assert!(
            whole.bytes().all(|b| b.is_ascii_digit()) && frac.len() == 3,
            "{t}"
        );
        let ms: f64 = t.parse().unwrap();
        assert!(ms >= last, "row {i}: {ms} < {last}");
        last = ms;
    }
}

#[test]
fn verbose_prints_abs_log_lines_not_debug_text() {
    let server = ServeChild::start(&[]);
    let theirs = ab(&["-n", "3", "-v", "4"], &server.url);
    let ours = kurabe_out(&["-n", "3", "-v", "4"], &server.url);
    for text in [&theirs, &ours] {
        assert!(
            text.contains("INFO: GET header == \n---\nGET / HTTP/1."),
            "{text}"
        );
        assert_eq!(
            text.matches("LOG: header received:\nHTTP/1.1 200 OK\r\n")
                .count(),
            3
        );
        assert_eq!(text.matches("\nLOG: Response code = 200\n").count(), 3);
    }
    assert!(
        !ours.contains("Requests(") && !ours.contains("Some("),
        "{ours}"
    );
    let json = http(&["-n", "2", "-v", "2", "--format", "json", &server.url]);
    let _: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON stays clean");
    assert_eq!(json.stderr.matches("LOG: header received:").count(), 2);
}

#[test]
fn keep_alive_requests_count_real_reuse_and_reconnects_are_reported() {
    let server = ServeChild::start(&[]);
    let r = http_json(&["-n", "10", "-k", &server.url]);
    assert_eq!((r.keep_alive_requests, r.reconnects), (9, 0));
    let r = http_json(&["-n", "10", &server.url]);
    assert_eq!((r.keep_alive_requests, r.reconnects), (0, 0));
    let closing = ServeChild::start(&["--close"]);
    let r = http_json(&["-n", "10", "-k", &closing.url]);
    assert_eq!(r.complete_requests, 10);
    assert_eq!((r.keep_alive_requests, r.reconnects), (0, 9));
    let text = kurabe_out(&["-n", "10", "-k"], &closing.url);
    assert!(text.contains("\nKeep-Alive requests:    0\n"), "{text}");
    assert!(
        text.contains("\nReconnects:             9 (the server ended keep-alive connections)\n")
    );
}

/// A proxy that answers itself: 200 when the request is in absolute form
/// with the expected credentials, else 407; it keeps every request head.
fn proxy(expect_auth: &'static str) -> (TestServer, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let server = TestServer::start(move |mut s| {
        let Some((head, _)) = read_request(&mut s) else {
            return;
        };
        let ok = head.starts_with("GET http://origin.invalid:8080/page?x=1 HTTP/1.1\r\n")
            && head.contains(&format!("\r\nProxy-Authorization: Basic {expect_auth}\r\n"));
        log.lock().unwrap().push(head);
        let reply: &[u8] = if ok {
            b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nConnection: close\r\n\r\nvia-proxy"
        } else {
            b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        };
        let _ = s.write_all(reply);
    });
    (server, seen)
}

#[test]
fn proxy_gets_absolute_form_and_credentials_that_never_show() {
    // base64("user:s3cret")
    let (server, seen) = proxy("dXNlcjpzM2NyZXQ=");
    let addr = server
        .url()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let target = "http://origin.invalid:8080/page?x=1";
    let r = http_json(&["-n", "3", "-X", &addr, "-P", "user:s3cret", target]);
    assert_eq!((r.complete_requests, r.non_2xx_responses), (3, 0));
    assert_eq!(r.body_bytes, 27);
    assert_eq!(seen.lock().unwrap().len(), 3);
    assert!(seen.lock().unwrap()[0].contains("\r\nHost: origin.invalid:8080\r\n"));
    let wrong = http_json(&["-n", "2", "-X", &addr, "-P", "user:wrong", target]);
    assert_eq!(wrong.non_2xx_responses, 2);
    let out = http(&[
        "-n",
        "1",
        "-v",
        "4",
        "-X",
        &addr,
        "-P",
        "user:s3cret",
        target,
    ]);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(all.contains("Proxy-Authorization: [masked]"), "{all}");
    assert!(
        !all.contains("s3cret") && !all.contains("dXNlcjpzM2NyZXQ="),
        "{all}"
    );
    let out = http(&["-n", "1", "-X", &addr, "-P", "s3cret", target]);
    assert_eq!(out.code, Some(2));
    assert!(out
        .stderr
        .contains("-P: proxy credentials are user:password"));
    assert!(!out.stderr.contains("s3cret"), "{}", out.stderr);
    let out = http(&["-n", "1", "-X", &addr, "https://origin.invalid/"]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
}

#[test]
fn bind_address_and_socket_buffer_apply_to_every_connection() {
    let peers = Arc::new(Mutex::new(Vec::new()));
    let log = peers.clone();
    let server = TestServer::start(move |mut s| {
        log.lock()
            .unwrap()
            .push(s.peer_addr().unwrap().ip().to_string());
        if read_request(&mut s).is_some() {
            let _ =
                s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        }
    });
    let r = http_json(&["-n", "4", "-B", "127.0.0.2", "-b", "65536", &server.url()]);
    assert_eq!(r.complete_requests, 4);
    assert_eq!(*peers.lock().unwrap(), vec!["127.0.0.2"; 4]);
    for (args, msg) in [
        (&["-b", "0"][..], "-b 0: give the socket buffer size"),
        (
            &["-B", "nowhere"][..],
            "-B 'nowhere': give a local IP address",
        ),
        (&["-B", "::1"][..], "of the other IP family"),
    ] {
        let url = format!("http://127.0.0.1:{}/", closed_port());
        let mut full: Vec<&str> = args.to_vec();
        full.push(&url);
        let out = http(&full);
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(msg), "{}", out.stderr);
    }
}

/// `&[String]` as the `&[&str]` the helpers take.
fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// `openssl s_server -www` on 127.0.0.1:0, killed on drop.
pub(crate) struct SServer {
    child: Child,
    pub(crate) url: String,
}

impl SServer {
    pub(crate) fn start(dir: &Path, extra: &[&str]) -> SServer {
        let mut child = Command::new("openssl")
            .args([
                "s_server",
                "-accept",
                "127.0.0.1:0",
                "-www",
                "-cert",
                "server.pem",
            ])
            .args(["-key", "server.key"])
            .args(extra)
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("openssl(1) is installed");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let port = loop {
            let line = lines
                .next()
                .expect("s_server says where it listens")
                .unwrap();
            if let Some(addr) = line.strip_prefix("ACCEPT ") {
                break addr.rsplit(':').next().unwrap().to_owned();
            }
        };
        std::thread::spawn(move || lines.for_each(drop));
        SServer {
            child,
            url: format!("https://127.0.0.1:{port}/"),
        }
    }
}

impl Drop for SServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A self-signed P-256 certificate `name.pem` and key `name.key` in `dir`.
pub(crate) fn self_signed(dir: &Path, name: &str) {
    let status = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .args(["-nodes", "-days", "2", "-subj", &format!("/CN={name}")])
        .args([
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.pem"),
        ])
        .current_dir(dir)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn client_certificate_opens_a_server_that_demands_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    self_signed(d, "server");
    self_signed(d, "client");
    let bundle = d.join("bundle.pem");
    let mut pem = std::fs::read(d.join("client.pem")).unwrap();
    pem.extend(std::fs::read(d.join("client.key")).unwrap());
    std::fs::write(&bundle, pem).unwrap();
    let server = SServer::start(d, &["-Verify", "1", "-CAfile", "client.pem"]);
    let b = bundle.to_str().unwrap();
    let url = server.url.clone();
    let with = |extra: &[&str]| -> Vec<String> {
        let all = ["-n", "2", "-l", "--insecure"].iter().chain(extra);
        all.map(|s| s.to_string()).chain([url.clone()]).collect()
    };
    let r = http_json(&strs(&with(&["-E", b])));
    assert_eq!((r.complete_requests, r.failed_requests), (2, 0));
    let r = http_json(&strs(&with(&[
        "-E",
        b,
        "-f",
        "TLS1.3",
        "-Z",
        "TLS_AES_256_GCM_SHA384",
    ])));
    assert_eq!(r.complete_requests, 2);
    let r = http_json(&strs(&with(&[
        "-E",
        b,
        "-f",
        "tls1.2",
        "-Z",
        "ECDHE-ECDSA-AES128-GCM-SHA256",
    ])));
    assert_eq!(r.complete_requests, 2);
    let without = http(&strs(&with(&[])));
    assert_eq!(
        without.code,
        Some(1),
        "a server demanding a certificate refuses us"
    );
    let key_only = d.join("client.key");
    let out = http(&strs(&with(&["-E", key_only.to_str().unwrap()])));
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("no CERTIFICATE in the file"),
        "{}",
        out.stderr
    );
    for (flag, value, msg) in [
        (
            "-f",
            "TLS1.1",
            "-f TLS1.1: rustls implements TLS 1.2 and 1.3 only",
        ),
        (
            "-Z",
            "RC4-SHA",
            "-Z: unknown or unsupported cipher suite 'RC4-SHA'",
        ),
    ] {
        let out = http(&strs(&with(&[flag, value])));
        assert_eq!(out.code, Some(2));
        assert!(out.stderr.contains(msg), "{}", out.stderr);
    }
    let out = http(&["-E", b, "http://127.0.0.1:9/"]);
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("apply to https:// URLs"));
}
