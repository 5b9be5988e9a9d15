//! A replay (`kurabe replay`) as the engine runs it: when each send of
//! the run is due and which recorded request it sends. The recorded
//! requests' bytes are a request set's table (`super::set::Table`, built
//! once before the run), whose target is chosen here, by the schedule's
//! index, instead of by a `Picker`.
//!
//! Send `i` of the run (the open-model schedule's global index) is
//! recorded request `i mod n` of loop `i / n`, intended at `loop · period
//! + offset` after the run's start, so the recording's order and gaps are
//! the schedule and latency counts from each intended time (coordinated
//! omission corrected, as `--rate`).
//!
//! Owns the table and the arithmetic. Must not read logs (`load::replay`
//! does) nor allocate per request: a send is a division and a lookup.

use std::sync::Arc;

use crate::replay::Replay;

/// What every worker reads to send a replay's requests on time.
#[derive(Debug)]
pub(crate) struct ReplayTable {
    /// Per recorded request: ns after the run's start, in the first loop.
    offsets_ns: Vec<u64>,
    /// ns between the starts of two loops.
    period_ns: u64,
    /// Sends in all (every loop).
    total: u64,
}

impl ReplayTable {
    /// The timeline of `replay`.
    pub fn new(replay: &Replay) -> Arc<ReplayTable> {
        Arc::new(ReplayTable {
            offsets_ns: replay.offsets_ns.clone(),
            period_ns: replay.period_ns,
            total: replay.total(),
        })
    }

    /// ns after the run's start at which send `i` is due (`i < total`).
    #[inline]
    pub fn at(&self, i: u64) -> u64 {
        let n = self.offsets_ns.len() as u64;
        (i / n) * self.period_ns + self.offsets_ns[(i % n) as usize]
    }

    /// The recorded request send `i` sends.
    #[inline]
    pub fn target(&self, i: u64) -> u32 {
        (i % self.offsets_ns.len() as u64) as u32
    }

    /// Sends in all.
    pub fn total(&self) -> u64 {
        self.total
    }
}
