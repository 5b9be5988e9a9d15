//! One load-generator thread: an event loop driving its share of the connections.
//!
//! epoll: every socket is registered once, edge-triggered for read and write,
//! and never touched with `epoll_ctl` again; a request is one `send` of
//! pre-serialised bytes, written as soon as the previous response on that
//! connection is complete; a `recv` reads as many responses as the buffer
//! holds. io_uring: the same life cycle, but a send is queued rather than
//! made, each open socket has one multishot receive armed, and one
//! `io_uring_enter` per turn submits everything and collects a batch of
//! completions. Nothing is allocated per request: connection buffers, the
//! in-flight ring and the histograms are sized at start.
//!
//! This module owns the request life cycle and its failure taxonomy; the
//! byte-level framing is [`super::framer`], the numbers are [`super::stats`].

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use super::framer::{Eof, Framer};
use super::gnuplot::GnuplotWriter;
use super::record::{record, Answer};
use super::schedule::{Budget, Claims, Schedule};
use super::stats::{FailKind, Stats};
use super::sys::{self, Epoll};
use super::tls::TlsSession;
use super::turns::{self, Turns};
use super::uring::{self, Cqe, Uring};
use super::RunControl;

/// Longest response head we buffer before calling the response garbage.
const MAX_HEAD: usize = 64 * 1024;
/// Events taken per `epoll_wait`.
const EVENTS: usize = 1024;
/// Longest sleep between checks of Ctrl-C and the clock.
const TICK_NS: u64 = 20_000_000;
/// Longest wait after the stop for answers to requests already sent.
const DRAIN_NS: u64 = 2_000_000_000;
/// Bytes of a response shown to the `-v` tap (ab's header buffer is 8 KiB).
const TRACE_BYTES: usize = 8191;
/// A send later than this behind its intended time counts as late.
const LATE_NS: u64 = 1_000_000;

/// epoll token / io_uring user data of the worker's ticker (connection tokens are their indices).
const TICK_TOKEN: u64 = u64::MAX;
/// io_uring user data of cancel requests (their completions need no action).
const CANCEL_TOKEN: u64 = u64::MAX - 1;
/// io_uring operations, the low two bits of a connection's user data.
const OP_CONNECT: u64 = 0;
const OP_RECV: u64 = 1;
const OP_SEND: u64 = 2;
/// The clock is read again after this many events of one batch, so requests
/// sent late in a long batch are not stamped with its start.
const CLOCK_EVERY: usize = 8;
/// Event bits that mean the peer closed or the connection broke.
const HUP: u32 = (libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32;

/// What all workers share, read-only after start except the atomics.
pub(crate) struct Shared {
    pub addr: SockAddr,
    /// The serialised request repeated `pipeline + 1` times (see [`Conn::queue`]).
    pub requests: Vec<u8>,
    /// Length of one serialised request.
    pub request_len: usize,
    pub body_len: u64,
    pub head_request: bool,
    pub keep_alive: bool,
    pub pipeline: usize,
    pub timeout_ns: u64,
    pub check_length: bool,
    pub abort_on_error: bool,
    pub rate: Option<f64>,
    pub threads: u64,
    /// `-n`, when given.
    pub limit: Option<u64>,
    pub budget: Budget,
    /// Monotonic start of the run and of the measured phase; end of the run (u64::MAX = none).
    pub start_ns: u64,
    pub measure_ns: u64,
    pub end_ns: u64,
    /// Wall clock (µs since the epoch) at `start_ns`, for `-g`.
    pub start_unix_us: u64,
    /// Body length of the first complete response (u64::MAX = none yet).
    pub doc_len: AtomicU64,
    pub server: OnceLock<String>,
    /// Set by the first failure when `abort_on_error`.
    pub aborted: AtomicBool,
    pub tls: Option<super::tls::TlsSetup>,
    pub buf_size: usize,
    /// `-b`: send and receive buffer of every socket.
    pub socket_buffer: Option<u32>,
    /// `-B`: local address (port 0) to bind before connecting.
    pub bind: Option<SockAddr>,
    /// `-v`: gets every response head.
    pub trace: Option<super::HeadTrace>,
    /// Drive sockets with io_uring (else epoll); resolved before the run.
    pub uring: bool,
    /// HTTP/2 runs only: the encoded request and `--streams`.
    pub h2: Option<super::h2::Setup>,
}

impl Shared {
    /// A non-blocking TCP socket with `-b` and `-B` applied, its connect
    /// started (both protocols' workers open connections here).
    pub(crate) fn connect_socket(&self) -> io::Result<Socket> {
        let sock = Socket::new(
            Domain::for_address(self.addr.as_socket().expect("resolved address")),
            Type::STREAM.nonblocking().cloexec(),
            Some(Protocol::TCP),
        )?;
        sock.set_nodelay(true)?;
        if let Some(size) = self.socket_buffer {
            sock.set_send_buffer_size(size as usize)?;
            sock.set_recv_buffer_size(size as usize)?;
        }
        if let Some(local) = &self.bind {
            sock.bind(local)?;
        }
        match sock.connect(&self.addr) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
            Err(e) => return Err(e),
        }
        Ok(sock)
    }
}

