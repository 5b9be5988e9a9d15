//! One HTTP/3 load-generator thread: an epoll loop over its connections,
//! each a connected UDP socket and a `quinn-proto` connection carrying
//! up to `--streams` requests.
//!
//! The same turn loop, budget, `--rate` schedule, warm-up, pace, failure
//! accounting and drain as the other protocols: the shared core's
//! ([`crate::client::engine::turns`], [`crate::client::engine::core`]), which this worker
//! serves as [`Connections`]. What QUIC adds: each connection has timers
//! of its own (loss detection, ACK delay, idle), kept per connection
//! ([`Link::timer`]) and waited for with the socket events; the datagrams
//! a connection has to send go out after anything happened to it.
//!
//! A connected UDP socket and an `Endpoint` per connection, not one
//! shared: the kernel demultiplexes by 4-tuple as it does for TCP, an ICMP
//! port-unreachable fails the one connection at once (ECONNREFUSED)
//! instead of waiting out a handshake, each connection has its own source
//! port as each TCP connection does (servers spreading UDP by
//! SO_REUSEPORT see distinct flows), the socket is the epoll token, and a
//! connection's QUIC state goes with it when it ends.
//!
//! Owns the connection life cycle (connect, handshake, refill, settle,
//! retry after GOAWAY, time out, close) and QUIC's facts in the counters.
//! Must not parse frames ([`super::conn`] does).

use std::collections::VecDeque;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use quinn_proto::{ConnectionHandle, DatagramEvent, Endpoint, EndpointConfig};
use socket2::Socket;

use super::conn::{H3Conn, Stream, StreamState};
use super::response::Fail;
use super::{frame, Req, Setup};
use crate::client::engine::connections::{Connections, Parts, View};
use crate::client::engine::core::{self as shared_core, Core};
use crate::client::engine::free::{FreeList, Listed};
use crate::client::engine::slot::Slot;
use crate::client::engine::sys::{self, Epoll};
use crate::client::measure::gnuplot::GnuplotWriter;
use crate::client::measure::record::Answer;
use crate::client::shared::Shared;
use crate::client::RunControl;
use kurabe_model::failures::FailureKind;

/// Events taken per `epoll_wait`.
const EVENTS: usize = 1024;
/// epoll token of the ticker.
const TICK_TOKEN: u64 = u64::MAX;
/// Largest UDP payload read.
const DATAGRAM: usize = 65_536;

/// One live connection: its socket, QUIC endpoint and HTTP/3 state.
struct Link {
    sock: Socket,
    endpoint: Endpoint,
    handle: ConnectionHandle,
    h3: H3Conn,
    connect_start: u64,
    /// Requests claimed for this connection and not on a stream yet (while
    /// the handshake runs, or the server's stream limit holds them back).
    waiting: VecDeque<(Slot, Req)>,
    /// QUIC's next timer, ns on the run's clock (`u64::MAX`: none).
    timer: u64,
}

impl Link {
    /// Requests this connection could still take, of `streams` in flight.
    fn room(&mut self, streams: usize) -> usize {
        let taken = self.h3.streams.len() + self.waiting.len();
        match self.h3.goaway.is_some() || self.h3.lost.is_some() {
            true => 0,
            false => streams.saturating_sub(taken),
        }
    }
}

/// A connection slot: live or closed, and whether it is in the open model's free list.
#[derive(Default)]
pub(crate) struct Conn {
    link: Option<Link>,
    free: bool,
}

impl Listed for Conn {
    fn listed(&mut self) -> &mut bool {
        &mut self.free
    }

    fn idle(&self) -> bool {
        (self.link.as_ref()).is_none_or(|l| l.h3.streams.is_empty() && l.waiting.is_empty())
    }
}

/// How a connection ended, for the requests still on it.
#[derive(Debug, Clone)]
enum End {
    /// Count every measured request on it in this bucket, with this reason.
    Fail(Fail),
    /// Nothing open (GOAWAY honoured, or the run is over).
    Done,
}

