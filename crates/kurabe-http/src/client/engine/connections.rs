//! What the turn loop ([`super::turns`]) asks of a protocol's worker, and
//! the steps that are the same for every protocol, written once as the
//! trait's default methods over the worker's [`Core`], its connections and
//! its [`FreeList`]: making every connection free when the open model
//! begins, restarting the connections queued for it, sending what the
//! schedule has due on free connections, scanning deadlines, telling
//! whether anything is left in flight.
//!
//! Owns [`Connections`] and the order of those shared steps. Must not know
//! any protocol's framing or connection state: each worker answers the
//! hooks ([`Connections::restart`], [`Connections::send_on`],
//! [`Connections::expire_conn`], ...) for its own connections.

use std::io;

use super::core::Core;
use super::free::{FreeList, Listed};
use kurabe_model::load_stats::Stats;

/// A worker's parts the shared steps change: its core, its connections
/// and its free list.
pub(crate) struct Parts<'w, 'a, C> {
    pub core: &'w mut Core<'a>,
    pub conns: &'w mut [C],
    pub free: &'w mut FreeList,
}

/// The same parts, to read.
pub(crate) struct View<'w, 'a, C> {
    pub core: &'w Core<'a>,
    pub conns: &'w [C],
    pub free: &'w FreeList,
}

/// What the turn loop asks of a protocol's worker. Implemented by the
/// HTTP/1.1, HTTP/2 and HTTP/3 workers; the loop is generic over it (no
/// dynamic dispatch), and so are the default methods.
pub(crate) trait Connections<'a> {
    /// One of the worker's connections.
    type Conn: Listed;
    /// What one send carries: its slot, and where its request is.
    type Request;

    /// The worker's core, connections and free list, to change.
    fn parts(&mut self) -> Parts<'_, 'a, Self::Conn>;
    /// The same, to read.
    fn view(&self) -> View<'_, 'a, Self::Conn>;

    /// Closed model: (re)start connection `ci`, queued in [`Core::restart`]
    /// (open model: make it free, or reconnect it for what it carries).
    fn restart(&mut self, ci: usize);
    /// Open model: a connection that can take a request now, unlisted.
    fn pop_free(&mut self) -> Option<usize>;
    /// Open model: the next request to send, due at or before `until`
    /// (or one to send again, before any new one).
    fn next_request(&mut self, until: u64) -> Option<Self::Request>;
    /// Open model: send `r` on free connection `ci` (connecting it first
    /// when it is closed).
    fn send_on(&mut self, ci: usize, r: Self::Request);
    /// Fail the requests of connection `ci` whose deadline passed.
    fn expire_conn(&mut self, ci: usize);
    /// Wait for I/O at most `timeout` ns (None: until the ticker), after a
    /// nap of `nap` ns if given, and act on everything that happened.
    fn poll(&mut self, timeout: Option<u64>, nap: Option<u64>);
    /// Measured requests written and not answered.
    fn in_flight_measured(&self) -> u64;
    /// Some request written is still waiting for its answer.
    fn awaiting_answers(&self) -> bool;
    /// Close every connection (the end of the run).
    fn close_all(&mut self);

    /// Requests wait to be sent again (refused by a GOAWAY) on no connection.
    fn has_pending(&self) -> bool {
        false
    }

    /// On the worker's thread, before the first turn: what its I/O needs
    /// there (`Err`: a setup failure).
    fn start_io(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// The worker's protocol-free state.
    fn core(&self) -> &Core<'a> {
        self.view().core
    }

    /// The same, to change.
    fn core_mut(&mut self) -> &mut Core<'a> {
        self.parts().core
    }

    /// Before the first turn, on the worker's thread: [`Connections::start_io`],
    /// then, open model, every connection (all closed) offered to the schedule.
    fn begin(&mut self, open_model: bool) -> io::Result<()> {
        self.start_io()?;
        if open_model {
            let p = self.parts();
            for ci in (0..p.conns.len()).rev() {
                p.free.push(p.conns, ci, false);
            }
        }
        Ok(())
    }

    /// Restart the connections queued in [`Core::restart`] so far: one
    /// whose connect fails at once queues itself again, for the next turn
    /// (which reads the clock first).
    fn do_restarts(&mut self) {
        let core = self.core_mut();
        std::mem::swap(&mut core.restart, &mut core.restarting);
        for i in 0..self.core().restarting.len() {
            let ci = self.core().restarting[i] as usize;
            self.restart(ci);
        }
        self.core_mut().restarting.clear();
    }

    /// Open model: send every request due at or before `until` (and every
    /// one to send again) on a free connection, while there is one.
    fn dispatch_until(&mut self, until: u64) {
        if self.core().schedule.is_none() {
            return;
        }
        while self.core().due(until) || self.has_pending() {
            let Some(ci) = self.pop_free() else {
                return;
            };
            let Some(r) = self.next_request(until) else {
                return;
            };
            self.send_on(ci, r);
        }
    }

    /// Fail the requests whose deadline passed, connection by connection.
    fn expire(&mut self) {
        for ci in 0..self.view().conns.len() {
            self.expire_conn(ci);
        }
    }

    /// No request is on any connection or waiting to be sent again.
    fn idle(&self) -> bool {
        !self.has_pending() && self.view().conns.iter().all(Listed::idle)
    }

    /// Open model: some connection can take a request now.
    fn can_take(&self) -> bool {
        !self.view().free.is_empty()
    }

    /// What the worker measured (the end of the run).
    fn into_stats(mut self) -> Stats
    where
        Self: Sized,
    {
        std::mem::take(&mut self.core_mut().stats)
    }
}
