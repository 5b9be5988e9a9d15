//! `kurabe http URL --threshold …` end to end against `kurabe serve` on
//! port 0: PASS exits 0, FAIL exits 99 with the measured value printed,
//! `,abort` ends a long run early, and bad or unknown thresholds are
//! refused before any request. With `--workers` the thresholds are judged
//! on the fleet's merged run (two real `kurabe worker`s on this host,
//! PostgreSQL between them), and `,abort` is refused.
//!
//! Why the verdicts cannot flake: a server that delays every answer by
//! `--latency-ms 5` cannot be measured under 1 ms, so `p(50)<1ms` fails on
//! any machine; the passing thresholds are 30 s wide. The abort bounds
//! are a tenth of the run's `-t 60`, and `after=1s` is a floor the gate
//! itself enforces (it does not judge before 1 s of measuring).

use std::net::TcpListener;

use crate::http::{http, http_json_exit};
use crate::serve::ServeChild;
use crate::util::{kurabe, Kid, PgSchema};

#[test]
fn passing_thresholds_exit_0_and_report_their_measured_values() {
    let server = ServeChild::start(&[]);
    let args = [
        "-n",
        "40",
        "-c",
        "2",
        "-k",
        "--threshold",
        "p(95)<30s",
        "--threshold",
        "failed<1%",
        "--threshold",
        "rate>0",
        &server.url,
    ];
    let (r, _) = http_json_exit(&args, 0);
    let texts: Vec<&str> = r.thresholds.iter().map(|t| t.text.as_str()).collect();
    assert_eq!(texts, ["p(95)<30s", "failed<1%", "rate>0"]);
    assert!(r.thresholds.iter().all(|t| t.pass && !t.aborted));
    assert!(r.thresholds[0].measured > 0.0 && r.thresholds[0].measured < 30.0);
    assert_eq!(r.thresholds[1].measured, 0.0);
    let rate = r.thresholds[2].measured;
    assert!((rate - r.requests_per_second).abs() < 1e-6 * rate.max(1.0));
}

#[test]
fn a_failing_threshold_exits_99_with_its_measured_value() {
    let server = ServeChild::start(&["--latency-ms", "5"]);
    let base = ["-n", "10", "-k", "--threshold", "p(95)<30s"];
    let out = http(&[&base[..], &["--threshold", "p(50)<1ms", &server.url]].concat());
    assert_eq!(out.code, Some(99), "{}{}", out.stdout, out.stderr);
    let line = |verdict: &str, t: &str| {
        out.stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{verdict}  {t}")))
            .unwrap_or_else(|| panic!("no {verdict} line for {t}: {}", out.stdout))
            .to_owned()
    };
    assert!(line("PASS", "p(95)<30s").ends_with("ms"));
    let fail = line("FAIL", "p(50)<1ms");
    let shown: f64 = fail
        .split_whitespace()
        .nth(2)
        .unwrap()
        .trim_end_matches("ms")
        .parse()
        .unwrap();
    assert!(shown >= 5.0, "{fail}");
    assert!(
        out.stderr
            .contains("1 of 2 thresholds failed: 'p(50)<1ms' (measured "),
        "{}",
        out.stderr
    );
    let (r, _) = http_json_exit(
        &[&base[..], &["--threshold", "p(50)<1ms", &server.url]].concat(),
        99,
    );
    assert!(r.thresholds[1].measured >= 0.005 && !r.thresholds[1].pass);
}

#[test]
fn abort_ends_a_long_run_at_the_first_failure_and_after_delays_it() {
    let server = ServeChild::start(&["--latency-ms", "5"]);
    let run = |t: &str| {
        let args = [
            "-t",
            "60",
            "-c",
            "2",
            "-k",
            "--threshold",
            t,
            "--threshold",
            "p(99)<30s",
        ];
        http_json_exit(&[&args[..], &[server.url.as_str()]].concat(), 99).0
    };
    let r = run("p(50)<1ms,abort");
    assert!(r.interrupted && r.duration_s < 6.0, "{}", r.duration_s);
    assert!(r.thresholds[0].aborted && !r.thresholds[0].pass);
    assert!(r.thresholds[1].pass && !r.thresholds[1].aborted);
    assert!(r.complete_requests > 0);

    let r = run("p(50)<1ms,abort,after=1s");
    assert!(
        r.duration_s >= 1.0 && r.duration_s < 6.0,
        "{}",
        r.duration_s
    );
    assert!(r.thresholds[0].aborted);
}

