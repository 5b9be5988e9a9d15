//! The open model's free list, one for every protocol's worker: the
//! connections that may take a request now, open ones before closed ones
//! (a request on an open connection waits for no handshake), the latest
//! listed first within each.
//!
//! Owns the two stacks and the rule for stale entries: an entry is used
//! only while its connection is still listed (the flag each connection
//! carries, cleared when the protocol takes or closes it) and the protocol
//! still finds it usable; anything else is dropped as it is met, so
//! listing and taking stay O(1) without searching the stacks. Must not know
//! what makes a connection usable (the protocol says, per pop) nor when
//! the open model is on (the caller lists only then).

/// A connection the free list can hold: it carries its own "listed" flag,
/// so a protocol can unlist it (taken, closed) without touching the list.
pub(crate) trait Listed {
    /// Whether this connection is in the free list.
    fn listed(&mut self) -> &mut bool;
    /// No request is on it (in flight, or waiting for it to connect).
    fn idle(&self) -> bool;
}

/// The connections that may take a request now (indices into a worker's
/// connections).
#[derive(Debug)]
pub(crate) struct FreeList {
    open: Vec<u32>,
    closed: Vec<u32>,
}

impl FreeList {
    /// An empty list for a worker of `conns` connections.
    pub fn new(conns: usize) -> FreeList {
        FreeList {
            open: Vec::with_capacity(conns),
            closed: Vec::with_capacity(conns),
        }
    }

    /// List connection `ci` (`open`: its socket is open or opening) unless
    /// it is listed already.
    #[inline]
    pub fn push<C: Listed>(&mut self, conns: &mut [C], ci: usize, open: bool) {
        if std::mem::replace(conns[ci].listed(), true) {
            return;
        }
        if open {
            self.open.push(ci as u32);
        } else {
            self.closed.push(ci as u32);
        }
    }

    /// A listed connection that `usable` (given the connection and whether
    /// it was listed open) accepts, unlisted; open ones first.
    #[inline]
    pub fn pop<C: Listed>(
        &mut self,
        conns: &mut [C],
        mut usable: impl FnMut(&mut C, bool) -> bool,
    ) -> Option<usize> {
        pop_from(&mut self.open, conns, |c| usable(c, true))
            .or_else(|| pop_from(&mut self.closed, conns, |c| usable(c, false)))
    }

    /// No connection is listed (stale entries aside).
    pub fn is_empty(&self) -> bool {
        self.open.is_empty() && self.closed.is_empty()
    }
}

/// The latest entry of `list` whose connection is listed and usable,
/// unlisted; the entries met on the way are dropped (and their
/// connections unlisted: the protocol lists them again when they can work).
#[inline]
fn pop_from<C: Listed>(
    list: &mut Vec<u32>,
    conns: &mut [C],
    mut usable: impl FnMut(&mut C) -> bool,
) -> Option<usize> {
    while let Some(ci) = list.pop() {
        let c = &mut conns[ci as usize];
        if std::mem::take(c.listed()) && usable(c) {
            return Some(ci as usize);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection that is open or not, with room or not.
    #[derive(Default)]
    struct Conn {
        listed: bool,
        open: bool,
        room: bool,
    }

    impl Listed for Conn {
        fn listed(&mut self) -> &mut bool {
            &mut self.listed
        }
        fn idle(&self) -> bool {
            true
        }
    }

    fn conns(n: usize) -> Vec<Conn> {
        (0..n).map(|_| Conn::default()).collect()
    }

    #[test]
    fn open_connections_go_first_latest_first() {
        let mut cs = conns(4);
        let mut free = FreeList::new(4);
        for ci in [0, 1] {
            free.push(&mut cs, ci, false);
        }
        for ci in [2, 3] {
            free.push(&mut cs, ci, true);
        }
        let mut order = Vec::new();
        while let Some(ci) = free.pop(&mut cs, |_, _| true) {
            order.push(ci);
        }
        assert_eq!(order, [3, 2, 1, 0]);
        assert!(free.is_empty());
        assert!(cs.iter().all(|c| !c.listed));
    }

    #[test]
    fn a_connection_is_listed_once() {
        let mut cs = conns(1);
        let mut free = FreeList::new(1);
        free.push(&mut cs, 0, true);
        free.push(&mut cs, 0, true);
        assert_eq!(free.pop(&mut cs, |_, _| true), Some(0));
        assert_eq!(free.pop(&mut cs, |_, _| true), None);
    }

    #[test]
    fn stale_and_unusable_entries_are_dropped_and_unlisted() {
        let mut cs = conns(3);
        let mut free = FreeList::new(3);
        for ci in 0..3 {
            free.push(&mut cs, ci, true);
        }
        // Taken since it was listed: its entry is stale.
        cs[2].listed = false;
        // Listed, but the protocol cannot use it now.
        cs[1].room = false;
        cs[0].room = true;
        assert_eq!(free.pop(&mut cs, |c, _| c.room), Some(0));
        assert!(!cs[1].listed, "unlisted, so it can be listed again");
        free.push(&mut cs, 1, false);
        assert_eq!(free.pop(&mut cs, |c, open| !open && !c.open), Some(1));
        assert!(free.is_empty());
    }
}
