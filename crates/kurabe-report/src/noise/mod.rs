//! `kurabe noise`: a workload's noise, measured A/A. Text is
//! [`crate::Terminal`]'s, Markdown [`crate::Markdown`]'s, JSON the record
//! itself ([`crate::Json`]); pick one with [`crate::record_renderer`].
//!
//! Owns the words of a noise report, shared by the formats: the heading,
//! one row of figures per metric, the A/A verdicts, and the suggestion
//! as flags and as plan lines. Must not compute: every figure is the
//! record's.

mod markdown;
mod text;

use kurabe_model::experiment::Tone;
use kurabe_model::noise::{MetricNoise, NoiseReport, NoiseSubject};
use kurabe_model::stats::metric::lookup;
use kurabe_model::stats::Unit;

use crate::words::{change_pct, label, num, value, verdict};

/// The heading: what ran against itself, how long, how many runs.
fn heading(r: &NoiseReport) -> String {
    let what = match &r.subject {
        NoiseSubject::Command { command } => format!("`{command}`"),
        NoiseSubject::Url { url } => url.clone(),
        NoiseSubject::Plan { plan, variant } => format!("plan `{plan}`, variant `{variant}`"),
    };
    let per_run = match r.executions_per_run {
        1 => String::new(),
        n => format!(", {n} executions a run"),
    };
    format!(
        "kurabe noise: {what} against itself, interleaved: {} rounds of A and A′ in {} s ({} s asked){per_run}",
        r.rounds,
        num(r.elapsed_s),
        num(r.budget_s),
    )
}

/// The column titles, the detectable changes' with their run counts.
fn titles(r: &NoiseReport) -> [String; 8] {
    [
        "metric".into(),
        "mean".into(),
        "CV".into(),
        "robust".into(),
        "drift [95 %]".into(),
        format!("detects ({} runs)", r.default_runs),
        format!("detects ({} runs)", r.suggestion.rounds),
        "band".into(),
    ]
}

/// One metric's figures, as the columns of [`titles`].
fn cells(r: &NoiseReport, m: &MetricNoise) -> [String; 8] {
    let pct = |p: Option<f64>| p.map_or("–".into(), change_pct);
    let detects = |p: Option<f64>| p.map_or("–".into(), |p| format!("≥ {}", change_pct(p)));
    [
        metric_name(r, m),
        value(unit(&m.metric), m.mean),
        pct(m.cv_pct),
        pct(m.robust_spread_pct),
        drift(m),
        detects(m.detectable_default_pct),
        detects(m.detectable_suggested_pct),
        m.suggested_noise_band.map_or("–".into(), band),
    ]
}

/// The metric's short label, with its workload in a plan of several.
fn metric_name(r: &NoiseReport, m: &MetricNoise) -> String {
    if r.metrics.iter().any(|x| x.workload != m.workload) {
        format!("{} {}", m.workload, label(&m.metric))
    } else {
        label(&m.metric)
    }
}

/// A metric's unit, a plain count for one kurabe does not know.
fn unit(metric: &str) -> Unit {
    lookup(metric).map_or(Unit::Count, |m| m.unit)
}

/// `+0.4 % [-0.3, +1.1]`, `–` without a drift.
fn drift(m: &MetricNoise) -> String {
    match (m.drift_pct, m.drift_low_pct, m.drift_high_pct) {
        (Some(d), Some(lo), Some(hi)) => format!("{d:+.1} % [{lo:+.1}, {hi:+.1}]"),
        _ => "–".into(),
    }
}

/// A band as a plan writes it: `2%`, `0.5%`.
fn band(b: f64) -> String {
    let p = b * 100.0;
    let text = format!("{p:.1}");
    format!("{}%", text.trim_end_matches('0').trim_end_matches('.'))
}

/// Each metric's A/A verdict in the words every verdict uses, with its
/// tone: better or worse here is a false verdict.
fn verdicts(r: &NoiseReport) -> Vec<(Tone, String, String)> {
    r.metrics
        .iter()
        .map(|m| {
            let dir = lookup(&m.metric).map(|d| d.direction);
            let (tone, words) = verdict(&m.metric, unit(&m.metric), dir, &m.aa);
            (tone, metric_name(r, m), words)
        })
        .collect()
}

/// The line under the verdicts when one of them moved.
fn false_verdicts(r: &NoiseReport) -> Option<String> {
    let moved: Vec<String> = verdicts(r)
        .into_iter()
        .filter(|(t, _, _)| *t != Tone::Neutral)
        .map(|(_, name, _)| name)
        .collect();
    (!moved.is_empty()).then(|| format!(
        "A false verdict on {}: the same workload read as better or worse. On this machine that happens more often than the 5 % the interval allows; widen the band or run more rounds.",
        moved.join(", ")
    ))
}

/// The suggestion in words: the rounds, their time, and what they give.
fn suggestion_line(r: &NoiseReport) -> String {
    let s = &r.suggestion;
    let minutes = s.estimated_s / 60.0;
    let time = if minutes >= 1.0 {
        format!("{} min", num(minutes))
    } else {
        format!("{} s", num(s.estimated_s))
    };
    // Capped: one more round would not have fit.
    let per_round = s.estimated_s / f64::from(s.rounds.max(1));
    let capped = s.estimated_s + per_round > s.max_time_s && s.rounds > r.default_runs;
    let why = if capped {
        format!(
            " (the most that fit {} min; the bands below are what they can tell)",
            num(s.max_time_s / 60.0)
        )
    } else {
        String::new()
    };
    format!(
        "Suggested: {} runs a side, ≈{time} at this pace{why}",
        s.rounds
    )
}

/// The suggestion as the flags of the command that runs this workload.
fn suggestion_flags(r: &NoiseReport) -> String {
    let n = r.suggestion.rounds;
    match &r.subject {
        NoiseSubject::Command { command } => format!(
            "kurabe cmd --runs {} {} …",
            n * r.executions_per_run,
            kurabe_model::plan::shell_quote(command)
        ),
        NoiseSubject::Url { url } => format!("kurabe http {url} URL_B --rounds {n} …"),
        NoiseSubject::Plan { .. } => format!("kurabe run PLAN --repeat {n}"),
    }
}

/// The suggestion as plan lines: `repeat` and `noise_bands`.
fn plan_lines(r: &NoiseReport) -> [String; 2] {
    let bands: Vec<String> = r
        .suggestion
        .noise_bands
        .iter()
        .map(|(m, b)| format!("{m} = \"{}\"", band(*b)))
        .collect();
    [
        format!("repeat = {}", r.suggestion.rounds),
        format!("noise_bands = {{ {} }}", bands.join(", ")),
    ]
}

#[cfg(test)]
mod tests;