/// One HTTP/3 worker's state.
pub(crate) struct Worker<'a> {
    core: Core<'a>,
    h3: &'a Setup,
    ep: Epoll,
    events: Vec<libc::epoll_event>,
    endpoint_config: Arc<EndpointConfig>,
    conns: Vec<Conn>,
    /// Requests to send again (refused by a GOAWAY), before any new one.
    pending: VecDeque<(Slot, Req)>,
    /// Open model: connections that may take a request now.
    free: FreeList,
    /// Body bytes a stream keeps for the checks (None: nothing is checked).
    keep_body: Option<usize>,
    /// The run's clock (ns) and quinn's at one moment: `Instant`s are
    /// derived from `core.now`, so both clocks agree.
    base: (u64, Instant),
    tx: Vec<u8>,
    rx: Vec<u8>,
}

impl<'a> Worker<'a> {
    pub fn new(
        sh: &'a Shared,
        h3: &'a Setup,
        ctl: &'a RunControl,
        index: u64,
        conns: usize,
        gnuplot: Option<GnuplotWriter>,
    ) -> io::Result<Worker<'a>> {
        let core = Core::new(sh, ctl, index, (conns, conns * h3.streams), false, gnuplot)?;
        let ep = Epoll::new()?;
        ep.add(core.pace.ticker.fd(), TICK_TOKEN)?;
        let base = (core.now, Instant::now());
        Ok(Worker {
            core,
            h3,
            ep,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS],
            endpoint_config: Arc::new(EndpointConfig::default()),
            conns: (0..conns).map(|_| Conn::default()).collect(),
            pending: VecDeque::new(),
            free: FreeList::new(conns),
            keep_body: sh.checking.then_some(sh.keep_body),
            base,
            tx: Vec::with_capacity(1500),
            rx: vec![0; DATAGRAM],
        })
    }

    /// quinn's clock at `core.now`.
    fn instant(&self) -> Instant {
        self.base.1 + Duration::from_nanos(self.core.now.saturating_sub(self.base.0))
    }

    /// `t` on the run's clock.
    fn ns_of(&self, t: Instant) -> u64 {
        self.base.0 + t.saturating_duration_since(self.base.1).as_nanos() as u64
    }

    // ----- requests --------------------------------------------------------

    /// A request to send: one refused earlier, else a new one from the budget.
    fn claim(&mut self) -> Option<(Slot, Req)> {
        if self.core.draining {
            return None;
        }
        if let Some(again) = self.again() {
            return Some(again);
        }
        if self.core.schedule.is_some() {
            return None;
        }
        let slot = self.core.claim()?;
        Some((slot, self.req(&slot)))
    }

    /// A request a GOAWAY refused, restarted now.
    fn again(&mut self) -> Option<(Slot, Req)> {
        let (mut s, req) = self.pending.pop_front()?;
        (s.start, s.sent, s.connect_ns) = (self.core.now, 0, 0);
        Some((s, req))
    }

    /// Where the request just picked for `slot` is: a streamed set's is in
    /// the chunk it was picked from.
    fn req(&self, slot: &Slot) -> Req {
        match self.core.streamed_chunk() {
            Some(chunk) => Req::Streamed(Arc::clone(chunk), slot.target),
            None => Req::Held,
        }
    }

    /// Connect `ci` with request `r` waiting for the handshake; a connect
    /// that fails at once fails `r` too, so a dead address cannot loop.
    fn connect_with(&mut self, ci: usize, r: (Slot, Req)) {
        match self.connect(ci) {
            Ok(()) => {
                if let Some(link) = &mut self.conns[ci].link {
                    link.waiting.push_back(r);
                }
                self.drive(ci);
            }
            Err(kind) => {
                if r.0.measured {
                    self.core.fail_slot(&r.0, kind);
                }
                self.core.restart.push(ci as u32);
            }
        }
    }

    /// Closed model: claim requests up to `--streams`; both models: put
    /// what waits on streams once the handshake is done.
    fn refill(&mut self, ci: usize) {
        if self.core.sh.load.arrival.is_open() {
            self.open_waiting(ci);
            self.make_free(ci);
            return;
        }
        loop {
            let streams = self.h3.streams;
            let Some(link) = self.conns[ci].link.as_mut() else {
                return;
            };
            if link.room(streams) == 0 {
                break;
            }
            match self.claim() {
                Some(r) => self.conns[ci]
                    .link
                    .as_mut()
                    .expect("live")
                    .waiting
                    .push_back(r),
                None => break,
            }
        }
        self.open_waiting(ci);
    }

    /// Open a stream for each waiting request, as far as the server's
    /// stream limit allows; each counts as sent once on its stream.
    fn open_waiting(&mut self, ci: usize) {
        let (now, keep) = (self.core.now, self.keep_body);
        let Some(link) = self.conns[ci].link.as_mut() else {
            return;
        };
        // After a GOAWAY no new stream is processed: what waits goes to
        // the next connection when this one closes.
        if !link.h3.connected || link.h3.goaway.is_some() {
            return;
        }
        while let Some(r) = link.waiting.pop_front() {
            if let Err(back) = link.h3.open(r, self.h3, keep) {
                link.waiting.push_front(back);
                return;
            }
            let s = link.h3.streams.last_mut().expect("just opened");
            let body = self.h3.body_len(s.slot.target, &s.req);
            self.core.sent(&mut s.slot, now, body);
        }
    }

    /// Open model: list connection `ci` as free if it can take a request.
    fn make_free(&mut self, ci: usize) {
        let streams = self.h3.streams;
        if !self.core.sh.load.arrival.is_open() || self.core.draining {
            return;
        }
        let c = &mut self.conns[ci];
        if c.link.as_mut().is_none_or(|l| l.room(streams) > 0) {
            let open = c.link.is_some();
            self.free.push(&mut self.conns, ci, open);
        }
    }

    // ----- connections -----------------------------------------------------

    /// Open a new connection: its socket and QUIC's first flight (sent by
    /// the caller's [`Worker::drive`]). When it failed at once: the bucket,
    /// with the reason kept for the caller's failure.
    fn connect(&mut self, ci: usize) -> Result<(), FailureKind> {
        let sock = match self.open_socket(ci) {
            Ok(sock) => sock,
            Err(e) => return Err(self.core.socket_failed(&e)),
        };
        let mut endpoint = Endpoint::new(Arc::clone(&self.endpoint_config), None, false, None);
        let addr = self.core.sh.addr.as_socket().expect("resolved address");
        let name = &self.h3.server_name;
        let (handle, quic) = endpoint
            .connect(self.instant(), self.h3.config.clone(), addr, name)
            .map_err(|e| {
                self.core
                    .explain(FailureKind::Connect, || format!("QUIC connect: {e}"));
                FailureKind::Connect
            })?;
        self.conns[ci].link = Some(Link {
            sock,
            endpoint,
            handle,
            h3: H3Conn::new(quic),
            connect_start: self.core.now,
            waiting: VecDeque::new(),
            timer: u64::MAX,
        });
        Ok(())
    }

    fn open_socket(&mut self, ci: usize) -> io::Result<Socket> {
        let sock = self.core.sh.udp_socket()?;
        self.ep.add(sock.as_raw_fd(), ci as u64)?;
        Ok(sock)
    }

    /// Act on connection `ci` after anything happened to it: HTTP/3
    /// events, settled streams, new ones, datagrams out; end it when it
    /// failed or is done.
    fn drive(&mut self, ci: usize) {
        let (now, want) = (self.core.now, self.core.want_server);
        let Some(link) = self.conns[ci].link.as_mut() else {
            return;
        };
        let was_connected = link.h3.connected;
        link.h3.on_events(now, want, self.h3);
        let received = std::mem::take(&mut link.h3.received);
        self.core.received(received as usize);
        if !was_connected && link.h3.connected {
            self.on_handshake(ci);
        }
        self.take_server(ci);
        self.settle(ci);
        self.refill(ci);
        self.transmit(ci);
        self.check_end(ci);
    }

    /// The handshake is done: count it; ab attributes the connect to the
    /// first request on a connection.
    fn on_handshake(&mut self, ci: usize) {
        let now = self.core.now;
        let Some(link) = self.conns[ci].link.as_mut() else {
            return;
        };
        if let Some((s, _)) = link.waiting.front_mut() {
            s.connect_ns = now.saturating_sub(s.start);
        }
        if self.core.sh.tls_summary.get().is_none() {
            if let Some(t) = link.h3.tls_summary(&self.h3.server_name) {
                let _ = self.core.sh.tls_summary.set(t);
            }
        }
        if self.core.measuring && !self.core.draining {
            let q = &mut self.core.stats.counters.quic;
            q.handshakes += 1;
            q.handshake_us += now.saturating_sub(link.connect_start) / 1000;
        }
    }

    fn take_server(&mut self, ci: usize) {
        if !self.core.want_server {
            return;
        }
        if let Some(s) = self.conns[ci]
            .link
            .as_mut()
            .and_then(|l| l.h3.server.take())
        {
            self.core.want_server = false;
            let _ = self.core.sh.server.set(s);
        }
    }

    /// Account every stream that ended and drop it from the connection.
    fn settle(&mut self, ci: usize) {
        let mut k = 0;
        loop {
            let Some(link) = self.conns[ci].link.as_mut() else {
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
            self.settle_stream(s, served);
        }
    }

    /// Count stream `s` (its connection had answered `served` before).
    fn settle_stream(&mut self, s: Stream, served: u64) {
        match &s.state {
            StreamState::Done => self.complete(&s),
            StreamState::Failed(f) => {
                if s.slot.measured && !self.core.draining {
                    self.core.explain(f.kind, || f.why.clone());
                    self.core.fail_slot(&s.slot, f.kind);
                }
            }
            &StreamState::Reset { code, stopped } => self.on_reset(&s.slot, code, stopped),
            StreamState::Refused if served > 0 => self.pending.push_back((s.slot, s.req)),
            StreamState::Refused => self.refused(&s.slot),
            StreamState::Open => unreachable!("settle skips open streams"),
        }
    }

    /// Count `s`, whose response is complete.
    fn complete(&mut self, s: &Stream) {
        let a = Answer {
            status: s.response.status,
            body_bytes: s.response.body,
            first_byte: s.first_byte,
            // The connection's first request stream is index 0.
            reused: s.id.index() > 0,
        };
        match &s.response.kept {
            Some(k) => self.core.complete(&s.slot, a, (&k.head, &k.body)),
            None => self.core.complete(&s.slot, a, (&[], &[])),
        };
    }

    fn on_reset(&mut self, slot: &Slot, code: u64, stopped: bool) {
        if !slot.measured || self.core.draining {
            return;
        }
        let name = frame::error_name(code);
        self.core.explain(FailureKind::Receive, || match stopped {
            true => format!("the server stopped reading the request with STOP_SENDING {name}"),
            false => format!("the server reset the stream with {name}"),
        });
        let resets = &mut self.core.stats.counters.stream_resets;
        *resets.entry(name).or_default() += 1;
        self.core.fail_slot(slot, FailureKind::Receive);
    }

    /// A request a GOAWAY refused on a connection that answered nothing:
    /// a failure (a server that refuses everything could loop us forever).
    fn refused(&mut self, slot: &Slot) {
        if slot.measured && !self.core.draining {
            self.core.explain(FailureKind::Receive, || {
                "the server refused the request with GOAWAY on a new connection".into()
            });
            self.core.fail_slot(slot, FailureKind::Receive);
        }
    }

    /// Send every datagram the connection has; note its next timer.
    fn transmit(&mut self, ci: usize) {
        let instant = self.instant();
        let Some(link) = self.conns[ci].link.as_mut() else {
            return;
        };
        let fd = link.sock.as_raw_fd();
        loop {
            self.tx.clear();
            let Some(t) = link.h3.quic.poll_transmit(instant, 1, &mut self.tx) else {
                break;
            };
            match sys::send(fd, &self.tx[..t.size]) {
                Ok(_) => {}
                // A full socket buffer drops the datagram; QUIC's loss recovery resends.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => {
                    let connected = link.h3.connected;
                    link.h3.lost.get_or_insert(socket_failed(&e, connected));
                    break;
                }
            }
        }
        while let Some(ev) = link.h3.quic.poll_endpoint_events() {
            if let Some(back) = link.endpoint.handle_event(link.handle, ev) {
                link.h3.quic.handle_event(back);
            }
        }
        let next = link.h3.quic.poll_timeout();
        let timer = next.map_or(u64::MAX, |t| self.ns_of(t));
        if let Some(link) = self.conns[ci].link.as_mut() {
            link.timer = timer;
        }
    }

    /// End a connection that failed, that a GOAWAY finished or that QUIC closed.
    fn check_end(&mut self, ci: usize) {
        let Some(link) = self.conns[ci].link.as_mut() else {
            return;
        };
        if let Some(f) = link.h3.lost.clone() {
            return self.close(ci, End::Fail(f));
        }
        let finished = link.h3.goaway.is_some() && link.h3.streams.is_empty();
        if finished || link.h3.quic.is_drained() {
            self.close(ci, End::Done);
        }
    }

    /// Close connection `ci` (CONNECTION_CLOSE sent), fail what is on it,
    /// keep QUIC's facts, and schedule a replacement.
    fn close(&mut self, ci: usize, end: End) {
        let code = match &end {
            End::Fail(f) => f.code,
            End::Done => frame::H3_NO_ERROR,
        };
        let instant = self.instant();
        if let Some(link) = self.conns[ci].link.as_mut() {
            link.h3.close(instant, code);
        }
        self.transmit(ci);
        let Some(mut link) = self.conns[ci].link.take() else {
            return;
        };
        self.conns[ci].free = false;
        match &end {
            End::Fail(f) => {
                let on_it = link.h3.streams.drain(..).map(|s| s.slot);
                let slots: Vec<Slot> = on_it.chain(link.waiting.drain(..).map(|w| w.0)).collect();
                self.core.explain(f.kind, || f.why.clone());
                self.core.fail_slots(slots.iter(), f.kind);
            }
            End::Done if link.h3.connected && !self.core.draining => {
                self.core.stats.counters.reconnects += 1;
            }
            End::Done => {}
        }
        // Requests never put on a stream here go out on another connection.
        self.pending.extend(link.waiting.drain(..));
        if link.h3.goaway.is_some() && !self.core.draining && self.core.measuring {
            self.core.stats.counters.goaways += 1;
        }
        self.fold_facts(&link);
        self.core.forget_why();
        if !self.core.draining {
            self.core.restart.push(ci as u32);
        }
    }

    /// Add what QUIC measured on `link` to the counters.
    fn fold_facts(&mut self, link: &Link) {
        if !self.core.measuring {
            return;
        }
        let st = link.h3.quic.stats();
        let q = &mut self.core.stats.counters.quic;
        q.packets_sent += st.path.sent_packets;
        q.packets_lost += st.path.lost_packets;
        if link.h3.connected {
            q.rtt_samples += 1;
            q.rtt_us += st.path.rtt.as_micros() as u64;
        }
    }

    // ----- I/O and time ----------------------------------------------------

    /// Read every datagram waiting on connection `ci`'s socket, then drive it.
    fn on_socket(&mut self, ci: usize) {
        let instant = self.instant();
        loop {
            let Some(link) = self.conns.get_mut(ci).and_then(|c| c.link.as_mut()) else {
                return;
            };
            let fd = link.sock.as_raw_fd();
            match sys::recv(fd, &mut self.rx) {
                Ok(n) => {
                    let data = BytesMut::from(&self.rx[..n]);
                    let addr = self.core.sh.addr.as_socket().expect("resolved address");
                    self.tx.clear();
                    match link
                        .endpoint
                        .handle(instant, addr, None, None, data, &mut self.tx)
                    {
                        Some(DatagramEvent::ConnectionEvent(h, ev)) if h == link.handle => {
                            link.h3.quic.handle_event(ev);
                        }
                        Some(DatagramEvent::Response(t)) => {
                            let _ = sys::send(fd, &self.tx[..t.size]);
                        }
                        _ => {}
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let connected = link.h3.connected;
                    link.h3.lost.get_or_insert(socket_failed(&e, connected));
                    break;
                }
            }
        }
        self.drive(ci);
    }

    /// The earliest QUIC timer of the connections, ns (`u64::MAX`: none).
    fn next_timer(&self) -> u64 {
        let timers = self.conns.iter().filter_map(|c| c.link.as_ref());
        timers.map(|l| l.timer).min().unwrap_or(u64::MAX)
    }

    /// QUIC timers that are due.
    fn on_timers(&mut self) {
        let (now, instant) = (self.core.now, self.instant());
        for ci in 0..self.conns.len() {
            let Some(link) = self.conns[ci].link.as_mut() else {
                continue;
            };
            if link.timer > now {
                continue;
            }
            link.h3.quic.handle_timeout(instant);
            self.drive(ci);
        }
    }

    /// Cancel the requests of connection `ci` past their deadline; whether any was.
    fn expire_streams(&mut self, ci: usize) -> bool {
        let (now, timeout_ns) = (self.core.now, self.core.sh.timeout_ns);
        let late = |s: &Slot| now >= s.start + timeout_ns;
        let Some(link) = self.conns[ci].link.as_mut() else {
            return false;
        };
        let mut timed_out = Vec::new();
        let mut k = 0;
        while k < link.h3.streams.len() {
            match late(&link.h3.streams[k].slot) {
                true => timed_out.push(link.h3.cancel(k).slot),
                false => k += 1,
            }
        }
        while link.waiting.front().is_some_and(|w| late(&w.0)) {
            timed_out.extend(link.waiting.pop_front().map(|w| w.0));
        }
        let t = Duration::from_nanos(timeout_ns);
        for slot in timed_out.iter().filter(|s| s.measured) {
            self.core.explain(FailureKind::Timeout, || {
                format!("no complete response within {t:?} (-s)")
            });
            self.core.fail_slot(slot, FailureKind::Timeout);
        }
        !timed_out.is_empty()
    }
}

