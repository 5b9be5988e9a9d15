//! Soak mode (`http = { soak = "…" }`): `kurabe serve --leak-bytes 1024`
//! must come out growing at about 1 KiB per request, `--leak-bytes 0` at
//! about nothing. Short soaks and generous tolerances: the slope is a
//! property of the target, not of how busy the machine is — nor of which
//! other processes share its binary (see [`Siblings`]).

use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kurabe_store::{Entry, RunDetail, RunStatus, Store};

use crate::util::kurabe;

const PLAN: &str = r#"
name = "soak: leak vs no leak"
repeat = 1
warmup = "1s"
seed = 7
[target]
command = ["{kurabe}", "serve", "--port", "{port}"]
ready = "http://127.0.0.1:{port}/"
startup_timeout = "20s"
[[variant]]
name = "leak 1024"
args = ["--leak-bytes", "1024"]
[[variant]]
name = "no leak"
args = ["--leak-bytes", "0"]
[[workload]]
name = "soak GET /"
http = { path = "/", soak = "6s", rate = 1000, concurrency = 2, keep_alive = true }
metrics = ["requests_per_second", "pss_slope_bytes_per_request", "pss_growth_mb_per_hour", "pss_growing", "pss_peak_bytes"]
"#;

/// (slope bytes/request, verdict, samples) of each variant's run.
fn soak_results(db: &Path) -> Vec<(String, f64, String, usize)> {
    let store = Store::open(db).unwrap();
    let list = store.list().unwrap();
    let Entry::Experiment(e) = store.get(list[0].id).unwrap() else {
        panic!("not an experiment")
    };
    e.runs
        .iter()
        .map(|r| {
            let r = &r.run;
            assert_eq!(r.status, RunStatus::Ok, "{:?}", r.error_tail);
            let soak = r
                .record
                .as_ref()
                .and_then(RunDetail::soak)
                .expect("a soak record");
            let slope = r
                .metrics
                .iter()
                .find(|m| m.name == "pss_slope_bytes_per_request")
                .map(|m| m.value)
                .unwrap();
            assert_eq!(soak.pss_slope_bytes_per_request, Some(slope));
            (
                r.variant.clone(),
                slope,
                soak.verdict.as_str().to_owned(),
                soak.samples.len(),
            )
        })
        .collect()
}

/// PID of a `kurabe serve` child of `parent` (the soak's target), if one runs.
fn target_of(parent: u32) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // ppid is the second field after the parenthesised command name.
        let ppid: u32 = stat
            .rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        (ppid == parent && cmdline.split(|b| *b == 0).any(|a| a == b"serve")).then_some(pid)
    })
}

/// Idle `kurabe serve` processes — the same binary as the target — started
/// one every 400 ms from 1.5 s after each new target of the `kurabe run`
/// appears (after its warm-up; the previous batch is stopped then). Each maps the binary's
/// code, so the target's share of those pages, and with it its Σ PSS,
/// falls through the whole soak: what happened when the rest of the test
/// suite ran kurabe processes beside this test, and made a 1 KiB leak read
/// as 783 B/request while the fit used Σ PSS. The pacing is the
/// disturbance itself, not synchronisation: the assertions do not depend on it.
struct Siblings {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<usize>>,
}

impl Siblings {
    fn start(run_pid: u32) -> Siblings {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut batch: Vec<Child> = Vec::new();
            let (mut target, mut since, mut started) = (None, Instant::now(), 0);
            let stop_all = |batch: &mut Vec<Child>| {
                for mut c in batch.drain(..) {
                    let _ = c.kill();
                    let _ = c.wait();
                }
            };
            while !flag.load(Ordering::Relaxed) {
                let now = target_of(run_pid);
                if now.is_some() && now != target {
                    stop_all(&mut batch);
                    target = now;
                    since = Instant::now();
                }
                let due = Duration::from_millis(1500 + 400 * batch.len() as u64);
                if target.is_some() && batch.len() < 16 && since.elapsed() >= due {
                    if let Ok(c) = kurabe()
                        .args(["serve", "--port", "0"])
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                    {
                        batch.push(c);
                        started += 1;
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            stop_all(&mut batch);
            started
        });
        Siblings {
            stop,
            thread: Some(thread),
        }
    }

    /// Stop and reap every sibling; how many were started.
    fn finish(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().map_or(0, |t| t.join().unwrap_or(0))
    }
}

impl Drop for Siblings {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn leaking_server_grows_about_its_leak_per_request_and_the_other_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let db = dir.path().join("results.db");
    let child = kurabe()
        .arg("run")
        .arg(&plan)
        .arg("--store")
        .arg(&db)
        .arg("-q")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let siblings = Siblings::start(child.id());
    let out = child.wait_with_output().unwrap();
    let started = siblings.finish();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(started >= 8, "only {started} sibling processes started");
    let results = soak_results(&db);
    assert_eq!(results.len(), 2);
    for (variant, slope, verdict, samples) in results {
        println!("{variant}: {slope} B/request, {verdict}, {samples} samples");
        assert!(samples >= 20, "{variant}: only {samples} samples");
        if variant == "leak 1024" {
            // 1024 B payload + malloc's chunk header and the Vec of boxes
            // holding it: a little over 1 KiB (1050-1060). The issue's
            // bar, within 20 % of 1024, holds with siblings churning.
            assert!((820.0..1230.0).contains(&slope), "{variant}: {slope}");
            assert_eq!(verdict, "growing", "{variant}: {slope}");
        } else {
            assert!(slope.abs() < 100.0, "{variant}: {slope}");
        }
    }
    // The report compares the slopes by difference (a ratio to a flat
    // slope does not exist) and draws memory over requests.
    let report = |format: &str| {
        let out = kurabe()
            .args(["report", "e1", "--format", format, "--store"])
            .arg(&db)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let json: serde_json::Value = serde_json::from_str(&report("json")).unwrap();
    let slope = json["workloads"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "pss_slope_bytes_per_request")
        .unwrap();
    let vs = &slope["versus_baseline"][0];
    let d = vs["comparison"]["difference"]["difference"]
        .as_f64()
        .unwrap();
    assert!((-1230.0..-820.0).contains(&d), "{vs}");
    assert!(vs["comparison"]["ratio"].is_null(), "{vs}");
    let phrase = vs["phrase"].as_str().unwrap();
    assert!(
        phrase.contains("B/request") && phrase.contains("grows slower"),
        "{phrase}"
    );
    let html = report("html");
    assert!(html.contains("Memory over requests served, per soak run"));
    assert!(html.contains("requests served (measured phase)"));
}

#[test]
fn soak_without_a_target_is_a_failed_run_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        r#"
name = "soak without target"
repeat = 1
[[variant]]
name = "a"
[[workload]]
name = "w"
http = { url = "http://127.0.0.1:9/", soak = "1s" }
"#,
    )
    .unwrap();
    let out = kurabe()
        .arg("run")
        .arg(&plan)
        .arg("--store")
        .arg(dir.path().join("results.db"))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("soak run needs a [target]"), "{text}");
}

#[test]
fn soak_with_a_duration_is_a_bad_plan_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        r#"
name = "soak and duration"
[target]
command = ["{kurabe}", "serve", "--port", "{port}"]
[[variant]]
name = "a"
[[workload]]
name = "w"
http = { soak = "10s", duration = "5s" }
"#,
    )
    .unwrap();
    let out = kurabe()
        .arg("run")
        .arg(&plan)
        .arg("--store")
        .arg(dir.path().join("results.db"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("workload[0].http.soak"), "{err}");
    assert!(err.contains("remove `requests` and `duration`"), "{err}");
}
