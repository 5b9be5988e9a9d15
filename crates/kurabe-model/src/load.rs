//! [`LoadSpec`]: the whole description of one HTTP load, in one shape.
//!
//! `kurabe http`'s flags build one, a plan's `http = { … }` table *is* one
//! (same field names, same grammar), the fleet stores one per run and
//! hands each worker its share of it, and `kurabe http A B` builds one per
//! URL. The engine runs a `&LoadSpec`. A new load option is one field here
//! that every path reads; nothing converts between shapes.
//!
//! Owns the field names, their defaults (ab's: one request on one
//! connection, GET, no keep-alive, 30 s timeout) and the serde grammar.
//! Must not do I/O or check what needs the network or the TLS library
//! (URL syntax, header bytes, cipher names): `kurabe-http` resolves and
//! validates a spec before it sends anything, with errors that name the
//! field as the user wrote it (flag or plan key).

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use crate::quantity::HumanDuration;

/// One HTTP load: where, what request, how much, how, and when to stop.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct LoadSpec {
    // --- where -----------------------------------------------------------
    /// The whole URL (`http://host[:port]/path` or `https://…`). Plans with
    /// a `[target]` give `path` instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Path and query on a plan's target (`http://127.0.0.1:{port}`), default `/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,

    // --- the request -----------------------------------------------------
    /// HTTP method (`-m`; `-i` is HEAD, `-u` PUT). Default: POST when there
    /// is a body, else GET.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Extra request headers in sending order (`-H "Name: value"`). A plan
    /// may write them as a table (`headers = { X-A = "1" }`) or as a list
    /// of `"Name: value"` strings.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "headers_map_or_list"
    )]
    #[schemars(with = "Vec<String>")]
    pub headers: Vec<Header>,
    /// File whose content is the request body (`-p`, `-u`); relative paths
    /// are relative to the plan's folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_file: Option<PathBuf>,
    /// The request body itself, base64 (what the fleet stores: workers on
    /// other hosts cannot read the coordinator's files). At most one of
    /// `body_file` and `body_base64`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_base64: Option<String>,
    /// Content-Type of the body (`-T`); `text/plain` when a body has none, as ab sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// Cookies, `name=value` each, sent as one `Cookie` header (`-C`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cookies: Vec<String>,
    /// Basic authentication, `user:password` (`-A`). A secret: never shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<String>,

    // --- the request set ----------------------------------------------------
    /// A request set instead of one URL (`--targets FILE`, `--urls-from-file
    /// FILE`; a plan's `targets`, relative to the plan): vegeta's `http` or
    /// `json` targets format, or oha's one URL a line. `-` is standard input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<PathBuf>,
    /// The set itself, as text, in place of a `targets` file: what `-` read
    /// from standard input (the file is read once, before the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets_text: Option<String>,
    /// The set's format (`--targets-format`; `urls` with `--urls-from-file`), default `http`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets_format: Option<TargetsFormat>,
    /// Which target goes next (`--order`), default `weighted` when a
    /// target carries a weight, else `round-robin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<Order>,
    /// Seed of `weighted` and `random` orders (`--seed`); one is drawn and
    /// recorded in the result when none is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,

    // --- how much, and when to stop ----------------------------------------
    /// Requests to perform (`-n`). With neither `requests` nor `duration`,
    /// one request (ab's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// Length of the measured phase (`-t`); with `requests`, whichever comes first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<HumanDuration>,
    /// Unmeasured load before measuring (`--warmup`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<HumanDuration>,
    /// Soak run (`"10m"`, plans only): keep the load on this long instead
    /// of `duration`/`requests`, sampling Σ PSS against requests served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak: Option<HumanDuration>,

    // --- how ---------------------------------------------------------------
    /// Concurrent connections (`-c`), default 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub concurrency: u32,
    /// Open model: arrival rate in requests per second over all connections (`--rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Load shaped over time (`--stage 30s:200`, repeatable; a plan's
    /// `stages = [{ duration = "30s", target = 200 }, …]`): the open
    /// model's arrival rate ramps linearly from 0 to each stage's target in
    /// turn (k6's `ramping-arrival-rate`), and the run lasts their total.
    /// With `executor = "ramping-vus"` (`--stage 30s:c=100`) the targets
    /// are open connections instead (closed model), ramped from 0 the same way.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<crate::stage::StageSpec>,
    /// k6's executor name (plans): `constant-arrival-rate` (needs `rate`),
    /// `ramping-arrival-rate` (needs `stages`), `constant-vus` (the closed
    /// model), `ramping-vus` (needs `stages`, whose targets are then
    /// connections). Without one, the other keys say which model runs
    /// (`stages` alone ramp the rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor: Option<crate::stage::Executor>,
    /// Capacity under an SLO (`--find-rate --slo …`; a plan's
    /// `find_rate = { slo = ["p(99)<50ms"] }`): search the highest `rate`
    /// sustained within the SLOs instead of running one load. kurabe-lab
    /// runs the search; the engine never sees it (each step is a plain
    /// rate load).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub find_rate: Option<crate::capacity::FindRate>,
    /// Client threads (`--threads`); default chosen by the load generator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// Keep connections alive (`-k`), default off as in ab.
    #[serde(default, skip_serializing_if = "is_false")]
    pub keep_alive: bool,
    /// HTTP/1.1 requests in flight per connection (`--pipeline`), default 1; needs `keep_alive`.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub pipeline: u32,
    /// Speak HTTP/2 (`--http2`): h2c for `http://`, ALPN `h2` for `https://`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub http2: bool,
    /// Speak HTTP/3 (`--http3`, `--http-version 3`): QUIC v1 with TLS 1.3
    /// and ALPN `h3`, `https://` only.
    #[serde(default, skip_serializing_if = "is_false")]
    pub http3: bool,
    /// Streams in flight per connection (`--streams`), default 1; needs
    /// `http2` or `http3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<u32>,
    /// The client I/O engine (`--engine`).
    #[serde(default, skip_serializing_if = "Engine::is_auto")]
    pub engine: Engine,
    /// Per-request timeout (`-s`): connect, send and whole response; default 30 s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<HumanDuration>,
    /// Stop at the first failed request instead of counting it (`--abort-on-error`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub abort_on_error: bool,
    /// Do not count responses of varying length as failures (`-l`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub variable_length: bool,

    // --- what is reported and checked --------------------------------------
    /// Fold request names in the per-request breakdown: `REGEX=NAME`
    /// (`--group`), the first whose REGEX matches a request's URL names it
    /// (`$1` … in NAME are the REGEX's groups); unnamed requests are
    /// reported by URL.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub group: Vec<String>,
    /// Response checks every response must pass (`--check`): `status==200`,
    /// `status in 200..399`, `body~REGEX`, `header:NAME~REGEX`,
    /// `size>=1000`; a response that fails one is a `check` failure.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
    /// Thresholds the run must meet (`--threshold`, k6's notation, see
    /// [`crate::threshold`]): `p(95)<200ms`, `failed<1%`, `rate>=1000`,
    /// `checks>99%`, `p(95){name:checkout}<300ms`, with `,abort` and
    /// `,after=DURATION` to end the run as soon as one fails. Each is judged
    /// on the run's figures and reported; any failure fails the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<String>,

    // --- recorded traffic ----------------------------------------------------
    /// Replay an access log or HAR file against `url` at the recorded
    /// times (`kurabe replay LOG URL`; open model, latency from each
    /// request's scheduled time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<crate::replay::ReplaySpec>,

    // --- connection setup ----------------------------------------------------
    /// Accept any TLS certificate (`--insecure`; ab never checks).
    #[serde(default, skip_serializing_if = "is_false")]
    pub insecure: bool,
    /// TLS protocol (`-f`): `TLS1.2`, `TLS1.3` or `ALL` (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_protocol: Option<String>,
    /// Cipher suites, OpenSSL names separated by `:` (`-Z`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ciphers: Option<String>,
    /// TLS client certificate and key, one PEM file (`-E`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cert: Option<PathBuf>,
    /// Trust the CA certificates in this PEM file instead of the system
    /// store (`--cacert`), for `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    /// HTTP proxy, `HOST:PORT` (`-X`); requests go to it in absolute form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<String>,
    /// The proxy's Basic credentials, `user:password` (`-P`). A secret: never shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_auth: Option<String>,
    /// Local address every connection binds to (`-B`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind: Option<String>,
    /// `SO_SNDBUF`/`SO_RCVBUF` of every connection, bytes (`-b`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_buffer: Option<u32>,
}

