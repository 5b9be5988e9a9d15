//! Result record of one HTTP load test (`kurabe http`).
//!
//! Field names carry their unit (`_us`, `_bytes`, `_s`). The record is what
//! the load generator returns and what every renderer (text in ab's layout,
//! JSON, Markdown, CSV) reads; nothing here knows how it is printed.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::failures::Failures;

/// Everything one `kurabe http` run measured. (`Default` is an empty record
/// to fill in, with `schema_version` 0: set it before the record leaves.)
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(
    title = "kurabe http report",
    description = "Result of one `kurabe http` load test (kurabe_model::http::HttpReport). Units are in the field names."
)]
pub struct HttpReport {
    /// Schema version of this record ([`crate::SCHEMA_VERSION`]).
    #[schemars(range(min = 1))]
    pub schema_version: u32,
    /// kurabe version that produced the record.
    pub tool_version: String,
    /// Wall-clock start of the measured phase, RFC 3339 UTC.
    pub started_at: String,
    /// The URL as given.
    pub url: String,
    /// HTTP method sent.
    pub method: String,
    /// `Server:` header of the first response, if any.
    #[schemars(required, transform = crate::schema::nullable)]
    pub server_software: Option<String>,
    /// Host part of the URL.
    pub server_hostname: String,
    /// Port connected to.
    pub server_port: u16,
    /// Path and query requested.
    pub document_path: String,
    /// Body length of the first successful response (ab's "Document Length").
    pub document_length_bytes: u64,
    /// Number of concurrent connections (`-c`).
    pub concurrency: u32,
    /// Client threads used.
    pub threads: u32,
    /// Whether connections were kept alive between requests (`-k`).
    pub keep_alive: bool,
    /// Requests in flight per connection (`--pipeline`, 1 = no pipelining).
    pub pipeline: u32,
    /// The protocol that ran: `http/1.1`, `h2c` (HTTP/2 with prior
    /// knowledge over plain TCP), `h2` (HTTP/2 over TLS, by ALPN) or `h3`
    /// (HTTP/3 over QUIC).
    #[serde(default = "http11")]
    #[schemars(required, extend("enum" = ["http/1.1", "h2c", "h2", "h3"]))]
    pub protocol: String,
    /// HTTP/2 runs only (`--http2`): streams per connection and the
    /// protocol events that are not failures of their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http2: Option<Http2Summary>,
    /// HTTP/3 runs only (`--http3`): streams per connection, the protocol
    /// events that are not failures of their own, and what QUIC measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http3: Option<Http3Summary>,
    /// A request set's run only (`--targets`): where the set came from,
    /// its order and the seed that drew it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<SetSummary>,
    /// Length of the measured phase (excludes warm-up), seconds.
    pub duration_s: f64,
    /// Warm-up that ran before measuring and is not counted, seconds.
    pub warmup_s: f64,
    /// True when the run was cut short by Ctrl-C (or a fatal abort with `--abort-on-error`).
    pub interrupted: bool,
    /// Responses received completely (any status).
    pub complete_requests: u64,
    /// Requests that failed, the sum of `failures`.
    pub failed_requests: u64,
    /// Failed requests by kind.
    pub failures: Failures,
    /// One entry per failure kind that occurred, with the first error seen of
    /// that kind, so a report says *why* requests failed (refused, TLS alert …).
    #[serde(default)]
    pub errors: Vec<ErrorBucket>,
    /// Complete responses with a status outside 200..=299.
    pub non_2xx_responses: u64,
    /// Complete responses to requests sent on a connection that had already
    /// answered one (ab's "Keep-Alive requests", counted as real reuse).
    #[serde(default)]
    pub keep_alive_requests: u64,
    /// With keep-alive: connections opened again because the server ended
    /// one (`Connection: close`, an HTTP/1.0 answer, an idle close).
    #[serde(default)]
    pub reconnects: u64,
    /// Complete responses by status code ("200" → count).
    #[schemars(extend("propertyNames" = { "pattern": "^[0-9]{3}$" }))]
    pub status_codes: BTreeMap<String, u64>,
    /// Requests written to the wire but not answered when the time limit (or Ctrl-C) hit.
    pub in_flight_at_end: u64,
    /// `complete_requests / duration_s`.
    pub requests_per_second: f64,
    /// Bytes received, headers and bodies (ab's "Total transferred").
    pub transfer_bytes: u64,
    /// Body bytes received (ab's "HTML transferred").
    pub body_bytes: u64,
    /// Bytes of request bodies sent (ab's "Total body sent"), 0 without `-p`/`-u`.
    pub sent_body_bytes: u64,
    /// Latency of complete requests to the last byte, from the connect (new
    /// connection, as ab) or the write (reused connection), or from the intended
    /// send time with `--rate`.
    pub latency_us: LatencySummary,
    /// ab's "Percentage of the requests served within a certain time" table.
    pub latency_percentiles_us: Vec<PercentileValue>,
    /// ab's "Connection Times" table.
    pub connection_times_us: ConnectionTimes,
    /// ab's `-e` rows: the latency within which 0 %, 1 % … 100 % of the
    /// requests were served (101 values, or none). Not part of the record:
    /// the `-e` file is its only reader.
    #[serde(skip)]
    pub percent_served_us: Vec<u64>,
    /// Open-model (`--rate`) figures; absent in the closed model.
    #[schemars(required, transform = crate::schema::nullable)]
    pub rate: Option<RateInfo>,
    /// Server-side CPU and memory, when the server is a local process kurabe could watch.
    #[schemars(required, transform = crate::schema::nullable)]
    pub server: Option<ServerMetrics>,
    /// Distributed runs only (`--workers N`): one row per worker share and the
    /// notes about lost workers. The figures above are then the lossless merge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<FleetSummary>,
    /// The client I/O engine that ran (`epoll` or `io_uring`); absent in
    /// records made before the choice existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// `https://` runs only: what the TLS handshake settled on (ab's
    /// "SSL/TLS Protocol" and "Server Temp Key" lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsSummary>,
    /// The response checks the run applied (`--check`, then the targets'
    /// own), each once; absent when nothing was checked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
    /// The run's thresholds (`--threshold`, a plan's `thresholds`), each
    /// judged on the whole run's figures, in the order given; absent when
    /// none was given. Any `pass: false` fails the run (exit 99).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<crate::threshold::ThresholdResult>,
    /// The per-request breakdown: one row per request name (a target's
    /// name, its URL, or a `--group` NAME), in first-seen order. Absent
    /// when the run had one name only: the figures above are then its row.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<RequestStats>,
    /// `kurabe replay` only: what was read from the log, replayed and
    /// skipped, and the pace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<crate::replay::ReplaySummary>,
    /// `--profile`: the server tree's on-CPU stacks over the measured
    /// phase, folded, CPU per request answered; absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::profile::RunProfile>,
    /// The measured phase second by second (see [`crate::series`]): the
    /// rows sum to `complete_requests`, `failed_requests` and the sends.
    /// Absent in records made before the series existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<crate::series::Interval>,
}

