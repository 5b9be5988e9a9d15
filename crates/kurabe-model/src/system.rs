//! Result records of `kurabe system`: the UnixBench-style index of a machine,
//! and the comparison of two such records.
//!
//! One record shape serves kurabe's own runs and imported UnixBench text
//! reports (`source` tells them apart). Imported records carry single numbers
//! only, so `passes` is empty and the confidence bounds are absent; every
//! consumer must treat those fields as optional. Field names carry their unit
//! where they have one (`time_s`); a test's `result` is in the test's own
//! `unit` (lps, lpm, KBps, MWIPS), as UnixBench prints it.
//!
//! Nothing here measures or prints; the scoring maths lives in
//! `kurabe-system`, this is only the vocabulary.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a [`SystemReport`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum SystemSource {
    /// Measured by `kurabe system`.
    #[serde(rename = "kurabe")]
    Kurabe,
    /// Read from a UnixBench text report by `kurabe system import`.
    #[serde(rename = "unixbench-import")]
    UnixbenchImport,
}

/// A whole `kurabe system` result: one or more runs (one per copy count).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(
    title = "kurabe system report",
    description = "Output of 'kurabe system --format json' and 'kurabe system import'. The UnixBench System Benchmarks Index: one run per copy count, one entry per test."
)]
pub struct SystemReport {
    /// Schema version of this record ([`crate::SCHEMA_VERSION`]).
    #[schemars(range(min = 1))]
    pub schema_version: u32,
    /// Measured by kurabe or imported from a UnixBench report.
    pub source: SystemSource,
    /// Host name of the measured machine.
    pub host: String,
    /// Kernel release (`uname -r`), or what the imported report's OS line said.
    pub kernel: String,
    /// Machine architecture (`uname -m`).
    pub arch: String,
    /// When the measurement started: RFC 3339 UTC for runs, the report's own text for imports.
    pub time: String,
    /// Online CPUs of the measured machine, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u32>,
    /// Mode the run used (`"default"`, `"quick"` or `"custom"`); `None` for imports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["default", "quick", "custom", "precision"]))]
    pub mode: Option<String>,
    /// True when Ctrl-C cut the run short; finished tests are kept.
    #[serde(default)]
    pub interrupted: bool,
    /// The stopping rule, when passes ran until a precision was reached
    /// (`mode = "precision"`); `None` for fixed pass counts and imports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<PrecisionRule>,
    /// Placement the test processes were pinned to (`"same-core"` or
    /// `"spread"`); `None` when the scheduler placed them, as UnixBench does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["same-core", "spread"]))]
    pub pin: Option<String>,
    /// One entry per copy count, in the order they ran.
    pub runs: Vec<SystemRun>,
}

impl SystemReport {
    /// The label a saved `kurabe system` run goes under without `--save=LABEL`.
    pub fn label(&self) -> String {
        format!("system {}", self.host)
    }
}

/// `--precision P --max-time T`: what a precision-driven run aimed for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct PrecisionRule {
    /// Target half-width of the 95 % intervals, as a fraction of the value (0.02 = ±2 %).
    pub target: f64,
    /// Time budget per copy count, seconds.
    pub max_time_s: f64,
}

/// The results of all tests at one copy count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct SystemRun {
    /// Parallel copies of each test (UnixBench's `-c`).
    #[schemars(range(min = 1))]
    pub copies: u32,
    /// "System Benchmarks Index Score": geometric mean of the indexed tests; `None` when no test was indexed.
    #[schemars(required, transform = crate::schema::nullable)]
    pub score: Option<f64>,
    /// True when not all 12 index tests are in `tests` (UnixBench's "Partial Index").
    pub partial: bool,
    /// Lower 95 % bound of `score` from the pass-to-pass spread (kurabe runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_ci95_low: Option<f64>,
    /// Upper 95 % bound of `score` (kurabe runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_ci95_high: Option<f64>,
    /// Wall time the run took, seconds (kurabe runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_s: Option<f64>,
    /// Tests that limited the score's precision: those whose share of the
    /// variance of log(score) is largest, together at least half of it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limited_by: Vec<String>,
    /// Per-test results, in UnixBench's report order.
    pub tests: Vec<SystemTest>,
}

