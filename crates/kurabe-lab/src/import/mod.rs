//! `kurabe results import --from HARNESS`: other harnesses' saved results
//! (hyperfine's `--export-json`, criterion's `target/criterion`,
//! pytest-benchmark's `--benchmark-json`) as kurabe experiments, so that
//! `history`, `check` and `site` read them as they read kurabe's own.
//!
//! Owns the [`Harness`] trait — one module per harness beside this file,
//! listed in [`HARNESSES`]: a fourth harness is one more file and one more
//! line there — and turning what a harness read ([`Imported`]) into an
//! [`Experiment`] ([`Imported::into_experiment`]): one variant per
//! benchmark, one run per sample the harness kept (the sample's time in
//! `wall_time_s`), or, when it kept only a summary, one run holding the
//! mean with the summary in its detail. Reading a file that is not the
//! harness's (or not a version it knows) is an [`ImportError`] naming what
//! was expected, before anything is stored.
//!
//! Storing it is [`save`]'s. The harness modules and this file must not
//! open the store, read the clock or this machine's facts (the caller gives
//! them in [`Context`]), or print.

mod criterion;
mod hyperfine;
mod pytest_benchmark;
pub mod save;

pub(super) use kurabe_model::plan::joined_name;
use std::path::{Path, PathBuf};

use kurabe_model::imported::{ImportedRun, SummaryOnly};
use kurabe_model::record::{
    Experiment, ExperimentId, ExperimentStatus, HostFacts, MetricValue, Origin, RunRecord,
    RunStatus, StoredRun,
};
use kurabe_model::run_detail::RunDetail;

/// The metric every imported sample is stored as (seconds, lower is better).
pub const TIME_METRIC: &str = "wall_time_s";

/// A harness whose saved results kurabe imports.
pub trait Harness: Sync {
    /// The `--from` word (`hyperfine`).
    fn name(&self) -> &'static str;
    /// What `--from NAME` reads, for help and errors ("hyperfine's --export-json file").
    fn expects(&self) -> &'static str;
    /// Read the results at `path`.
    fn read(&self, path: &Path) -> Result<Imported, ImportError>;
    /// Whether this JSON looks like this harness's output (to name the
    /// right `--from` when another harness was asked for).
    fn recognises(&self, json: &serde_json::Value) -> bool;
}

/// Every harness, in the order `--from` lists them.
pub const HARNESSES: &[&dyn Harness] = &[
    &hyperfine::Hyperfine,
    &criterion::Criterion,
    &pytest_benchmark::PytestBenchmark,
];

/// The harness `--from NAME` names.
pub fn harness(name: &str) -> Option<&'static dyn Harness> {
    HARNESSES.iter().copied().find(|h| h.name() == name)
}

/// Why nothing was imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file or directory could not be read.
    #[error("cannot read {}: {source}; give {expects}", .path.display())]
    Read {
        /// What could not be read.
        path: PathBuf,
        /// What the harness reads.
        expects: &'static str,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The report is not a regular file, too large, or not UTF-8.
    #[error(transparent)]
    Input(#[from] kurabe_input::InputError),
    /// The input is not what the harness writes (another harness's, another version's).
    #[error("{} is not {expects}: {problem}{hint}", .path.display())]
    NotHarness {
        /// The input.
        path: PathBuf,
        /// What the harness writes.
        expects: &'static str,
        /// What is wrong with it.
        problem: String,
        /// "; it looks like X's output: use --from X", when another harness recognises it.
        hint: String,
    },
    /// One run per sample would make more runs than an experiment may have.
    #[error("{} holds {samples} samples, more than the {MAX_SAMPLES} runs an experiment may have (one per sample); import a report of fewer runs", .path.display())]
    TooManySamples {
        /// The input.
        path: PathBuf,
        /// Samples it holds.
        samples: usize,
    },
}

/// Most samples an import takes: each is a run, and an experiment has at
/// most as many runs as a plan may make ([`kurabe_model::plan::MAX_RUNS`]).
pub const MAX_SAMPLES: u64 = kurabe_model::plan::MAX_RUNS;

impl ImportError {
    /// `path` holds more samples than an experiment may have runs.
    fn too_many(path: &Path, samples: usize) -> ImportError {
        ImportError::TooManySamples {
            path: path.to_owned(),
            samples,
        }
    }

    /// `path` is not `h`'s output because of `problem`; `json`, when it
    /// parsed, lets another harness say the input is its.
    pub fn not_harness(
        h: &dyn Harness,
        path: &Path,
        problem: impl Into<String>,
        json: Option<&serde_json::Value>,
    ) -> ImportError {
        let other = json.and_then(|j| {
            HARNESSES
                .iter()
                .find(|o| o.name() != h.name() && o.recognises(j))
        });
        ImportError::NotHarness {
            path: path.to_owned(),
            expects: h.expects(),
            problem: problem.into(),
            hint: other.map_or(String::new(), |o| {
                format!("; it looks like {}: use --from {}", o.expects(), o.name())
            }),
        }
    }
}

/// What a harness read: its benchmarks and the experiment name they go under by default.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// The harness (`--from` word).
    pub harness: &'static str,
    /// Default experiment name (`hyperfine: A vs B`); `--name` overrides it.
    pub name: String,
    /// The benchmarks, in the harness's order.
    pub benchmarks: Vec<Benchmark>,
}

