//! `--prometheus-addr` (issue 26): a real Prometheus on loopback scrapes
//! `kurabe http` every second during a 10 s run against `kurabe serve`,
//! and its query API's final request count agrees with kurabe's report;
//! scrapers that never read, never send or flood cannot slow the load;
//! bad and taken addresses are setup errors before any request.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::serve::ServeChild;
use crate::util::kurabe;

/// A child killed on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Read `stderr` lines until one contains `marker`; the rest of that line
/// after the marker. The reader keeps draining afterwards (into `rest`).
fn read_until(
    stderr: ChildStderr,
    marker: &'static str,
) -> (String, std::thread::JoinHandle<String>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        let mut all = String::new();
        let mut sent = false;
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if !sent {
                if let Some(i) = line.find(marker) {
                    let _ = tx.send(line[i + marker.len()..].to_owned());
                    sent = true;
                }
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let found = rx
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("no line with {marker:?} within 60 s"));
    (found, h)
}

/// Start `kurabe http ARGS --prometheus-addr :0`; the child and the
/// metrics address it printed.
fn kurabe_http(args: &[&str]) -> (Killed, SocketAddr, std::thread::JoinHandle<String>) {
    let mut child = kurabe()
        .arg("http")
        .args(args)
        .args(["--prometheus-addr", ":0", "-q"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (rest, stderr) = read_until(
        child.stderr.take().unwrap(),
        "kurabe: serving Prometheus metrics at http://",
    );
    let addr = rest.trim_end_matches("/metrics").parse().unwrap();
    (Killed(child), addr, stderr)
}

/// One GET over a fresh connection; the status code and the body.
fn get(addr: SocketAddr, target: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET {target} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, body.to_owned())
}

/// `query` URL-encoded (enough for PromQL: the few characters that matter).
fn encode(query: &str) -> String {
    query
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The value of an instant PromQL query's single sample, if it has one.
fn query(prom: SocketAddr, q: &str) -> Option<f64> {
    let (code, body) = get(prom, &format!("/api/v1/query?query={}", encode(q)));
    if code == 503 {
        return None; // still starting
    }
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["status"], "success", "{body}");
    let value = v["data"]["result"].as_array()?.first()?["value"][1]
        .as_str()?
        .to_owned();
    value.parse().ok()
}

/// Poll `q` until `ok` holds of its value or `deadline` passes.
fn poll(prom: SocketAddr, q: &str, deadline: Instant, ok: impl Fn(f64) -> bool) -> Option<f64> {
    loop {
        let v = query(prom, q);
        if v.is_some_and(&ok) {
            return v;
        }
        if Instant::now() > deadline {
            return v;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A throwaway Prometheus on a free loopback port scraping `target` every
/// second; the child (killed on drop) and its address.
fn prometheus(dir: &Path, target: SocketAddr) -> (Killed, SocketAddr) {
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: kurabe\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let mut child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        // Port 0 works: the log line "Listening on" names the port taken.
        .arg("--web.listen-address=127.0.0.1:0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("prometheus is installed (.ci/run installs it)");
    let (rest, _log) = read_until(
        child.stderr.take().unwrap(),
        "msg=\"Listening on\" address=",
    );
    (Killed(child), rest.trim().parse().unwrap())
}

/// The report's complete requests and request rate.
fn report_counts(stdout: &str) -> (u64, f64) {
    let v: serde_json::Value = serde_json::from_str(stdout).unwrap();
    (
        v["complete_requests"].as_u64().unwrap(),
        v["requests_per_second"].as_f64().unwrap(),
    )
}

#[test]
fn a_real_prometheus_scrapes_the_run_and_its_final_count_matches_the_report() {
    let server = ServeChild::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (mut k, metrics, stderr) = kurabe_http(&[
        &server.url,
        "-t",
        "10",
        "-c",
        "2",
        "-k",
        "--rate",
        "400",
        "--format",
        "json",
        // The final figures are served until Prometheus took them.
        "--prometheus-linger",
        "20s",
    ]);
    let (_prom, prom) = prometheus(dir.path(), metrics);
    let deadline = Instant::now() + Duration::from_secs(60);
    // Scraped while the load runs: a count above zero, before the end.
    let during = poll(prom, "sum(kurabe_requests_total)", deadline, |v| v > 0.0);
    assert!(during.is_some_and(|v| v > 0.0), "no sample during the run");
    assert!(
        k.0.try_wait().unwrap().is_none(),
        "the run ended before its first scrape"
    );
    let status = k.0.wait().unwrap();
    let mut stdout = String::new();
    k.0.stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let stderr = stderr.join().unwrap();
    assert!(status.success(), "{status:?} {stderr}");
    let (complete, rps) = report_counts(&stdout);
    // After the run the target is gone (stale): read the last samples.
    let finished = poll(prom, "last_over_time(kurabe_finished[5m])", deadline, |v| {
        v == 1.0
    });
    assert_eq!(finished, Some(1.0), "the final figures were never scraped");
    let scraped = query(prom, "sum(last_over_time(kurabe_requests_total[5m]))").unwrap();
    // One scrape interval's worth of requests at the report's rate.
    let tolerance = rps * 1.0;
    assert!(
        (scraped - complete as f64).abs() <= tolerance,
        "Prometheus {scraped}, report {complete} (tolerance {tolerance})"
    );
    // The linger served the final figures: they are the report's exactly.
    assert_eq!(scraped as u64, complete);
    let sent = query(prom, "sum(last_over_time(kurabe_requests_sent_total[5m]))").unwrap();
    assert!(sent >= scraped);
    let hist = query(
        prom,
        "sum(last_over_time(kurabe_request_duration_seconds_count[5m]))",
    );
    assert_eq!(hist, Some(scraped));
    assert_eq!(
        query(prom, "last_over_time(kurabe_target_rate[5m])"),
        Some(400.0)
    );
    // kurabe serve on loopback is the measured local server.
    let pss = query(prom, "last_over_time(kurabe_server_pss_bytes[5m])").unwrap();
    assert!(pss > 0.0);
}

/// Floods the endpoint with connections that close at once, holds many
/// that never send, and sends requests it never reads; until `stop`.
fn abuse(addr: SocketAddr, stop: &AtomicBool, attempts: &AtomicU64) {
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut silent = Vec::new();
            while !stop.load(Ordering::Relaxed) && silent.len() < 200 {
                if let Ok(c) = TcpStream::connect_timeout(&addr, Duration::from_millis(50)) {
                    silent.push(c);
                }
            }
            while !stop.load(Ordering::Relaxed) {
                std::thread::park_timeout(Duration::from_millis(50));
            }
        });
        s.spawn(|| {
            let mut unread = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                if let Ok(mut c) = TcpStream::connect_timeout(&addr, Duration::from_millis(50)) {
                    let _ = c.write_all(b"GET /metrics HTTP/1.1\r\n\r\n");
                    unread.push(c);
                    unread.truncate(500);
                }
                attempts.fetch_add(1, Ordering::Relaxed);
            }
        });
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                drop(TcpStream::connect_timeout(&addr, Duration::from_millis(50)));
                attempts.fetch_add(1, Ordering::Relaxed);
            }
        });
    });
}

