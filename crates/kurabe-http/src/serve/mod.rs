//! The built-in target server (`kurabe serve`): a small, tunable HTTP/1.1 server
//! for demos, examples and tests, and HTTP/3 beside it on the same port
//! number ([`h3`], `--http3`).
//!
//! [`run`] takes its listener, configuration, counters and shutdown flag as
//! parameters (mini-redis style), so tests bind port 0 in-process and read the
//! counters directly; [`Server`] wraps that in a background thread. Each worker
//! thread runs its own epoll loop over non-blocking connections and shares the
//! listener (`EPOLLEXCLUSIVE`), so thousands of idle keep-alive connections cost
//! no threads. `--latency-ms` delays a response with a per-worker timer queue,
//! never by sleeping, so one slow response does not hold up other connections.
//! Connections are closed after [`ServeConfig::header_timeout`] without a
//! complete request head and after [`ServeConfig::idle_timeout`] without any
//! bytes moving, so idle or slowloris clients cannot hold descriptors forever;
//! out of descriptors, a worker stops polling the listener until one closes.
//!
//! The server counts every request it received completely
//! ([`ServeStats::requests_served`]) so a client's completed + failed +
//! in-flight can be reconciled with it; `GET /__kurabe/stats` returns the
//! counters as JSON and is itself not counted. It never prints.

mod chunked;
pub mod h3;
mod poll;
mod response;
mod work;
mod worker;

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub use response::STATS_PATH;

/// How the server answers every request (except [`STATS_PATH`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeConfig {
    /// Response body length in bytes.
    pub body_bytes: usize,
    /// CPU time to burn per request, on the worker thread's CPU clock, microseconds.
    pub work_us: u64,
    /// Delay before each response is sent, milliseconds (other connections keep being served).
    pub latency_ms: u64,
    /// Wall-clock time each request holds the server's one simulated serial
    /// resource (a lock, a one-connection database), microseconds; 0: none.
    /// Requests queue for it in arrival order across all worker threads and
    /// are answered when their turn ends, without the worker sleeping or
    /// spinning, so the server's capacity is exactly 1e6 / `service_us`
    /// requests per second whatever else the machine runs (`work_us` costs
    /// CPU, so its capacity depends on the CPU the worker gets).
    pub service_us: u64,
    /// Memory to allocate, touch and free per request, KiB.
    pub alloc_kb: usize,
    /// Memory to allocate, touch and keep per request (a deliberate leak), bytes.
    pub leak_bytes: usize,
    /// Response status code.
    pub status: u16,
    /// Send the body with `Transfer-Encoding: chunked` (to HTTP/1.1 clients).
    pub chunked: bool,
    /// Answer `Connection: close` and close after every response.
    pub close: bool,
    /// Worker threads, each with its own event loop (at least 1).
    pub threads: usize,
    /// A request head must arrive completely within this, counted from the
    /// connection's accept or the head's first byte (slowloris protection).
    pub header_timeout: Duration,
    /// A connection with no bytes moving in either direction for this long is
    /// closed (idle keep-alive, a stalled body, a client that stopped reading).
    pub idle_timeout: Duration,
}

/// Largest `body_bytes`: every response variant is built in memory up front.
pub const MAX_BODY_BYTES: usize = 64 << 20;
/// Largest `work_us` (10 s of CPU per request).
pub const MAX_WORK_US: u64 = 10_000_000;
/// Largest `service_us` (10 s per request).
pub const MAX_SERVICE_US: u64 = 10_000_000;
/// Default [`ServeConfig::header_timeout`].
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Default [`ServeConfig::idle_timeout`].
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            body_bytes: 13,
            work_us: 0,
            latency_ms: 0,
            service_us: 0,
            alloc_kb: 0,
            leak_bytes: 0,
            status: 200,
            chunked: false,
            close: false,
            threads: default_threads(),
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
        }
    }
}

