//! The start time of a run as RFC 3339 UTC (no date crate needed for that).
//! The machine's facts come from `kurabe_probe::host`, the one reader.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, as `YYYY-MM-DDTHH:MM:SSZ`.
pub(crate) fn rfc3339_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    kurabe_model::time::rfc3339_secs(secs)
}