/// One row of the per-request breakdown: the figures of the requests that
/// share one name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct RequestStats {
    /// The request name: a target's name, its URL (its method first when
    /// not GET), or the NAME of the `--group` that folded it.
    pub name: String,
    /// Responses received completely (any status) that passed every check.
    pub complete_requests: u64,
    /// Requests of this name that failed, the sum of `failures`.
    pub failed_requests: u64,
    /// Failed requests by kind.
    pub failures: Failures,
    /// `complete_requests / duration_s` of the run.
    pub requests_per_second: f64,
    /// Latency of this name's complete requests, as the run's `latency_us`
    /// (from a histogram of 2 significant digits per name).
    pub latency_us: LatencySummary,
    /// Complete responses by status code ("200" → count).
    #[schemars(extend("propertyNames" = { "pattern": "^[0-9]{3}$" }))]
    pub status_codes: BTreeMap<String, u64>,
    /// Body bytes received for this name.
    pub body_bytes: u64,
}

/// What a run's request set was (`--targets`, `--urls-from-file`, a plan's `targets`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct SetSummary {
    /// The set's file as given (`-`: standard input).
    pub source: String,
    /// Its format: `http`, `json` or `urls`.
    #[schemars(extend("enum" = ["http", "json", "urls"]))]
    pub format: String,
    /// Targets in the set.
    pub targets: u64,
    /// Distinct request names among them.
    pub names: u64,
    /// Which target each request sent: `round-robin`, `sequential`, `random` or `weighted`.
    #[schemars(extend("enum" = ["round-robin", "sequential", "random", "weighted"]))]
    pub order: String,
    /// The seed of a `random` or `weighted` order (given, or drawn and
    /// recorded here so `--seed` repeats the run's draws).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// What a TLS handshake settled on, named as OpenSSL (and so ab) names it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct TlsSummary {
    /// Protocol version: `TLSv1.2` or `TLSv1.3`.
    pub protocol: String,
    /// Cipher suite by its OpenSSL name (`TLS_AES_256_GCM_SHA384`,
    /// `ECDHE-ECDSA-AES128-GCM-SHA256`).
    pub cipher: String,
    /// Size of the server certificate's public key, bits (253 for Ed25519,
    /// as OpenSSL counts); null when the key type is unknown.
    #[schemars(required, transform = crate::schema::nullable)]
    pub server_key_bits: Option<u32>,
    /// Secret key bits of the cipher (128 or 256).
    pub cipher_bits: u32,
    /// The key exchange, as ab prints it: `X25519 253 bits`, `ECDH prime256v1 256 bits`.
    #[schemars(required, transform = crate::schema::nullable)]
    pub key_exchange: Option<String>,
    /// The server name sent in the handshake (SNI; ab's "TLS Server Name"):
    /// the URL's host name; absent when the host is an IP address, which
    /// SNI cannot carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
}

