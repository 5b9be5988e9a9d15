//! `kurabe check`'s report on one stored entry: an experiment against the
//! pooled runs of its baseline ([`super::check_report`]), its
//! `--threshold`s judged on each run ([`super::thresholds`]), or a saved
//! `kurabe http` result's thresholds alone.
//!
//! Owns which of these an entry and the flags ask for, and refusing what
//! cannot be checked. Must not read the store: a plan's history comes
//! from the caller's `history`.

use kurabe_model::history::CheckReport;
use kurabe_model::record::{Entry, Experiment};
use kurabe_model::threshold::Threshold;

use super::check::{check_report, CheckInput};
use super::thresholds::{experiment_records, judged, saved_report, thresholds_report};
use crate::baseline::{baseline, BaselineError};

/// What `kurabe check` judges an entry by.
#[derive(Debug, Clone, Copy)]
pub struct Gate<'a> {
    /// `--baseline` as given, if it was.
    pub baseline: Option<&'a str>,
    /// `--last`: how many of the baseline's experiments are pooled.
    pub last: usize,
    /// The `--threshold`s, parsed.
    pub thresholds: &'a [Threshold],
}

/// Why an entry cannot be checked as asked.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// No baseline experiments.
    #[error(transparent)]
    Baseline(#[from] BaselineError),
    /// The entry cannot answer what was asked, and what to give instead.
    #[error("{0}")]
    Refused(String),
}

/// `kurabe check`'s report on `entry` (`id` as given): `history` reads
/// the experiments of a plan (or label) by its name.
pub fn check_entry<E: From<GateError>>(
    entry: &Entry,
    id: &str,
    gate: &Gate<'_>,
    history: impl FnOnce(&str) -> Result<Vec<Experiment>, E>,
) -> Result<CheckReport, E> {
    let refused = |why: String| E::from(GateError::Refused(why));
    let judged_on = |exp: &Experiment, id: &str| {
        judged(gate.thresholds, &experiment_records(exp), id).map_err(refused)
    };
    match (entry, gate.baseline) {
        (Entry::Experiment(exp), Some(b)) => {
            let base = baseline(exp, history(&exp.name)?, b, gate.last).map_err(GateError::from)?;
            let mut r = check_report(CheckInput {
                experiment: exp,
                baseline: b,
                history: &base,
            });
            r.thresholds = judged_on(exp, &r.experiment)?;
            Ok(r)
        }
        (Entry::Experiment(exp), None) => {
            let rev = exp
                .origin
                .rev
                .as_ref()
                .map_or("-".to_owned(), |r| r.short());
            let judged = judged_on(exp, id)?;
            Ok(thresholds_report(
                id.to_owned(),
                rev,
                exp.name.clone(),
                judged,
            ))
        }
        (Entry::Result(_), Some(_)) => Err(refused(format!(
            "{id} is a saved result; kurabe check --baseline takes an experiment (e…)"
        ))),
        (Entry::Result(saved), None) => saved_report(saved, gate.thresholds).map_err(refused),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::sample_experiment;
    use kurabe_model::record::{ResultId, ResultKind, SavedRecord, SavedResult};

    fn gate<'a>(baseline: Option<&'a str>, thresholds: &'a [Threshold]) -> Gate<'a> {
        Gate {
            baseline,
            last: 5,
            thresholds,
        }
    }

    fn check(entry: &Entry, gate: &Gate<'_>) -> Result<CheckReport, String> {
        let history = |_: &str| Err(GateError::Refused("history read".into()));
        check_entry(entry, "x1", gate, history).map_err(|e: GateError| e.to_string())
    }

    #[test]
    fn an_entry_is_checked_as_the_flags_ask_or_refused() {
        let saved = Entry::Result(SavedResult {
            id: ResultId(1),
            label: "m".into(),
            host: None,
            created_at: "2026-11-29T20:00:00.000Z".into(),
            origin: Default::default(),
            record: SavedRecord::read(ResultKind::Mem, serde_json::json!({})),
        });
        let e = check(&saved, &gate(Some("main"), &[])).unwrap_err();
        assert_eq!(
            e,
            "x1 is a saved result; kurabe check --baseline takes an experiment (e…)"
        );
        let p95: Vec<Threshold> = vec!["p(95)<1s".parse().unwrap()];
        let e = check(&saved, &gate(None, &p95)).unwrap_err();
        assert!(e.contains("is a saved mem result"), "{e}");
        let exp = Entry::Experiment(sample_experiment());
        let r = check(&exp, &gate(None, &[])).unwrap();
        assert_eq!((r.experiment.as_str(), r.thresholds.len()), ("x1", 0));
        let e = check(&exp, &gate(Some("main"), &[])).unwrap_err();
        assert_eq!(e, "history read", "the baseline's history is read");
    }
}
