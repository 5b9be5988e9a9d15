//! A self-contained HTTP/3 load: N requests over C connections × S
//! streams, closed model, on one thread's epoll loop, into the engine's
//! [`Stats`]. One connected UDP socket per connection (see [`Link`] for
//! why), one `quinn-proto` [`Endpoint`] for them all, timers from the
//! connections' own deadlines.
//!
//! Owns the loop, the budget, per-request timeouts and the accounting of
//! this interim entry. Must not parse frames ([`super::conn`] does). It
//! goes away when the engine's `Protocol` enum takes HTTP/3: the engine's
//! core then claims, times out and counts, and a worker drives [`Link`]s.

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use quinn_proto::{ClientConfig, ConnectionHandle, DatagramEvent, Endpoint, EndpointConfig};

use super::conn::{H3Conn, Stream, StreamState};
use super::response::Fail;
use super::{frame, Request, Setup};
use crate::client::engine::slot::Slot;
use crate::client::engine::sys::{self, Epoll};
use crate::client::{LoadError, Target};
use kurabe_model::failures::FailureKind;
use kurabe_model::load_stats::Stats;

/// An HTTP/3 load to run (the interim entry's whole input).
#[derive(Debug, Clone)]
pub struct H3Load {
    /// An `https://` URL.
    pub url: String,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Connections (`-c`).
    pub connections: usize,
    /// Requests in flight per connection (`--streams`).
    pub streams: usize,
    /// Requests in all (`-n`).
    pub requests: u64,
    /// Per request, from its start (`-s`); also bounds a handshake.
    pub timeout: Duration,
    /// Skip certificate verification (`--insecure`).
    pub insecure: bool,
    /// Trust the certificates in this PEM file instead of the system store.
    pub ca_file: Option<PathBuf>,
}

/// What QUIC itself measured over a run's connections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QuicFacts {
    /// Handshakes completed.
    pub handshakes: u64,
    /// Their summed duration, ns (from the first Initial to `Connected`).
    pub handshake_ns: u64,
    /// UDP datagrams sent and received.
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    /// QUIC packets sent, and declared lost.
    pub packets_sent: u64,
    pub packets_lost: u64,
    /// Smoothed RTT of the last connection closed, µs.
    pub rtt_us: u64,
}

/// What a run measured.
#[derive(Clone)]
pub struct H3Run {
    pub stats: Stats,
    pub quic: QuicFacts,
    /// The first response's `server` field.
    pub server: Option<String>,
    /// The first failure of each kind that happened, with its reason.
    pub reasons: Vec<(FailureKind, String)>,
    /// From the first connect to the last answer.
    pub elapsed: Duration,
}

/// Events taken per `epoll_wait`.
const EVENTS: usize = 256;
/// Largest UDP payload read.
const DATAGRAM: usize = 65_536;

/// One connection: its socket, its QUIC and HTTP/3 state.
///
/// A connected UDP socket per connection, not one shared: the kernel
/// demultiplexes by 4-tuple as it does for TCP, an ICMP port-unreachable
/// fails the one connection at once (ECONNREFUSED) instead of waiting out
/// a handshake timeout, each connection has its own source port as each
/// TCP connection does (servers spreading UDP by SO_REUSEPORT see distinct
/// flows), and the socket is the epoll token, so no lookup by connection ID.
struct Link {
    sock: UdpSocket,
    handle: ConnectionHandle,
    h3: H3Conn,
    connect_start: u64,
    /// The request claimed with the connect, opened once the handshake is done.
    first: Option<Slot>,
    /// The connection's drain was started (closed by us or the peer).
    closing: bool,
}

/// The interim driver's state.
struct Driver<'a> {
    load: &'a H3Load,
    setup: Setup,
    endpoint: Endpoint,
    config: ClientConfig,
    addr: SocketAddr,
    host: String,
    ep: Epoll,
    links: Vec<Option<Link>>,
    /// Requests claimed (≤ `load.requests`) and accounted for.
    claimed: u64,
    settled: u64,
    /// Requests a GOAWAY refused, to send again first.
    retry: VecDeque<Slot>,
    stats: Stats,
    quic: QuicFacts,
    server: Option<String>,
    reasons: Vec<(FailureKind, String)>,
    now: u64,
    instant: Instant,
    tx: Vec<u8>,
    rx: Vec<u8>,
}