/// A socket error on a connection's send or receive: ECONNREFUSED is ICMP
/// port-unreachable (nothing listens on that UDP port).
fn socket_failed(e: &io::Error, connected: bool) -> Fail {
    let refused = e.raw_os_error() == Some(libc::ECONNREFUSED);
    Fail {
        kind: match connected && !refused {
            true => FailureKind::Receive,
            false => FailureKind::Connect,
        },
        code: frame::H3_NO_ERROR,
        conn: true,
        why: match refused {
            true => "nothing answers on that UDP port (ICMP port unreachable): is HTTP/3 enabled on the server?".into(),
            false => format!("UDP: {e}"),
        },
    }
}

/// The HTTP/3 side of the shared turn loop ([`crate::client::engine::turns`]).
impl<'a> Connections<'a> for Worker<'a> {
    type Conn = Conn;
    type Request = (Slot, Req);

    fn parts(&mut self) -> Parts<'_, 'a, Conn> {
        Parts {
            core: &mut self.core,
            conns: &mut self.conns,
            free: &mut self.free,
        }
    }

    fn view(&self) -> View<'_, 'a, Conn> {
        View {
            core: &self.core,
            conns: &self.conns,
            free: &self.free,
        }
    }

    /// Open model: make it free; closed: connect it with a request.
    fn restart(&mut self, ci: usize) {
        if self.core.sh.load.arrival.is_open() {
            self.make_free(ci);
        } else if let Some(r) = self.claim() {
            self.connect_with(ci, r);
        }
    }

    /// A connection with room for a request, or closed (to open), open ones first.
    fn pop_free(&mut self) -> Option<usize> {
        let streams = self.h3.streams;
        (self.free).pop(&mut self.conns, |c, _| {
            c.link.as_mut().is_none_or(|l| l.room(streams) > 0)
        })
    }

    /// A refused request to resend, else the next due by `until`.
    fn next_request(&mut self, until: u64) -> Option<(Slot, Req)> {
        if let Some(again) = self.again() {
            return Some(again);
        }
        let slot = self.core.pop_due(until)?;
        Some((slot, self.req(&slot)))
    }

    fn send_on(&mut self, ci: usize, r: (Slot, Req)) {
        match self.conns[ci].link.as_mut() {
            None => self.connect_with(ci, r),
            Some(link) => {
                link.waiting.push_back(r);
                self.drive(ci);
            }
        }
    }

    /// Fail the requests of connection `ci` past their deadline (the stream
    /// reset, H3_REQUEST_CANCELLED), or the connection when its handshake
    /// did not finish in time.
    fn expire_conn(&mut self, ci: usize) {
        let (now, timeout_ns) = (self.core.now, self.core.sh.timeout_ns);
        let Some(link) = self.conns[ci].link.as_mut() else {
            return;
        };
        if !link.h3.connected && now >= link.connect_start + timeout_ns {
            let t = Duration::from_nanos(timeout_ns);
            link.h3.lost.get_or_insert(Fail {
                kind: FailureKind::Connect,
                code: frame::H3_NO_ERROR,
                conn: true,
                why: format!("no QUIC handshake within {t:?} (-s)"),
            });
            self.drive(ci);
            return;
        }
        if self.expire_streams(ci) {
            self.drive(ci);
        }
    }

    fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    fn poll(&mut self, timeout: Option<u64>, nap: Option<u64>) {
        let quic = self.next_timer();
        let quic_wait = (quic != u64::MAX).then(|| quic.saturating_sub(self.core.now));
        let wait = match (timeout, quic_wait) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let mut events = std::mem::take(&mut self.events);
        let n = shared_core::epoll_wait(&mut self.ep, &mut events, wait, nap);
        self.core.now = sys::now_ns();
        for ev in &events[..n] {
            match ev.u64 {
                TICK_TOKEN => self.core.pace.ticker.ack(),
                ci => self.on_socket(ci as usize),
            }
        }
        self.events = events;
        self.core.now = sys::now_ns();
        self.on_timers();
    }

    fn in_flight_measured(&self) -> u64 {
        let links = self.conns.iter().flat_map(|c| &c.link);
        let streams = links.flat_map(|l| l.h3.streams.iter());
        streams
            .filter(|s| s.slot.measured && s.slot.sent != 0)
            .count() as u64
    }

    fn awaiting_answers(&self) -> bool {
        let mut links = self.conns.iter().flat_map(|c| &c.link);
        links.any(|l| l.h3.streams.iter().any(|s| s.slot.sent != 0))
    }

    fn close_all(&mut self) {
        self.core.now = sys::now_ns();
        for ci in 0..self.conns.len() {
            if self.conns[ci].link.is_some() {
                self.close(ci, End::Done);
            }
        }
    }
}
