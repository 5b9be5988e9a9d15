//! A connection of the HTTP/1.1 worker and the requests in flight on it.
//!
//! Owns the per-connection state (socket, receive buffer, framer, ring of
//! in-flight requests, pending request bytes) and how a connection ends.
//! Must not do I/O: the worker drives it.

use super::*;
use crate::client::engine::core::Picked;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    Closed,
    Connecting,
    Open,
}

pub(crate) struct Conn {
    pub(super) sock: Option<Socket>,
    pub(super) fd: RawFd,
    pub(super) state: State,
    pub(super) buf: Vec<u8>,
    pub(super) len: usize,
    pub(super) framer: Framer,
    pub(super) ring: VecDeque<Slot>,
    /// Pending write: bytes `w_off..w_end` of `Shared::wire` (of a
    /// set: of the one request in flight's target).
    pub(super) w_off: usize,
    pub(super) w_end: usize,
    pub(super) first_byte: u64,
    pub(super) deadline: u64,
    /// Responses completed since this connection was opened.
    pub(super) served: u64,
    /// In one of the free lists (open model).
    pub(super) free: bool,
    /// The server ended this keep-alive connection; the next connect is a reconnect.
    pub(super) server_closed: bool,
    pub(super) tls: Option<Box<TlsSession>>,
    /// io_uring: incremented at every close, so completions of a previous
    /// socket in this slot are recognised and ignored.
    pub(super) gen: u32,
    /// io_uring: a multishot receive / the connect poll is armed.
    pub(super) recv_armed: bool,
    pub(super) poll_armed: bool,
    /// io_uring: a send is in flight (one at a time keeps the bytes in order), queued at `send_at`.
    pub(super) send_busy: bool,
    pub(super) send_at: u64,
    pub(super) send_len: usize,
    /// A streamed set: the bytes of the request in flight (`w_off..w_end`
    /// are in these), its body length and whether it is a HEAD request.
    pub(super) own: Vec<u8>,
    pub(super) own_body: u64,
    pub(super) own_head: bool,
    /// A held set's or a replay's request in flight whose body is sent
    /// apart (`set::Table::split`): where its head ends among the
    /// table's bytes, and the body, sent from there on.
    pub(super) split: Option<(usize, crate::request::Body)>,
}

