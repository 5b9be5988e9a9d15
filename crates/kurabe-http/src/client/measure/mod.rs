//! What a run measures and hands on, beside the counters and histograms
//! (the model's `load_stats`).
//!
//! Owns `record` (counting one complete response, for every protocol),
//! `series` (per-interval rows), `live` (snapshots for the live view and
//! Prometheus), `gnuplot` (ab's `-g` tap) and `tls_summary` (the TLS
//! session a run used, as data).
//!
//! Must not drive connections or decide when requests go; it reads what the
//! engine hands it.

pub(crate) mod gnuplot;
pub(crate) mod live;
pub(crate) mod record;
pub(crate) mod series;
pub(crate) mod tls_summary;