/// One extra request header, in sending order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct Header {
    /// Header name as written.
    pub name: String,
    /// Header value, trimmed.
    pub value: String,
}

impl Header {
    /// A header from its name and value (trimmed).
    pub fn new(name: &str, value: &str) -> Header {
        Header {
            name: name.trim().to_owned(),
            value: value.trim().to_owned(),
        }
    }

    /// `"Name: value"` → a header; `None` without a `:`.
    pub fn parse(line: &str) -> Option<Header> {
        let (name, value) = line.split_once(':')?;
        Some(Header::new(name, value))
    }
}

impl From<Header> for String {
    fn from(h: Header) -> String {
        format!("{}: {}", h.name, h.value)
    }
}

impl TryFrom<String> for Header {
    type Error = String;
    fn try_from(line: String) -> Result<Header, String> {
        Header::parse(&line).ok_or_else(|| format!("header '{line}': write it as \"Name: value\""))
    }
}

/// `headers` as a table (old plans, sorted by name) or as a list of `"Name: value"`.
fn headers_map_or_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Header>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Repr {
        List(Vec<Header>),
        Map(BTreeMap<String, String>),
    }
    Ok(match Repr::deserialize(d)? {
        Repr::List(l) => l,
        Repr::Map(m) => m.iter().map(|(k, v)| Header::new(k, v)).collect(),
    })
}

