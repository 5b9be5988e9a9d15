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
    /// Connection stages (closed model): the open connections the stages
    /// aimed at over the interval (their mean; the ramp is linear).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_connections: Option<f64>,
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
pub const CSV_COLUMNS: [&str; 13] = [
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
    "target_connections",
];

/// The rows' sums of (sent, completed, failed, dropped): a complete series
/// sums to the run's own totals.
pub fn sums(rows: &[Interval]) -> (u64, u64, u64, u64) {
    rows.iter().fold((0, 0, 0, 0), |(s, c, f, d), r| {
        (s + r.sent, c + r.completed, f + r.failed, d + r.dropped)
    })
}

/// Several loads' series as one, each second the sum of the loads' rows
/// for that second (a distributed run's workers, all started at the
/// common start, so row *i* of each is the same second).
///
/// Exact: `sent`, `completed`, `failed`, `dropped`, `target_per_s` and
/// `target_connections` (sums) and `latency_max_us` (the largest). The rows hold no
/// histogram, so `latency_p50_us`, `latency_p90_us` and `latency_p99_us`
/// are the highest of the loads' for that second: an upper bound of the
/// merged percentile, exact with one load. A row is as long as the
/// longest of its second's, and `achieved_per_s` is `sent` over that.
pub fn merge(loads: &[&[Interval]]) -> Vec<Interval> {
    let seconds = loads.iter().map(|l| l.len()).max().unwrap_or(0);
    (0..seconds)
        .map(|i| merge_rows(loads.iter().filter_map(|l| l.get(i))))
        .collect()
}

/// Two loads' targets added (`None` when neither has one).
fn sum_of(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    }
}

/// One second of [`merge`].
fn merge_rows<'a>(rows: impl Iterator<Item = &'a Interval>) -> Interval {
    let mut m = Interval::default();
    let mut first = true;
    for r in rows {
        m.start_s = if first {
            r.start_s
        } else {
            m.start_s.min(r.start_s)
        };
        first = false;
        m.duration_s = m.duration_s.max(r.duration_s);
        m.sent += r.sent;
        m.completed += r.completed;
        m.failed += r.failed;
        m.dropped += r.dropped;
        m.target_per_s = sum_of(m.target_per_s, r.target_per_s);
        m.target_connections = sum_of(m.target_connections, r.target_connections);
        m.latency_p50_us = m.latency_p50_us.max(r.latency_p50_us);
        m.latency_p90_us = m.latency_p90_us.max(r.latency_p90_us);
        m.latency_p99_us = m.latency_p99_us.max(r.latency_p99_us);
        m.latency_max_us = m.latency_max_us.max(r.latency_max_us);
    }
    if m.duration_s > 0.0 {
        m.achieved_per_s = m.sent as f64 / m.duration_s;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_rows_sum_the_counts_second_by_second() {
        let row = |start_s: f64, duration_s: f64, sent: u64, p99: u64| Interval {
            start_s,
            duration_s,
            sent,
            completed: sent,
            failed: 1,
            achieved_per_s: sent as f64 / duration_s,
            target_per_s: Some(10.0),
            latency_p50_us: p99 / 2,
            latency_p99_us: p99,
            latency_max_us: p99 * 2,
            ..Interval::default()
        };
        let a = [row(0.0, 1.0, 10, 100), row(1.0, 0.5, 5, 300)];
        let b = [row(0.0, 1.0, 12, 200)];
        let m = merge(&[&a, &b]);
        assert_eq!(m.len(), 2);
        assert_eq!(sums(&m), (27, 27, 3, 0));
        assert_eq!(sums(&m), {
            let (x, y) = (sums(&a), sums(&b));
            (x.0 + y.0, x.1 + y.1, x.2 + y.2, x.3 + y.3)
        });
        assert_eq!(
            (m[0].sent, m[0].achieved_per_s, m[0].target_per_s),
            (22, 22.0, Some(20.0))
        );
        assert_eq!((m[0].latency_p99_us, m[0].latency_max_us), (200, 400));
        assert_eq!(
            (m[1].start_s, m[1].duration_s, m[1].achieved_per_s),
            (1.0, 0.5, 10.0)
        );
        assert_eq!(m[1].target_per_s, Some(10.0));
        assert_eq!(merge(&[]), Vec::new());
    }

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
