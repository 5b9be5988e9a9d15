//! Load from several hosts, coordinated through PostgreSQL and merged losslessly.
//!
//! There is no kurabe protocol between hosts: coordinator and workers only
//! read and write rows of the `fleet_*` tables and wake each other with
//! `LISTEN/NOTIFY`. The tables are the results store's (its one migration
//! list creates them): callers pass a client from
//! `kurabe_store::pg::connect_migrated`, and this crate creates no table. A coordinator ([`coordinator::run`]) inserts a
//! run and one open assignment per worker; each worker ([`worker::serve`])
//! claims one with `FOR UPDATE SKIP LOCKED`, so two workers never take the
//! same share; once all are claimed the coordinator sets a common start time
//! from the database's clock and every worker converts it with its measured
//! offset to that clock ([`clock`]). Workers stream progress rows each second,
//! heartbeat, and store their HDR histograms (V2 encoding) and counters
//! ([`tally`]); the coordinator adds them up ([`kurabe_model::load_stats::Stats::merge`])
//! and builds the report with the same code a single client uses.
//!
//! This crate never prints and never sees command-line types: callers get
//! events and outcomes as data.

pub mod clock;
pub mod coordinator;
mod error;
pub mod spec;
pub mod tally;
pub mod worker;

pub use error::FleetError;

/// `LISTEN/NOTIFY` channel that wakes workers (a run was created, started or cancelled).
pub const WORK_CHANNEL: &str = "kurabe_fleet_work";
/// `LISTEN/NOTIFY` channel that wakes coordinators (a share was claimed or finished).
pub const COORD_CHANNEL: &str = "kurabe_fleet_coord";
