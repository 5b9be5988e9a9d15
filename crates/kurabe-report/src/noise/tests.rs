use std::collections::BTreeMap;

use kurabe_model::noise::{MetricNoise, NoiseReport, NoiseSubject, Suggestion};
use kurabe_model::stats::{compare, Direction};

use crate::{to_string, Json, Markdown, Terminal};

fn metric(name: &str, cv: f64, aa: kurabe_model::stats::Comparison) -> MetricNoise {
    MetricNoise {
        id: format!("command.{name}"),
        workload: "command".into(),
        metric: name.into(),
        runs: 40,
        mean: 0.1,
        cv_pct: Some(cv),
        robust_spread_pct: Some(cv * 0.8),
        drift_pct: Some(0.4),
        drift_low_pct: Some(-0.3),
        drift_high_pct: Some(1.1),
        aa,
        noise_band: 0.02,
        detectable_default_pct: Some(cv * 1.2),
        runs_for_band: Some(40),
        detectable_suggested_pct: Some(1.9),
        suggested_noise_band: Some(0.02),
    }
}

fn report() -> NoiseReport {
    let same = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98];
    let within = compare(&same, &same, Direction::LowerIsBetter, 0.02);
    let moved = compare(
        &same,
        &same.map(|x| x * 1.5),
        Direction::LowerIsBetter,
        0.02,
    );
    NoiseReport {
        schema_version: 1,
        tool_version: "0.1.0".into(),
        started_at: "2026-12-07T10:00:00Z".into(),
        subject: NoiseSubject::Command {
            command: "sleep 0.1".into(),
        },
        budget_s: 60.0,
        elapsed_s: 61.5,
        rounds: 20,
        executions_per_run: 1,
        default_runs: 10,
        metrics: vec![
            metric("wall_time_s", 1.5, within),
            metric("user_time_s", 12.0, moved),
        ],
        suggestion: Suggestion {
            rounds: 40,
            estimated_s: 123.0,
            max_time_s: 600.0,
            noise_bands: BTreeMap::from([
                ("wall_time_s".into(), 0.02),
                ("user_time_s".into(), 0.015),
            ]),
        },
    }
}

#[test]
fn text_shows_the_figures_the_verdicts_and_the_suggestion() {
    let text = to_string(&Terminal { color: false }, &report());
    assert!(
        text.starts_with("kurabe noise: `sleep 0.1` against itself"),
        "{text}"
    );
    for want in [
        "detects (10 runs)",
        "detects (40 runs)",
        "+0.4 % [-0.3, +1.1]",
        "≥ 1.9 %",
        "within noise: no change larger than",
        "A false verdict on user time",
        "Suggested: 40 runs a side, ≈2.05 min at this pace:",
        "kurabe cmd --runs 40 'sleep 0.1' …",
        "repeat = 40",
        "noise_bands = { user_time_s = \"1.5%\", wall_time_s = \"2%\" }",
    ] {
        assert!(text.contains(want), "{want:?} missing from:\n{text}");
    }
}

#[test]
fn markdown_and_json_carry_the_same_report() {
    let md = to_string(&Markdown, &report());
    assert!(md.starts_with("### kurabe noise:"), "{md}");
    assert!(md.contains("| metric | mean | CV |"), "{md}");
    assert!(md.contains("```\nkurabe cmd --runs 40"), "{md}");
    let json = to_string(&Json, &report());
    let back: NoiseReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back.metrics.len(), 2);
    assert_eq!(back.suggestion.rounds, 40);
}
