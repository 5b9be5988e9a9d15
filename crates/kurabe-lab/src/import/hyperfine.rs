//! hyperfine's `--export-json` file: `results`, one per command, each with
//! every timed run's wall time in `times` (hyperfine 1.6 on; earlier files
//! hold only the summary and are refused) and its exit code in `exit_codes`.
//!
//! Owns that layout. Each command is a variant of the workload `command`
//! (as `kurabe cmd` stores them), each time a run; a run whose command
//! exited non-zero (`hyperfine -i`) is a failed run. Must not store anything.

use std::path::Path;

use serde::Deserialize;

use super::{joined_name, read_typed, Benchmark, Harness, ImportError, Imported, Sample};

/// hyperfine.
pub struct Hyperfine;

#[derive(Deserialize)]
struct Export {
    results: Vec<Result>,
}

#[derive(Deserialize)]
struct Result {
    command: String,
    #[allow(dead_code)] // Required: a file without it is not hyperfine's.
    mean: f64,
    times: Option<Vec<f64>>,
    #[serde(default)]
    exit_codes: Vec<Option<i32>>,
}

impl Harness for Hyperfine {
    fn name(&self) -> &'static str {
        "hyperfine"
    }

    fn expects(&self) -> &'static str {
        "hyperfine's --export-json file (hyperfine 1.6 or later)"
    }

    fn recognises(&self, json: &serde_json::Value) -> bool {
        json.get("results")
            .and_then(|r| r.get(0))
            .is_some_and(|r| r.get("command").is_some() && r.get("mean").is_some())
    }

    fn read(&self, path: &Path) -> std::result::Result<Imported, ImportError> {
        let export: Export = read_typed(self, path)?;
        if export.results.is_empty() {
            return Err(ImportError::not_harness(
                self,
                path,
                "`results` is empty",
                None,
            ));
        }
        let benchmarks = export
            .results
            .into_iter()
            .map(|r| benchmark(self, path, r))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let names: Vec<&str> = benchmarks.iter().map(|b| b.variant.as_str()).collect();
        Ok(Imported {
            harness: self.name(),
            name: joined_name(self.name(), &names),
            benchmarks,
        })
    }
}

/// One command's runs; a file without `times` is from a hyperfine before 1.6.
fn benchmark(h: &Hyperfine, path: &Path, r: Result) -> std::result::Result<Benchmark, ImportError> {
    let Some(times) = r.times else {
        let problem = format!(
            "`{}` has no `times` (each run's time, written since hyperfine 1.6)",
            r.command
        );
        return Err(ImportError::not_harness(h, path, problem, None));
    };
    let samples = times
        .iter()
        .enumerate()
        .map(|(i, &seconds)| Sample {
            seconds,
            iterations: None,
            exit_code: r.exit_codes.get(i).copied().flatten(),
        })
        .collect();
    Ok(Benchmark {
        workload: "command".into(),
        variant: r.command,
        samples,
        summary: None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::fixture;
    use super::*;

    #[test]
    fn two_commands_read_as_two_variants_with_every_time() {
        let got = Hyperfine
            .read(&fixture("hyperfine/two-commands.json"))
            .unwrap();
        assert_eq!(got.name, "hyperfine: sleep 0.01 vs sleep 0.02");
        let variants: Vec<&str> = got.benchmarks.iter().map(|b| b.variant.as_str()).collect();
        assert_eq!(variants, ["sleep 0.01", "sleep 0.02"]);
        let a = &got.benchmarks[0];
        assert_eq!((a.workload.as_str(), a.samples.len()), ("command", 12));
        assert_eq!(a.samples[0].seconds, 0.004674512520000002);
        assert!(a.samples.iter().all(|s| s.exit_code == Some(0)));
        assert_eq!(a.summary, None);
    }

    #[test]
    fn parameter_scans_are_one_variant_per_value() {
        let got = Hyperfine
            .read(&fixture("hyperfine/one-command-param.json"))
            .unwrap();
        let variants: Vec<&str> = got.benchmarks.iter().map(|b| b.variant.as_str()).collect();
        assert_eq!(variants, ["sleep 0.001", "sleep 0.002"]);
        assert!(got.benchmarks.iter().all(|b| b.samples.len() == 5));
    }

    #[test]
    fn other_harnesses_files_are_refused_naming_the_right_flag() {
        let err = Hyperfine
            .read(&fixture("pytest-benchmark/with-data.json"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("is not hyperfine's --export-json file")
                && err.contains("use --from pytest-benchmark"),
            "{err}"
        );
        assert!(!err.contains('\n'), "{err}");
    }
}