/// One benchmark: a variant of a workload, with its samples or its summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Benchmark {
    /// Workload (criterion's group, pytest-benchmark's group, hyperfine's `command`).
    pub workload: String,
    /// Variant (the command, the function and input, the test).
    pub variant: String,
    /// Seconds per iteration of each kept sample, in the harness's order.
    pub samples: Vec<Sample>,
    /// The harness's summary, when it kept no samples.
    pub summary: Option<SummaryOnly>,
}

/// One sample a harness kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Seconds (of one iteration, when the sample timed several).
    pub seconds: f64,
    /// Iterations the sample timed, when the harness says.
    pub iterations: Option<u64>,
    /// The command's exit code, when the harness recorded one (hyperfine).
    pub exit_code: Option<i32>,
}

/// Where and when the import happens (the caller reads the machine and clock).
#[derive(Debug, Clone)]
pub struct Context {
    /// Experiment name (`--name`, else [`Imported::name`]).
    pub name: Option<String>,
    /// The input, named in the stored plan text.
    pub source: PathBuf,
    /// The machine the results are recorded for.
    pub host: HostFacts,
    /// Code version and cgroup limits recorded with them.
    pub origin: Origin,
    /// kurabe's version.
    pub tool_version: String,
    /// Now, RFC 3339 UTC: the experiment's and its runs' time.
    pub now: String,
}

impl Imported {
    /// Refuses more samples than [`MAX_SAMPLES`] (read from `path`), before
    /// they become runs: a run takes a few hundred bytes, a sample eight.
    pub fn check_size(&self, path: &Path) -> Result<(), ImportError> {
        let samples: usize = self
            .benchmarks
            .iter()
            .map(|b| b.samples.len().max(usize::from(b.summary.is_some())))
            .sum();
        if samples as u64 > MAX_SAMPLES {
            return Err(ImportError::too_many(path, samples));
        }
        Ok(())
    }

    /// The experiment these benchmarks are stored as (id 0: the store gives one).
    pub fn into_experiment(self, cx: Context) -> Experiment {
        let runs = self
            .benchmarks
            .iter()
            .flat_map(|b| runs_of(self.harness, b, &cx.now))
            .enumerate()
            .map(|(i, run)| StoredRun { id: i as i64, run })
            .collect();
        Experiment {
            id: ExperimentId(0),
            name: cx.name.unwrap_or(self.name),
            plan_text: format!(
                "# imported from {} by kurabe results import --from {}\n",
                cx.source.display(),
                self.harness
            ),
            // An import has no plan: each workload's first variant is its baseline.
            layout: None,
            host: Some(cx.host),
            tool_version: cx.tool_version,
            seed: None,
            started_at: cx.now.clone(),
            finished_at: Some(cx.now),
            status: ExperimentStatus::Complete,
            writer: None,
            origin: cx.origin,
            runs,
        }
    }
}

/// A benchmark's runs: one per sample, else one for its summary.
fn runs_of(harness: &str, b: &Benchmark, now: &str) -> Vec<RunRecord> {
    let run = |round: usize, seconds: f64, detail: ImportedRun, failed: Option<i32>| RunRecord {
        variant: b.variant.clone(),
        workload: b.workload.clone(),
        round: round as u32,
        status: if failed.is_some() {
            RunStatus::Failed
        } else {
            RunStatus::Ok
        },
        error_tail: failed.map(|c| format!("exited with status {c}")),
        started_at: now.to_owned(),
        finished_at: now.to_owned(),
        metrics: vec![MetricValue {
            name: TIME_METRIC.into(),
            value: seconds,
            unit: "s".into(),
        }],
        record: Some(RunDetail::Imported(detail)),
        http: None,
    };
    let detail = |iterations, summary| ImportedRun {
        harness: harness.to_owned(),
        iterations,
        summary,
    };
    if b.samples.is_empty() {
        return b
            .summary
            .iter()
            .map(|s| run(0, s.mean, detail(None, Some(*s)), None))
            .collect();
    }
    b.samples
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let failed = s.exit_code.filter(|c| *c != 0);
            run(i, s.seconds, detail(s.iterations, None), failed)
        })
        .collect()
}

