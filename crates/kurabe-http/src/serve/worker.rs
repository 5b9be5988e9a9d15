//! One worker thread of the built-in server: an edge-triggered epoll loop over
//! the connections it accepted, plus a FIFO timer queue for delayed responses.
//!
//! Owns connection state, the delayed responses (what [`Work::pay`] holds
//! back for `service_us` and `latency_ms`) and the connection timeouts
//! (header, idle). Must not block on a socket or sleep: everything waits
//! in `epoll_wait`.
//!
//! Out of file descriptors (`accept` fails with `EMFILE`), the worker takes
//! the listener out of its epoll set: a level-triggered listener with a full
//! backlog would otherwise wake it at once, forever (160–190 % CPU doing
//! nothing). It is put back when one of its connections closes, or after
//! [`ACCEPT_RETRY`] for descriptors freed elsewhere.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::chunked::Chunked;
use super::poll::Epoll;
use super::response::{self, ConnMode, Framing, Kind, Responses};
use super::work::Work;
use super::{ServeConfig, ServeStats, SHUTDOWN_POLL};

/// What all workers of one server share (read-only apart from the atomic
/// counters and the hand-over inboxes).
pub(super) struct Shared<'a> {
    cfg: &'a ServeConfig,
    responses: Responses,
    stats: &'a ServeStats,
    shutdown: &'a AtomicBool,
    listener: &'a TcpListener,
    /// Per worker: open connections it owns or has been handed.
    live: Vec<AtomicUsize>,
    /// Per worker: connections accepted by another worker, handed over to it.
    inboxes: Vec<Mutex<Vec<TcpStream>>>,
    /// Per worker: an eventfd in its epoll set that says "look in your inbox".
    wakers: Vec<OwnedFd>,
    /// Each request's costs, and the serial resource (shared with HTTP/3).
    work: &'a Work<'a>,
}

impl<'a> Shared<'a> {
    pub(super) fn new(
        (cfg, stats, shutdown): (&'a ServeConfig, &'a ServeStats, &'a AtomicBool),
        work: &'a Work<'a>,
        listener: &'a TcpListener,
        workers: usize,
    ) -> io::Result<Self> {
        let wakers = (0..workers)
            .map(|_| {
                // SAFETY: eventfd has no pointer arguments; the result is checked.
                let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
                if fd < 0 {
                    return Err(io::Error::last_os_error());
                }
                // SAFETY: a fresh descriptor nobody else owns.
                Ok(unsafe { OwnedFd::from_raw_fd(fd) })
            })
            .collect::<io::Result<_>>()?;
        Ok(Self {
            cfg,
            responses: Responses::new(cfg),
            stats,
            shutdown,
            listener,
            live: (0..workers).map(|_| AtomicUsize::new(0)).collect(),
            inboxes: (0..workers).map(|_| Mutex::new(Vec::new())).collect(),
            wakers,
            work,
        })
    }

    /// The worker with the fewest open connections (ties go to the lowest index).
    ///
    /// Accepting is done by whichever worker the listener woke, and a worker
    /// drains the whole backlog at once, so without this hand-over one worker
    /// often took every connection a client opened together and a 2-thread
    /// server ran at 1 or 2 cores from run to run (bimodal throughput).
    fn least_loaded(&self) -> usize {
        (0..self.live.len())
            .min_by_key(|&i| self.live[i].load(Ordering::Relaxed))
            .unwrap_or(0)
    }
}

const LISTENER: u64 = u64::MAX;
/// With accepting paused, try again after this even if no connection of this worker closed.
const ACCEPT_RETRY: Duration = Duration::from_millis(250);
/// Token of the worker's inbox eventfd.
const INBOX: u64 = u64::MAX - 1;
/// Stop parsing more pipelined requests while this much output is unsent.
const WRITE_HIGH_WATER: usize = 1 << 20;
/// Stop reading while this much unparsed input is buffered.
const READ_CAP: usize = 1 << 20;
/// A request head larger than this is rejected.
const MAX_HEAD: usize = 64 * 1024;

/// Body of the request currently being read.
enum Body {
    None,
    Length(u64),
    Chunked(Chunked),
}

impl Body {
    /// The body reader for a head's framing.
    fn framed(framing: Framing) -> Body {
        match framing {
            Framing::None => Body::None,
            Framing::Length(n) => Body::Length(n),
            Framing::Chunked => Body::Chunked(Chunked::Size),
        }
    }
}

/// A request whose head has been parsed and whose body is being read.
struct Pending {
    kind: Kind,
    stats: bool,
    body: Body,
    body_bytes: u64,
}

struct Conn {
    stream: TcpStream,
    rbuf: Vec<u8>,
    rpos: usize,
    wbuf: Vec<u8>,
    wpos: usize,
    pending: Option<Pending>,
    /// A response waiting for its `latency_ms` to pass; nothing else is parsed meanwhile, to keep order.
    delayed: Option<Kind>,
    close_after_write: bool,
    eof: bool,
    /// When the request head now being read started (accept, or its first byte).
    head_started: Option<Instant>,
    /// Last time bytes moved in either direction.
    last_progress: Instant,
}

impl Conn {
    fn unsent(&self) -> usize {
        self.wbuf.len() - self.wpos
    }

