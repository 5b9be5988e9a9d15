//! Keeping a finished one-URL capacity search (`kurabe http URL
//! --find-rate --save`) in the results store as the experiment of its
//! one-variant plan, so `history` and `check` track it like a plan's
//! capacity runs.
//!
//! Owns turning a [`CapacityReport`] into stored runs. Must not run loads
//! (that is [`crate::find_rate`]) or print.

use kurabe_model::capacity::{self, CapacityReport, CapacitySearch, Settings};
use kurabe_model::load::LoadSpec;
use kurabe_model::notice::Notice;
use kurabe_model::record::Revision;

use crate::http_compare::{self, AbError, AbSpec};
use crate::prepare::PrepareError;

/// Why a finished search could not be kept.
#[derive(Debug, thiserror::Error)]
pub enum KeepError {
    /// The one-URL plan does not build (the URL's own message).
    #[error(transparent)]
    Plan(#[from] AbError),
    /// The options of the plan (the current directory, the plan's text).
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    /// The store at `--store` cannot be opened (or made).
    #[error("--save")]
    Open(#[source] kurabe_store::StoreError),
    /// The store did not take it.
    #[error("--save: cannot keep the search in the results store")]
    Store(#[from] kurabe_store::StoreError),
}

/// Keep a finished search of `load` (`found`: its report and settings)
/// in the store at `store` (`--store`; made if needed) as
/// [`save_search`] does, under the one-URL A/B plan of its URL (one
/// round per search), measured at `rev`; the notice saying where.
pub fn keep_search(
    store: Option<&std::path::Path>,
    load: &LoadSpec,
    rev: Option<Revision>,
    found: (&CapacityReport, &Settings),
) -> Result<Notice, KeepError> {
    let mut store = kurabe_store::access::open_or_create(store).map_err(KeepError::Open)?;
    let urls = [found.0.url.clone()];
    let plan = http_compare::plan(&AbSpec {
        urls: &urls,
        versions: &[],
        load,
        rounds: (found.0.searches.len() as u32).max(1),
    })?;
    let opts = crate::prepare::options_here(&plan, rev)?;
    let id = save_search(&mut store, &plan, &opts, found)?;
    Ok(Notice::SavedExperiment { id })
}

/// Keep a finished one-URL search (`kurabe http URL --find-rate --save`)
/// in `store` as the experiment of `plan` (the one-variant A/B of the
/// URL, [`crate::http_compare::plan`]): one run per finished search, its
/// estimate the run's `capacity_per_second` and its steps the run's record,
/// as a plan's capacity runs are kept, so `history` and `check` track it.
/// A search without an estimate is a failed run saying why.
pub fn save_search(
    store: &mut kurabe_store::Store,
    plan: &kurabe_model::plan::Plan,
    opts: &crate::RunOptions,
    (report, s): (&CapacityReport, &Settings),
) -> Result<kurabe_store::ExperimentId, kurabe_store::StoreError> {
    let new = kurabe_model::record::NewExperiment {
        seed: None,
        ..crate::runner::new_experiment(plan, opts, 0)
    };
    let id = store.begin_experiment(&new)?;
    for search in report.searches.iter().filter(|k| k.end.is_some()) {
        store.record_run(id, &search_run(plan, report, search, s))?;
    }
    let status = match report.verdict {
        capacity::CapacityVerdict::Interrupted => kurabe_store::ExperimentStatus::Interrupted,
        _ => kurabe_store::ExperimentStatus::Complete,
    };
    store.finish_experiment(id, status)?;
    Ok(id)
}

/// One search of `report` as a run: its estimate the run's
/// `capacity_per_second` (a search without one is a failed run saying
/// why), the search itself the run's detail.
fn search_run(
    plan: &kurabe_model::plan::Plan,
    report: &CapacityReport,
    search: &CapacitySearch,
    s: &Settings,
) -> kurabe_model::record::RunRecord {
    use kurabe_model::capacity::FindRateNames;
    use kurabe_model::record::{MetricValue, RunRecord, RunStatus};
    let estimate = crate::find_rate::estimate(search, s, &FindRateNames::FLAGS);
    let unit = kurabe_model::stats::metric::lookup(crate::http_compare::CAPACITY_METRIC)
        .map_or(String::new(), |d| d.unit.symbol().to_owned());
    let detail = kurabe_model::capacity::CapacitySearchDetail {
        url: report.url.clone(),
        slos: report.slos.clone(),
        step_s: report.step_s,
        step_warmup_s: report.step_warmup_s,
        search: search.clone(),
    };
    RunRecord {
        variant: report.url.clone(),
        workload: plan.workloads[0].name.clone(),
        round: search.index,
        status: match estimate {
            Ok(_) => RunStatus::Ok,
            Err(_) => RunStatus::Failed,
        },
        error_tail: estimate.as_ref().err().cloned(),
        started_at: report.started_at.clone(),
        finished_at: kurabe_model::time::rfc3339(std::time::SystemTime::now()),
        metrics: (estimate.iter())
            .map(|&value| MetricValue {
                name: crate::http_compare::CAPACITY_METRIC.to_owned(),
                value,
                unit: unit.clone(),
            })
            .collect(),
        record: Some(kurabe_model::run_detail::RunDetail::Capacity(Box::new(
            detail,
        ))),
        http: None,
    }
}
