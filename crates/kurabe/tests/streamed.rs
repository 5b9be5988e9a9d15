//! A large targets file is streamed, not held: the built binary sends a
//! 48 MB set (15 000 targets padded to 3.2 KB each) to a private nginx on
//! port 0 once through, and nginx's access log holds every target exactly
//! once while kurabe's peak RSS (the kernel's, from `wait4`) stays well
//! below the file's size; a line that does not parse deep in the file
//! ends the run with its `FILE:LINE`, exit 2. In the `weighted` and
//! `random` orders the file is indexed, not held: draws hit each name in
//! proportion to its weight, the same `--seed` sends the same requests,
//! peak RSS stays as bounded, and a bad line deep in the file ends the
//! run when a draw reaches it. Over HTTP/2 the same: streamed in file
//! order (through nginx's GOAWAYs) and drawn from the index.

use std::collections::BTreeMap;
use std::io::{BufWriter, Read, Write};
use std::path::Path;
use std::process::Stdio;

use kurabe_model::http::HttpReport;

use crate::targets::{logged, nginx, nginx_with};
use crate::util::kurabe;

const TARGETS: usize = 15_000;
const PAD: usize = 3_150;

/// The set: target `i` is `GET /{a,b,c}.html?i=I` named `n{i % 4}` and
/// weighing `1 + i % 4`, with an `X-Pad` header; `bad_at`: target index
/// whose request line is broken.
fn write_set(path: &Path, port: u16, bad_at: Option<usize>, targets: usize) -> u64 {
    let mut f = BufWriter::new(std::fs::File::create(path).unwrap());
    let pad = "x".repeat(PAD);
    for i in 0..targets {
        let page = ["a", "b", "c"][i % 3];
        let method = if bad_at == Some(i) { "GET GET" } else { "GET" };
        writeln!(
            f,
            "# @name n{}\n# @weight {}\n{method} http://127.0.0.1:{port}/{page}.html?i={i}\nX-Pad: {pad}\n",
            i % 4,
            1 + i % 4
        )
        .unwrap();
    }
    f.flush().unwrap();
    std::fs::metadata(path).unwrap().len()
}

/// Run `kurabe http -q ARGS`; (exit code, stdout, stderr, peak RSS in bytes).
// The child is reaped by `wait4` (which `Child::wait` cannot give the rusage of).
fn run_measured(args: &[&str]) -> (i32, String, String, u64) {
    measured(spawn(args, Stdio::null()))
}

fn spawn(args: &[&str], stdin: Stdio) -> std::process::Child {
    kurabe()
        .arg("http")
        .arg("-q")
        .args(args)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Wait for `child`: (exit code, stdout, stderr, peak RSS in bytes).
#[allow(clippy::zombie_processes)]
fn measured(mut child: std::process::Child) -> (i32, String, String, u64) {
    let (mut out, mut err) = (String::new(), String::new());
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        stderr.read_to_string(&mut s).unwrap();
        s
    });
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    err.push_str(&reader.join().unwrap());
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 reaps our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(got, pid);
    let code = libc::WEXITSTATUS(status);
    (code, out, err, usage.ru_maxrss as u64 * 1024)
}