impl ServeConfig {
    /// Refuse values the server cannot honour, naming the limit.
    pub fn check(&self) -> io::Result<()> {
        let bad = |msg: String| Err(io::Error::new(io::ErrorKind::InvalidInput, msg));
        if self.body_bytes > MAX_BODY_BYTES {
            return bad(format!(
                "body_bytes {} is above the limit of {MAX_BODY_BYTES} (64 MiB): responses are built in memory",
                self.body_bytes
            ));
        }
        if self.work_us > MAX_WORK_US {
            return bad(format!(
                "work_us {} is above the limit of {MAX_WORK_US} (10 s of CPU per request)",
                self.work_us
            ));
        }
        if self.service_us > MAX_SERVICE_US {
            return bad(format!(
                "service_us {} is above the limit of {MAX_SERVICE_US} (10 s per request)",
                self.service_us
            ));
        }
        if self.header_timeout.is_zero() || self.idle_timeout.is_zero() {
            return bad("header and idle timeouts must be above zero".into());
        }
        Ok(())
    }
}

/// One worker per CPU the process may use.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Counters a running server updates; read them any time.
#[derive(Debug, Default)]
pub struct ServeStats {
    /// Requests received completely (head and body) and answered or being answered; stats requests excluded.
    pub requests_served: AtomicU64,
    /// Of those, requests that carried a non-empty body.
    pub requests_with_body: AtomicU64,
    /// Request body bytes received (after removing chunked framing).
    pub body_bytes_received: AtomicU64,
    /// TCP connections and QUIC (HTTP/3) connections accepted.
    pub connections_accepted: AtomicU64,
    /// Bytes deliberately retained by `leak_bytes`.
    pub leaked_bytes: AtomicU64,
    /// The count [`ServeStats::wait_served`] waits for; 0 while nobody waits.
    served_goal: AtomicU64,
    /// Triggered when `requests_served` reaches `served_goal`.
    goal_reached: kurabe_stop::Stop,
}

impl ServeStats {
    /// Count one served request, waking a [`ServeStats::wait_served`]
    /// whose goal it reaches (one extra atomic load when nobody waits).
    pub fn note_served(&self) {
        let served = self.requests_served.fetch_add(1, Ordering::SeqCst) + 1;
        let goal = self.served_goal.load(Ordering::SeqCst);
        if goal != 0 && served >= goal {
            self.goal_reached.trigger(None);
        }
    }

    /// Block until `goal` requests were served or `timeout` passed (requests
    /// still in socket buffers when a client stopped are counted as they are
    /// read); returns the count then. For one waiter, once: the first goal
    /// reached stays reached.
    pub fn wait_served(&self, goal: u64, timeout: Duration) -> u64 {
        if goal > 0 {
            // Goal first, count second; `note_served` does the reverse, so
            // one of the two sees the other (both SeqCst).
            self.served_goal.store(goal, Ordering::SeqCst);
            if self.requests_served.load(Ordering::SeqCst) < goal {
                self.goal_reached.wait_timeout(timeout);
            }
        }
        self.requests_served.load(Ordering::SeqCst)
    }

    /// The counters as the JSON object `GET /__kurabe/stats` returns.
    pub fn to_json(&self) -> String {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        format!(
            "{{\"requests_served\":{},\"requests_with_body\":{},\"body_bytes_received\":{},\"connections_accepted\":{},\"leaked_bytes\":{}}}",
            get(&self.requests_served),
            get(&self.requests_with_body),
            get(&self.body_bytes_received),
            get(&self.connections_accepted),
            get(&self.leaked_bytes),
        )
    }
}

/// `http://HOST:PORT/` for a bound address, IPv6 hosts in brackets.
pub fn url_of(addr: SocketAddr) -> String {
    format!("http://{addr}/")
}

/// Bind a listening socket on `addr` with a deep accept backlog.
///
/// std's `TcpListener::bind` uses a backlog of 128, which drops SYNs (and adds
/// 1 s retransmit stalls) when a client opens a thousand connections at once.
pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(4096)?;
    Ok(socket.into())
}

