//! One load-generator thread: an event loop driving its share of the connections.
//!
//! epoll: every socket is registered once, edge-triggered for read and write,
//! and never touched with `epoll_ctl` again; a request is one `send` of
//! pre-serialised bytes, written as soon as the previous response on that
//! connection is complete; a `recv` reads as many responses as the buffer
//! holds. io_uring: the same life cycle, but a send is queued rather than
//! made, each open socket has one multishot receive armed, and one
//! `io_uring_enter` per turn submits everything and collects a batch of
//! completions. Both engines wait as the shared pace says
//! ([`crate::client::schedule::pace`]): with many requests in flight, a short nap before each
//! wait lets one wake-up read a batch of responses instead of one. Nothing is allocated per request: connection
//! buffers, the in-flight ring and the histograms are sized at start.
//!
//! This module owns the HTTP/1.1 worker's state and its side of the turn
//! loop ([`Connections`]); `conn` the per-connection state, `issue` sending
//! requests, `receive` reading and counting responses, `completions` the
//! io_uring completions, `settle` closes (deadlines are scanned by the
//! trait's `expire_conn`). The loop, the
//! budget, schedule, pace, failure accounting and stop path are the shared
//! core's ([`super::turns`], [`super::core`]); the byte-level framing is
//! [`framer`].

mod completions;
mod conn;
pub(crate) mod framer;
mod issue;
mod receive;
mod settle;
pub(crate) mod wire;

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, RawFd};

use socket2::Socket;

use super::connections::{Connections, Parts, View};
use super::core::{self as shared_core, Core};
use super::free::FreeList;
use super::protocol::H1;
use super::slot::Slot;
use super::sys::{self, Epoll};
use super::tls::TlsSession;
use super::uring::{self, Cqe, Uring};
use crate::client::measure::gnuplot::GnuplotWriter;
use crate::client::measure::record::Answer;
use crate::client::shared::Shared;
use crate::client::RunControl;
use crate::source::wire::Prepared;
use conn::{Conn, End, State};
use framer::{Eof, Framer, Keep, Response};
use kurabe_model::failures::FailureKind;

/// Longest response head we buffer before calling the response garbage.
const MAX_HEAD: usize = 64 * 1024;
/// Events taken per `epoll_wait`.
const EVENTS: usize = 1024;
/// Bytes of a response shown to the `-v` tap (ab's header buffer is 8 KiB).
const TRACE_BYTES: usize = 8191;

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
    Uring {
        ring: Box<Uring>,
        cqes: Vec<Cqe>,
        /// Sockets closed this turn, kept open until the turn's entries are submitted.
        closing: Vec<Socket>,
    },
}

