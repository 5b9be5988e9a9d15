//! The built-in server's HTTP/3 thread: one UDP socket, one `quinn-proto`
//! endpoint and its connections, driven from a `poll` loop.
//!
//! Each turn waits for a datagram, the next QUIC timer, the next held-back
//! response or the shutdown check, whichever comes first; reads what the
//! socket has; answers requests read to their end (their costs paid through
//! [`Work::pay`], as the HTTP/1.1 workers pay them; a response held back by
//! `service_us` or `latency_ms` waits in a FIFO, never in a sleep); and
//! sends what every connection that moved has to send.
//!
//! Owns the socket I/O, the endpoint and the held-back responses. Must not
//! parse frames ([`super::conn`] and [`super::response`] do).

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use quinn_proto::{
    ConnectionHandle, DatagramEvent, Endpoint, EndpointConfig, ServerConfig, StreamId, Transmit,
};

use super::super::work::Work;
use super::super::{ServeStats, SHUTDOWN_POLL};
use super::conn::Conn;
use super::response::{self, Request, Responses};

/// Datagrams read per turn before the connections are driven.
const BATCH: usize = 64;
/// Largest UDP payload read.
const DATAGRAM: usize = 65_536;

/// The HTTP/3 side's state.
pub(super) struct Loop<'w> {
    sock: UdpSocket,
    endpoint: Endpoint,
    /// By `ConnectionHandle`.
    conns: Vec<Option<Conn>>,
    work: &'w Work<'w>,
    stats: &'w ServeStats,
    responses: Responses,
    /// (due, connection and its serial, stream, HEAD) of responses held
    /// back, in due order (a handle is reused once its connection is
    /// gone: the serial tells a new connection from the old).
    held: VecDeque<(Instant, (ConnectionHandle, u64), StreamId, bool)>,
    /// Connections accepted so far: the next one's serial.
    accepted: u64,
    /// Connections to drive at the end of this turn.
    dirty: Vec<ConnectionHandle>,
    /// Requests read to their end, to answer.
    done: Vec<(StreamId, Request)>,
    leaks: Vec<Box<[u8]>>,
    rx: Vec<u8>,
    tx: Vec<u8>,
}