/// Run `load` to the end; `Err` only for a setup problem (URL, TLS, sockets).
pub fn run(load: &H3Load) -> Result<H3Run, LoadError> {
    let mut d = Driver::new(load)?;
    let start = Instant::now();
    for i in 0..d.links.len() {
        d.start(i);
    }
    d.run_loop();
    d.close_all();
    Ok(H3Run {
        stats: d.stats,
        quic: d.quic,
        server: d.server,
        reasons: d.reasons,
        elapsed: start.elapsed(),
    })
}

impl<'a> Driver<'a> {
    fn new(load: &'a H3Load) -> Result<Driver<'a>, LoadError> {
        let target = Target::parse(&load.url).map_err(|e| LoadError::Config(e.to_string()))?;
        if !target.tls {
            return Err(LoadError::Config(format!(
                "HTTP/3 needs an https:// URL, not {}",
                load.url
            )));
        }
        let addr = (target.host.as_str(), target.port)
            .to_socket_addrs()
            .and_then(|mut a| a.next().ok_or_else(|| io::Error::other("no address")))
            .map_err(|source| LoadError::Resolve {
                host: target.host.clone(),
                source,
            })?;
        let authority = target.host_header();
        let setup = Setup::new([Request {
            method: &load.method,
            scheme: "https",
            authority: &authority,
            path: &target.path,
            headers: &load.headers,
            body: &load.body,
        }]);
        let streams = load.streams.max(1);
        let config = super::tls::client_config(load.insecure, load.ca_file.as_deref(), streams)?;
        let setup_err =
            |e: io::Error| LoadError::Config(format!("cannot start the HTTP/3 loop: {e}"));
        Ok(Driver {
            load,
            setup,
            endpoint: Endpoint::new(Arc::new(EndpointConfig::default()), None, false, None),
            config,
            addr,
            host: target.host.clone(),
            ep: Epoll::new().map_err(setup_err)?,
            links: (0..load.connections.max(1)).map(|_| None).collect(),
            claimed: 0,
            settled: 0,
            retry: VecDeque::new(),
            stats: Stats::new(),
            quic: QuicFacts::default(),
            server: None,
            reasons: Vec::new(),
            now: sys::now_ns(),
            instant: Instant::now(),
            tx: Vec::with_capacity(1500),
            rx: vec![0; DATAGRAM],
        })
    }

    fn clock(&mut self) {
        self.now = sys::now_ns();
        self.instant = Instant::now();
    }

    /// The next request to send: one a GOAWAY refused, else a new one from the budget.
    fn claim(&mut self) -> Option<Slot> {
        if let Some(mut s) = self.retry.pop_front() {
            s.start = self.now;
            return Some(s);
        }
        if self.claimed >= self.load.requests {
            return None;
        }
        self.claimed += 1;
        Some(Slot {
            start: self.now,
            sent: 0,
            intended: 0,
            connect_ns: 0,
            measured: true,
            target: 0,
            tag: Default::default(),
        })
    }

    /// Every request is accounted for.
    fn finished(&self) -> bool {
        self.settled >= self.load.requests
    }

    // ----- connections -----------------------------------------------------

    /// Open connection `i` with a request claimed for it (none left: it stays closed).
    fn start(&mut self, i: usize) {
        let Some(slot) = self.claim() else {
            return;
        };
        match self.connect(i) {
            Ok(mut link) => {
                link.first = Some(slot);
                self.links[i] = Some(link);
                self.drive(i);
            }
            Err((kind, why)) => self.fail(&slot, kind, why),
        }
    }

    fn connect(&mut self, i: usize) -> Result<Link, (FailureKind, String)> {
        let local: SocketAddr = match self.addr {
            SocketAddr::V4(_) => ([0, 0, 0, 0], 0).into(),
            SocketAddr::V6(_) => ([0u16; 8], 0).into(),
        };
        let io_fail = |e: io::Error| {
            (
                crate::client::shared::socket_failure_kind(&e),
                format!("UDP socket: {e}"),
            )
        };
        let sock = UdpSocket::bind(local).map_err(io_fail)?;
        sock.connect(self.addr).map_err(io_fail)?;
        sock.set_nonblocking(true).map_err(io_fail)?;
        self.ep.add(sock.as_raw_fd(), i as u64).map_err(io_fail)?;
        let (handle, quic) = self
            .endpoint
            .connect(self.instant, self.config.clone(), self.addr, &self.host)
            .map_err(|e| (FailureKind::Connect, format!("QUIC connect: {e}")))?;
        Ok(Link {
            sock,
            handle,
            h3: H3Conn::new(quic),
            connect_start: self.now,
            first: None,
            closing: false,
        })
    }

    /// Act on connection `i` after anything happened to it: HTTP/3 events,
    /// new streams, settled ones, datagrams out; replace it once it is gone.
    fn drive(&mut self, i: usize) {
        let Some(link) = self.links[i].as_mut() else {
            return;
        };
        let setup = &self.setup;
        let was_connected = link.h3.connected;
        link.h3
            .on_events(self.now, self.server.is_none(), |t| setup.request(t));
        if !was_connected && link.h3.connected {
            self.quic.handshakes += 1;
            self.quic.handshake_ns += self.now - link.connect_start;
        }
        self.take_server(i);
        self.settle(i);
        self.refill(i);
        self.transmit(i);
        self.check_lost(i);
    }

    fn take_server(&mut self, i: usize) {
        if self.server.is_none() {
            if let Some(l) = self.links[i].as_mut() {
                self.server = l.h3.server.take();
            }
        }
    }

    /// Open streams up to `--streams` (the first with the connect's request).
    fn refill(&mut self, i: usize) {
        loop {
            let link = self.links[i].as_mut().expect("a live link");
            if link.h3.capacity(self.load.streams.max(1)) == 0 || link.closing {
                return;
            }
            let slot = match link.first.take() {
                Some(mut s) => {
                    s.connect_ns = self.now - s.start;
                    s
                }
                None => match self.claim() {
                    Some(s) => s,
                    None => return,
                },
            };
            let link = self.links[i].as_mut().expect("a live link");
            let bytes = self.setup.request(slot.target);
            let head = self.setup.head[slot.target as usize];
            if !link.h3.open(
                Slot {
                    sent: self.now,
                    ..slot
                },
                bytes,
                head,
            ) {
                self.retry.push_front(slot);
                return;
            }
        }
    }

    /// Count every stream that ended and drop it from the connection.
    fn settle(&mut self, i: usize) {
        let mut k = 0;
        loop {
            let Some(link) = self.links[i].as_mut() else {
                return;
            };
            let Some(s) = link.h3.streams.get(k) else {
                return;
            };
            if s.state == StreamState::Open {
                k += 1;
                continue;
            }
            let served = link.h3.served;
            let s = link.h3.streams.swap_remove(k);
            match s.state.clone() {
                StreamState::Done => self.complete(&s),
                StreamState::Failed(f) => self.fail(&s.slot, f.kind, f.why),
                StreamState::Refused if served > 0 => self.retry.push_back(s.slot),
                StreamState::Refused => self.fail(
                    &s.slot,
                    FailureKind::Receive,
                    "the server refused the request with GOAWAY on a new connection".into(),
                ),
                StreamState::Open => unreachable!("skipped above"),
            }
        }
    }

    /// Send every datagram the connection has, then pass its endpoint events on.
    fn transmit(&mut self, i: usize) {
        let Some(link) = self.links[i].as_mut() else {
            return;
        };
        let fd = link.sock.as_raw_fd();
        loop {
            self.tx.clear();
            let Some(t) = link.h3.quic.poll_transmit(self.instant, 1, &mut self.tx) else {
                break;
            };
            match sys::send(fd, &self.tx[..t.size]) {
                Ok(_) => self.quic.datagrams_sent += 1,
                // A full socket buffer drops the datagram; QUIC's loss recovery resends.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => {
                    link.h3
                        .lost
                        .get_or_insert(send_failed(&e, link.h3.connected));
                    break;
                }
            }
        }
        while let Some(ev) = link.h3.quic.poll_endpoint_events() {
            if let Some(back) = self.endpoint.handle_event(link.handle, ev) {
                link.h3.quic.handle_event(back);
            }
        }
    }