#[test]
fn name_scoped_thresholds_read_that_name() {
    let server = ServeChild::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("set.http");
    let u = &server.url;
    std::fs::write(
        &set,
        format!("# @name home\nGET {u}\n\n# @name cart\nGET {u}cart\n"),
    )
    .unwrap();
    let set = set.to_str().unwrap();
    let args = ["-n", "40", "-k", "--targets", set];
    let (r, _) = http_json_exit(
        &[
            &args[..],
            &[
                "--threshold",
                "p(99){name:cart}<30s",
                "--threshold",
                "rate{name:home}>0",
            ],
        ]
        .concat(),
        0,
    );
    let home = r.requests.iter().find(|n| n.name == "home").unwrap();
    assert!(r.thresholds.iter().all(|t| t.pass));
    assert!((r.thresholds[1].measured - home.requests_per_second).abs() < 1e-6);
    let (l, silent_url) = silent();
    let silent_set = dir.path().join("silent.http");
    let text = format!("# @name home\nGET {silent_url}\n\n# @name cart\nGET {silent_url}cart\n");
    std::fs::write(&silent_set, text).unwrap();
    let args = [
        "--targets",
        silent_set.to_str().unwrap(),
        "--threshold",
        "p(99){name:checkout}<1s",
    ];
    refused_at(
        &l,
        &args,
        &[
            "--threshold 'p(99){name:checkout}<1s'",
            "no request named 'checkout'",
            "home, cart",
        ],
    );
}

#[test]
fn bad_thresholds_are_one_line_before_any_request() {
    refused(
        &["--threshold", "p95<1s"],
        &[
            "--threshold 'p95<1s'",
            "unknown metric 'p'",
            "expected METRIC",
        ],
    );
    refused(
        &["--threshold", "p(95)<fast"],
        &["`fast`", "expected METRIC"],
    );
    refused(&["--threshold", "failed<1%,after=5s"], &["add ,abort"]);
    refused(
        &["--threshold", "checks>99%"],
        &["checks no response", "--check"],
    );
    refused(
        &["--threshold", "p(95){name:nope}<1s"],
        &["no request named 'nope'"],
    );
    refused(
        &["--threshold", "rate>1", "--find-rate", "--slo", "p(99)<1s"],
        &["--slo"],
    );
}

/// A listener nobody accepts on: a request would show as a pending connection.
fn silent() -> (TcpListener, String) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let url = format!("http://{}/", l.local_addr().unwrap());
    (l, url)
}

/// `kurabe http -n 5 ARGS SILENT_URL` is refused as [`refused_at`] says.
fn refused(args: &[&str], expect: &[&str]) {
    let (l, url) = silent();
    refused_at(&l, &[args, &[url.as_str()]].concat(), expect);
}

/// `kurabe http -n 5 ARGS` exits 2 with one line holding `expect`, and no
/// connection reached `l`.
fn refused_at(l: &TcpListener, args: &[&str], expect: &[&str]) {
    let out = kurabe()
        .args(["http", "-n", "5"])
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    for e in expect {
        assert!(stderr.contains(e), "{args:?}: {stderr} lacks {e}");
    }
    assert!(l.accept().is_err(), "{args:?} sent a request");
}

/// Two `kurabe worker`s on this host, serving runs filed in `schema`.
fn workers(schema: &PgSchema) -> Vec<Kid> {
    (1..=2)
        .map(|i| {
            let w = kurabe()
                .args(["worker", "--store", &schema.url])
                .args(["--name", &format!("thw{i}")])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            Kid(w)
        })
        .collect()
}

