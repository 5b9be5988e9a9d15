//! `kurabe results import --from`: hyperfine run by the test, criterion and
//! pytest-benchmark output made once by the real tools (committed under
//! `fixtures/import/` with the commands that made them), stored as
//! experiments that `results show`, `history`, `check` and `site` read as
//! they read kurabe's own; and bad input refused with one line, exit 2,
//! and the store unchanged.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kurabe_model::history::CheckReport;
use kurabe_store::{Entry, Store};
use tempfile::TempDir;

use crate::util::kurabe;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(rel)
}

/// `kurabe results --store STORE ARGS…`, run in `dir` (not a git work tree,
/// so the only revision is `--rev`).
fn results(dir: &Path, args: &[&str]) -> Output {
    kurabe()
        .current_dir(dir)
        .env_remove("KURABE_REV")
        .args(["results", "--store", "s.db"])
        .args(args)
        .output()
        .unwrap()
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn import(dir: &Path, from: &str, input: &Path, more: &[&str]) -> String {
    let input = input.to_str().unwrap();
    ok(results(
        dir,
        &[&["import", "--from", from, input], more].concat(),
    ))
}

/// hyperfine measuring `command` under the name `work`, exported to `file`.
fn hyperfine(dir: &Path, command: &str, file: &str) -> PathBuf {
    let out = Command::new("hyperfine")
        .current_dir(dir)
        .args(["-N", "--runs", "8", "--style", "none", "-n", "work"])
        .args(["--export-json", file, command])
        .output()
        .expect("hyperfine (Debian's package; .ci/run installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join(file)
}

fn experiment(dir: &Path, id: &str) -> kurabe_store::Experiment {
    let store = Store::open(&dir.join("s.db")).unwrap();
    match store.get(id.parse().unwrap()).unwrap() {
        Entry::Experiment(e) => e,
        Entry::Result(_) => panic!("{id} is a result"),
    }
}

#[test]
fn hyperfine_results_gate_a_slower_command_like_kurabe_s_own() {
    let dir = TempDir::new().unwrap();
    let fast = hyperfine(dir.path(), "sleep 0.01", "fast.json");
    let slow = hyperfine(dir.path(), "sleep 0.1", "slow.json");
    let name = ["--name", "sleepy"];
    let a = import(
        dir.path(),
        "hyperfine",
        &fast,
        &[&name[..], &["--rev", "base"]].concat(),
    );
    assert!(a.starts_with("imported e1 into "), "{a}");
    import(
        dir.path(),
        "hyperfine",
        &slow,
        &[&name[..], &["--rev", "next"]].concat(),
    );

    let e = experiment(dir.path(), "e1");
    assert_eq!(e.name, "sleepy");
    assert_eq!(e.runs.len(), 8);
    assert!(e
        .runs
        .iter()
        .all(|r| r.run.variant == "work" && r.run.workload == "command"));
    // The times are hyperfine's, not re-measured: every one at least the sleep.
    assert!(e.runs.iter().all(|r| r.run.metrics[0].value >= 0.009));
    assert_eq!(
        e.origin.rev.as_ref().unwrap().label.as_deref(),
        Some("base")
    );
    assert!(e.host.is_some());

    let out = kurabe()
        .current_dir(dir.path())
        .args([
            "check",
            "e2",
            "--baseline",
            "base",
            "--store",
            "s.db",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: CheckReport = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((report.worse, report.rows.len()), (1, 1));
    let row = &report.rows[0];
    assert_eq!(
        (row.runs, row.baseline_runs, row.from_summary),
        (8, 8, false)
    );
    assert!(row.ratio.unwrap() > 3.0, "{row:?}");

    let history = kurabe()
        .current_dir(dir.path())
        .args(["history", "sleepy", "--store", "s.db"])
        .output()
        .unwrap();
    let text = ok(history);
    assert!(
        text.contains("command / work / wall_time_s: 2 points"),
        "{text}"
    );

    let site = kurabe()
        .current_dir(dir.path())
        .args(["site", "-o", "site", "--store", "s.db"])
        .output()
        .unwrap();
    ok(site);
    let index = std::fs::read_to_string(dir.path().join("site/index.html")).unwrap();
    assert!(
        index.contains("sleepy"),
        "the dashboard lists the imported plan"
    );
}

#[test]
fn criterion_benchmarks_keep_every_sample_and_can_join_another_entry_s_machine() {
    let dir = TempDir::new().unwrap();
    let out = import(
        dir.path(),
        "criterion",
        &fixture("criterion/target-criterion"),
        &[],
    );
    assert!(out.starts_with("imported e1"), "{out}");
    let e = experiment(dir.path(), "e1");
    assert_eq!(e.name, "criterion: sort vs sum");
    assert_eq!(e.runs.len(), 4 * 20);
    let first = &e.runs.iter().find(|r| r.run.variant == "loop").unwrap().run;
    assert_eq!(first.workload, "sum");
    let detail = first
        .record
        .as_ref()
        .and_then(kurabe_store::RunDetail::imported);
    let detail = detail.expect("an imported run's detail");
    assert_eq!(
        (detail.harness.as_str(), detail.iterations),
        ("criterion", Some(6079))
    );

    let shown = ok(results(dir.path(), &["show", "e1"]));
    assert!(
        shown.contains("criterion: sort vs sum") && shown.contains("formula"),
        "{shown}"
    );

    // Recorded for the machine of e1, whatever this one is.
    let mut store = Store::open(&dir.path().join("s.db")).unwrap();
    let mut other = e.clone();
    other.host.as_mut().unwrap().cpu_model = "Elsewhere CPU".into();
    other.name = "elsewhere".into();
    store
        .import(&kurabe_store::Export {
            format: kurabe_store::EXPORT_FORMAT.into(),
            schema_version: kurabe_store::EXPORT_VERSION,
            entries: vec![Entry::Experiment(other)],
        })
        .unwrap();
    drop(store);
    let input = fixture("criterion/target-criterion");
    import(dir.path(), "criterion", &input, &["--host", "e2"]);
    let joined = experiment(dir.path(), "e3");
    assert_eq!(joined.host.as_ref().unwrap().cpu_model, "Elsewhere CPU");
    assert_eq!(
        joined.host_fingerprint(),
        experiment(dir.path(), "e2").host_fingerprint()
    );
}

#[test]
fn pytest_benchmark_summaries_are_checked_from_summary_only_and_data_from_samples() {
    let dir = TempDir::new().unwrap();
    let summary = fixture("pytest-benchmark/summary-only.json");
    let data = fixture("pytest-benchmark/with-data.json");
    import(dir.path(), "pytest-benchmark", &summary, &["--rev", "a"]);
    import(dir.path(), "pytest-benchmark", &summary, &["--rev", "b"]);
    import(dir.path(), "pytest-benchmark", &data, &["--rev", "c"]);
    import(dir.path(), "pytest-benchmark", &data, &["--rev", "d"]);
    let e = experiment(dir.path(), "e1");
    assert_eq!(e.name, "pytest-benchmark: test_sums.py");
    assert_eq!(e.runs.len(), 4, "one run per benchmark: its summary");
    assert_eq!(experiment(dir.path(), "e3").runs.len(), 22 + 71 + 64 + 54);
    // Within one import: each group against its own first test, from the summaries.
    let shown = ok(results(dir.path(), &["show", "e1"]));
    assert!(shown.contains("test_sorted[100] (baseline)"), "{shown}");
    assert!(shown.contains("vs test_sorted[100]"), "{shown}");
    assert_eq!(shown.matches("(from summary only)").count(), 2, "{shown}");
    let shown = ok(results(dir.path(), &["show", "e3"]));
    assert!(
        !shown.contains("summary only") && shown.contains("vs test_loop"),
        "{shown}"
    );

    let check = |id: &str, base: &str| {
        kurabe()
            .current_dir(dir.path())
            .args(["check", id, "--baseline", base, "--store", "s.db"])
            .output()
            .unwrap()
    };
    // The same run of the suite on both sides: within noise, from its summary.
    let text = ok(check("e2", "a"));
    assert_eq!(text.matches("(from summary only)").count(), 4, "{text}");
    assert!(text.contains("0 worse"), "{text}");
    assert!(text.contains("sum / test_loop / wall_time_s"), "{text}");
    // Samples on both sides: the samples decide, and nothing says summary.
    let text = ok(check("e4", "c"));
    assert!(!text.contains("summary"), "{text}");
    assert!(text.contains("0 worse, 0 better, 4 checked"), "{text}");
    let history = kurabe()
        .current_dir(dir.path())
        .args([
            "history",
            "pytest-benchmark: test_sums.py",
            "--store",
            "s.db",
        ])
        .output()
        .unwrap();
    let text = ok(history);
    assert!(
        text.contains("sum / test_loop / wall_time_s: 4 points (2 from summary only)"),
        "{text}"
    );
    // Samples against a summary: judged from the summaries.
    let text = ok(check("e4", "a"));
    assert_eq!(text.matches("(from summary only)").count(), 4, "{text}");
}

#[test]
fn bad_input_is_one_line_exit_2_and_leaves_the_store_unchanged() {
    let dir = TempDir::new().unwrap();
    // Nothing is created for input that is not the harness's.
    let out = results(
        dir.path(),
        &[
            "import",
            "--from",
            "hyperfine",
            fixture("pytest-benchmark/with-data.json").to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        !dir.path().join("s.db").exists(),
        "no store made for bad input"
    );

    import(
        dir.path(),
        "hyperfine",
        &fixture("hyperfine/two-commands.json"),
        &[],
    );
    let before = ok(results(dir.path(), &["export"]));
    let export = dir.path().join("export.json");
    std::fs::write(&export, &before).unwrap();
    // One sample more than an experiment's runs (each sample is a run): a
    // 64 MiB report of 5.5 million times took 5.8 GB and minutes before.
    let many = dir.path().join("many.json");
    let times = vec!["0.01"; 100_001].join(",");
    std::fs::write(
        &many,
        format!(r#"{{"results":[{{"command":"x","mean":0.01,"times":[{times}]}}]}}"#),
    )
    .unwrap();
    let cases: &[(&str, PathBuf, &str)] = &[
        (
            "hyperfine",
            many,
            "holds 100001 samples, more than the 100000 runs an experiment may have",
        ),
        (
            "hyperfine",
            fixture("pytest-benchmark/with-data.json"),
            "is not hyperfine's --export-json file (hyperfine 1.6 or later): missing field `results`; it looks like pytest-benchmark's --benchmark-json file (pytest-benchmark 3 to 5): use --from pytest-benchmark",
        ),
        (
            "pytest-benchmark",
            fixture("hyperfine/two-commands.json"),
            "is not pytest-benchmark's --benchmark-json file (pytest-benchmark 3 to 5): missing field `version`; it looks like hyperfine's --export-json file (hyperfine 1.6 or later): use --from hyperfine",
        ),
        (
            "criterion",
            fixture("hyperfine/two-commands.json"),
            "is not criterion's target/criterion directory (criterion 0.3 or later): it is a file; give the directory cargo bench wrote; it looks like hyperfine's",
        ),
        (
            "criterion",
            fixture("hyperfine"),
            "is not criterion's target/criterion directory (criterion 0.3 or later): no benchmark's new/estimates.json below it (run cargo bench first)",
        ),
        ("hyperfine", export.clone(), "is not hyperfine's --export-json file"),
        ("hyperfine", dir.path().join("missing.json"), "cannot read"),
    ];
    for (from, input, says) in cases {
        let out = results(
            dir.path(),
            &["import", "--from", from, input.to_str().unwrap()],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{from} {input:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{from} {input:?}: {err}");
        assert!(out.stdout.is_empty());
    }
    assert_eq!(
        ok(results(dir.path(), &["export"])),
        before,
        "the store is unchanged"
    );
    // --host names an entry the store does not hold: refused, nothing added.
    let input = fixture("criterion/target-criterion");
    let out = results(
        dir.path(),
        &[
            "import",
            "--from",
            "criterion",
            input.to_str().unwrap(),
            "--host",
            "e9",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    assert_eq!(
        ok(results(dir.path(), &["export"])),
        before,
        "the store is unchanged"
    );
    // --name without --from is a usage error.
    let out = results(
        dir.path(),
        &["import", "--name", "x", export.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
}
