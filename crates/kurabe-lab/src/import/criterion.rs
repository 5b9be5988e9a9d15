//! criterion's `target/criterion` directory: every benchmark's `new/`
//! folder, which holds `benchmark.json` (its group, function and input),
//! `sample.json` (the iterations and total nanoseconds of each sample) and
//! `estimates.json` (the summary criterion derived; its presence marks a
//! finished benchmark of criterion 0.3 or later).
//!
//! Owns that layout. A benchmark is a variant (function and input) of the
//! workload named by its group; each sample is a run whose `wall_time_s`
//! is one iteration's time (total time / iterations). Must not store anything.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{joined_name, read_typed, Benchmark, Harness, ImportError, Imported, Sample};

/// criterion.rs.
pub struct Criterion;

/// Deepest folder searched below the directory given (`group/function/input/new`).
const MAX_DEPTH: usize = 8;

#[derive(Deserialize)]
struct Id {
    group_id: String,
    function_id: Option<String>,
    value_str: Option<String>,
}

#[derive(Deserialize)]
struct Samples {
    iters: Vec<f64>,
    times: Vec<f64>,
}

#[derive(Deserialize)]
struct Estimates {
    #[allow(dead_code)] // Required: criterion before 0.3 spelt it `Mean`.
    mean: Estimate,
}

#[derive(Deserialize)]
struct Estimate {
    #[allow(dead_code)]
    point_estimate: f64,
}

impl Harness for Criterion {
    fn name(&self) -> &'static str {
        "criterion"
    }

    fn expects(&self) -> &'static str {
        "criterion's target/criterion directory (criterion 0.3 or later)"
    }

    fn recognises(&self, json: &serde_json::Value) -> bool {
        ["group_id", "sampling_mode", "median_abs_dev"]
            .iter()
            .any(|k| json.get(k).is_some())
    }

    fn read(&self, dir: &Path) -> Result<Imported, ImportError> {
        if dir.is_file() {
            let json = super::read_report(self, dir)
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok());
            let problem = "it is a file; give the directory cargo bench wrote";
            return Err(ImportError::not_harness(self, dir, problem, json.as_ref()));
        }
        let mut found = Vec::new();
        walk(self, dir, 0, &mut found)?;
        if found.is_empty() {
            let problem = "no benchmark's new/estimates.json below it (run cargo bench first)";
            return Err(ImportError::not_harness(self, dir, problem, None));
        }
        found.sort();
        let benchmarks = found
            .iter()
            .map(|new| benchmark(self, new))
            .collect::<Result<Vec<_>, _>>()?;
        let groups: Vec<&str> = benchmarks.iter().map(|b| b.workload.as_str()).collect();
        Ok(Imported {
            harness: self.name(),
            name: joined_name(self.name(), &groups),
            benchmarks,
        })
    }
}

/// Every `new/` folder with an `estimates.json` below `dir`.
fn walk(
    h: &Criterion,
    dir: &Path,
    depth: usize,
    found: &mut Vec<PathBuf>,
) -> Result<(), ImportError> {
    let entries = std::fs::read_dir(dir).map_err(|source| ImportError::Read {
        path: dir.to_owned(),
        expects: h.expects(),
        source,
    })?;
    for entry in entries.flatten() {
        let path = entry.path();
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if !is_dir {
            continue;
        }
        if entry.file_name() == "new" && path.join("estimates.json").is_file() {
            found.push(path);
        } else if depth < MAX_DEPTH && entry.file_name() != "report" {
            walk(h, &path, depth + 1, found)?;
        }
    }
    Ok(())
}

/// The benchmark whose `new/` folder is `new`.
fn benchmark(h: &Criterion, new: &Path) -> Result<Benchmark, ImportError> {
    let file = |name: &str| new.join(name);
    let _: Estimates = read_typed(h, &file("estimates.json"))?;
    let id: Id = read_typed(h, &file("benchmark.json"))?;
    let s: Samples = read_typed(h, &file("sample.json"))?;
    if s.iters.len() != s.times.len() || s.iters.iter().any(|i| *i <= 0.0) {
        let problem = "`iters` and `times` differ in length or hold a sample of no iterations";
        return Err(ImportError::not_harness(
            h,
            &file("sample.json"),
            problem,
            None,
        ));
    }
    let samples = s
        .iters
        .iter()
        .zip(&s.times)
        .map(|(iters, ns)| Sample {
            seconds: ns / iters * 1e-9,
            iterations: Some(*iters as u64),
            exit_code: None,
        })
        .collect();
    let variant = match (id.function_id, id.value_str) {
        (Some(f), Some(v)) => format!("{f}/{v}"),
        (Some(one), None) | (None, Some(one)) => one,
        (None, None) => id.group_id.clone(),
    };
    Ok(Benchmark {
        workload: id.group_id,
        variant,
        samples,
        summary: None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::fixture;
    use super::*;

    #[test]
    fn every_benchmark_of_the_directory_reads_with_its_samples() {
        let got = Criterion
            .read(&fixture("criterion/target-criterion"))
            .unwrap();
        assert_eq!(got.name, "criterion: sort vs sum");
        let ids: Vec<(&str, &str)> = got
            .benchmarks
            .iter()
            .map(|b| (b.workload.as_str(), b.variant.as_str()))
            .collect();
        assert_eq!(
            ids,
            [
                ("sort", "100"),
                ("sort", "1000"),
                ("sum", "formula"),
                ("sum", "loop")
            ]
        );
        let lp = &got.benchmarks[3];
        assert_eq!(lp.samples.len(), 20);
        // sample.json: 6079 iterations took 1586336 ns.
        assert_eq!(lp.samples[0].iterations, Some(6079));
        assert!((lp.samples[0].seconds - 1586336.0 / 6079.0 * 1e-9).abs() < 1e-15);
    }

    #[test]
    fn a_file_or_an_empty_directory_is_refused() {
        let err = Criterion
            .read(&fixture("hyperfine/two-commands.json"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("is not criterion's target/criterion directory"),
            "{err}"
        );
        assert!(err.contains("use --from hyperfine"), "{err}");
        let empty = tempfile::tempdir().unwrap();
        let err = Criterion.read(empty.path()).unwrap_err().to_string();
        assert!(err.contains("run cargo bench first"), "{err}");
    }
}
