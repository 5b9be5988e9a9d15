//! `kurabe replay` end to end against real nginx: a first load at nginx A
//! writes its access log (with `$msec` and `$request_time`, so each
//! request's start is known to the millisecond); that log is replayed at
//! twice the speed against nginx B (over HTTP/1.1, and in a second test
//! over h2c with `--http2`), whose own log must then hold the same
//! (method, path, status) multiset, minus what A's log cannot reproduce
//! (a POST: nginx does not log the body), with the gaps between requests
//! halved. Plus bad input through the binary: one line, exit 2.
//!
//! The gap tolerance: each start time in a log is nginx's `$msec -
//! $request_time`, both in whole milliseconds, so a start is known to
//! ±1 ms and a gap between two starts to ±2 ms; A's and B's gaps together
//! to ±4 ms. The engine sends each request at its scheduled time to within
//! its wake-up precision (a send more than 1 ms behind its time counts as
//! late), but on a shared 2-CPU CI machine a thread can be kept off a CPU
//! for tens of milliseconds. The schedule is absolute (a late send does not
//! delay the next), so each request is compared at its offset from the
//! first, not by the gap before it, less the median shift of all (a late
//! first request shifts every offset alike): a descheduled send then moves
//! one offset, where it would move two gaps (and a loaded machine's jitter
//! would be counted twice). So every offset must be within 4 ms + 100 ms
//! of the expected one (the recorded gaps are 60-400 ms, a swap or drift
//! of the order would break it), and the median offset error within 4 ms +
//! 10 ms, which one descheduled send cannot move.

use std::collections::BTreeMap;
use std::path::Path;

use kurabe_testkit::nginx::{Listen, Nginx};

use crate::util::kurabe;

/// nginx A's timed log: what replay reads with `--log-format`.
const TIMED: &str = r#"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent $msec $request_time"#;

/// The first load's requests: (ms after the start, request line).
const FIRST: &[(u64, &str)] = &[
    (0, "GET /index.html HTTP/1.1"),
    (150, "GET /index.html?page=2 HTTP/1.1"),
    (210, "HEAD /index.html HTTP/1.1"),
    (450, "GET /missing HTTP/1.1"),
    (600, "DELETE /index.html HTTP/1.1"),
    (700, "GET http://example.invalid/index.html?abs=1 HTTP/1.1"),
    (1100, "GET /index.html?page=3 HTTP/1.1"),
    (1190, "GET /missing?x=y HTTP/1.1"),
    (1400, "GET /index.html HTTP/1.1"),
    (1460, "GET /index.html?page=4 HTTP/1.1"),
    (1800, "GET /index.html HTTP/1.1"),
    (1950, "HEAD /missing HTTP/1.1"),
    (2100, "GET /index.html?page=5 HTTP/1.1"),
];

/// nginx with both logs; `params`: its `listen` parameters ("http2": h2c).
fn nginx(dir: &Path, params: &str) -> Option<Nginx> {
    std::fs::create_dir_all(dir.join("www")).unwrap();
    std::fs::write(dir.join("www/index.html"), "replayed page").unwrap();
    let http = format!("log_format timed '{TIMED}';");
    let d = dir.display();
    // Both logs (a server-level access_log replaces the http-level one).
    let server =
        format!("root {d}/www;\n  access_log {d}/access.log;\n  access_log {d}/timed.log timed;");
    let listen = Listen {
        addr: "127.0.0.1",
        params,
    };
    Nginx::start_with(dir, 1, &[listen], &http, &server)
}

/// The first load's log: `$msec` start times 1 ms apart in the format's
/// text, one POST (whose body the log holds, as `$request_body` would).
fn first_log(dir: &Path) -> std::path::PathBuf {
    let mut text = String::new();
    for (ms, line) in FIRST {
        let t = 1_764_650_000_000 + ms;
        text.push_str(&format!("{}.{:03} \"{line}\" \"-\"\n", t / 1000, t % 1000));
    }
    text.push_str("1764650001.000 \"POST /index.html HTTP/1.1\" \"a=1\"\n");
    let p = dir.join("first.log");
    std::fs::write(&p, text).unwrap();
    p
}

/// A request logged in TIMED: method, path, status, start in ms.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Logged {
    start_ms: i64,
    method: String,
    path: String,
    status: u16,
}

/// Read a TIMED log by its own rules (not kurabe's parser).
fn read_timed(path: &Path) -> Vec<Logged> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out: Vec<Logged> = text
        .lines()
        .map(|l| {
            let (_, rest) = l.split_once('"').unwrap();
            let (request, tail) = rest.split_once('"').unwrap();
            let mut req = request.split(' ');
            let (method, path) = (req.next().unwrap(), req.next().unwrap());
            let f: Vec<&str> = tail.split_whitespace().collect();
            let ms = |s: &str| {
                let (a, b) = s.split_once('.').unwrap();
                a.parse::<i64>().unwrap() * 1000 + b.parse::<i64>().unwrap()
            };
            Logged {
                start_ms: ms(f[2]) - ms(f[3]),
                method: method.to_owned(),
                path: path.to_owned(),
                status: f[0].parse().unwrap(),
            }
        })
        .collect();
    out.sort();
    out
}