/// `kurabe http --workers 2 --threshold …`: the thresholds are judged once,
/// on the merged histograms and counters (not on a share: `rate` counts
/// both workers' responses), PASS/FAIL printed, 99 on a FAIL; a name's
/// scope reads that name's merged row.
#[test]
fn fleet_thresholds_are_judged_on_the_merged_run() {
    let Some(pg) = kurabe_testkit::pg::server() else {
        return;
    };
    let schema = PgSchema::create(&pg.url, "thresholds_fleet");
    let _workers = workers(&schema);
    let server = ServeChild::start(&["--latency-ms", "5"]);
    let fleet = [
        "--store",
        &schema.url,
        "--workers",
        "2",
        "--wait-workers",
        "60s",
    ];
    let load = ["-n", "200", "-c", "4", "-k"];
    let args = [&fleet[..], &load[..], &["--threshold", "p(95)<30s"]].concat();
    let out = http(&[&args[..], &["--threshold", "p(50)<1ms", &server.url]].concat());
    assert_eq!(out.code, Some(99), "{}{}", out.stdout, out.stderr);
    let starts = |l: &str, p: &str| l.trim_start().starts_with(p);
    assert!(
        out.stdout.lines().any(|l| starts(l, "PASS  p(95)<30s")),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.lines().any(|l| starts(l, "FAIL  p(50)<1ms")),
        "{}",
        out.stdout
    );
    assert!(
        out.stderr
            .contains("1 of 2 thresholds failed: 'p(50)<1ms' (measured "),
        "{}",
        out.stderr
    );

    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("set.http");
    let u = &server.url;
    std::fs::write(
        &set,
        format!("# @name home\nGET {u}\n\n# @name cart\nGET {u}cart\n"),
    )
    .unwrap();
    let judged = [
        "--targets",
        set.to_str().unwrap(),
        "--threshold",
        "rate>0",
        "--threshold",
        "max<30s",
        "--threshold",
        "p(99){name:cart}<30s",
        "--threshold",
        "rate{name:home}>0",
    ];
    let (r, _) = http_json_exit(&[&fleet[..], &load[..], &judged[..]].concat(), 0);
    assert_eq!(r.complete_requests, 200);
    assert!(
        r.thresholds.iter().all(|t| t.pass && !t.aborted),
        "{:?}",
        r.thresholds
    );
    let m: Vec<f64> = r.thresholds.iter().map(|t| t.measured).collect();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.max(1.0);
    assert!(
        close(m[0] * r.duration_s, 200.0),
        "rate {} over {} s",
        m[0],
        r.duration_s
    );
    assert!(
        close(m[1] * 1e6, r.latency_us.max as f64),
        "{} vs {}",
        m[1],
        r.latency_us.max
    );
    let row = |n: &str| r.requests.iter().find(|q| q.name == n).unwrap();
    assert!(close(m[2] * 1e6, row("cart").latency_us.p99 as f64));
    assert!(close(m[3], row("home").requests_per_second));
}

#[test]
fn fleet_refuses_abort_and_says_why() {
    refused(
        &["--workers", "2", "--threshold", "p(99)<1s,abort,after=5s"],
        &[
            "--threshold 'p(99)<1s,abort,after=5s' with --workers",
            "drop ,abort",
        ],
    );
}

/// `plan.toml` in `dir`: variants `fast` and `slow` on their own servers,
/// one http workload `index` with `thresholds`, two rounds.
fn plan(dir: &std::path::Path, fast: &str, slow: &str, thresholds: &str) -> std::path::PathBuf {
    let p = dir.join("plan.toml");
    let text = format!(
        r#"
name = "gate"
repeat = 2
[[variant]]
name = "fast"
url = "{fast}"
[[variant]]
name = "slow"
url = "{slow}"
[[workload]]
name = "index"
http = {{ path = "/", requests = 20, concurrency = 4, keep_alive = true, thresholds = [{thresholds}] }}
"#
    );
    std::fs::write(&p, text).unwrap();
    p
}

/// `kurabe run PLAN --store DIR/r.db ARGS`.
fn run_plan(dir: &std::path::Path, plan: &std::path::Path, args: &[&str]) -> std::process::Output {
    kurabe()
        .arg("run")
        .arg(plan)
        .arg("--store")
        .arg(dir.join("r.db"))
        .args(args)
        .output()
        .unwrap()
}