/// The largest report file an import reads (a benchmark harness's JSON
/// export is a few MiB at most).
pub const MAX_REPORT_BYTES: u64 = 64 << 20;

/// The text of the report at `path` (at most [`MAX_REPORT_BYTES`]), or
/// why it cannot be read.
fn read_report(h: &dyn Harness, path: &Path) -> Result<String, ImportError> {
    let name = kurabe_input::Name::new(format!("the {} report", h.name()));
    kurabe_input::read_text(path, name, MAX_REPORT_BYTES).map_err(|e| match e {
        kurabe_input::InputError::Open { path, err, .. } => ImportError::Read {
            path,
            expects: h.expects(),
            source: err,
        },
        e => ImportError::Input(e),
    })
}

/// The report at `path` read straight into the harness's layout `T` (a
/// number is eight bytes there, tens as a `serde_json::Value`: a 64 MiB
/// report of 6 million times took 5.8 GB through a `Value`), or the
/// harness's error: only then is the text parsed as a `Value`, to name
/// what is wrong as before and let another harness say the file is its.
fn read_typed<T: serde::de::DeserializeOwned>(
    h: &dyn Harness,
    path: &Path,
) -> Result<T, ImportError> {
    let text = read_report(h, path)?;
    serde_json::from_str(&text).map_err(|straight| {
        match serde_json::from_str::<serde_json::Value>(&text) {
            Err(e) => ImportError::not_harness(h, path, format!("not JSON ({e})"), None),
            Ok(json) => {
                // Through a `Value` the layout may hold (a key given twice
                // is last-wins there): then the straight error says why.
                let e = T::deserialize(&json)
                    .err()
                    .map_or(straight.to_string(), |e| e.to_string());
                ImportError::not_harness(h, path, e, Some(&json))
            }
        }
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A fixture committed beside the binary's integration tests: real
    /// output of each harness (see the README next to each).
    pub(crate) fn fixture(rel: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../kurabe/tests/fixtures/import")
            .join(rel)
    }

    fn cx() -> Context {
        Context {
            name: None,
            source: "f.json".into(),
            host: HostFacts {
                hostname: "h".into(),
                cpu_model: "c".into(),
                cores: 1,
                memory_bytes: 1,
                kernel: "k".into(),
                arch: "a".into(),
            },
            origin: Origin::default(),
            tool_version: "0".into(),
            now: "2026-12-02T01:00:00Z".into(),
        }
    }

    #[test]
    fn every_harness_is_found_by_its_name() {
        for h in HARNESSES {
            assert_eq!(harness(h.name()).unwrap().name(), h.name());
        }
        assert!(harness("nope").is_none());
    }

    #[test]
    fn samples_become_runs_and_a_summary_one_run_with_its_detail() {
        let summary = SummaryOnly {
            samples: 9,
            mean: 0.5,
            stddev: 0.1,
            median: None,
            min: None,
            max: None,
        };
        let sample = |s, code| Sample {
            seconds: s,
            iterations: Some(4),
            exit_code: code,
        };
        let imported = Imported {
            harness: "hyperfine",
            name: "n".into(),
            benchmarks: vec![
                Benchmark {
                    workload: "w".into(),
                    variant: "a".into(),
                    samples: vec![sample(0.1, Some(0)), sample(0.2, Some(3))],
                    summary: None,
                },
                Benchmark {
                    workload: "w".into(),
                    variant: "b".into(),
                    samples: vec![],
                    summary: Some(summary),
                },
            ],
        };
        let e = imported.into_experiment(Context {
            name: Some("given".into()),
            ..cx()
        });
        assert_eq!(e.name, "given");
        let runs: Vec<&RunRecord> = e.runs.iter().map(|r| &r.run).collect();
        assert_eq!(runs.len(), 3);
        assert_eq!((runs[1].round, runs[1].status), (1, RunStatus::Failed));
        assert_eq!(runs[1].error_tail.as_deref(), Some("exited with status 3"));
        let detail = runs[0]
            .record
            .as_ref()
            .and_then(RunDetail::imported)
            .unwrap();
        assert_eq!((detail.iterations, detail.summary), (Some(4), None));
        assert_eq!(runs[2].metrics[0].value, 0.5);
        let detail = runs[2]
            .record
            .as_ref()
            .and_then(RunDetail::imported)
            .unwrap();
        assert_eq!(detail.summary, Some(summary));
    }

    #[test]
    fn the_default_name_lists_each_benchmark_once() {
        assert_eq!(joined_name("h", &["a", "b", "a"]), "h: a vs b");
        let long = "x".repeat(200);
        assert_eq!(joined_name("h", &[&long]).chars().count(), 100);
    }
}