    /// The last response is all out and the connection is to close after it.
    /// (A delayed response is not in `wbuf` yet: close after it, not before.)
    fn closing_now(&self) -> bool {
        self.unsent() == 0 && self.close_after_write && self.delayed.is_none()
    }

    /// Parse the next request head from the input: `Ok(true)` when one was
    /// taken (its body, if any, is read next), `Ok(false)` while it is
    /// incomplete, `Err` for a malformed or oversized head.
    fn take_head(&mut self, now: Instant) -> Result<bool, ()> {
        let input = &self.rbuf[self.rpos..];
        let head = match response::parse_head(input) {
            Ok(Some(head)) => head,
            Ok(None) if input.len() > MAX_HEAD => return Err(()),
            Ok(None) => {
                if !input.is_empty() {
                    self.head_started.get_or_insert(now);
                }
                return Ok(false);
            }
            Err(_) => return Err(()),
        };
        self.head_started = None;
        self.rpos += head.len;
        if head.expect_continue && head.framing != Framing::None {
            // Without it curl and friends wait a second before sending the body.
            self.wbuf.extend_from_slice(response::CONTINUE);
        }
        self.pending = Some(Pending {
            kind: head.kind,
            stats: head.stats,
            body: Body::framed(head.framing),
            body_bytes: 0,
        });
        Ok(true)
    }

    /// Take what the input holds of the pending request's body:
    /// `Ok((complete, consumed any))`, `Err` for bad chunking.
    fn take_body(&mut self) -> Result<(bool, bool), ()> {
        let input = &self.rbuf[self.rpos..];
        let pending = self.pending.as_mut().expect("a head was taken");
        let (used, done) = match &mut pending.body {
            Body::None => (0, true),
            Body::Length(left) => {
                let take = (*left).min(input.len() as u64);
                *left -= take;
                pending.body_bytes += take;
                (take as usize, *left == 0)
            }
            Body::Chunked(dec) => {
                let step = dec.advance(input).map_err(|_| ())?;
                pending.body_bytes += step.data;
                (step.consumed, *dec == Chunked::Done)
            }
        };
        self.rpos += used;
        Ok((done, used > 0))
    }

