//! The load generator's engine. Its entry is [`crate::load::run`]; this
//! module runs the [`Load`] that entry resolves a spec into: what is sent
//! ([`Requests`]), when ([`Arrival`]) and how ([`Protocol`]), one enum each.
//!
//! Layout: this file owns the contract (the resolved load, URL parsing, errors) and the
//! orchestration of one run (resolve, spawn workers, merge their numbers into
//! an [`HttpReport`]). Beside it, one folder per concern:
//! - `engine`: the per-thread event loop (epoll or io_uring, see [`Engine`])
//!   and the request life cycle, shared by every protocol, with each
//!   protocol's framing in `engine::h1`, `engine::h2` and `engine::h3`
//!   (HTTP/1.1's request bytes in `engine::h1::wire`, beside HTTP/2's and
//!   HTTP/3's `render`);
//!   `engine::protocol` says which protocol a run speaks, and
//!   `make_workers` picks each protocol's worker by one `match` on it;
//! - `schedule`: the `-n` budget, the open model's per-worker schedule and
//!   `schedule::arrival`, when requests go out (closed, a rate, a ramp,
//!   connection stages, a replay's times), and how a worker paces itself;
//! - `measure`: what is made of each answer (`measure::record` counts a
//!   complete response for every protocol; the counters and histograms are
//!   the model's `load_stats`), the series, live snapshots, ab's `-g` tap;
//! - `shared`: the state all workers of a run read, the load and what
//!   the run made of it.
//!
//! What is sent, beyond the one request, is `crate::source`'s: request
//! sets (held or streamed), replays, and the bytes on the wire.
//!
//! Nothing here prints: the caller renders the report.

pub(crate) mod engine;
#[cfg(test)]
mod engine_tests;
pub(crate) mod measure;
mod schedule;
mod shared;

use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kurabe_model::http::HttpReport;

use crate::request::Body;
use crate::source::set::{self, feed};
use crate::source::wire as requests;
use crate::target::Target;
use engine::h1::wire::{
    one_request, recorded_wire, replay_bytes, set_bytes, set_span, target_wire, the_request, Held,
};
pub(crate) use engine::protocol::Protocol;
pub use engine::setup::{
    parse_ciphers, HeadTrace, Proxy, Setup, TlsOptionError, TlsOptions, TlsProtocol,
};
use engine::threads::ProtocolWorker;
pub use engine::threads::THREAD_PREFIX;
use kurabe_model::load_stats::Stats;
pub use measure::gnuplot::GnuplotFile;
pub(crate) use schedule::arrival::{Arrival, Ramp};

/// Client threads when none are given: all cores for a remote server, half
/// of them when the server is on this machine (it needs the rest), never
/// more than connections.
pub fn default_threads(ncpus: u32, concurrency: u32, loopback: bool) -> u32 {
    let base = if loopback {
        (ncpus / 2).max(1)
    } else {
        ncpus.max(1)
    };
    base.min(concurrency.max(1))
}

/// Whether `host` is this machine (so a server probably shares our CPUs).
pub fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The I/O engine that drives the connections (`--engine`): `Auto` is the
/// engine that costs least per request here, io_uring where the kernel
/// offers it (and for plain http:// HTTP/1.1), else epoll, as measured by
/// `bench/http-peers.sh`; `AUTO_PREFERS_URING` says why.
pub use kurabe_model::load::Engine;

/// The engine a run with a given choice uses.
trait ResolveEngine: Sized {
    /// The engine a run with this choice uses: `Auto` becomes a concrete one;
    /// an explicit io_uring the kernel or the URL cannot use is an error.
    /// `conns` is the most connections one worker drives: the ring is tried
    /// at that size, so a refusal (locked-memory limit, io_uring disabled)
    /// is found here and never counted as the server's connect failures.
    fn resolve(self, tls: bool, conns: usize) -> Result<Engine, LoadError>;

    /// [`ResolveEngine::resolve`] with the preference and the ring probe given.
    fn resolve_with(
        self,
        tls: bool,
        prefers_uring: bool,
        probe: impl FnOnce() -> std::io::Result<()>,
    ) -> Result<Engine, LoadError>;
}

impl ResolveEngine for Engine {
    fn resolve(self, tls: bool, conns: usize) -> Result<Engine, LoadError> {
        self.resolve_with(tls, AUTO_PREFERS_URING, || {
            engine::uring::Uring::probe(conns)
        })
    }