/// One test's combined result at one copy count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct SystemTest {
    /// Stable short id (`dhry2reg`, `pipe`, `fstime`, ... — UnixBench's own test names).
    pub id: String,
    /// UnixBench's display name ("Pipe Throughput").
    pub name: String,
    /// Geometric mean of the kept passes' rates, in `unit`; 0 when the test failed.
    pub result: f64,
    /// Unit of `result`: `lps`, `lpm`, `KBps` or `MWIPS`.
    pub unit: String,
    /// BYTE baseline (SPARCstation 20-61) in `unit`; `None` for a test outside the index.
    #[schemars(required, transform = crate::schema::nullable)]
    pub baseline: Option<f64>,
    /// `result / baseline × 10`; `None` outside the index.
    #[schemars(required, transform = crate::schema::nullable)]
    pub index: Option<f64>,
    /// Mean duration of the kept passes, seconds (per copy).
    pub time_s: f64,
    /// Number of kept passes (UnixBench's "samples").
    pub samples: u32,
    /// Every pass, kept or dropped (kurabe runs only; empty for imports).
    #[serde(default)]
    pub passes: Vec<SystemPass>,
    /// Lower 95 % bound of `result` (t interval on the log rates of kept passes; kurabe runs with ≥ 2 kept passes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95_low: Option<f64>,
    /// Upper 95 % bound of `result`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95_high: Option<f64>,
    /// This test's share of the variance of log(score), 0–1 (kurabe runs with an interval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_variance_share: Option<f64>,
    /// Why a precision-driven run stopped giving this test passes:
    /// `"target"` (its interval is within the target), `"budget"` (its share
    /// of the time is spent) or `"time"` (the run's time is up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["target", "budget", "time"]))]
    pub stop: Option<String>,
    /// Distinct modes among the passes' rates (e.g. two processes on one core
    /// vs on two), lowest first; empty when the passes form one group.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modes: Vec<SystemMode>,
    /// Why the test has no result, when a pass failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One pass of one test: all copies together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct SystemPass {
    /// Sum of the copies' counts (loops, or KB/MWIPS for rate-reporting tests).
    pub count: f64,
    /// Mean of the copies' times, seconds.
    pub time_s: f64,
    /// The pass's rate in the test's unit (`count` per timebase, or `count` itself for rates).
    pub rate: f64,
    /// True when this pass was among the lowest third and dropped from the result.
    pub dropped: bool,
}

/// One mode of a test's pass rates: a group of passes separated from the
/// others by a gap much wider than the spread inside either group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct SystemMode {
    /// Geometric mean of the group's rates, in the test's unit.
    pub rate: f64,
    /// Lowest rate in the group.
    pub low: f64,
    /// Highest rate in the group.
    pub high: f64,
    /// Passes in the group.
    #[schemars(range(min = 1))]
    pub passes: u32,
    /// Fraction of all passes in the group, 0–1.
    #[schemars(range(min = 0, max = 1))]
    pub share: f64,
}

/// `kurabe system compare A B`: B relative to A, per copy count and test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(
    title = "kurabe system comparison",
    description = "Output of 'kurabe system compare A B --format json': B relative to A per copy count and test (higher is better everywhere).",
    deny_unknown_fields
)]
pub struct SystemCompare {
    /// Schema version of this record ([`crate::SCHEMA_VERSION`]).
    #[schemars(range(min = 1))]
    pub schema_version: u32,
    /// Where A came from and what it measured.
    pub a: CompareSide,
    /// Where B came from and what it measured.
    pub b: CompareSide,
    /// Half-width of the noise band, as a fraction (0.02 = ±2 %).
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub noise_band: f64,
    /// One entry per copy count present in both A and B.
    pub runs: Vec<CompareRun>,
}

/// Identification of one side of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(deny_unknown_fields)]
pub struct CompareSide {
    /// The file it was read from.
    pub label: String,
    /// Measured by kurabe or imported.
    pub source: SystemSource,
    /// Host name recorded in it.
    pub host: String,
    /// Kernel recorded in it.
    pub kernel: String,
    /// Architecture recorded in it.
    pub arch: String,
}

/// Comparison at one copy count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(deny_unknown_fields)]
pub struct CompareRun {
    /// Copy count both sides ran.
    #[schemars(range(min = 1))]
    pub copies: u32,
    /// Overall index score of A and B and their ratio/verdict.
    pub score: CompareRow,
    /// Per-test rows, in UnixBench's report order (tests present on both sides).
    pub tests: Vec<CompareRow>,
}

/// One row of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(deny_unknown_fields)]
pub struct CompareRow {
    /// Test id, or `"score"` for the overall index.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Unit of `result_a`/`result_b` (`"index"` for the overall score).
    pub unit: String,
    /// A's value.
    #[schemars(required, extend("type" = ["number", "null"]))]
    pub result_a: Option<f64>,
    /// B's value.
    #[schemars(required, extend("type" = ["number", "null"]))]
    pub result_b: Option<f64>,
    /// `result_b / result_a` (higher is better for every test); `None` if either is missing or zero.
    #[schemars(required, extend("type" = ["number", "null"]))]
    pub ratio: Option<f64>,
    /// Lower 95 % bound of `ratio` (Welch interval on log rates), when both sides have spread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub ratio_ci95_low: Option<f64>,
    /// Upper 95 % bound of `ratio`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub ratio_ci95_high: Option<f64>,
    /// Better / worse / within noise / inconclusive / no verdict, decided
    /// as every kurabe verdict is; written as one word.
    #[serde(with = "crate::stats::verdict::as_word")]
    #[schemars(with = "crate::stats::VerdictWord")]
    pub verdict: crate::stats::Verdict,
    /// The smallest change, in percent of A, this comparison could have
    /// detected (minimum detectable effect at 95 % and 80 % power), when
    /// it has an interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub detectable_change_pct: Option<f64>,
    /// Why that verdict (always set for `no_verdict` and `inconclusive`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_uses_the_documented_spelling() {
        assert_eq!(
            serde_json::to_string(&SystemSource::UnixbenchImport).unwrap(),
            "\"unixbench-import\""
        );
        assert_eq!(
            serde_json::to_string(&SystemSource::Kurabe).unwrap(),
            "\"kurabe\""
        );
        assert_eq!(
            serde_json::to_string(&crate::stats::VerdictWord::WithinNoise).unwrap(),
            "\"within_noise\""
        );
    }
}