    /// Write unsent output until it is all out or the socket is full:
    /// `Ok(wrote any)`, `Err` when the connection is dead.
    fn write_out(&mut self, now: Instant) -> Result<bool, ()> {
        let mut progress = false;
        while self.unsent() > 0 {
            match self.stream.write(&self.wbuf[self.wpos..]) {
                Ok(0) => return Err(()),
                Ok(n) => {
                    self.wpos += n;
                    self.last_progress = now;
                    progress = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err(()),
            }
        }
        if self.unsent() == 0 {
            self.wbuf.clear();
            self.wpos = 0;
        }
        Ok(progress)
    }

    /// One read through `scratch` onto the input (EOF noted): `Ok(progress)`,
    /// `Err` when the connection broke.
    fn read_in(&mut self, scratch: &mut [u8], now: Instant) -> Result<bool, ()> {
        match self.stream.read(scratch) {
            Ok(0) => self.eof = true,
            Ok(n) => {
                self.last_progress = now;
                if self.rpos == self.rbuf.len() {
                    self.rbuf.clear();
                    self.rpos = 0;
                } else if self.rpos > self.rbuf.len() / 2 {
                    self.rbuf.drain(..self.rpos);
                    self.rpos = 0;
                }
                self.rbuf.extend_from_slice(&scratch[..n]);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(()),
        }
        Ok(true)
    }

    /// True when the header or idle timeout has passed (never while a
    /// response waits for its `latency_ms`: that wait is the server's).
    fn expired(&self, now: Instant, cfg: &ServeConfig) -> bool {
        if self.delayed.is_some() {
            return false;
        }
        let over = |since: Instant, limit: Duration| now.saturating_duration_since(since) >= limit;
        self.head_started
            .is_some_and(|t| over(t, cfg.header_timeout))
            || over(self.last_progress, cfg.idle_timeout)
    }
}

/// Whether a connection stays open after being driven.
enum Next {
    Keep,
    Close,
}

pub(super) struct Worker<'s, 'a> {
    shared: &'s Shared<'a>,
    /// This worker's index into the shared per-worker tables.
    index: usize,
    epoll: Epoll,
    conns: Vec<Option<Conn>>,
    generations: Vec<u32>,
    free: Vec<usize>,
    /// (due, token) of delayed responses; FIFO because every delay is the
    /// same length and turns at the serial resource end in the order taken.
    timers: VecDeque<(Instant, u64)>,
    scratch: Box<[u8]>,
    leaks: Vec<Box<[u8]>>,
    /// Accepting is paused (out of descriptors) until this, or until a connection closes.
    accept_paused_until: Option<Instant>,
    /// The listener is in this worker's epoll set.
    listening: bool,
    /// A connection closed while accepting was paused: try again.
    resume_accept: bool,
    /// The clock read once per wake-up.
    now: Instant,
    /// When to look for timed-out connections next.
    next_sweep: Instant,
}

impl<'s, 'a> Worker<'s, 'a> {
    pub(super) fn new(shared: &'s Shared<'a>, index: usize) -> io::Result<Self> {
        let epoll = Epoll::new()?;
        epoll.add(
            shared.listener.as_raw_fd(),
            (libc::EPOLLIN | libc::EPOLLEXCLUSIVE) as u32,
            LISTENER,
        )?;
        epoll.add(
            shared.wakers[index].as_raw_fd(),
            libc::EPOLLIN as u32,
            INBOX,
        )?;
        Ok(Self {
            shared,
            index,
            epoll,
            conns: Vec::new(),
            generations: Vec::new(),
            free: Vec::new(),
            timers: VecDeque::new(),
            scratch: vec![0; 64 * 1024].into_boxed_slice(),
            leaks: Vec::new(),
            accept_paused_until: None,
            listening: true,
            resume_accept: false,
            now: Instant::now(),
            next_sweep: Instant::now(),
        })
    }

    pub(super) fn run(mut self) -> io::Result<()> {
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
        while !self.shared.shutdown.load(Ordering::Relaxed) {
            let n = self.epoll.wait(&mut events, self.wait_ms())?;
            self.now = Instant::now();
            for ev in &events[..n] {
                let token = ev.u64;
                if token == LISTENER {
                    self.accept();
                } else if token == INBOX {
                    self.take_inbox();
                } else if let Some(idx) = self.lookup(token) {
                    self.drive_and_reap(idx);
                }
            }
            self.fire_timers();
            if self.now >= self.next_sweep {
                self.sweep();
            }
            if self.resume_accept || self.accept_paused_until.is_some_and(|t| self.now >= t) {
                self.resume_accepting();
            }
        }
        Ok(())
    }

    /// Out of descriptors: leave the listener out of the epoll set for now.
    fn pause_accepting(&mut self) {
        if self.listening && self.epoll.delete(self.shared.listener.as_raw_fd()).is_ok() {
            self.listening = false;
        }
        self.accept_paused_until = Some(Instant::now() + ACCEPT_RETRY);
    }

    /// Put the listener back and accept what waits.
    fn resume_accepting(&mut self) {
        self.resume_accept = false;
        if self.accept_paused_until.take().is_none() {
            return;
        }
        if !self.listening {
            let events = (libc::EPOLLIN | libc::EPOLLEXCLUSIVE) as u32;
            let lfd = self.shared.listener.as_raw_fd();
            self.listening = self.epoll.add(lfd, events, LISTENER).is_ok();
        }
        self.accept();
    }

    /// Close connections whose header or idle timeout passed.
    fn sweep(&mut self) {
        let cfg = self.shared.cfg;
        let every = cfg.header_timeout.min(cfg.idle_timeout) / 4;
        self.next_sweep = self.now + every.clamp(Duration::from_millis(10), Duration::from_secs(1));
        for idx in 0..self.conns.len() {
            if self.conns[idx]
                .as_ref()
                .is_some_and(|c| c.expired(self.now, cfg))
            {
                self.close(idx);
            }
        }
    }

    /// Sleep in epoll until the next timer, but look at the shutdown flag regularly.
    fn wait_ms(&self) -> i32 {
        let mut wait = SHUTDOWN_POLL;
        let now = Instant::now();
        let sweep = (self.live_here() > 0).then_some(self.next_sweep);
        for due in self
            .timers
            .front()
            .map(|t| t.0)
            .into_iter()
            .chain(self.accept_paused_until)
            .chain(sweep)
        {
            wait = wait.min(due.saturating_duration_since(now));
        }
        // Round up so we never wake just before a timer is due and spin.
        wait.as_micros().div_ceil(1000) as i32
    }

    /// Take every connection waiting in the backlog and give each to the least loaded worker.
    fn accept(&mut self) {
        if self.accept_paused_until.is_some() {
            return;
        }
        while let Some(stream) = self.accept_one() {
            self.shared
                .stats
                .connections_accepted
                .fetch_add(1, Ordering::Relaxed);
            self.place(stream);
        }
    }

    /// The next connection of the backlog; `None` when it is empty, or when
    /// out of descriptors (accepting then pauses).
    fn accept_one(&mut self) -> Option<TcpStream> {
        let lfd = self.shared.listener.as_raw_fd();
        loop {
            // SAFETY: null address pointers are allowed; we own the returned descriptor.
            let fd = unsafe {
                libc::accept4(
                    lfd,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                )
            };
            if fd >= 0 {
                // SAFETY: `fd` is a fresh, connected, non-blocking socket nobody else owns.
                let stream = unsafe { TcpStream::from_raw_fd(fd) };
                let _ = stream.set_nodelay(true);
                return Some(stream);
            }
            match io::Error::last_os_error().raw_os_error() {
                Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM) => {
                    // Out of descriptors: back off instead of spinning on a ready listener.
                    self.pause_accepting();
                    return None;
                }
                Some(libc::EINTR | libc::ECONNABORTED) => {}
                _ => return None,
            }
        }
    }

    /// Keep `stream` if this worker holds the fewest connections, else hand
    /// it to the worker that does and wake that worker.
    fn place(&mut self, stream: TcpStream) {
        let target = self.shared.least_loaded();
        self.shared.live[target].fetch_add(1, Ordering::Relaxed);
        if target == self.index {
            self.insert(stream);
            return;
        }
        self.shared.inboxes[target]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(stream);
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a live buffer to our eventfd.
        unsafe {
            libc::write(
                self.shared.wakers[target].as_raw_fd(),
                one.as_ptr().cast(),
                one.len(),
            )
        };
    }

    /// Adopt the connections other workers handed to this one.
    fn take_inbox(&mut self) {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a live buffer; EAGAIN is fine.
        unsafe {
            libc::read(
                self.shared.wakers[self.index].as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        let streams = std::mem::take(
            &mut *self.shared.inboxes[self.index]
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        );
        for stream in streams {
            self.insert(stream);
        }
    }

    fn insert(&mut self, stream: TcpStream) {
        let idx = self.free.pop().unwrap_or_else(|| {
            self.conns.push(None);
            self.generations.push(0);
            self.conns.len() - 1
        });
        self.generations[idx] = self.generations[idx].wrapping_add(1);
        let token = (u64::from(self.generations[idx]) << 32) | idx as u64;
        let events = (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32;
        if self.epoll.add(stream.as_raw_fd(), events, token).is_err() {
            self.free.push(idx);
            self.shared.live[self.index].fetch_sub(1, Ordering::Relaxed);
            return;
        }
        self.conns[idx] = Some(Conn {
            stream,
            rbuf: Vec::new(),
            rpos: 0,
            wbuf: Vec::new(),
            wpos: 0,
            pending: None,
            delayed: None,
            close_after_write: false,
            eof: false,
            head_started: Some(self.now),
            last_progress: self.now,
        });
        // Data may already be waiting: edge-triggered registration reports it, but drive now anyway.
        self.drive_and_reap(idx);
    }

    /// The slot for `token`, if that connection still exists (not a reused slot).
    fn lookup(&self, token: u64) -> Option<usize> {
        let idx = (token & 0xffff_ffff) as usize;
        let generation = (token >> 32) as u32;
        (self.generations.get(idx) == Some(&generation) && self.conns[idx].is_some()).then_some(idx)
    }

    fn drive_and_reap(&mut self, idx: usize) {
        if let Next::Close = self.drive(idx) {
            self.close(idx);
        }
    }

    /// Close connection `idx`; a descriptor is free again, so accepting may resume.
    fn close(&mut self, idx: usize) {
        // Dropping the stream closes it, which also removes it from epoll.
        self.conns[idx] = None;
        self.free.push(idx);
        self.shared.live[self.index].fetch_sub(1, Ordering::Relaxed);
        self.resume_accept = self.accept_paused_until.is_some();
    }

    /// Connections this worker holds (its own count in the shared table).
    fn live_here(&self) -> usize {
        self.shared.live[self.index].load(Ordering::Relaxed)
    }

    fn fire_timers(&mut self) {
        let now = Instant::now();
        while let Some(&(due, token)) = self.timers.front() {
            if due > now {
                break;
            }
            self.timers.pop_front();
            let Some(idx) = self.lookup(token) else {
                continue;
            };
            let conn = self.conns[idx].as_mut().expect("looked up");
            if let Some(kind) = conn.delayed.take() {
                conn.wbuf.extend_from_slice(self.shared.responses.get(kind));
            }
            self.drive_and_reap(idx);
        }
    }

    /// Parse, answer, write and read until the socket would block in both directions.
    fn drive(&mut self, idx: usize) -> Next {
        let now = self.now;
        loop {
            let Ok(mut progress) = self.process(idx) else {
                return Next::Close;
            };
            let conn = self.conns[idx].as_mut().expect("driven connection exists");
            match conn.write_out(now) {
                Ok(wrote) => progress |= wrote,
                Err(()) => return Next::Close,
            }
            if conn.closing_now() {
                return Next::Close;
            }
            if !conn.eof && conn.rbuf.len() - conn.rpos < READ_CAP {
                match conn.read_in(&mut self.scratch, now) {
                    Ok(read) => progress |= read,
                    Err(()) => return Next::Close,
                }
            }
            if !progress {
                // After EOF with nothing delayed or unsent, whatever is still buffered is an
                // incomplete request that can never complete: the connection is done.
                if conn.eof && conn.delayed.is_none() && conn.unsent() == 0 {
                    return Next::Close;
                }
                return Next::Keep;
            }
        }
    }

    /// Handle every complete request in the read buffer; `Ok(true)` if any input was consumed.
    fn process(&mut self, idx: usize) -> Result<bool, ()> {
        let now = self.now;
        let mut progress = false;
        loop {
            let conn = self.conns[idx]
                .as_mut()
                .expect("processed connection exists");
            if conn.delayed.is_some() || conn.close_after_write || conn.unsent() > WRITE_HIGH_WATER
            {
                return Ok(progress);
            }
            if conn.pending.is_none() {
                match conn.take_head(now) {
                    Ok(true) => progress = true,
                    Ok(false) => return Ok(progress),
                    Err(()) => return self.bad_request(idx),
                }
            }
            let Ok((done, consumed)) = conn.take_body() else {
                return self.bad_request(idx);
            };
            progress |= consumed;
            if !done {
                return Ok(progress);
            }
            let pending = conn.pending.take().expect("a head was taken");
            self.respond(idx, pending);
        }
    }

    fn bad_request(&mut self, idx: usize) -> Result<bool, ()> {
        let conn = self.conns[idx].as_mut().expect("connection exists");
        conn.wbuf.extend_from_slice(response::BAD_REQUEST);
        conn.close_after_write = true;
        conn.rpos = conn.rbuf.len();
        Ok(true)
    }

    fn respond(&mut self, idx: usize, req: Pending) {
        let cfg = self.shared.cfg;
        let mut kind = req.kind;
        if cfg.close {
            kind.mode = ConnMode::Close;
        }
        let conn = self.conns[idx].as_mut().expect("connection exists");
        if kind.mode == ConnMode::Close {
            conn.close_after_write = true;
        }
        if req.stats {
            let json = self.shared.stats.to_json();
            conn.wbuf
                .extend_from_slice(&response::stats_response(&json, kind.mode));
            return;
        }
        match self.shared.work.pay(req.body_bytes, &mut self.leaks) {
            Some(due) => {
                conn.delayed = Some(kind);
                let token = (u64::from(self.generations[idx]) << 32) | idx as u64;
                self.timers.push_back((due, token));
            }
            None => conn.wbuf.extend_from_slice(self.shared.responses.get(kind)),
        }
    }
}