    fn resolve_with(
        self,
        tls: bool,
        prefers_uring: bool,
        probe: impl FnOnce() -> std::io::Result<()>,
    ) -> Result<Engine, LoadError> {
        match self {
            Engine::Epoll => Ok(Engine::Epoll),
            Engine::Auto if tls || !prefers_uring => Ok(Engine::Epoll),
            // Auto falls back to epoll whatever the reason io_uring cannot run.
            Engine::Auto => Ok(probe().map_or(Engine::Epoll, |()| Engine::IoUring)),
            Engine::IoUring if tls => Err(LoadError::Config(
                "--engine io_uring does not drive https:// or --http2 yet: use --engine epoll or auto"
                    .into(),
            )),
            Engine::IoUring => match probe() {
                Ok(()) => Ok(Engine::IoUring),
                Err(e) => Err(LoadError::Config(uring_refused(&e))),
            },
        }
    }
}

/// Why `--engine io_uring` cannot run here and what to do about it.
fn uring_refused(e: &std::io::Error) -> String {
    let hint = match e.raw_os_error() {
        Some(libc::ENOMEM) => "raise the locked-memory limit (`ulimit -l`) or lower -c per thread",
        Some(libc::EPERM | libc::EACCES) => {
            "io_uring is disabled here (sysctl kernel.io_uring_disabled, or a container's seccomp profile)"
        }
        Some(libc::ENOSYS) => "this kernel has no io_uring",
        Some(libc::EINVAL) => "this kernel lacks an io_uring feature the engine needs (Linux 6.1 or newer)",
        _ => "io_uring cannot run here",
    };
    format!("--engine io_uring: the kernel refused an io_uring ({e}): {hint}; use --engine epoll or auto")
}

/// Whether `auto` picks io_uring where it is available. Set from the bench's
/// medians (-c 50, 3 interleaved rounds of 5 s, 2 cores), client CPU per
/// request once both engines nap before waiting (see `worker/pace.rs`). On a
/// quiet machine (load average 0.7-2.2): nginx 1 worker, io_uring 4.00 µs,
/// epoll 4.02, wrk 5.33; nginx `auto`, io_uring 3.28 µs, epoll 3.80, wrk
/// 4.74. At load 17-25 the order was the same (nginx `auto`: 1.82, 2.37,
/// 3.15). Since workers measure whether naps pay (`worker/trial.rs`), the
/// quiet-machine ratios to wrk are io_uring 0.543, epoll 0.694 against nginx
/// `auto` and 0.742 / 0.736 against nginx 1 (5 rounds of 3 s).
const AUTO_PREFERS_URING: bool = true;

/// When a run stops (`-n`, `-t`, or whichever comes first).
pub use kurabe_model::load::StopCondition;

/// A load resolved from its spec, its inputs read: what is sent
/// ([`Requests`]), when ([`Arrival`]) and how ([`Protocol`]), and the
/// run's limits and options. Read-only once the run starts: every worker
/// reads it through the run's `shared::Shared`.
#[derive(Debug, Clone)]
pub(crate) struct Load {
    /// Where connections go: the URL of one request, a set's origin, or a
    /// replay's base URL (its path put before each recorded path).
    pub target: Target,
    /// What is sent: one request, a request set (held or streamed), or a
    /// replay's recorded requests.
    pub requests: Requests,
    /// Concurrent connections (`-c`).
    pub concurrency: u32,
    /// Client threads; connections are spread evenly over them.
    pub threads: u32,
    /// The protocol and how connections are used: HTTP/1.1 with or
    /// without keep-alive and pipelining, or HTTP/2 or HTTP/3 with its streams.
    pub protocol: Protocol,
    /// When to stop.
    pub stop: StopCondition,
    /// When requests go out: the closed model, a constant rate over all
    /// connections, a ramp of rates, connection stages (`concurrency` is
    /// then the peak), or a replay's times.
    pub arrival: Arrival,
    /// Load applied before measuring, not counted.
    pub warmup: Option<Duration>,
    /// Per-request timeout (`-s`): connect, send and full response.
    pub timeout: Duration,
    /// Stop at the first failure (ab's behaviour without `-r`).
    pub abort_on_error: bool,
    /// Count responses whose body length differs from the first as `length` failures (ab without `-l`).
    pub check_length: bool,
    /// Skip TLS certificate verification. Off by default: certificates are
    /// checked against the system's CA store (ab never verifies; a load test
    /// of a server with a self-signed certificate needs this set).
    pub insecure: bool,
    /// Write one line per request (ab's `-g` gnuplot TSV) to this file, streamed, not kept in memory.
    pub gnuplot_file: Option<GnuplotFile>,
    /// Socket, proxy and TLS choices, and the `-v` tap (ab's `-b`, `-B`, `-X`, `-P`, `-E`, `-f`, `-Z`).
    pub setup: Setup,
    /// The I/O engine (`--engine`).
    pub engine: Engine,
    /// The run's request names (the breakdown's rows) and response checks.
    pub labels: crate::tags::Labels,
    /// The run's thresholds, parsed and checked against its names.
    pub thresholds: Vec<kurabe_model::threshold::Threshold>,
}

