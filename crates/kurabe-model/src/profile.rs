//! The differential profile (issue 36): each run's on-CPU stacks, folded,
//! and the comparison of two variants' profiles function by function.
//!
//! Owns the records ([`RunProfile`], [`FoldedStack`]), why a profile was
//! not taken ([`ProfileOff`]), and [`compare_profiles`]: per function,
//! its own CPU (the samples where it is the leaf frame, as a flame
//! graph's top edge) per execution or request in each run, the
//! difference with its interval and verdict from
//! [`crate::stats::difference::compare_difference`] and the ratio from
//! [`crate::stats::compare()`] — the same rules as every other verdict.
//! Must not sample, symbolise or word anything.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::stats::difference::compare_difference;
use crate::stats::metric::Direction;
use crate::stats::{compare, Comparison, Difference, Verdict};

/// Whether the runs of an experiment are profiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profiling {
    /// No sampling.
    #[default]
    Off,
    /// On-CPU stacks sampled at this rate per CPU-second.
    Sampled {
        /// Samples per second of CPU.
        hz: u64,
    },
}

/// Why no profile was taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum ProfileOff {
    /// Perf events are not allowed to this user.
    NotAllowed {
        /// `kernel.perf_event_paranoid`, when readable.
        paranoid: Option<i32>,
    },
    /// The kernel has no perf events.
    NoPerfEvents,
    /// The process to sample had already exited.
    Gone,
    /// The process to sample is another user's (root or CAP_PERFMON
    /// may sample it).
    OtherUser {
        /// The process.
        pid: u32,
    },
    /// No local process to sample: the URL's server is not on this
    /// machine, server metrics are off, or its listener is not visible.
    NoServer,
    /// Another error, as the system worded it.
    Failed {
        /// The error.
        why: String,
    },
}

/// One stack and how often it was sampled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct FoldedStack {
    /// The frames, root first, joined by `;` (the process name first;
    /// kernel frames end in `_[k]`): the folded format flame graph tools
    /// (inferno, speedscope, FlameGraph) read.
    pub stack: String,
    /// Samples of exactly this stack.
    pub samples: u64,
}

/// One run's profile: the measured tree's folded on-CPU stacks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RunProfile {
    /// CPU time each sample stands for, nanoseconds.
    pub sample_period_ns: u64,
    /// What the CPU is divided by: the run's timed executions (or requests).
    pub divisor: u64,
    /// Whether kernel frames were sampled (`perf_event_paranoid` allowing).
    pub kernel_frames: bool,
    /// Records the kernel dropped because kurabe's ring was full.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lost_records: u64,
    /// Samples of new stacks past the bound on distinct stacks.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_samples: u64,
    /// The stacks, most sampled first.
    pub stacks: Vec<FoldedStack>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl RunProfile {
    /// Milliseconds of CPU per execution (or request) `samples` stand for.
    pub fn ms_per(&self, samples: u64) -> f64 {
        samples as f64 * self.sample_period_ns as f64 / 1e6 / self.divisor.max(1) as f64
    }

    /// All samples of the run.
    pub fn samples(&self) -> u64 {
        self.stacks.iter().map(|s| s.samples).sum()
    }

    /// The `n` functions with the most own CPU: name and ms per execution
    /// (or request), most first.
    pub fn top_functions(&self, n: usize) -> Vec<(String, f64)> {
        let mut own: Vec<(&str, u64)> = self.self_samples().into_iter().collect();
        own.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        own.truncate(n);
        own.into_iter()
            .map(|(f, s)| (f.to_owned(), self.ms_per(s)))
            .collect()
    }

    /// Samples per function where it was the leaf frame (its own CPU).
    pub fn self_samples(&self) -> BTreeMap<&str, u64> {
        let mut by = BTreeMap::new();
        for s in &self.stacks {
            let leaf = s.stack.rsplit(';').next().unwrap_or(&s.stack);
            *by.entry(leaf).or_insert(0) += s.samples;
        }
        by
    }
}

