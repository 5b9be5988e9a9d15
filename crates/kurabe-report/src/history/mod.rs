//! Stored experiments of one plan → [`HistoryReport`]: per workload,
//! variant and metric, the series over experiments on one host
//! fingerprint, with the change points E-divisive means finds in the
//! per-run samples; and an experiment against its baseline's recent
//! history → [`CheckReport`] (`kurabe check`). One renderer per format
//! beside this file.
//!
//! Pure functions of the stored data: they must not read the store, files
//! or the clock, nor parse a plan: the newest experiment's layout (read
//! by the store) gives the noise bands and the workload and variant order.

mod check;
mod csv;
pub mod gate;
pub(crate) mod html;
mod markdown;
pub(crate) mod text;
pub mod thresholds;

use kurabe_model::history::{
    HistoryChange, HistoryPoint, HistoryReport, HistorySeries, HostSeen, Order,
};
use kurabe_model::layout::{noise_band_for, Layout};
use kurabe_model::record::{
    Experiment, ExperimentStatus, HostFacts, MetricValue, RunRecord, RunStatus, SavedResult,
    StoredRun,
};
use kurabe_model::stats::changepoint::{e_divisive, ChangePoint, Config};
use kurabe_model::stats::{metric, Direction, Summary, Unit};
use kurabe_model::SCHEMA_VERSION;

pub use check::{check_report, CheckInput};
pub use csv::HistoryCsv;
pub use html::HistoryHtml;
pub use markdown::HistoryMarkdown;
pub use text::HistoryText;

/// Which machines' experiments a history takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hosts {
    /// The fingerprint of the newest experiment.
    Newest,
    /// This fingerprint.
    Fingerprint(String),
    /// Every machine (`--all-hosts`): points are marked by fingerprint.
    All,
}

impl Hosts {
    /// `--host FINGERPRINT` and `--all-hosts` (which wins) as a choice.
    pub fn from_flags(host: Option<&str>, all_hosts: bool) -> Hosts {
        match (host, all_hosts) {
            (_, true) => Hosts::All,
            (Some(fp), false) => Hosts::Fingerprint(fp.to_owned()),
            (None, false) => Hosts::Newest,
        }
    }
}

/// Series key: workload, variant, metric.
pub(crate) type Key = (String, String, String);

/// Build the history of `experiments` (one plan's, any order).
pub fn history_report(
    name: &str,
    experiments: &[Experiment],
    hosts: &Hosts,
    config: &Config,
) -> HistoryReport {
    let (chosen, seen) = choose_host(experiments, hosts);
    let mut picked: Vec<&Experiment> = experiments
        .iter()
        .filter(|e| chosen.is_none() || e.host_fingerprint() == chosen)
        .collect();
    let order = sort(&mut picked);
    let plan = newest_layout(&picked);
    let series = series_keys(&picked, plan)
        .into_iter()
        .map(|key| series(&picked, key, plan, config))
        .collect();
    HistoryReport {
        schema_version: SCHEMA_VERSION,
        name: name.to_owned(),
        host_fingerprint: chosen,
        hosts: seen,
        order,
        series,
    }
}

/// `kurabe history NAME`: [`history_report`] with the default change-point
/// settings, or, when no series has a point on the host chosen (`host`:
/// `--host`), the error that says how to see the hosts.
pub fn history_to_show(
    name: &str,
    experiments: &[Experiment],
    hosts: &Hosts,
    host: Option<&str>,
) -> Result<HistoryReport, String> {
    let report = history_report(name, experiments, hosts, &Config::default());
    if report.series.iter().all(|s| s.points.is_empty()) {
        let host = host.unwrap_or("-");
        return Err(format!(
            "`{name}` has no experiment on host {host}; see the hosts with --all-hosts"
        ));
    }
    Ok(report)
}

/// The fingerprint to keep (`None`: all) and every host seen, chosen first.
fn choose_host(experiments: &[Experiment], hosts: &Hosts) -> (Option<String>, Vec<HostSeen>) {
    let mut seen: Vec<HostSeen> = Vec::new();
    let mut newest: Option<(&str, String)> = None;
    for e in experiments {
        let (Some(fp), Some(h)) = (e.host_fingerprint(), e.host.as_ref()) else {
            continue;
        };
        if newest
            .as_ref()
            .is_none_or(|(t, _)| e.started_at.as_str() >= *t)
        {
            newest = Some((&e.started_at, fp.clone()));
        }
        count_host(&mut seen, fp, h);
    }
    let chosen = match hosts {
        Hosts::Newest => newest.map(|n| n.1),
        Hosts::Fingerprint(f) => Some(f.clone()),
        Hosts::All => None,
    };
    if let Some(c) = &chosen {
        seen.sort_by_key(|s| s.fingerprint != *c);
    }
    (chosen, seen)
}

