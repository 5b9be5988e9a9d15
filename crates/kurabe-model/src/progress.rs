//! What the runner reports as it goes and at the end, as plain data: the
//! progress events, the variant × workload pairs that never succeeded, the
//! `[[check]]` results, a revision prepared in the worktree cache, and the
//! schedule a `--dry-run` shows.
//!
//! Owns these types so `kurabe-lab` produces them and `kurabe-report`
//! words them without depending on the runner. Must not hold logic.

use std::path::PathBuf;
use std::time::Duration;

use crate::record::{ExperimentId, RunRecord};

/// What the runner reports as it goes.
#[derive(Debug)]
pub enum Event<'a> {
    /// The experiment is recorded and about to start.
    Begin {
        /// Its id in the store.
        experiment: ExperimentId,
        /// Seed of the run order.
        seed: u64,
        /// Runs planned (more may come with `--until-confident`).
        total: usize,
    },
    /// A run is about to start.
    RunStart {
        /// 1-based run number.
        index: usize,
        /// Runs planned so far.
        total: usize,
        /// 0-based round.
        round: u32,
        /// Variant name.
        variant: &'a str,
        /// Workload name.
        workload: &'a str,
    },
    /// A run finished and is in the store.
    RunDone {
        /// 1-based run number.
        index: usize,
        /// The stored record.
        record: &'a RunRecord,
    },
    /// Something the reader of the results should know (said once).
    Note(String),
    /// `--until-confident` added a round because some verdict is not settled yet.
    RoundAdded {
        /// 0-based number of the new round.
        round: u32,
    },
}

/// A variant × workload whose every run failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedCell {
    /// Variant name.
    pub variant: String,
    /// Workload name.
    pub workload: String,
    /// How many runs it had (all failed).
    pub runs: usize,
    /// The last failed run's error and stderr tail.
    pub last_error: Option<String>,
}

/// The outcome of one check on one (workload, variant).
#[derive(Debug, Clone, PartialEq)]
pub struct CheckResult {
    /// Human description: `work 100us / GET / requests_per_second: ratio 0.52 ≤ 1`.
    pub description: String,
    /// Whether it passed.
    pub passed: bool,
}

/// A revision checked out (and built) in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    /// The revision as given.
    pub rev: String,
    /// Its full commit id.
    pub commit: String,
    /// The worktree's folder.
    pub dir: PathBuf,
    /// False when an earlier run's build was reused.
    pub built_now: bool,
}

/// One run of the schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledRun {
    /// 0-based round.
    pub round: u32,
    /// Variant name.
    pub variant: String,
    /// Workload name.
    pub workload: String,
}

/// The schedule `kurabe run --dry-run` shows, and what its duration depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DryRun {
    /// The plan's name.
    pub plan: String,
    /// Variants after the matrix is expanded.
    pub variants: usize,
    /// Workloads.
    pub workloads: usize,
    /// Rounds.
    pub rounds: u32,
    /// Seed of the run order (drawn when none was given).
    pub seed: u64,
    /// Every run, in order.
    pub runs: Vec<ScheduledRun>,
    /// The part of the duration that is known from the plan.
    pub known: Duration,
    /// Workloads whose length depends on how fast they run (a number of requests or executions).
    pub unknown: Vec<String>,
    /// Whether a target is started and stopped for each run.
    pub has_target: bool,
}
