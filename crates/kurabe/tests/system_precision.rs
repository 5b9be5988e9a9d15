//! `kurabe system` with the precision rule and `--pin`, through the built
//! binary: a precision-driven run stops by its rule and says why, and a
//! pinned context-switching test really puts its two processes where asked
//! (read back from /proc/PID/status while the test runs).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kurabe_model::system::SystemReport;
use serde_json::Value;

use crate::run::{cgroup_cpu_quota, kurabe_cgroup_dirs};
use crate::util::kurabe;

fn output_json(cmd: &mut Command) -> (String, SystemReport) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let v: Value = serde_json::from_str(&text).expect("JSON");
    kurabe_testkit::schema::assert_valid("system-report.schema.json", &v);
    let r = serde_json::from_str(&text).unwrap();
    (text, r)
}

#[test]
fn precision_run_stops_by_its_rule_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let (_, r) = output_json(
        kurabe()
            .args(["system", "--tests", "pipe,syscall", "-c", "1"])
            .args([
                "--precision",
                "40%",
                "--max-time",
                "12s",
                "--seconds",
                "0.2",
            ])
            .args(["--format", "json"])
            .env("TMPDIR", dir.path()),
    );
    assert_eq!(r.mode.as_deref(), Some("precision"));
    let rule = r.precision.expect("the rule is recorded");
    assert!((rule.target - 0.4).abs() < 1e-12 && (rule.max_time_s - 12.0).abs() < 1e-12);
    let run = &r.runs[0];
    // The budget bounds the run (one pass of overshoot at most: a pass is
    // only started when its expected time fits).
    assert!(run.elapsed_s.unwrap() < 12.0 + 5.0, "{:?}", run.elapsed_s);
    for t in &run.tests {
        assert!(t.passes.len() >= 4, "every test gets its minimum: {t:?}");
        let stop = t.stop.as_deref().expect("a stop reason");
        let half = (t.ci95_high.unwrap() - t.ci95_low.unwrap()) / 2.0 / t.result;
        match stop {
            "target" => assert!(half <= 0.4 + 1e-9, "{t:?}"),
            "budget" | "time" => assert!(half > 0.4, "stopped short but within target: {t:?}"),
            other => panic!("unknown stop reason {other}"),
        }
        assert!(t.score_variance_share.is_some());
    }
    assert!(!run.limited_by.is_empty());
    let shares: f64 = run
        .tests
        .iter()
        .filter_map(|t| t.score_variance_share)
        .sum();
    assert!((shares - 1.0).abs() < 1e-9, "{shares}");
    // The text report states the precision reached and what limited it.
    let out = kurabe()
        .args(["system", "--tests", "syscall", "-c", "1"])
        .args([
            "--precision",
            "40%",
            "--max-time",
            "10s",
            "--seconds",
            "0.2",
        ])
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Precision: target ±40.0 %, reached ±"),
        "{text}"
    );
    assert!(
        text.contains("Score precision limited by: syscall"),
        "{text}"
    );
}

/// CPUs a process may run on, from /proc/PID/status.
fn cpus_allowed(pid: u32) -> Option<String> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
}

fn parent_of(pid: u32) -> Option<u32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; fields after its ')' are fixed.
    let rest = &s[s.rfind(')')? + 2..];
    rest.split(' ').nth(1)?.parse().ok()
}