#[test]
fn scrapers_that_stall_or_flood_do_not_slow_the_load() {
    let server = ServeChild::start(&[]);
    let (mut k, metrics, stderr) = kurabe_http(&[
        &server.url,
        "-t",
        "8",
        "-c",
        "2",
        "-k",
        "--rate",
        "300",
        "--format",
        "json",
    ]);
    let (stop, attempts) = (AtomicBool::new(false), AtomicU64::new(0));
    let t0 = Instant::now();
    // Four seconds of abuse, then the endpoint must answer again (its
    // slots free within their deadline) while the load still runs.
    std::thread::scope(|s| {
        s.spawn(|| abuse(metrics, &stop, &attempts));
        while t0.elapsed() < Duration::from_secs(4) && k.0.try_wait().unwrap().is_none() {
            std::thread::park_timeout(Duration::from_millis(50));
        }
        stop.store(true, Ordering::Relaxed);
    });
    let (code, body) = get(metrics, "/metrics");
    assert_eq!(code, 200);
    assert!(
        body.contains("kurabe_finished 0"),
        "the run ended during the abuse: {body}"
    );
    let status = k.0.wait().unwrap();
    let took = t0.elapsed();
    let mut stdout = String::new();
    k.0.stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let stderr = stderr.join().unwrap();
    assert!(status.success(), "{status:?} {stderr}");
    assert!(
        attempts.load(Ordering::Relaxed) > 20,
        "the flood did not run"
    );
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    // The schedule was kept (the open model's achieved rate) and the run
    // ended on time, its endpoint flooded or not.
    let achieved = v["rate"]["achieved_per_s"].as_f64().unwrap();
    assert!(
        achieved > 300.0 * 0.95,
        "achieved {achieved} req/s of 300: {stdout}"
    );
    assert!(v["complete_requests"].as_u64().unwrap() >= 2200);
    assert!(took < Duration::from_secs(20), "{took:?}");
}

#[test]
fn bad_and_taken_addresses_are_one_line_and_exit_2_before_any_request() {
    let server = ServeChild::start(&[]);
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    for (addr, says) in [
        (
            "9464".to_owned(),
            "--prometheus-addr '9464': no :PORT; expected [HOST]:PORT",
        ),
        (
            "example.com:80".to_owned(),
            "the host is not an IP address or localhost",
        ),
        (
            format!(":{port}"),
            "the address is in use; pick another port",
        ),
    ] {
        let out = kurabe()
            .args(["http", &server.url, "-n", "5", "--prometheus-addr", &addr])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{addr}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("kurabe: error: ") && err.contains(says),
            "{err}"
        );
        assert!(out.stdout.is_empty());
    }
    // No request reached the server.
    assert_eq!(server.served(), 0);
}