/// What a run sends: one kind of request source, each in one variant.
#[derive(Debug, Clone)]
pub(crate) enum Requests {
    /// One request to [`Load::target`], sent again and again.
    One {
        /// Request method (`GET`, `HEAD` with `-i`, `POST` with `-p`, `PUT` with `-u`, or `-m`).
        method: String,
        /// Extra request headers (`-H`, `-C`, `-A`, `-T`), in order; a user `Host:` replaces ours.
        headers: Vec<(String, String)>,
        /// Request body (`-p` / `-u` file contents), held once for the run.
        body: Option<Body>,
    },
    /// A request set held whole (`--targets`; the spec's headers were
    /// added to each target's own).
    Set(Arc<set::RequestSet>),
    /// A set too large to hold: its first targets (checked, tagged, its
    /// origin), and the stream that reads all of it, pass after pass.
    Streamed(Arc<set::RequestSet>, set::Streamed),
    /// A recording's requests (`kurabe replay`), sent at the times of the
    /// same recording's [`Arrival::Replay`].
    Replay(Arc<crate::source::replay::Replay>),
}

impl Requests {
    /// The request set, held or streamed.
    pub(crate) fn set(&self) -> Option<&Arc<set::RequestSet>> {
        match self {
            Requests::Set(s) | Requests::Streamed(s, _) => Some(s),
            Requests::One { .. } | Requests::Replay(_) => None,
        }
    }
}

/// Live counters the workers publish every ~50 ms, not per request; the
/// entry's watch thread reads them for the observer.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    /// Completed responses so far (measured phase only).
    pub(crate) completed: AtomicU64,
    /// Failed requests so far (measured phase only).
    pub(crate) failed: AtomicU64,
}

/// Shared control of a running load test.
#[derive(Debug, Default)]
pub(crate) struct RunControl {
    /// The stop's own flag ([`kurabe_stop::Stop::flag`]), polled by
    /// the workers; once set the report is marked interrupted.
    pub(crate) stop: Arc<AtomicBool>,
    /// Updated by the workers.
    pub(crate) progress: Progress,
    /// The workers' shares for an observer's snapshots, when it wants them.
    pub(crate) live: Option<measure::live::Live>,
}

impl RunControl {
    /// Control of a run that stops when `stop` is set.
    pub(crate) fn with_stop(stop: Arc<AtomicBool>) -> RunControl {
        RunControl {
            stop,
            progress: Progress::default(),
            live: None,
        }
    }
}

