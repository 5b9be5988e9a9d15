//! `kurabe check ID --threshold …`: thresholds judged on stored http
//! records (an experiment's successful http runs, or one saved `kurabe
//! http` result) into the [`CheckReport`]'s `thresholds`, grouped and
//! shown per workload and variant as a plan's are (`crate::thresholds`).
//!
//! Owns gathering the records, refusing a threshold one of them cannot
//! answer, and the thresholds-only report. Must not parse the grammar or
//! read a figure (`kurabe_model::threshold` and `recorded` do), or print.

use kurabe_model::ending::Ending;
use kurabe_model::experiment::VariantThresholds;
use kurabe_model::history::{CheckReport, WorkloadThresholds};
use kurabe_model::http::HttpReport;
use kurabe_model::notice::Notice;
use kurabe_model::record::{Experiment, RunStatus};
use kurabe_model::recorded::{unanswerable, Record};
use kurabe_model::threshold::{Threshold, ThresholdResult};
use kurabe_model::SCHEMA_VERSION;

use crate::thresholds::verdict;

/// One stored http record and where it belongs.
#[derive(Debug, Clone, Copy)]
pub struct StoredHttp<'a> {
    /// Workload name.
    pub workload: &'a str,
    /// Variant name (a saved result's label).
    pub variant: &'a str,
    /// The run's record.
    pub record: &'a HttpReport,
}

/// The successful http runs of `exp`, in plan order (workload, then
/// variant; what the plan does not name as first seen), else run order.
pub fn experiment_records(exp: &Experiment) -> Vec<StoredHttp<'_>> {
    let (workloads, variants): (Vec<String>, Vec<String>) =
        exp.layout.as_ref().map_or_else(Default::default, |p| {
            (p.workloads.clone(), p.variants.clone())
        });
    let rank = |names: &[String], n: &str| names.iter().position(|x| x == n);
    let mut records = runs(exp);
    records.sort_by_key(|r| {
        let (w, v) = (rank(&workloads, r.workload), rank(&variants, r.variant));
        (w.unwrap_or(usize::MAX), v.unwrap_or(usize::MAX))
    });
    records
}

/// The successful http runs of `exp`, in run order.
fn runs(exp: &Experiment) -> Vec<StoredHttp<'_>> {
    exp.runs
        .iter()
        .filter(|r| r.run.status == RunStatus::Ok)
        .filter_map(|r| {
            Some(StoredHttp {
                workload: &r.run.workload,
                variant: &r.run.variant,
                record: r.run.record.as_ref()?.http()?,
            })
        })
        .collect()
}

