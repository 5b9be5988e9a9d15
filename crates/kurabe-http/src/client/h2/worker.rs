//! One HTTP/2 load-generator thread: an epoll loop over its connections,
//! each multiplexing up to `--streams` requests.
//!
//! The same contract as the HTTP/1.1 worker ([`crate::client::worker`]):
//! the `-n` budget and `--rate` schedule, warm-up, drain at the end, one
//! failure bucket per request that did not complete. What differs is the
//! unit of work: a stream, not a connection. One `recv` is parsed into many
//! frames ([`Proto::input`]), every stream it finishes is replaced at once,
//! and all frames that causes (HEADERS, WINDOW_UPDATE, SETTINGS/PING ACKs)
//! go out in one `send`.
//!
//! Owns the stream life cycle (claim, open, settle, retry after GOAWAY,
//! time out with RST_STREAM). Must not parse frames (that is [`Proto`]).

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering;
use std::time::Duration;

use socket2::Socket;

use super::conn::{ConnError, Proto, StreamState};
use super::frame;
use crate::client::gnuplot::GnuplotWriter;
use crate::client::record::{record, Answer};
use crate::client::schedule::{Claims, Schedule};
use crate::client::shared::{socket_failure_kind, Shared};
use crate::client::slot::Slot;
use crate::client::stats::{FailKind, Stats};
use crate::client::sys::{self, Epoll};
use crate::client::tls::TlsSession;
use crate::client::turns::{self, Turns};
use crate::client::RunControl;

/// Events taken per `epoll_wait`.
const EVENTS: usize = 1024;
/// Longest sleep between checks of Ctrl-C and the clock.
const TICK_NS: u64 = 20_000_000;
/// Longest wait after the stop for answers to requests already sent.
const DRAIN_NS: u64 = 2_000_000_000;
/// A send later than this behind its intended time counts as late.
const LATE_NS: u64 = 1_000_000;
/// epoll token of the ticker.
const TICK_TOKEN: u64 = u64::MAX;
/// Event bits that mean the peer closed or the connection broke.
const HUP: u32 = (libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Closed,
    Connecting,
    Open,
}

struct Conn {
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
    fn new() -> Conn {
        Conn {
            sock: None,
            fd: -1,
            state: State::Closed,
            tls: None,
            alpn_pending: false,
            tail: Vec::new(),
            out_off: 0,
            proto: Proto::default(),
            unsent: 0,
            connect_start: 0,
            free: false,
        }
    }
}

/// How a connection ended, for the streams still on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// Count every measured stream still open in this bucket.
    Fail(FailKind),
    /// Nothing open (GOAWAY honoured, or the run is over).
    Done,
}

/// One HTTP/2 worker's state.
pub(crate) struct Worker<'a> {
    sh: &'a Shared,
    h2: &'a super::Setup,
    ctl: &'a RunControl,
    index: u64,
    ep: Epoll,
    conns: Vec<Conn>,
    stats: Stats,
    claims: Claims,
    schedule: Option<Schedule>,
    /// Requests to send again (refused by a GOAWAY), before any new one.
    pending: VecDeque<Slot>,
    /// Open model: connections that may take a stream now.
    free: Vec<u32>,
    restart: Vec<u32>,
    restarting: Vec<u32>,
    gnuplot: Option<GnuplotWriter>,
    measuring: bool,
    draining: bool,
    now: u64,
    want_server: bool,
    published: (u64, u64),
    why: Option<String>,
    ticker: sys::Ticker,
    tick_ns: u64,
    /// The one read buffer of the worker: a connection's tail, then what
    /// `recv` brings, parsed in place; what is left goes back to the tail.
    rbuf: Vec<u8>,
    /// How long a turn sleeps before it looks for I/O (0: block in epoll_wait), see PAUSE_PER_STREAM_NS.
    pause_ns: u64,
}

