//! A load worker thread that panics ends the run with exit 70 (EX_SOFTWARE)
//! and one line carrying the panic's message, and never hangs. The panic is
//! injected through the debug builds' hook (`KURABE_TEST_PANIC_WORKER=after:N`:
//! the first worker to complete N responses panics; release builds have no
//! such hook). Each run is given far more time than the panic needs, and
//! assert_cmd's timeout is the guard: a hang fails the test instead of
//! blocking it.

use std::time::{Duration, Instant};

use crate::serve::ServeChild;

/// Longer than any of these runs takes when the panic ends it.
const GUARD: Duration = Duration::from_secs(60);

fn kurabe() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::new(env!("CARGO_BIN_EXE_kurabe"));
    cmd.env("KURABE_TEST_PANIC_WORKER", "after:50")
        .env_remove("RUST_BACKTRACE")
        .timeout(GUARD);
    cmd
}

#[test]
fn kurabe_http_exits_70_with_the_panic_message() {
    let srv = ServeChild::start(&[]);
    let t0 = Instant::now();
    // Two threads: the other worker is stopped by the first one's panic.
    let out = kurabe()
        .args(["http", "-q", "-k", "-c", "4", "--threads", "2", "-t", "5m"])
        .arg(&srv.url)
        .output()
        .unwrap();
    let took = t0.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        took < GUARD,
        "the run hung: killed after {took:?}; {stderr}"
    );
    assert_eq!(out.status.code(), Some(70), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(
        lines[0].starts_with("kurabe: error: load worker ")
            && lines[0].contains("test hook: KURABE_TEST_PANIC_WORKER=after:50"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "no report after a panic");
}

#[test]
fn kurabe_run_records_a_failed_run_with_the_panic_message() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    let kurabe_bin = env!("CARGO_BIN_EXE_kurabe");
    std::fs::write(
        &plan,
        format!(
            r#"
name = "panic"
repeat = 1
[target]
command = ["{kurabe_bin}", "serve", "--port", "{{port}}"]
ready = "http://127.0.0.1:{{port}}/"
[[variant]]
name = "only"
[[workload]]
name = "get"
http = {{ path = "/", duration = "5m", concurrency = 2, keep_alive = true }}
"#
        ),
    )
    .unwrap();
    let t0 = Instant::now();
    let out = kurabe()
        .arg("run")
        .arg(&plan)
        .arg("--store")
        .arg(dir.path().join("results.db"))
        .output()
        .unwrap();
    let took = t0.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        took < GUARD,
        "the run hung: killed after {took:?}; {stderr}"
    );
    // The work failed (no successful run), the experiment itself ended normally.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("test hook: KURABE_TEST_PANIC_WORKER=after:50"),
        "{stderr}"
    );
}
