//! `kurabe http --http3` end to end: the built binary against Caddy
//! (quic-go) and ngtcp2's example server (C, GnuTLS), two independent
//! HTTP/3 implementations from Debian, each run's counts checked against
//! what the server itself logged, by path; servers that misbehave on
//! purpose (the test kit's, one way each), each failure in its bucket; and
//! the combinations refused in one line before any packet.

use kurabe_testkit::caddy::{free_port, Caddy, Ngtcp2};
use kurabe_testkit::h3bad::{BadH3, Misbehaviour};

use crate::http::{http, http_failed, http_json, http_json_exit};

#[test]
fn n_and_t_against_caddy_equal_its_access_log_by_path() {
    let dir = tempfile::tempdir().unwrap();
    let Some(caddy) = Caddy::serving_www(dir.path()) else {
        return;
    };
    let base = format!("https://localhost:{}", caddy.port());
    let ca = caddy.ca_file().display().to_string();
    let page = format!("{base}/index.html");
    let h3 = ["--http3", "--cacert", &ca, "--streams", "8", "-c", "4"];
    let mut n = h3.to_vec();
    n.extend(["-n", "300", &page]);
    let r = http_json(&n);
    assert_eq!(
        (r.complete_requests, r.failed_requests),
        (300, 0),
        "{:?}",
        r.errors
    );
    assert_eq!((r.protocol.as_str(), r.body_bytes), ("h3", 300 * 26));
    assert_eq!(r.server_software.as_deref(), Some("Caddy"));
    // The TLS block as HTTP/2 fills it, from the QUIC connection's TLS 1.3.
    let tls = r.tls.as_ref().expect("the TLS block");
    assert_eq!((tls.protocol.as_str(), tls.cipher_bits), ("TLSv1.3", 128));
    assert_eq!(tls.cipher, "TLS_AES_128_GCM_SHA256");
    assert_eq!(tls.server_name.as_deref(), Some("localhost"));
    assert!(
        tls.key_exchange.is_some() && tls.server_key_bits.is_some(),
        "{tls:?}"
    );
    let q = r.http3.as_ref().expect("the HTTP/3 block");
    assert_eq!(q.streams, 8);
    assert!(q.handshakes >= 4 && q.handshake_mean_us > 0.0, "{q:?}");
    assert!(q.packets_sent > 0 && q.rtt_mean_us > 0.0, "{q:?}");
    assert_eq!(caddy.h3_logged("/index.html"), 300);
    // -t, another path: completed + failed + in flight is what Caddy logged.
    let a = format!("{base}/a.txt");
    let mut t = h3.to_vec();
    t.extend(["-t", "1", &a]);
    let r = http_json(&t);
    let sent = r.complete_requests + r.failed_requests + r.in_flight_at_end;
    assert!(r.complete_requests > 0, "{:?}", r.errors);
    assert_eq!(r.failed_requests, 0, "{:?}", r.errors);
    assert_eq!(caddy.h3_logged("/a.txt"), sent);
    assert_eq!(caddy.h3_logged("/index.html"), 300);
    assert_eq!(caddy.logged(&["\"proto\""]), 300 + sent, "no other request");
}

