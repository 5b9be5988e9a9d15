//! Who may send the next request: the closed model's shared request budget
//! (`-n`) and the open model's constant-arrival schedule (`--rate`).
//!
//! A replay's schedule is its recording's times instead of a rate
//! (`super::replayed`).
//!
//! Pure logic over atomics and integers; no clock reads, no I/O.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::replayed::ReplayTable;

/// The `-n` budget shared by all workers; each claims small batches so the
/// shared counter is touched once per batch, not once per request, and the
/// total issued can never exceed `n`.
#[derive(Debug)]
pub(crate) struct Budget {
    remaining: AtomicU64,
    limited: bool,
}

impl Budget {
    /// `None` = unlimited (a time limit or Ctrl-C ends the run).
    pub fn new(n: Option<u64>) -> Budget {
        Budget {
            remaining: AtomicU64::new(n.unwrap_or(u64::MAX)),
            limited: n.is_some(),
        }
    }

    /// Take up to `want` requests; returns how many were granted (0 = exhausted).
    pub fn claim(&self, want: u64) -> u64 {
        if !self.limited {
            return want;
        }
        let mut cur = self.remaining.load(Ordering::Relaxed);
        loop {
            let take = cur.min(want);
            if take == 0 {
                return 0;
            }
            match self.remaining.compare_exchange_weak(
                cur,
                cur - take,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return take,
                Err(actual) => cur = actual,
            }
        }
    }

    /// Nothing left to claim.
    pub fn exhausted(&self) -> bool {
        self.limited && self.remaining.load(Ordering::Relaxed) == 0
    }
}

/// A worker's local cache of claimed budget.
#[derive(Debug, Default)]
pub(crate) struct Claims {
    local: u64,
    batch: u64,
}

impl Claims {
    /// `batch` = how many requests to claim from the shared budget at a time.
    pub fn new(batch: u64) -> Claims {
        Claims {
            local: 0,
            batch: batch.max(1),
        }
    }

    /// Permission for one request.
    pub fn take(&mut self, budget: &Budget) -> bool {
        if self.local == 0 {
            self.local = budget.claim(self.batch);
            // Near the end, take one at a time so no worker hoards the tail.
            if budget.limited {
                self.batch = self
                    .batch
                    .min(budget.remaining.load(Ordering::Relaxed) / 8 + 1);
            }
        }
        if self.local > 0 {
            self.local -= 1;
            true
        } else {
            false
        }
    }

    /// Claimed and not yet used.
    pub fn held(&self) -> u64 {
        self.local
    }
}

/// The open model's arrival schedule for one worker: request `i` of the whole
/// run is intended at `start + i / rate`; worker `t` of `T` sends `i ≡ t (mod T)`.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    start_ns: u64,
    rate: f64,
    threads: u64,
    /// Global index of this worker's next request.
    next: u64,
    /// First global index not to send (`-n`), or u64::MAX.
    limit: u64,
    /// A replay: the recorded times (`rate` is then unused).
    replay: Option<Arc<ReplayTable>>,
}

impl Schedule {
    pub fn new(start_ns: u64, rate: f64, thread: u64, threads: u64, limit: Option<u64>) -> Self {
        Schedule {
            start_ns,
            rate,
            threads: threads.max(1),
            next: thread,
            limit: limit.unwrap_or(u64::MAX),
            replay: None,
        }
    }

    /// The same schedule following a replay's recorded times, if any
    /// (at most its sends).
    pub fn with_replay(mut self, replay: Option<&Arc<ReplayTable>>) -> Self {
        if let Some(r) = replay {
            self.limit = self.limit.min(r.total());
            self.replay = Some(Arc::clone(r));
        }
        self
    }

    /// Intended send time of global request `i`.
    #[inline]
    pub fn intended(&self, i: u64) -> u64 {
        match &self.replay {
            None => self.start_ns + (i as f64 * 1e9 / self.rate) as u64,
            Some(r) => self.start_ns + r.at(i),
        }
    }

    /// Global index of this worker's next request (a replay picks the
    /// recorded request by it).
    #[inline]
    pub fn next_index(&self) -> u64 {
        self.next
    }

    /// Intended time of this worker's next request, if any is left.
    pub fn peek(&self) -> Option<u64> {
        (self.next < self.limit).then(|| self.intended(self.next))
    }

    /// The next request is due at `now`: take it.
    pub fn pop_due(&mut self, now: u64) -> Option<u64> {
        let t = self.peek()?;
        if t <= now {
            self.next += self.threads;
            Some(t)
        } else {
            None
        }
    }

    /// Give up every request intended at or before `until` that is still
    /// unsent (the run ended before a connection was free for it); how many.
    pub fn give_up_due(&mut self, until: u64) -> u64 {
        let mut n = 0;
        while self.pop_due(until).is_some() {
            n += 1;
        }
        n
    }

    /// No request left for this worker.
    pub fn done(&self) -> bool {
        self.next >= self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_never_grants_more_than_n() {
        let b = Budget::new(Some(10));
        let mut a = Claims::new(4);
        let mut c = Claims::new(4);
        let mut granted = 0;
        for _ in 0..20 {
            granted += u64::from(a.take(&b)) + u64::from(c.take(&b));
        }
        assert_eq!(granted, 10);
        assert!(b.exhausted());
    }

    #[test]
    fn unlimited_budget_always_grants() {
        let b = Budget::new(None);
        let mut a = Claims::new(64);
        assert!((0..1000).all(|_| a.take(&b)));
        assert!(!b.exhausted());
    }

    #[test]
    fn schedule_interleaves_threads_at_the_rate() {
        // 1000 req/s over 2 threads: thread 0 sends 0, 2, 4… ms; thread 1 sends 1, 3, 5… ms.
        let mut s0 = Schedule::new(0, 1000.0, 0, 2, Some(5));
        let mut s1 = Schedule::new(0, 1000.0, 1, 2, Some(5));
        assert_eq!(s0.pop_due(0), Some(0));
        assert_eq!(s0.pop_due(1_000_000), None);
        assert_eq!(s0.pop_due(2_000_000), Some(2_000_000));
        assert_eq!(s1.pop_due(10_000_000), Some(1_000_000));
        assert_eq!(s1.pop_due(10_000_000), Some(3_000_000));
        assert_eq!(s1.pop_due(10_000_000), None, "request 5 is past -n 5");
        assert!(s1.done());
        assert_eq!(s0.pop_due(10_000_000), Some(4_000_000));
        assert!(s0.done());
    }

    #[test]
    fn what_is_due_at_the_end_is_given_up_and_counted() {
        // 1000 req/s on one thread: 0..=9 ms are due at 9.5 ms, 10 ms is not.
        let mut s = Schedule::new(0, 1000.0, 0, 1, None);
        assert_eq!(s.pop_due(0), Some(0));
        assert_eq!(s.give_up_due(9_500_000), 9);
        assert_eq!(s.give_up_due(9_500_000), 0);
        assert_eq!(s.peek(), Some(10_000_000));
    }

    #[test]
    fn schedule_has_no_drift_over_a_long_run() {
        let s = Schedule::new(0, 3.0, 0, 1, None);
        // 3 req/s: request 3_000_000 is due at exactly 1_000_000 s.
        assert_eq!(s.intended(3_000_000), 1_000_000 * 1_000_000_000);
    }
}