/// A problem that stops a run before any request is sent.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The host name did not resolve.
    #[error("cannot resolve host '{host}': {source} (check the URL's host name)")]
    Resolve {
        /// Host as given.
        host: String,
        /// Resolver error.
        #[source]
        source: std::io::Error,
    },
    /// TLS could not be set up for an `https://` URL.
    #[error("TLS setup failed: {0}")]
    Tls(String),
    /// The `-g` file could not be created.
    #[error("cannot write the gnuplot file '{}' (-g): {source}", path.display())]
    Gnuplot {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A request header would inject lines (CR/LF/NUL) or has a bad name.
    #[error(transparent)]
    Header(#[from] crate::header::HeaderError),
    /// The spec does not check (a setting or a combination that cannot
    /// run): the spec error's message with its causes, one line. Text, not
    /// the error itself, so this module names nothing of `load`, which
    /// builds on it.
    #[error("{0}")]
    Spec(String),
    /// A config value is out of range.
    #[error("invalid load configuration: {0}")]
    Config(String),
    /// The open-files limit is too low for the connections asked for, even
    /// after raising the soft limit to the hard one: refused before any
    /// request, so the shortage is never counted as the server's failures.
    #[error("concurrency {concurrency} (-c) needs about {needed} open files, but the limit is {limit} (hard limit {hard}): lower -c, or raise the limit (e.g. `ulimit -n {needed}` as root)")]
    Descriptors {
        /// Connections asked for.
        concurrency: u32,
        /// Descriptors the run needs: those open now, one per connection, a reserve.
        needed: u64,
        /// The soft limit, after raising it as far as allowed.
        limit: u64,
        /// The hard limit.
        hard: u64,
    },
    /// The OS refused a resource a worker needs (epoll instance, thread).
    #[error("cannot start the load generator: {0} (raise `ulimit -n` or lower -c/--threads)")]
    Resources(#[source] std::io::Error),
    /// A worker thread panicked (a bug in the engine): the other workers were
    /// stopped and the run's figures are not reported.
    #[error("load worker {worker} failed with an internal error: {message} (a bug in kurabe: please report it with the command line; --engine epoll may avoid it)")]
    WorkerPanic {
        /// Index of the worker thread.
        worker: usize,
        /// The panic's message.
        message: String,
    },
    /// The stop came while the load's inputs were still being read: no
    /// request was sent, there is nothing to report.
    #[error("stopped before the load began (its set or log was still being read)")]
    Interrupted,
}

/// Raise the soft open-files limit to the hard one (as wrk and oha do), then
/// refuse a run that still cannot open a socket per connection.
fn check_descriptors(concurrency: u32, threads: u32) -> Result<(), LoadError> {
    crate::raise_fd_limit();
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Ok(());
    }
    let open_now = std::fs::read_dir("/proc/self/fd").map_or(16, |d| d.count() as u64);
    // Per thread an epoll instance and a spare; a reserve for the store,
    // output files, the server sampler and TLS roots.
    let needed = open_now + u64::from(concurrency) + 2 * u64::from(threads) + 32;
    if needed > lim.rlim_cur {
        return Err(LoadError::Descriptors {
            concurrency,
            needed,
            limit: lim.rlim_cur,
            hard: lim.rlim_max,
        });
    }
    Ok(())
}

/// A body above this is sent from the run's one copy after its head
/// (`requests::Prepared::One`'s `split_body`), over HTTP/1.1, HTTP/2 and HTTP/3 alike instead of being copied, with its
/// head, once per pipelined request: a second write per request costs
/// nothing beside copying this many bytes to the socket.
pub(crate) const SPLIT_BODY: usize = 64 << 10;

/// The head of the run's first request as it goes on the wire (no body),
/// for `-v` output: the one request's, a set's first target's, or a
/// replay's first recorded request's.
pub(crate) fn request_head(cfg: &Load) -> String {
    let mut head = Vec::with_capacity(256);
    match &cfg.requests {
        Requests::One { .. } => the_request(cfg).write_head(cfg, &mut head),
        Requests::Set(set) | Requests::Streamed(set, _) => {
            target_wire(&set.targets[0]).write_head(cfg, &mut head)
        }
        Requests::Replay(r) => {
            let rec = &r.requests[0];
            let target = replay_target(cfg, rec);
            recorded_wire(rec, &target).write_head(cfg, &mut head)
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

impl Load {
    /// The method of the run's first request (see [`request_head`]).
    pub(crate) fn first_method(&self) -> &str {
        match &self.requests {
            Requests::One { method, .. } => method,
            Requests::Set(set) | Requests::Streamed(set, _) => &set.targets[0].method,
            Requests::Replay(r) => &r.requests[0].method,
        }
    }
}

/// A streamed set's feeder, started (`None`: the set is held whole).
fn start_feed(cfg: &Load, keeps: (bool, bool)) -> Result<Option<feed::Feed>, LoadError> {
    let Requests::Streamed(set, stream) = &cfg.requests else {
        return Ok(None);
    };
    // What the renders read of the load: its target, setup and protocol.
    let render_cfg = Load {
        requests: Requests::One {
            method: String::new(),
            headers: Vec::new(),
            body: None,
        },
        ..cfg.clone()
    };
    feed::Feed::start(feed::Start {
        stream: Arc::clone(&stream.0),
        labels: cfg.labels.clone(),
        once: cfg.stop == StopCondition::Requests(set::STREAM_ONCE),
        keeps,
        source: set.source.clone(),
        render: match cfg.protocol {
            Protocol::H2 { .. } => {
                Box::new(move |t, bytes| engine::h2::render(&render_cfg, t, bytes))
            }
            Protocol::H3 { .. } => Box::new(engine::h3::render),
            Protocol::H1 { .. } => Box::new(move |t, bytes| set_span(&render_cfg, t, bytes)),
        },
    })
    .map(Some)
    .map_err(|e| LoadError::Config(format!("cannot start the targets file's reader: {e}")))
}

/// Where recorded request `rec` goes: the base URL with its path, then
/// the recorded path and query.
pub(crate) fn replay_target(cfg: &Load, rec: &crate::source::replay::Recorded) -> Target {
    let base = cfg.target.path.trim_end_matches('/');
    Target {
        path: format!("{base}{}", rec.target),
        ..cfg.target.clone()
    }
}

/// The address connections go to: the proxy's with `-X`, else the target's.
fn connect_addr(cfg: &Load) -> Result<SocketAddr, LoadError> {
    let Some(proxy) = &cfg.setup.proxy else {
        return resolve(&cfg.target.host, cfg.target.port);
    };
    if cfg.target.tls {
        return Err(LoadError::Config(
            "-X: https:// through a proxy (CONNECT tunnels) is not supported; load-test the https:// URL directly".into(),
        ));
    }
    resolve(&proxy.host, proxy.port)
}

/// `-B`: the local address to bind, in the family of `addr`.
fn bind_addr(
    bind: Option<std::net::IpAddr>,
    addr: SocketAddr,
) -> Result<Option<SocketAddr>, LoadError> {
    let Some(ip) = bind else {
        return Ok(None);
    };
    if ip.is_ipv4() != addr.is_ipv4() {
        return Err(LoadError::Config(format!(
            "-B {ip}: the server's address {} is of the other IP family; bind an address of the same family",
            addr.ip()
        )));
    }
    Ok(Some(SocketAddr::new(ip, 0)))
}

/// The address of `host`: the first one resolved, or, when the name has
/// several (`localhost` is often `::1` and `127.0.0.1`), the first that
/// accepts a TCP connection within [`PROBE_TIMEOUT`], as wrk picks its
/// address. Without the probe a server listening on 127.0.0.1 only would
/// refuse every request sent to `localhost` wherever `::1` comes first.
/// When none accepts, the first: the run then reports why in its errors.
fn resolve(host: &str, port: u16) -> Result<SocketAddr, LoadError> {
    let resolve_err = |source| LoadError::Resolve {
        host: host.to_owned(),
        source,
    };
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(resolve_err)?
        .collect();
    let Some(&first) = addrs.first() else {
        return Err(resolve_err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no address found",
        )));
    };
    Ok(if addrs.len() == 1 {
        first
    } else {
        first_accepting(&addrs).unwrap_or(first)
    })
}

/// The first of `addrs` that accepts a TCP connection (closed at once).
fn first_accepting(addrs: &[SocketAddr]) -> Option<SocketAddr> {
    addrs
        .iter()
        .copied()
        .find(|a| std::net::TcpStream::connect_timeout(a, PROBE_TIMEOUT).is_ok())
}

/// How long [`resolve`] waits for each of a name's addresses to accept.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// Run one load test and return what it measured.
///
/// Setup problems (unresolvable host, TLS configuration, unwritable `-g`
/// file, zero concurrency) are `Err`; everything that goes wrong with a
/// request is counted in the report's `failures`. The run always ends: at the
/// stop condition, at Ctrl-C (`ctl.stop`, checked every ≤ 20 ms, report marked
/// interrupted) or, with `abort_on_error`, at the first failure.
///
/// Accounting: every request the engine writes ends up in exactly one of
/// `complete_requests`, `failed_requests` or `in_flight_at_end`, so their sum
/// is what the server received. With `-n` exactly n requests are issued
/// (completed + failed = n unless interrupted). Requests the server never
/// saw because it closed a reused keep-alive connection first are resent on a
/// new connection and counted once.
#[cfg(test)]
pub(crate) fn run(cfg: &Load, ctl: &RunControl) -> Result<HttpReport, LoadError> {
    run_with_stats(cfg.clone(), ctl).map(|(report, _)| report)
}

/// [`run`], also returning the merged histograms and counters the report was
/// built from, so runs on several hosts can be merged exactly
/// ([`Stats::merge`], then [`Stats::fill_report`]).
pub(crate) fn run_with_stats(
    mut load: Load,
    ctl: &RunControl,
) -> Result<(HttpReport, Stats), LoadError> {
    check_config(&load)?;
    load.threads = load.threads.clamp(1, load.concurrency);
    check_descriptors(load.concurrency, load.threads)?;
    let per_worker = load.concurrency.div_ceil(load.threads) as usize;
    let engine = load
        .engine
        .resolve(load.target.tls || !load.protocol.is_h1(), per_worker)?;
    write_gnuplot_header(&load)?;
    let shared = shared_state(Arc::new(load), engine)?;
    let workers = make_workers(&shared, ctl)?;
    let total = engine::threads::run_workers(workers, &shared.aborted)?;
    let end = engine::sys::now_ns().min(shared.end_ns);
    let interrupted = ctl.stop.load(std::sync::atomic::Ordering::Relaxed)
        || shared.aborted.load(std::sync::atomic::Ordering::Relaxed);
    if let Some(e) = shared.wire.feed().and_then(feed::Feed::error) {
        return Err(LoadError::Spec(e));
    }
    let mut report = build_report(&shared, &total, (end, interrupted));
    report.engine = Some(engine.name().to_owned());
    let length_ns = end.saturating_sub(shared.measure_ns);
    let arrival = &shared.load.arrival;
    report.series = shared
        .series
        .finish(length_ns, |start, len| arrival.target_per_s(start, len));
    if let Some(v) = arrival.connections() {
        target_connections(&mut report.series, v);
    }
    Ok((report, total))
}

/// Connection stages: each second's mean target of open connections.
fn target_connections(rows: &mut [kurabe_model::series::Interval], ramp: &schedule::arrival::Ramp) {
    for r in rows.iter_mut().filter(|r| r.duration_s > 0.0) {
        let (from, to) = (r.start_s, r.start_s + r.duration_s);
        r.target_connections = Some((ramp.sends_by(to) - ramp.sends_by(from)) / r.duration_s);
    }
}

/// `-g`: the header line goes first, before any worker writes a row.
fn write_gnuplot_header(cfg: &Load) -> Result<(), LoadError> {
    let Some(g) = &cfg.gnuplot_file else {
        return Ok(());
    };
    (&*g.file)
        .write_all(g.header.as_bytes())
        .map_err(|source| LoadError::Gnuplot {
            path: g.path.clone(),
            source,
        })
}

/// The TLS client configuration for an `https://` target.
fn tls_setup(cfg: &Load) -> Result<Option<engine::tls::TlsSetup>, LoadError> {
    if !cfg.target.tls {
        return Ok(None);
    }
    let t = &cfg.target;
    let h2 = match cfg.protocol {
        Protocol::H1 { .. } => false,
        Protocol::H2 { .. } => true,
        // QUIC's TLS is its framing's (`engine::h3::Setup`).
        Protocol::H3 { .. } => return Ok(None),
    };
    engine::tls::TlsSetup::new(&t.host, &cfg.setup.tls, cfg.insecure, h2).map(Some)
}

/// The run's clock: (start, start of the measured phase, end or u64::MAX, wall µs at start).
fn timeline(cfg: &Load) -> (u64, u64, u64, u64) {
    let duration = cfg.stop.limits().1;
    // A duration past u64 nanoseconds (585 years) is "never": saturated,
    // not wrapped (`--warmup 1e13s` wrapped to 59 years and was reported so).
    let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let warmup_ns = cfg.warmup.map_or(0, ns);
    let start_ns = engine::sys::now_ns();
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let measure_ns = start_ns.saturating_add(warmup_ns);
    let end_ns = duration.map_or(u64::MAX, |d| measure_ns.saturating_add(ns(d)));
    (start_ns, measure_ns, end_ns, wall.as_micros() as u64)
}

/// What every worker of the run reads: `load` and what the run makes of
/// it before it starts (the address, the request bytes, the clock).
fn shared_state(load: Arc<Load>, engine: Engine) -> Result<shared::Shared, LoadError> {
    let cfg = &*load;
    let addr = connect_addr(cfg)?;
    let bind = bind_addr(cfg.setup.bind, addr)?;
    let tls = tls_setup(cfg)?;
    let keeps = (cfg.labels.any_checks(), cfg.labels.needs().body);
    let (wire, request_len) = wire_requests(cfg, keeps)?;
    let limit = cfg.stop.limits().0;
    let (start_ns, measure_ns, end_ns, start_unix_us) = timeline(cfg);
    Ok(shared::Shared {
        addr: addr.into(),
        request_len,
        wire,
        timeout_ns: cfg
            .timeout
            .as_nanos()
            .clamp(1_000_000, u64::MAX as u128 / 4) as u64,
        budget: schedule::Budget::new(limit),
        start_ns,
        measure_ns,
        end_ns,
        start_unix_us,
        doc_len: AtomicU64::new(u64::MAX),
        server: OnceLock::new(),
        tls_summary: OnceLock::new(),
        aborted: AtomicBool::new(false),
        series: measure::series::Collector::new(u64::from(cfg.threads)),
        tls,
        // A connection buffer holds at least one response head; keep the total bounded at high -c.
        buf_size: ((16 << 20) / cfg.concurrency as usize).clamp(4096, 64 * 1024),
        bind: bind.map(Into::into),
        uring: engine == Engine::IoUring,
        framing: engine::protocol::Framing::new(cfg.protocol, cfg)?,
        checking: keeps.0,
        keep_body: match keeps {
            (false, _) => 0,
            (true, false) => crate::response_check::SUMMARY_BODY + 1,
            (true, true) => crate::response_check::MAX_CHECKED_BODY,
        },
        load,
    })
}

/// What the run sends, ready on the wire, and the length of one request
/// (of many: the longest, as each connection has one in flight).
fn wire_requests(
    cfg: &Load,
    keeps: (bool, bool),
) -> Result<(requests::Prepared, usize), LoadError> {
    use requests::Prepared;
    let longest = |spans: &[set::Span]| spans.iter().map(|s| s.len).max().unwrap_or(1);
    Ok(match &cfg.requests {
        Requests::Streamed(..) => {
            let feed = start_feed(cfg, keeps)?.expect("a streamed set has a feed");
            // Streamed: each connection copies its one request in flight.
            (Prepared::Streamed(feed), usize::MAX >> 1)
        }
        Requests::Set(set) => {
            let Held {
                bytes,
                spans,
                split,
            } = set_bytes(cfg, set);
            let len = longest(&spans);
            let table = set::Table::new(set, spans, split);
            (Prepared::Set { bytes, table }, len)
        }
        Requests::Replay(r) => {
            // A replay is a set whose target is the schedule's index (see
            // `arrival`): the same spans, one in flight per connection.
            let Held {
                bytes,
                spans,
                split,
            } = replay_bytes(cfg, r);
            let len = longest(&spans);
            let table = set::Table::of_spans(spans, split);
            (Prepared::Replay { bytes, table }, len)
        }
        Requests::One { method, body, .. } => {
            let (bytes, len, split_body) = one_request(cfg, body.as_ref());
            let requests = Prepared::One {
                bytes,
                split_body,
                body_len: body.as_ref().map_or(0, |b| b.len() as u64),
                head: method.eq_ignore_ascii_case("HEAD"),
            };
            (requests, len)
        }
    })
}

/// Refuse a config no run can start with (the CLI checks these too, with its own words).
fn check_config(cfg: &Load) -> Result<(), LoadError> {
    if cfg.concurrency == 0 {
        return Err(LoadError::Config(
            "concurrency (-c) must be at least 1".into(),
        ));
    }
    if let Arrival::Constant(r) = cfg.arrival {
        if !(r.is_finite() && r > 0.0) {
            return Err(LoadError::Config(
                "--rate must be a positive number of requests per second".into(),
            ));
        }
    }
    if let Requests::One { headers, .. } = &cfg.requests {
        crate::header::check_all(headers)?;
    }
    Ok(())
}

/// One worker per thread, the connections spread evenly over them.
fn make_workers<'a>(
    shared: &'a shared::Shared,
    ctl: &'a RunControl,
) -> Result<Vec<ProtocolWorker<'a>>, LoadError> {
    let (cfg, threads) = (&*shared.load, shared.load.threads);
    let mut workers = Vec::with_capacity(threads as usize);
    for t in 0..threads {
        let conns = cfg.concurrency / threads + u32::from(t < cfg.concurrency % threads);
        let gnuplot = match &cfg.gnuplot_file {
            Some(g) => Some(measure::gnuplot::GnuplotWriter::new(g).map_err(|source| {
                LoadError::Gnuplot {
                    path: g.path.clone(),
                    source,
                }
            })?),
            None => None,
        };
        let (index, conns) = (u64::from(t), conns as usize);
        workers.push(match &shared.framing {
            engine::protocol::Framing::H1(h1) => ProtocolWorker::H1(
                engine::h1::Worker::new(shared, *h1, ctl, index, conns, gnuplot)
                    .map_err(LoadError::Resources)?,
            ),
            engine::protocol::Framing::H2(h2) => ProtocolWorker::H2(
                engine::h2::worker::Worker::new(shared, h2, ctl, index, conns, gnuplot)
                    .map_err(LoadError::Resources)?,
            ),
            engine::protocol::Framing::H3(h3) => ProtocolWorker::H3(
                engine::h3::worker::Worker::new(shared, h3, ctl, index, conns, gnuplot)
                    .map_err(LoadError::Resources)?,
            ),
        });
    }
    Ok(workers)
}