/// One more experiment on host `fp` (a new entry the first time), its
/// host name added when new.
fn count_host(seen: &mut Vec<HostSeen>, fp: String, h: &HostFacts) {
    match seen.iter_mut().find(|s| s.fingerprint == fp) {
        Some(s) => {
            s.experiments += 1;
            if !s.hostnames.contains(&h.hostname) {
                s.hostnames.push(h.hostname.clone());
            }
        }
        None => seen.push(HostSeen {
            fingerprint: fp,
            hostnames: vec![h.hostname.clone()],
            cpu_model: h.cpu_model.clone(),
            experiments: 1,
        }),
    }
}

/// Commit order when every experiment knows its commit time, else start
/// time; ties by start time, then id.
fn sort(experiments: &mut [&Experiment]) -> Order {
    let commit_time = |e: &Experiment| e.origin.rev.as_ref()?.commit_time.clone();
    let by_commit = !experiments.is_empty() && experiments.iter().all(|e| commit_time(e).is_some());
    experiments.sort_by(|a, b| {
        // Saved results read as experiments have negative ids: |id| is the save order.
        let k = |e: &Experiment| {
            let order = e.id.0.unsigned_abs();
            (
                by_commit.then(|| commit_time(e)),
                e.started_at.clone(),
                order,
            )
        };
        k(a).cmp(&k(b))
    });
    if by_commit {
        Order::Commit
    } else {
        Order::Time
    }
}

/// The layout of the newest experiment whose plan the store could read.
pub(crate) fn newest_layout<'a>(experiments: &[&'a Experiment]) -> Option<&'a Layout> {
    let mut by_start: Vec<&&Experiment> = experiments.iter().collect();
    by_start.sort_by(|a, b| b.started_at.cmp(&a.started_at));
    by_start.into_iter().find_map(|e| e.layout.as_deref())
}