impl<'w> Loop<'w> {
    pub(super) fn new(
        sock: UdpSocket,
        config: Arc<ServerConfig>,
        work: &'w Work<'w>,
        stats: &'w ServeStats,
    ) -> io::Result<Loop<'w>> {
        sock.set_nonblocking(true)?;
        Ok(Loop {
            sock,
            endpoint: Endpoint::new(
                Arc::new(EndpointConfig::default()),
                Some(config),
                false,
                None,
            ),
            conns: Vec::new(),
            responses: Responses::new(work.config()),
            work,
            stats,
            held: VecDeque::new(),
            accepted: 0,
            dirty: Vec::new(),
            done: Vec::new(),
            leaks: Vec::new(),
            rx: vec![0; DATAGRAM],
            tx: Vec::with_capacity(1500),
        })
    }

    /// Serve until the work's shutdown flag is set, then close every connection.
    pub(super) fn run(mut self) -> io::Result<()> {
        while !self.work.stopping() {
            self.wait()?;
            let now = Instant::now();
            self.receive(now)?;
            self.release(now);
            self.expire(now);
            self.flush(now);
        }
        let now = Instant::now();
        for h in 0..self.conns.len() {
            if let Some(c) = self.conns[h].as_mut() {
                c.close(now);
                self.mark(ConnectionHandle(h));
            }
        }
        self.flush(now);
        Ok(())
    }

    /// Sleep in `poll` until a datagram, the next timer, or the shutdown check.
    fn wait(&self) -> io::Result<()> {
        let now = Instant::now();
        let timers = self.conns.iter().flatten().filter_map(|c| c.timer);
        let next = timers.chain(self.held.front().map(|h| h.0)).min();
        let wait = next.map_or(SHUTDOWN_POLL, |t| {
            t.saturating_duration_since(now).min(SHUTDOWN_POLL)
        });
        // Round up so the loop never wakes just before a timer and spins.
        let ms = wait.as_micros().div_ceil(1000) as i32;
        let mut fd = libc::pollfd {
            fd: self.sock.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, for the duration of the call.
        if unsafe { libc::poll(&mut fd, 1, ms) } < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        Ok(())
    }

    /// Read up to [`BATCH`] datagrams and hand each to the endpoint.
    fn receive(&mut self, now: Instant) -> io::Result<()> {
        for _ in 0..BATCH {
            let (n, from) = match self.sock.recv_from(&mut self.rx) {
                Ok(got) => got,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // An ICMP error for an earlier datagram: that peer's problem.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
                Err(e) => return Err(e),
            };
            self.datagram(now, from, n);
        }
        Ok(())
    }

    fn datagram(&mut self, now: Instant, from: SocketAddr, n: usize) {
        let data = BytesMut::from(&self.rx[..n]);
        self.tx.clear();
        match (self.endpoint).handle(now, from, None, None, data, &mut self.tx) {
            Some(DatagramEvent::NewConnection(incoming)) => {
                self.tx.clear();
                match self.endpoint.accept(incoming, now, &mut self.tx, None) {
                    Ok((h, quic)) => {
                        (self.stats.connections_accepted).fetch_add(1, Ordering::Relaxed);
                        if self.conns.len() <= h.0 {
                            self.conns.resize_with(h.0 + 1, || None);
                        }
                        self.accepted += 1;
                        self.conns[h.0] = Some(Conn::new(quic, self.accepted));
                        self.dirty.push(h);
                    }
                    Err(e) => {
                        if let Some(t) = e.response {
                            self.send(&t);
                        }
                    }
                }
            }
            Some(DatagramEvent::ConnectionEvent(h, ev)) => {
                if let Some(c) = self.conns.get_mut(h.0).and_then(Option::as_mut) {
                    c.quic.handle_event(ev);
                    self.mark(h);
                }
            }
            Some(DatagramEvent::Response(t)) => self.send(&t),
            None => {}
        }
    }

    /// Send the held-back responses that are due.
    fn release(&mut self, now: Instant) {
        while let Some(&(due, (h, serial), id, head)) = self.held.front() {
            if due > now {
                break;
            }
            self.held.pop_front();
            let conn = self.conns.get_mut(h.0).and_then(Option::as_mut);
            if let Some(c) = conn.filter(|c| c.serial == serial) {
                c.answer(id, self.responses.get(head));
                self.mark(h);
            }
        }
    }

    /// Run the QUIC timers that are due.
    fn expire(&mut self, now: Instant) {
        for h in 0..self.conns.len() {
            let Some(c) = self.conns[h].as_mut() else {
                continue;
            };
            if c.timer.is_some_and(|t| t <= now) {
                c.quic.handle_timeout(now);
                self.mark(ConnectionHandle(h));
            }
        }
    }

    fn mark(&mut self, h: ConnectionHandle) {
        if let Some(c) = self.conns.get_mut(h.0).and_then(Option::as_mut) {
            if !c.dirty {
                c.dirty = true;
                self.dirty.push(h);
            }
        }
    }

    /// Drive every connection something happened to.
    fn flush(&mut self, now: Instant) {
        while let Some(h) = self.dirty.pop() {
            self.drive(h, now);
        }
    }

    /// Act on connection `h`'s events, answer its complete requests, send
    /// what it has; forget it once drained.
    fn drive(&mut self, h: ConnectionHandle, now: Instant) {
        let Some(mut c) = self.conns.get_mut(h.0).and_then(Option::take) else {
            return;
        };
        c.dirty = false;
        let mut done = std::mem::take(&mut self.done);
        c.on_events(&mut done);
        for (id, request) in done.drain(..) {
            self.answer(&mut c, h, id, request);
        }
        self.done = done;
        loop {
            self.tx.clear();
            let Some(t) = c.quic.poll_transmit(now, 1, &mut self.tx) else {
                break;
            };
            self.send(&t);
        }
        while let Some(ev) = c.quic.poll_endpoint_events() {
            let drained = ev.is_drained();
            if let Some(back) = self.endpoint.handle_event(h, ev) {
                c.quic.handle_event(back);
            }
            if drained {
                return;
            }
        }
        c.timer = c.quic.poll_timeout();
        self.conns[h.0] = Some(c);
    }

    /// Answer one request: the counters as JSON, or the configured
    /// response now or when its costs say.
    fn answer(&mut self, c: &mut Conn, h: ConnectionHandle, id: StreamId, r: Request) {
        if r.stats {
            return c.answer(id, response::stats(&self.stats.to_json()));
        }
        match self.work.pay(r.body_bytes, &mut self.leaks) {
            Some(due) => self.held.push_back((due, (h, c.serial), id, r.head)),
            None => c.answer(id, self.responses.get(r.head)),
        }
    }

    /// Send one transmit; a full socket buffer drops it (QUIC's loss
    /// recovery sends again).
    fn send(&self, t: &Transmit) {
        let bytes = &self.tx[..t.size];
        let size = t.segment_size.unwrap_or(t.size).max(1);
        for datagram in bytes.chunks(size) {
            let _ = self.sock.send_to(datagram, t.destination);
        }
    }
}