#[test]
fn a_large_set_is_streamed_once_through_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let Some(ng) = nginx(dir.path()) else {
        return;
    };
    let port = ng.ports()[0];
    let file = dir.path().join("big.txt");
    let size = write_set(&file, port, None, TARGETS);
    assert!(size > 40 << 20, "{size}");
    let path = file.display().to_string();

    // No -n, no -t: the set once, as a held set is sent (in file order:
    // it carries weights, which would draw it by weight).
    let (code, out, err, rss) = run_measured(&[
        "--format",
        "json",
        "--targets",
        &path,
        "--order",
        "round-robin",
        "-k",
        "-c",
        "8",
        "--threads",
        "2",
    ]);
    assert_eq!(code, 0, "{err}");
    let r: HttpReport = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (r.complete_requests, r.failed_requests),
        (TARGETS as u64, 0)
    );
    let set = r.set.as_ref().unwrap();
    assert_eq!((set.targets, set.names), (TARGETS as u64, 4));
    let rows: Vec<(String, u64)> = r
        .requests
        .iter()
        .map(|q| (q.name.clone(), q.complete_requests))
        .collect();
    let quarter = TARGETS as u64 / 4;
    assert_eq!(
        rows,
        (0..4)
            .map(|i| (format!("n{i}"), quarter))
            .collect::<Vec<_>>()
    );
    let log = logged(dir.path(), &ng, TARGETS as u64);
    let log: std::collections::BTreeMap<_, _> =
        log.into_iter().filter(|(k, _)| k.contains("?i=")).collect();
    assert_eq!(log.len(), TARGETS, "every target arrived");
    assert!(log.values().all(|&n| n == 1), "each exactly once");
    // Held whole, the set's bytes alone would be the file's size: the
    // streamed run costs a few chunks over a one-URL run's own RSS.
    let url = format!("http://127.0.0.1:{port}/a.html");
    let (code, _, err, alone) =
        run_measured(&["-k", "-c", "8", "--threads", "2", "-n", "100", &url]);
    assert_eq!(code, 0, "{err}");
    assert!(
        rss < alone + size / 5,
        "peak RSS {rss} bytes for a {size}-byte set (one URL: {alone}): not streamed"
    );
    eprintln!("streamed: {size} bytes, {TARGETS} targets, peak RSS {rss} bytes (one URL {alone})");

    // A target that does not parse far beyond the first ones read before
    // the run: the run ends there, with the line, exit 2.
    let bad = dir.path().join("bad.txt");
    write_set(&bad, port, Some(TARGETS - 10), TARGETS);
    let bad_path = bad.display().to_string();
    let (code, _, err, _) = run_measured(&[
        "--targets",
        &bad_path,
        "--order",
        "round-robin",
        "-k",
        "-c",
        "2",
    ]);
    assert_eq!(code, 2, "{err}");
    let line = (TARGETS - 10) * 5 + 3;
    assert!(
        err.contains(&format!("{bad_path}:{line}: 'GET GET http")),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// The requests nginx logged since `before` (its log's counts then).
fn since(now: BTreeMap<String, u64>, before: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    now.into_iter()
        .map(|(k, n)| (k.clone(), n - before.get(&k).copied().unwrap_or(0)))
        .filter(|(k, n)| *n > 0 && k.contains("?i="))
        .collect()
}

#[test]
fn a_large_set_is_drawn_from_its_index_by_weight_and_seed() {
    let dir = tempfile::tempdir().unwrap();
    let Some(ng) = nginx(dir.path()) else {
        return;
    };
    let port = ng.ports()[0];
    let file = dir.path().join("big.txt");
    // Just over the size that streams: the debug build indexes it on every run.
    let targets = 6000;
    let size = write_set(&file, port, None, targets);
    assert!(size > 16 << 20, "{size}");
    let path = file.display().to_string();
    let random = |seed: &str| {
        let args = ["--targets", &path, "--order", "random", "--seed", seed];
        let (code, _, err, _) =
            run_measured(&[&args[..], &["-c", "1", "--threads", "1", "-n", "1000"]].concat());
        assert_eq!(code, 0, "{err}");
    };
    // The same seed sends the same requests; another seed others.
    random("9");
    let first = logged(dir.path(), &ng, 1000);
    random("9");
    let both = logged(dir.path(), &ng, 2000);
    let again = since(both.clone(), &first);
    assert_eq!(since(first.clone(), &BTreeMap::new()), again);
    assert!(
        again.len() > 800,
        "drawn from the whole file: {}",
        again.len()
    );
    random("10");
    let other = since(logged(dir.path(), &ng, 3000), &both);
    assert_ne!(other, again);

    let (code, out, err, rss) = run_measured(&[
        "--format",
        "json",
        "--targets",
        &path,
        "--order",
        "weighted",
        "--seed",
        "3",
        "-k",
        "-c",
        "8",
        "--threads",
        "2",
        "-n",
        "20000",
    ]);
    assert_eq!(code, 0, "{err}");
    let r: HttpReport = serde_json::from_str(&out).unwrap();
    assert_eq!((r.complete_requests, r.failed_requests), (20_000, 0));
    let set = r.set.as_ref().unwrap();
    assert_eq!((set.targets, set.names), (targets as u64, 4));
    for q in &r.requests {
        let k: f64 = q.name[1..].parse().unwrap();
        let share = q.complete_requests as f64 / 20_000.0;
        assert!(
            (share - (k + 1.0) / 10.0).abs() < 0.02,
            "{}: {share}",
            q.name
        );
    }
    let url = format!("http://127.0.0.1:{port}/a.html");
    let (_, _, _, alone) = run_measured(&["-k", "-c", "8", "--threads", "2", "-n", "100", &url]);
    assert!(
        rss < alone + size / 5,
        "peak RSS {rss} bytes for a {size}-byte weighted set (one URL: {alone}): held, not indexed"
    );
    eprintln!("indexed: {size} bytes, peak RSS {rss} bytes (one URL {alone})");

    // The index is a scan, not a parse: a line that does not parse deep in
    // the file does not stop the run from starting; the draw that reaches
    // it ends the run there, with the line, exit 2.
    let bad = dir.path().join("bad.txt");
    write_set(&bad, port, Some(targets - 10), targets);
    let bad_path = bad.display().to_string();
    let before = ng.logged("\"");
    let args = ["--targets", &bad_path, "--order", "random", "--seed", "5"];
    let (code, _, err, _) = run_measured(&[&args[..], &["-k", "-c", "2", "-n", "60000"]].concat());
    assert_eq!(code, 2, "{err}");
    let line = (targets - 10) * 5 + 3;
    assert!(
        err.contains(&format!("{bad_path}:{line}: 'GET GET http")),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let sent = ng.logged("\"") - before;
    assert!(
        sent > 0 && sent < 60000,
        "{sent} requests before the bad line"
    );
}

/// A set like [`write_set`]'s without weights, but for target `at`, which
/// weighs 2.
fn write_late_weight(path: &Path, port: u16, at: usize, targets: usize) -> u64 {
    let mut f = BufWriter::new(std::fs::File::create(path).unwrap());
    let pad = "x".repeat(PAD);
    for i in 0..targets {
        let weight = if i == at { "# @weight 2\n" } else { "" };
        writeln!(
            f,
            "# @name n{}\n{weight}GET http://127.0.0.1:{port}/a.html?i={i}\nX-Pad: {pad}\n",
            i % 4
        )
        .unwrap();
    }
    f.flush().unwrap();
    std::fs::metadata(path).unwrap().len()
}

/// No `--order`: a large set whose targets carry weights is drawn by
/// them (indexed, as `--order weighted` is); one whose first targets
/// carry none is sent in file order, and a weight deep in it ends the
/// run with its `FILE:LINE`, exit 2, instead of going unused.
#[test]
fn a_large_set_without_an_order_is_drawn_by_its_weights() {
    let dir = tempfile::tempdir().unwrap();
    let Some(ng) = nginx(dir.path()) else {
        return;
    };
    let port = ng.ports()[0];
    let file = dir.path().join("big.txt");
    let targets = 6000;
    assert!(write_set(&file, port, None, targets) > 16 << 20);
    let path = file.display().to_string();
    let args = ["--format", "json", "--targets", &path, "--seed", "3"];
    let load = ["-k", "-c", "4", "-n", "4000"];
    let (code, out, err, _) = run_measured(&[&args[..], &load[..]].concat());
    assert_eq!(code, 0, "{err}");
    let r: HttpReport = serde_json::from_str(&out).unwrap();
    assert_eq!(r.complete_requests, 4000, "{:?}", r.errors);
    assert_eq!(r.set.as_ref().unwrap().order, "weighted");
    let by_name = logged(dir.path(), &ng, 4000);
    let mut drawn = [0u64; 4];
    for (request, n) in by_name.iter().filter(|(k, _)| k.contains("?i=")) {
        let i: usize = request
            .split("?i=")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        drawn[i % 4] += n;
    }
    // Name n{k} weighs k + 1 of 10, counted by nginx.
    for (k, n) in drawn.iter().enumerate() {
        let share = *n as f64 / 4000.0;
        assert!((share - (k as f64 + 1.0) / 10.0).abs() < 0.03, "{drawn:?}");
    }

    let late = dir.path().join("late.txt");
    let at = targets - 10;
    assert!(write_late_weight(&late, port, at, targets) > 16 << 20);
    let late = late.display().to_string();
    let (code, _, err, _) = run_measured(&["--targets", &late, "-k", "-c", "2"]);
    assert_eq!(code, 2, "{err}");
    let line = at * 4 + 3;
    assert!(
        err.contains(&format!("{late}:{line}: a weight after the first 256 KiB")),
        "{err}"
    );
    assert!(err.contains("--order weighted"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn a_large_set_streams_over_http2_file_order_and_drawn() {
    let dir = tempfile::tempdir().unwrap();
    // Connections closed every 1000 requests (nginx's default; the others' is higher).
    let Some(ng) = nginx_with(dir.path(), "keepalive_requests 1000;") else {
        return;
    };
    let h2c = ng.ports()[1];
    let file = dir.path().join("big.txt");
    let targets = 6000;
    let size = write_set(&file, h2c, None, targets);
    assert!(size > 16 << 20, "{size}");
    let path = file.display().to_string();
    let h2 = ["--http2", "--streams", "8", "-c", "2", "--format", "json"];

    // Once through in file order: every target exactly once, over
    // connections nginx closes every 1000 requests (GOAWAY: the streams it
    // refused are sent again from their chunks).
    let file_order = ["--targets", &path, "--order", "round-robin"];
    let (code, out, err, rss) = run_measured(&[&h2[..], &file_order[..]].concat());
    assert_eq!(code, 0, "{err}");
    let r: HttpReport = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (r.complete_requests, r.failed_requests),
        (targets as u64, 0),
        "{:?}",
        r.errors
    );
    assert_eq!(r.protocol, "h2c");
    assert!(r.http2.as_ref().unwrap().goaways >= 4, "{:?}", r.http2);
    let log = logged(dir.path(), &ng, targets as u64);
    let log: BTreeMap<_, _> = log.into_iter().filter(|(k, _)| k.contains("?i=")).collect();
    assert_eq!(log.len(), targets, "every target arrived");
    assert!(log.keys().all(|k| k.ends_with(" HTTP/2.0")), "{log:?}");
    assert!(log.values().all(|&n| n == 1), "each exactly once");
    let url = format!("http://127.0.0.1:{h2c}/a.html");
    let (code, _, err, alone) = run_measured(&[&h2[..], &["-n", "100", &url]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(
        rss < alone + size / 5,
        "peak RSS {rss} bytes for a {size}-byte set over HTTP/2 (one URL: {alone}): not streamed"
    );
    eprintln!("streamed over HTTP/2: {size} bytes, peak RSS {rss} bytes (one URL {alone})");

    // Drawn by weight from the index: each name's share its weight's.
    let args = ["--targets", &path, "--order", "weighted", "--seed", "3"];
    let (code, out, err, _) = run_measured(&[&h2[..], &args[..], &["-n", "4000"]].concat());
    assert_eq!(code, 0, "{err}");
    let r: HttpReport = serde_json::from_str(&out).unwrap();
    assert_eq!((r.complete_requests, r.failed_requests), (4000, 0));
    for q in &r.requests {
        let k: f64 = q.name[1..].parse().unwrap();
        let share = q.complete_requests as f64 / 4000.0;
        assert!(
            (share - (k + 1.0) / 10.0).abs() < 0.04,
            "{}: {share}",
            q.name
        );
    }
    let drawn = since(logged(dir.path(), &ng, targets as u64 + 4100), &log);
    assert!(
        drawn.len() > 2000,
        "drawn from the whole file: {}",
        drawn.len()
    );
}

#[test]
fn a_large_set_on_standard_input_streams_before_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let Some(ng) = nginx(dir.path()) else {
        return;
    };
    let port = ng.ports()[0];
    let file = dir.path().join("big.txt");
    let targets = 6000;
    let size = write_set(&file, port, None, targets);
    assert!(size > 16 << 20, "{size}");
    let text = std::fs::read(&file).unwrap();

    // All but the last target written, standard input kept open: requests
    // go out (nginx logs them) while kurabe is still reading it.
    let mut child = spawn(
        &[
            "--format",
            "json",
            "--targets",
            "-",
            "--order",
            "round-robin",
            "-k",
            "-c",
            "4",
        ],
        Stdio::piped(),
    );
    let mut stdin = child.stdin.take().unwrap();
    let last = text.len() - (size as usize / targets);
    stdin.write_all(&text[..last]).unwrap();
    let log = dir.path().join("access.log");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .count()
        < 100
    {
        assert!(
            std::time::Instant::now() < deadline,
            "no request before the input's end"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "kurabe waits for the rest"
    );
    stdin.write_all(&text[last..]).unwrap();
    drop(stdin);
    let (code, out, err, rss) = measured(child);
    assert_eq!(code, 0, "{err}");
    let r: HttpReport = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (r.complete_requests, r.failed_requests),
        (targets as u64, 0)
    );
    assert_eq!(r.set.as_ref().unwrap().source, "-");
    let got = logged(dir.path(), &ng, targets as u64);
    assert_eq!(got.len(), targets, "every target once");
    let url = format!("http://127.0.0.1:{port}/a.html");
    let (_, _, _, alone) = run_measured(&["-k", "-c", "4", "-n", "100", &url]);
    assert!(
        rss < alone + size / 5,
        "peak RSS {rss} for {size} bytes on stdin"
    );

    // The weighted order indexes the whole input first, then draws from
    // the spool: the same seed draws the same as from the file.
    let draw = |stdin: Stdio, from: &str| {
        let args = ["--targets", from, "--order", "weighted", "--seed", "4"];
        let child = spawn(
            &[&args[..], &["-c", "1", "--threads", "1", "-n", "500"]].concat(),
            stdin,
        );
        let (code, _, err, _) = measured(child);
        assert_eq!(code, 0, "{err}");
    };
    let n = targets as u64 + 100;
    let before = logged(dir.path(), &ng, n);
    draw(std::fs::File::open(&file).unwrap().into(), "-");
    let piped = logged(dir.path(), &ng, n + 500);
    draw(Stdio::null(), &file.display().to_string());
    let both = logged(dir.path(), &ng, n + 1000);
    assert_eq!(since(piped.clone(), &before), since(both, &piped));
}

/// A timed run of a set on standard input whose reader waits for more
/// (standard input kept open and silent after 16 MiB: 200 targets, then
/// comments) ends on time: the workers waiting for the set's next
/// requests give up at the run's end (they waited on the reader for
/// ever: the last targets' chunk never filled).
#[test]
fn a_timed_run_ends_on_time_while_standard_input_is_silent() {
    let srv = crate::serve::ServeChild::start(&[]);
    let mut child = kurabe()
        .args(["http", "--targets", "-", "-t", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The targets read before the run (256 KiB of them), then comments.
    let pad = "p".repeat(2000);
    let mut text = Vec::new();
    for i in 0..200 {
        writeln!(text, "GET {}{i}?{pad}", srv.url).unwrap();
    }
    let comment = format!("#{}\n", "c".repeat(4094));
    text.extend(comment.repeat((16 << 20) / 4096).as_bytes());
    stdin.write_all(&text).unwrap();
    let wrote = std::time::Instant::now();
    let bound = kurabe_testkit::signal::BOUND;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if wrote.elapsed() > bound {
            child.kill().unwrap();
            panic!("a 1 s run still going {bound:?} after its input went silent");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(status.code().is_some(), "{status}");
    drop(stdin);
}
