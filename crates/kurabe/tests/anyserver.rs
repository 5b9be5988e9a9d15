//! Plans aimed at servers kurabe did not start: variants with their own
//! `url` and no `[target]` (load only on loopback: 127.0.0.1 and 127.0.0.2),
//! any URL accepted (checked with `--dry-run`, which sends nothing),
//! `--set KEY=VALUE` placeholders.

use std::path::{Path, PathBuf};

use kurabe_store::{Entry, Store};

use crate::serve::ServeChild;
use crate::util::kurabe;

fn plan_file(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("plan.toml");
    std::fs::write(&p, text).unwrap();
    p
}

fn out(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn variants_can_be_existing_servers_with_their_own_url() {
    let fast = ServeChild::start(&[]);
    let slow = ServeChild::start(&["--bind", "127.0.0.2", "--work-us", "3000"]);
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_file(
        dir.path(),
        &format!(
            r#"
name = "blue/green"
repeat = 3
[[variant]]
name = "blue"
url = "{}"
[[variant]]
name = "green"
url = "{}"
[[workload]]
name = "index"
http = {{ path = "/", requests = 40 }}
"#,
            fast.url, slow.url
        ),
    );
    let o = kurabe()
        .arg("run")
        .arg(&plan)
        .arg("--store")
        .arg(dir.path().join("r.db"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out(&o));
    // Each server got its own three rounds of 40 requests (plus nothing else).
    assert_eq!(fast.served(), 120);
    assert_eq!(slow.served(), 120);
    let store = Store::open(&dir.path().join("r.db")).unwrap();
    let id = store.list().unwrap()[0].id;
    let Entry::Experiment(exp) = store.get(id).unwrap() else {
        panic!("not an experiment")
    };
    assert_eq!(exp.runs.len(), 6);
    // Local servers: their CPU per request is measured without a [target].
    assert!(
        exp.runs
            .iter()
            .all(|r| r.run.metrics.iter().any(|m| m.name == "cpu_ms_per_request")),
        "no server CPU in {:?}",
        exp.runs[0].run.metrics
    );
    // And it is each variant's own server: green burns 3 ms of CPU per request.
    let cpu = |variant: &str| {
        let v: Vec<f64> = exp
            .runs
            .iter()
            .filter(|r| r.run.variant == variant)
            .flat_map(|r| r.run.metrics.iter())
            .filter(|m| m.name == "cpu_ms_per_request")
            .map(|m| m.value)
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    assert!(
        cpu("green") > 2.0 && cpu("blue") < 1.0,
        "{} {}",
        cpu("green"),
        cpu("blue")
    );
}

#[test]
fn dry_run_accepts_any_url_and_prints_the_schedule_without_sending() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_file(
        dir.path(),
        r#"
name = "regions"
repeat = 4
[[variant]]
name = "eu"
url = "https://eu.staging.example.invalid"
[[variant]]
name = "us"
url = "http://{us_host}:8080"
[[workload]]
name = "api"
http = { path = "/api", duration = "10s", warmup = "5s" }
"#,
    );
    let o = kurabe()
        .arg("run")
        .arg(&plan)
        .args(["--dry-run", "--seed", "7", "--set", "us_host=10.1.2.3"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("2 variants × 1 workload × 4 rounds = 8 runs"),
        "{text}"
    );
    assert_eq!(text.matches("round ").count(), 4, "{text}");
    assert!(text.contains("at least 2m 0s"), "{text}");
    // --seed 7 gives the order a real run with that seed takes.
    let first = kurabe_model::stats::randomized_blocks(2, 1, 7)[0][0];
    let name = ["eu", "us"][first];
    assert!(
        text.contains(&format!("round 1:\n  {name} / api")),
        "{text}"
    );
}

#[test]
fn placeholders_need_set_and_set_needs_a_placeholder() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_file(
        dir.path(),
        r#"
name = "build {commit}"
[target]
command = "{server} --port {port}"
[[variant]]
name = "a"
[[workload]]
name = "w"
http = { requests = 5 }
"#,
    );
    let run = |extra: &[&str]| {
        kurabe()
            .arg("run")
            .arg(&plan)
            .arg("--dry-run")
            .args(extra)
            .output()
            .unwrap()
    };
    let o = run(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(
        out(&o).contains("--set server=VALUE"),
        "the error says how to fill it: {}",
        out(&o)
    );
    let o = run(&["--set", "server=/bin/x", "--set", "comit=1"]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(out(&o).contains("--set comit"), "{}", out(&o));
    let o = run(&["--set", "server=/opt/my server", "--set", "commit=abc"]);
    assert!(o.status.success(), "{}", out(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("plan `build abc` is valid"));
    let o = run(&["--set", "Bad=1"]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
}

#[test]
fn http_compares_two_local_servers_in_rounds_with_verdicts() {
    let fast = ServeChild::start(&[]);
    let slow = ServeChild::start(&["--work-us", "4000"]);
    let o = kurabe()
        .args([
            "http", "-q", "-n", "30", "--rounds", "3", "--format", "json",
        ])
        .args([&fast.url, &slow.url])
        .env("KURABE_STORE", "/nonexistent/never-written.db")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    kurabe_testkit::schema::assert_valid("http-compare.schema.json", &v);
    kurabe_testkit::schema::assert_valid("experiment-report.schema.json", &v["comparison"]);
    assert_eq!(v["urls"][0], fast.url.as_str());
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 6);
    for r in runs {
        assert_eq!(r["http"]["complete_requests"], 30, "{r}");
        assert!(
            r["server"]["pid"].as_u64().is_some(),
            "local server sampled: {r}"
        );
    }
    // Each server got its three rounds of 30 requests.
    assert_eq!(fast.served(), 90);
    assert_eq!(slow.served(), 90);
    // The slow server's CPU per request is measured and compared.
    let text = v["comparison"].to_string();
    assert!(text.contains("cpu_ms_per_request"), "{text}");
    assert!(text.contains("requests_per_second") && text.contains("failed_percent"));
    // Nothing saved without --save.
    assert!(!Path::new("/nonexistent/never-written.db").exists());
}

#[test]
fn rounds_need_two_urls() {
    let o = kurabe()
        .args(["http", "-n", "1", "--rounds", "3", "http://127.0.0.1:9/"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(out(&o).contains("--rounds compares two or more URLs"));
    let o = kurabe()
        .args(["http", "http://127.0.0.1:9/", "http://127.0.0.1:9/x"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(
        out(&o).contains("-n REQUESTS, -t TIME or --stage"),
        "{}",
        out(&o)
    );
}

#[test]
fn http_save_keeps_the_comparison_as_an_experiment_report_renders() {
    let fast = ServeChild::start(&[]);
    let slow = ServeChild::start(&["--work-us", "2000"]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let o = kurabe()
        .args([
            "http", "-q", "-n", "20", "--rounds", "3", "--save", "--store",
        ])
        .arg(&db)
        .args([&fast.url, &slow.url])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out(&o));
    assert!(out(&o).contains("saved as e1"), "{}", out(&o));
    let o = kurabe()
        .args(["results", "list", "--store"])
        .arg(&db)
        .output()
        .unwrap();
    let listing = out(&o);
    assert!(o.status.success(), "{listing}");
    assert!(listing.contains("e1  experiment"), "{listing}");
    assert!(listing.contains("complete, 6 runs"), "{listing}");
    let o = kurabe()
        .args(["report", "e1", "--store"])
        .arg(&db)
        .output()
        .unwrap();
    let report = out(&o);
    assert!(o.status.success(), "{report}");
    assert!(
        report.contains(&fast.url) && report.contains(&slow.url),
        "{report}"
    );
    // The comparison against the first URL is there (its verdict depends
    // on the machine's load, so it is not asserted).
    let versus = format!("vs {}", fast.url);
    assert!(
        report.contains("req/s") && report.contains(&versus),
        "{report}"
    );
    let store = Store::open(&db).unwrap();
    let Entry::Experiment(exp) = store.get("e1".parse().unwrap()).unwrap() else {
        panic!("e1 is not an experiment");
    };
    assert_eq!(exp.runs.len(), 6);
    assert_eq!(fast.served(), 60);
    assert_eq!(slow.served(), 60);
}
