//! A plan's history (`kurabe history`) and a CI gate's answer (`kurabe
//! check`): one metric of one variant and workload over experiments, with
//! the change points found in it, and an experiment judged against its
//! baseline's recent history.
//!
//! Plain data with a versioned, snake_case JSON form
//! (`schema/history.schema.json`, `schema/check.schema.json`). Finding the
//! changes is [`crate::stats::changepoint`]'s job; building these from
//! stored experiments and rendering them is `kurabe-report`'s. This module
//! must not compute or print anything.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::stats::{Direction, Unit, Verdict};

/// How the points of a history are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// By commit time (every point knows its commit), then start time.
    Commit,
    /// By start time (some point has no commit).
    Time,
}

/// Which machines a history or check covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct HostSeen {
    /// The host fingerprint ([`crate::record::host_fingerprint`]).
    pub fingerprint: String,
    /// Host names seen with it.
    pub hostnames: Vec<String>,
    /// CPU model.
    pub cpu_model: String,
    /// Experiments measured on it.
    pub experiments: usize,
}

/// Every series of one plan (or saved-result label) over its experiments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(
    title = "kurabe history",
    description = "What `kurabe history --format json` writes: per workload, variant and metric of a plan (or a saved-result label), the series over experiments on one host fingerprint, and the change points found in the per-run samples (E-divisive means with a permutation test over whole experiments), each judged against the noise band. Version 1."
)]
pub struct HistoryReport {
    /// [`crate::SCHEMA_VERSION`] at writing.
    #[schemars(range(min = 1))]
    pub schema_version: u32,
    /// Plan name or saved-result label.
    pub name: String,
    /// The fingerprint every point shares; absent with `--all-hosts`.
    #[schemars(required, transform = crate::schema::nullable)]
    pub host_fingerprint: Option<String>,
    /// Every machine the plan was measured on, the chosen one first.
    pub hosts: Vec<HostSeen>,
    /// How the points are ordered.
    pub order: Order,
    /// One per workload × variant × metric, in plan order.
    pub series: Vec<HistorySeries>,
}

/// One metric of one variant and workload over experiments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct HistorySeries {
    /// Catalogue name (`cpu_ms_per_request`).
    pub metric: String,
    /// Variant name.
    pub variant: String,
    /// Workload name.
    pub workload: String,
    /// Unit of every value.
    pub unit: Unit,
    /// Which way is better; absent for a metric kurabe does not know.
    #[schemars(required, transform = crate::schema::nullable)]
    pub direction: Option<Direction>,
    /// Noise band changes are judged against (the newest plan's).
    pub noise_band: f64,
    /// One per experiment that measured it, in [`HistoryReport::order`].
    pub points: Vec<HistoryPoint>,
    /// Change points, in series order.
    pub changes: Vec<HistoryChange>,
}

/// One experiment's samples in a series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct HistoryPoint {
    /// Experiment id (`e12`).
    pub experiment: String,
    /// The code measured, as it reads (`0123456789`, a CI label, `-`).
    pub rev: String,
    /// Full commit id, when known.
    #[schemars(required, transform = crate::schema::nullable)]
    pub commit: Option<String>,
    /// Start of the experiment, RFC 3339 UTC.
    #[schemars(transform = crate::schema::rfc3339)]
    pub started_at: String,
    /// Host fingerprint of the experiment.
    #[schemars(required, transform = crate::schema::nullable)]
    pub host_fingerprint: Option<String>,
    /// Values of the successful runs.
    pub samples: Vec<f64>,
    /// Their geometric mean (arithmetic when a value is ≤ 0).
    pub value: f64,
    /// Imported from a harness that kept only a summary: `samples` holds
    /// its mean, not the samples themselves.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_summary: bool,
}

