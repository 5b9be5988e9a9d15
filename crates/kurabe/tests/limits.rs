//! Numbers no machine can honour (issue 38, "every loop whose length
//! comes from a number a user typed"): refused in one line, exit 2,
//! before anything runs — not an allocation that aborts, not a fork that
//! fills the process table. Each case runs under a guard: a regression
//! fails the test instead of hanging it (or the machine).

use std::net::TcpListener;

use crate::util::refused_without_reading;

/// Exit 2 and one `kurabe: error:` line containing `want`.
fn assert_refused(args: &[&str], want: &str) {
    let (code, err) = refused_without_reading(args);
    assert_eq!(code, Some(2), "{args:?}: {err}");
    let line = err.trim_end();
    assert!(!line.contains('\n'), "{args:?}: one line: {line}");
    assert!(line.starts_with("kurabe: error: "), "{args:?}: {line}");
    assert!(line.contains(want), "{args:?}: {line}");
}

/// `--pipeline 4000000000` asked every connection to hold four billion
/// copies of the request (320 GB: the allocation aborted the process).
#[test]
fn a_pipeline_deeper_than_any_connection_holds_is_refused() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let url = format!("http://{}/", l.local_addr().unwrap());
    assert_refused(
        &[
            "http",
            "-q",
            "-k",
            "-n",
            "1",
            "--pipeline",
            "4000000000",
            &url,
        ],
        "--pipeline 4000000000: at most 1024",
    );
    assert_refused(
        &["http", "-q", "-k", "-n", "1", "--pipeline", "1025", &url],
        "at most 1024",
    );
    let e = l.accept().map(|_| ()).unwrap_err();
    assert_eq!(
        e.kind(),
        std::io::ErrorKind::WouldBlock,
        "a request was sent"
    );
}

/// `kurabe system -c 1000000` forked until the process table was full.
#[test]
fn more_system_copies_than_a_pass_may_start_are_refused() {
    assert_refused(
        &["system", "-q", "--tests", "syscall", "-c", "1000000"],
        "--copies 1000000 is more than the 1024 copies a pass may start",
    );
    assert_refused(
        &[
            "system", "-q", "--tests", "syscall", "-c", "1", "-c", "1025",
        ],
        "--copies 1025",
    );
}

/// A replay holds every request it sends: a log whose requests pass
/// what one replay holds (128 MiB, each request counted as its method,
/// path, headers and body and 256 bytes) is refused at the line that
/// passes it, in one line with the limit, before the rest is read or
/// anything is sent.
#[test]
fn a_log_past_what_a_replay_holds_is_refused_at_the_line_that_passes_it() {
    use std::io::Write;
    const LIMIT: u64 = kurabe_http::source::replay::MAX_HELD_BYTES;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("big.log");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&log).unwrap());
    let pad = "q".repeat(1000);
    let (mut held, mut passed) = (0u64, None);
    for line in 1u64.. {
        let target = format!("/p/{line}?{pad}");
        held += 3 + target.len() as u64 + kurabe_http::source::replay::HELD_PER_REQUEST;
        if held > LIMIT && passed.is_none() {
            passed = Some(line);
        }
        writeln!(
            f,
            "127.0.0.1 - - [07/Dec/2026:00:00:00 +0000] \"GET {target} HTTP/1.1\" 200 2 \"-\" \"t\""
        )
        .unwrap();
        if passed.is_some_and(|p| line > p + 1000) {
            break;
        }
    }
    f.flush().unwrap();
    drop(f);
    let passed = passed.unwrap();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let url = format!("http://{}/", l.local_addr().unwrap());
    let log = log.to_str().unwrap();
    let (code, err) = crate::util::refused_within(
        &["replay", "-q", log, &url],
        std::time::Duration::from_secs(120),
    );
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err.trim_end(),
        format!("kurabe: error: {log}: its requests pass the 128 MiB a replay holds at line {passed} (each counts its method, path, headers and body and 256 bytes): replay a part of it (e.g. the lines before line {passed})")
    );
    let e = l.accept().map(|_| ()).unwrap_err();
    assert_eq!(
        e.kind(),
        std::io::ErrorKind::WouldBlock,
        "a request was sent"
    );
}
