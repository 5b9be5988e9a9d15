//! `kurabe cmd --measure instructions`: instruction counts under valgrind's
//! Cachegrind through the built binary. Two `awk` loops 5 % apart give
//! "worse" at the ratio valgrind itself counts when run on the same
//! commands directly (the independent reference); the same loop against
//! itself is within noise; every format carries the count; the store's
//! history reads it; a plan's `measure = "instructions"` counts too and
//! `check` gates on the count; without valgrind on PATH the command is
//! refused before anything runs.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::util::kurabe;

/// An awk loop of `n` iterations: ~60 M instructions for 200 000.
fn awk_loop(n: u32) -> String {
    format!("awk 'BEGIN {{ for (i = 0; i < {n}; i++) s += i }}'")
}

/// Instructions valgrind counts for `argv` run directly (no shell), the
/// reference kurabe's counts are checked against.
fn valgrind_count(argv: &[&str]) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cg.out.%p");
    let status = Command::new("valgrind")
        .args([
            "--tool=cachegrind",
            "--cache-sim=no",
            "--trace-children=yes",
        ])
        .arg(format!("--cachegrind-out-file={}", out.display()))
        .args(argv)
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    let mut total = 0;
    for f in std::fs::read_dir(dir.path()).unwrap() {
        let text = std::fs::read_to_string(f.unwrap().path()).unwrap();
        let line = text.lines().find(|l| l.starts_with("summary:")).unwrap();
        total += line["summary:".len()..].trim().parse::<u64>().unwrap();
    }
    total
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap()
}

#[test]
fn five_percent_more_work_is_worse_at_valgrinds_ratio_and_a_loop_against_itself_is_within_noise() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (awk_loop(200_000), awk_loop(210_000));
    let o = kurabe()
        .arg("cmd")
        .arg("--store")
        .arg(dir.path().join("results.db"))
        .args(["--measure", "instructions", "-r", "3", "-q"])
        .args(["--export-json", "out.json", "--export-csv", "out.csv"])
        .args(["--export-markdown", "out.md", "--html", "out.html"])
        .args(["-n", "A", "-n", "A again", "-n", "B", &a, &a, &b])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let v: Value = serde_json::from_str(&read(dir.path(), "out.json")).unwrap();
    kurabe_testkit::schema::assert_valid("cmd-export.schema.json", &v);
    assert_eq!(v["measure"], "instructions", "{v}");
    let means: Vec<f64> = (0..3)
        .map(|i| v["results"][i]["instructions_mean"].as_f64().unwrap())
        .collect();
    // The reference: valgrind on the commands themselves, no shell. kurabe
    // subtracts the shell's start-up, counted the same way, so its counts
    // are the commands' own.
    let prog = |n: &str| format!("BEGIN {{ for (i = 0; i < {n}; i++) s += i }}");
    let direct_a = valgrind_count(&["awk", &prog("200000")]) as f64;
    let direct_b = valgrind_count(&["awk", &prog("210000")]) as f64;
    for (m, d) in [(means[0], direct_a), (means[2], direct_b)] {
        assert!((m / d - 1.0).abs() < 0.01, "kurabe {m} vs valgrind {d}");
    }
    let b_vs = &v["results"][2]["versus_reference"]["instructions"];
    let ratio = b_vs["ratio"].as_f64().unwrap();
    let truth = direct_b / direct_a;
    assert!((ratio / truth - 1.0).abs() < 0.01, "{ratio} vs {truth}");
    assert_eq!(b_vs["verdict"]["kind"], "worse", "{b_vs}");
    let aa = &v["results"][1]["versus_reference"]["instructions"];
    assert_eq!(aa["verdict"]["kind"], "within_noise", "{aa}");
    assert!((aa["ratio"].as_f64().unwrap() - 1.0).abs() < 0.001, "{aa}");
    // Only the count is compared: times under Cachegrind are Cachegrind's.
    assert!(v["results"][2]["versus_reference"]["wall_time_s"].is_null());
    assert_eq!(v["results"][0]["instructions"].as_array().unwrap().len(), 3);
    assert!(
        v["shell_overhead_instructions"].as_f64().unwrap() > 1000.0,
        "{v}"
    );
    every_format_says_it(dir.path(), &o);
    the_store_keeps_it(dir.path(), v["experiment_id"].as_str().unwrap());
}

/// Terminal, Markdown, CSV and HTML carry the count and its verdict.
fn every_format_says_it(dir: &Path, o: &std::process::Output) {
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("Instructions (mean ± σ):"), "{out}");
    assert!(out.contains("Time under Cachegrind"), "{out}");
    assert!(out.contains("more instructions"), "{out}");
    let md = read(dir, "out.md");
    assert!(md.starts_with("| Command | Instructions |"), "{md}");
    assert!(md.contains("more instructions"), "{md}");
    let csv = read(dir, "out.csv");
    let header = csv.lines().next().unwrap();
    assert!(header.contains(",instructions,ratio,"), "{header}");
    assert!(csv.contains("more instructions"), "{csv}");
    assert!(read(dir, "out.html").contains("instructions"));
}

/// The experiment's runs keep the metric: `history` follows it.
fn the_store_keeps_it(dir: &Path, id: &str) {
    let store = dir.join("results.db");
    let o = kurabe()
        .args(["report", id, "--format", "json", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("\"instructions\""));
    let name = "cmd: A vs A again vs B";
    let o = kurabe()
        .args(["history", name, "--format", "json", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("\"instructions\""));
}

#[test]
fn without_valgrind_on_path_it_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let o = kurabe()
        .arg("cmd")
        .arg("--store")
        .arg(dir.path().join("results.db"))
        .args(["--measure", "instructions", "-N", "/usr/bin/touch ran"])
        .env("PATH", dir.path().join("empty"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("apt-get install valgrind"), "{err}");
    assert!(!dir.path().join("ran").exists(), "the command ran");
}

/// A plan's `command` workload takes `measure = "instructions"`: the runs
/// store the count, and `check` gates a later experiment on it.
#[test]
fn a_plan_counts_instructions_and_check_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        r#"name = "loops by instructions"
repeat = 3

[[variant]]
name = "short"
vars = { n = "100000" }

[[variant]]
name = "long"
vars = { n = "105000" }

[[workload]]
name = "loop"
command = { command = "awk 'BEGIN { for (i = 0; i < {n}; i++) s += i }'", measure = "instructions" }
"#,
    )
    .unwrap();
    let store = dir.path().join("results.db");
    for _ in 0..2 {
        let o = kurabe()
            .arg("run")
            .arg(&plan)
            .arg("--store")
            .arg(&store)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("more instructions"), "{out}");
    }
    let o = kurabe()
        .args(["check", "e2", "--baseline", "e1", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("long / instructions"), "{out}");
    assert!(out.contains("within noise"), "{out}");
}