/// What a server answers on: its TCP listener (HTTP/1.1), and with
/// HTTP/3 a UDP socket on the same port number ([`h3::Http3::bind`]).
pub struct Listeners {
    tcp: TcpListener,
    http3: Option<h3::Http3>,
}

impl Listeners {
    /// HTTP/3 on `http3` beside the TCP listener.
    pub fn with_http3(self, http3: h3::Http3) -> Listeners {
        Listeners {
            http3: Some(http3),
            ..self
        }
    }
}

impl From<TcpListener> for Listeners {
    fn from(tcp: TcpListener) -> Listeners {
        Listeners { tcp, http3: None }
    }
}

/// Serve on `listeners` with `cfg.threads` HTTP/1.1 workers (and one
/// HTTP/3 thread) until `shutdown` is set.
///
/// Returns once every worker has stopped; open connections are closed then.
/// Errors are setup failures (epoll, listener); per-connection errors just
/// close that connection.
pub fn run(
    listeners: impl Into<Listeners>,
    cfg: &ServeConfig,
    stats: &ServeStats,
    shutdown: &AtomicBool,
) -> io::Result<()> {
    let Listeners { tcp, http3 } = listeners.into();
    cfg.check()?;
    tcp.set_nonblocking(true)?;
    let threads = cfg.threads.max(1);
    let work = work::Work::new(cfg, stats, shutdown);
    let shared = worker::Shared::new((cfg, stats, shutdown), &work, &tcp, threads)?;
    std::thread::scope(|scope| {
        let mut handles: Vec<_> = (0..threads)
            .map(|i| {
                let shared = &shared;
                std::thread::Builder::new()
                    .name(format!("kurabe-serve-{i}"))
                    .spawn_scoped(scope, move || worker::Worker::new(shared, i)?.run())
            })
            .collect::<io::Result<_>>()?;
        if let Some(http3) = http3 {
            let work = &work;
            let thread = std::thread::Builder::new().name("kurabe-serve-h3".into());
            handles.push(thread.spawn_scoped(scope, move || h3::run(http3, work, stats))?);
        }
        let mut first_err = Ok(());
        for h in handles {
            let res = h
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("server worker panicked")));
            if res.is_err() && first_err.is_ok() {
                // One worker failing stops the others too: a half-running server would skew results.
                shutdown.store(true, Ordering::Relaxed);
                first_err = res;
            }
        }
        first_err
    })
}

/// A server running on background threads; stopped and joined on drop.
pub struct Server {
    addr: SocketAddr,
    stats: Arc<ServeStats>,
    shutdown: Arc<AtomicBool>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl Server {
    /// Start serving `listeners` in the background.
    pub fn start(listeners: impl Into<Listeners>, cfg: ServeConfig) -> io::Result<Self> {
        let listeners = listeners.into();
        let addr = listeners.tcp.local_addr()?;
        let stats = Arc::new(ServeStats::default());
        let shutdown = Arc::new(AtomicBool::new(false));
        let thread = {
            let (stats, shutdown) = (stats.clone(), shutdown.clone());
            std::thread::Builder::new()
                .name("kurabe-serve".into())
                .spawn(move || run(listeners, &cfg, &stats, &shutdown))?
        };
        Ok(Self {
            addr,
            stats,
            shutdown,
            thread: Some(thread),
        })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Live counters.
    pub fn stats(&self) -> &ServeStats {
        &self.stats
    }

    /// Stop the workers and wait for them; returns the first worker error.
    pub fn stop(mut self) -> io::Result<()> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> io::Result<()> {
        self.shutdown.store(true, Ordering::Relaxed);
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("server thread panicked"))),
            None => Ok(()),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.stop_inner();
    }
}

/// How often idle workers look at the shutdown flag.
const SHUTDOWN_POLL: Duration = Duration::from_millis(50);

#[cfg(test)]
mod tests;
