//! Soak mode (`http = { soak = "…" }`): `kurabe serve --leak-bytes 1024`
//! must come out growing at about 1 KiB per request, `--leak-bytes 0` at
//! about nothing. Short soaks and generous tolerances: the slope is a
//! property of the target, not of how busy the machine is.

use std::path::Path;

use kurabe_store::{Entry, RunStatus, Store};

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
            let soak = &r.record.as_ref().unwrap()["soak"];
            let slope = r
                .metrics
                .iter()
                .find(|m| m.name == "pss_slope_bytes_per_request")
                .map(|m| m.value)
                .unwrap();
            assert_eq!(soak["pss_slope_bytes_per_request"].as_f64(), Some(slope));
            (
                r.variant.clone(),
                slope,
                soak["verdict"].as_str().unwrap().to_owned(),
                soak["samples"].as_array().unwrap().len(),
            )
        })
        .collect()
}

#[test]
fn leaking_server_grows_about_its_leak_per_request_and_the_other_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let db = dir.path().join("results.db");
    let out = kurabe()
        .arg("run")
        .arg(&plan)
        .arg("--store")
        .arg(&db)
        .arg("-q")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = soak_results(&db);
    assert_eq!(results.len(), 2);
    for (variant, slope, verdict, samples) in results {
        assert!(samples >= 20, "{variant}: only {samples} samples");
        if variant == "leak 1024" {
            // 1024 B payload + malloc's chunk header and the Vec of boxes
            // holding it: a little over 1 KiB (1048-1053 when run alone).
            // The band is generous because this short soak shares two
            // cores with the rest of the test suite: one such run measured
            // 783 (cause not yet pinned down; see the soak module).
            assert!((600.0..1600.0).contains(&slope), "{variant}: {slope}");
            assert_eq!(verdict, "growing", "{variant}: {slope}");
        } else {
            assert!(slope.abs() < 200.0, "{variant}: {slope}");
        }
    }
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
