//! `kurabe noise`: this machine's noise on one workload, measured by
//! running the workload against itself (A/A) as an experiment would.
//!
//! Owns the record [`NoiseReport`] (what `kurabe noise --format json`
//! prints and `kurabe noise` saves), the kinds of workload it measures
//! ([`NoiseSubject`]), and the figures per metric ([`MetricNoise`]) with
//! the suggestion for a plan ([`Suggestion`]). The figures are computed by
//! [`crate::stats::noise`] and the verdict machinery; this module only
//! holds them. No I/O.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::stats::Comparison;

/// What was measured against itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum NoiseSubject {
    /// `kurabe noise 'CMD'`: a command, as `kurabe cmd` runs it.
    Command {
        /// The command as given.
        command: String,
    },
    /// `kurabe noise URL`: a URL under load, as `kurabe http A B` runs it.
    Url {
        /// The URL.
        url: String,
    },
    /// `kurabe noise PLAN.toml`: one variant of a plan, as `kurabe run` runs it.
    Plan {
        /// The plan's name.
        plan: String,
        /// The variant measured against itself.
        variant: String,
    },
}

impl NoiseSubject {
    /// The label a saved noise record goes under (`kurabe history LABEL`):
    /// `noise: sleep 0.1`, `noise: http://…`, `noise: PLAN / VARIANT`.
    pub fn label(&self) -> String {
        match self {
            NoiseSubject::Command { command } => format!("noise: {command}"),
            NoiseSubject::Url { url } => format!("noise: {url}"),
            NoiseSubject::Plan { plan, variant } => format!("noise: {plan} / {variant}"),
        }
    }
}

/// `kurabe noise`: the run-to-run spread, the drift and the smallest
/// difference an experiment can tell apart, per metric, on this machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[schemars(
    title = "kurabe noise report",
    description = "A workload run against itself (A/A), interleaved as an experiment runs (kurabe_model::noise::NoiseReport): per metric the run-to-run spread (CV, robust spread), the drift over the run, the A/A verdict, the smallest change a default experiment and one of the suggested size can detect, and a suggested noise band and round count."
)]
pub struct NoiseReport {
    /// [`crate::SCHEMA_VERSION`] at writing.
    #[schemars(range(min = 1))]
    pub schema_version: u32,
    /// kurabe version that produced the record.
    pub tool_version: String,
    /// Wall-clock start, RFC 3339 UTC.
    #[schemars(transform = crate::schema::rfc3339)]
    pub started_at: String,
    /// What ran against itself.
    pub subject: NoiseSubject,
    /// The time asked for (`--duration`), seconds.
    pub budget_s: f64,
    /// The time the interleaved runs took, seconds.
    pub elapsed_s: f64,
    /// Interleaved rounds run (each runs the workload twice, as A and as A′).
    pub rounds: u32,
    /// Executions of a command in one run (a `kurabe cmd` block), 1 for
    /// URLs and plans: the figures are per run, as the verdicts read them.
    pub executions_per_run: u32,
    /// Runs per side of a default experiment of this workload (`kurabe
    /// cmd`'s ≈3 s per command, `kurabe http A B`'s 5 rounds, the plan's
    /// `repeat`), in runs of `executions_per_run`.
    pub default_runs: u32,
    /// One entry per workload × metric.
    pub metrics: Vec<MetricNoise>,
    /// What to run an experiment on this workload with.
    pub suggestion: Suggestion,
}

/// One metric's noise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct MetricNoise {
    /// `metric`, or `workload.metric` in a plan: one path segment per entry
    /// when a saved record's fields are followed in `kurabe history`.
    pub id: String,
    /// The workload (a plan's; `command` or `load` otherwise).
    pub workload: String,
    /// The metric's catalogue name.
    pub metric: String,
    /// Successful runs, both sides.
    pub runs: usize,
    /// Mean of the runs' values.
    pub mean: f64,
    /// Coefficient of variation of the runs' values (stdev / mean), percent.
    #[schemars(required, transform = crate::schema::nullable)]
    pub cv_pct: Option<f64>,
    /// Robust spread: 1.4826 × the median absolute deviation / the median,
    /// percent (the CV a normal spread of the middle half would have;
    /// untouched by a few outliers).
    #[schemars(required, transform = crate::schema::nullable)]
    pub robust_spread_pct: Option<f64>,
    /// Drift: the change from the first run to the last along a line
    /// fitted to the logs in run order, percent (absent with fewer than 3
    /// runs or a value ≤ 0).
    #[schemars(required, transform = crate::schema::nullable)]
    pub drift_pct: Option<f64>,
    /// 95 % interval of the drift, percent.
    #[schemars(required, transform = crate::schema::nullable)]
    pub drift_low_pct: Option<f64>,
    /// 95 % interval of the drift, percent.
    #[schemars(required, transform = crate::schema::nullable)]
    pub drift_high_pct: Option<f64>,
    /// The workload against itself, judged as every verdict is: it should
    /// read within noise; better or worse here is a false verdict.
    pub aa: Comparison,
    /// The noise band judged against (0.02 = ±2 %).
    pub noise_band: f64,
    /// The smallest change a default experiment (`default_runs` per side)
    /// detects with this spread, percent (95 %, 80 % power).
    #[schemars(required, transform = crate::schema::nullable)]
    pub detectable_default_pct: Option<f64>,
    /// Runs per side that bring the detectable change down to the band;
    /// absent when more than the suggestion's limit would be needed.
    #[schemars(required, transform = crate::schema::nullable)]
    pub runs_for_band: Option<u32>,
    /// The smallest change an experiment of the suggested rounds detects, percent.
    #[schemars(required, transform = crate::schema::nullable)]
    pub detectable_suggested_pct: Option<f64>,
    /// The noise band to set for this metric at the suggested rounds:
    /// the change that experiment detects, rounded up (0.1 % steps below
    /// 1 %, 0.5 % below 5 %, 1 % above), as a fraction (0.02 = 2 %).
    #[schemars(required, transform = crate::schema::nullable)]
    pub suggested_noise_band: Option<f64>,
}

/// Rounds and bands for an experiment on this workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct Suggestion {
    /// Runs per side (rounds; a plan's `repeat`): the fewest that bring
    /// every metric's detectable change to its band, at least the
    /// default's, at most what fits `max_time_s`.
    pub rounds: u32,
    /// The experiment those rounds make, at this run's pace, seconds.
    pub estimated_s: f64,
    /// The time the suggestion may take at most, seconds.
    pub max_time_s: f64,
    /// Per metric name, the band to set at those rounds (a fraction; the
    /// largest of the metric's workloads): a plan's `noise_bands`.
    pub noise_bands: BTreeMap<String, f64>,
}