/// The record of a finished run: what was asked for (the load), what the
/// run learnt on the way (`shared`) and the figures of `total`; the run
/// ended at `end` (the clock's ns). Its warm-up and measured phase are
/// the times they ran: a run stopped during its warm-up ran part of it
/// and measured nothing (`--warmup 1e13s` stopped early is not
/// reported as 317 000 years of warm-up).
fn build_report(
    shared: &shared::Shared,
    total: &Stats,
    (end, interrupted): (u64, bool),
) -> HttpReport {
    let cfg = &*shared.load;
    let warmup_ns = shared.measure_ns.min(end).saturating_sub(shared.start_ns);
    let measure_unix_s = (shared.start_unix_us + warmup_ns / 1000) / 1_000_000;
    let mut report = HttpReport {
        schema_version: kurabe_model::SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        started_at: kurabe_model::time::rfc3339_secs(measure_unix_s),
        threads: cfg.threads,
        duration_s: end.saturating_sub(shared.measure_ns) as f64 / 1e9,
        warmup_s: warmup_ns as f64 / 1e9,
        interrupted,
        ..describe_target(cfg, shared)
    };
    total.fill_report(&mut report, cfg.arrival.rate());
    report.replay = cfg.arrival.replay().map(|r| r.summary.clone());
    report
}