/// The pause of a closed-model worker with many streams in flight.
///
/// Why: a worker that blocks in epoll_wait as soon as it has nothing to do
/// is woken by the first frame the server writes, handles that one
/// response, blocks again, and is woken again by the next. Every one of
/// those wake-ups is paid by the server's CPU (the write that makes the
/// socket readable runs the wake-up, an inter-processor interrupt when this
/// thread's CPU sleeps), and the server is what limits the rate. Measured
/// against nginx (`-c 50 --streams 10`, h2c): 0.06-0.07 rescheduling
/// interrupts to the client's CPU per request where h2load, busier, causes
/// 0.004-0.017, and nginx spending 7.0 µs of CPU per request for kurabe
/// against 6.2 for h2load. Sleeping on our own timer instead lets the
/// responses of many streams gather and be handled in one turn, and no
/// write of the server wakes anyone: 0.001-0.005 interrupts per request,
/// nginx at 5.8 µs per request, and the client's own CPU per request down
/// by a fifth (fewer, fuller turns). The streams stay busy
/// meanwhile: with this many in flight the server has a queue far longer
/// than the pause. The cost is up to the pause (plus the timer slack) added
/// to a response's measured time, against milliseconds of queueing at that
/// depth; below PAUSE_MIN_STREAMS, or with --rate, the worker blocks as before.
///
/// The pause grows with the depth (PAUSE_PER_STREAM_NS a stream, at most
/// PAUSE_MAX_NS): the longer it is, the fewer turns and wake-ups (unpinned,
/// 200 µs rather than 50 halved nginx's context switches per request), but
/// a server that answered all `depth` streams within one pause would idle.
/// At 64 streams the pause is 13 µs (with the timer's 50 µs slack, a server
/// would need over 1M requests/s to run dry); at 500 (`-c 50 --streams 10`)
/// 100 µs, so at most 150 µs is added to a response that queued about 4 ms
/// (500 streams at nginx's 126k requests/s).
const PAUSE_PER_STREAM_NS: u64 = 200;
/// The longest pause.
const PAUSE_MAX_NS: u64 = 100_000;
/// Streams in flight per worker from which the pause applies.
const PAUSE_MIN_STREAMS: usize = 64;

/// The pause of a worker with `depth` streams (all its connections' `--streams`).
fn pause_ns(sh: &Shared, depth: usize) -> u64 {
    if sh.rate.is_some() || depth < PAUSE_MIN_STREAMS {
        return 0;
    }
    (depth as u64 * PAUSE_PER_STREAM_NS).min(PAUSE_MAX_NS)
}

/// Size of [`Worker::rbuf`]: room for many responses per `recv`, and always
/// more than a tail can hold (one frame, at most MAX_FRAME + its header).
const RBUF: usize = 256 * 1024;

