//! Which earlier experiments a `kurabe check` compares against: the last
//! N of the same plan on the same host fingerprint that a baseline names
//! (a branch, commit or `--rev` label, or an experiment id and the ones
//! before it).
//!
//! Owns that choice. Must not read the store: the plan's history comes in.

use kurabe_model::record::{EntryId, Experiment};

/// Why no baseline could be chosen.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    /// An experiment id that is not in the plan's history.
    #[error("unknown baseline `{spec}`: no experiment {id} of plan `{plan}` in the store")]
    NoSuchExperiment {
        /// The baseline as given.
        spec: String,
        /// The id it names.
        id: kurabe_model::record::ExperimentId,
        /// The plan.
        plan: String,
    },
    /// Nothing matches.
    #[error("unknown baseline `{spec}`: no other experiment of plan `{plan}` on this host fingerprint ({fingerprint}) has that branch, commit or --rev label")]
    NoMatch {
        /// The baseline as given.
        spec: String,
        /// The plan.
        plan: String,
        /// The host fingerprint (`-` when unknown).
        fingerprint: String,
    },
}

/// The last `n` experiments of `history` on `exp`'s host fingerprint that
/// `spec` names, oldest first, `exp` itself left out.
pub fn baseline(
    exp: &Experiment,
    history: Vec<Experiment>,
    spec: &str,
    n: usize,
) -> Result<Vec<Experiment>, BaselineError> {
    let fp = exp.host_fingerprint();
    let upto = experiment_time(exp, &history, spec)?;
    let named = |e: &Experiment| match &upto {
        Some(t) => e.started_at <= *t,
        None => e.origin.rev.as_ref().is_some_and(|r| r.matches(spec)),
    };
    let mut picked: Vec<Experiment> = history
        .into_iter()
        .filter(|e| e.id != exp.id && e.host_fingerprint() == fp && named(e))
        .collect();
    if picked.is_empty() {
        return Err(BaselineError::NoMatch {
            spec: spec.to_owned(),
            plan: exp.name.clone(),
            fingerprint: fp.as_deref().unwrap_or("-").to_owned(),
        });
    }
    picked.sort_by(|a, b| (&a.started_at, a.id).cmp(&(&b.started_at, b.id)));
    let skip = picked.len().saturating_sub(n);
    Ok(picked.split_off(skip))
}

/// When `spec` is an experiment id (`e40`): that experiment's start time.
fn experiment_time(
    exp: &Experiment,
    history: &[Experiment],
    spec: &str,
) -> Result<Option<String>, BaselineError> {
    let as_id = spec
        .strip_prefix(['e', 'E'])
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|_| spec.parse::<EntryId>().ok());
    let Some(EntryId::Experiment(id)) = as_id else {
        return Ok(None);
    };
    match history.iter().find(|e| e.id == id) {
        Some(e) => Ok(Some(e.started_at.clone())),
        None => Err(BaselineError::NoSuchExperiment {
            spec: spec.to_owned(),
            id,
            plan: exp.name.clone(),
        }),
    }
}