    /// A connection that failed: fail what is on it, close it, open a
    /// replacement while requests remain. One that drained: forget it.
    fn check_lost(&mut self, i: usize) {
        let Some(link) = self.links[i].as_mut() else {
            return;
        };
        if let Some(f) = link.h3.lost.clone() {
            if !link.closing {
                link.closing = true;
                link.h3.close(self.instant, f.code.max(frame::H3_NO_ERROR));
                self.transmit(i);
            }
            let link = self.links[i].as_mut().expect("a live link");
            let mut failed: Vec<Slot> = link.h3.streams.drain(..).map(|s: Stream| s.slot).collect();
            failed.extend(link.first.take());
            for slot in &failed {
                self.fail(slot, f.kind, f.why.clone());
            }
            self.finish_link(i);
        } else if link.h3.quic.is_drained() {
            self.finish_link(i);
        }
    }

    /// Forget connection `i` (its facts kept) and start another while requests remain.
    fn finish_link(&mut self, i: usize) {
        if let Some(link) = self.links[i].take() {
            let st = link.h3.quic.stats();
            self.quic.packets_sent += st.path.sent_packets;
            self.quic.packets_lost += st.path.lost_packets;
            self.quic.datagrams_received += st.udp_rx.datagrams;
            self.quic.rtt_us = st.path.rtt.as_micros() as u64;
        }
        if !self.finished() {
            self.start(i);
        }
    }

