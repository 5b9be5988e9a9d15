//! What a run imported from another harness (hyperfine, criterion,
//! pytest-benchmark) keeps beside its metrics: which harness measured it,
//! how many iterations one sample timed, and — when the harness kept no
//! samples, only their summary — that summary.
//!
//! Owns [`ImportedRun`] as plain data, a run's detail as
//! `RunDetail::Imported` (`"kind": "imported"`). Must not parse harness
//! files (that is `kurabe-lab`'s `import`) or judge anything.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The harness-specific part of an imported run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct ImportedRun {
    /// The harness that measured it (`hyperfine`, `criterion`, `pytest-benchmark`).
    pub harness: String,
    /// Iterations the sample timed (criterion, pytest-benchmark); its
    /// metric is the time of one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u64>,
    /// The harness kept only a summary: the run's metric is its mean, and
    /// this is the rest of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<SummaryOnly>,
}

/// A harness's summary of samples it did not keep, in the metric's unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct SummaryOnly {
    /// Samples (rounds) summarised.
    pub samples: u64,
    /// Their arithmetic mean.
    pub mean: f64,
    /// Their standard deviation.
    pub stddev: f64,
    /// Their median, when the harness gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median: Option<f64>,
    /// The smallest, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// The largest, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_other_kinds_are_not_imported() {
        let run = ImportedRun {
            harness: "pytest-benchmark".into(),
            iterations: Some(3),
            summary: Some(SummaryOnly {
                samples: 22,
                mean: 1e-4,
                stddev: 1e-5,
                median: None,
                min: Some(9e-5),
                max: None,
            }),
        };
        let rec = crate::run_detail::RunDetail::Imported(run.clone());
        let json = serde_json::to_value(&rec).unwrap();
        assert_eq!(json["kind"], "imported");
        assert_eq!(json["harness"], "pytest-benchmark");
        let back: crate::run_detail::RunDetail = serde_json::from_value(json).unwrap();
        assert_eq!(back.imported(), Some(&run));
        let command: crate::run_detail::RunDetail = serde_json::from_value(
            serde_json::json!({"kind": "command", "command": [], "executions": []}),
        )
        .unwrap();
        assert_eq!(command.imported(), None);
    }
}
