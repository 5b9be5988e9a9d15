//! The report of one experiment, and the side-by-side comparison of two
//! stored entries: what `kurabe report` and `kurabe results` render.
//!
//! Plain data with a versioned, snake_case JSON form (units in field names,
//! `schema/experiment-report.schema.json`). Building it from stored runs is
//! `kurabe-report`'s job; rendering it too. This module must not compute or
//! print anything.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::stats::{Comparison, Direction, Summary, Unit};

/// The whole answer of one experiment: per workload, per metric, per variant
/// the summary and, against the baseline, the ratio, interval and verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(
    title = "kurabe experiment report",
    description = "What `kurabe report ID --format json` writes: per workload, per metric, per variant the summary of the successful runs and, against the baseline, the ratio of geometric means with its 95 % Welch interval and verdict. Version 1."
)]
pub struct ExperimentReport {
    /// [`crate::SCHEMA_VERSION`] at writing.
    #[schemars(range(min = 1))]
    pub schema_version: u32,
    /// Store id (`e12`).
    pub id: String,
    /// Plan name.
    pub name: String,
    /// `running`, `complete`, `interrupted` or `failed`.
    #[schemars(extend("enum" = ["running", "complete", "interrupted", "failed", "crashed"]))]
    pub status: String,
    /// Start, RFC 3339 UTC.
    pub started_at: String,
    /// End, RFC 3339 UTC; absent while running or after a crash.
    #[schemars(required, transform = crate::schema::nullable)]
    pub finished_at: Option<String>,
    /// kurabe version that ran it.
    pub tool_version: String,
    /// The machine it ran on, if recorded.
    #[schemars(required, transform = crate::schema::nullable)]
    pub host: Option<crate::host::HostFacts>,
    /// Baseline variant every other variant is compared against.
    #[schemars(required, transform = crate::schema::nullable)]
    pub baseline: Option<String>,
    /// Variants in plan order (baseline first if the plan names none).
    pub variants: Vec<String>,
    /// Variants without a single successful run (e.g. the baseline after an
    /// interrupt): shown and marked "no runs", never replaced.
    #[serde(default)]
    pub variants_without_runs: Vec<String>,
    /// Runs recorded, failed ones included.
    pub runs_total: u64,
    /// Runs that failed.
    pub runs_failed: u64,
    /// One section per workload, in plan order.
    pub workloads: Vec<WorkloadReport>,
    /// Every failed run with the tail of its error output.
    pub failures: Vec<FailedRun>,
    /// The plan file's text, verbatim.
    pub plan_text: String,
}

/// One workload's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct WorkloadReport {
    /// Workload name.
    pub name: String,
    /// Variants with runs in this workload, in plan order.
    pub variants: Vec<String>,
    /// This workload's own baseline, when it is not the experiment's: an
    /// import without a plan, whose workloads each have their own variants
    /// (criterion's groups), compares each with its first variant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// Metric names shown in the compact table (a few, most telling first).
    pub headline: Vec<String>,
    /// Every metric the runs recorded.
    pub metrics: Vec<MetricReport>,
    /// Time series of CPU and memory per run, where the run recorded one.
    pub series: Vec<RunSeries>,
    /// The load's per-second series (sent, achieved and target rate,
    /// latency percentiles) per HTTP run that recorded two seconds or
    /// more; absent for other workloads and in reports from before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load: Vec<RunLoad>,
    /// Memory over requests served with the fitted floor line, per soak
    /// run (`http = { soak = "…" }`); absent for other workloads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub soak: Vec<SoakSeries>,
    /// Variants whose runs' CPU settled later than the plan's warm-up
    /// ended (found by the change-point method within each run); absent
    /// when every run was settled by then.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warmup: Vec<WarmupCheck>,
    /// The per-request breakdown across variants: for each request name
    /// the runs' HTTP records break down, its throughput, latency and
    /// failures per variant and against the baseline; absent when the
    /// runs had one request name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<RequestReport>,
    /// The SLOs a capacity search (`find_rate`) held its rates to, as given;
    /// absent for other workloads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slos: Vec<String>,
    /// The workload's thresholds (`http = { thresholds = […] }`) per
    /// variant, judged on each of its runs; absent without thresholds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<VariantThresholds>,
    /// The differential profile (`--profile`): every run's folded
    /// stacks and each variant against the baseline, function by
    /// function; absent when no run was profiled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::profile::ProfileReport>,
}

