//! The Prometheus endpoint: `GET /metrics` answered from a thread of its
//! own with whatever text the caller's source gives at that moment.
//!
//! Owns the listener, the connection bounds and the HTTP it speaks (one
//! request per connection, `Connection: close`). Must not let a client
//! reach the load: every connection has a deadline ([`DEADLINE`] for the
//! request and the answer together), at most [`MAX_CONNECTIONS`] are
//! served at once and at most [`MAX_PER_SECOND`] a second (the rest wait
//! in the kernel's backlog, costing nothing here), and the source is a
//! cheap read of figures the observer already made (an `Arc` clone and a
//! rendering), never a call into the engine.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long one connection may take, request and answer together.
pub const DEADLINE: Duration = Duration::from_secs(2);
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 4;
/// Connections accepted per second, at most.
pub const MAX_PER_SECOND: u32 = 100;
/// The longest request head read.
const MAX_HEAD: usize = 8192;

/// The address could not be listened on.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// Another process listens there already.
    #[error(
        "--prometheus-addr {0}: the address is in use; pick another port (:0 takes any free one)"
    )]
    InUse(SocketAddr),
    /// Anything else the kernel said.
    #[error("--prometheus-addr {addr}: cannot listen there: {source}")]
    Other {
        /// The address asked for.
        addr: SocketAddr,
        /// What the kernel said.
        source: io::Error,
    },
}

/// The text to serve and its content type, made at each request.
pub type Source = Arc<dyn Fn() -> String + Send + Sync>;

/// A bound endpoint, not yet serving.
#[derive(Debug)]
pub struct Endpoint {
    listener: TcpListener,
    addr: SocketAddr,
}

impl Endpoint {
    /// Listen on `addr` (port 0: any free port; see [`Endpoint::local_addr`]).
    pub fn bind(addr: SocketAddr) -> Result<Endpoint, BindError> {
        let listener = TcpListener::bind(addr).map_err(|source| match source.kind() {
            io::ErrorKind::AddrInUse => BindError::InUse(addr),
            _ => BindError::Other { addr, source },
        })?;
        let addr = listener
            .local_addr()
            .map_err(|source| BindError::Other { addr, source })?;
        Ok(Endpoint { listener, addr })
    }

    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serve `source` as `content_type` from a thread of its own until the
    /// returned [`Serving`] is dropped.
    pub fn serve(self, source: Source, content_type: &'static str) -> io::Result<Serving> {
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            served: AtomicU64::new(0),
            busy: AtomicUsize::new(0),
            freed: (Mutex::new(()), Condvar::new()),
        });
        let addr = self.addr;
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("kurabe-metrics".into())
            .spawn(move || accept_loop(&self.listener, &s, &source, content_type))?;
        Ok(Serving {
            shared,
            addr,
            thread: Some(thread),
        })
    }
}

/// What the accept loop and the connection threads share.
struct Shared {
    stop: AtomicBool,
    /// Requests answered with the metrics.
    served: AtomicU64,
    /// Connections being served.
    busy: AtomicUsize,
    /// Signalled when a connection ends (and at the stop).
    freed: (Mutex<()>, Condvar),
}

/// A serving endpoint; dropping it stops the endpoint (connections in
/// progress finish within their deadline on their own).
pub struct Serving {
    shared: Arc<Shared>,
    addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Serving {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serving").field("addr", &self.addr).finish()
    }
}

impl Serving {
    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many metrics requests were answered so far.
    pub fn served(&self) -> u64 {
        self.shared.served.load(Ordering::Relaxed)
    }

