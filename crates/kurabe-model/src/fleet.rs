//! The fleet's plain data shared with the renderers: one worker's share of
//! a distributed run, and what workers and coordinators report as they go.
//!
//! Owns these types so `kurabe-fleet` produces them and `kurabe-report`
//! words them. Must not hold logic.

use serde::{Deserialize, Serialize};

use crate::http::HttpReport;

/// One worker's part of a distributed run (`kurabe_fleet::spec::RunSpec`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Share {
    /// Slot number, 0-based.
    pub slot: u32,
    /// Connections this worker opens.
    pub concurrency: u32,
    /// Requests this worker sends (runs bounded by `-n`).
    pub requests: Option<u64>,
    /// Arrival rate this worker keeps (open model).
    pub rate: Option<f64>,
    /// Rate stages (`--stage 30s:200`): this worker's part of every
    /// stage's target rate (1 / workers), so the parts add up to the
    /// ramp; absent without stages (and in shares filed before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage_part: Option<f64>,
}

/// Something a worker did, for the caller to log.
#[derive(Debug, Clone)]
pub enum WorkerEvent {
    /// Registered as this `fleet_workers.id`.
    Registered {
        /// Worker id.
        worker_id: i64,
    },
    /// Took a share of a run.
    Claimed {
        /// Run id.
        run_id: i64,
        /// The share.
        share: Share,
        /// The run's experiment name.
        experiment: String,
    },
    /// The run got its start time; the load begins in `in_s` seconds.
    Starting {
        /// Run id.
        run_id: i64,
        /// Seconds until the start.
        in_s: f64,
        /// Database time minus local time, seconds.
        clock_offset_s: f64,
        /// Half the round trip of the clock reading, seconds (the offset's error bound).
        clock_uncertainty_s: f64,
    },
    /// The share ran and its result is stored.
    Finished {
        /// Run id.
        run_id: i64,
        /// The share's own report.
        report: Box<HttpReport>,
    },
    /// The share could not run (setup error); stored as failed.
    Failed {
        /// Run id.
        run_id: i64,
        /// Why.
        error: String,
    },
    /// The run was cancelled or failed before this worker's load started.
    Abandoned {
        /// Run id.
        run_id: i64,
        /// The run's state.
        reason: String,
    },
}

/// Something the coordinator saw, for the caller to show.
#[derive(Debug, Clone)]
pub enum CoordEvent {
    /// The run exists; waiting for workers.
    Created {
        /// Run id.
        run_id: i64,
    },
    /// Shares claimed so far.
    Claimed {
        /// Claimed.
        claimed: u32,
        /// Wanted.
        wanted: u32,
    },
    /// All claimed; load starts in `in_s` seconds.
    Started {
        /// Seconds to the start.
        in_s: f64,
    },
    /// Sum of the workers' latest progress rows.
    Progress {
        /// Completed responses.
        completed: u64,
        /// Failed requests.
        failed: u64,
        /// Longest elapsed time reported, seconds.
        elapsed_s: f64,
    },
    /// A worker was declared lost.
    Lost {
        /// Its slot.
        slot: u32,
        /// Its name.
        worker: String,
        /// Why.
        note: String,
    },
}
