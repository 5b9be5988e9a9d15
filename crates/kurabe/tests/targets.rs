//! `kurabe http --targets` / `--urls-from-file` end to end: the built
//! binary sends a request set to a private nginx on port 0, and nginx's
//! access log says which requests arrived (method, path, protocol); bad
//! sets are refused in one line with exit 2 before anything is sent (a
//! listener that must never see a connection).

use std::collections::BTreeMap;
use std::io::Write;
use std::net::TcpListener;
use std::path::Path;
use std::process::Stdio;

use kurabe_testkit::nginx::{Listen, Nginx};

use crate::http::{http, http_json};
use crate::util::kurabe;

/// nginx serving `www/` (a.html, b.html, c.html) in `dir`; HTTP/1.1 on the
/// first port, h2c on the second.
pub(crate) fn nginx(dir: &Path) -> Option<Nginx> {
    nginx_with(dir, "")
}

/// [`nginx`] with more directives in its `server` block.
pub(crate) fn nginx_with(dir: &Path, directives: &str) -> Option<Nginx> {
    let www = dir.join("www");
    std::fs::create_dir_all(&www).unwrap();
    for (f, body) in [("a.html", "a"), ("b.html", "bb"), ("c.html", "ccc")] {
        std::fs::write(www.join(f), body).unwrap();
    }
    let listens = [
        Listen {
            addr: "127.0.0.1",
            params: "",
        },
        Listen {
            addr: "127.0.0.1",
            params: "http2",
        },
    ];
    let server = format!("root {}; {directives}", www.display());
    Nginx::start(dir, 1, &listens, &server)
}