fn http11() -> String {
    "http/1.1".to_owned()
}

/// What an HTTP/2 run adds to the record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct Http2Summary {
    /// Concurrent streams per connection asked for (`--streams`).
    #[schemars(range(min = 1))]
    pub streams: u32,
    /// Connections the server ended with GOAWAY (finished, then replaced;
    /// streams it had not processed were sent again on the new connection).
    pub goaways: u64,
    /// Streams the server reset (RST_STREAM), by error code name
    /// (`REFUSED_STREAM`, `INTERNAL_ERROR` …); each is also a `receive` failure.
    #[serde(default)]
    pub stream_resets: BTreeMap<String, u64>,
}

/// What an HTTP/3 run adds to the record: HTTP/2's block, and QUIC's own
/// facts over the run's connections.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct Http3Summary {
    /// Concurrent streams per connection asked for (`--streams`).
    #[schemars(range(min = 1))]
    pub streams: u32,
    /// Connections the server ended with GOAWAY (requests it had not
    /// processed were sent again on a new connection).
    pub goaways: u64,
    /// Request streams the server reset or stopped, by error code name
    /// (`H3_REQUEST_REJECTED` …); each is also a `receive` failure.
    #[serde(default)]
    pub stream_resets: BTreeMap<String, u64>,
    /// QUIC handshakes completed (connections that became HTTP/3).
    pub handshakes: u64,
    /// Mean time from a connection's first Initial packet to its finished
    /// handshake, µs (0 without handshakes).
    pub handshake_mean_us: f64,
    /// QUIC packets sent over the run's connections.
    pub packets_sent: u64,
    /// Of those, packets QUIC's loss detection declared lost (and resent).
    pub packets_lost: u64,
    /// Mean of the connections' smoothed round-trip time as QUIC measured
    /// it when each closed, µs.
    pub rtt_mean_us: f64,
}

/// How a distributed run was split over its workers, and how each share ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct FleetSummary {
    /// Run id in the store's `fleet_runs` table.
    pub run_id: i64,
    /// One row per share, in slot order.
    pub workers: Vec<FleetWorker>,
    /// Explicit notes (a worker lost mid-run, a share never claimed).
    pub notes: Vec<String>,
}

