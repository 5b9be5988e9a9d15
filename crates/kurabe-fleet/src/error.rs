//! The fleet's typed errors: each message names the flag or the setting and the fix.

/// Why a distributed run or a worker could not do its job.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// A setting that cannot work (bad split, missing stop condition).
    #[error("{0}")]
    Invalid(String),
    /// The database refused or dropped a statement.
    #[error("PostgreSQL: {context}: {source}")]
    Db {
        /// What kurabe was doing.
        context: &'static str,
        /// The driver's error (never contains the password).
        #[source]
        source: postgres::Error,
    },
    /// Fewer workers than `--workers` claimed the run in time.
    #[error("only {claimed} of {wanted} workers took the run within {waited_s:.0} s: start more `kurabe worker --store …` (same database), lower --workers or raise --wait-workers")]
    NotEnoughWorkers {
        /// Workers that claimed a share.
        claimed: u32,
        /// `--workers`.
        wanted: u32,
        /// How long the coordinator waited.
        waited_s: f64,
    },
    /// No worker delivered a result (all died or failed).
    #[error("no worker delivered a result: {0}")]
    NoResults(String),
    /// A stored histogram could not be decoded.
    #[error("a stored histogram is corrupt: {0}")]
    Histogram(String),
    /// A stored JSON document could not be read.
    #[error("a stored {what} is not valid JSON: {source}")]
    Json {
        /// Which document.
        what: &'static str,
        /// Parser error.
        #[source]
        source: serde_json::Error,
    },
}

/// Attach `context` to a driver error.
pub(crate) fn db(context: &'static str) -> impl FnOnce(postgres::Error) -> FleetError {
    move |source| FleetError::Db { context, source }
}

/// Attach `what` to a JSON error.
pub(crate) fn json(what: &'static str) -> impl FnOnce(serde_json::Error) -> FleetError {
    move |source| FleetError::Json { what, source }
}
