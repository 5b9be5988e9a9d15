//! A load's figures second by second: one [`Interval`] per second of the
//! measured phase (the last one may be shorter), in the JSON record of
//! every `kurabe http` run, in `--series-csv` and drawn in the HTML report.
//!
//! Owns the row's fields, their units and the one check every reader
//! relies on ([`sums`]: the rows add up to the run's totals). Must not
//! measure: the engine fills the rows, computing each row's percentiles
//! from a histogram of that second alone and keeping only the numbers
//! (about 100 bytes a second whatever the load: 350 KiB an hour).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One second (or the last, shorter part) of the measured phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct Interval {
    /// Start of the interval, seconds since the measured phase began.
    pub start_s: f64,
    /// Length of the interval, seconds (1 but for the last).
    pub duration_s: f64,
    /// Requests written in the interval.
    pub sent: u64,
    /// Complete responses received in the interval.
    pub completed: u64,
    /// Requests that failed in the interval.
    pub failed: u64,
    /// Open model: sends the schedule meant that no connection could take
    /// within the request timeout, given up in the interval.
    #[serde(default)]
    pub dropped: u64,
    /// `sent / duration_s`.
    pub achieved_per_s: f64,
    /// Open model: the arrival rate the schedule aimed at over the
    /// interval (its mean; a stage's ramp is linear), requests per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_per_s: Option<f64>,
    /// Median latency of the responses completed in the interval, µs (0: none).
    pub latency_p50_us: u64,
    /// 90th percentile, µs.
    pub latency_p90_us: u64,
    /// 99th percentile, µs.
    pub latency_p99_us: u64,
    /// Largest, µs.
    pub latency_max_us: u64,
}

/// The column names of `--series-csv`, in order.
pub const CSV_COLUMNS: [&str; 12] = [
    "start_s",
    "duration_s",
    "sent",
    "completed",
    "failed",
    "dropped",
    "achieved_per_s",
    "target_per_s",
    "latency_p50_us",
    "latency_p90_us",
    "latency_p99_us",
    "latency_max_us",
];

/// The rows' sums of (sent, completed, failed, dropped): a complete series
/// sums to the run's own totals.
pub fn sums(rows: &[Interval]) -> (u64, u64, u64, u64) {
    rows.iter().fold((0, 0, 0, 0), |(s, c, f, d), r| {
        (s + r.sent, c + r.completed, f + r.failed, d + r.dropped)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_sum_and_a_row_is_small() {
        let r = Interval {
            sent: 3,
            completed: 2,
            failed: 1,
            dropped: 4,
            ..Interval::default()
        };
        assert_eq!(sums(&[r, r]), (6, 4, 2, 8));
        // An hour of rows in memory stays far under issue 25's 8 MiB.
        assert!(std::mem::size_of::<Interval>() * 3600 < 512 * 1024);
    }
}
