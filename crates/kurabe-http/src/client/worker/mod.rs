//! One load-generator thread: an event loop driving its share of the connections.
//!
//! epoll: every socket is registered once, edge-triggered for read and write,
//! and never touched with `epoll_ctl` again; a request is one `send` of
//! pre-serialised bytes, written as soon as the previous response on that
//! connection is complete; a `recv` reads as many responses as the buffer
//! holds. io_uring: the same life cycle, but a send is queued rather than
//! made, each open socket has one multishot receive armed, and one
//! `io_uring_enter` per turn submits everything and collects a batch of
//! completions. Both engines wait through `pace`: with many requests in
//! flight, a short nap before each wait lets one wake-up read a batch of
//! responses instead of one. Nothing is allocated per request: connection
//! buffers, the in-flight ring and the histograms are sized at start.
//!
//! This module owns the worker and its loop; `conn` the per-connection
//! state, `issue` sending requests, `receive` reading and counting responses,
//! `completions` the io_uring completions, `settle` failures, closes and
//! deadlines, `pace` when to sleep. The byte-level framing is [`super::framer`], the numbers are
//! [`super::stats`] and [`super::record`].

mod completions;
mod conn;
mod issue;
mod pace;
mod receive;
mod settle;
mod trial;

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering;
use std::time::Duration;

use socket2::Socket;

use super::framer::{Eof, Framer, Response};
use super::gnuplot::GnuplotWriter;
use super::record::{record, Answer};
use super::schedule::{Claims, Schedule};
use super::shared::{socket_failure_kind, Shared};
use super::slot::Slot;
use super::stats::{FailKind, Stats};
use super::sys::{self, Epoll};
use super::tls::TlsSession;
use super::turns::{self, Turns};
use super::uring::{self, Cqe, Uring};
use super::RunControl;
use conn::{Conn, End, State};
use pace::Pace;

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

impl Io {
    /// The engine `uring` names for `conns` connections, watching `ticker`
    /// (io_uring: from the worker thread, see `Worker::run`).
    fn new(uring: bool, conns: usize, ticker: RawFd) -> io::Result<Io> {
        if uring {
            return Ok(Io::Uring {
                ring: Box::new(Uring::new(conns)?),
                cqes: Vec::new(),
            });
        }
        let ep = Epoll::new()?;
        ep.add(ticker, TICK_TOKEN)?;
        Ok(Io::Epoll {
            ep,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS],
        })
    }
}

/// The `--rate` schedule of worker `index`, None in the closed model. With a
/// warm-up it starts at the run's start without a `-n` limit (the limit
/// applies from the measured phase, see [`Worker::start_measuring`]).
fn first_schedule(sh: &Shared, index: u64) -> Option<Schedule> {
    let warm_up = sh.measure_ns > sh.start_ns;
    let (start, limit) = if warm_up {
        (sh.start_ns, None)
    } else {
        (sh.measure_ns, sh.limit)
    };
    sh.rate
        .map(|r| Schedule::new(start, r, index, sh.threads, limit))
}

/// Open model: connections that can take a request now, open and closed.
struct FreeLists {
    open: Vec<u32>,
    closed: Vec<u32>,
}

impl FreeLists {
    fn new(conns: usize) -> FreeLists {
        FreeLists {
            open: Vec::with_capacity(conns),
            closed: Vec::with_capacity(conns),
        }
    }
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
    free: FreeLists,
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
    /// The ticker, and naps that batch wake-ups.
    pace: Pace,
}

