//! The database's clock as the fleet's common time base.
//!
//! Hosts' clocks may disagree by more than the precision a common start
//! needs; the database server's clock is one clock everyone can read. A
//! worker asks for `clock_timestamp()` a few times, keeps the sample with the
//! shortest round trip and assumes the server read its clock halfway through
//! it (the NTP estimate), so the error is at most half that round trip.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use postgres::Client;

use crate::error::db;
use crate::FleetError;

/// Local Unix time, seconds.
pub fn local_now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

/// Offset of the database clock from the local clock, with its error bound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockOffset {
    /// Database time minus local time, seconds.
    pub offset_s: f64,
    /// Half the round trip of the best sample, seconds.
    pub uncertainty_s: f64,
}

impl ClockOffset {
    /// A database timestamp (Unix seconds) in local Unix seconds.
    pub fn to_local(&self, db_time_s: f64) -> f64 {
        db_time_s - self.offset_s
    }

    /// How long from now until the database time `db_time_s` (zero if past).
    pub fn until(&self, db_time_s: f64) -> Duration {
        Duration::from_secs_f64((self.to_local(db_time_s) - local_now_s()).max(0.0))
    }
}

/// Pick the sample with the shortest round trip: `(local_before, db, local_after)`.
pub fn best_offset(samples: &[(f64, f64, f64)]) -> Option<ClockOffset> {
    samples
        .iter()
        .min_by(|a, b| (a.2 - a.0).total_cmp(&(b.2 - b.0)))
        .map(|&(before, db_s, after)| ClockOffset {
            offset_s: db_s - (before + after) / 2.0,
            uncertainty_s: (after - before) / 2.0,
        })
}

/// Measure the offset with `samples` round trips.
pub fn measure(client: &mut Client, samples: usize) -> Result<ClockOffset, FleetError> {
    let stmt = client
        .prepare("SELECT extract(epoch FROM clock_timestamp())::float8")
        .map_err(db("cannot read the database clock"))?;
    let mut taken = Vec::with_capacity(samples);
    for _ in 0..samples.max(1) {
        let before = local_now_s();
        let db_s: f64 = client
            .query_one(&stmt, &[])
            .map_err(db("cannot read the database clock"))?
            .get(0);
        taken.push((before, db_s, local_now_s()));
    }
    Ok(best_offset(&taken).expect("at least one sample"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortest_round_trip_wins_and_midpoint_is_assumed() {
        let o = best_offset(&[(0.0, 105.0, 0.2), (1.0, 101.05, 1.1)]).unwrap();
        assert!((o.offset_s - 100.0).abs() < 1e-9, "{o:?}");
        assert!((o.uncertainty_s - 0.05).abs() < 1e-9);
        assert!((o.to_local(200.0) - 100.0).abs() < 1e-9);
    }
}
