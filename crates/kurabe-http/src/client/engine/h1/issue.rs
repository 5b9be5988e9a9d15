//! The send side of the HTTP/1.1 worker: claiming requests from the budget
//! or the `--rate` schedule, opening connections, writing request bytes and
//! stamping when each request went out.
//!
//! Owns when and on which connection a request is sent. Must not parse
//! responses (see `receive`).

use super::*;

impl Worker<'_> {
    /// Start connection `ci`, queued for (re)start (see
    /// [`Connections::do_restarts`]).
    pub(super) fn restart_conn(&mut self, ci: usize) {
        if self.core.sh.load.arrival.is_open() {
            // Open model: a connection with carried-over requests reconnects; else it waits.
            if self.conns[ci].ring.is_empty() {
                self.make_free(ci);
            } else {
                self.connect(ci);
            }
            return;
        }
        if self.conns[ci].ring.is_empty() {
            if !self.core.awake(ci) {
                // Connection stages: closed until the target wants it.
                self.conns[ci].server_closed = false;
                self.core.park(ci);
                return;
            }
            match self.core.claim() {
                Some(slot) => self.conns[ci].take(slot, self.core.streamed()),
                None => return,
            }
        }
        self.connect(ci);
    }

    /// Open model: send `slot` on free connection `ci`, listed free again
    /// while it has room.
    pub(super) fn send_slot(&mut self, ci: usize, slot: Slot) {
        self.conns[ci].take(slot, self.core.streamed());
        if self.conns[ci].state == State::Open {
            self.conns[ci].queue(1, self.core.sh);
            self.flush(ci);
            if self.conns[ci].state == State::Open && self.conns[ci].ring.len() < self.h1.pipeline {
                self.make_free(ci);
            }
        } else {
            self.connect(ci);
        }
    }

    /// Open model: list connection `ci` as free.
    pub(super) fn make_free(&mut self, ci: usize) {
        if !self.core.sh.load.arrival.is_open() {
            return;
        }
        let open = self.conns[ci].state == State::Open;
        self.free.push(&mut self.conns, ci, open);
    }

    /// Open a new connection for the requests in the ring.
    pub(super) fn connect(&mut self, ci: usize) {
        let now = self.core.now;
        let sh = self.core.sh;
        let res = self.open_socket(ci);
        let c = &mut self.conns[ci];
        for s in c.ring.iter_mut() {
            s.start = now;
            s.sent = 0;
        }
        c.w_off = 0;
        c.w_end = 0;
        let k = c.ring.len();
        c.queue(k, sh);
        c.deadline = now + self.core.sh.timeout_ns;
        c.len = 0;
        c.framer.reset();
        c.first_byte = 0;
        c.served = 0;
        if std::mem::take(&mut c.server_closed) && self.core.measuring && !self.core.draining {
            self.core.stats.counters.reconnects += 1;
        }
        match res {
            Ok(()) => c.state = State::Connecting,
            Err(e) => {
                let kind = self.core.socket_failed(&e);
                self.close(ci, End::Fail(kind));
            }
        }
    }

    pub(super) fn open_socket(&mut self, ci: usize) -> io::Result<()> {
        let sock = self.core.sh.connect_socket()?;
        let fd = sock.as_raw_fd();
        let c = &mut self.conns[ci];
        match &mut self.io {
            Io::Epoll { ep, .. } => ep.add(fd, ci as u64)?,
            Io::Uring { ring, .. } => {
                ring.poll(fd, libc::POLLOUT as u32, false, tag(ci, c.gen, OP_CONNECT));
                c.poll_armed = true;
            }
        }
        if let Some(tls) = &self.core.sh.tls {
            c.tls = Some(Box::new(tls.session()?));
        }
        c.fd = fd;
        c.sock = Some(sock);
        Ok(())
    }

    /// Closed model: claim requests until `pipeline` are in flight, queue
    /// their bytes; with connection stages, a connection the target no
    /// longer wants closes once answered instead (and parks).
    pub(super) fn refill(&mut self, ci: usize, send: bool) {
        if !self.core.awake(ci) {
            let c = &self.conns[ci];
            if c.ring.is_empty() && c.state != State::Closed {
                self.close(ci, End::Done);
            }
            return;
        }
        let want = if self.h1.keep_alive {
            self.h1.pipeline
        } else {
            1
        };
        let mut k = 0;
        while self.conns[ci].ring.len() < want {
            match self.core.claim() {
                Some(slot) => {
                    self.conns[ci].take(slot, self.core.streamed());
                    k += 1;
                }
                None => break,
            }
        }
        if k > 0 {
            self.conns[ci].queue(k, self.core.sh);
            if send {
                self.flush(ci);
            }
        }
    }

    /// Write pending request bytes until done or the socket is full
    /// (io_uring: queue them as one send).
    pub(super) fn flush(&mut self, ci: usize) {
        let sh = self.core.sh;
        let now = self.core.now;
        let c = &mut self.conns[ci];
        if c.state != State::Open || self.core.draining {
            return;
        }
        if let Io::Uring { .. } = &self.io {
            self.queue_send(ci);
            return;
        }
        let before = c.unwritten(sh.request_len);
        if let Err(e) = c.write_pending(sh) {
            self.send_failed(ci, e);
            return;
        }
        self.mark_written(ci, before, now);
    }

    /// io_uring: queue the pending bytes as one send unless one is in flight
    /// (one at a time keeps them in order).
    fn queue_send(&mut self, ci: usize) {
        let (sh, now) = (self.core.sh, self.core.now);
        let c = &mut self.conns[ci];
        let Io::Uring { ring, .. } = &mut self.io else {
            return;
        };
        if !c.send_busy && c.w_off < c.w_end {
            let bytes = Conn::next_bytes((&c.own, c.split.as_ref()), sh, c.w_off, c.w_end);
            // `sh.wire` outlives the worker and so the operation; a
            // connection's own bytes stay until its next request (see `take`).
            ring.send(c.fd, bytes, tag(ci, c.gen, OP_SEND));
            c.send_busy = true;
            c.send_at = now;
            c.send_len = bytes.len();
        }
    }

    /// A send failed: a reused connection the server closed between
    /// responses is retried, anything else fails what is in flight.
    pub(super) fn send_failed(&mut self, ci: usize, e: io::Error) {
        let c = &self.conns[ci];
        let end = if c.served > 0 && c.framer.between_responses() {
            End::Retry
        } else {
            End::Fail(FailureKind::Write)
        };
        self.core
            .explain(FailureKind::Write, || format!("send: {e}"));
        self.close(ci, end);
    }

    /// Stamp the requests whose last byte went out at `at` (`before` were
    /// unwritten until then) and start the connection's deadline.
    pub(super) fn mark_written(&mut self, ci: usize, before: usize, at: u64) {
        let sh = self.core.sh;
        let c = &mut self.conns[ci];
        let after = c.unwritten(sh.request_len);
        if after < before {
            // Requests newly written: the last `before` of the ring, first `before - after` of them.
            let first = c.ring.len() - before;
            let streamed_body = c.own_body;
            for s in c.ring.range_mut(first..first + (before - after)) {
                let body = match &sh.wire {
                    Prepared::Streamed(_) => streamed_body,
                    held => held.body_len(s.target),
                };
                self.core.sent(s, at, body);
            }
        }
        if c.deadline == 0 {
            if let Some(s) = c.ring.front() {
                c.deadline = s.start + sh.timeout_ns;
            }
        }
    }
}
