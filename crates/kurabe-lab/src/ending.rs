//! How an experiment ends, as its exit status tells it
//! ([`kurabe_model::ending::Ending`]): decided here, where it ran, so
//! `kurabe run` ends as every other command does.
//!
//! Owns the order of the reasons. Must not word them nor pick numbers.

use kurabe_model::ending::Ending;
use kurabe_model::notice::Notice;
use kurabe_model::record::ExperimentStatus;

use crate::Outcome;

impl Outcome {
    /// How the experiment ended: interrupted, failed (stopped on a failed
    /// run, or a variant × workload without a successful one), a failed
    /// threshold, a failed `[[check]]`, or done. `thresholds_failed`, the
    /// notice naming the failed thresholds, is told whichever it is.
    pub fn ending(&self, thresholds_failed: Option<Notice>) -> Ending {
        match (self.status, thresholds_failed) {
            (ExperimentStatus::Interrupted, notice) => Ending::Signalled(notice),
            (ExperimentStatus::Failed, notice) => Ending::Failed(notice),
            (_, Some(notice)) => Ending::ThresholdsFailed(notice),
            _ if self.checks.iter().any(|c| !c.passed) => Ending::Failed(None),
            _ => Ending::Done,
        }
    }
}
