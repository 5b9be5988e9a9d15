//! The load generator. See [`LoadConfig`] for what a run takes and [`run`] for what it does.

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Duration;

/// A parsed `http://` or `https://` target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// True for `https://`.
    pub tls: bool,
    /// Host as written (IPv6 literals without brackets).
    pub host: String,
    /// Port (default 80 / 443).
    pub port: u16,
    /// Path and query, at least "/".
    pub path: String,
}

/// When a closed-model run stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopCondition {
    /// After this many requests have been answered or failed (`-n`).
    Requests(u64),
    /// After this long (`-t` without `-n`): no hidden request cap.
    Duration(Duration),
    /// Whichever comes first (`-n` and `-t`).
    RequestsOrDuration(u64, Duration),
}

/// Everything a load test needs, validated.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// Where to send requests.
    pub target: Target,
    /// Request method (`GET`, `HEAD` with `-i`, `POST` with `-p`, `PUT` with `-u`, or `-m`).
    pub method: String,
    /// Extra request headers (`-H`, `-C`, `-A`, `-T`), in order; a user `Host:` replaces ours.
    pub headers: Vec<(String, String)>,
    /// Request body (`-p` / `-u` file contents).
    pub body: Option<Vec<u8>>,
    /// Concurrent connections (`-c`).
    pub concurrency: u32,
    /// Client threads; connections are spread evenly over them.
    pub threads: u32,
    /// Reuse connections (`-k`). Without it every request opens a new connection, as ab does.
    pub keep_alive: bool,
    /// Requests in flight per connection (HTTP/1.1 pipelining); 1 = off.
    pub pipeline: u32,
    /// When to stop.
    pub stop: StopCondition,
    /// Open model: constant arrival rate in requests per second over all connections.
    pub rate: Option<f64>,
    /// Load applied before measuring, not counted.
    pub warmup: Option<Duration>,
    /// Per-request timeout (`-s`): connect, send and full response.
    pub timeout: Duration,
    /// Stop at the first failure (ab's behaviour without `-r`).
    pub abort_on_error: bool,
    /// Count responses whose body length differs from the first as `length` failures (ab without `-l`).
    pub check_length: bool,
    /// Skip TLS certificate verification.
    pub insecure: bool,
    /// Write one line per request (ab's `-g` gnuplot TSV) to this file, streamed, not kept in memory.
    pub gnuplot_file: Option<std::path::PathBuf>,
}

/// Live counters a caller may read while a run is in progress (for a progress line).
#[derive(Debug, Default)]
pub struct Progress {
    /// Completed responses so far (measured phase only).
    pub completed: AtomicU64,
    /// Failed requests so far (measured phase only).
    pub failed: AtomicU64,
}

/// Shared control of a running load test.
#[derive(Debug, Default)]
pub struct RunControl {
    /// Set by the caller (e.g. on Ctrl-C) to stop early; the report is marked interrupted.
    pub stop: AtomicBool,
    /// Updated by the workers.
    pub progress: Progress,
}
