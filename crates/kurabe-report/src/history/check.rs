//! An experiment against its baseline's recent history → [`CheckReport`]:
//! per workload, variant and metric, the experiment's runs against the
//! baseline experiments' runs pooled, as two variants are compared. Runs
//! imported from a harness that kept only a summary are compared by their
//! summaries' moments, and the verdict says "from summary only".

use kurabe_model::history::{CheckReport, CheckRow};
use kurabe_model::layout::Layout;
use kurabe_model::record::Experiment;
use kurabe_model::stats::{compare_metric, Direction, Verdict};
use kurabe_model::tree_counters::Counter;
use kurabe_model::SCHEMA_VERSION;

use super::{centre, describe, newest_layout, parts, samples, series_keys, Key};
use crate::summarised::{compare_parts, Parts, FROM_SUMMARY};
use crate::words;

/// What `kurabe check` compares.
#[derive(Debug, Clone, Copy)]
pub struct CheckInput<'a> {
    /// The experiment checked.
    pub experiment: &'a Experiment,
    /// `--baseline` as given.
    pub baseline: &'a str,
    /// The baseline's experiments, oldest first (same plan and host).
    pub history: &'a [Experiment],
}

/// Judge the experiment against the pooled baseline runs.
pub fn check_report(input: CheckInput<'_>) -> CheckReport {
    let e = input.experiment;
    let mine = [e];
    let plan = newest_layout(&mine);
    let base: Vec<&Experiment> = input.history.iter().collect();
    let rows: Vec<CheckRow> = series_keys(&mine, plan)
        .into_iter()
        .filter_map(|key| row(e, &base, &key, plan))
        .collect();
    // A metric kurabe does not know has no better or worse: it cannot fail
    // a gate. Nor can a process-tree counter (context switches, faults,
    // migrations…): counters say why a headline metric moved, and most of
    // them move with the machine's load, so a gate on them fails CI on
    // noise (an A/A check on a loaded runner: involuntary switches 1.31×).
    let count = |v: Verdict| {
        rows.iter()
            .filter(|r| r.direction.is_some() && r.verdict == v)
            .filter(|r| !Counter::is_metric(&r.metric))
            .count()
    };
    CheckReport {
        schema_version: SCHEMA_VERSION,
        experiment: e.id.to_string(),
        rev: e.origin.rev.as_ref().map_or("-".to_owned(), |r| r.short()),
        name: e.name.clone(),
        baseline: input.baseline.to_owned(),
        baseline_experiments: base.iter().map(|b| b.id.to_string()).collect(),
        host_fingerprint: e.host_fingerprint(),
        worse: count(Verdict::Worse),
        better: count(Verdict::Better),
        rows,
        thresholds: Vec::new(),
    }
}

/// One metric checked; `None` when the baseline never measured it.
fn row(e: &Experiment, base: &[&Experiment], key: &Key, plan: Option<&Layout>) -> Option<CheckRow> {
    let pooled: Vec<f64> = base.iter().flat_map(|b| samples(b, key)).collect();
    let mine = samples(e, key);
    if pooled.is_empty() || mine.is_empty() {
        return None;
    }
    let (unit, direction, band) = describe(&[e], key, plan);
    let dir = direction.unwrap_or(Direction::HigherIsBetter);
    let mut pooled_parts = Parts::default();
    for b in base {
        let p = parts(b, key);
        pooled_parts.from_summary |= p.from_summary;
        pooled_parts.parts.extend(p.parts);
    }
    let summary = compare_parts(&pooled_parts, &parts(e, key), dir, band);
    let (c, baseline_runs, runs) = summary.unwrap_or_else(|| {
        let c = compare_metric(&key.2, &pooled, &mine, dir, band);
        (c, pooled.len(), mine.len())
    });
    let (_, mut phrase) = words::verdict(&key.2, unit, direction, &c);
    if summary.is_some() {
        phrase.push_str(FROM_SUMMARY);
    }
    Some(CheckRow {
        workload: key.0.clone(),
        variant: key.1.clone(),
        metric: key.2.clone(),
        unit,
        baseline_value: centre(&pooled),
        value: centre(&mine),
        baseline_runs,
        runs,
        ratio: c.ratio,
        interval: c.ratio_low.zip(c.ratio_high).map(|(l, h)| [l, h]),
        noise_band: band,
        direction,
        verdict: c.verdict,
        detectable_change_pct: c.detectable_change_pct,
        phrase,
        from_summary: summary.is_some(),
    })
}
