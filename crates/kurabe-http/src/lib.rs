//! kurabe's HTTP load generator and built-in target server.
//!
//! `client` owns the load generator: one epoll loop per thread driving many
//! non-blocking connections, an incremental HTTP/1.1 response parser, HDR
//! histograms merged at the end, and the failure taxonomy. `serve` owns the
//! small tunable target server used by demos, examples and tests. `auth`
//! encodes HTTP Basic credentials for both the binary and plans.
//!
//! Nothing here prints or parses command lines: callers hand in a typed
//! [`client::LoadConfig`] and get an [`kurabe_model::http::HttpReport`] back.
//! Per-request failures are counted data, never `Err`; only setup problems
//! (bad URL, unresolvable host, unreadable body file) are errors.

pub mod auth;
pub mod client;
pub mod serve;
