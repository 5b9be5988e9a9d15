//! Warm-up found rather than guessed: a target that burns CPU for its first
//! ~1.5 s and then idles; the plan has no warm-up, so the report must say
//! where the CPU settled.

use crate::util::kurabe;

#[test]
fn a_target_with_a_clear_warm_up_is_reported_with_its_settling_time() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        r#"name = "warm-up"
repeat = 1
[target]
command = "end=$(( $(date +%s%N) / 1000000 + 1500 )); while [ $(( $(date +%s%N) / 1000000 )) -lt $end ]; do :; done; exec sleep 30"
stop_grace = "1s"
[[variant]]
name = "jit"
[[workload]]
name = "watch"
watch = { duration = "4s", interval = "100ms" }
"#,
    )
    .unwrap();
    let html = dir.path().join("r.html");
    let o = kurabe()
        .arg("run")
        .arg(&plan)
        .arg("--store")
        .arg(dir.path().join("results.db"))
        .args(["--format", "json", "-q", "--html"])
        .arg(&html)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    kurabe_testkit::schema::assert_valid("experiment-report.schema.json", &v);
    let check = &v["workloads"][0]["warmup"][0];
    assert_eq!(check["variant"], "jit", "{v:#}");
    let settled = check["settled_after_s"].as_f64().unwrap();
    eprintln!("warm-up: settled after {settled} s");
    // Busy for 1.5 s from the start (the target starts as the watch does,
    // give or take a sampling interval and the machine's load).
    assert!((0.8..=3.0).contains(&settled), "{check:#}");
    assert_eq!(check["warmup_s"], 0.0);
    let text = kurabe()
        .args(["report", "e1", "--store"])
        .arg(dir.path().join("results.db"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("jit: warm-up 0.0 s is shorter") && !text.contains("\\n"),
        "the note in the terminal, wrapped, without a visible \\n: {text}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("Warm-up:</strong> jit: warm-up 0.0 s is shorter"),
        "html note"
    );
}