/// Per in-flight request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    /// When the request started: connect start for a new connection, else the write.
    pub start: u64,
    /// When it was handed to the kernel (or 0 while not yet written).
    pub sent: u64,
    /// Open model: the intended send time (0 in the closed model).
    pub intended: u64,
    /// Connect time attributed to this request (ab: the first on a connection).
    pub connect_ns: u64,
    /// Claimed during the measured phase (warm-up requests are not counted).
    pub measured: bool,
}

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
    buf: Vec<u8>,
    len: usize,
    framer: Framer,
    ring: VecDeque<Slot>,
    /// Pending write: bytes `w_off..w_end` of `Shared::requests`.
    w_off: usize,
    w_end: usize,
    first_byte: u64,
    deadline: u64,
    /// Responses completed since this connection was opened.
    served: u64,
    /// In one of the free lists (open model).
    free: bool,
    /// The server ended this keep-alive connection; the next connect is a reconnect.
    server_closed: bool,
    tls: Option<Box<TlsSession>>,
    /// io_uring: incremented at every close, so completions of a previous
    /// socket in this slot are recognised and ignored.
    gen: u32,
    /// io_uring: a multishot receive / the connect poll is armed.
    recv_armed: bool,
    poll_armed: bool,
    /// io_uring: a send is in flight (one at a time keeps the bytes in order), queued at `send_at`.
    send_busy: bool,
    send_at: u64,
    send_len: usize,
}

impl Conn {
    fn new(buf_size: usize, pipeline: usize) -> Conn {
        Conn {
            sock: None,
            fd: -1,
            state: State::Closed,
            buf: vec![0; buf_size],
            len: 0,
            framer: Framer::default(),
            ring: VecDeque::with_capacity(pipeline),
            w_off: 0,
            w_end: 0,
            first_byte: 0,
            deadline: 0,
            served: 0,
            free: false,
            server_closed: false,
            tls: None,
            gen: 0,
            recv_armed: false,
            poll_armed: false,
            send_busy: false,
            send_at: 0,
            send_len: 0,
        }
    }

    /// Requests in the ring whose bytes are not fully written yet.
    fn unwritten(&self, request_len: usize) -> usize {
        (self.w_end - self.w_off).div_ceil(request_len)
    }

    /// Queue `k` more requests' bytes behind whatever is pending.
    fn queue(&mut self, k: usize, request_len: usize) {
        let pending = self.w_end - self.w_off;
        // All copies are identical: keep the offset within the first copy so
        // the range always fits in `pipeline + 1` copies.
        self.w_off %= request_len;
        self.w_end = self.w_off + pending + k * request_len;
    }
}

/// How a connection ended, for the requests still on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// Failed: count every request still in flight in this bucket.
    Fail(FailKind),
    /// The server closed a reused connection without starting an answer:
    /// resend what was in flight on a new connection (not counted).
    Retry,
    /// Nothing in flight (normal close after the last response).
    Done,
}

/// How a worker learns what its sockets did.
enum Io {
    /// Readiness: every socket registered once, edge-triggered; the worker reads and writes.
    Epoll {
        ep: Epoll,
        events: Vec<libc::epoll_event>,
    },
    /// Completions: sends and multishot receives queued on a ring, submitted in one call per turn.
    Uring { ring: Box<Uring>, cqes: Vec<Cqe> },
}

/// io_uring user data naming operation `op` on socket generation `gen` of connection `ci`.
fn tag(ci: usize, gen: u32, op: u64) -> u64 {
    (u64::from(gen & 0x3fff_ffff) << 34) | ((ci as u64) << 2) | op
}

/// One worker's state.
pub(crate) struct Worker<'a> {
    sh: &'a Shared,
    ctl: &'a RunControl,
    index: u64,
    io: Io,
    conns: Vec<Conn>,
    stats: Stats,
    claims: Claims,
    schedule: Option<Schedule>,
    /// Open model: connections that can take a request now (open / closed).
    free_open: Vec<u32>,
    free_closed: Vec<u32>,
    /// Connections to (re)start on the next loop iteration.
    restart: Vec<u32>,
    /// The batch of `restart` being processed (kept to reuse its allocation).
    restarting: Vec<u32>,
    gnuplot: Option<GnuplotWriter>,
    measuring: bool,
    /// The run has stopped: read answers, write and count nothing.
    draining: bool,
    now: u64,
    want_server: bool,
    published: (u64, u64),
    /// Why the connection about to be closed failed; taken by [`Worker::fail`].
    why: Option<String>,
    /// Wakes the loop every `tick_ns` to check the stop flag, deadlines and progress.
    ticker: sys::Ticker,
    tick_ns: u64,
    /// io_uring, closed model: completions worth waking up for (see [`Uring::wait`]).
    batch: usize,
}