/// The record's fields that say what was load-tested and how, before any figure.
fn describe_target(cfg: &Load, shared: &shared::Shared) -> HttpReport {
    let doc = shared.doc_len.load(std::sync::atomic::Ordering::Relaxed);
    // A streamed set's labels and count are the feeder's, as far as it read.
    let feed = shared.wire.feed();
    let streamed_labels = feed.and_then(feed::Feed::labels);
    let labels = streamed_labels.as_deref().unwrap_or(&cfg.labels);
    let (method, path) = match &cfg.requests {
        Requests::One { method, .. } => (method.clone(), cfg.target.path.clone()),
        // The record has always said GET of a replay (its methods are
        // the recording's: see the report's replay summary).
        Requests::Replay(_) => ("GET".to_owned(), cfg.target.path.clone()),
        Requests::Set(s) | Requests::Streamed(s, _) => (
            first_method(s, feed),
            format!("{} targets from {}", set_size(s, feed), s.source),
        ),
    };
    HttpReport {
        url: cfg.target.url(),
        method,
        server_software: shared.server.get().cloned(),
        server_hostname: cfg.target.host.clone(),
        server_port: cfg.target.port,
        document_path: path,
        document_length_bytes: if doc == u64::MAX { 0 } else { doc },
        concurrency: cfg.concurrency,
        keep_alive: cfg.protocol.reuses_connections(),
        pipeline: cfg.protocol.pipeline() as u32,
        protocol: cfg.protocol.name(cfg.target.tls).to_owned(),
        http2: cfg.protocol.http2_summary(),
        http3: cfg.protocol.http3_summary(),
        tls: shared.tls_summary.get().cloned(),
        set: cfg.requests.set().map(|s| kurabe_model::http::SetSummary {
            targets: set_size(s, feed),
            ..set_summary(s, labels.names().len())
        }),
        checks: labels.check_texts(),
        ..Default::default()
    }
}