impl Conn {
    pub(super) fn new(buf_size: usize, pipeline: usize) -> Conn {
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
            own: Vec::new(),
            own_body: 0,
            own_head: false,
            split: None,
        }
    }

    /// `n` closed connections for the run `sh` describes, `pipeline` requests in flight each.
    pub(super) fn many(n: usize, sh: &Shared, pipeline: usize) -> Vec<Conn> {
        (0..n)
            .map(|_| {
                let mut c = Conn::new(sh.buf_size, pipeline);
                if sh.checking {
                    c.framer.keep = Some(Keep::new(sh.keep_body));
                }
                c
            })
            .collect()
    }

    /// Requests in the ring whose bytes are not fully written yet.
    pub(super) fn unwritten(&self, request_len: usize) -> usize {
        (self.w_end - self.w_off).div_ceil(request_len)
    }

    /// Forget the socket and everything read from it (the ring of requests
    /// stays: the caller settles it). io_uring: completions still to come
    /// for the old socket carry the old generation and are ignored.
    pub(super) fn reset_closed(&mut self) {
        self.recv_armed = false;
        self.poll_armed = false;
        self.send_busy = false;
        self.gen = self.gen.wrapping_add(1);
        self.sock = None; // closing the fd also removes it from epoll
        self.fd = -1;
        self.tls = None;
        self.state = State::Closed;
        self.len = 0;
        self.framer.reset();
        self.first_byte = 0;
        self.deadline = 0;
        self.free = false;
    }

    /// Take `slot` for sending; of a streamed set, `picked` is its
    /// request (bytes, span and a body sent apart), copied but for that
    /// body, which is shared: the chunk it came from is not kept, so
    /// memory stays a chunk per worker whatever is in flight.
    pub(super) fn take(&mut self, slot: Slot, picked: Option<Picked<'_>>) {
        if let Some((bytes, span, body)) = picked {
            if self.send_busy {
                // io_uring may still read the old bytes (a send on a closed
                // socket): leave them be (a request's worth, rarely).
                std::mem::forget(std::mem::take(&mut self.own));
                std::mem::forget(self.split.take());
            }
            self.split = body.map(|b| (bytes.len(), b.clone()));
            self.own.clear();
            self.own.extend_from_slice(bytes);
            self.own_body = span.body_len;
            self.own_head = span.head;
        }
        self.ring.push_back(slot);
    }

    /// Whether the request to `target` on this connection is a HEAD request.
    pub(super) fn is_head(&self, sh: &Shared, target: u32) -> bool {
        match &sh.wire {
            Prepared::Streamed(_) => self.own_head,
            held => held.is_head(target),
        }
    }

    /// The bytes to send next, from `off` to at most `end`: of the run's
    /// requests or the connection's own; of a split body, the rest of the
    /// head or of the body of the request `off` is in.
    #[inline]
    pub(super) fn next_bytes<'s>(
        (own, split): (&'s [u8], Option<&'s (usize, crate::request::Body)>),
        sh: &'s Shared,
        off: usize,
        end: usize,
    ) -> &'s [u8] {
        let (head, body) = match &sh.wire {
            Prepared::One {
                bytes,
                split_body: Some(body),
                ..
            } => (bytes, body),
            Prepared::Set { bytes, .. } | Prepared::Replay { bytes, .. } => {
                return head_or_body(bytes, split, off, end)
            }
            Prepared::One { bytes, .. } => return &bytes[off..end],
            Prepared::Streamed(_) => return head_or_body(own, split, off, end),
        };
        let at = off % sh.request_len;
        let rest = match at < head.len() {
            true => &head[at..],
            false => &body[at - head.len()..],
        };
        &rest[..rest.len().min(end - off)]
    }

    /// Write pending bytes until all are written or the socket is full.
    pub(super) fn write_pending(&mut self, sh: &Shared) -> io::Result<()> {
        loop {
            let mine = (&self.own[..], self.split.as_ref());
            let bytes = Conn::next_bytes(mine, sh, self.w_off, self.w_end);
            let mut n = 0;
            shared_core::write_out(&mut self.tls, self.fd, bytes, &mut n)?;
            self.w_off += n;
            if n < bytes.len() || self.w_off >= self.w_end {
                return Ok(());
            }
        }
    }

    /// Queue the bytes of the last `k` requests of the ring behind whatever is pending.
    pub(super) fn queue(&mut self, k: usize, sh: &Shared) {
        let table = match &sh.wire {
            Prepared::One { .. } => None,
            Prepared::Set { table, .. } | Prepared::Replay { table, .. } => Some(table),
            Prepared::Streamed(_) => {
                // A streamed set: the request's bytes are the connection's
                // own copy, and its body sent apart after them.
                if self.ring.back().is_some() && k > 0 {
                    self.w_off = 0;
                    self.w_end = self.own.len() + self.split.as_ref().map_or(0, |s| s.1.len());
                }
                return;
            }
        };
        if let Some(table) = table {
            // A set has one request in flight per connection (no pipelining):
            // its bytes are its target's, in place.
            if let (Some(s), true) = (self.ring.back(), k > 0) {
                let span = &table.spans[s.target as usize];
                self.w_off = span.off;
                self.w_end = span.off + span.len;
                // A body sent apart follows its head: one reference
                // count per request, for bodies over 64 KiB only.
                self.split = table.split[s.target as usize]
                    .as_ref()
                    .map(|b| (self.w_end - b.len(), b.clone()));
            }
            return;
        }
        let request_len = sh.request_len;
        let pending = self.w_end - self.w_off;
        // All copies are identical: keep the offset within the first copy so
        // the range always fits in `pipeline + 1` copies.
        self.w_off %= request_len;
        self.w_end = self.w_off + pending + k * request_len;
    }
}

/// Bytes `off..end` (at most) of a request whose head is `bytes` (of a
/// table: the request's head ends at `split`'s offset) and whose body,
/// when `split`, is sent apart after it.
#[inline]
fn head_or_body<'s>(
    bytes: &'s [u8],
    split: Option<&'s (usize, crate::request::Body)>,
    off: usize,
    end: usize,
) -> &'s [u8] {
    match split {
        None => &bytes[off..end],
        Some((head_end, _)) if off < *head_end => &bytes[off..end.min(*head_end)],
        Some((head_end, body)) => &body[off - head_end..end - head_end],
    }
}

/// How a connection ended, for the requests still on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    /// Failed: count every request still in flight in this bucket.
    Fail(FailureKind),
    /// The server closed a reused connection without starting an answer:
    /// resend what was in flight on a new connection (not counted).
    Retry,
    /// Nothing in flight (normal close after the last response).
    Done,
}

impl super::super::free::Listed for Conn {
    fn listed(&mut self) -> &mut bool {
        &mut self.free
    }

    fn idle(&self) -> bool {
        self.ring.is_empty()
    }
}