impl<'a> Worker<'a> {
    pub fn new(
        sh: &'a Shared,
        ctl: &'a RunControl,
        index: u64,
        conns: usize,
        gnuplot: Option<GnuplotWriter>,
    ) -> io::Result<Worker<'a>> {
        let schedule = sh.rate.map(|r| {
            let start = if sh.measure_ns > sh.start_ns {
                sh.start_ns
            } else {
                sh.measure_ns
            };
            // During warm-up there is no -n limit; it applies from the measured phase.
            let limit = if sh.measure_ns > sh.start_ns {
                None
            } else {
                sh.limit
            };
            Schedule::new(start, r, index, sh.threads, limit)
        });
        let batch = (conns as u64 * sh.pipeline as u64).clamp(1, 64);
        // Deadlines are checked every tick: within 5 % of the request timeout.
        let tick_ns = (sh.timeout_ns / 20).clamp(1_000_000, TICK_NS);
        let ticker = sys::Ticker::new(tick_ns)?;
        let io = if sh.uring {
            Io::Uring {
                ring: Box::new(Uring::new(conns)?),
                cqes: Vec::new(),
            }
        } else {
            let ep = Epoll::new()?;
            ep.add(ticker.fd(), TICK_TOKEN)?;
            Io::Epoll {
                ep,
                events: vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS],
            }
        };
        Ok(Worker {
            sh,
            ctl,
            index,
            io,
            conns: (0..conns)
                .map(|_| Conn::new(sh.buf_size, sh.pipeline))
                .collect(),
            stats: Stats::new(),
            claims: Claims::new(batch),
            schedule,
            free_open: Vec::with_capacity(conns),
            free_closed: Vec::with_capacity(conns),
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
            // A sixteenth of what is in flight: the server keeps the rest busy
            // while the client sleeps. The open model wakes for every response.
            batch: if sh.rate.is_some() {
                1
            } else {
                (conns * sh.pipeline / 16).clamp(1, 32)
            },
        })
    }

    /// Drive the connections until the stop condition; return what was
    /// measured. `Err`: the kernel refused to enable the io_uring on this
    /// thread (before any request: a setup failure, not the server's).
    pub fn run(mut self) -> io::Result<Stats> {
        if let Io::Uring { ring, .. } = &mut self.io {
            // The ring was built on the setup thread; this thread is its one submitter.
            ring.enable()?;
            ring.poll(self.ticker.fd(), libc::POLLIN as u32, true, TICK_TOKEN);
        }
        if self.sh.rate.is_some() {
            sys::precise_timers();
            for i in (0..self.conns.len() as u32).rev() {
                self.conns[i as usize].free = true;
                self.free_closed.push(i);
            }
        } else {
            self.restart.extend(0..self.conns.len() as u32);
        }
        turns::drive(&mut self, Worker::poll_io);
        self.finish();
        Ok(self.stats)
    }

    /// Wait at most `timeout` ns (None: until something happens, the ticker
    /// bounds it) and act on every event or completion.
    fn poll_io(&mut self, timeout: Option<u64>) {
        match &mut self.io {
            Io::Epoll { ep, events } => {
                let mut evs = std::mem::take(events);
                let n = ep.wait(&mut evs, timeout);
                for (i, ev) in evs[..n].iter().enumerate() {
                    if i % CLOCK_EVERY == 0 {
                        self.now = sys::now_ns();
                    }
                    if ev.u64 == TICK_TOKEN {
                        self.ticker.ack();
                    } else {
                        self.on_event(ev.u64 as usize, ev.events);
                    }
                }
                if let Io::Epoll { events, .. } = &mut self.io {
                    *events = evs;
                }
            }
            Io::Uring { ring, cqes } => {
                let mut done = std::mem::take(cqes);
                ring.wait(timeout, self.batch, &mut done);
                for (i, cqe) in done.iter().enumerate() {
                    if i % CLOCK_EVERY == 0 {
                        self.now = sys::now_ns();
                    }
                    self.on_completion(*cqe);
                }
                if let Io::Uring { cqes, .. } = &mut self.io {
                    *cqes = done;
                }
            }
        }
    }

    /// Requests on connection `c` whose bytes are fully written (or in a
    /// send already queued to io_uring, which will reach the server) and not answered.
    fn written_unanswered(&self, c: &Conn) -> usize {
        if c.state == State::Closed {
            return 0;
        }
        let queued = if c.send_busy { c.send_len } else { 0 };
        let unwritten =
            (c.w_end - c.w_off - queued.min(c.w_end - c.w_off)).div_ceil(self.sh.request_len);
        c.ring.len() - unwritten.min(c.ring.len())
    }

    /// After the stop: let the server answer what it was sent (responses are
    /// read and discarded, nothing more is written), so closing our sockets
    /// with unread data cannot reset connections under requests the server
    /// has not processed yet, and its own count matches ours.
    fn drain(&mut self) {
        self.draining = true;
        let deadline = self.now + (self.sh.timeout_ns).min(DRAIN_NS);
        loop {
            if self.conns.iter().all(|c| self.written_unanswered(c) == 0) {
                return;
            }
            self.now = sys::now_ns();
            if self.now >= deadline {
                return;
            }
            self.poll_io(Some((deadline - self.now).min(TICK_NS)));
        }
    }

    /// How long to sleep: `None` when the ticker's period is soon enough
    /// (stop flag, timeout scan, progress), else exactly until the next
    /// precise event (end of the run or of the warm-up, next `--rate` send).
    fn timeout(&self) -> Option<u64> {
        let mut until = self.sh.end_ns;
        if !self.measuring {
            until = until.min(self.sh.measure_ns);
        }
        if let Some(s) = &self.schedule {
            if let Some(t) = s.peek() {
                if !self.free_open.is_empty() || !self.free_closed.is_empty() {
                    until = until.min(t);
                }
            }
        }
        let wait = until.saturating_sub(self.now);
        (wait < self.tick_ns).then_some(wait)
    }

    fn start_measuring(&mut self) {
        self.measuring = true;
        self.stats.clear();
        if let Some(s) = &mut self.schedule {
            *s = Schedule::new(
                self.sh.measure_ns,
                self.sh.rate.unwrap_or(1.0),
                self.index,
                self.sh.threads,
                self.sh.limit,
            );
        }
    }

    fn should_stop(&self) -> bool {
        self.ctl.stop.load(Ordering::Relaxed)
            || self.sh.aborted.load(Ordering::Relaxed)
            || self.now >= self.sh.end_ns
    }

    /// All requests of a `-n` run are done and no connection has work.
    fn finished(&self) -> bool {
        let no_more = match &self.schedule {
            Some(s) => self.measuring && s.done(),
            None => self.measuring && self.sh.budget.exhausted() && self.claims.held() == 0,
        };
        no_more && self.restart.is_empty() && self.conns.iter().all(|c| c.ring.is_empty())
    }

    /// Count requests written but unanswered, publish the last progress, close everything.
    fn finish(&mut self) {
        let mut in_flight = 0;
        for c in &self.conns {
            let written = self.written_unanswered(c);
            in_flight += c.ring.iter().take(written).filter(|s| s.measured).count() as u64;
        }
        self.stats.in_flight_at_end = in_flight;
        self.publish();
        self.drain();
        if let Some(g) = &mut self.gnuplot {
            let _ = g.flush();
        }
        for c in &mut self.conns {
            c.sock = None;
        }
    }

    fn publish(&mut self) {
        let done = self.stats.completed;
        let failed = self.stats.failures.total();
        let p = &self.ctl.progress;
        if done >= self.published.0 {
            p.completed
                .fetch_add(done - self.published.0, Ordering::Relaxed);
        }
        if failed >= self.published.1 {
            p.failed
                .fetch_add(failed - self.published.1, Ordering::Relaxed);
        }
        self.published = (done, failed);
    }

    // ----- request issue -------------------------------------------------

    /// Closed model: start connections queued for (re)start.
    fn do_restarts(&mut self) {
        // Only those queued so far: a connect that fails at once queues itself
        // again, and must wait for the next turn of the loop (which checks the clock).
        std::mem::swap(&mut self.restart, &mut self.restarting);
        for i in 0..self.restarting.len() {
            let ci = self.restarting[i] as usize;
            if self.sh.rate.is_some() {
                // Open model: a connection with carried-over requests reconnects; else it waits.
                if self.conns[ci].ring.is_empty() {
                    self.make_free(ci);
                } else {
                    self.connect(ci);
                }
                continue;
            }
            if self.conns[ci].ring.is_empty() {
                match self.claim() {
                    Some(slot) => self.conns[ci].ring.push_back(slot),
                    None => continue,
                }
            }
            self.connect(ci);
        }
        self.restarting.clear();
    }

    fn claim(&mut self) -> Option<Slot> {
        if self.draining {
            return None;
        }
        let measured = self.measuring;
        if measured && !self.claims.take(&self.sh.budget) {
            return None;
        }
        Some(Slot {
            start: self.now,
            sent: 0,
            intended: 0,
            connect_ns: 0,
            measured,
        })
    }

    /// Open model: send every due request on a free connection.
    fn dispatch(&mut self) {
        let now = self.now;
        loop {
            let due = self
                .schedule
                .as_ref()
                .and_then(Schedule::peek)
                .is_some_and(|t| t <= now);
            if !due {
                return;
            }
            let Some(ci) = self.pop_free() else {
                return;
            };
            let Some(intended) = self.schedule.as_mut().and_then(|s| s.pop_due(now)) else {
                return;
            };
            let slot = Slot {
                start: now,
                sent: 0,
                intended,
                connect_ns: 0,
                measured: self.measuring,
            };
            self.conns[ci].ring.push_back(slot);
            if self.conns[ci].state == State::Open {
                self.conns[ci].queue(1, self.sh.request_len);
                self.flush(ci);
                if self.conns[ci].state == State::Open
                    && self.conns[ci].ring.len() < self.sh.pipeline
                {
                    self.make_free(ci);
                }
            } else {
                self.connect(ci);
            }
        }
    }

    /// A connection that can take a request now, preferring open ones.
    /// Entries whose connection changed state since they were listed are skipped.
    fn pop_free(&mut self) -> Option<usize> {
        while let Some(ci) = self.free_open.pop() {
            let c = &mut self.conns[ci as usize];
            if c.free && c.state == State::Open {
                c.free = false;
                return Some(ci as usize);
            }
        }
        while let Some(ci) = self.free_closed.pop() {
            let c = &mut self.conns[ci as usize];
            if c.free && c.state == State::Closed {
                c.free = false;
                return Some(ci as usize);
            }
        }
        None
    }

    fn make_free(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        if c.free || self.sh.rate.is_none() {
            return;
        }
        c.free = true;
        if c.state == State::Open {
            self.free_open.push(ci as u32);
        } else {
            self.free_closed.push(ci as u32);
        }
    }

    /// Open a new connection for the requests in the ring.
    fn connect(&mut self, ci: usize) {
        let now = self.now;
        let rl = self.sh.request_len;
        let res = self.open_socket(ci);
        let c = &mut self.conns[ci];
        for s in c.ring.iter_mut() {
            s.start = now;
            s.sent = 0;
        }
        c.w_off = 0;
        c.w_end = 0;
        let k = c.ring.len();
        c.queue(k, rl);
        c.deadline = now + self.sh.timeout_ns;
        c.len = 0;
        c.framer.reset();
        c.first_byte = 0;
        c.served = 0;
        if std::mem::take(&mut c.server_closed) && self.measuring && !self.draining {
            self.stats.reconnects += 1;
        }
        match res {
            Ok(()) => c.state = State::Connecting,
            Err(e) => {
                let kind = socket_failure_kind(&e);
                self.explain(kind, || match kind {
                    FailKind::Client => format!(
                        "too many open files in kurabe ({e}): raise `ulimit -n` or lower -c"
                    ),
                    _ => e.to_string(),
                });
                self.close(ci, End::Fail(kind));
            }
        }
    }

    fn open_socket(&mut self, ci: usize) -> io::Result<()> {
        let sock = self.sh.connect_socket()?;
        let fd = sock.as_raw_fd();
        let c = &mut self.conns[ci];
        match &mut self.io {
            Io::Epoll { ep, .. } => ep.add(fd, ci as u64)?,
            Io::Uring { ring, .. } => {
                ring.poll(fd, libc::POLLOUT as u32, false, tag(ci, c.gen, OP_CONNECT));
                c.poll_armed = true;
            }
        }
        if let Some(tls) = &self.sh.tls {
            c.tls = Some(Box::new(tls.session()?));
        }
        c.fd = fd;
        c.sock = Some(sock);
        Ok(())
    }

    // ----- events ----------------------------------------------------------

    fn on_event(&mut self, ci: usize, flags: u32) {
        let Some(c) = self.conns.get(ci) else {
            return;
        };
        match c.state {
            State::Closed => {}
            State::Connecting => {
                let err = flags & (libc::EPOLLERR | libc::EPOLLHUP) as u32 != 0;
                let so_error = c.sock.as_ref().and_then(|s| s.take_error().ok().flatten());
                if err || so_error.is_some() {
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
                if let Some(s) = c.ring.front_mut() {
                    s.connect_ns = now - s.start;
                }
                self.arm_recv(ci);
                if self.sh.rate.is_none() {
                    self.refill(ci, false);
                }
                self.flush(ci);
                if self.conns[ci].state == State::Open
                    && self.conns[ci].ring.len() < self.sh.pipeline
                    && self.sh.keep_alive
                {
                    self.make_free(ci);
                }
                if self.conns[ci].state == State::Open && !self.sh.uring {
                    // Data may already be there (edge already fired with EPOLLIN).
                    if flags & libc::EPOLLIN as u32 != 0 {
                        self.read(ci, flags & HUP != 0);
                    }
                }
            }
            State::Open => {
                if flags & libc::EPOLLOUT as u32 != 0 {
                    let fd = c.fd;
                    if c.w_off < c.w_end {
                        self.flush(ci);
                    } else if let Some(t) = &mut self.conns[ci].tls {
                        // Handshake or buffered ciphertext waiting for room in the socket.
                        if t.wants_write() {
                            if let Err(e) = t.flush_tls(fd) {
                                self.explain(FailKind::Exception, || format!("TLS send: {e}"));
                                self.close(ci, End::Fail(FailKind::Exception));
                                return;
                            }
                        }
                    }
                }
                if self.conns[ci].state == State::Open && flags & (libc::EPOLLIN as u32 | HUP) != 0
                {
                    self.read(ci, flags & HUP != 0);
                }
            }
        }
    }

    /// Closed model: claim requests until `pipeline` are in flight, queue their bytes.
    fn refill(&mut self, ci: usize, send: bool) {
        let want = if self.sh.keep_alive {
            self.sh.pipeline
        } else {
            1
        };
        let mut k = 0;
        while self.conns[ci].ring.len() < want {
            match self.claim() {
                Some(slot) => {
                    self.conns[ci].ring.push_back(slot);
                    k += 1;
                }
                None => break,
            }
        }
        if k > 0 {
            self.conns[ci].queue(k, self.sh.request_len);
            if send {
                self.flush(ci);
            }
        }
    }

    /// Write pending request bytes until done or the socket is full
    /// (io_uring: queue them as one send).
    fn flush(&mut self, ci: usize) {
        let sh = self.sh;
        let now = self.now;
        let c = &mut self.conns[ci];
        if c.state != State::Open || self.draining {
            return;
        }
        if let Io::Uring { ring, .. } = &mut self.io {
            if !c.send_busy && c.w_off < c.w_end {
                let bytes = &sh.requests[c.w_off..c.w_end];
                // `sh.requests` outlives the worker and so the operation.
                ring.send(c.fd, bytes, tag(ci, c.gen, OP_SEND));
                c.send_busy = true;
                c.send_at = now;
                c.send_len = bytes.len();
            }
            return;
        }
        let before = c.unwritten(sh.request_len);
        while c.w_off < c.w_end {
            let bytes = &sh.requests[c.w_off..c.w_end];
            let r = match &mut c.tls {
                Some(t) => t.write(c.fd, bytes),
                None => sys::send(c.fd, bytes),
            };
            match r {
                Ok(n) => c.w_off += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.send_failed(ci, e);
                    return;
                }
            }
        }
        self.mark_written(ci, before, now);
    }

    /// A send failed: a reused connection the server closed between
    /// responses is retried, anything else fails what is in flight.
    fn send_failed(&mut self, ci: usize, e: io::Error) {
        let c = &self.conns[ci];
        let end = if c.served > 0 && c.framer.between_responses() {
            End::Retry
        } else {
            End::Fail(FailKind::Exception)
        };
        self.explain(FailKind::Exception, || format!("send: {e}"));
        self.close(ci, end);
    }

    /// io_uring: a send completed with `res` (bytes or -errno).
    fn on_send(&mut self, ci: usize, res: i32) {
        let rl = self.sh.request_len;
        let c = &mut self.conns[ci];
        c.send_busy = false;
        if res < 0 {
            self.send_failed(ci, io::Error::from_raw_os_error(-res));
            return;
        }
        let before = c.unwritten(rl);
        c.w_off += res as usize;
        let at = c.send_at;
        self.mark_written(ci, before, at);
        self.flush(ci);
    }

    /// Stamp the requests whose last byte went out at `at` (`before` were
    /// unwritten until then) and start the connection's deadline.
    fn mark_written(&mut self, ci: usize, before: usize, at: u64) {
        let sh = self.sh;
        let c = &mut self.conns[ci];
        let after = c.unwritten(sh.request_len);
        if after < before {
            // Requests newly written: the last `before` of the ring, first `before - after` of them.
            let first = c.ring.len() - before;
            let mut measured = 0;
            for s in c.ring.range_mut(first..first + (before - after)) {
                s.sent = at;
                if s.measured {
                    measured += 1;
                    if s.intended != 0 && at > s.intended + LATE_NS {
                        self.stats.late_sends += 1;
                    }
                }
            }
            self.stats.sent_requests += measured;
            self.stats.sent_body_bytes += measured * sh.body_len;
        }
        if c.deadline == 0 {
            if let Some(s) = c.ring.front() {
                c.deadline = s.start + sh.timeout_ns;
            }
        }
    }

    /// Read and process everything available. `hup`: the event said the peer closed.
    fn read(&mut self, ci: usize, hup: bool) {
        loop {
            if !self.make_room(ci) {
                return;
            }
            let c = &mut self.conns[ci];
            let space = c.buf.len() - c.len;
            let r = match &mut c.tls {
                Some(t) => t.read(c.fd, &mut c.buf[c.len..]),
                None => sys::recv(c.fd, &mut c.buf[c.len..]),
            };
            match r {
                Ok(0) => {
                    self.on_eof(ci);
                    return;
                }
                Ok(n) => {
                    self.absorb(ci, n);
                    // A short read drained the socket: the next edge will tell us of
                    // more, unless the peer's FIN came with this edge (then read on to the EOF).
                    if n < space && !hup && self.conns[ci].tls.is_none() {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.recv_failed(ci, e);
                    return;
                }
            }
        }
    }

    /// Make room in an open connection's buffer for more bytes; false (and
    /// the connection closed) when a response head outgrew [`MAX_HEAD`].
    fn make_room(&mut self, ci: usize) -> bool {
        let c = &mut self.conns[ci];
        if c.state != State::Open {
            return false;
        }
        if c.len == c.buf.len() {
            if c.buf.len() >= MAX_HEAD {
                self.explain(FailKind::Exception, || {
                    format!("response head over {} KiB", MAX_HEAD / 1024)
                });
                self.close(ci, End::Fail(FailKind::Exception));
                return false;
            }
            let n = (c.buf.len() * 2).min(MAX_HEAD);
            c.buf.resize(n, 0);
        }
        true
    }

    /// Account `n` new bytes at the end of the buffer and parse what they complete.
    fn absorb(&mut self, ci: usize, n: usize) {
        if self.measuring && !self.draining {
            self.stats.transfer_bytes += n as u64;
        }
        let c = &mut self.conns[ci];
        if c.first_byte == 0 {
            c.first_byte = self.now;
        }
        c.len += n;
        self.process(ci);
    }

    /// A receive failed with `e`.
    fn recv_failed(&mut self, ci: usize, e: io::Error) {
        let c = &self.conns[ci];
        let end = if c.tls.as_ref().is_some_and(|t| t.handshaking()) {
            // TLS handshake failed (e.g. untrusted certificate): part of connecting.
            self.explain(FailKind::Connect, || format!("TLS handshake: {e}"));
            End::Fail(FailKind::Connect)
        } else if c.served > 0 && c.framer.between_responses() && c.len == 0 {
            End::Retry
        } else {
            self.explain(FailKind::Receive, || e.to_string());
            End::Fail(FailKind::Receive)
        };
        self.close(ci, end);
    }

    // ----- io_uring completions ------------------------------------------

    /// Act on one completion; those of a closed socket generation are only
    /// cleaned up (their receive buffer goes back to the kernel).
    fn on_completion(&mut self, cqe: Cqe) {
        let Io::Uring { ring, .. } = &mut self.io else {
            return;
        };
        match cqe.user_data {
            TICK_TOKEN => {
                self.ticker.ack();
                if !uring::more(cqe.flags) {
                    ring.poll(self.ticker.fd(), libc::POLLIN as u32, true, TICK_TOKEN);
                }
                return;
            }
            CANCEL_TOKEN => return,
            _ => {}
        }
        let ci = ((cqe.user_data >> 2) & 0xffff_ffff) as usize;
        let op = cqe.user_data & 3;
        let current = self
            .conns
            .get(ci)
            .is_some_and(|c| cqe.user_data == tag(ci, c.gen, op));
        if !current {
            ring.recycle(cqe.flags);
            return;
        }
        match op {
            OP_CONNECT => {
                self.conns[ci].poll_armed = false;
                let flags = if cqe.result < 0 {
                    libc::EPOLLERR as u32
                } else {
                    cqe.result as u32
                };
                self.on_event(ci, flags);
            }
            OP_SEND => self.on_send(ci, cqe.result),
            _ => self.on_recv(ci, cqe),
        }
    }

    /// A multishot receive produced bytes, the end of the stream, or an error.
    fn on_recv(&mut self, ci: usize, cqe: Cqe) {
        if !uring::more(cqe.flags) {
            self.conns[ci].recv_armed = false;
        }
        match cqe.result {
            0 => self.on_eof(ci),
            n if n > 0 => self.take_received(ci, cqe.flags, n as usize),
            e if e == -libc::ENOBUFS || e == -libc::ECANCELED => {}
            e => self.recv_failed(ci, io::Error::from_raw_os_error(-e)),
        }
        if let Io::Uring { ring, .. } = &mut self.io {
            ring.recycle(cqe.flags);
        }
        self.arm_recv(ci);
    }

    /// Copy `n` received bytes from the kernel's buffer into the connection's and parse them.
    fn take_received(&mut self, ci: usize, flags: u32, n: usize) {
        let mut off = 0;
        while off < n && self.make_room(ci) {
            let Io::Uring { ring, .. } = &self.io else {
                return;
            };
            let Some(data) = ring.buffer(flags, n) else {
                return;
            };
            let c = &mut self.conns[ci];
            let k = (n - off).min(c.buf.len() - c.len);
            c.buf[c.len..c.len + k].copy_from_slice(&data[off..off + k]);
            off += k;
            self.absorb(ci, k);
        }
    }

    /// io_uring: keep a multishot receive armed on an open connection.
    fn arm_recv(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        if let Io::Uring { ring, .. } = &mut self.io {
            if c.state == State::Open && !c.recv_armed {
                ring.recv(c.fd, tag(ci, c.gen, OP_RECV));
                c.recv_armed = true;
            }
        }
    }

    fn on_eof(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        let handshaking = c.tls.as_ref().is_some_and(|t| t.handshaking());
        match c.framer.eof(c.len) {
            Eof::Clean if c.ring.is_empty() => self.close(ci, End::Done),
            Eof::Clean if c.served > 0 => self.close(ci, End::Retry),
            Eof::Clean | Eof::TruncatedHead if handshaking => {
                self.explain(FailKind::Connect, || {
                    "TLS handshake: the server closed the connection".to_owned()
                });
                self.close(ci, End::Fail(FailKind::Connect));
            }
            Eof::Clean | Eof::TruncatedHead => {
                self.explain(FailKind::Receive, || {
                    "the server closed the connection before a complete response head".to_owned()
                });
                self.close(ci, End::Fail(FailKind::Receive));
            }
            Eof::TruncatedBody => {
                self.explain(FailKind::Length, || {
                    "the server closed the connection before the end of the body".to_owned()
                });
                self.close(ci, End::Fail(FailKind::Length));
            }
            Eof::Complete(resp) => {
                self.complete(ci, resp);
                self.close(ci, End::Done);
            }
        }
    }

    /// Parse every complete response in the buffer.
    fn process(&mut self, ci: usize) {
        let head = self.sh.head_request;
        let mut pos = 0;
        loop {
            let want_server = self.want_server;
            let c = &mut self.conns[ci];
            if pos == c.len {
                break;
            }
            if c.ring.is_empty() {
                // Bytes nobody asked for: the connection is out of step; replace it.
                self.close(ci, End::Done);
                return;
            }
            let at_head = self.sh.trace.is_some() && c.framer.in_head();
            let step = match c.framer.advance(&c.buf[pos..c.len], head, want_server) {
                Ok(step) => step,
                Err(e) => {
                    self.explain(FailKind::Exception, || e.to_string());
                    self.close(ci, End::Fail(FailKind::Exception));
                    return;
                }
            };
            if at_head && step.used > 0 {
                if let Some(trace) = &self.sh.trace {
                    // ab logs its 8 KiB header buffer: the head and the body read with it.
                    (trace.0)(&c.buf[pos..c.len.min(pos + TRACE_BYTES)]);
                }
            }
            pos += step.used;
            if let Some(resp) = step.done {
                let more = pos < self.conns[ci].len;
                self.complete(ci, resp);
                let c = &mut self.conns[ci];
                c.first_byte = if more { self.now } else { 0 };
                if !resp.reusable || !self.sh.keep_alive {
                    // Anything after a closing response is not ours to read.
                    c.len = 0;
                    let end = if c.ring.is_empty() {
                        End::Done
                    } else {
                        End::Retry
                    };
                    self.close(ci, end);
                    return;
                }
            } else if step.used == 0 {
                break;
            }
        }
        let c = &mut self.conns[ci];
        if pos > 0 {
            c.buf.copy_within(pos..c.len, 0);
            c.len -= pos;
        }
        if self.sh.rate.is_none() {
            // Pipelining: the next batch goes out in one send once the whole
            // previous one is answered (as wrk does), not one request per response.
            if self.conns[ci].ring.is_empty() {
                self.refill(ci, true);
            }
        } else if self.conns[ci].ring.len() < self.sh.pipeline {
            self.make_free(ci);
        }
    }

    /// Account one complete response for the oldest request.
    fn complete(&mut self, ci: usize, resp: super::framer::Response) {
        let now = self.now;
        let c = &mut self.conns[ci];
        let Some(slot) = c.ring.pop_front() else {
            return;
        };
        let reused = c.served > 0;
        c.served += 1;
        c.deadline = match c.ring.front() {
            Some(s) => s.start.max(s.sent) + self.sh.timeout_ns,
            None => 0,
        };
        let first_byte = if c.first_byte == 0 { now } else { c.first_byte };
        if self.want_server {
            if let Some(s) = c.framer.server.take() {
                let _ = self.sh.server.set(s);
            }
            self.want_server = false;
        }
        if !slot.measured || self.draining {
            return;
        }
        let a = Answer {
            status: resp.status,
            body_bytes: resp.body_bytes,
            first_byte,
        };
        match record(
            self.sh,
            &mut self.stats,
            self.gnuplot.as_mut(),
            &slot,
            a,
            now,
        ) {
            Ok(()) => self.stats.keep_alive_requests += u64::from(reused),
            Err(why) => {
                self.explain(FailKind::Length, || why);
                self.fail(FailKind::Length, 1);
            }
        }
    }

    /// Say why the failure about to be counted as `kind` happened; `text` is
    /// only formatted while that kind has no first error yet.
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

    /// Close a connection, settle the requests on it, and schedule its replacement.
    fn close(&mut self, ci: usize, end: End) {
        let c = &mut self.conns[ci];
        // The server ended a connection that had answered: with -k, a reconnect follows.
        c.server_closed = self.sh.keep_alive && c.served > 0 && !matches!(end, End::Fail(_));
        if let Io::Uring { ring, .. } = &mut self.io {
            // An armed operation holds the socket open; cancelling it lets the close happen.
            if c.recv_armed {
                ring.cancel(tag(ci, c.gen, OP_RECV), CANCEL_TOKEN);
            }
            if c.poll_armed {
                ring.cancel(tag(ci, c.gen, OP_CONNECT), CANCEL_TOKEN);
            }
            c.recv_armed = false;
            c.poll_armed = false;
            c.send_busy = false;
            c.gen = c.gen.wrapping_add(1);
        }
        c.sock = None; // closing the fd also removes it from epoll
        c.fd = -1;
        c.tls = None;
        c.state = State::Closed;
        c.len = 0;
        c.framer.reset();
        c.first_byte = 0;
        c.deadline = 0;
        c.free = false;
        if matches!(end, End::Retry) && c.served == 0 {
            self.explain(FailKind::Receive, || {
                "the server closed a new connection without answering".to_owned()
            });
        }
        let c = &mut self.conns[ci];
        match end {
            End::Fail(kind) => {
                let n = c.ring.iter().filter(|s| s.measured).count() as u64;
                c.ring.clear();
                c.w_off = 0;
                c.w_end = 0;
                self.fail(kind, n);
            }
            End::Retry if c.served == 0 => {
                // A fresh connection that closed without answering is a failure, not a retry,
                // so a server that accepts and hangs up cannot loop us forever.
                let n = c.ring.iter().filter(|s| s.measured).count() as u64;
                c.ring.clear();
                c.w_off = 0;
                c.w_end = 0;
                self.fail(FailKind::Receive, n);
            }
            // Counted as a reconnect when the replacement connects (see `connect`).
            End::Retry | End::Done => {}
        }
        self.why = None;
        if !self.draining {
            self.restart.push(ci as u32);
        }
    }

    /// Fail requests whose deadline passed.
    fn expire(&mut self) {
        let now = self.now;
        for ci in 0..self.conns.len() {
            let c = &self.conns[ci];
            if c.state != State::Closed && c.deadline != 0 && now >= c.deadline {
                let kind = if c.state == State::Connecting {
                    FailKind::Connect
                } else {
                    FailKind::Timeout
                };
                let timeout = Duration::from_nanos(self.sh.timeout_ns);
                self.explain(kind, || match kind {
                    FailKind::Connect => {
                        format!("no answer to the connect within {timeout:?} (-s)")
                    }
                    _ => format!("no complete response within {timeout:?} (-s)"),
                });
                self.close(ci, End::Fail(kind));
            }
        }
    }
}

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

    fn expire(&mut self) {
        Worker::expire(self);
    }

    fn publish(&mut self) {
        Worker::publish(self);
        #[cfg(test)]
        if self.stats.completed > 0 {
            let port = self.sh.addr.as_socket().map_or(0, |a| a.port());
            super::threads::panic_hook::check(port);
        }
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

/// The bucket a failure to open a connection counts in: running out of file
/// descriptors is kurabe's own failure, not the server's refusal.
fn socket_failure_kind(e: &io::Error) -> FailKind {
    match e.raw_os_error() {
        Some(libc::EMFILE | libc::ENFILE) => FailKind::Client,
        _ => FailKind::Connect,
    }
}

#[cfg(test)]
mod socket_failure_tests {
    use super::*;

    #[test]
    fn out_of_descriptors_is_the_clients_failure() {
        let kind = |errno| socket_failure_kind(&io::Error::from_raw_os_error(errno));
        assert_eq!(kind(libc::EMFILE), FailKind::Client);
        assert_eq!(kind(libc::ENFILE), FailKind::Client);
        assert_eq!(kind(libc::ECONNREFUSED), FailKind::Connect);
    }
}