impl<'a> Worker<'a> {
    pub fn new(
        sh: &'a Shared,
        ctl: &'a RunControl,
        index: u64,
        conns: usize,
        gnuplot: Option<GnuplotWriter>,
    ) -> io::Result<Worker<'a>> {
        let pace = Pace::new(sh, conns)?;
        Ok(Worker {
            sh,
            ctl,
            index,
            io: Io::new(sh.uring, conns, pace.ticker.fd())?,
            conns: Conn::many(conns, sh),
            stats: Stats::new(),
            claims: Claims::new((conns as u64 * sh.pipeline as u64).clamp(1, 64)),
            schedule: first_schedule(sh, index),
            free: FreeLists::new(conns),
            restart: Vec::with_capacity(conns),
            restarting: Vec::with_capacity(conns),
            gnuplot,
            measuring: sh.measure_ns <= sh.start_ns,
            draining: false,
            now: sys::now_ns(),
            want_server: true,
            published: (0, 0),
            why: None,
            pace,
        })
    }

    /// Drive the connections until the stop condition; return what was
    /// measured. `Err`: the kernel refused to enable the io_uring on this
    /// thread (before any request: a setup failure, not the server's).
    pub fn run(mut self) -> io::Result<Stats> {
        if let Io::Uring { ring, .. } = &mut self.io {
            // The ring was built on the setup thread; this thread is its one submitter.
            ring.enable()?;
            ring.poll(self.pace.ticker.fd(), libc::POLLIN as u32, true, TICK_TOKEN);
        }
        if self.pace.naps() {
            // A nap of 20 µs must not last the default 50 µs of slack more.
            sys::timer_slack(pace::NAP_MIN_NS / 4);
        }
        if self.sh.rate.is_some() {
            sys::precise_timers();
            for i in (0..self.conns.len() as u32).rev() {
                self.conns[i as usize].free = true;
                self.free.closed.push(i);
            }
        } else {
            self.restart.extend(0..self.conns.len() as u32);
        }
        turns::drive(&mut self, Worker::poll_io);
        self.finish();
        Ok(self.stats)
    }

    /// Wait at most `timeout` ns (None: until something happens, the ticker
    /// bounds it, maybe after a nap) and act on every event or completion.
    fn poll_io(&mut self, timeout: Option<u64>) {
        let nap = timeout.map_or_else(|| self.pace.nap_ns(), |_| None);
        self.pace.wake_begins(nap.is_some());
        if let Io::Epoll { .. } = &self.io {
            self.epoll_turn(timeout, nap);
        } else {
            self.uring_turn(timeout, nap);
        }
        self.pace.wake_ends(self.now, sys::thread_cpu_ns);
    }

    /// epoll: wait (after the nap, if any) and act on every event.
    fn epoll_turn(&mut self, timeout: Option<u64>, nap: Option<u64>) {
        let Io::Epoll { ep, events } = &mut self.io else {
            return;
        };
        let mut evs = std::mem::take(events);
        let mut n = 0;
        if let Some(ns) = nap {
            sys::nap(ns);
            n = ep.wait(&mut evs, Some(0));
        }
        if n == 0 {
            n = ep.wait(&mut evs, timeout);
        }
        for (i, ev) in evs[..n].iter().enumerate() {
            if i % CLOCK_EVERY == 0 {
                self.now = sys::now_ns();
            }
            if ev.u64 == TICK_TOKEN {
                self.pace.ticker.ack();
            } else {
                self.on_event(ev.u64 as usize, ev.events);
            }
        }
        if let Io::Epoll { events, .. } = &mut self.io {
            *events = evs;
        }
    }

    /// io_uring: submit, wait (at least the nap, if any) and act on every completion.
    fn uring_turn(&mut self, timeout: Option<u64>, nap: Option<u64>) {
        let Io::Uring { ring, cqes } = &mut self.io else {
            return;
        };
        let mut done = std::mem::take(cqes);
        // Every request in flight may bring a send and a receive completion.
        let all = 2 * self.conns.len() * self.sh.pipeline;
        ring.wait(timeout, nap.map(|ns| (ns, all)), &mut done);
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
                if !self.free.open.is_empty() || !self.free.closed.is_empty() {
                    until = until.min(t);
                }
            }
        }
        let wait = until.saturating_sub(self.now);
        (wait < self.pace.tick_ns).then_some(wait)
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
        self.stats.counters.in_flight_at_end = in_flight;
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
        let done = self.stats.counters.completed;
        let failed = self.stats.counters.failures.total();
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
}

impl Turns for Worker<'_> {
    fn read_clock(&mut self) -> u64 {
        self.now = sys::now_ns();
        self.now
    }

    fn tick_ns(&self) -> u64 {
        self.pace.tick_ns
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
        self.dispatch_until(self.now);
    }

    fn last_sends(&mut self) {
        let (sh, ctl) = (self.sh, self.ctl);
        let by_time = !ctl.stop.load(Ordering::Relaxed) && !sh.aborted.load(Ordering::Relaxed);
        if by_time && self.now >= sh.end_ns {
            self.dispatch_until(sh.end_ns - 1);
            // What is still due found no free connection (all waiting for
            // answers while the thread or the server was not running): it
            // was never sent, the latest a send can be, so it counts as late
            // rather than vanishing from the report.
            if let Some(s) = self.schedule.as_mut().filter(|_| self.measuring) {
                self.stats.counters.late_sends += s.give_up_due(sh.end_ns - 1);
            }
        }
    }

    fn expire(&mut self) {
        Worker::expire(self);
    }

    fn publish(&mut self) {
        Worker::publish(self);
        #[cfg(debug_assertions)]
        if self.stats.counters.completed > 0 {
            let port = self.sh.addr.as_socket().map_or(0, |a| a.port());
            super::threads::panic_hook::check(port, self.stats.counters.completed);
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