/// A change point: the level after it against the level before it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct HistoryChange {
    /// Index in `points` of the first experiment at the new level.
    pub index: usize,
    /// That experiment (`e7`): the change happened with it.
    pub experiment: String,
    /// Its revision, as it reads: the suspect.
    pub rev: String,
    /// The last experiment at the old level (the good side of a bisect).
    pub previous_experiment: String,
    /// Its revision.
    pub previous_rev: String,
    /// Geometric mean after / before.
    #[schemars(required, transform = crate::schema::nullable)]
    pub ratio: Option<f64>,
    /// 95 % interval of the ratio.
    #[schemars(required, transform = crate::schema::nullable)]
    pub interval: Option<[f64; 2]>,
    /// Against the noise band.
    pub verdict: Verdict,
    /// The smallest change, in percent, the data could have detected
    /// (minimum detectable effect at 95 % and 80 % power); absent without
    /// an interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detectable_change_pct: Option<f64>,
    /// p-value of the permutation test that accepted the change.
    pub p_value: f64,
    /// The answer in words (`1.20× [1.18, 1.22] more CPU`).
    pub phrase: String,
}

/// `kurabe check`: an experiment against its baseline's recent history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(
    title = "kurabe check",
    description = "What `kurabe check --format json` writes: an experiment against the pooled runs of its baseline's recent history on the same host fingerprint, and the `--threshold`s judged on its stored http records; kurabe exits 99 when a threshold failed, else 1 when worse > 0. Version 1."
)]
pub struct CheckReport {
    /// [`crate::SCHEMA_VERSION`] at writing.
    #[schemars(range(min = 1))]
    pub schema_version: u32,
    /// The experiment checked (`e42`).
    pub experiment: String,
    /// Its revision, as it reads.
    pub rev: String,
    /// Plan name.
    pub name: String,
    /// `--baseline` as given; empty when only `--threshold`s were judged.
    pub baseline: String,
    /// The experiments pooled as the baseline, oldest first.
    pub baseline_experiments: Vec<String>,
    /// Host fingerprint shared by the experiment and its baseline.
    #[schemars(required, transform = crate::schema::nullable)]
    pub host_fingerprint: Option<String>,
    /// One row per workload × variant × metric both sides measured.
    pub rows: Vec<CheckRow>,
    /// Rows judged worse.
    pub worse: usize,
    /// Rows judged better.
    pub better: usize,
    /// `--threshold`s judged on the stored http records (each run a whole
    /// load test, a variant passing when all its runs do), per workload;
    /// absent without `--threshold`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<WorkloadThresholds>,
}

/// One workload's `--threshold`s per variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct WorkloadThresholds {
    /// Workload name (`http` for a saved `kurabe http` result).
    pub workload: String,
    /// Each variant's thresholds over its runs.
    pub variants: Vec<crate::experiment::VariantThresholds>,
}

/// One metric of one variant and workload, checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct CheckRow {
    /// Workload name.
    pub workload: String,
    /// Variant name.
    pub variant: String,
    /// Metric name.
    pub metric: String,
    /// Unit of the values.
    pub unit: Unit,
    /// Geometric mean of the baseline's pooled runs.
    pub baseline_value: f64,
    /// Geometric mean of the experiment's runs.
    pub value: f64,
    /// Runs pooled on the baseline side.
    pub baseline_runs: usize,
    /// Runs of the experiment.
    pub runs: usize,
    /// Experiment / baseline.
    #[schemars(required, transform = crate::schema::nullable)]
    pub ratio: Option<f64>,
    /// 95 % interval of the ratio.
    #[schemars(required, transform = crate::schema::nullable)]
    pub interval: Option<[f64; 2]>,
    /// Noise band judged against.
    pub noise_band: f64,
    /// Which way is better; absent for a metric kurabe does not know
    /// (never counted better or worse).
    #[schemars(required, transform = crate::schema::nullable)]
    pub direction: Option<Direction>,
    /// Against the noise band.
    pub verdict: Verdict,
    /// The smallest change, in percent, the data could have detected
    /// (minimum detectable effect at 95 % and 80 % power); absent without
    /// an interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detectable_change_pct: Option<f64>,
    /// The answer in words (`1.20× [1.18, 1.22] more CPU`).
    pub phrase: String,
    /// A side was imported from a harness that kept only the summary of
    /// its samples (n, mean, standard deviation), so the interval comes
    /// from those, not from samples (the phrase says "from summary only").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_summary: bool,
}
