//! kurabe is one executable: a copy of it alone in an empty directory runs
//! everything, including what needs its small helper programs (the Execl
//! and Process Creation loops of `system`, and `command` workloads, whose
//! launcher keeps `max_rss_bytes` the command's own). The helpers are built
//! into kurabe and run from memory; nothing is looked up next to it.

use std::path::PathBuf;
use std::process::Command;

use kurabe_store::{Entry, RunStatus, Store};

/// A copy of the built kurabe, alone in a fresh directory.
fn lone_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("kurabe");
    // Copied by `cp`, not std::fs::copy: a writable descriptor of the new
    // file in this multi-threaded test process can leak into another test's
    // child between its fork and exec, and exec of the copy then fails with
    // ETXTBSY ("Text file busy").
    let cp = Command::new("cp")
        .arg(env!("CARGO_BIN_EXE_kurabe"))
        .arg(&exe)
        .status()
        .unwrap();
    assert!(cp.success());
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(
        names.len(),
        1,
        "nothing but kurabe in {}",
        dir.path().display()
    );
    (dir, exe)
}

#[test]
fn system_execl_and_spawn_run_from_a_lone_copy() {
    let (dir, exe) = lone_copy();
    let out = Command::new(&exe)
        .current_dir(dir.path())
        .args(["system", "--quick", "--tests", "spawn,execl", "-c", "1"])
        .args(["--passes", "1", "--seconds", "0.3", "--format", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tests = report["runs"][0]["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 2, "{report}");
    for t in tests {
        assert!(t.get("error").is_none(), "{t}");
        // Process creation and execl both run thousands of times a second on
        // any machine this runs on; 10 lps would mean they did not run.
        let rate = t["result"].as_f64().unwrap();
        assert!(rate > 10.0, "{}: {rate} lps", t["id"]);
    }
}

#[test]
fn command_workload_runs_from_a_lone_copy_with_the_commands_own_max_rss() {
    let (dir, exe) = lone_copy();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        r#"
name = "lone"
repeat = 1
[[variant]]
name = "a"
[[workload]]
name = "true"
command = { command = ["true"], runs = 2 }
"#,
    )
    .unwrap();
    let store = dir.path().join("results.db");
    let out = Command::new(&exe)
        .current_dir(dir.path())
        .arg("run")
        .arg(&plan)
        .arg("--store")
        .arg(&store)
        .arg("-q")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = Store::open(&store).unwrap();
    let id = store.list().unwrap()[0].id;
    let Entry::Experiment(exp) = store.get(id).unwrap() else {
        panic!("not an experiment");
    };
    let run = &exp.runs[0].run;
    assert_eq!(run.status, RunStatus::Ok, "{:?}", run.error_tail);
    let rss = run.metrics.iter().find(|m| m.name == "max_rss_bytes");
    let rss = rss.unwrap().value;
    // `true` with libc is ≈ 1 MiB; kurabe's own image would be ≥ 8 MiB.
    assert!(
        rss > 0.0 && rss < 4.0 * 1024.0 * 1024.0,
        "max_rss_bytes {rss}"
    );
}
