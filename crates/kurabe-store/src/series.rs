//! The stored series a history is made of: the experiments of one plan,
//! else the saved results of one label, oldest first; the plan names in
//! the store, and every plan's series.
//!
//! Owns reading them. Must not compute statistics or render: turning saved
//! results into one-run experiments is the report's, passed in.

use crate::{Entry, Experiment, SavedResult, Store, StoreError};

/// Why there is no series.
#[derive(Debug, thiserror::Error)]
pub enum SeriesError {
    /// Neither a plan nor a label of that name.
    #[error("no history for `{0}`: no plan of that name and no saved result with that label in the store; `kurabe results list` shows the names")]
    Unknown(String),
    /// An id listed as an experiment that reads as something else.
    #[error("{0} is not an experiment")]
    NotExperiment(crate::ExperimentId),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The experiments of plan `name`, else the saved results labelled `name`
/// made into experiments by `as_experiments`; neither is an error.
pub fn plan_or_label(
    store: &Store,
    name: &str,
    as_experiments: fn(&[SavedResult]) -> Vec<Experiment>,
) -> Result<Vec<Experiment>, SeriesError> {
    let ids = store.experiments_named(name)?;
    if !ids.is_empty() {
        return ids
            .into_iter()
            .map(|id| match store.get(id.into())? {
                Entry::Experiment(e) => Ok(e),
                Entry::Result(_) => Err(SeriesError::NotExperiment(id)),
            })
            .collect();
    }
    let results = labelled(store, name)?;
    if results.is_empty() {
        return Err(SeriesError::Unknown(name.to_owned()));
    }
    Ok(as_experiments(&results))
}

/// The saved results labelled `name` that can be read as results.
fn labelled(store: &Store, name: &str) -> Result<Vec<SavedResult>, StoreError> {
    Ok(store
        .results_labelled(name)?
        .into_iter()
        .filter_map(|id| match store.get(id.into()) {
            Ok(Entry::Result(r)) => Some(r),
            _ => None,
        })
        .collect())
}

/// Every plan in the store with its series ([`plan_or_label`]), in the
/// order of [`plan_names`]: what a dashboard of the whole store shows.
pub fn all_plans(
    store: &Store,
    as_experiments: fn(&[SavedResult]) -> Vec<Experiment>,
) -> Result<Vec<(String, Vec<Experiment>)>, SeriesError> {
    plan_names(store)?
        .into_iter()
        .map(|n| Ok((n.clone(), plan_or_label(store, &n, as_experiments)?)))
        .collect()
}

/// The names of the plans with experiments in the store, in the order
/// their first experiment was made.
pub fn plan_names(store: &Store) -> Result<Vec<String>, StoreError> {
    let mut names: Vec<String> = Vec::new();
    for e in store
        .list()?
        .into_iter()
        .rev()
        .filter(|e| e.kind == "experiment")
    {
        if !names.contains(&e.name) {
            names.push(e.name);
        }
    }
    Ok(names)
}