#[test]
fn http_version_3_large_bodies_and_the_open_model_against_caddy() {
    let dir = tempfile::tempdir().unwrap();
    let Some(caddy) = Caddy::serving_www(dir.path()) else {
        return;
    };
    let base = format!("https://localhost:{}", caddy.port());
    let big = format!("{base}/big.bin");
    let args = ["--http-version", "3", "--insecure", "--streams", "4"];
    let mut n = args.to_vec();
    // -Z's TLS 1.3 suite carries the requests (Initial packets stay AES-128-GCM).
    n.extend([
        "-Z",
        "TLS_CHACHA20_POLY1305_SHA256",
        "-c",
        "2",
        "-n",
        "24",
        &big,
    ]);
    let r = http_json(&n);
    let cipher = r.tls.as_ref().map(|t| t.cipher.as_str());
    assert_eq!(cipher, Some("TLS_CHACHA20_POLY1305_SHA256"));
    assert_eq!(
        (r.complete_requests, r.failed_requests),
        (24, 0),
        "{:?}",
        r.errors
    );
    assert_eq!(r.body_bytes, 24 * 300_000);
    assert_eq!(caddy.h3_logged("/big.bin"), 24);
    // The open model: 200 requests at 400/s, each answered and logged once.
    let page = format!("{base}/index.html");
    let mut open = args.to_vec();
    open.extend(["-c", "4", "--rate", "400", "-n", "200", &page]);
    let r = http_json(&open);
    assert_eq!(
        (r.complete_requests, r.failed_requests),
        (200, 0),
        "{:?}",
        r.errors
    );
    assert_eq!(r.rate.as_ref().map(|x| x.requested_per_s), Some(400.0));
    assert_eq!(caddy.h3_logged("/index.html"), 200);
    // One server's HTTP/2 against its HTTP/3: one URL, a version each.
    let a = format!("{base}/a.txt");
    let ab = http(&[
        "--http-version",
        "2",
        "--http-version",
        "3",
        "--insecure",
        "-c",
        "2",
        "-n",
        "40",
        "--rounds",
        "2",
        "--format",
        "json",
        &a,
        &a,
    ]);
    assert_eq!(ab.code, Some(0), "{}", ab.stderr);
    let doc: serde_json::Value = serde_json::from_str(&ab.stdout).unwrap();
    let names = [format!("{a} (HTTP/2)"), format!("{a} (HTTP/3)")];
    assert_eq!(doc["urls"], serde_json::json!(names));
    let protocols: Vec<(&str, &str)> = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["url"].as_str().unwrap(),
                r["http"]["protocol"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(protocols.len(), 4, "{protocols:?}");
    for (name, protocol) in protocols {
        let want = if name == names[0] { "h2" } else { "h3" };
        assert_eq!(protocol, want, "{name}");
    }
    assert_eq!(caddy.h3_logged("/a.txt"), 80);
    let h2 = caddy.logged(&["\"proto\":\"HTTP/2.0\"", "\"uri\":\"/a.txt\""]);
    assert_eq!(h2, 80);
}

#[test]
fn a_checked_set_over_http3_counts_each_name_as_caddy_logged_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let Some(caddy) = Caddy::serving_www(dir.path()) else {
        return;
    };
    let base = format!("https://localhost:{}", caddy.port());
    let set = dir.path().join("set.txt");
    let text = format!("# @name page\nGET {base}/index.html\n\n# @name a\nGET {base}/a.txt\n");
    std::fs::write(&set, text).unwrap();
    let set = set.display().to_string();
    let args = [
        "--http3",
        "--insecure",
        "--streams",
        "3",
        "-c",
        "2",
        "--threads",
        "1",
        "-l",
    ];
    let mut ok = args.to_vec();
    ok.extend(["-n", "200", "--targets", &set, "--check", "status==200"]);
    let r = http_json(&ok);
    assert_eq!(
        (r.complete_requests, r.failed_requests),
        (200, 0),
        "{:?}",
        r.errors
    );
    let by_name: Vec<_> = (r.requests.iter())
        .map(|q| (q.name.as_str(), q.complete_requests))
        .collect();
    assert_eq!(by_name, [("page", 100), ("a", 100)]);
    assert_eq!(caddy.h3_logged("/index.html"), 100);
    assert_eq!(caddy.h3_logged("/a.txt"), 100);
    // A body check only the page passes: the other half fails as `check`,
    // its first failure showing the HTTP/3 head and the body.
    let mut half = args.to_vec();
    half.extend(["-n", "100", "--targets", &set, "--check", "body~kurabe"]);
    let (r, _) = http_json_exit(&half, 0);
    assert_eq!(
        (r.complete_requests, r.failures.check),
        (50, 50),
        "{:?}",
        r.errors
    );
    let why = &r.errors[0].first_error;
    assert!(why.contains("HTTP/3 200") && why.contains("aaa"), "{why}");
    assert_eq!(caddy.h3_logged("/a.txt"), 150);
}

#[test]
fn ngtcp2s_server_answers_every_request_it_printed() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = Ngtcp2::serving_www(dir.path()) else {
        return;
    };
    let url = format!("https://localhost:{}/index.html", server.port());
    let r = http_json(&[
        "--http3",
        "--insecure",
        "--no-server-metrics",
        "--streams",
        "10",
        "-c",
        "2",
        "-n",
        "120",
        &url,
    ]);
    assert_eq!(
        (r.complete_requests, r.failed_requests),
        (120, 0),
        "{:?}",
        r.errors
    );
    assert_eq!(r.body_bytes, 120 * 26);
    assert_eq!(server.requests("/index.html"), 120);
    assert_eq!(server.responses(), 120);
}

#[test]
fn nothing_listening_on_the_udp_port_fails_every_request_as_connect() {
    let port = free_port();
    let url = format!("https://localhost:{port}/");
    let args = ["--http3", "--insecure", "--no-server-metrics", "-c", "2"];
    let mut n = args.to_vec();
    n.extend(["-n", "6", &url]);
    let (r, _) = http_failed(&n, "connect");
    assert_eq!(r.failed_requests, 6);
    assert!(
        r.errors[0].first_error.contains("UDP port"),
        "{:?}",
        r.errors
    );
}

