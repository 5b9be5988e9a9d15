//! `kurabe noise`: a command, a URL (`kurabe serve` on port 0) and a
//! plan's variant against themselves, through the built binary. The
//! figures are checked for structure and sanity (spreads ≥ 0, more runs
//! detect less, the suggestion at least the default), never for the
//! machine being quiet; bad input exits 1 (a failing workload) or 2.

use std::path::Path;
use std::process::Output;

use kurabe_model::noise::{NoiseReport, NoiseSubject};
use serde_json::Value;

use crate::serve::ServeChild;
use crate::util::kurabe;

fn noise(dir: &Path, args: &[&str]) -> Output {
    kurabe()
        .arg("noise")
        .arg("--store")
        .arg(dir.join("results.db"))
        .args(["-q"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The JSON report, checked against the committed schema.
fn report(o: &Output) -> NoiseReport {
    assert!(o.status.success(), "{}", text(o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    kurabe_testkit::schema::assert_valid("noise-report.schema.json", &v);
    serde_json::from_value(v).unwrap()
}

/// What every noise report must say, whatever the machine's load.
fn assert_sane(r: &NoiseReport) {
    assert!(r.rounds >= 3, "at least 3 rounds: {}", r.rounds);
    assert!(r.elapsed_s > 0.0 && r.default_runs >= 3, "{r:?}");
    assert!(r.suggestion.rounds >= r.default_runs, "{:?}", r.suggestion);
    assert!(!r.metrics.is_empty());
    for m in &r.metrics {
        assert!(m.runs >= 6, "{}: both sides of 3 rounds: {}", m.id, m.runs);
        for p in [m.cv_pct, m.robust_spread_pct].into_iter().flatten() {
            assert!(p.is_finite() && p >= 0.0, "{}: {p}", m.id);
        }
        if let (Some(d), Some(lo), Some(hi)) = (m.drift_pct, m.drift_low_pct, m.drift_high_pct) {
            assert!(lo <= d && d <= hi, "{}: {lo} {d} {hi}", m.id);
        }
        if let (Some(def), Some(sug)) = (m.detectable_default_pct, m.detectable_suggested_pct) {
            assert!(def > 0.0 && sug > 0.0, "{}", m.id);
            // At least as many runs can only detect as small a change.
            assert!(sug <= def + 1e-9, "{}: {sug} > {def}", m.id);
            let band = m.suggested_noise_band.unwrap();
            assert!(
                band * 100.0 >= sug - 1e-9,
                "{}: band {band} below {sug}",
                m.id
            );
        }
        // The A/A ratio itself is whatever the machine made it (a count of
        // preemptions can differ 5x between the sides on a loaded host), so
        // only its shape is checked: positive, and inside its own interval.
        if let Some(ratio) = m.aa.ratio {
            assert!(
                ratio.is_finite() && ratio > 0.0,
                "{}: A/A ratio {ratio}",
                m.id
            );
            if let (Some(lo), Some(hi)) = (m.aa.ratio_low, m.aa.ratio_high) {
                assert!(lo <= ratio && ratio <= hi, "{}: {lo} {ratio} {hi}", m.id);
            }
        }
    }
}

fn metric<'a>(r: &'a NoiseReport, name: &str) -> &'a kurabe_model::noise::MetricNoise {
    r.metrics
        .iter()
        .find(|m| m.metric == name)
        .unwrap_or_else(|| panic!("no {name} in {r:?}"))
}

#[test]
fn a_sleep_and_a_spin_against_themselves() {
    let dir = tempfile::tempdir().unwrap();
    let sleep = report(&noise(
        dir.path(),
        &["sleep 0.02", "-d", "2s", "--format", "json"],
    ));
    let spin = report(&noise(
        dir.path(),
        &[
            "awk 'BEGIN { for (i = 0; i < 300000; i++) s += i }'",
            "-d",
            "2s",
            "--format",
            "json",
        ],
    ));
    for r in [&sleep, &spin] {
        assert_sane(r);
        assert!(matches!(r.subject, NoiseSubject::Command { .. }));
    }
    let wall = metric(&sleep, "wall_time_s");
    assert!(wall.mean >= 0.015 && wall.mean < 1.0, "{wall:?}");
    // A sleep waits; a spin works: the user time tells them apart.
    let (slept, spun) = (metric(&sleep, "user_time_s"), metric(&spin, "user_time_s"));
    assert!(spun.mean > 3.0 * slept.mean, "{spun:?} vs {slept:?}");
    // Saved under its label, so its history can be followed.
    let o = kurabe()
        .args([
            "history",
            "noise: sleep 0.02",
            "--format",
            "json",
            "--store",
        ])
        .arg(dir.path().join("results.db"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let h = String::from_utf8_lossy(&o.stdout);
    assert!(h.contains("metrics.command.wall_time_s.cv_pct"), "{h}");
}

#[test]
fn the_text_and_markdown_say_the_spread_the_power_and_the_suggestion() {
    let dir = tempfile::tempdir().unwrap();
    let o = noise(dir.path(), &["sleep 0.02", "-d", "1s", "--no-save"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for want in [
        "against itself",
        "CV",
        "drift",
        "detects (",
        "within noise",
        "Suggested:",
        "kurabe cmd --runs",
        "repeat = ",
        "noise_bands = {",
    ] {
        assert!(out.contains(want), "{want:?} missing:\n{out}");
    }
    let o = noise(
        dir.path(),
        &["sleep 0.02", "-d", "1s", "--no-save", "--format", "md"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(
        md.starts_with("### kurabe noise:") && md.contains("| metric |"),
        "{md}"
    );
    assert!(
        !dir.path().join("results.db").exists(),
        "--no-save keeps nothing"
    );
}

#[test]
fn a_url_against_itself_under_load() {
    let server = ServeChild::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let r = report(&noise(
        dir.path(),
        &[
            &server.url,
            "-d",
            "2s",
            "-t",
            "0.2s",
            "-c",
            "2",
            "--format",
            "json",
        ],
    ));
    assert_sane(&r);
    assert_eq!(r.default_runs, 5, "kurabe http A B's rounds");
    let rps = metric(&r, "requests_per_second");
    assert!(rps.mean > 0.0, "{rps:?}");
    assert!(matches!(&r.subject, NoiseSubject::Url { url } if *url == server.url));
}

#[test]
fn a_plans_variant_against_itself() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("plan.toml"),
        r#"name = "two sleeps"
repeat = 4

[[variant]]
name = "short"
command = "sleep 0.01"

[[variant]]
name = "long"
command = "sleep 0.03"

[[workload]]
name = "nap"
command = { command = "true", runs = 2 }
"#,
    )
    .unwrap();
    let r = report(&noise(
        dir.path(),
        &[
            "plan.toml",
            "--variant",
            "long",
            "-d",
            "2s",
            "--format",
            "json",
        ],
    ));
    assert_sane(&r);
    assert_eq!(r.default_runs, 4, "the plan's repeat");
    let wall = metric(&r, "wall_time_s");
    assert!(wall.mean >= 0.025, "the long variant ran: {wall:?}");
    let o = noise(dir.path(), &["plan.toml", "--variant", "nope", "-d", "1s"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("`nope`") && err.contains("`short`, `long`"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn a_failing_workload_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let o = noise(dir.path(), &["sh -c 'exit 3'", "-d", "1s"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("exit"),
        "{}",
        text(&o)
    );
    // A URL nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/");
    let o = noise(dir.path(), &[&url, "-d", "1s", "-t", "0.1s"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(o.stdout.is_empty(), "no report of a failed workload");
}

#[test]
fn a_command_too_short_to_time_is_refused_with_the_repetitions_to_use() {
    let dir = tempfile::tempdir().unwrap();
    let o = noise(dir.path(), &["true", "-d", "5s"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let n: u32 = err
        .split("repeat it ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no repetition count in {err}"));
    assert!(n >= 10, "{err}");
    assert!(err.contains("for i in $(seq"), "{err}");
}

#[test]
fn usage_errors_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["sleep 0.1", "--variant", "a"][..],
        &["sleep 0.1", "-c", "2"],
        &["http://127.0.0.1:9/", "-N"],
        &["sleep 0.1", "-d", "0"],
        &["sleep 0.1", "-d", "soon"],
        &["missing.toml"],
        &["ftp://example.invalid/x.toml"],
    ] {
        let o = noise(dir.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    let o = noise(dir.path(), &["sleep 0.1", "--variant", "a"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--variant applies to a plan file"), "{err}");
}
