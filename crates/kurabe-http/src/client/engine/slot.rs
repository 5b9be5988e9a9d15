//! One request in flight, as every worker tracks it whatever the protocol:
//! when it started, was sent and was meant to be sent, whether it counts,
//! and what it is reported as and checked by (its [`Tag`]).
//!
//! Owns the per-request clock readings. Must not do I/O or count anything
//! (the worker stamps it, [`crate::client::measure::record`] counts it).

use crate::tags::Tag;

/// Per in-flight request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    /// When the request started: connect start for a new connection, else the write.
    pub start: u64,
    /// When it was handed to the kernel (or 0 while not yet written).
    pub sent: u64,
    /// Open model: the intended send time (0 in the closed model).
    pub intended: u64,
    /// Connect time attributed to this request (ab: the first on a connection).
    pub connect_ns: u64,
    /// Claimed during the measured phase (warm-up requests are not counted).
    pub measured: bool,
    /// Which target of the request set (or recorded request of a replay)
    /// it sends (0 otherwise).
    pub target: u32,
    /// Its name in the breakdown and its checks ([`crate::tags::Labels`]);
    /// set by whoever picks the request (default: the run's one request).
    pub tag: Tag,
}
