//! How requests end badly on the HTTP/1.1 worker: failures counted by kind
//! with their first error text, connections closed (retried or failed),
//! and deadlines.
//!
//! Owns the failure taxonomy of a request. Must not send or parse.

use super::*;

impl Worker<'_> {
    /// Say why the failure about to be counted as `kind` happened; `text` is
    /// only formatted while that kind has no first error yet.
    pub(super) fn explain(&mut self, kind: FailKind, text: impl FnOnce() -> String) {
        if self.stats.wants_error(kind) && !self.draining {
            self.why = Some(text());
        }
    }

    pub(super) fn fail(&mut self, kind: FailKind, n: u64) {
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
    pub(super) fn close(&mut self, ci: usize, end: End) {
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
        }
        c.reset_closed();
        let fresh = c.served == 0;
        match end {
            End::Fail(kind) => self.fail_in_flight(ci, kind),
            End::Retry if fresh => {
                // A fresh connection that closed without answering is a failure, not a retry,
                // so a server that accepts and hangs up cannot loop us forever.
                self.explain(FailKind::Receive, || {
                    "the server closed a new connection without answering".to_owned()
                });
                self.fail_in_flight(ci, FailKind::Receive);
            }
            // Counted as a reconnect when the replacement connects (see `connect`).
            End::Retry | End::Done => {}
        }
        self.why = None;
        if !self.draining {
            self.restart.push(ci as u32);
        }
    }

    /// Count the measured requests in flight on closed connection `ci` as `kind` failures.
    fn fail_in_flight(&mut self, ci: usize, kind: FailKind) {
        let c = &mut self.conns[ci];
        let n = c.ring.iter().filter(|s| s.measured).count() as u64;
        c.ring.clear();
        c.w_off = 0;
        c.w_end = 0;
        self.fail(kind, n);
    }

    /// Fail requests whose deadline passed.
    pub(super) fn expire(&mut self) {
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