/// One function's change between the baseline's runs and the candidate's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct FunctionChange {
    /// The function (a leaf frame's name).
    pub function: String,
    /// Its own CPU in the baseline, ms per execution (mean over runs).
    pub baseline_ms: f64,
    /// Its own CPU in the candidate, ms per execution (mean over runs).
    pub candidate_ms: f64,
    /// Its part of the whole difference, percent (negative: it went the other way).
    pub share_of_difference_pct: f64,
    /// Candidate − baseline with its interval, ms per execution, judged
    /// against a band of the noise band times the baseline's whole CPU.
    pub difference: Difference,
    /// What that interval says.
    pub verdict: Verdict,
    /// The ratio of its geometric means with its interval, when every run
    /// on both sides sampled it.
    pub ratio: Comparison,
}

/// A candidate's profile against the baseline's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct ProfileComparison {
    /// The baseline variant.
    pub baseline: String,
    /// The candidate variant.
    pub candidate: String,
    /// Sampled CPU of the baseline, ms per execution (mean over runs).
    pub baseline_ms: f64,
    /// Sampled CPU of the candidate, ms per execution (mean over runs).
    pub candidate_ms: f64,
    /// The whole sampled CPU's ratio, interval and verdict.
    pub total: Comparison,
    /// The functions whose own CPU changed most, largest change first.
    pub functions: Vec<FunctionChange>,
}

/// What the profile's CPU figures are divided by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Per {
    /// A command's execution (`kurabe cmd`).
    Execution,
    /// A request served (`kurabe http`).
    Request,
}

/// One run's profile, with the variant and round it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct ProfiledRun {
    /// The variant (command) that ran.
    pub variant: String,
    /// Its round, from 0.
    pub round: u32,
    /// The samples.
    pub profile: RunProfile,
}

/// The differential profile of an experiment: every run's folded stacks
/// and every variant's comparison with the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct ProfileReport {
    /// What CPU is per.
    pub per: Per,
    /// Each profiled run, in run order.
    pub runs: Vec<ProfiledRun>,
    /// Each variant against the baseline, in variant order.
    pub comparisons: Vec<ProfileComparison>,
}

impl ProfileReport {
    /// The report of `runs`: each variant after the first named in
    /// `variants` compared with it, against `noise_band`.
    pub fn of(
        per: Per,
        runs: Vec<ProfiledRun>,
        variants: &[&str],
        noise_band: f64,
    ) -> ProfileReport {
        let of = |v: &str| -> Vec<RunProfile> {
            let mine = runs.iter().filter(|r| r.variant == v);
            mine.map(|r| r.profile.clone()).collect()
        };
        let comparisons = match variants.split_first() {
            // A variant without a profiled run (a server not on this
            // machine) has nothing to compare.
            Some((base, rest)) if !of(base).is_empty() => {
                let b = of(base);
                let profiled = rest.iter().filter(|c| !of(c).is_empty());
                let vs = |c: &&str| compare_profiles((base, c), &b, &of(c), noise_band);
                profiled.map(vs).collect()
            }
            _ => Vec::new(),
        };
        ProfileReport {
            per,
            runs,
            comparisons,
        }
    }
}

impl ProfileReport {
    /// `variant`'s stacks, each its mean CPU per execution (or request)
    /// over the variant's runs, ms: what its flame graph draws.
    pub fn mean_stacks(&self, variant: &str) -> BTreeMap<&str, f64> {
        let runs: Vec<&RunProfile> = self
            .runs
            .iter()
            .filter(|r| r.variant == variant)
            .map(|r| &r.profile)
            .collect();
        let mut out = BTreeMap::new();
        for r in &runs {
            for s in &r.stacks {
                *out.entry(s.stack.as_str()).or_insert(0.0) += r.ms_per(s.samples);
            }
        }
        let n = runs.len().max(1) as f64;
        out.values_mut().for_each(|v| *v /= n);
        out
    }
}

/// Functions kept in a comparison.
pub const TOP_FUNCTIONS: usize = 10;