impl Io {
    /// The engine `uring` names for `conns` connections, watching `ticker`
    /// (io_uring: from the worker thread, see `Worker::run`).
    fn new(uring: bool, conns: usize, ticker: RawFd) -> io::Result<Io> {
        if uring {
            return Ok(Io::Uring {
                ring: Box::new(Uring::new(conns)?),
                cqes: Vec::new(),
                closing: Vec::new(),
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

/// io_uring user data naming operation `op` on socket generation `gen` of connection `ci`.
fn tag(ci: usize, gen: u32, op: u64) -> u64 {
    (u64::from(gen & 0x3fff_ffff) << 34) | ((ci as u64) << 2) | op
}

/// One HTTP/1.1 worker's state.
pub(crate) struct Worker<'a> {
    core: Core<'a>,
    /// How connections are used, copied out of the run's framing (read per request).
    h1: H1,
    io: Io,
    conns: Vec<Conn>,
    free: FreeList,
}

impl<'a> Worker<'a> {
    pub fn new(
        sh: &'a Shared,
        h1: H1,
        ctl: &'a RunControl,
        index: u64,
        conns: usize,
        gnuplot: Option<GnuplotWriter>,
    ) -> io::Result<Worker<'a>> {
        // Naps are put to the trial: whether they pay depends on who else wants the CPUs (see `trial`).
        let core = Core::new(sh, ctl, index, (conns, conns * h1.pipeline), true, gnuplot)?;
        Ok(Worker {
            h1,
            io: Io::new(sh.uring, conns, core.pace.ticker.fd())?,
            conns: Conn::many(conns, sh, h1.pipeline),
            free: FreeList::new(conns),
            core,
        })
    }

    /// epoll: wait (after the nap, if any) and act on every event.
    fn epoll_turn(&mut self, timeout: Option<u64>, nap: Option<u64>) {
        let Io::Epoll { ep, events } = &mut self.io else {
            return;
        };
        let mut evs = std::mem::take(events);
        let n = shared_core::epoll_wait(ep, &mut evs, timeout, nap);
        for (i, ev) in evs[..n].iter().enumerate() {
            if i % CLOCK_EVERY == 0 {
                self.core.now = sys::now_ns();
            }
            if ev.u64 == TICK_TOKEN {
                self.core.pace.ticker.ack();
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
        let Io::Uring {
            ring,
            cqes,
            closing,
        } = &mut self.io
        else {
            return;
        };
        let mut done = std::mem::take(cqes);
        // Every request in flight may bring a send and a receive completion.
        let all = 2 * self.conns.len() * self.h1.pipeline;
        ring.wait(timeout, nap.map(|ns| (ns, all)), &mut done);
        closing.clear(); // submitted: each entry holds its own socket now
        for (i, cqe) in done.iter().enumerate() {
            if i % CLOCK_EVERY == 0 {
                self.core.now = sys::now_ns();
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
            (c.w_end - c.w_off - queued.min(c.w_end - c.w_off)).div_ceil(self.core.sh.request_len);
        c.ring.len() - unwritten.min(c.ring.len())
    }
}

/// The HTTP/1.1 side of the shared turn loop ([`super::turns`]).
impl<'a> Connections<'a> for Worker<'a> {
    type Conn = Conn;
    type Request = Slot;

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

    /// io_uring: enable the ring on this thread (`Err`: the kernel refused,
    /// before any request: a setup failure, not the server's).
    fn start_io(&mut self) -> io::Result<()> {
        if let Io::Uring { ring, .. } = &mut self.io {
            // The ring was built on the setup thread; this thread is its one submitter.
            ring.enable()?;
            ring.poll(
                self.core.pace.ticker.fd(),
                libc::POLLIN as u32,
                true,
                TICK_TOKEN,
            );
        }
        Ok(())
    }

    fn restart(&mut self, ci: usize) {
        self.restart_conn(ci);
    }

    /// Open ones first; an entry whose connection changed state since it
    /// was listed is dropped.
    fn pop_free(&mut self) -> Option<usize> {
        (self.free).pop(&mut self.conns, |c, open| {
            c.state == if open { State::Open } else { State::Closed }
        })
    }

    fn next_request(&mut self, until: u64) -> Option<Slot> {
        self.core.pop_due(until)
    }

    fn send_on(&mut self, ci: usize, slot: Slot) {
        self.send_slot(ci, slot);
    }

    fn expire_conn(&mut self, ci: usize) {
        let c = &self.conns[ci];
        if c.state != State::Closed && c.deadline != 0 && self.core.now >= c.deadline {
            let kind = self.core.timed_out(c.state == State::Connecting);
            self.close(ci, End::Fail(kind));
        }
    }

    fn poll(&mut self, timeout: Option<u64>, nap: Option<u64>) {
        if let Io::Epoll { .. } = &self.io {
            self.epoll_turn(timeout, nap);
        } else {
            self.uring_turn(timeout, nap);
        }
    }

    fn in_flight_measured(&self) -> u64 {
        let mut n = 0;
        for c in &self.conns {
            let written = self.written_unanswered(c);
            n += c.ring.iter().take(written).filter(|s| s.measured).count() as u64;
        }
        n
    }

    fn awaiting_answers(&self) -> bool {
        self.conns.iter().any(|c| self.written_unanswered(c) > 0)
    }

    fn close_all(&mut self) {
        for c in &mut self.conns {
            c.sock = None;
        }
    }
}
