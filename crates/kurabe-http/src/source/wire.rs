//! What a run sends, ready on the wire: one request, a held set, a
//! streamed set or a replay's recorded requests ([`Prepared`]), built
//! once before the workers start and read by all of them.
//!
//! Owns the one place where the kinds of requests differ for the
//! workers: the bytes each send writes, a request's body length and
//! whether it is a HEAD request. Must not pick targets (each worker's
//! `set::Picker`, the replay's schedule) nor read files (`load`).

use super::set::feed::Feed;
use super::set::Table;

/// What every request of a run is, for its workers.
pub(crate) enum Prepared {
    /// One request: its HTTP/1.1 bytes repeated `pipeline + 1` times (see
    /// the HTTP/1.1 worker's `Conn::queue`), its body length, and whether
    /// it is a HEAD request.
    One {
        /// The request's bytes, repeated; of a split body, its head once.
        bytes: Vec<u8>,
        /// The body when it is too large to repeat (over `SPLIT_BODY`):
        /// `bytes` is then the head, once, and a connection's
        /// `w_off..w_end` count over head and body in turn
        /// (`engine::h1::conn::Conn::next_bytes`), the body sent from here.
        split_body: Option<crate::request::Body>,
        /// Body bytes of one request.
        body_len: u64,
        /// A HEAD request (its response has no body).
        head: bool,
    },
    /// A request set held whole (`--targets`): every target's bytes one
    /// after another, where each one is, and the set's order.
    Set {
        /// Every target's request bytes.
        bytes: Vec<u8>,
        /// Where each target's are, and which goes next.
        table: Table,
    },
    /// A streamed set: each connection copies its request's bytes from
    /// the chunk it was picked from.
    Streamed(Feed),
    /// A replay's recorded requests, held as a set's are; the schedule's
    /// index says which one each send sends (see `arrival`).
    Replay {
        /// Every recorded request's bytes.
        bytes: Vec<u8>,
        /// Where each one is.
        table: Table,
    },
}

impl Prepared {
    /// Body bytes of a request to `target` (a streamed set's are its
    /// connection's own: see the HTTP/1.1 worker's `Conn::take`).
    #[inline]
    pub(crate) fn body_len(&self, target: u32) -> u64 {
        match self {
            Prepared::One { body_len, .. } => *body_len,
            Prepared::Set { table, .. } | Prepared::Replay { table, .. } => {
                table.spans[target as usize].body_len
            }
            Prepared::Streamed(_) => 0,
        }
    }

    /// Whether a request to `target` is a HEAD request (a streamed set's:
    /// see [`Prepared::body_len`]).
    #[inline]
    pub(crate) fn is_head(&self, target: u32) -> bool {
        match self {
            Prepared::One { head, .. } => *head,
            Prepared::Set { table, .. } | Prepared::Replay { table, .. } => {
                table.spans[target as usize].head
            }
            Prepared::Streamed(_) => false,
        }
    }

    /// The streamed set's feeder (`None`: the requests are held).
    pub(crate) fn feed(&self) -> Option<&Feed> {
        match self {
            Prepared::Streamed(feed) => Some(feed),
            _ => None,
        }
    }
}
