//! How requests end on the HTTP/1.1 worker: connections closed (retried or
//! failed, each failure counted by the shared core).
//!
//! Owns which bucket a connection's end puts its requests in. Must not send or parse.

use super::*;

impl Worker<'_> {
    /// Close a connection, settle the requests on it, and schedule its replacement.
    pub(super) fn close(&mut self, ci: usize, end: End) {
        let c = &mut self.conns[ci];
        // The server ended a connection that had answered: with -k, a reconnect follows.
        c.server_closed = self.h1.keep_alive && c.served > 0 && !matches!(end, End::Fail(_));
        if let Io::Uring { ring, closing, .. } = &mut self.io {
            // An armed operation holds the socket open; cancelling it lets the close happen.
            if c.recv_armed {
                ring.cancel(tag(ci, c.gen, OP_RECV), CANCEL_TOKEN);
            }
            if c.poll_armed {
                ring.cancel(tag(ci, c.gen, OP_CONNECT), CANCEL_TOKEN);
            }
            if c.send_busy {
                ring.cancel(tag(ci, c.gen, OP_SEND), CANCEL_TOKEN);
            }
            // Entries name the socket by its number, resolved when submitted: closing it
            // now would let the reconnect reuse the number, and an entry still queued
            // (a send of this request's rest) would act on the new socket. It closes
            // after the turn's submission (see `uring_turn`).
            closing.extend(c.sock.take());
        }
        c.reset_closed();
        let fresh = c.served == 0;
        match end {
            End::Fail(kind) => self.fail_in_flight(ci, kind),
            End::Retry if fresh => {
                // A fresh connection that closed without answering is a failure, not a retry,
                // so a server that accepts and hangs up cannot loop us forever.
                self.core.explain(FailureKind::Receive, || {
                    "the server closed a new connection without answering".to_owned()
                });
                self.fail_in_flight(ci, FailureKind::Receive);
            }
            // Counted as a reconnect when the replacement connects (see `connect`).
            End::Retry | End::Done => {}
        }
        self.core.forget_why();
        if !self.core.draining {
            self.core.restart.push(ci as u32);
        }
    }

    /// Count the measured requests in flight on closed connection `ci` as `kind` failures.
    fn fail_in_flight(&mut self, ci: usize, kind: FailureKind) {
        let c = &mut self.conns[ci];
        self.core.fail_slots(c.ring.iter(), kind);
        c.ring.clear();
        c.w_off = 0;
        c.w_end = 0;
    }
}