/// Each threshold judged on each record, grouped by workload and variant
/// (first-seen order); a variant passes when all its runs do. Err: the
/// line refusing the first threshold a record cannot answer.
pub fn judge(
    thresholds: &[Threshold],
    records: &[StoredHttp<'_>],
) -> Result<Vec<WorkloadThresholds>, String> {
    for t in thresholds {
        if let Some((r, why)) = records
            .iter()
            .find_map(|r| unanswerable(t, r.record).map(|why| (r, why)))
        {
            return Err(format!(
                "--threshold '{}': {why} (workload {}, variant {})",
                t.text, r.workload, r.variant
            ));
        }
    }
    let mut out: Vec<WorkloadThresholds> = Vec::new();
    for w in first_seen(records.iter().map(|r| r.workload)) {
        let mine: Vec<&StoredHttp<'_>> = records.iter().filter(|r| r.workload == w).collect();
        let variants = first_seen(mine.iter().map(|r| r.variant))
            .into_iter()
            .map(|v| variant(thresholds, v, &mine))
            .collect();
        out.push(WorkloadThresholds {
            workload: w.to_owned(),
            variants,
        });
    }
    Ok(out)
}

/// The thresholds of variant `v` over its records among `records`.
fn variant(thresholds: &[Threshold], v: &str, records: &[&StoredHttp<'_>]) -> VariantThresholds {
    let judged: Vec<Vec<ThresholdResult>> = records
        .iter()
        .filter(|r| r.variant == v)
        .map(|r| {
            let m = Record(r.record);
            let why = "not measured: no response";
            thresholds
                .iter()
                .map(|t| t.judge_or_fail(&m, why))
                .collect()
        })
        .collect();
    VariantThresholds {
        variant: v.to_owned(),
        runs: judged.len() as u32,
        thresholds: (0..thresholds.len())
            .map(|i| verdict(judged.iter().map(|j| &j[i])))
            .collect(),
    }
}

/// The distinct items of `items`, in first-seen order.
fn first_seen<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// A check of `thresholds` alone (no `--baseline`) on entry `id`
/// (`e42`, `r7`) at revision `rev`, named `name`.
pub fn thresholds_report(
    id: String,
    rev: String,
    name: String,
    thresholds: Vec<WorkloadThresholds>,
) -> CheckReport {
    CheckReport {
        schema_version: SCHEMA_VERSION,
        experiment: id,
        rev,
        name,
        baseline: String::new(),
        baseline_experiments: Vec::new(),
        host_fingerprint: None,
        rows: Vec::new(),
        worse: 0,
        better: 0,
        thresholds,
    }
}

/// The notice "1 of 2 thresholds failed: http/b 'p(50)<1ms' (worst
/// 5.3ms)", or `None` when every threshold held.
pub fn failed_line(r: &CheckReport) -> Option<Notice> {
    crate::thresholds::failed_of(
        r.thresholds
            .iter()
            .map(|w| (w.workload.as_str(), &w.variants[..])),
    )
}

/// How `kurabe check` ends: a failed threshold (k6's status, each one
/// named), else failed when a row is worse than the baseline.
pub fn ending(r: &CheckReport) -> Ending {
    match failed_line(r) {
        Some(notice) => Ending::ThresholdsFailed(notice),
        None if r.worse > 0 => Ending::Failed(None),
        None => Ending::Done,
    }
}

/// `--threshold`s, each parsed by the one grammar; the error names the flag.
pub fn parse_flags(texts: &[String]) -> Result<Vec<Threshold>, String> {
    texts
        .iter()
        .map(|t| t.parse::<Threshold>().map_err(|e| format!("--{e}")))
        .collect()
}

/// `thresholds` judged on `records` of entry `id`; none without
/// thresholds, an error saying what to give when there is no record.
pub fn judged(
    thresholds: &[Threshold],
    records: &[StoredHttp<'_>],
    id: &str,
) -> Result<Vec<WorkloadThresholds>, String> {
    if thresholds.is_empty() {
        return Ok(Vec::new());
    }
    if records.is_empty() {
        return Err(format!("--threshold judges stored http load records, and {id} has no successful http run: give an experiment with an http workload, or a saved kurabe http result (r…)"));
    }
    judge(thresholds, records)
}

/// A saved result's check: its one http record judged by `thresholds`.
pub fn saved_report(
    saved: &kurabe_model::record::SavedResult,
    thresholds: &[Threshold],
) -> Result<CheckReport, String> {
    let id = saved.id.to_string();
    let kind = saved.kind();
    if kind != kurabe_model::record::ResultKind::Http {
        return Err(format!("{id} is a saved {} result; --threshold judges http load records (a saved kurabe http result, or an experiment)", kind.as_str()));
    }
    let Some(record) = saved.record.http() else {
        return Err(format!("{id}: the stored http record is not one this kurabe reads (written by another version?)"));
    };
    let one = [StoredHttp {
        workload: "http",
        variant: &saved.label,
        record,
    }];
    let judged = judged(thresholds, &one, &id)?;
    Ok(thresholds_report(
        id,
        "-".into(),
        saved.label.clone(),
        judged,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(p99_us: u64) -> HttpReport {
        let mut r = HttpReport {
            complete_requests: 10,
            requests_per_second: 5.0,
            ..HttpReport::default()
        };
        r.latency_us.p99 = p99_us;
        r
    }

    #[test]
    fn each_variant_passes_when_all_its_runs_do_and_shows_the_worst() {
        let (fast, slow) = (record(1_000), record(9_000));
        let at = |variant, record| StoredHttp {
            workload: "http",
            variant,
            record,
        };
        let records = [at("a", &fast), at("b", &fast), at("a", &slow)];
        let t: Vec<Threshold> = vec!["p(99)<5ms".parse().unwrap(), "rate>1".parse().unwrap()];
        let w = judge(&t, &records).unwrap();
        assert_eq!(w.len(), 1);
        let (a, b) = (&w[0].variants[0], &w[0].variants[1]);
        assert_eq!((a.variant.as_str(), a.runs), ("a", 2));
        assert!(!a.thresholds[0].pass && a.thresholds[0].measured == 0.009);
        assert_eq!(a.thresholds[0].runs_failed, 1);
        assert!(b.thresholds.iter().all(|t| t.pass));
        let report = thresholds_report("e1".into(), "-".into(), "p".into(), w);
        let line = crate::notice::line(&failed_line(&report).unwrap());
        assert!(
            line.starts_with("kurabe: 1 of 4 thresholds failed: http/a 'p(99)<5ms'"),
            "{line}"
        );
        let e = judge(&["p(97)<1s".parse().unwrap()], &records).unwrap_err();
        assert!(
            e.starts_with("--threshold 'p(97)<1s': p(97) is not in"),
            "{e}"
        );
    }
}
