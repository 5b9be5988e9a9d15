//! Input files that are not regular files, or too large (issue 38): a
//! named pipe no one writes to, `/dev/zero`, a directory, a body over the
//! 64 MiB a request body may have, named by every setting that reads a
//! file. Each is refused in one line naming the path and what it is, exit
//! 2, at once (a pipe is not waited on, a device not read) and before any
//! request: the URL is a listener that must never see a connection.

use std::net::TcpListener;
use std::path::{Path, PathBuf};

use std::time::Duration;

use crate::util::{kurabe, refused_within};

/// The largest body a request may have (kurabe_http::request::MAX_BODY_BYTES).
const MAX_BODY: u64 = 64 << 20;

/// A listener no connection may reach, and its URL.
fn silent() -> (TcpListener, String) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let url = format!("http://{}/", l.local_addr().unwrap());
    (l, url)
}

fn assert_untouched(l: &TcpListener) {
    let e = l.accept().map(|_| ()).unwrap_err();
    assert_eq!(
        e.kind(),
        std::io::ErrorKind::WouldBlock,
        "a request was sent"
    );
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path in a temporary directory of ours.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// A named pipe no one writes to, `/dev/zero` and a directory, each with
/// what the refusal calls it.
fn specials(dir: &Path) -> Vec<(PathBuf, &'static str)> {
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    let sub = dir.join("sub");
    std::fs::create_dir(&sub).unwrap();
    vec![
        (fifo, "a named pipe (FIFO)"),
        (PathBuf::from("/dev/zero"), "a character device"),
        (sub, "a directory"),
    ]
}

/// A sparse file of `len` bytes (no disk, no time).
fn sparse(path: &Path, len: u64) -> String {
    std::fs::File::create(path).unwrap().set_len(len).unwrap();
    path.to_str().unwrap().to_owned()
}

/// `args` refused at once in one line, exit 2, containing `want`.
fn assert_refused(args: &[&str], want: &str) {
    assert_refused_within(args, want, Duration::from_secs(20));
}

/// [`assert_refused`] within `limit` (a file read in part first).
fn assert_refused_within(args: &[&str], want: &str, limit: Duration) {
    let (code, err) = refused_within(args, limit);
    assert_eq!(code, Some(2), "{args:?}: {err}");
    let line = err.trim_end();
    assert!(!line.contains('\n'), "{args:?}: one line: {line}");
    assert!(line.starts_with("kurabe: error: "), "{args:?}: {line}");
    assert!(line.contains(want), "{args:?}: {line}");
}

fn not_a_file(path: &Path, kind: &str) -> String {
    format!(
        "'{}' is not a regular file but {kind}: give a regular file",
        path.display()
    )
}

#[test]
fn request_sets_that_are_not_regular_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (l, url) = silent();
    for (path, kind) in specials(dir.path()) {
        for flag in ["--targets", "--urls-from-file"] {
            let p = path.to_str().unwrap();
            let want = format!("the {flag} file {}, or '-'", not_a_file(&path, kind));
            assert_refused(&["http", "-q", "-n", "2", flag, p, &url], &want);
        }
    }
    assert_untouched(&l);
}

#[test]
fn body_files_that_are_not_regular_files_or_too_large_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (l, url) = silent();
    for (path, kind) in specials(dir.path()) {
        for flag in ["-p", "-u"] {
            let want = format!("the {flag} file {}", not_a_file(&path, kind));
            assert_refused(
                &["http", "-q", "-n", "2", flag, path.to_str().unwrap(), &url],
                &want,
            );
        }
    }
    let big = sparse(&dir.path().join("big"), MAX_BODY + 1);
    let want = format!("the -p file '{big}' is 67108865 bytes, more than the 64 MiB limit");
    assert_refused(&["http", "-q", "-n", "2", "-p", &big, &url], &want);
    assert_untouched(&l);
}

#[test]
fn body_lines_of_a_set_that_are_not_regular_files_or_too_large_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (l, url) = silent();
    let big = dir.path().join("big");
    sparse(&big, MAX_BODY + 1);
    let mut cases: Vec<(PathBuf, String)> = specials(dir.path())
        .into_iter()
        .map(|(p, kind)| (p.clone(), format!("the body file {}", not_a_file(&p, kind))))
        .collect();
    let too_large = format!(
        "the body file '{}' is 67108865 bytes, more than the 64 MiB limit",
        big.display()
    );
    cases.push((big, too_large));
    let set = dir.path().join("set.txt");
    for (path, want) in cases {
        std::fs::write(&set, format!("POST {url}\n@{}\n", path.display())).unwrap();
        let want = format!("set.txt:1: {want}");
        assert_refused(
            &["http", "-q", "-n", "2", "--targets", set.to_str().unwrap()],
            &want,
        );
    }
    assert_untouched(&l);
}

#[test]
fn replay_logs_that_are_not_regular_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (l, url) = silent();
    for (path, kind) in specials(dir.path()) {
        let want = format!("the log {}", not_a_file(&path, kind));
        assert_refused(&["replay", path.to_str().unwrap(), &url], &want);
        assert_refused(
            &["replay", path.to_str().unwrap(), &url, "--dry-run"],
            &want,
        );
    }
    assert_untouched(&l);
}