/// Requests in nginx's access log, by `"METHOD PATH PROTOCOL"`.
pub(crate) fn logged(dir: &Path, nginx: &Nginx, total: u64) -> BTreeMap<String, u64> {
    // Wait until nginx has written every line.
    assert_eq!(nginx.logged("\""), total);
    let text = std::fs::read_to_string(dir.join("access.log")).unwrap();
    let mut by = BTreeMap::new();
    for line in text.lines() {
        let request = line.split('"').nth(1).unwrap_or_default().to_owned();
        *by.entry(request).or_insert(0) += 1;
    }
    by
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn count(map: &BTreeMap<String, u64>, key: &str) -> u64 {
    map.get(key).copied().unwrap_or(0)
}

#[test]
fn a_set_reaches_nginx_in_order_with_names_weights_and_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let Some(ng) = nginx(dir.path()) else {
        return;
    };
    let (h1, h2c) = (ng.ports()[0], ng.ports()[1]);
    let set = |port: u16| {
        format!(
            "GET http://127.0.0.1:{port}/a.html\n\n\
             # @name bee\n# @weight 3\nGET http://127.0.0.1:{port}/b.html\nX-Set: 1\n\n\
             # @weight 6\nHEAD http://127.0.0.1:{port}/c.html\n"
        )
    };
    let file = write(dir.path(), "set.txt", &set(h1));
    let mut total = 0;

    // Round-robin (asked for: the set carries weights), keep-alive,
    // closed model: each target a third of the time.
    let r = http_json(&[
        "--targets",
        &file,
        "--order",
        "round-robin",
        "-k",
        "-c",
        "3",
        "-n",
        "300",
    ]);
    assert_eq!(
        (r.complete_requests, r.failed_requests),
        (300, 0),
        "{:?}",
        r.errors
    );
    let s = r.set.as_ref().unwrap();
    assert_eq!(
        (s.targets, s.names, s.order.as_str()),
        (3, 3, "round-robin")
    );
    assert_eq!(s.seed, None);
    total += 300;
    let log = logged(dir.path(), &ng, total);
    assert_eq!(count(&log, "GET /a.html HTTP/1.1"), 100, "{log:?}");
    assert_eq!(count(&log, "GET /b.html HTTP/1.1"), 100, "{log:?}");
    assert_eq!(count(&log, "HEAD /c.html HTTP/1.1"), 100, "{log:?}");
    // HEAD answers carry no body: 100 × 1 + 100 × 2 bytes.
    assert_eq!(r.body_bytes, 300);

    // Without keep-alive, and without -n: the set is sent once.
    let r = http_json(&["--targets", &file]);
    assert_eq!(r.complete_requests, 3);
    total += 3;

    // Weighted with a seed: the weights hold, and the same seed draws the same.
    let weighted = |seed: &str| {
        let r = http_json(&[
            "--targets",
            &file,
            "--order",
            "weighted",
            "--seed",
            seed,
            "-k",
            "-c",
            "1",
            "-n",
            "1000",
        ]);
        assert_eq!(r.complete_requests, 1000, "{:?}", r.errors);
        assert_eq!(r.set.as_ref().unwrap().seed, seed.parse().ok());
        r
    };
    let before = logged(dir.path(), &ng, total);
    weighted("7");
    total += 1000;
    let after = logged(dir.path(), &ng, total);
    let drawn = |k: &str| count(&after, k) - count(&before, k);
    let first = [
        drawn("GET /a.html HTTP/1.1"),
        drawn("GET /b.html HTTP/1.1"),
        drawn("HEAD /c.html HTTP/1.1"),
    ];
    for (n, w) in first.iter().zip([1.0, 3.0, 6.0]) {
        let share = *n as f64 / 1000.0;
        assert!((share - w / 10.0).abs() < 0.05, "{first:?}");
    }
    weighted("7");
    total += 1000;
    let again = logged(dir.path(), &ng, total);
    let second = [
        count(&again, "GET /a.html HTTP/1.1") - count(&after, "GET /a.html HTTP/1.1"),
        count(&again, "GET /b.html HTTP/1.1") - count(&after, "GET /b.html HTTP/1.1"),
        count(&again, "HEAD /c.html HTTP/1.1") - count(&after, "HEAD /c.html HTTP/1.1"),
    ];
    assert_eq!(first, second, "the same seed, the same draws");

    // Standard input, oha's URL list, the open model.
    let mut child = kurabe()
        .args([
            "http",
            "-q",
            "--format",
            "json",
            "--urls-from-file",
            "-",
            "-n",
            "20",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let urls = format!("http://127.0.0.1:{h1}/a.html\nhttp://127.0.0.1:{h1}/c.html\n");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(urls.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let r: kurabe_model::http::HttpReport = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r.complete_requests, 20);
    assert_eq!(r.set.as_ref().unwrap().source, "-");
    total += 20;
    let r = http_json(&[
        "--targets",
        &file,
        "-k",
        "-c",
        "2",
        "--rate",
        "200",
        "-n",
        "60",
    ]);
    assert_eq!(r.complete_requests, 60, "{:?}", r.errors);
    total += 60;
    let log = logged(dir.path(), &ng, total);
    assert_eq!(count(&log, "GET /c.html HTTP/1.1"), 10, "{log:?}");

    // HTTP/2 (h2c): per-target header blocks.
    let h2file = write(dir.path(), "h2.txt", &set(h2c));
    let r = http_json(&[
        "--targets",
        &h2file,
        "--order",
        "round-robin",
        "--http2",
        "--streams",
        "4",
        "-c",
        "2",
        "-n",
        "90",
    ]);
    assert_eq!(
        (r.complete_requests, r.failed_requests),
        (90, 0),
        "{:?}",
        r.errors
    );
    assert_eq!(r.protocol, "h2c");
    total += 90;
    let log = logged(dir.path(), &ng, total);
    assert_eq!(count(&log, "GET /a.html HTTP/2.0"), 30, "{log:?}");
    assert_eq!(count(&log, "GET /b.html HTTP/2.0"), 30, "{log:?}");
    assert_eq!(count(&log, "HEAD /c.html HTTP/2.0"), 30, "{log:?}");
}

/// A set that carries weights, sent without `--order`, is drawn by them
/// (3:1 here; before, it went round-robin, 200:200, the weights unused),
/// as nginx's access log counts; `--order round-robin` still sends it in
/// file order, and a set without weights goes round-robin as before.
#[test]
fn a_set_with_weights_is_drawn_by_them_unless_an_order_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let Some(ng) = nginx(dir.path()) else {
        return;
    };
    let port = ng.ports()[0];
    let weighted = write(
        dir.path(),
        "weighted.txt",
        &format!("# @weight 3\nGET http://127.0.0.1:{port}/a.html\n\n# @weight 1\nGET http://127.0.0.1:{port}/b.html\n"),
    );
    let plain = write(
        dir.path(),
        "plain.txt",
        &format!("GET http://127.0.0.1:{port}/a.html\n\nGET http://127.0.0.1:{port}/b.html\n"),
    );
    let load = ["-k", "-c", "2", "--threads", "1", "-n", "400"];
    let (mut total, mut before) = (0, BTreeMap::new());
    let mut run = |file: &str, order: &[&str]| {
        let r = http_json(&[&["--targets", file], order, &load[..]].concat());
        assert_eq!(r.complete_requests, 400, "{:?}", r.errors);
        total += 400;
        let now = logged(dir.path(), &ng, total);
        let sent = |page: &str| {
            let key = format!("GET /{page}.html HTTP/1.1");
            count(&now, &key) - count(&before, &key)
        };
        let got = (sent("a"), sent("b"), r.set.unwrap().order);
        before = now;
        got
    };
    let (a, b, order) = run(&weighted, &[]);
    assert_eq!((a + b, order.as_str()), (400, "weighted"));
    // 400 draws of p = 3/4: 300 ± 8.7 (one standard deviation).
    assert!((255..=345).contains(&a), "{a}:{b}");
    let (a, b, order) = run(&weighted, &["--order", "round-robin"]);
    assert_eq!((a, b, order.as_str()), (200, 200, "round-robin"));
    let (a, b, order) = run(&plain, &[]);
    assert_eq!((a, b, order.as_str()), (200, 200, "round-robin"));
}

#[test]
fn bad_sets_are_refused_in_one_line_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}");
    let cases: Vec<(String, &str, &str)> = vec![
        (
            "GET\n".to_owned(),
            "http",
            "set.txt:1: 'GET': expected METHOD URL",
        ),
        (
            format!("GET {url}/\nnot a header\n"),
            "http",
            "set.txt:2: 'not a header': expected a header",
        ),
        (format!("GET {url}/\nX-A: a\u{1}b\n"), "http", "set.txt:2: "),
        (
            format!("GET {url}/\n@/nonexistent/kurabe-body\n"),
            "http",
            "set.txt:1: cannot read the body file '/nonexistent/kurabe-body'",
        ),
        (String::new(), "http", "set.txt: the set is empty"),
        (
            "{\"url\": 3}\n".to_owned(),
            "json",
            "set.txt:1: expected one JSON object",
        ),
        (
            format!("GET {url}/\n\nGET http://127.0.0.2:{port}/\n"),
            "http",
            "set.txt:3: http://127.0.0.2",
        ),
    ];
    for (text, format, want) in cases {
        let file = write(dir.path(), "set.txt", &text);
        let out = http(&["--targets", &file, "--targets-format", format]);
        assert_eq!(out.code, Some(2), "{text:?}: {}", out.stderr);
        let line = out.stderr.trim_end();
        assert!(!line.contains('\n'), "one line: {line}");
        assert!(line.contains(want), "{text:?}: {line}");
    }
    // Invalid UTF-8 in a URL, from a file and from standard input.
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, [b"GET http://127.0.0.1/\xff\n".as_slice()].concat()).unwrap();
    let out = http(&["--targets", bad.to_str().unwrap()]);
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("bad.txt:1: invalid UTF-8"),
        "{}",
        out.stderr
    );
    let mut child = kurabe()
        .args(["http", "-q", "--targets", "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"\nGET http://h/\xff\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("-:2: invalid UTF-8"));
    // Unknown formats and orders, a missing file.
    let file = write(dir.path(), "ok.txt", &format!("GET {url}/\n"));
    for args in [
        vec!["--targets", &file, "--targets-format", "yaml"],
        vec!["--targets", &file, "--order", "shuffle"],
        vec!["--targets", "/nonexistent/set.txt"],
        vec!["--targets", &file, "--pipeline", "2", "-k"],
        vec!["--targets", &file, &format!("{url}/path")],
    ] {
        let out = http(&args);
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
    }
    assert!(
        listener.accept().is_err(),
        "a refused set must not connect anywhere"
    );
}

/// A/B with a request set: two `kurabe serve` on port 0, B holding each
/// request 5 ms (`--service-us`: at most 200/s a connection whatever the
/// machine does; at 2 ms this failed once at a load average of 12–17),
/// the same two-name set sent to both in interleaved rounds. Each name gets
/// its own rows and verdicts, and they point B's way: slower, higher latency.
#[test]
fn an_ab_of_a_set_gives_each_name_a_verdict_that_points_the_right_way() {
    use crate::serve::ServeChild;
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (
        ServeChild::start(&[]),
        ServeChild::start(&["--service-us", "5000"]),
    );
    let set = write(
        dir.path(),
        "ab.txt",
        "# @name list\nGET http://h/list\n\n# @name item\nGET http://h/item/1\n",
    );
    let (ua, ub) = (
        a.url.trim_end_matches('/').to_owned(),
        b.url.trim_end_matches('/').to_owned(),
    );
    let out = kurabe()
        .args([
            "http",
            "-q",
            "--format",
            "json",
            "--targets",
            &set,
            &ua,
            &ub,
        ])
        .args(["-k", "-c", "2", "-t", "0.3", "--rounds", "3"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let w = &v["comparison"]["workloads"][0];
    let names: Vec<&str> = w["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["list", "item"]);
    let verdict = |metrics: &serde_json::Value, name: &str| {
        let m = metrics
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {metrics}"));
        let vs = &m["versus_baseline"][0];
        assert_eq!(vs["variant"], ub.as_str());
        vs["comparison"]["verdict"]["kind"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(verdict(&w["metrics"], "requests_per_second"), "worse");
    for r in w["requests"].as_array().unwrap() {
        let n = &r["name"];
        assert_eq!(
            verdict(&r["metrics"], "requests_per_second"),
            "worse",
            "{n}"
        );
        assert_eq!(verdict(&r["metrics"], "latency_p50_us"), "worse", "{n}");
    }
}

/// Settings that are wrong whatever the set holds are refused before
/// standard input is read: a producer that has not written (or never
/// ends) does not delay the one-line error.
#[test]
fn bad_settings_with_a_set_on_stdin_are_refused_before_reading_it() {
    let cases: [(&[&str], &str); 7] = [
        (
            &["--stage", "10s:abc"],
            "kurabe: error: --stage stage '10s:abc': 'abc': a rate is requests per second; expected DURATION:RATE",
        ),
        (
            &["--stage", "10s:c=5", "--http2"],
            "kurabe: error: --http2 with connection stages: HTTP/2 runs a fixed number of connections; drop --http2 or stage the rate (30s:200) with -c",
        ),
        (
            &["--threshold", "p95<1s"],
            "kurabe: error: --threshold 'p95<1s': unknown metric 'p'; expected METRIC",
        ),
        (
            &["-c", "10", "-n", "1"],
            "kurabe: error: -c 10 is more than -n 1: lower -c or raise -n (ab refuses this too)",
        ),
        (
            &["-c", "2", "-t", "0"],
            "kurabe: error: -t 0: the time limit must be positive",
        ),
        (
            &["--max-error-rate", "2"],
            "kurabe: error: --max-error-rate 2: give a fraction from 0 to 1",
        ),
        (
            &["-o", "/nonexistent/kurabe-dir/report.txt"],
            "kurabe: error: -o: cannot write '/nonexistent/kurabe-dir/report.txt': the directory '/nonexistent/kurabe-dir' does not exist",
        ),
    ];
    for (flags, want) in cases {
        for source in ["--targets", "--urls-from-file"] {
            let mut args = vec!["http", "-q", source, "-"];
            args.extend_from_slice(flags);
            let (code, stderr) = crate::util::refused_without_reading(&args);
            assert_eq!(code, Some(2), "{args:?}: {stderr}");
            let line = stderr.trim_end();
            assert!(!line.contains('\n'), "one line: {line}");
            assert!(line.starts_with(want), "{args:?}: {line}");
        }
    }
}