/// The arguments of a run against `server`: one connection of `streams`
/// streams, 4 requests. The timeout is 1 s where it is what is tested
/// (all 4 requests on the one connection, so it is waited for once), 10 s
/// elsewhere (a handshake slowed by a loaded machine is not a failure).
fn misbehaved(server: &BadH3, streams: &str) -> Vec<String> {
    let url = format!("https://127.0.0.1:{}/", server.port());
    let timeout = if streams == "4" { "1" } else { "10" };
    let args = [
        "--http3",
        "--insecure",
        "--no-server-metrics",
        "-c",
        "1",
        "--streams",
        streams,
        "-n",
        "4",
        "-s",
        timeout,
        &url,
    ];
    args.map(str::to_owned).to_vec()
}

/// A request body over 64 KiB goes on its stream after the request's
/// frames, from the run's one copy of it (issue 38: HTTP/3 copied it
/// into every request it built, a streamed set's into every chunk): a
/// `-p` body, then a streamed set's `@file` body, each request read to
/// its end by the server with the body once, whole.
#[test]
fn large_request_bodies_go_whole_over_http3_from_one_copy() {
    let server = BadH3::start(Misbehaviour::Answers);
    let dir = tempfile::tempdir().unwrap();
    let len = 200_001u64;
    let body = dir.path().join("body");
    std::fs::write(&body, vec![b'k'; len as usize]).unwrap();
    let url = format!("https://127.0.0.1:{}/", server.port());
    // More lines than a held set has: streamed, rendered by its feeder.
    let set = dir.path().join("set.txt");
    let target = format!("POST {url}\n@{}\n\n", body.display());
    std::fs::write(&set, target.repeat((256 << 10) / 3 + 1)).unwrap();
    let (body, set) = (body.to_str().unwrap(), set.to_str().unwrap());
    let h3 = ["--http3", "--insecure", "--no-server-metrics", "-c", "2"];
    let inputs: [&[&str]; 2] = [&["-p", body, &url], &["--targets", set]];
    for (i, input) in inputs.into_iter().enumerate() {
        let r = http_json(&[&h3[..], &["--streams", "2", "-n", "6"], input].concat());
        let sent = (r.complete_requests, r.failed_requests);
        assert_eq!(sent, (6, 0), "{input:?}: {:?}", r.errors);
        assert_eq!(server.requests(), 6 * (i as u64 + 1));
        // Each request: its frames (HEADERS, a DATA head) and the body.
        let per = server.bytes() / server.requests();
        assert!(
            (len..len + 512).contains(&per),
            "{input:?}: {per} bytes a request"
        );
    }
}

