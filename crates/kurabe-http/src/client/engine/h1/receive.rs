//! The receive side of the HTTP/1.1 worker: readiness events, reads,
//! parsing responses in place and counting each complete one.
//!
//! Owns what a response means for the request it answers. Must not decide
//! what to send next beyond refilling the connection (see `issue`).

use super::*;

impl Worker<'_> {
    /// Readiness `flags` (epoll bits) on connection `ci`.
    pub(super) fn on_event(&mut self, ci: usize, flags: u32) {
        match self.conns.get(ci).map(|c| c.state) {
            Some(State::Connecting) => self.on_connecting(ci, flags),
            Some(State::Open) => self.on_open(ci, flags),
            Some(State::Closed) | None => {}
        }
    }

    /// A connecting socket became writable (connected) or failed.
    fn on_connecting(&mut self, ci: usize, flags: u32) {
        match self
            .core
            .connect_outcome(self.conns[ci].sock.as_ref(), flags)
        {
            Err(()) => return self.close(ci, End::Fail(FailureKind::Connect)),
            Ok(false) => return,
            Ok(true) => self.on_connected(ci),
        }
        if self.conns[ci].state == State::Open && !self.core.sh.uring {
            // Data may already be there (edge already fired with EPOLLIN).
            if flags & libc::EPOLLIN as u32 != 0 {
                self.read(ci, flags & HUP != 0);
            }
        }
    }

    /// Connection `ci` is open: stamp the connect time, send what waits.
    fn on_connected(&mut self, ci: usize) {
        let now = self.core.now;
        let c = &mut self.conns[ci];
        c.state = State::Open;
        if let Some(s) = c.ring.front_mut() {
            s.connect_ns = now - s.start;
        }
        self.arm_recv(ci);
        if !self.core.sh.load.arrival.is_open() {
            self.refill(ci, false);
        }
        self.flush(ci);
        if self.conns[ci].state == State::Open
            && self.conns[ci].ring.len() < self.h1.pipeline
            && self.h1.keep_alive
        {
            self.make_free(ci);
        }
    }

    /// An open connection can be written to and/or has bytes to read.
    fn on_open(&mut self, ci: usize, flags: u32) {
        if flags & libc::EPOLLOUT as u32 != 0 {
            let c = &mut self.conns[ci];
            let fd = c.fd;
            if c.w_off < c.w_end {
                self.flush(ci);
            } else if let Some(t) = &mut c.tls {
                // Handshake or buffered ciphertext waiting for room in the socket.
                if t.wants_write() {
                    if let Err(e) = t.flush_tls(fd) {
                        self.core
                            .explain(FailureKind::Write, || format!("TLS send: {e}"));
                        self.close(ci, End::Fail(FailureKind::Write));
                        return;
                    }
                }
            }
        }
        if self.conns[ci].state == State::Open && flags & (libc::EPOLLIN as u32 | HUP) != 0 {
            self.read(ci, flags & HUP != 0);
        }
    }

    /// Read and process everything available. `hup`: the event said the peer closed.
    pub(super) fn read(&mut self, ci: usize, hup: bool) {
        loop {
            if !self.make_room(ci) {
                return;
            }
            let c = &mut self.conns[ci];
            let space = c.buf.len() - c.len;
            let r = shared_core::read_in(&mut c.tls, c.fd, &mut c.buf[c.len..]);
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
    pub(super) fn make_room(&mut self, ci: usize) -> bool {
        let c = &mut self.conns[ci];
        if c.state != State::Open {
            return false;
        }
        if c.len == c.buf.len() {
            if c.buf.len() >= MAX_HEAD {
                self.core.explain(FailureKind::Exception, || {
                    format!("response head over {} KiB", MAX_HEAD / 1024)
                });
                self.close(ci, End::Fail(FailureKind::Exception));
                return false;
            }
            let n = (c.buf.len() * 2).min(MAX_HEAD);
            c.buf.resize(n, 0);
        }
        true
    }

    /// Account `n` new bytes at the end of the buffer and parse what they complete.
    pub(super) fn absorb(&mut self, ci: usize, n: usize) {
        self.core.received(n);
        let c = &mut self.conns[ci];
        if c.first_byte == 0 {
            c.first_byte = self.core.now;
        }
        c.len += n;
        self.process(ci);
    }

    /// A receive failed with `e`.
    pub(super) fn recv_failed(&mut self, ci: usize, e: io::Error) {
        let c = &self.conns[ci];
        let end = if c.tls.as_ref().is_some_and(|t| t.handshaking()) {
            // TLS handshake failed (e.g. untrusted certificate): part of connecting.
            self.core
                .explain(FailureKind::Connect, || format!("TLS handshake: {e}"));
            End::Fail(FailureKind::Connect)
        } else if c.w_off < c.w_end {
            // The request was still being written (a large body): the reset
            // that the read side reported first cut the write, as ab counts it.
            return self.send_failed(ci, e);
        } else if c.served > 0 && c.framer.between_responses() && c.len == 0 {
            End::Retry
        } else {
            self.core.explain(FailureKind::Receive, || e.to_string());
            End::Fail(FailureKind::Receive)
        };
        self.close(ci, end);
    }

    pub(super) fn on_eof(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        let handshaking = c.tls.as_ref().is_some_and(|t| t.handshaking());
        match c.framer.eof(c.len) {
            Eof::Clean if c.ring.is_empty() => self.close(ci, End::Done),
            Eof::Clean if c.served > 0 => self.close(ci, End::Retry),
            Eof::Clean | Eof::TruncatedHead if handshaking => {
                self.core.explain(FailureKind::Connect, || {
                    "TLS handshake: the server closed the connection".to_owned()
                });
                self.close(ci, End::Fail(FailureKind::Connect));
            }
            Eof::Clean | Eof::TruncatedHead => {
                self.core.explain(FailureKind::Receive, || {
                    "the server closed the connection before a complete response head".to_owned()
                });
                self.close(ci, End::Fail(FailureKind::Receive));
            }
            Eof::TruncatedBody => {
                self.core.explain(FailureKind::Length, || {
                    "the server closed the connection before the end of the body".to_owned()
                });
                self.close(ci, End::Fail(FailureKind::Length));
            }
            Eof::Complete(resp) => {
                self.complete(ci, resp);
                self.close(ci, End::Done);
            }
        }
    }

    /// Parse every complete response in the buffer, in place. The responses
    /// one read brought complete at the same clock reading (the worker's
    /// `now`, read once per few events): they arrived together. A response
    /// that starts in the same buffer as the previous one ended has its first
    /// byte at that reading too.
    pub(super) fn process(&mut self, ci: usize) {
        let mut pos = 0;
        while pos < self.conns[ci].len {
            match self.parse_one(ci, pos) {
                Progress::Used(n) => pos += n,
                Progress::NeedMore => break,
                Progress::Closed => return,
            }
        }
        let c = &mut self.conns[ci];
        if pos > 0 {
            c.buf.copy_within(pos..c.len, 0);
            c.len -= pos;
        }
        self.next_requests(ci);
    }

    /// Frame the bytes at `pos`: (part of) a head or a body, maybe completing a response.
    fn parse_one(&mut self, ci: usize, pos: usize) -> Progress {
        let want_server = self.core.want_server;
        let c = &mut self.conns[ci];
        let Some(front) = c.ring.front() else {
            // Bytes nobody asked for: the connection is out of step; replace it.
            self.close(ci, End::Done);
            return Progress::Closed;
        };
        let head = c.is_head(self.core.sh, front.target);
        let at_head = self.core.sh.load.setup.trace.is_some() && c.framer.in_head();
        let step = match c.framer.advance(&c.buf[pos..c.len], head, want_server) {
            Ok(step) => step,
            Err(e) => {
                self.core.explain(FailureKind::Exception, || e.to_string());
                self.close(ci, End::Fail(FailureKind::Exception));
                return Progress::Closed;
            }
        };
        if let (true, Some(trace)) = (at_head && step.used > 0, &self.core.sh.load.setup.trace) {
            // ab logs its 8 KiB header buffer: the head and the body read with it.
            (trace.0)(&c.buf[pos..c.len.min(pos + TRACE_BYTES)]);
        }
        match step.done {
            Some(resp) => match self.response_done(ci, pos + step.used, resp) {
                true => Progress::Used(step.used),
                false => Progress::Closed,
            },
            None if step.used == 0 => Progress::NeedMore,
            None => Progress::Used(step.used),
        }
    }

    /// Count `resp`, which ended at `end` in the buffer; false when it
    /// closed the connection (a closing response, or no keep-alive).
    fn response_done(&mut self, ci: usize, end: usize, resp: Response) -> bool {
        let more = end < self.conns[ci].len;
        self.complete(ci, resp);
        let c = &mut self.conns[ci];
        c.first_byte = if more { self.core.now } else { 0 };
        if resp.reusable && self.h1.keep_alive {
            return true;
        }
        // Anything after a closing response is not ours to read.
        c.len = 0;
        let end = if c.ring.is_empty() {
            End::Done
        } else {
            End::Retry
        };
        self.close(ci, end);
        false
    }

    /// After the responses of a read: send the next batch (closed model) or
    /// offer the connection to the schedule (open model).
    fn next_requests(&mut self, ci: usize) {
        if !self.core.sh.load.arrival.is_open() {
            // Pipelining: the next batch goes out in one send once the whole
            // previous one is answered (as wrk does), not one request per response.
            if self.conns[ci].ring.is_empty() {
                self.refill(ci, true);
            }
        } else if self.conns[ci].ring.len() < self.h1.pipeline {
            self.make_free(ci);
        }
    }

    /// Account one complete response for the oldest request.
    pub(super) fn complete(&mut self, ci: usize, resp: Response) {
        let Some((slot, reused, first_byte)) = self.pop_answered(ci) else {
            return;
        };
        let a = Answer {
            status: resp.status,
            body_bytes: resp.body_bytes,
            first_byte,
            reused,
        };
        let kept = self.conns[ci].framer.kept();
        self.core.complete(&slot, a, kept);
    }

    /// Take the oldest request off connection `ci` as answered: (its slot,
    /// whether the connection had answered before, when the answer's first
    /// byte came), and restart the deadline for the next one.
    fn pop_answered(&mut self, ci: usize) -> Option<(Slot, bool, u64)> {
        let c = &mut self.conns[ci];
        let slot = c.ring.pop_front()?;
        let reused = c.served > 0;
        c.served += 1;
        c.deadline = match c.ring.front() {
            Some(s) => s.start.max(s.sent) + self.core.sh.timeout_ns,
            None => 0,
        };
        let first_byte = if c.first_byte == 0 {
            self.core.now
        } else {
            c.first_byte
        };
        if self.core.want_server {
            if let Some(s) = c.framer.server.take() {
                let _ = self.core.sh.server.set(s);
            }
            if let Some(t) = c.tls.as_ref().and_then(|t| t.summary()) {
                let _ = self.core.sh.tls_summary.set(t);
            }
            self.core.want_server = false;
        }
        Some((slot, reused, first_byte))
    }
}

/// What framing the bytes at one position did.
enum Progress {
    /// Consumed this many bytes; go on after them.
    Used(usize),
    /// An incomplete head or line: wait for more bytes.
    NeedMore,
    /// The connection was closed (failure, or a closing response).
    Closed,
}
