//! `kurabe system`: import of UnixBench reports (fixtures written for these
//! tests in UnixBench's format), compare, a tiny real run validated against
//! the committed schema, Ctrl-C cleanup, and checks that each test loop does
//! its work (through `kurabe_system::run_once`, with the real Execl helper).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kurabe_model::stats::VerdictWord;
use kurabe_model::system::{SystemCompare, SystemReport, SystemSource};
use kurabe_system::TestId;
use serde_json::Value;

use crate::util::kurabe;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/system")
        .join(name)
}

fn assert_valid(schema_name: &str, json: &str) {
    let v: Value = serde_json::from_str(json).expect("output is JSON");
    kurabe_testkit::schema::assert_valid(schema_name, &v);
}

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{:?} failed: {}\n{}",
        cmd,
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn schema_checker_catches_violations() {
    let s = kurabe_testkit::schema::load("system-report.schema.json");
    let bad =
        serde_json::json!({"schema_version": 1, "source": "elsewhere", "runs": [{"copies": 0}]});
    let text = kurabe_testkit::schema::violations(&s, &bad).join("\n");
    assert!(text.contains("$: missing required \"host\""), "{text}");
    assert!(
        text.contains("$.source: matches 0 of the oneOf alternatives"),
        "{text}"
    );
    assert!(text.contains("$.runs[0].copies: 0 is below 1"), "{text}");
}

#[test]
fn import_one_copy_report_recomputes_the_index() {
    let json = run_ok(
        kurabe()
            .args(["system", "import"])
            .arg(fixture("unixbench-1copy.txt")),
    );
    assert_valid("system-report.schema.json", &json);
    let r: SystemReport = serde_json::from_str(&json).unwrap();
    assert_eq!(r.source, SystemSource::UnixbenchImport);
    assert_eq!(r.host, "fixture-vm");
    assert_eq!(r.kernel, "3.2.0-4-amd64");
    assert_eq!(r.arch, "x86_64");
    assert_eq!(r.runs.len(), 1);
    let run = &r.runs[0];
    assert_eq!(run.copies, 1);
    assert_eq!(run.tests.len(), 12);
    assert!(!run.partial);
    // The report prints 734.4; recomputed from the results and baselines.
    assert!((run.score.unwrap() - 734.4).abs() < 0.06, "{:?}", run.score);
    let pipe = run.tests.iter().find(|t| t.id == "pipe").unwrap();
    assert!((pipe.index.unwrap() - 565.4).abs() < 0.06);
    assert_eq!(pipe.samples, 7);
    assert!(pipe.passes.is_empty() && pipe.ci95_low.is_none());
}

#[test]
fn import_two_copy_counts_and_render_text() {
    let json = run_ok(
        kurabe()
            .args(["system", "import"])
            .arg(fixture("unixbench-2copies.txt")),
    );
    let r: SystemReport = serde_json::from_str(&json).unwrap();
    assert_eq!(
        r.runs.iter().map(|r| r.copies).collect::<Vec<_>>(),
        vec![1, 2]
    );
    assert!((r.runs[1].score.unwrap() - 1299.2).abs() < 0.06);
    // Text rendering keeps UnixBench's layout and can be imported again.
    let text = run_ok(
        kurabe()
            .args(["system", "import", "--format", "text"])
            .arg(fixture("unixbench-2copies.txt")),
    );
    assert!(
        text.contains(
            "System Benchmarks Index Score                                        1299.2"
        ),
        "{text}"
    );
    assert!(text.contains(
        "Shell Scripts (8 concurrent)                    632.5 lpm   (60.0 s, 2 samples)"
    ));
    let dir = tempfile::tempdir().unwrap();
    let again = dir.path().join("again.txt");
    std::fs::write(&again, &text).unwrap();
    let json2 = run_ok(kurabe().args(["system", "import"]).arg(&again));
    let r2: SystemReport = serde_json::from_str(&json2).unwrap();
    assert_eq!(r2.runs.len(), 2);
    assert!((r2.runs[1].score.unwrap() - 1299.2).abs() < 0.06);
}

