//! What a command tells its user on stderr beside its report — a note on
//! the figures, a file written, a result saved, why it stopped — as data.
//!
//! Owns the kinds of these messages and what each carries. Must not hold
//! their words: `kurabe_report::notice` composes every line, so the text
//! lives in one crate and a caller (the binary, a library returning notes
//! with its result) only picks a kind.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::http::ErrorBucket;
use crate::record::{EntryId, ExperimentId, ResultId};

/// One message for the user, beside the report.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// A loopback URL's port has no listener this user can see: the
    /// server's figures are off.
    NoListener {
        /// The URL's port.
        port: u16,
    },
    /// A loopback URL's port has a listener, but its process is not
    /// visible to this user (another user's): the server's figures are off.
    ListenerHidden {
        /// The URL's port.
        port: u16,
    },
    /// The server's figures are off because watching it failed.
    ServerMetricsOff {
        /// The probe's error.
        why: String,
    },
    /// The server process exited while the load ran.
    ServerExited {
        /// Its pid.
        pid: u32,
    },
    /// The hardware counters (instructions, …) were not counted, and why.
    HardwareOff {
        /// Why.
        why: crate::tree_counters::HardwareOff,
    },
    /// `--profile`: no stacks are sampled, and why; the comparison runs
    /// without them (with `--profile=required`: nothing runs, exit 2).
    ProfileOff {
        /// Why.
        why: crate::profile::ProfileOff,
    },
    /// `--profile`: user-space stacks only (kernel frames not allowed).
    ProfileUserOnly {
        /// `kernel.perf_event_paranoid`, when readable.
        paranoid: Option<i32>,
    },
    /// The server's sampler skipped part of the tree (its own note).
    ServerSkipped {
        /// What was skipped.
        note: String,
    },
    /// A note a library returned already worded (fleet, set resolution).
    Note {
        /// The note.
        text: String,
    },
    /// The run had more request names than a breakdown keeps a row for:
    /// the names after the first `kept` share one row (the totals count
    /// every request).
    NamesFolded {
        /// Names with a row of their own.
        kept: usize,
        /// The row the others share.
        row: String,
    },
    /// A per-request file (`-e`, `-g`, ...) was not written: no response.
    NotWritten {
        /// The flag of the file.
        flag: String,
    },
    /// The live metrics endpoint is up.
    ServingMetrics {
        /// The address it listens on.
        addr: SocketAddr,
    },
    /// A single result was saved (`--save`).
    SavedResult {
        /// Its id.
        id: ResultId,
        /// Its label.
        label: String,
    },
    /// An experiment was kept in the store.
    SavedExperiment {
        /// Its id.
        id: ExperimentId,
    },
    /// A report was written to a file (`-o`).
    Wrote {
        /// The file.
        path: PathBuf,
    },
    /// `kurabe results export -o`: entries written to a file.
    Exported {
        /// How many entries.
        entries: usize,
        /// The file.
        path: PathBuf,
    },
    /// `kurabe man --out-dir`: pages written.
    ManPages {
        /// How many pages.
        pages: usize,
        /// The folder.
        dir: PathBuf,
    },
    /// `kurabe site`: the site written.
    Site {
        /// Plans on the site.
        plans: usize,
        /// Its folder.
        dir: PathBuf,
        /// Pages written.
        written: usize,
        /// Pages left as they were.
        unchanged: usize,
    },
    /// `kurabe serve --http3` made a self-signed certificate and wrote it here.
    ServeCertificate {
        /// The PEM file a client trusts.
        path: PathBuf,
    },
    /// `kurabe serve` stopped.
    ServeStopped {
        /// Requests it answered.
        requests: u64,
    },
    /// Some thresholds failed, each with what was measured.
    ThresholdsFailed {
        /// `(threshold, what was measured)` of each failed one.
        failed: Vec<(String, String)>,
        /// Thresholds in all.
        of: usize,
    },
    /// Thresholds of an experiment's variants failed (`kurabe run`,
    /// `kurabe check`), each named with its workload and variant.
    VariantThresholdsFailed {
        /// `(workload/variant, threshold, worst measured)` of each failed one.
        failed: Vec<(String, String, String)>,
        /// Thresholds in all.
        of: usize,
    },
    /// An A/B of URLs where some URL never had a successful round.
    NoRoundSucceeded {
        /// Those URLs.
        urls: Vec<String>,
    },
    /// The run was interrupted (Ctrl-C, a signal).
    Interrupted,
    /// `kurabe system` was interrupted; the report holds what finished.
    SystemInterrupted,
    /// `kurabe noise`: the workload failed while it was measured.
    NoiseWorkloadFailed {
        /// Why.
        why: String,
    },
    /// A signal ends kurabe at once, without waiting for the work in
    /// flight to stop: a second signal, or the first one's grace ran out.
    ExitingAtOnce {
        /// The grace in seconds when it ran out; `None` for a second signal.
        grace_s: Option<u64>,
    },
    /// A load test as a whole failed (`kurabe http` exits 1).
    LoadFailed(LoadFailure),
    /// A benchmarked command failed.
    CommandFailed {
        /// Why.
        why: String,
        /// Whether to suggest `-i/--ignore-failure`.
        suggest_ignore: bool,
    },
}

/// Why a load test as a whole failed, with what its report says failed.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadFailure {
    /// Nothing ended at all: the run stopped before any request did.
    NothingEnded,
    /// Requests ended, and every one failed.
    NoneSucceeded {
        /// The failure kinds with their first error and count.
        errors: Vec<ErrorBucket>,
        /// Requests that ended.
        ended: u64,
    },
    /// More failed than `--max-error-rate` allows.
    AboveMaxErrorRate {
        /// The failed fraction.
        rate: f64,
        /// The most allowed.
        max: f64,
        /// The failure kinds with their first error and count.
        errors: Vec<ErrorBucket>,
        /// Requests that ended.
        ended: u64,
    },
}

/// What an import or copy added to a store (`kurabe results import|copy`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Added {
    /// The new ids, in order; with the ids they were copied from, for a copy.
    pub ids: Vec<(Option<EntryId>, EntryId)>,
    /// The store read (a copy's source), without password.
    pub from: Option<PathBuf>,
    /// The store added to, without password.
    pub to: PathBuf,
}
