//! One HTTP/2 load-generator thread: an epoll loop over its connections,
//! each multiplexing up to `--streams` requests.
//!
//! The same turn loop, budget, `--rate` schedule, warm-up, pace, failure
//! accounting and drain as the HTTP/1.1 worker: the shared core's
//! ([`crate::client::engine::turns`], [`crate::client::engine::core`]), which this worker
//! serves as [`Connections`]. What differs is the unit of work: a stream, not a connection. One `recv` is parsed into many
//! frames ([`Proto::input`]), every stream it finishes is replaced at once,
//! and all frames that causes (HEADERS, WINDOW_UPDATE, SETTINGS/PING ACKs)
//! go out in one `send`.
//!
//! Owns the stream life cycle (claim, open, settle, retry after GOAWAY,
//! time out with RST_STREAM). Must not parse frames (that is [`Proto`]).

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

use socket2::Socket;

use super::conn::{ConnError, Proto, StreamState};
use super::frame;
use super::Req;
use crate::client::engine::connections::{Connections, Parts, View};
use crate::client::engine::core::{self as shared_core, Core};
use crate::client::engine::free::{FreeList, Listed};
use crate::client::engine::slot::Slot;
use crate::client::engine::sys::{self, Epoll};
use crate::client::engine::tls::TlsSession;
use crate::client::measure::gnuplot::GnuplotWriter;
use crate::client::measure::record::Answer;
use crate::client::shared::Shared;
use crate::client::RunControl;
use kurabe_model::failures::FailureKind;

/// Events taken per `epoll_wait`.
const EVENTS: usize = 1024;
/// epoll token of the ticker.
const TICK_TOKEN: u64 = u64::MAX;
/// Event bits that mean the peer closed or the connection broke.
const HUP: u32 = (libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32;
/// The clock is read again after this many events of one batch.
const CLOCK_EVERY: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Closed,
    Connecting,
    Open,
}

pub(crate) struct Conn {
    sock: Option<Socket>,
    fd: RawFd,
    state: State,
    tls: Option<Box<TlsSession>>,
    /// ALPN still to be checked once the TLS handshake is done.
    alpn_pending: bool,
    /// Bytes read but not parsed yet (the start of a frame): usually none,
    /// so idle connections hold no read buffer (see [`Worker::rbuf`]).
    tail: Vec<u8>,
    /// `proto.out[out_off..]` is still to be written.
    out_off: usize,
    proto: Proto,
    /// Streams whose frames are queued but not all written.
    unsent: usize,
    connect_start: u64,
    /// In the open model's free list.
    free: bool,
}

impl Conn {
    /// A closed connection; `keep_body`: responses are checked (see [`Proto::keep_body`]).
    fn new(keep_body: Option<usize>) -> Conn {
        Conn {
            sock: None,
            fd: -1,
            state: State::Closed,
            tls: None,
            alpn_pending: false,
            tail: Vec::new(),
            out_off: 0,
            proto: Proto::keeping(keep_body),
            unsent: 0,
            connect_start: 0,
            free: false,
        }
    }
}

impl Listed for Conn {
    fn listed(&mut self) -> &mut bool {
        &mut self.free
    }

    fn idle(&self) -> bool {
        self.proto.streams.is_empty()
    }
}

/// How a connection ended, for the streams still on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// Count every measured stream still open in this bucket.
    Fail(FailureKind),
    /// Nothing open (GOAWAY honoured, or the run is over).
    Done,
}

/// One HTTP/2 worker's state.
pub(crate) struct Worker<'a> {
    core: Core<'a>,
    h2: &'a super::Setup,
    ep: Epoll,
    events: Vec<libc::epoll_event>,
    conns: Vec<Conn>,
    /// Requests to send again (refused by a GOAWAY), before any new one.
    pending: VecDeque<(Slot, Req)>,
    /// Open model: connections that may take a stream now.
    free: FreeList,
    /// The one read buffer of the worker: a connection's tail, then what
    /// `recv` brings, parsed in place; what is left goes back to the tail.
    rbuf: Vec<u8>,
}

/// Size of [`Worker::rbuf`]: room for many responses per `recv`, and always
/// more than a tail can hold (one frame, at most MAX_FRAME + its header).
const RBUF: usize = 256 * 1024;