/// Every (workload, variant, metric) with a successful run, in plan order
/// of workloads and variants, metrics in the order first seen.
pub(crate) fn series_keys(experiments: &[&Experiment], plan: Option<&Layout>) -> Vec<Key> {
    let mut keys: Vec<Key> = Vec::new();
    for e in experiments {
        for r in e.runs.iter().filter(|r| r.run.status == RunStatus::Ok) {
            for m in &r.run.metrics {
                let k = (
                    r.run.workload.clone(),
                    r.run.variant.clone(),
                    m.name.clone(),
                );
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
        }
    }
    let rank = |list: Vec<String>, x: &str| list.iter().position(|n| n == x).unwrap_or(usize::MAX);
    let workloads = || plan.map_or(Vec::new(), |p| p.workloads.clone());
    let variants = || plan.map_or(Vec::new(), |p| p.variants.clone());
    keys.sort_by_cached_key(|k| (rank(workloads(), &k.0), rank(variants(), &k.1)));
    keys
}

/// The finite values of `key` in `e`'s successful runs.
pub(crate) fn samples(e: &Experiment, key: &Key) -> Vec<f64> {
    e.runs
        .iter()
        .filter(|r| {
            r.run.status == RunStatus::Ok && r.run.workload == key.0 && r.run.variant == key.1
        })
        .flat_map(|r| r.run.metrics.iter().filter(|m| m.name == key.2))
        .map(|m| m.value)
        .filter(|v| v.is_finite())
        .collect()
}

/// `key`'s values in `e`'s successful runs as comparison parts
/// (imported summaries included).
pub(crate) fn parts(e: &Experiment, key: &Key) -> crate::summarised::Parts {
    let runs = e
        .runs
        .iter()
        .map(|r| &r.run)
        .filter(|r| r.workload == key.0 && r.variant == key.1);
    crate::summarised::Parts::of(runs, &key.2)
}

/// Unit, direction and noise band of a metric: the catalogue's, the plan's band.
pub(crate) fn describe(
    e: &[&Experiment],
    key: &Key,
    plan: Option<&Layout>,
) -> (Unit, Option<Direction>, f64) {
    // Saved results' fields are paths (`summary.requests_per_second`).
    let leaf = key.2.rsplit('.').next().unwrap_or(&key.2);
    let known = metric::lookup(&key.2).or_else(|| metric::lookup(leaf));
    let unit_text = e
        .iter()
        .flat_map(|e| e.runs.iter())
        .flat_map(|r| r.run.metrics.iter())
        .find(|m| m.name == key.2)
        .map_or("", |m| m.unit.as_str());
    let unit = known
        .as_ref()
        .map_or_else(|| crate::build::unit_from_text(unit_text), |m| m.unit);
    let band = noise_band_for(plan, &key.2);
    (unit, known.map(|m| m.direction), band)
}

/// Geometric mean (arithmetic when a value is ≤ 0).
pub(crate) fn centre(samples: &[f64]) -> f64 {
    Summary::of(samples).map_or(f64::NAN, |s| s.geometric_mean.unwrap_or(s.mean))
}

/// `e12`, or `r7` for a saved result read as an experiment
/// ([`results_as_experiments`] gives those negative ids).
pub(crate) fn entry_name(e: &Experiment) -> String {
    if e.id.0 < 0 {
        format!("r{}", -e.id.0)
    } else {
        e.id.to_string()
    }
}

fn point(e: &Experiment, key: &Key, samples: Vec<f64>) -> HistoryPoint {
    let rev = e.origin.rev.as_ref();
    HistoryPoint {
        experiment: entry_name(e),
        rev: rev.map_or("-".to_owned(), |r| r.short()),
        commit: rev.and_then(|r| r.commit.clone()),
        started_at: e.started_at.clone(),
        host_fingerprint: e.host_fingerprint(),
        value: centre(&samples),
        samples,
        from_summary: parts(e, key).from_summary,
    }
}

fn series(
    experiments: &[&Experiment],
    key: Key,
    plan: Option<&Layout>,
    config: &Config,
) -> HistorySeries {
    let (unit, direction, noise_band) = describe(experiments, &key, plan);
    let points = points(experiments, &key);
    let groups: Vec<Vec<f64>> = points.iter().map(|p| p.samples.clone()).collect();
    let dir = direction.unwrap_or(Direction::HigherIsBetter);
    let changes = e_divisive(&groups, dir, noise_band, config)
        .iter()
        .map(|c| {
            let (_, phrase) = crate::words::verdict(&key.2, unit, direction, &c.comparison);
            change(&points, c, phrase)
        })
        .collect();
    let (workload, variant, metric) = key;
    HistorySeries {
        metric,
        variant,
        workload,
        unit,
        direction,
        noise_band,
        points,
        changes,
    }
}

/// A point per experiment that measured the series.
fn points(experiments: &[&Experiment], key: &Key) -> Vec<HistoryPoint> {
    experiments
        .iter()
        .map(|e| (e, samples(e, key)))
        .filter(|(_, s)| !s.is_empty())
        .map(|(e, s)| point(e, key, s))
        .collect()
}

fn change(points: &[HistoryPoint], c: &ChangePoint, phrase: String) -> HistoryChange {
    let (after, before) = (&points[c.index], &points[c.index.saturating_sub(1)]);
    let cmp = &c.comparison;
    HistoryChange {
        index: c.index,
        experiment: after.experiment.clone(),
        rev: after.rev.clone(),
        previous_experiment: before.experiment.clone(),
        previous_rev: before.rev.clone(),
        ratio: cmp.ratio,
        interval: cmp.ratio_low.zip(cmp.ratio_high).map(|(l, h)| [l, h]),
        verdict: cmp.verdict,
        detectable_change_pct: cmp.detectable_change_pct,
        p_value: c.p_value,
        phrase,
    }
}

/// Saved results of one label as one-run experiments, so that their
/// history is built like a plan's: workload = the result's kind, variant =
/// its label, metrics = every numeric field of its record (as paths).
pub fn results_as_experiments(results: &[SavedResult]) -> Vec<Experiment> {
    results.iter().map(result_as_experiment).collect()
}

fn result_as_experiment(r: &SavedResult) -> Experiment {
    let metrics = crate::entries::record_fields(&r.record)
        .into_iter()
        .map(|(name, value)| MetricValue {
            name,
            value,
            unit: String::new(),
        })
        .collect();
    Experiment {
        // Negative: never confused with a stored experiment's id.
        id: kurabe_model::record::ExperimentId(-r.id.0),
        name: r.label.clone(),
        plan_text: String::new(),
        layout: None,
        host: r.host.clone(),
        tool_version: String::new(),
        seed: None,
        started_at: r.created_at.clone(),
        finished_at: Some(r.created_at.clone()),
        status: ExperimentStatus::Complete,
        writer: None,
        origin: r.origin.clone(),
        runs: vec![StoredRun {
            id: 0,
            run: result_run(r, metrics),
        }],
    }
}

/// The one successful run of a saved result: its kind as the workload, its label as the variant.
fn result_run(r: &SavedResult, metrics: Vec<MetricValue>) -> RunRecord {
    RunRecord {
        variant: r.label.clone(),
        workload: r.kind().as_str().to_owned(),
        round: 0,
        status: RunStatus::Ok,
        error_tail: None,
        started_at: r.created_at.clone(),
        finished_at: r.created_at.clone(),
        metrics,
        record: None,
        http: None,
    }
}
