//! pytest-benchmark's JSON (`--benchmark-json`, and the files
//! `--benchmark-save`/`--benchmark-autosave` keep): `benchmarks`, each
//! with its `stats` — every round's time per iteration in `stats.data`
//! when the file kept it (`--benchmark-json` does; saved files only with
//! `--benchmark-save-data`), else only the summary (`rounds`, `mean`,
//! `stddev`, …). Versions 3 to 5 write this layout.
//!
//! Owns that layout. A test is a variant of the workload named by its
//! `group` (else its file); each round is a run, or the summary one run
//! with the rest of the summary in its detail. Must not store anything.

use std::path::Path;

use kurabe_model::imported::SummaryOnly;
use serde::Deserialize;

use super::{joined_name, read_typed, Benchmark, Harness, ImportError, Imported, Sample};

/// pytest-benchmark.
pub struct PytestBenchmark;

/// Major versions whose layout this reads.
const VERSIONS: std::ops::RangeInclusive<u32> = 3..=5;

#[derive(Deserialize)]
struct File {
    version: String,
    benchmarks: Vec<Bench>,
}

#[derive(Deserialize)]
struct Bench {
    group: Option<String>,
    name: String,
    fullname: String,
    stats: Stats,
}

#[derive(Deserialize)]
struct Stats {
    rounds: u64,
    mean: f64,
    stddev: f64,
    median: Option<f64>,
    min: Option<f64>,
    max: Option<f64>,
    iterations: Option<u64>,
    #[serde(default)]
    data: Option<Vec<f64>>,
}

impl Harness for PytestBenchmark {
    fn name(&self) -> &'static str {
        "pytest-benchmark"
    }

    fn expects(&self) -> &'static str {
        "pytest-benchmark's --benchmark-json file (pytest-benchmark 3 to 5)"
    }

    fn recognises(&self, json: &serde_json::Value) -> bool {
        json.get("benchmarks").is_some() && json.get("machine_info").is_some()
    }

    fn read(&self, path: &Path) -> Result<Imported, ImportError> {
        let file: File = read_typed(self, path)?;
        let major = file.version.split('.').next().and_then(|m| m.parse().ok());
        if !major.is_some_and(|m| VERSIONS.contains(&m)) {
            let problem = format!("it was written by version {}", file.version);
            return Err(ImportError::not_harness(self, path, problem, None));
        }
        if file.benchmarks.is_empty() {
            let problem = "`benchmarks` is empty";
            return Err(ImportError::not_harness(self, path, problem, None));
        }
        let files: Vec<&str> = file.benchmarks.iter().map(test_file).collect();
        let name = joined_name(self.name(), &files);
        Ok(Imported {
            harness: self.name(),
            name,
            benchmarks: file.benchmarks.iter().map(benchmark).collect(),
        })
    }
}

/// `test_sums.py` of `test_sums.py::test_loop`.
fn test_file(b: &Bench) -> &str {
    b.fullname.split("::").next().unwrap_or(&b.fullname)
}

fn benchmark(b: &Bench) -> Benchmark {
    let s = &b.stats;
    let data = s.data.as_deref().unwrap_or_default();
    let samples = data
        .iter()
        .map(|&seconds| Sample {
            seconds,
            iterations: s.iterations,
            exit_code: None,
        })
        .collect();
    let summary = data.is_empty().then_some(SummaryOnly {
        samples: s.rounds,
        mean: s.mean,
        stddev: s.stddev,
        median: s.median,
        min: s.min,
        max: s.max,
    });
    Benchmark {
        workload: b.group.clone().unwrap_or_else(|| test_file(b).to_owned()),
        variant: b.name.clone(),
        samples,
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::fixture;
    use super::*;

    #[test]
    fn every_round_is_a_sample_when_the_file_kept_them() {
        let got = PytestBenchmark
            .read(&fixture("pytest-benchmark/with-data.json"))
            .unwrap();
        assert_eq!(got.name, "pytest-benchmark: test_sums.py");
        let ids: Vec<(&str, &str, usize)> = got
            .benchmarks
            .iter()
            .map(|b| (b.workload.as_str(), b.variant.as_str(), b.samples.len()))
            .collect();
        assert_eq!(
            ids,
            [
                ("sum", "test_loop", 22),
                ("sum", "test_formula", 71),
                ("test_sums.py", "test_sorted[100]", 64),
                ("test_sums.py", "test_sorted[1000]", 54)
            ]
        );
        assert!(got.benchmarks.iter().all(|b| b.summary.is_none()));
        assert_eq!(got.benchmarks[2].samples[0].iterations, Some(20));
    }

    #[test]
    fn a_saved_file_without_data_is_its_summary() {
        let got = PytestBenchmark
            .read(&fixture("pytest-benchmark/summary-only.json"))
            .unwrap();
        let b = &got.benchmarks[0];
        assert!(b.samples.is_empty());
        let s = b.summary.unwrap();
        assert_eq!(s.samples, 22);
        assert!(s.mean > 0.0 && s.stddev >= 0.0 && s.median.is_some());
    }

    #[test]
    fn another_version_or_harness_is_refused() {
        let text = std::fs::read_to_string(fixture("pytest-benchmark/summary-only.json")).unwrap();
        let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
        json["version"] = "2.1.0".into();
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("old.json");
        std::fs::write(&old, json.to_string()).unwrap();
        let err = PytestBenchmark.read(&old).unwrap_err().to_string();
        assert!(
            err.ends_with("(pytest-benchmark 3 to 5): it was written by version 2.1.0"),
            "{err}"
        );
        let err = PytestBenchmark
            .read(&fixture("hyperfine/two-commands.json"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("use --from hyperfine"), "{err}");
    }
}