/// A set's targets: held, or as many as the feeder read in a pass.
fn set_size(set: &set::RequestSet, feed: Option<&feed::Feed>) -> u64 {
    feed.map_or(set.targets.len() as u64, feed::Feed::targets)
}

/// A set's method: its targets' one method, or `MIXED`.
fn first_method(set: &set::RequestSet, feed: Option<&feed::Feed>) -> String {
    let first = &set.targets[0].method;
    let mixed = feed.is_some_and(feed::Feed::mixed);
    if !mixed && set.targets.iter().all(|t| &t.method == first) {
        first.clone()
    } else {
        "MIXED".to_owned()
    }
}

/// The record's account of a request set.
fn set_summary(set: &set::RequestSet, names: usize) -> kurabe_model::http::SetSummary {
    kurabe_model::http::SetSummary {
        source: set.source.clone(),
        format: set.format.name().to_owned(),
        targets: set.targets.len() as u64,
        names: names as u64,
        order: set.order.name().to_owned(),
        seed: set.order.is_random().then_some(set.seed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_rule_leaves_cores_to_a_local_server() {
        assert_eq!(default_threads(8, 50, true), 4);
        assert_eq!(default_threads(8, 50, false), 8);
        assert_eq!(default_threads(8, 2, false), 2);
        assert_eq!(default_threads(1, 50, true), 1);
        assert!(is_loopback("127.0.0.1") && is_loopback("::1") && is_loopback("LOCALHOST"));
        assert!(!is_loopback("example.com") && !is_loopback("10.0.0.1"));
    }

    #[test]
    fn of_several_addresses_the_first_that_accepts_is_used() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let open = listener.local_addr().unwrap();
        // A port whose listener is gone refuses.
        let closed = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        assert_eq!(first_accepting(&[closed, open]), Some(open));
        assert_eq!(first_accepting(&[open, closed]), Some(open));
        assert_eq!(first_accepting(&[closed]), None);
    }
}