/// The client I/O engine (`--engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// The engine that costs least per request here (io_uring for plain
    /// HTTP/1.1 where the kernel offers it, else epoll).
    #[default]
    Auto,
    /// Readiness with epoll.
    Epoll,
    /// Completions with io_uring.
    IoUring,
}

impl Engine {
    /// Every engine, in the order `--engine` lists them.
    pub const ALL: [Engine; 3] = [Engine::Auto, Engine::Epoll, Engine::IoUring];

    /// The name on the command line, in plans and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Auto => "auto",
            Engine::Epoll => "epoll",
            Engine::IoUring => "io_uring",
        }
    }

    /// Parse `auto`, `epoll` or `io_uring`.
    pub fn parse(s: &str) -> Option<Engine> {
        Engine::ALL.into_iter().find(|e| e.name() == s)
    }

    fn is_auto(&self) -> bool {
        *self == Engine::Auto
    }
}

/// An HTTP version (`--http-version`, a plan variant's `http_version`):
/// what the `http2` and `http3` switches of a [`LoadSpec`] say together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HttpVersion {
    /// HTTP/1.1 (or 1.0 without `-k`, as ab).
    #[serde(rename = "1.1")]
    H1,
    /// HTTP/2: h2c for `http://`, ALPN `h2` for `https://`.
    #[serde(rename = "2")]
    H2,
    /// HTTP/3: QUIC v1, `https://` only.
    #[serde(rename = "3")]
    H3,
}

impl HttpVersion {
    /// Every version, in the order `--http-version` lists them.
    pub const ALL: [HttpVersion; 3] = [HttpVersion::H1, HttpVersion::H2, HttpVersion::H3];

    /// As `--http-version` spells it: `1.1`, `2` or `3`.
    pub fn name(self) -> &'static str {
        match self {
            HttpVersion::H1 => "1.1",
            HttpVersion::H2 => "2",
            HttpVersion::H3 => "3",
        }
    }

    /// Parse `1.1`, `2` or `3`.
    pub fn parse(s: &str) -> Option<HttpVersion> {
        HttpVersion::ALL.into_iter().find(|v| v.name() == s)
    }

    /// The version a spec's switches ask for.
    pub fn of(spec: &LoadSpec) -> HttpVersion {
        match (spec.http2, spec.http3) {
            (_, true) => HttpVersion::H3,
            (true, false) => HttpVersion::H2,
            (false, false) => HttpVersion::H1,
        }
    }

    /// `spec` speaking this version (its other settings kept).
    pub fn apply(self, spec: &LoadSpec) -> LoadSpec {
        LoadSpec {
            http2: self == HttpVersion::H2,
            http3: self == HttpVersion::H3,
            ..spec.clone()
        }
    }
}

/// The format of a request set (`--targets-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TargetsFormat {
    /// vegeta's `http` format: `METHOD URL`, header lines, `@body-file`, a blank line.
    #[default]
    Http,
    /// vegeta's `json` format: one object a line (`method`, `url`, `header`, base64 `body`).
    Json,
    /// oha's list (`--urls-from-file`): one URL a line, GET.
    Urls,
}

impl TargetsFormat {
    /// Every format, in the order `--targets-format` lists them.
    pub const ALL: [TargetsFormat; 3] = [
        TargetsFormat::Http,
        TargetsFormat::Json,
        TargetsFormat::Urls,
    ];

    /// The name on the command line, in plans and in reports.
    pub fn name(self) -> &'static str {
        match self {
            TargetsFormat::Http => "http",
            TargetsFormat::Json => "json",
            TargetsFormat::Urls => "urls",
        }
    }

    /// Parse `http`, `json` or `urls`.
    pub fn parse(s: &str) -> Option<TargetsFormat> {
        TargetsFormat::ALL.into_iter().find(|f| f.name() == s)
    }
}