/// One worker's share of a distributed run: its own figures, to spot a worker
/// that was itself the bottleneck.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct FleetWorker {
    /// Share number, from 0.
    pub slot: u32,
    /// The worker's name (`kurabe worker --name`, default the host name).
    pub worker: String,
    /// `done`, `lost`, `failed` or `open` (never claimed).
    pub state: String,
    /// Connections of this share.
    #[schemars(required, transform = crate::schema::nullable)]
    pub concurrency: Option<u32>,
    /// Completed responses: the worker's report when done, else its last progress row.
    pub complete_requests: u64,
    /// Failed requests, likewise.
    pub failed_requests: u64,
    /// The share's own throughput (done shares only).
    #[schemars(required, transform = crate::schema::nullable)]
    pub requests_per_second: Option<f64>,
    /// The share's own median latency (done shares only).
    #[schemars(required, transform = crate::schema::nullable)]
    pub latency_p50_us: Option<u64>,
    /// The share's own 99th percentile (done shares only).
    #[schemars(required, transform = crate::schema::nullable)]
    pub latency_p99_us: Option<u64>,
    /// True when the share's histograms are part of the merged figures.
    pub merged: bool,
    /// Why the share is not done, if it is not.
    #[schemars(required, transform = crate::schema::nullable)]
    pub note: Option<String>,
    /// Seconds into the run of the last progress row (for the terminal's
    /// worker table; not part of the record).
    #[serde(skip)]
    pub progress_elapsed_s: f64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One failure bucket of a run: its kind, how many requests fell in it and
/// the first error of that kind, as the operating system or TLS library said it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct ErrorBucket {
    /// The [`Failures`] field it counts in: `connect`, `receive`, `length`, `exceptions`, `write`, `timeout`, `client`, `check`.
    #[schemars(extend("enum" = crate::failures::FailureKind::names()))]
    pub kind: String,
    /// The first error of this kind, e.g. "Connection refused (os error 111)".
    pub first_error: String,
    /// Requests that failed this way (equal to the matching [`Failures`] field).
    #[schemars(range(min = 1))]
    pub count: u64,
}

impl HttpReport {
    /// The label a saved `kurabe http` run goes under without
    /// `--save=LABEL`: `http URL`.
    pub fn label(&self) -> String {
        format!("http {}", self.url)
    }

    /// Requests that ended, complete or failed (in-flight ones excluded).
    pub fn ended_requests(&self) -> u64 {
        self.complete_requests + self.failed_requests
    }

    /// Responses that arrived whole: the complete requests and the
    /// responses that failed a check (the server answered both; with
    /// checks, these are the responses judged).
    pub fn answered_requests(&self) -> u64 {
        self.complete_requests + self.failures.check
    }

    /// With response checks: the responses that passed them all, percent of
    /// those judged (passed + failed a check); `None` when nothing was checked.
    pub fn check_pass_percent(&self) -> Option<f64> {
        if self.checks.is_empty() {
            return None;
        }
        Some(match self.answered_requests() {
            0 => 0.0,
            n => 100.0 * self.complete_requests as f64 / n as f64,
        })
    }

    /// Failed requests as a fraction of the requests that ended (0 when none ended).
    pub fn error_rate(&self) -> f64 {
        match self.ended_requests() {
            0 => 0.0,
            n => self.failed_requests as f64 / n as f64,
        }
    }
}

/// Latency distribution summary, microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct LatencySummary {
    pub min: u64,
    pub mean: f64,
    pub stdev: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

/// One row of a percentile table.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct PercentileValue {
    /// Percentile, 0–100.
    pub percentile: f64,
    /// Latency at that percentile, microseconds.
    pub latency_us: u64,
}

/// One row of ab's Connection Times table, microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct PhaseTimes {
    pub min: u64,
    pub mean: f64,
    pub sd: f64,
    pub median: u64,
    pub max: u64,
}