/// One variant's thresholds on one workload. Each run is a whole load test
/// and is judged as `kurabe http --threshold` judges one (k6 judges a test
/// run); the variant passes a threshold when every one of its successful
/// runs did, and shows the worst run's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct VariantThresholds {
    /// Variant name.
    pub variant: String,
    /// Successful runs judged.
    pub runs: u32,
    /// One per threshold, in the order given.
    pub thresholds: Vec<ThresholdVerdict>,
}

/// A threshold over a variant's runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct ThresholdVerdict {
    /// The threshold as given.
    pub text: String,
    /// The worst run's measured value, in the threshold's unit (seconds, a
    /// fraction, requests/s); 0 when nothing was measured.
    pub measured: f64,
    /// That value as the threshold writes it (`12.3ms`), or why nothing was measured.
    pub shown: String,
    /// Whether every run passed.
    pub pass: bool,
    /// Runs in which it failed (ended by `,abort` or judged at the end).
    pub runs_failed: u32,
}

/// One request name of a workload across variants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct RequestReport {
    /// The request name, its URL's scheme and host left out so that the
    /// same request to two URLs (an A/B) is one row.
    pub name: String,
    /// `requests_per_second`, `latency_p50_us` and `latency_p99_us` of
    /// this name's requests, as the workload's metrics.
    pub metrics: Vec<MetricReport>,
}

/// A variant whose warm-up was shorter than where its runs settled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct WarmupCheck {
    /// Variant name.
    pub variant: String,
    /// The series searched (`cpu_percent`: the target's CPU per interval;
    /// `completed_per_s`: complete responses per second of the load).
    pub series: String,
    /// Warm-up the runs had before measuring, seconds.
    pub warmup_s: f64,
    /// Median, over the runs that settled late, of the time from the start
    /// of the load to where the series settled, seconds.
    pub settled_after_s: f64,
    /// Runs that settled after the warm-up ended.
    pub runs_late: u32,
    /// Runs whose series was judged.
    pub runs: u32,
    /// Runs with a change in their last quarter: no steady state seen.
    pub runs_unsteady: u32,
}

/// One metric of one workload across variants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct MetricReport {
    /// Catalogue name (`requests_per_second`).
    pub name: String,
    /// Unit of every value.
    pub unit: Unit,
    /// Which way is better; absent for a metric kurabe does not know.
    #[schemars(required, transform = crate::schema::nullable)]
    pub direction: Option<Direction>,
    /// One-line description (empty for unknown metrics).
    pub description: String,
    /// Summary per variant, in variant order.
    pub variants: Vec<VariantMetric>,
    /// Each non-baseline variant against the baseline.
    pub versus_baseline: Vec<VersusBaseline>,
}

/// One variant's samples of one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct VariantMetric {
    /// Variant name.
    pub variant: String,
    /// Values of the successful runs, in round order.
    pub samples: Vec<f64>,
    /// Their summary; absent without samples.
    #[schemars(required, transform = crate::schema::nullable)]
    pub summary: Option<Summary>,
}

/// A candidate variant against the baseline on one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct VersusBaseline {
    /// The candidate variant.
    pub variant: String,
    /// The baseline variant.
    pub baseline: String,
    /// Ratio of geometric means, interval, verdict.
    pub comparison: Comparison,
    /// Whether the change is good, bad or neither, for colouring.
    pub tone: Tone,
    /// The answer in words: `1.18× [1.16, 1.20] faster`.
    pub phrase: String,
}

/// Whether a difference is good news.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Tone {
    /// Better beyond the noise band.
    Good,
    /// Worse beyond the noise band.
    Bad,
    /// Within noise, inconclusive or unknown.
    Neutral,
}

/// A run that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct FailedRun {
    /// Variant name.
    pub variant: String,
    /// Workload name.
    pub workload: String,
    /// Round number, 0-based.
    pub round: u32,
    /// Last lines of the target's stderr, if captured.
    #[schemars(required, transform = crate::schema::nullable)]
    pub error_tail: Option<String>,
}

/// CPU and memory over one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct RunSeries {
    /// Variant name.
    pub variant: String,
    /// Round number, 0-based.
    pub round: u32,
    /// Samples in time order.
    pub points: Vec<SeriesPoint>,
}