    /// Wait until more than `n` metrics requests were answered, or until
    /// `deadline`; true when one was.
    pub fn wait_served_beyond(&self, n: u64, deadline: Instant) -> bool {
        let (m, cv) = &self.shared.freed;
        let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if self.served() > n {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            g = cv
                .wait_timeout(g, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.shared.freed.1.notify_all();
        // Wake the accept: a connection of our own (refused or not, the
        // loop sees the flag next).
        let wake = match self.addr.ip().is_unspecified() {
            true if self.addr.is_ipv4() => SocketAddr::from(([127, 0, 0, 1], self.addr.port())),
            true => SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, self.addr.port())),
            false => self.addr,
        };
        let _ = TcpStream::connect_timeout(&wake, Duration::from_millis(200));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Accept connections until the stop, within the bounds.
fn accept_loop(listener: &TcpListener, sh: &Arc<Shared>, source: &Source, ctype: &'static str) {
    let mut window = (Instant::now(), 0u32);
    while !sh.stop.load(Ordering::Relaxed) {
        wait_for_room(sh);
        pace(&mut window, sh);
        let Ok((stream, _)) = listener.accept() else {
            // Out of descriptors, or a connection reset in the backlog:
            // not ours to fix; the next accept may work.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        if sh.stop.load(Ordering::Relaxed) {
            break;
        }
        sh.busy.fetch_add(1, Ordering::Relaxed);
        let (s, src) = (Arc::clone(sh), Arc::clone(source));
        let spawned = std::thread::Builder::new()
            .name("kurabe-metrics-conn".into())
            .spawn(move || {
                let _ = answer(stream, &src, ctype, &s);
                s.busy.fetch_sub(1, Ordering::Relaxed);
                let _g = s.freed.0.lock();
                s.freed.1.notify_all();
            });
        if spawned.is_err() {
            sh.busy.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Wait while [`MAX_CONNECTIONS`] are being served.
fn wait_for_room(sh: &Shared) {
    let (m, cv) = &sh.freed;
    let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
    while sh.busy.load(Ordering::Relaxed) >= MAX_CONNECTIONS && !sh.stop.load(Ordering::Relaxed) {
        g = cv
            .wait_timeout(g, DEADLINE)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

/// Hold the accept loop to [`MAX_PER_SECOND`] (a one-second window).
fn pace(window: &mut (Instant, u32), sh: &Shared) {
    let now = Instant::now();
    if now >= window.0 + Duration::from_secs(1) {
        *window = (now, 0);
    }
    if window.1 >= MAX_PER_SECOND {
        let (m, cv) = &sh.freed;
        let g = m.lock().unwrap_or_else(|e| e.into_inner());
        // Cut short by the stop; a connection ending early wakes it too,
        // then the next window check holds it again.
        let _ = cv.wait_timeout(
            g,
            (window.0 + Duration::from_secs(1)).saturating_duration_since(now),
        );
        *window = (Instant::now(), 0);
    }
    window.1 += 1;
}

/// Read one request head and answer it, all within [`DEADLINE`].
fn answer(mut stream: TcpStream, source: &Source, ctype: &str, sh: &Shared) -> io::Result<()> {
    let deadline = Instant::now() + DEADLINE;
    let head = read_head(&mut stream, deadline)?;
    let line = head
        .split(|&b| b == b'\r' || b == b'\n')
        .next()
        .unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split(' ');
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    let (status, ctype, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => ("200 OK", ctype, source()),
        ("GET" | "HEAD", _) => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "kurabe serves /metrics only\n".to_owned(),
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
            "GET /metrics\n".to_owned(),
        ),
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if method != "HEAD" {
        out.extend_from_slice(body.as_bytes());
    }
    write_all(&mut stream, &out, deadline)?;
    if status.starts_with("200") {
        sh.served.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// The request head (up to the blank line), by `deadline`.
fn read_head(stream: &mut TcpStream, deadline: Instant) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        if head.len() > MAX_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head too long",
            ));
        }
        stream.set_read_timeout(Some(left(deadline)?))?;
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        head.extend_from_slice(&buf[..n]);
    }
    Ok(head)
}

/// Write `bytes` by `deadline` (a reader that stops reading is cut off then).
fn write_all(stream: &mut TcpStream, bytes: &[u8], deadline: Instant) -> io::Result<()> {
    let mut off = 0;
    while off < bytes.len() {
        stream.set_write_timeout(Some(left(deadline)?))?;
        match stream.write(&bytes[off..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => off += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Time left until `deadline` (an error once it passed).
fn left(deadline: Instant) -> io::Result<Duration> {
    let d = deadline.saturating_duration_since(Instant::now());
    if d.is_zero() {
        return Err(io::ErrorKind::TimedOut.into());
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    fn serving() -> Serving {
        let e = Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let n = AtomicU64::new(0);
        let src: Source = Arc::new(move || format!("n {}\n", n.fetch_add(1, Ordering::Relaxed)));
        e.serve(src, "text/plain").unwrap()
    }

    #[test]
    fn metrics_are_served_and_other_paths_are_not() {
        let s = serving();
        let a = get(s.local_addr(), "/metrics");
        assert!(
            a.starts_with("HTTP/1.1 200 OK\r\n") && a.ends_with("\r\n\r\nn 0\n"),
            "{a}"
        );
        assert!(get(s.local_addr(), "/metrics?x=1").ends_with("n 1\n"));
        assert!(get(s.local_addr(), "/").starts_with("HTTP/1.1 404"));
        assert_eq!(s.served(), 2);
    }

    #[test]
    fn a_taken_address_is_in_use() {
        let s = serving();
        let e = Endpoint::bind(s.local_addr()).unwrap_err();
        assert!(matches!(e, BindError::InUse(_)), "{e}");
        assert!(e
            .to_string()
            .ends_with("the address is in use; pick another port (:0 takes any free one)"));
    }

    #[test]
    fn silent_clients_hold_a_slot_only_until_their_deadline() {
        let s = serving();
        // More silent connections than slots: the endpoint still answers
        // once their deadline frees the slots.
        let silent: Vec<_> = (0..MAX_CONNECTIONS + 2)
            .map(|_| TcpStream::connect(s.local_addr()).unwrap())
            .collect();
        let t0 = Instant::now();
        assert!(get(s.local_addr(), "/metrics").contains("200 OK"));
        assert!(t0.elapsed() < DEADLINE * 4, "{:?}", t0.elapsed());
        drop(silent);
        // Dropping the endpoint returns, silent connections or not.
        let t0 = Instant::now();
        drop(s);
        assert!(t0.elapsed() < DEADLINE * 2);
    }
}