/// The report of e1 in `dir`'s store as JSON, checked against its schema.
fn report_json(dir: &std::path::Path) -> serde_json::Value {
    let out = kurabe()
        .args(["report", "e1", "--format", "json", "--store"])
        .arg(dir.join("r.db"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    kurabe_testkit::schema::assert_valid("experiment-report.schema.json", &v);
    v
}

// A server that waits 50 ms before each answer cannot be measured under
// 50 ms; one that does not wait is far below 50 ms on any machine.
#[test]
fn a_plan_judges_each_variants_runs_and_exits_99_when_one_fails() {
    let fast = ServeChild::start(&[]);
    let slow = ServeChild::start(&["--latency-ms", "50"]);
    let dir = tempfile::tempdir().unwrap();
    let p = plan(
        dir.path(),
        &fast.url,
        &slow.url,
        r#""p(95)<30s", "p(50)<50ms""#,
    );
    let o = run_plan(dir.path(), &p, &["-q"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(99), "{stdout}{stderr}");
    let line = |start: &str| {
        stdout
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line {start}: {stdout}"))
            .to_owned()
    };
    assert!(line("PASS  fast  p(95)<30s").ends_with("(worst of 2 runs)"));
    assert!(line("PASS  fast  p(50)<50ms").ends_with("s  (worst of 2 runs)"));
    assert!(line("PASS  slow  p(95)<30s").contains("(worst of 2 runs)"));
    let fail = line("FAIL  slow  p(50)<50ms");
    assert!(fail.ends_with("(worst of 2 runs; failed in 2)"), "{fail}");
    assert!(
        stderr.contains("kurabe: 1 of 4 thresholds failed: index/slow 'p(50)<50ms' (worst "),
        "{stderr}"
    );
    // The full result was saved: every run of both variants.
    assert_eq!(fast.served() + slow.served(), 80);
    let v = report_json(dir.path());
    let t = &v["workloads"][0]["thresholds"];
    assert_eq!(t[0]["variant"], "fast");
    assert_eq!(t[1]["variant"], "slow");
    assert_eq!(t[1]["runs"], 2);
    let slow_p50 = &t[1]["thresholds"][1];
    assert_eq!(slow_p50["pass"], false);
    assert_eq!(slow_p50["runs_failed"], 2);
    assert!(slow_p50["measured"].as_f64().unwrap() >= 0.05, "{slow_p50}");
    assert_eq!(t[0]["thresholds"][1]["pass"], true);
}

#[test]
fn a_plan_whose_thresholds_hold_exits_0_and_markdown_lists_them() {
    let fast = ServeChild::start(&[]);
    let also = ServeChild::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let p = plan(dir.path(), &fast.url, &also.url, r#""failed<1%", "rate>0""#);
    let o = run_plan(dir.path(), &p, &["-q", "--format", "md"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("**Thresholds**"), "{stdout}");
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("- PASS  ")).count(),
        4,
        "{stdout}"
    );
    assert!(stdout.lines().all(|l| !l.starts_with("- FAIL")), "{stdout}");
}

#[test]
fn a_plans_bad_or_unknown_thresholds_are_refused_before_any_request() {
    let (l, url) = silent();
    let dir = tempfile::tempdir().unwrap();
    for (t, expect) in [
        (r#""p95<1s""#, "unknown metric 'p'"),
        (r#""p(95){name:nope}<1s""#, "no request named 'nope'"),
        (r#""checks>99%""#, "checks no response"),
    ] {
        let o = run_plan(dir.path(), &plan(dir.path(), &url, &url, t), &["-q"]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{t}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
        assert!(
            stderr.contains(expect) && stderr.contains("workload[0]"),
            "{t}: {stderr}"
        );
        assert!(l.accept().is_err(), "{t} sent a request");
    }
}

/// `kurabe check ID --store DIR/r.db ARGS`: (exit code, stdout, stderr).
fn check(dir: &std::path::Path, id: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let o = kurabe()
        .args(["check", id, "--store"])
        .arg(dir.join("r.db"))
        .args(args)
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (o.status.code(), text(&o.stdout), text(&o.stderr))
}

// The plan's own `thresholds` and `kurabe check --threshold` read one
// grammar: the same texts judge the stored runs as the plan judged them.
#[test]
fn kurabe_check_judges_a_stored_experiments_runs_and_a_saved_result() {
    let fast = ServeChild::start(&[]);
    let slow = ServeChild::start(&["--latency-ms", "50"]);
    let dir = tempfile::tempdir().unwrap();
    let p = plan(dir.path(), &fast.url, &slow.url, "");
    let o = run_plan(dir.path(), &p, &["-q"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ts = ["--threshold", "p(95)<30s", "--threshold", "p(50)<50ms"];
    let (code, stdout, stderr) = check(dir.path(), "e1", &ts);
    assert_eq!(code, Some(99), "{stdout}{stderr}");
    let line = |start: &str| {
        let found = stdout.lines().map(str::trim).find(|l| l.starts_with(start));
        found
            .unwrap_or_else(|| panic!("no line {start}: {stdout}"))
            .to_owned()
    };
    assert!(line("PASS  fast  p(50)<50ms").ends_with("(worst of 2 runs)"));
    let fail = line("FAIL  slow  p(50)<50ms");
    assert!(fail.ends_with("(worst of 2 runs; failed in 2)"), "{fail}");
    let failed = "kurabe: 1 of 4 thresholds failed: index/slow 'p(50)<50ms' (worst ";
    assert!(stderr.contains(failed), "{stderr}");

    let named = [
        "--threshold",
        "rate>0",
        "--threshold",
        "failed<1%",
        "--format",
        "json",
    ];
    let (code, stdout, stderr) = check(dir.path(), "e1", &named);
    assert_eq!(code, Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    kurabe_testkit::schema::assert_valid("check.schema.json", &v);
    let t = &v["thresholds"][0];
    assert_eq!(t["workload"], "index");
    assert_eq!(t["variants"][1]["variant"], "slow");
    assert!(
        t["variants"][1]["thresholds"][0]["measured"]
            .as_f64()
            .unwrap()
            > 0.0
    );

    let out = kurabe()
        .args(["http", "-q", "-n", "20", "-k", "--save=one", "--store"])
        .arg(dir.path().join("r.db"))
        .arg(&slow.url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, stdout, stderr) = check(dir.path(), "r1", &["--threshold", "p(99)<10ms"]);
    assert_eq!(code, Some(99), "{stdout}{stderr}");
    assert!(line_in(&stdout, "FAIL  one  p(99)<10ms"), "{stdout}");
}

fn line_in(text: &str, start: &str) -> bool {
    text.lines().any(|l| l.trim().starts_with(start))
}

#[test]
fn kurabe_check_refuses_what_a_stored_record_cannot_answer() {
    let fast = ServeChild::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let p = plan(dir.path(), &fast.url, &fast.url, "");
    assert!(run_plan(dir.path(), &p, &["-q"]).status.success());
    for (t, expect) in [
        ("p95<1s", "--threshold 'p95<1s': unknown metric 'p'"),
        (
            "p(97)<1s",
            "p(97) is not in the stored record, which keeps p(50)",
        ),
        ("checks>99%", "checked no response"),
        ("p(99){name:cart}<1s", "drop {name:…}"),
        ("p(99)<1s,abort", "drop ,abort"),
    ] {
        let (code, _, stderr) = check(dir.path(), "e1", &["--threshold", t]);
        assert_eq!(
            (code, stderr.trim_end().lines().count()),
            (Some(2), 1),
            "{t}: {stderr}"
        );
        assert!(stderr.contains(expect), "{t}: {stderr}");
    }
    let (code, _, stderr) = check(dir.path(), "e1", &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--baseline"), "{stderr}");
}

#[test]
fn kurabe_check_with_a_baseline_and_thresholds_gives_both_and_99_wins() {
    let fast = ServeChild::start(&[]);
    let slow = ServeChild::start(&["--latency-ms", "50"]);
    let dir = tempfile::tempdir().unwrap();
    let p = plan(dir.path(), &fast.url, &slow.url, "");
    for _ in 0..2 {
        assert!(run_plan(dir.path(), &p, &["-q"]).status.success());
    }
    let args = ["--baseline", "e1", "--threshold", "p(50)<50ms"];
    let (code, stdout, stderr) = check(dir.path(), "e2", &args);
    assert_eq!(code, Some(99), "{stdout}{stderr}");
    assert!(
        stdout.starts_with("check e2 ") && stdout.contains(" against e1 "),
        "{stdout}"
    );
    assert!(
        stdout.contains(" checked\n"),
        "the comparison's summary: {stdout}"
    );
    assert!(line_in(&stdout, "FAIL  slow  p(50)<50ms"), "{stdout}");
    assert!(line_in(&stdout, "PASS  fast  p(50)<50ms"), "{stdout}");
    let (code, stdout, _) = check(dir.path(), "e2", &["--baseline", "e1", "--format", "md"]);
    assert!(matches!(code, Some(0 | 1)), "{stdout}");
    assert!(!stdout.contains("Thresholds"), "none asked: {stdout}");
}