/// One HTTP run's per-second series, as its record holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct RunLoad {
    /// Variant name.
    pub variant: String,
    /// Round number, 0-based.
    pub round: u32,
    /// One row per second of the measured phase.
    pub intervals: Vec<crate::series::Interval>,
}

/// One sample of a run's time series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct SeriesPoint {
    /// Seconds since the run's start.
    pub t_s: f64,
    /// CPU, percent of one core.
    #[schemars(required, transform = crate::schema::nullable)]
    pub cpu_percent: Option<f64>,
    /// Σ PSS of the process tree.
    #[schemars(required, transform = crate::schema::nullable)]
    pub pss_bytes: Option<f64>,
}

/// Memory against requests served in one soak run, and the line fitted
/// through its floor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct SoakSeries {
    /// Variant name.
    pub variant: String,
    /// Round number, 0-based.
    pub round: u32,
    /// What `bytes` measures: `pss_anon_shmem_swap_bytes` (Σ Pss_Anon +
    /// Pss_Shmem + Swap of the target tree, what the fit uses) or
    /// `pss_bytes` (Σ PSS, on kernels without Pss_Anon).
    #[schemars(extend("enum" = ["pss_anon_shmem_swap_bytes", "pss_bytes"]))]
    pub memory: String,
    /// Samples in time order (warm-up dropped).
    pub points: Vec<SoakPoint>,
    /// The per-window floors the line was fitted through.
    pub floor: Vec<SoakPoint>,
    /// Theil–Sen slope of the floor, bytes per request; absent without a fit.
    #[schemars(required, transform = crate::schema::nullable)]
    pub slope_bytes_per_request: Option<f64>,
    /// Lower end of its 95 % interval.
    #[schemars(required, transform = crate::schema::nullable)]
    pub slope_low_bytes_per_request: Option<f64>,
    /// Upper end of its 95 % interval.
    #[schemars(required, transform = crate::schema::nullable)]
    pub slope_high_bytes_per_request: Option<f64>,
    /// The fitted line's value at 0 requests, bytes.
    #[schemars(required, transform = crate::schema::nullable)]
    pub intercept_bytes: Option<f64>,
    /// `growing`, `flat` or `unknown`.
    #[schemars(extend("enum" = ["growing", "flat", "unknown"]))]
    pub verdict: String,
}

/// One sample of a soak run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct SoakPoint {
    /// Requests served so far in the measured phase.
    pub requests: f64,
    /// Memory then (see [`SoakSeries::memory`]).
    pub bytes: f64,
}

/// Two stored entries side by side (`kurabe results compare A B`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct EntryComparison {
    /// [`crate::SCHEMA_VERSION`] at writing.
    #[schemars(range(min = 1))]
    pub schema_version: u32,
    /// The reference entry (`e3`, `r7`): ratios are B / A.
    pub a: ComparedEntry,
    /// The other entry.
    pub b: ComparedEntry,
    /// One row per quantity both sides have.
    pub rows: Vec<ComparisonRow>,
}

/// One side of an [`EntryComparison`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct ComparedEntry {
    /// Store id.
    pub id: String,
    /// `experiment` or the saved result's kind.
    pub kind: String,
    /// Experiment name or result label.
    pub name: String,
    /// Host name, if recorded.
    #[schemars(required, transform = crate::schema::nullable)]
    pub hostname: Option<String>,
    /// Architecture, if recorded.
    #[schemars(required, transform = crate::schema::nullable)]
    pub arch: Option<String>,
}

/// One quantity compared across the two entries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct ComparisonRow {
    /// What is compared: `workload / variant / metric`, or a JSON field path.
    pub key: String,
    /// Unit, when known.
    #[schemars(required, transform = crate::schema::nullable)]
    pub unit: Option<Unit>,
    /// A's value (geometric mean of its samples, or the single value).
    pub a_value: f64,
    /// B's value.
    pub b_value: f64,
    /// Samples behind A's value.
    pub a_samples: usize,
    /// Samples behind B's value.
    pub b_samples: usize,
    /// B / A; absent when A is zero.
    #[schemars(required, transform = crate::schema::nullable)]
    pub ratio: Option<f64>,
    /// Interval and verdict, when both sides have at least 3 samples and the direction is known.
    #[schemars(required, transform = crate::schema::nullable)]
    pub comparison: Option<Comparison>,
    /// The answer in words.
    pub phrase: String,
}
