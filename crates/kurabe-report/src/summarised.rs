//! Runs imported from a harness that kept only a summary of its samples
//! (pytest-benchmark's saved files): how their values enter a comparison.
//!
//! Owns reading a run's values of one metric as log moments — a sampled
//! run's value exactly, an imported summary as its n, mean and standard
//! deviation — and comparing two sides of such parts
//! ([`compare_parts`]). The report and the gate call it when a side holds
//! a summary, and say "from summary only". Must not render or read the store.

use kurabe_model::record::{RunRecord, RunStatus};
use kurabe_model::run_detail::RunDetail;
use kurabe_model::stats::from_summary::{compare_moments, LogMoments};
use kurabe_model::stats::{Comparison, Direction};

/// What a phrase judged from summaries ends with.
pub(crate) const FROM_SUMMARY: &str = " (from summary only)";

/// One side's values of a metric, one part per value, and whether a part
/// is an imported summary.
#[derive(Debug, Default)]
pub(crate) struct Parts {
    /// The parts.
    pub parts: Vec<LogMoments>,
    /// A part is a harness's summary, not a sample.
    pub from_summary: bool,
}

impl Parts {
    /// Add `metric`'s values in the successful run `r`.
    pub fn add(&mut self, r: &RunRecord, metric: &str) {
        if r.status != RunStatus::Ok {
            return;
        }
        let summary = r
            .record
            .as_ref()
            .and_then(RunDetail::imported)
            .and_then(|d| d.summary);
        for m in r
            .metrics
            .iter()
            .filter(|m| m.name == metric && m.value.is_finite())
        {
            let part = match summary {
                Some(s) => {
                    self.from_summary = true;
                    LogMoments::of_summary(s.samples, s.mean, s.stddev)
                }
                None => LogMoments::of_samples(&[m.value]),
            };
            self.parts.extend(part);
        }
    }

    /// The parts of `metric` in these runs.
    pub fn of<'a>(runs: impl IntoIterator<Item = &'a RunRecord>, metric: &str) -> Parts {
        let mut p = Parts::default();
        runs.into_iter().for_each(|r| p.add(r, metric));
        p
    }
}

/// The two sides compared by their moments when either holds a summary,
/// with the values each side stands for; `None` when both are plain
/// samples (compare those as they are).
pub(crate) fn compare_parts(
    baseline: &Parts,
    candidate: &Parts,
    direction: Direction,
    noise_band: f64,
) -> Option<(Comparison, usize, usize)> {
    if !(baseline.from_summary || candidate.from_summary) {
        return None;
    }
    let b = LogMoments::pool(&baseline.parts)?;
    let c = LogMoments::pool(&candidate.parts)?;
    let cmp = compare_moments(b, c, direction, noise_band);
    Some((cmp, b.n as usize, c.n as usize))
}