#[test]
fn truncated_and_foreign_files_are_clear_errors() {
    for (file, needle) in [
        ("unixbench-truncated.txt", "truncated UnixBench report"),
        ("not-unixbench.txt", "not a UnixBench report"),
    ] {
        let out = kurabe()
            .args(["system", "import"])
            .arg(fixture(file))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{file}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{file}: {err}");
        assert_eq!(err.lines().count(), 1, "one-line error: {err}");
        assert!(out.stdout.is_empty());
    }
    let out = kurabe()
        .args(["system", "import", "/nonexistent/report"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn compare_imports_gives_ratios_but_no_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    std::fs::write(
        &a,
        run_ok(
            kurabe()
                .args(["system", "import"])
                .arg(fixture("unixbench-1copy.txt")),
        ),
    )
    .unwrap();
    // B straight from UnixBench text: compare imports it on the fly.
    let json = run_ok(
        kurabe()
            .args(["system", "compare", "--format", "json"])
            .arg(&a)
            .arg(fixture("unixbench-2copies.txt")),
    );
    assert_valid("system-compare.schema.json", &json);
    let c: SystemCompare = serde_json::from_str(&json).unwrap();
    assert_eq!(c.runs.len(), 1, "only the 1-copy run is common");
    let run = &c.runs[0];
    assert_eq!(run.tests.len(), 12);
    for t in &run.tests {
        assert!(
            (t.ratio.unwrap() - 1.0).abs() < 1e-9,
            "same numbers in both files"
        );
        assert_eq!(VerdictWord::from(t.verdict), VerdictWord::NoVerdict);
        assert!(t.reason.as_deref().unwrap().contains("single numbers"));
    }
    let text = run_ok(
        kurabe()
            .args(["system", "compare"])
            .arg(&a)
            .arg(fixture("unixbench-2copies.txt")),
    );
    assert!(text.contains("no verdict [1]"), "{text}");
    assert!(
        text.contains("[1] no verdict possible: single numbers"),
        "{text}"
    );
}

#[test]
fn tiny_run_validates_and_compares_with_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for name in ["a.json", "b.json"] {
        let out = dir.path().join(name);
        run_ok(
            kurabe()
                .args([
                    "system",
                    "--quick",
                    "--tests",
                    "pipe,syscall",
                    "--seconds",
                    "0.1",
                ])
                .args(["--passes", "4", "-c", "1", "--format", "json", "-o"])
                .arg(&out)
                .env("TMPDIR", dir.path()),
        );
        let json = std::fs::read_to_string(&out).unwrap();
        assert_valid("system-report.schema.json", &json);
        let r: SystemReport = serde_json::from_str(&json).unwrap();
        assert_eq!(r.source, SystemSource::Kurabe);
        let run = &r.runs[0];
        assert_eq!(
            run.tests.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
            ["pipe", "syscall"]
        );
        assert!(run.partial, "2 of 12 tests is a partial index");
        for t in &run.tests {
            assert_eq!(t.passes.len(), 4);
            assert_eq!(
                t.passes.iter().filter(|p| p.dropped).count(),
                1,
                "lowest third dropped"
            );
            assert_eq!(t.samples, 3);
            assert!(t.result > 0.0);
            assert!(t.ci95_low.unwrap() <= t.result && t.result <= t.ci95_high.unwrap());
            assert!((t.index.unwrap() - t.result / t.baseline.unwrap() * 10.0).abs() < 1e-6);
        }
        let s = run.score.unwrap();
        assert!(run.score_ci95_low.unwrap() <= s && s <= run.score_ci95_high.unwrap());
        files.push(out);
    }
    // Only the report files remain: the private temp dirs are gone.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
    let json = run_ok(
        kurabe()
            .args(["system", "compare", "--format", "json"])
            .args(&files),
    );
    assert_valid("system-compare.schema.json", &json);
    let c: SystemCompare = serde_json::from_str(&json).unwrap();
    for t in &c.runs[0].tests {
        assert!(
            t.ratio_ci95_low.is_some(),
            "3 kept passes a side give an interval: {t:?}"
        );
        assert_ne!(VerdictWord::from(t.verdict), VerdictWord::NoVerdict);
    }
}

#[test]
fn bad_flags_exit_2_with_a_hint() {
    let out = kurabe()
        .args(["system", "--tests", "pipe,warp"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown test 'warp'") && err.contains("syscall"),
        "{err}"
    );
    let out = kurabe()
        .args(["system", "-c", "0", "--tests", "pipe"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = kurabe()
        .args([
            "system",
            "--tests",
            "execl",
            "--quick",
            "--execl-helper",
            "/nonexistent/helper",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Execl helper"));
}

#[test]
fn ctrl_c_kills_children_and_removes_the_temp_dir() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = kurabe()
        .args([
            "system",
            "--quick",
            "--tests",
            "shell8",
            "--seconds",
            "20",
            "-c",
            "1",
        ])
        .env("TMPDIR", dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the shell workload is running inside the private temp dir.
    let deadline = Instant::now() + Duration::from_secs(20);
    let tmp = loop {
        let found = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.join("work.sh").exists());
        if let Some(p) = found {
            if !processes_in(&p).is_empty() {
                break p;
            }
        }
        assert!(Instant::now() < deadline, "shell test never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    // SAFETY: signalling the kurabe process we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(!tmp.exists(), "temp dir removed");
    // No process is left working in it (shells are killed with their group).
    let deadline = Instant::now() + Duration::from_secs(5);
    while !processes_in(&tmp).is_empty() {
        assert!(
            Instant::now() < deadline,
            "leftover processes: {:?}",
            processes_in(&tmp)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Pids whose working directory is `dir` (or was, before it was deleted).
fn processes_in(dir: &Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/cwd"))
                .map(|cwd| {
                    cwd.to_string_lossy().trim_end_matches(" (deleted)") == dir.to_string_lossy()
                })
                .unwrap_or(false)
        })
        .collect()
}

fn helper() -> PathBuf {
    kurabe_helpers::execl().unwrap()
}

fn once(id: TestId, secs: f64) -> (kurabe_system::Record, f64, i32) {
    kurabe_system::run_once(id, secs, helper(), std::env::temp_dir()).unwrap()
}

#[test]
fn execl_chain_really_execs_in_one_process() {
    let (rec, elapsed, pid) = once(TestId::Execl, 0.3);
    assert_eq!(rec.err, 0);
    assert!(rec.count >= 2.0, "the helper re-executed itself: {rec:?}");
    assert_eq!(
        rec.check, pid as u64,
        "the last image runs in the forked copy's pid: no fork in the chain"
    );
    assert!(elapsed >= 0.3);
}

#[test]
fn spawn_children_all_exit_zero() {
    // The fork/exit/wait loop runs in the helper program, not in kurabe.
    let (rec, elapsed, _) = once(TestId::Spawn, 0.2);
    assert_eq!(rec.err, 0, "{}", kurabe_system::error_text(rec.err));
    assert!(rec.count >= 1.0, "at least one child: {rec:?}");
    assert_eq!(
        rec.check, rec.count as u64,
        "every forked child was reaped with exit status 0"
    );
    assert!(elapsed >= 0.2, "{elapsed}");
    // Without the helper, spawn cannot run: a clear error up front.
    let out = kurabe()
        .args(["system", "--tests", "spawn", "--quick"])
        .args(["--execl-helper", "/nonexistent/helper"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("leave execl and spawn out"), "{err}");
}

#[test]
fn each_loop_does_its_work() {
    let (r, _, _) = once(TestId::Pipe, 0.1);
    assert_eq!(
        r.check,
        r.count as u64 * 512,
        "pipe moves 512 bytes per iteration"
    );
    let (r, _, _) = once(TestId::Context1, 0.1);
    assert_eq!(
        (r.err, r.check),
        (0, r.count as u64),
        "every counter echoed back"
    );
    let (r, _, _) = once(TestId::Syscall, 0.1);
    assert_eq!(r.check, r.count as u64, "getpid answered every loop");
    let (r, _, _) = once(TestId::Shell1, 1.0);
    assert_eq!(r.err, 0, "{}", kurabe_system::error_text(r.err));
    assert!(r.count >= 1.0, "at least one sort/od/grep/tee/wc round");
    let (r, _, _) = once(TestId::Fstime, 0.1);
    assert_eq!(r.err, 0);
    assert!(r.count > 0.0 && r.time_s > 0.09, "{r:?}");
    assert_eq!(r.check % 1024, 0, "whole 1024-byte buffers copied");
    let (r, _, _) = once(TestId::Dhry2reg, 0.1);
    assert_eq!(
        r.check, 1,
        "Dhrystone's final values are the published ones"
    );
    let (r, _, _) = once(TestId::Whetstone, 0.2);
    assert_eq!(r.check, 1, "Whetstone's checksum is non-zero");
}