impl<'a> Worker<'a> {
    pub fn new(
        sh: &'a Shared,
        h2: &'a super::Setup,
        ctl: &'a RunControl,
        index: u64,
        conns: usize,
        gnuplot: Option<GnuplotWriter>,
    ) -> io::Result<Worker<'a>> {
        // Naps without the trial: measured to cost HTTP/2 more than it saves (see `pace`).
        let core = Core::new(sh, ctl, index, (conns, conns * h2.streams), false, gnuplot)?;
        let ep = Epoll::new()?;
        ep.add(core.pace.ticker.fd(), TICK_TOKEN)?;
        Ok(Worker {
            core,
            h2,
            ep,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS],
            conns: (0..conns)
                .map(|_| Conn::new(sh.checking.then_some(sh.keep_body)))
                .collect(),
            pending: VecDeque::new(),
            free: FreeList::new(conns),
            rbuf: vec![0; RBUF],
        })
    }

    // ----- requests --------------------------------------------------------

    /// A request to send: one refused earlier, else a new one from the budget.
    fn claim(&mut self) -> Option<(Slot, Req)> {
        if self.core.draining {
            return None;
        }
        if let Some((mut s, req)) = self.pending.pop_front() {
            s.start = self.core.now;
            s.sent = 0;
            return Some((s, req));
        }
        if self.core.schedule.is_some() {
            return None;
        }
        let slot = self.core.claim()?;
        Some((slot, self.req(&slot)))
    }

    /// Where the request just picked for `slot` is: a streamed set's
    /// is in the chunk it was picked from.
    fn req(&self, slot: &Slot) -> Req {
        match self.core.streamed_chunk() {
            Some(chunk) => Req::Streamed(Arc::clone(chunk), slot.target),
            None => Req::Held,
        }
    }

    /// Connect `ci` and open `slot` on it (and more, closed model); a connect
    /// that fails at once fails `slot` too, so a dead address cannot loop.
    fn connect_with(&mut self, ci: usize, (slot, req): (Slot, Req)) {
        match self.connect(ci) {
            Ok(()) => {
                self.open_stream(ci, slot, req);
                self.after_input(ci);
            }
            Err(kind) if slot.measured => self.core.fail_slot(&slot, kind),
            Err(_) => {}
        }
    }

    fn open_stream(&mut self, ci: usize, slot: Slot, req: Req) {
        let c = &mut self.conns[ci];
        c.proto.open(slot, req, self.h2);
        c.unsent += 1;
    }

    /// Closed model: open streams up to `--streams` (and the server's limit).
    fn refill(&mut self, ci: usize) {
        if self.core.sh.load.arrival.is_open() {
            self.make_free(ci);
            return;
        }
        while self.conns[ci].state != State::Closed
            && self.conns[ci].proto.capacity(self.h2.streams) > 0
        {
            match self.claim() {
                Some((slot, req)) => self.open_stream(ci, slot, req),
                None => break,
            }
        }
    }

    /// Open model: list connection `ci` as free if it can take a stream.
    fn make_free(&mut self, ci: usize) {
        if !self.core.sh.load.arrival.is_open() || self.core.draining {
            return;
        }
        let c = &self.conns[ci];
        if c.state == State::Closed || c.proto.capacity(self.h2.streams) > 0 {
            let open = c.state != State::Closed;
            self.free.push(&mut self.conns, ci, open);
        }
    }

    // ----- connections -----------------------------------------------------

    /// Open a new connection: socket, TLS session, preface and SETTINGS queued.
    /// When it failed at once: the bucket (out of descriptors is kurabe's own
    /// `client` failure), with the reason kept for the caller's failure.
    fn connect(&mut self, ci: usize) -> Result<(), FailureKind> {
        let res = self.open_socket(ci);
        let c = &mut self.conns[ci];
        c.proto.start();
        c.out_off = 0;
        c.unsent = 0;
        c.tail = Vec::new();
        c.connect_start = self.core.now;
        c.state = State::Connecting;
        res.map_err(|e| {
            self.close(ci, End::Done);
            self.core.socket_failed(&e)
        })
    }

    fn open_socket(&mut self, ci: usize) -> io::Result<()> {
        let sock = self.core.sh.connect_socket()?;
        let fd = sock.as_raw_fd();
        self.ep.add(fd, ci as u64)?;
        let c = &mut self.conns[ci];
        if let Some(tls) = &self.core.sh.tls {
            c.tls = Some(Box::new(tls.session()?));
            c.alpn_pending = true;
        }
        c.fd = fd;
        c.sock = Some(sock);
        Ok(())
    }

    fn on_event(&mut self, ci: usize, flags: u32) {
        let Some(c) = self.conns.get(ci) else {
            return;
        };
        match c.state {
            State::Closed => {}
            State::Connecting => self.on_connected(ci, flags),
            State::Open => {
                if flags & libc::EPOLLOUT as u32 != 0 {
                    self.flush(ci);
                    self.pump_while_writable(ci);
                }
                if self.conns[ci].state == State::Open && flags & (libc::EPOLLIN as u32 | HUP) != 0
                {
                    self.read(ci, flags & HUP != 0);
                }
            }
        }
    }

    fn on_connected(&mut self, ci: usize, flags: u32) {
        match self
            .core
            .connect_outcome(self.conns[ci].sock.as_ref(), flags)
        {
            Err(()) => return self.close(ci, End::Fail(FailureKind::Connect)),
            Ok(false) => return,
            Ok(true) => {}
        }
        let now = self.core.now;
        let c = &mut self.conns[ci];
        c.state = State::Open;
        // ab attributes the connect to the first request on a connection.
        if let Some(s) = c.proto.streams.first_mut() {
            s.slot.connect_ns = now - s.slot.start;
        }
        self.after_input(ci);
        if self.conns[ci].state == State::Open && flags & libc::EPOLLIN as u32 != 0 {
            self.read(ci, flags & HUP != 0);
        }
    }

    /// Write pending frames until done or the socket is full; when all are
    /// out, the streams queued so far count as sent.
    fn flush(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        if c.state != State::Open {
            return;
        }
        if let Err(why) = write_out(c) {
            self.core.explain(FailureKind::Write, || why);
            self.close(ci, End::Fail(FailureKind::Write));
            return;
        }
        let c = &mut self.conns[ci];
        if c.out_off == c.proto.out.len() {
            c.proto.out.clear();
            c.out_off = 0;
            self.mark_sent(ci);
        }
    }

    /// The socket took everything queued: queue and write the next part of
    /// the request bodies until it is full (its next EPOLLOUT edge comes back
    /// here) or the windows are closed (a WINDOW_UPDATE is input). Without
    /// this, a body larger than one batch waited for input that a server
    /// reading the whole body first never sends.
    fn pump_while_writable(&mut self, ci: usize) {
        loop {
            let c = &mut self.conns[ci];
            if c.state != State::Open || !self.h2.any_body || !c.proto.out.is_empty() {
                return;
            }
            c.proto.pump_bodies(self.h2);
            if c.proto.out.is_empty() {
                return;
            }
            self.flush(ci);
        }
    }

    /// Every stream whose frames are all written now counts as sent.
    fn mark_sent(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        if c.unsent == 0 || self.core.draining {
            return;
        }
        c.unsent = 0;
        let now = self.core.now;
        for s in &mut c.proto.streams {
            let body_len = self.h2.body(s.slot.target, &s.req).len();
            if s.slot.sent != 0 || s.body_sent < body_len {
                if s.slot.sent == 0 {
                    c.unsent += 1;
                }
                continue;
            }
            self.core.sent(&mut s.slot, now, body_len as u64);
        }
    }

    /// Read and process everything available. `hup`: the peer closed.
    fn read(&mut self, ci: usize, hup: bool) {
        loop {
            let c = &mut self.conns[ci];
            if c.state != State::Open {
                return;
            }
            let tail = c.tail.len();
            self.rbuf[..tail].copy_from_slice(&c.tail);
            let space = self.rbuf.len() - tail;
            let r = shared_core::read_in(&mut c.tls, c.fd, &mut self.rbuf[tail..]);
            match r {
                Ok(0) => return self.on_eof(ci),
                Ok(n) => {
                    if !self.received(ci, tail, n) {
                        return;
                    }
                    if n < space && !hup && self.conns[ci].tls.is_none() {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return self.check_alpn(ci),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return self.on_read_error(ci, e),
            }
        }
    }

    /// `n` bytes arrived after a tail of `tail`: count and process them;
    /// false when the connection closed.
    fn received(&mut self, ci: usize, tail: usize, n: usize) -> bool {
        self.core.received(n);
        self.process(ci, tail + n)
    }

    fn on_read_error(&mut self, ci: usize, e: io::Error) {
        let handshaking = self.conns[ci].tls.as_ref().is_some_and(|t| t.handshaking());
        let kind = if handshaking {
            FailureKind::Connect
        } else {
            FailureKind::Receive
        };
        self.core.explain(kind, || {
            if handshaking {
                format!("TLS handshake: {e}")
            } else {
                e.to_string()
            }
        });
        self.close(ci, End::Fail(kind));
    }

    /// Over TLS, the server must have chosen `h2` by ALPN.
    fn check_alpn(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        let Some(t) = &c.tls else {
            return;
        };
        if !c.alpn_pending || t.handshaking() {
            return;
        }
        c.alpn_pending = false;
        if t.alpn() == Some(b"h2") {
            if let (None, Some(done)) = (self.core.sh.tls_summary.get(), t.summary()) {
                let _ = self.core.sh.tls_summary.set(done);
            }
            return;
        }
        let chose = t.alpn().map(|p| String::from_utf8_lossy(p).into_owned());
        self.core.explain(FailureKind::Connect, || {
            format!(
                "the server did not agree to HTTP/2 over TLS (ALPN offered h2, it chose {}): \
                 drop --http2 or enable http2 on the server",
                chose.as_deref().unwrap_or("nothing")
            )
        });
        self.close(ci, End::Fail(FailureKind::Connect));
    }

    /// Parse `rbuf[..len]` (the tail and what was read) and act on it; keep
    /// the unparsed rest as the tail. False when the connection closed.
    fn process(&mut self, ci: usize, len: usize) -> bool {
        self.check_alpn(ci);
        let want = self.core.want_server;
        let c = &mut self.conns[ci];
        if c.state != State::Open {
            return false;
        }
        match c.proto.input(&self.rbuf[..len], self.core.now, want) {
            Ok(used) => {
                c.tail.clear();
                c.tail.extend_from_slice(&self.rbuf[used..len]);
            }
            Err(e) => {
                self.conn_error(ci, e);
                return false;
            }
        }
        if want && self.conns[ci].proto.server.is_some() {
            self.core.want_server = false;
            if let Some(s) = self.conns[ci].proto.server.take() {
                let _ = self.core.sh.server.set(s);
            }
        }
        self.settle(ci);
        self.after_input(ci);
        self.conns[ci].state == State::Open
    }

    /// After frames were read or a stream ended: grant window, open new
    /// streams, send bodies, replace a connection that can take no more.
    fn after_input(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        if c.state == State::Closed {
            return;
        }
        c.proto.table_size(self.h2.table_need);
        c.proto.replenish();
        self.refill(ci);
        let c = &mut self.conns[ci];
        if self.h2.any_body {
            c.proto.pump_bodies(self.h2);
        }
        if c.proto.exhausted() && c.proto.streams.is_empty() && c.state == State::Open {
            self.flush(ci);
            self.close(ci, End::Done);
            return;
        }
        self.flush(ci);
        self.pump_while_writable(ci);
    }

    /// Account every stream that ended and drop it from the connection.
    fn settle(&mut self, ci: usize) {
        let mut i = 0;
        while i < self.conns[ci].proto.streams.len() {
            let s = &self.conns[ci].proto.streams[i];
            let state = s.state;
            if state == StreamState::Open {
                i += 1;
                continue;
            }
            let s = self.conns[ci].proto.streams.swap_remove(i);
            match state {
                StreamState::Done => self.complete(ci, s),
                StreamState::Reset(code) => self.on_reset(s.id, &s.slot, code),
                _ => self.refused(ci, s.slot, s.req),
            }
        }
    }

    /// Count stream `s` of connection `ci`, whose response is complete.
    fn complete(&mut self, ci: usize, s: super::conn::Stream) {
        let a = Answer {
            status: s.status,
            body_bytes: s.body,
            first_byte: s.first_byte,
            // Client streams are numbered 1, 3, 5... on each connection.
            reused: s.id > 1,
        };
        let Some(k) = s.kept else {
            self.core.complete(&s.slot, a, (&[], &[]));
            return;
        };
        self.core.complete(&s.slot, a, (&k.head, &k.body));
        self.conns[ci].proto.recycle(k);
    }

    fn on_reset(&mut self, id: u32, slot: &Slot, code: u32) {
        if !slot.measured || self.core.draining {
            return;
        }
        let name = frame::error_name(code);
        self.core.explain(FailureKind::Receive, || {
            format!("the server reset stream {id} with RST_STREAM {name}")
        });
        *self
            .core
            .stats
            .counters
            .stream_resets
            .entry(name)
            .or_default() += 1;
        self.core.fail_slot(slot, FailureKind::Receive);
    }

    /// A stream the server's GOAWAY says it never processed: send it again on
    /// another connection, unless this connection answered nothing at all
    /// (then a server that refuses everything could loop us forever).
    fn refused(&mut self, ci: usize, slot: Slot, req: Req) {
        if self.conns[ci].proto.served > 0 {
            self.pending.push_back((slot, req));
            return;
        }
        if slot.measured && !self.core.draining {
            let code = self.conns[ci].proto.goaway.map_or(0, |g| g.1);
            self.core.explain(FailureKind::Receive, || {
                format!(
                    "the server refused the request with GOAWAY ({}) on a new connection",
                    frame::error_name(code)
                )
            });
            self.core.fail_slot(&slot, FailureKind::Receive);
        }
    }

    fn on_eof(&mut self, ci: usize) {
        if self.conns[ci].proto.streams.is_empty() {
            return self.close(ci, End::Done);
        }
        let (kind, why) = eof_reason(&self.conns[ci]);
        self.core.explain(kind, || why);
        self.close(ci, End::Fail(kind));
    }

    /// A connection error: tell the server (GOAWAY), fail every stream on it.
    fn conn_error(&mut self, ci: usize, e: ConnError) {
        let code = if e.why.contains("COMPRESSION_ERROR") {
            frame::COMPRESSION_ERROR
        } else if e.why.contains("FRAME_SIZE_ERROR") {
            frame::FRAME_SIZE_ERROR
        } else if e.why.contains("FLOW_CONTROL_ERROR") {
            frame::FLOW_CONTROL_ERROR
        } else {
            frame::PROTOCOL_ERROR
        };
        let c = &mut self.conns[ci];
        c.proto.out.truncate(c.out_off);
        c.proto.fail_connection(code);
        self.flush(ci);
        self.core.explain(e.kind, || e.why);
        self.close(ci, End::Fail(e.kind));
    }

    /// Close a connection, fail the streams still on it, schedule a replacement.
    fn close(&mut self, ci: usize, end: End) {
        let c = &mut self.conns[ci];
        c.sock = None;
        c.fd = -1;
        c.tls = None;
        c.tail = Vec::new();
        c.free = false;
        let was_open = c.state == State::Open;
        c.state = State::Closed;
        if let End::Fail(kind) = end {
            let streams = c.proto.streams.iter().map(|s| &s.slot);
            self.core.fail_slots(streams, kind);
        }
        c.proto.streams.clear();
        if let Some((_, _)) = c.proto.goaway {
            if !self.core.draining && self.core.measuring {
                self.core.stats.counters.goaways += 1;
            }
        }
        match end {
            End::Fail(_) => {}
            End::Done if was_open && !self.core.draining => {
                self.core.stats.counters.reconnects += 1
            }
            End::Done => {}
        }
        self.core.forget_why();
        if !self.core.draining {
            self.core.restart.push(ci as u32);
        }
    }

    fn expire_streams(&mut self, ci: usize) {
        let (now, timeout_ns) = (self.core.now, self.core.sh.timeout_ns);
        let deadline_passed = |s: &super::conn::Stream| now >= s.slot.start + timeout_ns;
        if !self.conns[ci].proto.streams.iter().any(deadline_passed) {
            return;
        }
        let mut i = 0;
        while i < self.conns[ci].proto.streams.len() {
            if deadline_passed(&self.conns[ci].proto.streams[i]) {
                self.time_out(ci, i);
            } else {
                i += 1;
            }
        }
        self.after_input(ci);
    }

    /// Stream `i` of connection `ci` is past its deadline: cancel it, and
    /// count it with the reason (a closed window, or no response).
    fn time_out(&mut self, ci: usize, i: usize) {
        let t = Duration::from_nanos(self.core.sh.timeout_ns);
        let p = &mut self.conns[ci].proto;
        let s = p.streams.swap_remove(i);
        let stalled = s.body_sent < self.h2.body(s.slot.target, &s.req).len();
        let (sw, cw) = (s.send_window, p.windows(s.id).1);
        p.cancel(s.id);
        if !s.slot.measured {
            return;
        }
        self.core.explain(FailureKind::Timeout, || {
            if stalled {
                format!(
                    "the request body could not be sent within {t:?} (-s): the server's \
                     flow-control window stayed closed (stream {sw}, connection {cw} bytes)"
                )
            } else {
                format!("no complete response within {t:?} (-s)")
            }
        });
        self.core.fail_slot(&s.slot, FailureKind::Timeout);
    }
}

/// Why a connection that still had streams was closed by the server, and
/// the bucket its streams fail in.
fn eof_reason(c: &Conn) -> (FailureKind, String) {
    let open = c.proto.streams.len();
    if c.tls.as_ref().is_some_and(|t| t.handshaking()) {
        let why = "TLS handshake: the server closed the connection";
        return (FailureKind::Connect, why.to_owned());
    }
    if !c.proto.settings_seen {
        let why = "the server closed the connection before sending its SETTINGS: \
                   is it an HTTP/2 server?";
        return (FailureKind::Connect, why.to_owned());
    }
    let why = match c.proto.goaway {
        Some((_, code)) => format!(
            "the server sent GOAWAY ({}) and closed the connection with {open} stream(s) unanswered",
            frame::error_name(code)
        ),
        None => format!("the server closed the connection with {open} stream(s) unanswered"),
    };
    (FailureKind::Receive, why)
}

/// Write `c`'s pending frames until done or the socket is full; the reason
/// when the connection broke.
fn write_out(c: &mut Conn) -> Result<(), String> {
    shared_core::write_out(&mut c.tls, c.fd, &c.proto.out, &mut c.out_off)
        .map_err(|e| format!("send: {e}"))?;
    match &mut c.tls {
        Some(t) if t.wants_write() => t.flush_tls(c.fd).map_err(|e| format!("TLS send: {e}")),
        _ => Ok(()),
    }
}

/// The HTTP/2 side of the shared turn loop ([`crate::client::engine::turns`]).
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

    /// A connection with room for a stream, or closed (to open), open ones first.
    fn pop_free(&mut self) -> Option<usize> {
        let streams = self.h2.streams;
        (self.free).pop(&mut self.conns, |c, _| {
            c.state == State::Closed || c.proto.capacity(streams) > 0
        })
    }

    /// A refused request to resend, else the next due by `until`.
    fn next_request(&mut self, until: u64) -> Option<(Slot, Req)> {
        if let Some((mut s, req)) = self.pending.pop_front() {
            s.start = self.core.now;
            return Some((s, req));
        }
        let slot = self.core.pop_due(until)?;
        Some((slot, self.req(&slot)))
    }

    fn send_on(&mut self, ci: usize, (slot, req): (Slot, Req)) {
        if self.conns[ci].state == State::Closed {
            self.connect_with(ci, (slot, req));
        } else {
            self.open_stream(ci, slot, req);
            self.after_input(ci);
        }
    }

    /// Fail the streams of connection `ci` past their deadline
    /// (RST_STREAM CANCEL), or the connection when it never became HTTP/2
    /// in time.
    fn expire_conn(&mut self, ci: usize) {
        let timeout_ns = self.core.sh.timeout_ns;
        let c = &self.conns[ci];
        if c.state == State::Closed {
            return;
        }
        if !c.proto.settings_seen && self.core.now >= c.connect_start + timeout_ns {
            if c.state == State::Connecting {
                self.core.timed_out(true);
            } else {
                let t = Duration::from_nanos(timeout_ns);
                self.core.explain(FailureKind::Connect, || {
                    format!("no HTTP/2 SETTINGS from the server within {t:?} (-s): is it an HTTP/2 server?")
                });
            }
            self.close(ci, End::Fail(FailureKind::Connect));
            return;
        }
        self.expire_streams(ci);
    }

    fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    fn poll(&mut self, timeout: Option<u64>, nap: Option<u64>) {
        let mut events = std::mem::take(&mut self.events);
        let n = shared_core::epoll_wait(&mut self.ep, &mut events, timeout, nap);
        for (i, ev) in events[..n].iter().enumerate() {
            if i % CLOCK_EVERY == 0 {
                self.core.now = sys::now_ns();
            }
            if ev.u64 == TICK_TOKEN {
                self.core.pace.ticker.ack();
            } else {
                self.on_event(ev.u64 as usize, ev.events);
            }
        }
        self.events = events;
    }

    fn in_flight_measured(&self) -> u64 {
        self.conns
            .iter()
            .flat_map(|c| c.proto.streams.iter())
            .filter(|s| s.slot.measured && s.slot.sent != 0)
            .count() as u64
    }

    fn awaiting_answers(&self) -> bool {
        self.conns
            .iter()
            .any(|c| c.state != State::Closed && c.proto.streams.iter().any(|s| s.slot.sent != 0))
    }

    fn close_all(&mut self) {
        for c in &mut self.conns {
            c.sock = None;
        }
    }
}