impl<'a> Worker<'a> {
    pub fn new(
        sh: &'a Shared,
        ctl: &'a RunControl,
        index: u64,
        conns: usize,
        gnuplot: Option<GnuplotWriter>,
    ) -> io::Result<Worker<'a>> {
        let h2 = sh.h2.as_ref().expect("an HTTP/2 run has its setup");
        let batch = (conns as u64 * h2.streams as u64).clamp(1, 64);
        let tick_ns = (sh.timeout_ns / 20).clamp(1_000_000, TICK_NS);
        let ticker = sys::Ticker::new(tick_ns)?;
        let ep = Epoll::new()?;
        ep.add(ticker.fd(), TICK_TOKEN)?;
        Ok(Worker {
            sh,
            h2,
            ctl,
            index,
            ep,
            conns: (0..conns).map(|_| Conn::new()).collect(),
            stats: Stats::new(),
            claims: Claims::new(batch),
            schedule: first_schedule(sh, index),
            pending: VecDeque::new(),
            free: Vec::with_capacity(conns),
            restart: Vec::with_capacity(conns),
            restarting: Vec::with_capacity(conns),
            gnuplot,
            measuring: sh.measure_ns <= sh.start_ns,
            draining: false,
            now: sys::now_ns(),
            want_server: true,
            published: (0, 0),
            why: None,
            ticker,
            tick_ns,
            rbuf: vec![0; RBUF],
            pause_ns: pause_ns(sh, conns * h2.streams),
        })
    }

    /// Drive the connections until the stop condition; return what was measured.
    pub fn run(mut self) -> Stats {
        if self.sh.rate.is_some() {
            sys::precise_timers();
            for ci in (0..self.conns.len()).rev() {
                self.make_free(ci);
            }
        } else {
            self.restart.extend(0..self.conns.len() as u32);
        }
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS];
        turns::drive(&mut self, |w, timeout| w.wait(&mut events, timeout));
        self.finish(&mut events);
        self.stats
    }

    fn wait(&mut self, events: &mut [libc::epoll_event], timeout: Option<u64>) {
        if self.pause_ns > 0 && timeout.is_none_or(|t| t > self.pause_ns) && !self.draining {
            // Let responses gather on a clock of our own instead of blocking
            // in epoll_wait, where every response the server writes would
            // have to wake this thread (see PAUSE_PER_STREAM_NS).
            std::thread::sleep(Duration::from_nanos(self.pause_ns));
            let n = self.ep.wait(events, Some(0));
            if n > 0 {
                return self.on_events(&events[..n]);
            }
        }
        let n = self.ep.wait(events, timeout);
        self.on_events(&events[..n]);
    }

    fn on_events(&mut self, events: &[libc::epoll_event]) {
        for ev in events {
            self.now = sys::now_ns();
            if ev.u64 == TICK_TOKEN {
                self.ticker.ack();
            } else {
                self.on_event(ev.u64 as usize, ev.events);
            }
        }
    }

    /// Exactly until the next precise event when it is sooner than a tick.
    fn timeout(&self) -> Option<u64> {
        let mut until = self.sh.end_ns;
        if !self.measuring {
            until = until.min(self.sh.measure_ns);
        }
        if let Some(t) = self.schedule.as_ref().and_then(Schedule::peek) {
            if !self.free.is_empty() {
                until = until.min(t);
            }
        }
        let wait = until.saturating_sub(self.now);
        (wait < self.tick_ns).then_some(wait)
    }

    fn start_measuring(&mut self) {
        self.measuring = true;
        self.stats.clear();
        if let Some(s) = &mut self.schedule {
            let sh = self.sh;
            *s = Schedule::new(
                sh.measure_ns,
                sh.rate.unwrap_or(1.0),
                self.index,
                sh.threads,
                sh.limit,
            );
        }
    }

    fn should_stop(&self) -> bool {
        self.ctl.stop.load(Ordering::Relaxed)
            || self.sh.aborted.load(Ordering::Relaxed)
            || self.now >= self.sh.end_ns
    }

    /// All requests of a `-n` run are done and no stream is open.
    fn finished(&self) -> bool {
        let no_more = match &self.schedule {
            Some(s) => self.measuring && s.done(),
            None => self.measuring && self.sh.budget.exhausted() && self.claims.held() == 0,
        };
        no_more
            && self.pending.is_empty()
            && self.restart.is_empty()
            && self.conns.iter().all(|c| c.proto.streams.is_empty())
    }

    /// Count streams written but unanswered, let the server answer them, close everything.
    fn finish(&mut self, events: &mut [libc::epoll_event]) {
        let in_flight = self
            .conns
            .iter()
            .flat_map(|c| c.proto.streams.iter())
            .filter(|s| s.slot.measured && s.slot.sent != 0)
            .count();
        self.stats.counters.in_flight_at_end = in_flight as u64;
        self.publish();
        self.drain(events);
        if let Some(g) = &mut self.gnuplot {
            let _ = g.flush();
        }
        for c in &mut self.conns {
            c.sock = None;
        }
    }

    /// After the stop, read (and not count) answers to what was sent, so the
    /// server's own count matches ours; at most `DRAIN_NS`.
    fn drain(&mut self, events: &mut [libc::epoll_event]) {
        self.draining = true;
        let deadline = self.now + self.sh.timeout_ns.min(DRAIN_NS);
        while self
            .conns
            .iter()
            .any(|c| c.state != State::Closed && c.proto.streams.iter().any(|s| s.slot.sent != 0))
        {
            self.now = sys::now_ns();
            if self.now >= deadline {
                return;
            }
            self.wait(events, Some((deadline - self.now).min(TICK_NS)));
        }
    }

    fn publish(&mut self) {
        let done = self.stats.counters.completed;
        let failed = self.stats.counters.failures.total();
        let p = &self.ctl.progress;
        p.completed
            .fetch_add(done.saturating_sub(self.published.0), Ordering::Relaxed);
        p.failed
            .fetch_add(failed.saturating_sub(self.published.1), Ordering::Relaxed);
        self.published = (done, failed);
    }

    // ----- requests --------------------------------------------------------

    /// A request to send: one refused earlier, else a new one from the budget.
    fn claim(&mut self) -> Option<Slot> {
        if self.draining {
            return None;
        }
        if let Some(mut s) = self.pending.pop_front() {
            s.start = self.now;
            s.sent = 0;
            return Some(s);
        }
        if self.schedule.is_some() || (self.measuring && !self.claims.take(&self.sh.budget)) {
            return None;
        }
        Some(Slot {
            start: self.now,
            sent: 0,
            intended: 0,
            connect_ns: 0,
            measured: self.measuring,
        })
    }

    /// Closed model: (re)connect connections that have work.
    fn do_restarts(&mut self) {
        std::mem::swap(&mut self.restart, &mut self.restarting);
        for i in 0..self.restarting.len() {
            let ci = self.restarting[i] as usize;
            if self.sh.rate.is_some() {
                self.make_free(ci);
                continue;
            }
            if let Some(slot) = self.claim() {
                self.connect_with(ci, slot);
            }
        }
        self.restarting.clear();
    }

    /// Connect `ci` and open `slot` on it (and more, closed model); a connect
    /// that fails at once fails `slot` too, so a dead address cannot loop.
    fn connect_with(&mut self, ci: usize, slot: Slot) {
        match self.connect(ci) {
            Ok(()) => {
                self.open_stream(ci, slot);
                self.after_input(ci);
            }
            Err(kind) if slot.measured => self.fail(kind, 1),
            Err(_) => {}
        }
    }

    fn open_stream(&mut self, ci: usize, slot: Slot) {
        let c = &mut self.conns[ci];
        c.proto
            .open(slot, &self.h2.blocks, !self.h2.body.is_empty());
        c.unsent += 1;
    }

    /// Closed model: open streams up to `--streams` (and the server's limit).
    fn refill(&mut self, ci: usize) {
        if self.sh.rate.is_some() {
            self.make_free(ci);
            return;
        }
        while self.conns[ci].state != State::Closed
            && self.conns[ci].proto.capacity(self.h2.streams) > 0
        {
            match self.claim() {
                Some(slot) => self.open_stream(ci, slot),
                None => break,
            }
        }
    }

    /// Open model: send every due (and every refused) request on a connection with room.
    fn dispatch(&mut self) {
        if self.schedule.is_none() {
            return;
        }
        while self.due() || !self.pending.is_empty() {
            let Some(ci) = self.pop_free() else {
                return;
            };
            let Some(slot) = self.next_slot() else {
                return;
            };
            if self.conns[ci].state == State::Closed {
                self.connect_with(ci, slot);
            } else {
                self.open_stream(ci, slot);
                self.after_input(ci);
            }
        }
    }

    /// Open model: a request of the schedule is due now.
    fn due(&self) -> bool {
        self.schedule
            .as_ref()
            .and_then(Schedule::peek)
            .is_some_and(|t| t <= self.now)
    }

    /// Open model: a refused request to resend, else the next due one.
    fn next_slot(&mut self) -> Option<Slot> {
        if let Some(mut s) = self.pending.pop_front() {
            s.start = self.now;
            return Some(s);
        }
        let intended = self.schedule.as_mut()?.pop_due(self.now)?;
        Some(Slot {
            start: self.now,
            sent: 0,
            intended,
            connect_ns: 0,
            measured: self.measuring,
        })
    }

    fn pop_free(&mut self) -> Option<usize> {
        while let Some(ci) = self.free.pop() {
            let c = &mut self.conns[ci as usize];
            c.free = false;
            if c.state == State::Closed || c.proto.capacity(self.h2.streams) > 0 {
                return Some(ci as usize);
            }
        }
        None
    }

    fn make_free(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        if c.free || self.sh.rate.is_none() || self.draining {
            return;
        }
        if c.state == State::Closed || c.proto.capacity(self.h2.streams) > 0 {
            c.free = true;
            self.free.push(ci as u32);
        }
    }

    // ----- connections -----------------------------------------------------

    /// Open a new connection: socket, TLS session, preface and SETTINGS queued.
    /// When it failed at once: the bucket (out of descriptors is kurabe's own
    /// `client` failure), with the reason kept for the caller's failure.
    fn connect(&mut self, ci: usize) -> Result<(), FailKind> {
        let res = self.open_socket(ci);
        let c = &mut self.conns[ci];
        c.proto.start();
        c.out_off = 0;
        c.unsent = 0;
        c.tail = Vec::new();
        c.connect_start = self.now;
        c.state = State::Connecting;
        res.map_err(|e| {
            self.close(ci, End::Done);
            let kind = socket_failure_kind(&e);
            self.explain(kind, || match kind {
                FailKind::Client => {
                    format!("too many open files in kurabe ({e}): raise `ulimit -n` or lower -c")
                }
                _ => e.to_string(),
            });
            kind
        })
    }

    fn open_socket(&mut self, ci: usize) -> io::Result<()> {
        let sock = self.sh.connect_socket()?;
        let fd = sock.as_raw_fd();
        self.ep.add(fd, ci as u64)?;
        let c = &mut self.conns[ci];
        if let Some(tls) = &self.sh.tls {
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
        let c = &self.conns[ci];
        let so_error = c.sock.as_ref().and_then(|s| s.take_error().ok().flatten());
        if flags & (libc::EPOLLERR | libc::EPOLLHUP) as u32 != 0 || so_error.is_some() {
            self.explain(FailKind::Connect, || match so_error {
                Some(e) => e.to_string(),
                None => "the connection failed".to_owned(),
            });
            self.close(ci, End::Fail(FailKind::Connect));
            return;
        }
        if flags & libc::EPOLLOUT as u32 == 0 {
            return;
        }
        let now = self.now;
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
            self.explain(FailKind::Write, || why);
            self.close(ci, End::Fail(FailKind::Write));
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
            if c.state != State::Open || self.h2.body.is_empty() || !c.proto.out.is_empty() {
                return;
            }
            c.proto.pump_bodies(&self.h2.body);
            if c.proto.out.is_empty() {
                return;
            }
            self.flush(ci);
        }
    }

    /// Every stream whose frames are all written now counts as sent.
    fn mark_sent(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        if c.unsent == 0 || self.draining {
            return;
        }
        c.unsent = 0;
        let body_len = self.h2.body.len();
        let now = self.now;
        for s in &mut c.proto.streams {
            if s.slot.sent != 0 || s.body_sent < body_len {
                if s.slot.sent == 0 {
                    c.unsent += 1;
                }
                continue;
            }
            s.slot.sent = now;
            if s.slot.measured {
                self.stats.counters.sent_requests += 1;
                self.stats.counters.sent_body_bytes += body_len as u64;
                if s.slot.intended != 0 && now > s.slot.intended + LATE_NS {
                    self.stats.counters.late_sends += 1;
                }
            }
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
            let r = match &mut c.tls {
                Some(t) => t.read(c.fd, &mut self.rbuf[tail..]),
                None => sys::recv(c.fd, &mut self.rbuf[tail..]),
            };
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
        if self.measuring && !self.draining {
            self.stats.counters.transfer_bytes += n as u64;
        }
        self.process(ci, tail + n)
    }

    fn on_read_error(&mut self, ci: usize, e: io::Error) {
        let handshaking = self.conns[ci].tls.as_ref().is_some_and(|t| t.handshaking());
        let kind = if handshaking {
            FailKind::Connect
        } else {
            FailKind::Receive
        };
        self.explain(kind, || {
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
            if let (None, Some(done)) = (self.sh.tls_summary.get(), t.summary()) {
                let _ = self.sh.tls_summary.set(done);
            }
            return;
        }
        let chose = t.alpn().map(|p| String::from_utf8_lossy(p).into_owned());
        self.explain(FailKind::Connect, || {
            format!(
                "the server did not agree to HTTP/2 over TLS (ALPN offered h2, it chose {}): \
                 drop --http2 or enable http2 on the server",
                chose.as_deref().unwrap_or("nothing")
            )
        });
        self.close(ci, End::Fail(FailKind::Connect));
    }

    /// Parse `rbuf[..len]` (the tail and what was read) and act on it; keep
    /// the unparsed rest as the tail. False when the connection closed.
    fn process(&mut self, ci: usize, len: usize) -> bool {
        self.check_alpn(ci);
        let want = self.want_server;
        let c = &mut self.conns[ci];
        if c.state != State::Open {
            return false;
        }
        match c.proto.input(&self.rbuf[..len], self.now, want) {
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
            self.want_server = false;
            if let Some(s) = self.conns[ci].proto.server.take() {
                let _ = self.sh.server.set(s);
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
        c.proto.table_size(self.h2.blocks.table_need);
        c.proto.replenish();
        self.refill(ci);
        let c = &mut self.conns[ci];
        if !self.h2.body.is_empty() {
            c.proto.pump_bodies(&self.h2.body);
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
                StreamState::Done => self.complete(&s.slot, s.status, s.body, s.first_byte),
                StreamState::Reset(code) => self.on_reset(s.id, &s.slot, code),
                _ => self.refused(ci, s.slot),
            }
        }
    }

    fn complete(&mut self, slot: &Slot, status: u16, body: u64, first_byte: u64) {
        if !slot.measured || self.draining {
            return;
        }
        let a = Answer {
            status,
            body_bytes: body,
            first_byte,
        };
        if let Err(why) = record(
            self.sh,
            &mut self.stats,
            self.gnuplot.as_mut(),
            slot,
            a,
            self.now,
        ) {
            self.explain(FailKind::Length, || why);
            self.fail(FailKind::Length, 1);
        }
    }

    fn on_reset(&mut self, id: u32, slot: &Slot, code: u32) {
        if !slot.measured || self.draining {
            return;
        }
        let name = frame::error_name(code);
        self.explain(FailKind::Receive, || {
            format!("the server reset stream {id} with RST_STREAM {name}")
        });
        *self.stats.counters.stream_resets.entry(name).or_default() += 1;
        self.fail(FailKind::Receive, 1);
    }

    /// A stream the server's GOAWAY says it never processed: send it again on
    /// another connection, unless this connection answered nothing at all
    /// (then a server that refuses everything could loop us forever).
    fn refused(&mut self, ci: usize, slot: Slot) {
        if self.conns[ci].proto.served > 0 {
            self.pending.push_back(slot);
            return;
        }
        if slot.measured && !self.draining {
            let code = self.conns[ci].proto.goaway.map_or(0, |g| g.1);
            self.explain(FailKind::Receive, || {
                format!(
                    "the server refused the request with GOAWAY ({}) on a new connection",
                    frame::error_name(code)
                )
            });
            self.fail(FailKind::Receive, 1);
        }
    }

    fn on_eof(&mut self, ci: usize) {
        if self.conns[ci].proto.streams.is_empty() {
            return self.close(ci, End::Done);
        }
        let (kind, why) = eof_reason(&self.conns[ci]);
        self.explain(kind, || why);
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
        self.explain(e.kind, || e.why);
        self.close(ci, End::Fail(e.kind));
    }

    /// Say why the failure about to be counted as `kind` happened.
    fn explain(&mut self, kind: FailKind, text: impl FnOnce() -> String) {
        if self.stats.wants_error(kind) && !self.draining {
            self.why = Some(text());
        }
    }

    fn fail(&mut self, kind: FailKind, n: u64) {
        let why = self.why.take();
        if n == 0 || self.draining {
            return;
        }
        self.stats.fail(kind, n);
        if self.stats.wants_error(kind) {
            self.stats
                .note_error(kind, why.unwrap_or_else(|| kind.fallback_text().to_owned()));
        }
        if self.sh.abort_on_error {
            self.sh.aborted.store(true, Ordering::Relaxed);
        }
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
        let n = c.proto.streams.iter().filter(|s| s.slot.measured).count() as u64;
        c.proto.streams.clear();
        if let Some((_, _)) = c.proto.goaway {
            if !self.draining && self.measuring {
                self.stats.counters.goaways += 1;
            }
        }
        match end {
            End::Fail(kind) => self.fail(kind, n),
            End::Done if was_open && !self.draining => self.stats.counters.reconnects += 1,
            End::Done => {}
        }
        self.why = None;
        if !self.draining {
            self.restart.push(ci as u32);
        }
    }

    /// Fail streams past their deadline (RST_STREAM CANCEL), and connections
    /// that never became HTTP/2 in time.
    fn expire(&mut self) {
        let timeout_ns = self.sh.timeout_ns;
        for ci in 0..self.conns.len() {
            let c = &self.conns[ci];
            if c.state == State::Closed {
                continue;
            }
            if !c.proto.settings_seen && self.now >= c.connect_start + timeout_ns {
                let connecting = c.state == State::Connecting;
                let t = Duration::from_nanos(timeout_ns);
                self.explain(FailKind::Connect, || {
                    if connecting {
                        format!("no answer to the connect within {t:?} (-s)")
                    } else {
                        format!("no HTTP/2 SETTINGS from the server within {t:?} (-s): is it an HTTP/2 server?")
                    }
                });
                self.close(ci, End::Fail(FailKind::Connect));
                continue;
            }
            self.expire_streams(ci);
        }
    }

    fn expire_streams(&mut self, ci: usize) {
        let (now, timeout_ns) = (self.now, self.sh.timeout_ns);
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
        let t = Duration::from_nanos(self.sh.timeout_ns);
        let p = &mut self.conns[ci].proto;
        let s = p.streams.swap_remove(i);
        let stalled = s.body_sent < self.h2.body.len();
        let (sw, cw) = (s.send_window, p.windows(s.id).1);
        p.cancel(s.id);
        if !s.slot.measured {
            return;
        }
        self.explain(FailKind::Timeout, || {
            if stalled {
                format!(
                    "the request body could not be sent within {t:?} (-s): the server's \
                     flow-control window stayed closed (stream {sw}, connection {cw} bytes)"
                )
            } else {
                format!("no complete response within {t:?} (-s)")
            }
        });
        self.fail(FailKind::Timeout, 1);
    }
}

/// Why a connection that still had streams was closed by the server, and
/// the bucket its streams fail in.
fn eof_reason(c: &Conn) -> (FailKind, String) {
    let open = c.proto.streams.len();
    if c.tls.as_ref().is_some_and(|t| t.handshaking()) {
        let why = "TLS handshake: the server closed the connection";
        return (FailKind::Connect, why.to_owned());
    }
    if !c.proto.settings_seen {
        let why = "the server closed the connection before sending its SETTINGS: \
                   is it an HTTP/2 server?";
        return (FailKind::Connect, why.to_owned());
    }
    let why = match c.proto.goaway {
        Some((_, code)) => format!(
            "the server sent GOAWAY ({}) and closed the connection with {open} stream(s) unanswered",
            frame::error_name(code)
        ),
        None => format!("the server closed the connection with {open} stream(s) unanswered"),
    };
    (FailKind::Receive, why)
}

/// Write `c`'s pending frames until done or the socket is full; the reason
/// when the connection broke.
fn write_out(c: &mut Conn) -> Result<(), String> {
    while c.out_off < c.proto.out.len() {
        let bytes = &c.proto.out[c.out_off..];
        let r = match &mut c.tls {
            Some(t) => t.write(c.fd, bytes),
            None => sys::send(c.fd, bytes),
        };
        match r {
            Ok(n) => c.out_off += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("send: {e}")),
        }
    }
    match &mut c.tls {
        Some(t) if t.wants_write() => t.flush_tls(c.fd).map_err(|e| format!("TLS send: {e}")),
        _ => Ok(()),
    }
}

/// The open model's schedule from the start of the run; the warm-up has no
/// -n limit (it applies from the measured phase, see `start_measuring`).
fn first_schedule(sh: &Shared, index: u64) -> Option<Schedule> {
    let r = sh.rate?;
    let warm = sh.measure_ns > sh.start_ns;
    let start = if warm { sh.start_ns } else { sh.measure_ns };
    let limit = if warm { None } else { sh.limit };
    Some(Schedule::new(start, r, index, sh.threads, limit))
}

/// The shared turn loop's steps (see [`turns::drive`]).
impl Turns for Worker<'_> {
    fn read_clock(&mut self) -> u64 {
        self.now = sys::now_ns();
        self.now
    }

    fn tick_ns(&self) -> u64 {
        self.tick_ns
    }

    fn measure_if_due(&mut self) {
        if !self.measuring && self.now >= self.sh.measure_ns {
            self.start_measuring();
        }
    }

    fn should_stop(&self) -> bool {
        Worker::should_stop(self)
    }

    fn do_restarts(&mut self) {
        Worker::do_restarts(self);
    }

    fn dispatch(&mut self) {
        Worker::dispatch(self);
    }

    fn last_sends(&mut self) {
        let (sh, ctl) = (self.sh, self.ctl);
        let by_time = !ctl.stop.load(Ordering::Relaxed) && !sh.aborted.load(Ordering::Relaxed);
        if !by_time || self.now < sh.end_ns || !self.measuring {
            return;
        }
        // As in HTTP/1.1: what the schedule meant to send before the end but
        // no stream could take (every one waiting for an answer) was never
        // sent, the latest a send can be: late, not lost from the report.
        if let Some(s) = &mut self.schedule {
            self.stats.counters.late_sends += s.give_up_due(sh.end_ns - 1);
        }
    }

    fn expire(&mut self) {
        Worker::expire(self);
    }

    fn publish(&mut self) {
        Worker::publish(self);
    }

    fn finished(&self) -> bool {
        Worker::finished(self)
    }

    fn wait_time(&self) -> Option<u64> {
        if self.restart.is_empty() {
            self.timeout()
        } else {
            Some(0)
        }
    }
}