    // ----- the loop --------------------------------------------------------

    fn run_loop(&mut self) {
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS];
        while !self.finished() {
            let wait = self.next_deadline().map(|d| d.saturating_sub(self.now));
            let n = self.ep.wait(&mut events, wait);
            self.clock();
            for ev in &events[..n] {
                self.on_socket(ev.u64 as usize);
            }
            self.on_timers();
            if self.links.iter().all(Option::is_none) && self.retry.is_empty() {
                // Nothing can progress (every connect failed at once).
                break;
            }
        }
    }

    /// The earliest QUIC timer or request deadline, ns on the run's clock.
    fn next_deadline(&mut self) -> Option<u64> {
        let timeout = self.load.timeout.as_nanos() as u64;
        let (now, instant) = (self.now, self.instant);
        let mut next: Option<u64> = None;
        for link in self.links.iter_mut().flatten() {
            let quic = link
                .h3
                .quic
                .poll_timeout()
                .map(|t| now + t.saturating_duration_since(instant).as_nanos() as u64);
            let req = link.h3.streams.iter().map(|s| s.slot.start + timeout).min();
            let hs = (!link.h3.connected).then_some(link.connect_start + timeout);
            for d in [quic, req, hs].into_iter().flatten() {
                next = Some(next.map_or(d, |n: u64| n.min(d)));
            }
        }
        next
    }

    /// Read every datagram waiting on connection `i`'s socket, then drive it.
    fn on_socket(&mut self, i: usize) {
        loop {
            let Some(link) = self.links[i].as_mut() else {
                return;
            };
            match sys::recv(link.sock.as_raw_fd(), &mut self.rx) {
                Ok(n) => {
                    let data = BytesMut::from(&self.rx[..n]);
                    self.tx.clear();
                    match self.endpoint.handle(
                        self.instant,
                        self.addr,
                        None,
                        None,
                        data,
                        &mut self.tx,
                    ) {
                        Some(DatagramEvent::ConnectionEvent(h, ev)) if h == link.handle => {
                            link.h3.quic.handle_event(ev);
                        }
                        Some(DatagramEvent::Response(t)) => {
                            let _ = sys::send(link.sock.as_raw_fd(), &self.tx[..t.size]);
                        }
                        _ => {}
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    link.h3
                        .lost
                        .get_or_insert(send_failed(&e, link.h3.connected));
                    break;
                }
            }
        }
        self.drive(i);
    }

    /// QUIC timers that are due, and requests and handshakes past `-s`.
    fn on_timers(&mut self) {
        let timeout = self.load.timeout.as_nanos() as u64;
        for i in 0..self.links.len() {
            let Some(link) = self.links[i].as_mut() else {
                continue;
            };
            let mut due = link
                .h3
                .quic
                .poll_timeout()
                .is_some_and(|t| t <= self.instant);
            if due {
                link.h3.quic.handle_timeout(self.instant);
            }
            if !link.h3.connected && self.now >= link.connect_start + timeout {
                let t = self.load.timeout;
                link.h3.lost.get_or_insert(Fail {
                    kind: FailureKind::Connect,
                    code: frame::H3_NO_ERROR,
                    conn: true,
                    why: format!("no QUIC handshake within {t:?} (-s)"),
                });
                due = true;
            }
            // Only a connection something happened to is driven: a wake-up
            // costs O(connections that changed), not O(connections).
            if self.expire(i, timeout) || due {
                self.drive(i);
            }
        }
    }

    /// Cancel the streams of connection `i` past their deadline; whether any was.
    fn expire(&mut self, i: usize, timeout: u64) -> bool {
        let now = self.now;
        let Some(link) = self.links[i].as_mut() else {
            return false;
        };
        let mut timed_out = Vec::new();
        let mut k = 0;
        while k < link.h3.streams.len() {
            if now >= link.h3.streams[k].slot.start + timeout {
                timed_out.push(link.h3.cancel(k).slot);
            } else {
                k += 1;
            }
        }
        let t = self.load.timeout;
        let any = !timed_out.is_empty();
        for slot in timed_out {
            self.fail(
                &slot,
                FailureKind::Timeout,
                format!("no complete response within {t:?} (-s)"),
            );
        }
        any
    }

    /// The end: close every connection (H3_NO_ERROR) and send the closes.
    fn close_all(&mut self) {
        self.clock();
        for i in 0..self.links.len() {
            if let Some(link) = self.links[i].as_mut() {
                link.h3.close(self.instant, frame::H3_NO_ERROR);
                self.transmit(i);
            }
        }
        for i in 0..self.links.len() {
            if let Some(link) = self.links[i].take() {
                let st = link.h3.quic.stats();
                self.quic.packets_sent += st.path.sent_packets;
                self.quic.packets_lost += st.path.lost_packets;
                self.quic.datagrams_received += st.udp_rx.datagrams;
                self.quic.rtt_us = st.path.rtt.as_micros() as u64;
            }
        }
    }

    // ----- accounting ------------------------------------------------------

    fn complete(&mut self, s: &Stream) {
        self.settled += 1;
        let st = &mut self.stats;
        let status = s.response.status;
        st.counters.completed += 1;
        st.counters.status.count(status);
        if !(200..300).contains(&status) {
            st.counters.non_2xx += 1;
        }
        st.counters.body_bytes += s.response.body;
        let total = (self.now.saturating_sub(s.slot.start) / 1000).max(1);
        let wait = s.first_byte.saturating_sub(s.slot.sent) / 1000;
        let _ = st.total.record(total);
        let _ = st.connect.record(s.slot.connect_ns / 1000);
        let _ = st
            .processing
            .record(total.saturating_sub(s.slot.connect_ns / 1000));
        let _ = st.waiting.record(wait);
    }

    fn fail(&mut self, slot: &Slot, kind: FailureKind, why: String) {
        self.settled += 1;
        self.stats.fail(kind, 1);
        let _ = slot;
        if !self.reasons.iter().any(|(k, _)| *k == kind) {
            self.reasons.push((kind, why));
        }
    }
}

/// A socket error on connection's send or receive: ECONNREFUSED is ICMP
/// port-unreachable (nothing listens on that UDP port).
fn send_failed(e: &io::Error, connected: bool) -> Fail {
    let refused = e.raw_os_error() == Some(libc::ECONNREFUSED);
    Fail {
        kind: if connected && !refused {
            FailureKind::Receive
        } else {
            FailureKind::Connect
        },
        code: frame::H3_NO_ERROR,
        conn: true,
        why: if refused {
            "nothing answers on that UDP port (ICMP port unreachable): is HTTP/3 enabled on the server?".into()
        } else {
            format!("UDP: {e}")
        },
    }
}