/// The value of the sample `series` (name and labels, exactly) in `text`.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
}

/// `kurabe worker --prometheus-addr` serves its share of each run: one
/// worker, on a store schema of its own (no other test's worker takes the
/// share), serves zeros before any share and its share's final figures
/// after (the coordinator returns once the share's result is stored, which
/// the worker does after its last snapshot); a bad address is refused
/// before the worker registers.
#[test]
fn a_worker_serves_the_metrics_of_its_share() {
    let Some(pg) = kurabe_testkit::pg::server().map(|s| s.url.clone()) else {
        return;
    };
    let out = kurabe()
        .args(["worker", "--store", &pg, "--prometheus-addr", "9464"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        (out.status.code(), err.lines().count()),
        (Some(2), 1),
        "{err}"
    );
    assert!(err.contains("--prometheus-addr '9464'"), "{err}");
    let schema = format!("kurabe_worker_metrics_{}", std::process::id());
    let mut db = kurabe_store::pg::connect(&pg).unwrap();
    db.batch_execute(&format!(
        "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
    ))
    .unwrap();
    let sep = if pg.contains('?') { '&' } else { '?' };
    let store = format!("{pg}{sep}options=-c%20search_path%3D{schema}");
    let server = ServeChild::start(&[]);
    let mut child = kurabe()
        .args(["worker", "--name", "metrics-w", "--store", &store])
        .args(["--prometheus-addr", ":0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (rest, _stderr) = read_until(
        child.stderr.take().unwrap(),
        "kurabe: serving Prometheus metrics at http://",
    );
    let _worker = Killed(child);
    let addr: SocketAddr = rest.trim_end_matches("/metrics").parse().unwrap();
    let (code, before) = get(addr, "/metrics");
    assert_eq!(code, 200);
    assert!(before.ends_with("# EOF\n"), "{before}");
    assert_eq!(sample(&before, "kurabe_finished"), Some(0.0), "{before}");
    let out = kurabe()
        .args(["http", "-q", "--format", "json", "--store", &store])
        .args(["--workers", "1", "-k", "-c", "2", "-n", "300", &server.url])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (complete, _) = report_counts(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(complete, 300);
    let (_, after) = get(addr, "/metrics");
    let who = format!("name=\"{}\",method=\"GET\"", server.url);
    let ok = format!("kurabe_requests_total{{{who},status=\"200\"}}");
    assert_eq!(sample(&after, &ok), Some(300.0), "{after}");
    assert_eq!(sample(&after, "kurabe_finished"), Some(1.0), "{after}");
    let _ = db.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"));
}

/// Scrape `metrics` until it serves a finished run's figures (the run
/// lingers until then); that scrape.
fn final_scrape(metrics: SocketAddr) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, t) = get(metrics, "/metrics");
        if sample(&t, "kurabe_finished") == Some(1.0) {
            return t;
        }
        assert!(Instant::now() < deadline, "never finished:\n{t}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every response failing `--check` (the server answers 200): the final
/// scrape's `bucket="check"` series is the report's check failures, and
/// every bucket of the report is exported with its count.
#[test]
fn failed_checks_are_exported_in_the_check_bucket() {
    let server = ServeChild::start(&[]);
    let (mut k, metrics, stderr) = kurabe_http(&[
        &server.url,
        "-n",
        "300",
        "-c",
        "2",
        "-k",
        "--check",
        "status==201",
        "--format",
        "json",
        "--prometheus-linger",
        "20s",
    ]);
    let text = final_scrape(metrics);
    let status = k.0.wait().unwrap();
    let mut stdout = String::new();
    let mut out = k.0.stdout.take().unwrap();
    out.read_to_string(&mut stdout).unwrap();
    let stderr = stderr.join().unwrap();
    // No request passed its check: the run failed, its report written.
    assert_eq!(status.code(), Some(1), "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let failures = report["failures"].as_object().unwrap();
    assert_eq!(failures["check"], 300, "{report}");
    let who = format!("name=\"{}\",method=\"GET\"", server.url);
    for (bucket, count) in failures {
        let series = format!("kurabe_failures_total{{{who},bucket=\"{bucket}\"}}");
        assert_eq!(sample(&text, &series), count.as_f64(), "{series}\n{text}");
    }
    let exported = text
        .lines()
        .filter(|l| l.starts_with("kurabe_failures_total{"))
        .count();
    assert_eq!(exported, failures.len(), "{text}");
}

/// A request set's names are the `name` label of the requests and
/// failures (the method is in the name when not GET, so the label is
/// empty): each name's count is the report's breakdown row, and the names
/// add up to the run.
#[test]
fn a_request_set_is_counted_by_name() {
    let server = ServeChild::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("set.txt");
    let url = server.url.trim_end_matches('/');
    std::fs::write(
        &set,
        format!("# @name home\nGET {url}/\n\n# @name item\nGET {url}/item/1\n\nGET {url}/other\n"),
    )
    .unwrap();
    let set = set.to_str().unwrap();
    let (mut k, metrics, stderr) = kurabe_http(&[
        "--targets",
        set,
        "-n",
        "300",
        "-c",
        "2",
        "-k",
        "--format",
        "json",
        "--prometheus-linger",
        "20s",
    ]);
    let text = final_scrape(metrics);
    let status = k.0.wait().unwrap();
    let mut stdout = String::new();
    let mut out = k.0.stdout.take().unwrap();
    out.read_to_string(&mut stdout).unwrap();
    assert!(status.success(), "{}", stderr.join().unwrap());
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let rows = report["requests"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{report}");
    let mut sum = 0.0;
    for row in rows {
        let name = row["name"].as_str().unwrap();
        let series = format!("kurabe_requests_total{{name=\"{name}\",method=\"\",status=\"200\"}}");
        let n = sample(&text, &series);
        assert_eq!(n, row["complete_requests"].as_f64(), "{series}\n{text}");
        sum += n.unwrap();
    }
    assert!(rows.iter().any(|r| r["name"] == "home"), "{report}");
    assert_eq!(sum, 300.0);
    let who = format!("name=\"{set}\",method=\"\"");
    let sent = sample(&text, &format!("kurabe_requests_sent_total{{{who}}}"));
    assert_eq!(sent, Some(300.0), "{text}");
}

/// One GET, or `None` once nothing listens (the run is over).
fn try_get(addr: SocketAddr, target: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    write!(s, "GET {target} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out.split_once("\r\n\r\n")?.1.to_owned())
}

/// `kurabe run --prometheus-addr`: one endpoint for the whole experiment,
/// showing each http run in turn; every series of a run carries its
/// variant and workload; after the last run its final figures stay until
/// one more scrape (`--prometheus-linger`).
#[test]
fn a_plans_runs_are_served_labelled_by_variant_and_workload() {
    let server = ServeChild::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.toml");
    std::fs::write(
        &plan,
        format!(
            r#"name = "scraped"
repeat = 1
[[variant]]
name = "fast"
url = "{url}"
[[variant]]
name = "slow"
url = "{url}"
[[workload]]
name = "index"
http = {{ path = "/", duration = "2s", rate = 200, concurrency = 2, keep_alive = true }}
"#,
            url = server.url
        ),
    )
    .unwrap();
    let mut child = kurabe()
        .arg("run")
        .arg(&plan)
        .args(["--store", dir.path().join("s.db").to_str().unwrap()])
        .args([
            "--prometheus-addr",
            ":0",
            "--prometheus-linger",
            "60s",
            "-q",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (rest, stderr) = read_until(
        child.stderr.take().unwrap(),
        "kurabe: serving Prometheus metrics at http://",
    );
    let mut child = Killed(child);
    let addr: SocketAddr = rest.trim_end_matches("/metrics").parse().unwrap();
    let mut scrapes = Vec::new();
    while let Some(text) = try_get(addr, "/metrics") {
        scrapes.push(text);
        // A scrape every 50 ms, as a busy dashboard would.
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = child.0.wait().unwrap();
    assert!(status.success(), "{}", stderr.join().unwrap());
    let ok = |v: &str, t: &str| {
        let tail = format!(",variant=\"{v}\",workload=\"index\",status=\"200\"}} ");
        t.lines()
            .filter(|l| l.starts_with("kurabe_requests_total{"))
            .find_map(|l| l.split_once(&tail)?.1.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    for v in ["fast", "slow"] {
        assert!(
            scrapes.iter().any(|t| ok(v, t) > 0.0),
            "no scrape counted {v}'s requests in {} scrapes: {:?}",
            scrapes.len(),
            scrapes.last()
        );
    }
    // The last scrape, after the experiment: the last run's final figures.
    let last = scrapes.last().unwrap();
    let (fast, slow) = (ok("fast", last), ok("slow", last));
    assert!((fast > 0.0) != (slow > 0.0), "{last}");
    let finished = last
        .lines()
        .find(|l| l.starts_with("kurabe_finished{"))
        .unwrap_or_default();
    assert!(finished.ends_with(",workload=\"index\"} 1"), "{last}");
    // 2 s at 200/s: 400 sends, each answered on loopback unless the end
    // of the run cut it short.
    let count = fast.max(slow);
    assert!((300.0..=400.0).contains(&count), "{last}");
}