#[test]
fn misbehaving_servers_fail_each_request_in_its_bucket_and_nothing_hangs() {
    use Misbehaviour as M;
    // Nothing succeeds: exit 1, every request in one bucket, for this reason.
    let failing = [
        (M::Silent, "connect", "no QUIC handshake within 1s"),
        (M::UnknownVersion, "connect", "version negotiation"),
        (
            M::CloseWithError,
            "receive",
            "closed the connection with H3_INTERNAL_ERROR",
        ),
        (
            M::ResetStream,
            "receive",
            "reset the stream with H3_REQUEST_REJECTED",
        ),
        (M::DynamicQpack, "exceptions", "QPACK_DECOMPRESSION_FAILED"),
        (M::FrameOnControlStream, "exceptions", "H3_FRAME_UNEXPECTED"),
        (
            M::ShortBody,
            "length",
            "shorter than its content-length (5 of 10",
        ),
        (M::LongBody, "length", "longer than its content-length"),
        (M::EndlessBody, "timeout", "no complete response within 1s"),
    ];
    for (how, kind, why) in failing {
        let server = BadH3::start(how);
        let waits = matches!(how, M::Silent | M::EndlessBody);
        let args = misbehaved(&server, if waits { "4" } else { "2" });
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (r, _) = http_failed(&args, kind);
        assert_eq!(r.failed_requests, 4, "{how:?}: {:?}", r.errors);
        let first = &r.errors[0].first_error;
        assert!(first.contains(why), "{how:?}: {first}");
        if how == M::ResetStream {
            let h3 = r.http3.as_ref().expect("the HTTP/3 block");
            assert_eq!(h3.stream_resets.get("H3_REQUEST_REJECTED"), Some(&4));
        }
        if !matches!(how, M::Silent | M::UnknownVersion) {
            assert_eq!(
                server.requests(),
                4,
                "{how:?}: each request once, never again"
            );
        }
    }
    // A stateless reset mid-run: each connection's first request is
    // answered, its second lost with the connection; the run succeeds.
    let server = BadH3::start(M::StatelessReset);
    let args = misbehaved(&server, "1");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (r, _) = http_json_exit(&args, 0);
    let counts = (r.complete_requests, r.failures.receive);
    assert_eq!(counts, (2, 2), "{:?}", r.errors);
    let first = &r.errors[0].first_error;
    assert!(first.contains("stateless reset"), "{first}");
    assert_eq!(server.requests(), 4);
    // GOAWAY after each connection's first answer: the requests it left
    // unprocessed go again on a new connection, and every one is answered.
    let server = BadH3::start(M::Goaway);
    let args = misbehaved(&server, "2");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (r, _) = http_json_exit(&args, 0);
    let counts = (r.complete_requests, r.failed_requests);
    assert_eq!(counts, (4, 0), "{:?}", r.errors);
    assert!(
        r.http3.as_ref().is_some_and(|h| h.goaways >= 2),
        "{:?}",
        r.http3
    );
    // --find-rate over HTTP/3: its lowest step, every request reset, breaks
    // the SLO on failures (one step of 0.3 s).
    let server = BadH3::start(M::ResetStream);
    let url = format!("https://127.0.0.1:{}/", server.port());
    let out = http(&[
        "--http3",
        "--insecure",
        "--no-server-metrics",
        "--find-rate",
        "--slo",
        "failed<1%",
        "--start-rate",
        "20",
        "--step",
        "300ms",
        "--step-warmup",
        "0s",
        &url,
    ]);
    assert_eq!(out.code, Some(1), "{}{}", out.stdout, out.stderr);
    let says = "Even the lowest rate searched, 20/s, breaks failed<1%";
    assert!(out.stdout.contains(says), "{}", out.stdout);
    assert!(server.requests() > 0);
}