/// A HAR whose one entry's base64 body is `quads` × "AAAA" (3 bytes each).
fn har_with_body(path: &Path, quads: usize) -> String {
    use std::io::Write;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    f.write_all(br#"{"log": {"entries": [{"startedDateTime": "2026-12-02T04:30:00Z", "request": {"method": "POST", "url": "http://h/a", "headers": [], "postData": {"mimeType": "application/octet-stream", "encoding": "base64", "text": ""#).unwrap();
    let chunk = "AAAA".repeat(1 << 16);
    for _ in 0..quads >> 16 {
        f.write_all(chunk.as_bytes()).unwrap();
    }
    f.write_all("AAAA".repeat(quads & 0xffff).as_bytes())
        .unwrap();
    f.write_all(br#""}}}]}}"#).unwrap();
    f.flush().unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn a_har_body_over_the_limit_is_refused_with_its_size_and_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let (l, url) = silent();
    let quads = (MAX_BODY / 3 + 1) as usize;
    let har = har_with_body(&dir.path().join("a.har"), quads);
    let want = format!(
        "{har}: entry 1's request body is {} bytes, more than the 64 MiB a request body may have",
        quads * 3
    );
    assert_refused_within(
        &["replay", &har, &url, "--dry-run"],
        &want,
        Duration::from_secs(180),
    );
    let har = har_with_body(&dir.path().join("b.har"), 25_000_000);
    // Counted to its end unheld, for its size.
    let want = format!("{har}: entry 1's request body is 75000000 bytes, more than the 64 MiB");
    assert_refused_within(
        &["replay", &har, &url, "--dry-run"],
        &want,
        Duration::from_secs(180),
    );
    assert_untouched(&l);
}

#[test]
fn files_a_plan_names_that_are_not_regular_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (l, url) = silent();
    let plan = dir.path().join("plan.toml");
    let store = dir.path().join("r.db");
    for (path, kind) in specials(dir.path()) {
        for (key, what) in [("targets", "http.targets"), ("body_file", "http.body_file")] {
            let url = if key == "targets" {
                url.trim_end_matches('/')
            } else {
                url.as_str()
            };
            std::fs::write(
                &plan,
                format!(
                    "name = \"p\"\n[[variant]]\nname = \"a\"\n[[workload]]\nname = \"w\"\n\
                     http = {{ url = \"{url}\", requests = 2, {key} = \"{}\" }}\n",
                    path.display()
                ),
            )
            .unwrap();
            let want = format!("the {what} file {}", not_a_file(&path, kind));
            let args = [
                "run",
                "-q",
                "--store",
                store.to_str().unwrap(),
                plan.to_str().unwrap(),
            ];
            assert_refused(&args, &want);
        }
    }
    assert_untouched(&l);
}

/// A fixture under `tests/fixtures/`.
fn fixture(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel);
    p.to_str().unwrap().to_owned()
}

/// The results store, the files `results import`/`save` and `system
/// import`/`compare` read, a plan itself, a harness's report and `-E`:
/// each a FIFO no one writes to, `/dev/zero` or a directory, refused in
/// one line naming it, exit 2, before anything runs (the URL's listener
/// sees no connection).
#[test]
fn every_other_input_that_is_not_a_regular_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (l, url) = silent();
    let unixbench = fixture("system/unixbench-1copy.txt");
    let https = url.replace("http://", "https://");
    for (path, kind) in specials(dir.path()) {
        let p = path.to_str().unwrap();
        let file = |what: &str| format!("{what} {}", not_a_file(&path, kind));
        let store = match kind {
            "a directory" => format!("results store {p} is a directory: give a file in it"),
            _ => file("the results store"),
        };
        let cases: Vec<(Vec<&str>, String)> = vec![
            (vec!["results", "--store", p, "list"], store.clone()),
            (
                vec!["http", "-q", "-n", "1", "--save", "--store", p, &url],
                store.clone(),
            ),
            (
                vec!["cmd", "--runs", "1", "--store", p, "true"],
                store.clone(),
            ),
            (vec!["results", "import", p], file("the export")),
            (
                vec!["results", "save", "--kind", "mem", p],
                file("the record"),
            ),
            (
                vec!["results", "import", "--from", "hyperfine", p],
                file("the hyperfine report"),
            ),
            (vec!["system", "import", p], file("the result file")),
            (
                vec!["system", "compare", p, &unixbench],
                file("the result file"),
            ),
            (
                vec!["system", "compare", &unixbench, p],
                file("the result file"),
            ),
            (vec!["run", p], file("plan")),
            (
                vec!["http", "-q", "-n", "1", "-E", p, &https],
                file("the -E file"),
            ),
        ];
        for (args, want) in cases {
            let store = dir.path().join("ok.db");
            let mut with_store = args.clone();
            // A store of this test's own where the case is not about it.
            if !args.contains(&"--store") && matches!(args[0], "results" | "run") {
                with_store.splice(1..1, ["--store", store.to_str().unwrap()]);
            }
            assert_refused(&with_store, &want);
        }
    }
    assert_untouched(&l);
}

/// A set on standard input too large to hold, with no temporary
/// directory to spool it to, is refused (it was read whole, however
/// large): one line, exit 2, no request.
#[test]
fn a_set_on_standard_input_that_cannot_be_spooled_is_bounded() {
    use std::io::Write;
    use std::process::Stdio;
    let (l, url) = silent();
    let mut child = kurabe()
        .args(["http", "--targets", "-", "-n", "1", &url])
        .env("TMPDIR", "/nonexistent/kurabe-test")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let line = format!("GET {url}\n");
    let writer = std::thread::spawn(move || {
        // 17 MiB, one more than a held set; kurabe stops reading past it.
        let block = line.repeat((1 << 20) / line.len());
        for _ in 0..17 {
            if stdin.write_all(block.as_bytes()).is_err() {
                return;
            }
        }
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot be spooled") && err.contains("TMPDIR"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert_untouched(&l);
}
