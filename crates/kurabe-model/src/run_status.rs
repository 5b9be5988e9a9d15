//! Whether one run produced its metrics ([`RunStatus`]).
//!
//! Its own module below the records and the HTTP comparison, which both
//! name it (`record` re-exports it). Plain data.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Outcome of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The run produced its metrics.
    Ok,
    /// The target failed to start or died, or the workload failed.
    Failed,
}

impl RunStatus {
    /// The word stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Failed => "failed",
        }
    }
}
