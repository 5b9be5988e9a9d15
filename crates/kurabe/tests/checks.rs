//! Response checks (`--check`) end to end: the built binary against an
//! in-process server on 127.0.0.1:0 whose every fourth response is a 503
//! with another body and type, so each kind of check has a known count of
//! failures to match; bad checks are refused before any request.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::http::{http, http_json_exit, read_request, TestServer};

/// Requests the server answered, and the server: response `i` (from 1) is
/// a 503 `text/html` "down" when `i % 4 == 0`, else a 200 JSON body.
fn mixed_server() -> (TestServer, Arc<AtomicU64>) {
    let served = Arc::new(AtomicU64::new(0));
    let counter = served.clone();
    let server = TestServer::start(move |mut s| {
        while read_request(&mut s).is_some() {
            let i = counter.fetch_add(1, Ordering::SeqCst) + 1;
            let resp: &[u8] = if i % 4 == 0 {
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/html\r\nContent-Length: 4\r\n\r\ndown"
            } else {
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{\"ok\": true}"
            };
            if s.write_all(resp).is_err() {
                return;
            }
        }
    });
    (server, served)
}

#[test]
fn each_kind_of_check_fails_exactly_the_responses_that_break_it() {
    for check in [
        "status==200",
        "status in 200..399",
        "body~^\\{\"ok\"",
        "header:Content-Type~json",
        "size>=10",
    ] {
        let (server, served) = mixed_server();
        let url = server.url();
        let (r, _) = http_json_exit(&["-n", "40", "-k", "-l", "--check", check, &url], 0);
        let sent = served.load(Ordering::SeqCst);
        assert_eq!(sent, 40, "{check}");
        assert_eq!(r.failures.check, 10, "{check}: {:?}", r.failures);
        assert_eq!(r.complete_requests, 30, "{check}");
        assert_eq!(r.failed_requests, 10, "{check}");
        assert_eq!(r.status_codes.get("200"), Some(&30), "{check}");
        let bucket = r.errors.iter().find(|e| e.kind == "check").unwrap();
        assert_eq!(bucket.count, 10);
        assert!(
            bucket
                .first_error
                .starts_with(&format!("failed {check}: HTTP/1.1 503 Service Unavailable (4 body bytes); Content-Type: text/html")),
            "{}",
            bucket.first_error
        );
        assert!(
            bucket.first_error.ends_with("; body: down"),
            "{}",
            bucket.first_error
        );
    }
}

#[test]
fn passing_checks_change_nothing_and_all_must_pass() {
    let (server, _) = mixed_server();
    let url = server.url();
    let (r, _) = http_json_exit(
        &[
            "-n",
            "20",
            "-k",
            "-l",
            "--check",
            "status<600",
            "--check",
            "size>=4",
            &url,
        ],
        0,
    );
    assert_eq!((r.complete_requests, r.failed_requests), (20, 0));
    assert!(r.errors.is_empty());
    // Two checks, each failing other responses: a response fails at its first.
    let (server, _) = mixed_server();
    let url = server.url();
    let (r, _) = http_json_exit(
        &[
            "-n",
            "20",
            "-k",
            "-l",
            "--check",
            "status!=503",
            "--check",
            "body!~ok",
            &url,
        ],
        1,
    );
    assert_eq!(r.failures.check, 20);
    let first = &r.errors[0].first_error;
    assert!(
        first.starts_with("failed body!~ok: HTTP/1.1 200 OK"),
        "{first}"
    );
}

#[test]
fn the_text_report_counts_check_failures_in_abs_failed_line() {
    let (server, _) = mixed_server();
    let out = http(&[
        "-n",
        "8",
        "-k",
        "-l",
        "--check",
        "status==200",
        &server.url(),
    ]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stdout
            .contains("   (Connect: 0, Receive: 0, Length: 0, Exceptions: 0, Check: 2)\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("Checks:                 6 passed of 8 judged (75.00 %): status==200\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("check: failed status==200: HTTP/1.1 503 Service Unavailable"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_check_that_does_not_parse_is_one_line_and_exit_2_before_any_request() {
    let (server, served) = mixed_server();
    let url = server.url();
    for (bad, why) in [
        ("stauts==200", "unknown subject"),
        (
            "status=>200",
            "expected one of == != < <= > >= and a number",
        ),
        ("status in 400..200", "the range 400..200 is empty"),
        ("body~(", "the regex does not parse"),
        ("header:Content-Type", "a header check is header:NAME~REGEX"),
        ("size>=lots", "'lots' is not a whole number"),
    ] {
        let out = http(&["-n", "5", "--check", bad, &url]);
        assert_eq!(out.code, Some(2), "{bad}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(
            out.stderr
                .starts_with(&format!("kurabe: error: --check '{bad}': {why}")),
            "{}",
            out.stderr
        );
        assert!(
            out.stderr.contains("a check is status==N, status in A..B"),
            "{}",
            out.stderr
        );
    }
    let out = http(&["-n", "5", "--group", "(=x", &url]);
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr
            .starts_with("kurabe: error: --group '(=x': the regex does not parse"),
        "{}",
        out.stderr
    );
    assert_eq!(served.load(Ordering::SeqCst), 0, "nothing was sent");
}

/// A plan over two existing servers, every response checked, with a
/// `[[check]]` on the pass rate of `variant`: its exit status and stderr.
fn plan_gating_on_pass_rate(min: f64) -> (std::process::Output, f64) {
    let (mixed, _) = mixed_server();
    let (clean, _) = mixed_server_without_errors();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            r#"
name = "checked"
repeat = 1
[[variant]]
name = "clean"
url = "{}"
[[variant]]
name = "mixed"
url = "{}"
[[workload]]
name = "get"
http = {{ path = "/", requests = 40, keep_alive = true, variable_length = true, checks = ["status==200"] }}
metrics = ["requests_per_second", "check_pass_percent"]
[[check]]
variant = "mixed"
metric = "check_pass_percent"
min = {min}
"#,
            clean.url(),
            mixed.url()
        ),
    )
    .unwrap();
    let out = crate::util::kurabe()
        .arg("run")
        .arg(&plan)
        .arg("--store")
        .arg(dir.path().join("r.db"))
        .args(["-q", "--format", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let pass = doc["workloads"][0]["metrics"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["name"] == "check_pass_percent"))
        .and_then(|m| {
            m["variants"]
                .as_array()?
                .iter()
                .find(|v| v["variant"] == "mixed")?["summary"]["median"]
                .as_f64()
        })
        .unwrap_or(f64::NAN);
    (out, pass)
}

/// As [`mixed_server`], every response a 200.
fn mixed_server_without_errors() -> (TestServer, Arc<AtomicU64>) {
    let served = Arc::new(AtomicU64::new(0));
    let counter = served.clone();
    let server = TestServer::start(move |mut s| {
        while read_request(&mut s).is_some() {
            counter.fetch_add(1, Ordering::SeqCst);
            let resp = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{\"ok\": true}";
            if s.write_all(resp).is_err() {
                return;
            }
        }
    });
    (server, served)
}

#[test]
fn a_plan_check_gates_on_the_pass_rate() {
    // 30 of the 40 responses pass: 75 %.
    let (out, pass) = plan_gating_on_pass_rate(70.0);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!((pass - 75.0).abs() < 1e-9, "{pass}");
    let (out, _) = plan_gating_on_pass_rate(90.0);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("check failed"), "{err}");
}
