//! Every way a run's requests are produced, one home: a request set
//! (`set`: its targets file's grammar in `targets`, the file read and
//! checked in `set::read`, the fast scan and the index of a large file in
//! `set::scan` and `set::index`, standard input's spool in `set::spool`,
//! a streamed set's feeder in `set::feed`, the table and the orders in
//! `set` itself), a replay (`replay`: access logs and HAR files read
//! into timed requests, and `replay::read`, a spec's replay checked and
//! read), and what every kind becomes for the workers, the bytes on the
//! wire (`wire`). The one URL's request is the resolved load's own
//! (`crate::client::Requests::One`).
//!
//! Owns reading and holding what is sent. Must not send it (`client`),
//! nor decide when (`client::schedule`), nor print.

pub mod replay;
pub(crate) mod set;
pub mod targets;
pub(crate) mod wire;