/// The lines of a `/proc/PID/cgroup` that place the process in one of
/// kurabe's run cgroups. A test process joins the run's cgroups in its
/// pre-exec hook, one v1 hierarchy after another (cpuacct, memory, then
/// cpu): caught between two of them, its cpu line still names the root
/// cgroup, whose quota is -1. Only a cpu line that names the run's cgroup
/// says which quota the process runs under.
fn kurabe_lines(self_cgroup: &str) -> String {
    self_cgroup
        .lines()
        .filter(|l| !kurabe_cgroup_dirs(l).is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every live descendant of `root`.
fn descendants(root: u32) -> Vec<u32> {
    let pids: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    let mut out = vec![root];
    let mut grew = true;
    while grew {
        grew = false;
        for &p in &pids {
            if !out.contains(&p) && parent_of(p).is_some_and(|pp| out.contains(&pp)) {
                out.push(p);
                grew = true;
            }
        }
    }
    out.remove(0);
    out
}

fn start_context1(pin: &str, dir: &std::path::Path) -> Child {
    kurabe()
        .args(["system", "--tests", "context1", "-c", "1", "--passes", "1"])
        .args(["--seconds", "4", "--pin", pin, "--format", "json"])
        .env("TMPDIR", dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Watch the run's two test processes (the copy and its partner) until
/// `ok` holds for their CPU lists, or the run ends; returns what was seen last.
fn watch_placement(child: &Child, ok: impl Fn(&[String]) -> bool) -> (bool, Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        let lists: Vec<String> = descendants(child.id())
            .into_iter()
            .filter_map(cpus_allowed)
            .collect();
        if lists.len() == 2 {
            if ok(&lists) {
                return (true, lists);
            }
            seen = lists;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    (false, seen)
}

fn finish(child: Child) -> SystemReport {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn single_cpu(list: &str) -> bool {
    !list.contains(['-', ','])
}

#[test]
fn pin_same_core_puts_both_context_switch_processes_on_one_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let child = start_context1("same-core", dir.path());
    let (ok, seen) = watch_placement(&child, |l| l.iter().all(|c| single_cpu(c)) && l[0] == l[1]);
    let r = finish(child);
    assert!(ok, "both processes on one CPU; saw {seen:?}");
    assert_eq!(r.pin.as_deref(), Some("same-core"));
    assert!(r.runs[0].tests[0].result > 0.0);
}

#[test]
fn pin_spread_puts_them_on_two_cpus() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        eprintln!("skipped: one CPU, nothing to spread over");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let child = start_context1("spread", dir.path());
    let (ok, seen) = watch_placement(&child, |l| l.iter().all(|c| single_cpu(c)) && l[0] != l[1]);
    let r = finish(child);
    assert!(ok, "the processes on two CPUs; saw {seen:?}");
    assert_eq!(r.pin.as_deref(), Some("spread"));
}

#[test]
fn plan_variants_limits_hold_for_system_tests_and_verdicts_come_per_test() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: cgroups need root (or a delegated subtree) here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "name = \"quota\"\nrepeat = 2\n\
         [[variant]]\nname = \"free\"\n\
         [[variant]]\nname = \"half\"\nlimits = { cpus = 0.5 }\n\
         [[workload]]\nname = \"idx\"\n\
         system = { tests = [\"syscall\", \"pipe\"], copies = 1, quick = true }\n",
    )
    .unwrap();
    let db = dir.path().join("results.db");
    let child = kurabe()
        .arg("run")
        .arg(&plan)
        .arg("--store")
        .arg(&db)
        .arg("-q")
        .env("TMPDIR", dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // While the "half" variant runs, its test processes sit in a cgroup
    // whose cpu.max is the variant's quota.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut quota = None;
    while quota.is_none() && Instant::now() < deadline {
        quota = descendants(child.id())
            .into_iter()
            .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok())
            .find_map(|cg| cgroup_cpu_quota(&kurabe_lines(&cg)));
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        quota.as_deref(),
        Some("50000"),
        "cpus = 0.5: 50 ms per 100 ms"
    );
    // Every run reports the score and one index per test; the report
    // compares each of them across the variants.
    let json = kurabe()
        .args(["report", "e1", "--format", "json", "--store"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        json.status.success(),
        "{}",
        String::from_utf8_lossy(&json.stderr)
    );
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    kurabe_testkit::schema::assert_valid("experiment-report.schema.json", &v);
    let text = String::from_utf8_lossy(&json.stdout);
    for metric in ["system_index", "system_index_syscall", "system_index_pipe"] {
        assert!(text.contains(&format!("\"{metric}\"")), "{metric} missing");
    }
    let md = kurabe()
        .args(["report", "e1", "--format", "md", "--store"])
        .arg(&db)
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    let rows: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("| system\\_index\\_") && l.contains("| half |"))
        .collect();
    assert_eq!(rows.len(), 2, "{md}");
    assert!(
        rows.iter().all(|r| r.contains("×")),
        "a ratio per test: {rows:?}"
    );
}