/// Which target of a set each request sends (`--order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    /// The set in file order, again and again; each client thread starts
    /// at its own place in it.
    #[default]
    RoundRobin,
    /// Each target once, in file order over all connections (then again
    /// if `requests` or `duration` ask for more); by default the run
    /// ends when the set does.
    Sequential,
    /// A target drawn at random, each as likely (seeded).
    Random,
    /// A target drawn at random in proportion to its weight (seeded).
    Weighted,
}

impl Order {
    /// Every order, in the order `--order` lists them.
    pub const ALL: [Order; 4] = [
        Order::Weighted,
        Order::RoundRobin,
        Order::Random,
        Order::Sequential,
    ];

    /// The name on the command line, in plans and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Order::RoundRobin => "round-robin",
            Order::Sequential => "sequential",
            Order::Random => "random",
            Order::Weighted => "weighted",
        }
    }

    /// Parse `weighted`, `round-robin`, `random` or `sequential`.
    pub fn parse(s: &str) -> Option<Order> {
        Order::ALL.into_iter().find(|o| o.name() == s)
    }

    /// Whether the order draws targets at random (and so has a seed).
    pub fn is_random(self) -> bool {
        matches!(self, Order::Random | Order::Weighted)
    }
}

/// When a load stops, from `requests` and `duration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopCondition {
    /// After this many requests have been answered or failed (`-n`).
    Requests(u64),
    /// After this long (`-t` without `-n`): no hidden request cap.
    Duration(std::time::Duration),
    /// Whichever comes first (`-n` and `-t`).
    RequestsOrDuration(u64, std::time::Duration),
}

impl StopCondition {
    /// The stop for `requests` and `duration`; ab's default is one request.
    pub fn of(requests: Option<u64>, duration: Option<std::time::Duration>) -> StopCondition {
        match (requests, duration) {
            (Some(n), Some(d)) => StopCondition::RequestsOrDuration(n, d),
            (Some(n), None) => StopCondition::Requests(n),
            (None, Some(d)) => StopCondition::Duration(d),
            (None, None) => StopCondition::Requests(1),
        }
    }

    /// The limits given: (requests `-n`, time `-t`).
    pub fn limits(&self) -> (Option<u64>, Option<std::time::Duration>) {
        match *self {
            StopCondition::Requests(n) => (Some(n), None),
            StopCondition::Duration(d) => (None, Some(d)),
            StopCondition::RequestsOrDuration(n, d) => (Some(n), Some(d)),
        }
    }
}

impl LoadSpec {
    /// A spec for `url` with every other field at its default.
    pub fn for_url(url: &str) -> LoadSpec {
        LoadSpec {
            url: Some(url.to_owned()),
            concurrency: 1,
            pipeline: 1,
            ..LoadSpec::default()
        }
    }

    /// When the measured phase stops.
    pub fn stop(&self) -> StopCondition {
        StopCondition::of(self.requests, self.duration.map(|d| d.0))
    }
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_table_and_its_defaults() {
        let s: LoadSpec = toml::from_str(
            r#"path = "/x"
               requests = 100
               headers = { X-B = "2", X-A = "1" }
               engine = "io_uring"
               timeout = "5s""#,
        )
        .unwrap();
        assert_eq!((s.concurrency, s.pipeline), (1, 1));
        assert_eq!(
            s.headers,
            [Header::new("X-A", "1"), Header::new("X-B", "2")]
        );
        assert_eq!(s.engine, Engine::IoUring);
        assert_eq!(s.stop(), StopCondition::Requests(100));
        let e = toml::from_str::<LoadSpec>("concurency = 3").unwrap_err();
        assert!(e.to_string().contains("concurency"), "{e}");
    }

    #[test]
    fn headers_keep_their_order_as_a_list_and_round_trip() {
        let s: LoadSpec =
            serde_json::from_str(r#"{"url":"http://h/","headers":["X-B: 2","X-A:1"]}"#).unwrap();
        assert_eq!(
            s.headers,
            [Header::new("X-B", "2"), Header::new("X-A", "1")]
        );
        let back: LoadSpec = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
        assert_eq!(back, {
            let mut f = LoadSpec::for_url("http://h/");
            f.headers = s.headers.clone();
            f
        });
        assert!(serde_json::from_str::<LoadSpec>(r#"{"headers":["NoColon"]}"#).is_err());
    }

    #[test]
    fn stop_defaults_to_abs_one_request() {
        let s = LoadSpec::for_url("http://h/");
        assert_eq!(s.stop(), StopCondition::Requests(1));
        let d = std::time::Duration::from_secs(2);
        assert_eq!(
            StopCondition::of(Some(5), Some(d)).limits(),
            (Some(5), Some(d))
        );
    }
}