/// Compare the candidate's run profiles with the baseline's, function by
/// function, against `noise_band` (relative: 0.02). Runs without samples
/// still count (as zero CPU).
pub fn compare_profiles(
    names: (&str, &str),
    baseline: &[RunProfile],
    candidate: &[RunProfile],
    noise_band: f64,
) -> ProfileComparison {
    let totals =
        |runs: &[RunProfile]| -> Vec<f64> { runs.iter().map(|r| r.ms_per(r.samples())).collect() };
    let (tb, tc) = (totals(baseline), totals(candidate));
    let (mb, mc) = (mean(&tb), mean(&tc));
    let band = noise_band * mb;
    let mut functions: Vec<FunctionChange> = function_names(baseline, candidate)
        .into_iter()
        .filter_map(|f| change(&f, baseline, candidate, band, noise_band, mc - mb))
        .collect();
    functions.sort_by(|a, b| {
        let d = |f: &FunctionChange| (f.candidate_ms - f.baseline_ms).abs();
        d(b).total_cmp(&d(a)).then(a.function.cmp(&b.function))
    });
    functions.truncate(TOP_FUNCTIONS);
    ProfileComparison {
        baseline: names.0.to_owned(),
        candidate: names.1.to_owned(),
        baseline_ms: mb,
        candidate_ms: mc,
        total: compare(&tb, &tc, Direction::LowerIsBetter, noise_band),
        functions,
    }
}

/// Every leaf function sampled on either side.
fn function_names(a: &[RunProfile], b: &[RunProfile]) -> Vec<String> {
    let mut names: Vec<String> = a
        .iter()
        .chain(b)
        .flat_map(|r| r.self_samples().into_keys().map(str::to_owned))
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// `function`'s own CPU per execution in each run.
fn per_run(function: &str, runs: &[RunProfile]) -> Vec<f64> {
    let own = |r: &RunProfile| r.ms_per(r.self_samples().get(function).copied().unwrap_or(0));
    runs.iter().map(own).collect()
}

/// One function's change; `None` when a side has no run.
fn change(
    function: &str,
    baseline: &[RunProfile],
    candidate: &[RunProfile],
    band: f64,
    noise_band: f64,
    whole: f64,
) -> Option<FunctionChange> {
    let (b, c) = (per_run(function, baseline), per_run(function, candidate));
    let (difference, verdict) = compare_difference(&b, &c, Direction::LowerIsBetter, band)?;
    let share = if whole != 0.0 {
        100.0 * difference.difference / whole
    } else {
        0.0
    };
    Some(FunctionChange {
        function: function.to_owned(),
        baseline_ms: mean(&b),
        candidate_ms: mean(&c),
        share_of_difference_pct: share,
        difference,
        verdict,
        ratio: compare(&b, &c, Direction::LowerIsBetter, noise_band),
    })
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.iter().sum::<f64>() / v.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stacks: &[(&str, u64)]) -> RunProfile {
        RunProfile {
            sample_period_ns: 1_000_000,
            divisor: 1,
            kernel_frames: true,
            lost_records: 0,
            dropped_samples: 0,
            stacks: stacks
                .iter()
                .map(|(s, n)| FoldedStack {
                    stack: (*s).into(),
                    samples: *n,
                })
                .collect(),
        }
    }

    #[test]
    fn the_function_with_the_extra_work_carries_the_difference() {
        let base: Vec<_> = [100, 104, 98, 101]
            .iter()
            .map(|n| run(&[("p;main;work", *n), ("p;main;other", 50)]))
            .collect();
        let cand: Vec<_> = [150, 149, 153, 151]
            .iter()
            .map(|n| run(&[("p;main;work", *n), ("p;main;other", 51)]))
            .collect();
        let c = compare_profiles(("a", "b"), &base, &cand, 0.02);
        let top = &c.functions[0];
        assert_eq!(top.function, "work");
        assert_eq!(top.verdict, Verdict::Worse);
        assert!(top.share_of_difference_pct > 90.0, "{top:?}");
        assert!((c.candidate_ms - c.baseline_ms - 50.5).abs() < 1.0);
        let other = c.functions.iter().find(|f| f.function == "other").unwrap();
        assert_ne!(other.verdict, Verdict::Worse);
    }

    #[test]
    fn a_function_missing_from_some_runs_has_a_difference_but_no_ratio() {
        let base = vec![
            run(&[("p;f", 10)]),
            run(&[("p;g", 10)]),
            run(&[("p;f", 10)]),
        ];
        let cand = base.clone();
        let c = compare_profiles(("a", "a"), &base, &cand, 0.02);
        let g = c.functions.iter().find(|f| f.function == "g").unwrap();
        assert!(g.ratio.ratio_low.is_none());
        assert!(g.difference.difference.abs() < 1e-9);
    }
}