fn multiset(log: &[Logged]) -> BTreeMap<(String, String, u16), u32> {
    let mut m = BTreeMap::new();
    for l in log {
        *m.entry((l.method.clone(), l.path.clone(), l.status))
            .or_default() += 1;
    }
    m
}

/// Each request's start after the first one's, in ms (the first's is 0).
fn offsets(log: &[Logged]) -> Vec<i64> {
    let first = log.first().map_or(0, |l| l.start_ms);
    log.iter().map(|l| l.start_ms - first).collect()
}

fn replay(args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let out = kurabe()
        .arg("replay")
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code(), v, stderr)
}

#[test]
fn a_replayed_nginx_log_reaches_a_second_nginx_with_the_same_requests_and_gaps() {
    replayed_twice(false);
}

#[test]
fn a_replay_over_http2_keeps_the_requests_and_the_gaps() {
    replayed_twice(true);
}

/// A first load at nginx A (HTTP/1.1), then A's log replayed at 2x
/// against nginx B (h2c and `--http2` when `http2`): B's log holds A's
/// requests, with A's gaps halved.
fn replayed_twice(http2: bool) {
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let Some(a) = nginx(a_dir.path(), "") else {
        return;
    };
    let (b_params, b_proto, b_flags): (_, _, &[&str]) = match http2 {
        false => ("", "HTTP/1.1\"", &[]),
        true => ("http2", "HTTP/2.0\"", &["--http2"]),
    };
    let Some(b) = nginx(b_dir.path(), b_params) else {
        return;
    };
    // The first load: a log of 14 requests (one an absolute URL on a host
    // that does not exist) replayed at nginx A.
    let first = first_log(a_dir.path());
    let url_a = format!("http://127.0.0.1:{}/", a.ports()[0]);
    let (code, v, err) = replay(&[
        first.to_str().unwrap(),
        &url_a,
        "--log-format",
        r#"$msec "$request" "$request_body""#,
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(v["complete_requests"], 14, "{v}");
    kurabe_testkit::schema::assert_valid("http-report.schema.json", &v);
    assert_eq!(a.logged("HTTP/1.1\""), 14);
    let a_log = read_timed(&a_dir.path().join("timed.log"));
    assert!(
        a_log.iter().any(|l| l.path == "/index.html?abs=1"),
        "the absolute URL's path and query went to A: {a_log:?}"
    );
    assert!(a_log
        .iter()
        .any(|l| (l.method.as_str(), l.status) == ("POST", 405)));

    // A's log replayed at 2x against B.
    let url_b = format!("http://127.0.0.1:{}/", b.ports()[0]);
    let a_path = a_dir.path().join("timed.log");
    let mut args = vec![a_path.to_str().unwrap(), &url_b, "--log-format", TIMED];
    args.extend(["--speed", "200%"]);
    args.extend(b_flags);
    let (code, v, err) = replay(&args);
    assert_eq!(code, Some(0), "{err}");
    if http2 {
        assert_eq!(v["protocol"], "h2c", "{v}");
    }
    let summary = &v["replay"];
    assert_eq!(summary["lines_read"], 14, "{summary}");
    assert_eq!(summary["replayable"], 13, "{summary}");
    assert_eq!(summary["skipped"][0]["reason"], "no_body", "{summary}");
    assert_eq!(summary["skipped"][0]["count"], 1);
    assert_eq!(summary["speed"], 2.0);
    assert_eq!(b.logged(b_proto), 13);
    let b_log = read_timed(&b_dir.path().join("timed.log"));

    let mut want = multiset(&a_log);
    want.remove(&("POST".to_owned(), "/index.html".to_owned(), 405));
    assert_eq!(multiset(&b_log), want, "A: {a_log:?}\nB: {b_log:?}");

    let a_no_post: Vec<Logged> = a_log.into_iter().filter(|l| l.method != "POST").collect();
    let expected: Vec<i64> = offsets(&a_no_post).iter().map(|o| o / 2).collect();
    let got = offsets(&b_log);
    // How far each start is from its time, less the run's common shift (a
    // late first request moves every offset by the same amount).
    let mut shifts: Vec<i64> = got.iter().zip(&expected).map(|(g, e)| g - e).collect();
    shifts.sort();
    let common = shifts[shifts.len() / 2];
    let mut errors: Vec<i64> = got
        .iter()
        .zip(&expected)
        .map(|(g, e)| (g - e - common).abs())
        .collect();
    assert!(
        errors.iter().all(|e| *e <= 4 + 100),
        "offsets at 2x: expected {expected:?}, got {got:?}"
    );
    errors.sort();
    assert!(
        errors[errors.len() / 2] <= 4 + 10,
        "median offset error {} ms: expected {expected:?}, got {got:?}",
        errors[errors.len() / 2]
    );
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let har = file("x.har", "GET / HTTP/1.1\n");
    let junk = file(
        "junk.log",
        "Dec  2 04:30:03 host sshd[1]: not an access log\n",
    );
    let posts = file(
        "posts.log",
        "127.0.0.1 - - [02/Dec/2026:04:30:00 +0000] \"POST /a HTTP/1.1\" 200 1 \"-\" \"-\"\n",
    );
    let good = file(
        "good.log",
        "127.0.0.1 - - [02/Dec/2026:04:30:00 +0000] \"GET /a HTTP/1.1\" 200 1 \"-\" \"-\"\n",
    );
    let url = "http://127.0.0.1:9/";
    let cases: &[(&[&str], &str)] = &[
        (&[&har, url], "x.har: not a HAR 1.2 file (expected value at line 1 column 1)"),
        (&[&junk, url], "junk.log:1: no line is in the combined or common log format"),
        (&[&posts, url], "posts.log: nothing to replay: 1 lines read, all skipped: 1 body not in the log (first at line 1)"),
        (&["/nonexistent/a.log", url], "cannot read the log '/nonexistent/a.log': check the path"),
        (&[&good, url, "--speed", "2"], "write the pace as a percentage or a multiple, e.g. 200% or 2x"),
        (&[&good, url, "--rewrite", "nocolon"], "--rewrite 'nocolon': expected REGEX:REPLACEMENT"),
        (&[&good, url, "--deny-url", "("], "--deny-url '(': not a regular expression"),
        (&[&good, url, "--set-header", "X-A: 1\r\nX-B: 2"], "--set-header"),
        (&[&good, url, "--log-format", "$remote_addr"], "replay needs the method and the path"),
        (&[&good, "ftp://h/"], "ftp://h/"),
    ];
    for (args, want) in cases {
        let out = kurabe().arg("replay").args(*args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing is reported");
    }
}

#[test]
fn dry_run_lists_what_would_be_skipped_and_sends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.log");
    std::fs::write(
        &p,
        "127.0.0.1 - - [02/Dec/2026:04:30:00 +0000] \"GET /a HTTP/1.1\" 200 1 \"-\" \"-\"\n\
         127.0.0.1 - - [02/Dec/2026:04:30:01 +0000] \"CONNECT h:443 HTTP/1.1\" 400 0 \"-\" \"-\"\n\
         127.0.0.1 - - [02/Dec/2026:04:30:02 +0000] \"GET /b HTTP/1.1\" 200 1\n",
    )
    .unwrap();
    // Port 9 (discard) on loopback: nothing listens; --dry-run must not try.
    let out = kurabe()
        .args([
            "replay",
            p.to_str().unwrap(),
            "http://127.0.0.1:9/",
            "--dry-run",
            "--loop",
            "3",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("3 lines read, 2 replayable"), "{text}");
    assert!(text.contains("3 loops at 1x, 6 sends"), "{text}");
    assert!(
        text.contains("CONNECT (a tunnel)\n              line 2: "),
        "{text}"
    );
    assert!(text.contains("scheduled duration:   10.000 s"), "{text}");
}

/// Settings that are wrong whatever the log holds are refused before the
/// log is read: a log that is a named pipe no one writes to (opening it
/// would wait for ever) does not delay the one-line error.
#[test]
fn bad_settings_are_refused_before_the_log_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("access.log");
    let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path in our own temporary directory.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    let log = fifo.to_str().unwrap();
    let url = "http://127.0.0.1:9/";
    let cases: &[(&[&str], &str)] = &[
        (&["-c", "0"], "-c 0: the concurrency must be at least 1"),
        (
            &["--threads", "0"],
            "--threads 0: use at least 1 (or leave it out for the default)",
        ),
        (&["-s", "0"], "-s 0: the request timeout must be positive"),
        (&["--check", "zz"], "--check 'zz': unknown subject"),
        (
            &["--rewrite", "nocolon"],
            "--rewrite 'nocolon': expected REGEX:REPLACEMENT",
        ),
        (
            &["--log-format", "$remote_addr"],
            "--log-format '$remote_addr': replay needs the method and the path",
        ),
    ];
    for (flags, want) in cases {
        let mut args = vec!["replay", log, url];
        args.extend_from_slice(flags);
        let (code, err) = crate::util::refused_without_reading(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with(&format!("kurabe: error: {want}")),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
    let (code, err) = crate::util::refused_without_reading(&["replay", log, "ftp://h/"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.starts_with("kurabe: error: invalid URL 'ftp://h/'"),
        "{err}"
    );
}