#[test]
fn meaningless_combinations_are_refused_in_one_line_before_any_packet() {
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let url = &format!("https://127.0.0.1:{}/", udp.local_addr().unwrap().port());
    let refused: [(&[&str], &str); 10] = [
        (
            &["--http3", "http://localhost:9/"],
            "--http3 needs an https:// URL",
        ),
        (
            &["--http3", "--http2", url],
            "--http2 and --http3: give one protocol",
        ),
        (
            &["--http-version", "3", "--http2", url],
            "--http-version 3 with --http2",
        ),
        (
            &["--http3", "-k", "--pipeline", "4", url],
            "--pipeline is HTTP/1.1 pipelining",
        ),
        (
            &["--http3", "-X", "127.0.0.1:3128", url],
            "-X sends HTTP/1.1 requests to a proxy",
        ),
        (
            &["--http3", "--engine", "io_uring", url],
            "--engine io_uring does not drive --http3",
        ),
        (&["--http3", "-f", "TLS1.2", url], "QUIC is TLS 1.3 only"),
        (&["--streams", "4", url], "add --http2 or --http3"),
        (
            &["--http-version", "2", "--http-version", "3", url],
            "--http-version is given 2 times for 1 URL:",
        ),
        (
            &[
                "-k",
                "--pipeline",
                "4",
                "-n",
                "9",
                "--http-version",
                "1.1",
                "--http-version",
                "3",
                url,
                url,
            ],
            "over HTTP/3: --pipeline is HTTP/1.1 pipelining",
        ),
    ];
    for (args, want) in refused {
        let out = http(args);
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(want), "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim_end().lines().count(), 1, "{}", out.stderr);
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    let mut buf = [0u8; 2048];
    let quiet = udp.recv(&mut buf).map_err(|e| e.kind());
    assert_eq!(
        quiet,
        Err(std::io::ErrorKind::WouldBlock),
        "a packet was sent"
    );
}

/// `kurabe serve --http3 --port 0` as a child: the two URLs it printed on
/// stdout, the certificate file it named on stderr, and the rest of stderr.
struct H3Serve {
    kid: crate::util::Kid,
    url: String,
    ca: std::path::PathBuf,
    stderr: std::io::BufReader<std::process::ChildStderr>,
}

impl H3Serve {
    fn start(args: &[&str]) -> H3Serve {
        use std::io::BufRead;
        let mut child = crate::util::kurabe()
            .args(["serve", "--http3", "--port", "0", "--threads", "1"])
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let kid = crate::util::Kid(child);
        let (mut http, mut https, mut note) = (String::new(), String::new(), String::new());
        out.read_line(&mut http).unwrap();
        out.read_line(&mut https).unwrap();
        stderr.read_line(&mut note).unwrap();
        // The first line stays the HTTP/1.1 address; HTTP/3's is the second, same port.
        let port = http
            .trim()
            .strip_prefix("http://127.0.0.1:")
            .unwrap_or_else(|| panic!("{http:?}"));
        assert_eq!(https.trim(), format!("https://localhost:{port}"), "{http}");
        let ca = note
            .trim()
            .rsplit_once("--cacert ")
            .unwrap_or_else(|| panic!("no certificate file named: {note:?}"))
            .1
            .into();
        H3Serve {
            kid,
            url: https.trim().to_owned(),
            ca,
            stderr,
        }
    }

    /// SIGTERM: it exits 0, and the rest of its stderr.
    fn stop(mut self) -> String {
        use std::io::Read;
        // SAFETY: plain kill(2) on our own child's PID.
        unsafe { libc::kill(self.kid.0.id() as i32, libc::SIGTERM) };
        let mut rest = String::new();
        self.stderr.read_to_string(&mut rest).unwrap();
        let status = self.kid.0.wait().unwrap();
        assert!(status.success(), "{status:?}: {rest}");
        rest
    }
}

/// The built-in server's HTTP/3 side: `kurabe http --http3` trusting the
/// certificate file it printed completes every request (and with
/// `--insecure`), the server counts each one as its stop line says, and
/// the file goes when it stops.
#[test]
fn serve_http3_answers_every_request_and_counts_each() {
    let server = H3Serve::start(&["--body-bytes", "100"]);
    let ca = server.ca.display().to_string();
    assert!(server.ca.exists(), "{ca}");
    let args = ["--http3", "-n", "200", "-c", "4", "--streams", "4"];
    let mut verified = args.to_vec();
    verified.extend(["--cacert", &ca, &server.url]);
    let r = http_json(&verified);
    let counts = (r.complete_requests, r.failed_requests);
    assert_eq!(counts, (200, 0), "{:?}", r.errors);
    assert_eq!((r.protocol.as_str(), r.body_bytes), ("h3", 200 * 100));
    let server_software = r.server_software.as_deref().unwrap_or_default();
    assert!(server_software.starts_with("kurabe/"), "{server_software}");
    let r = http_json(&["--http3", "--insecure", "-n", "10", &server.url]);
    assert_eq!(
        (r.complete_requests, r.failed_requests),
        (10, 0),
        "{:?}",
        r.errors
    );
    let ca_file = server.ca.clone();
    let rest = server.stop();
    assert!(
        rest.contains("kurabe serve: stopped after 210 requests"),
        "{rest}"
    );
    assert!(
        !ca_file.exists(),
        "the certificate file outlived the server"
    );
}

/// `kurabe demo --http3`: the load over HTTP/3, the server's own count
/// matching the client's.
#[test]
fn demo_over_http3_reconciles_the_servers_count() {
    let out = crate::util::kurabe()
        .args([
            "demo",
            "--http3",
            "-q",
            "--duration",
            "300ms",
            "--concurrency",
            "2",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("built-in server on https://localhost:"),
        "{stderr}"
    );
    let line = (stdout.lines())
        .find(|l| l.starts_with("Server's own count:"))
        .unwrap_or_else(|| panic!("no server count in:\n{stdout}"));
    assert!(line.ends_with("requests served (match)"), "{line}");
}

/// A certificate without its key (or either without `--http3`), and
/// files that cannot be read: exit 2, one line naming the flag.
#[test]
fn serve_refuses_half_a_certificate_and_unreadable_files_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.pem");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    let junk = junk.display().to_string();
    let missing = dir.path().join("missing.pem").display().to_string();
    let cases: [(&[&str], &str); 4] = [
        (&["--http3", "--tls-cert", &junk], "--tls-key"),
        (&["--tls-cert", &junk, "--tls-key", &junk], "--http3"),
        (
            &["--http3", "--tls-cert", &missing, "--tls-key", &junk],
            "cannot read --tls-cert",
        ),
        (
            &["--http3", "--tls-cert", &junk, "--tls-key", &junk],
            "--tls-cert",
        ),
    ];
    for (args, says) in cases {
        let out = crate::util::kurabe()
            .args(["serve", "--port", "0"])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        let first = err.lines().next().unwrap_or_default();
        assert!(first.contains(says), "{args:?}: {err}");
        // A setup error is one line; a usage error adds where to look.
        assert!(err.lines().count() <= 2, "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing served");
    }
}