/// ab's Connection Times: connect, processing (total − connect), waiting (to first byte), total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct ConnectionTimes {
    pub connect: PhaseTimes,
    pub processing: PhaseTimes,
    pub waiting: PhaseTimes,
    pub total: PhaseTimes,
}

/// Open-model figures for `--rate`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct RateInfo {
    /// Requested arrival rate, requests per second.
    pub requested_per_s: f64,
    /// Requests actually sent per second during the measured phase.
    pub achieved_per_s: f64,
    /// Latency measured from the actual send instead of the intended one
    /// (what a tool without coordinated-omission correction reports).
    pub latency_uncorrected_us: LatencySummary,
    /// Requests whose send was later than intended by more than 1 ms.
    pub late_sends: u64,
    /// Sends the schedule meant that were given up unsent (k6's
    /// `dropped_iterations`): those no connection could take within the
    /// request timeout (`-s`) of their intended time (had they been sent,
    /// their latency from the intended time would already exceed the
    /// timeout), and those a timed run intended before its end but could
    /// not send at all (no connection was free: a rate the machine does
    /// not reach). Left out when 0, so records from before it write back
    /// unchanged.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_sends: u64,
}

/// CPU and memory of the server process tree during the run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct ServerMetrics {
    /// PID of the server's root process.
    pub pid: u32,
    /// Server CPU time (user + system, whole tree) per response it sent,
    /// milliseconds: per complete request and per response that failed a
    /// check (the server answered both); null when no response arrived.
    #[schemars(required, transform = crate::schema::nullable)]
    pub cpu_ms_per_request: Option<f64>,
    /// Server CPU over the run, percent of one core.
    pub cpu_percent_mean: f64,
    /// Σ PSS of the server tree when the measured phase started.
    pub pss_start_bytes: u64,
    /// Highest Σ PSS sampled.
    pub pss_peak_bytes: u64,
    /// Σ PSS at the end.
    pub pss_end_bytes: u64,
    /// The server tree's counters per response it sent (context switches,
    /// faults, I/O calls and bytes, …); absent when not counted or when it
    /// sent none.
    #[serde(
        default,
        skip_serializing_if = "crate::tree_counters::Counts::is_empty"
    )]
    pub counters_per_request: crate::tree_counters::Counts,
}

/// `kurabe http URL_A URL_B --format json`: the A/B as an experiment report
/// plus every run's full HTTP record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(
    title = "kurabe http URL_A URL_B --format json",
    description = "An A/B of endpoints: the experiment report (each URL's summary and, against the first URL, ratios with 95 % intervals and verdicts; see experiment-report.schema.json) and every run's full HTTP record (http-report.schema.json) with the server's CPU and memory where it is on this machine."
)]
pub struct HttpCompare {
    /// [`crate::SCHEMA_VERSION`] at writing.
    #[schemars(range(min = 1))]
    pub schema_version: u32,
    /// The URLs in the order given; the first is the baseline.
    pub urls: Vec<String>,
    /// Interleaved rounds asked for.
    #[schemars(range(min = 1))]
    pub rounds: u32,
    /// Each URL's summary and, against the first, ratios and verdicts.
    pub comparison: crate::experiment::ExperimentReport,
    /// Every run, in the order they ran.
    pub runs: Vec<HttpCompareRun>,
}

/// One run of an [`HttpCompare`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct HttpCompareRun {
    /// The URL measured.
    pub url: String,
    /// Round number, 0-based.
    pub round: u32,
    /// Whether the run produced metrics.
    pub status: crate::run_status::RunStatus,
    /// Why it failed (the tail of the error), if it did.
    #[schemars(required, transform = crate::schema::nullable)]
    pub error: Option<String>,
    /// The run's HTTP report, as stored; null for a failed run.
    #[schemars(with = "Option<HttpReport>")]
    #[schemars(required, transform = crate::schema::nullable)]
    pub http: Option<serde_json::Value>,
    /// The server process tree as sampled; null when the server is not on this machine.
    #[schemars(required, transform = crate::schema::nullable)]
    pub server: Option<serde_json::Value>,
}
