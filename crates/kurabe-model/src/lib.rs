//! kurabe's shared vocabulary.
//!
//! This crate owns the types every other kurabe crate agrees on: result
//! records (versioned, snake_case JSON with units in field names), units and
//! metrics, and the statistics that turn samples into verdicts.
//!
//! It must not do I/O, parse command lines, spawn threads or know about any
//! particular renderer. Everything here is plain data and pure functions.

pub mod bench;
pub mod capacity;
pub mod counters;
pub mod ending;
pub mod experiment;
pub mod failures;
pub mod fleet;
pub mod given;
pub mod history;
pub mod host;
pub mod http;
pub mod imported;
pub mod layout;
pub mod load;
pub mod load_stats;
pub mod noise;
pub mod notice;
pub mod plan;
pub mod probe;
pub mod profile;
pub mod progress;
pub mod quantity;
pub mod record;
pub mod recorded;
pub mod replay;
pub mod run_detail;
pub mod run_status;
pub mod saved;
pub mod schema;
pub mod schema_files;
pub mod series;
pub mod stage;
pub mod stats;
pub mod system;
pub mod threshold;
pub mod time;
pub mod tree_counters;

/// Version of the JSON result schema shared by output and the results store.
///
/// Bump on any incompatible change to a serialized record and add a migration.
pub const SCHEMA_VERSION: u32 = 1;
