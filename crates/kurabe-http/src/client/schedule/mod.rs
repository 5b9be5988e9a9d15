//! Who may send the next request: the closed model's shared request budget
//! (`-n`) and the open model's schedule, each worker's share of the run's
//! [`Arrival`] (a constant rate, a ramp of rates, a recording's times).
//!
//! Pure logic over atomics and integers; no clock reads, no I/O.
//!
//! Beside it: `arrival` (when requests go out: closed, a rate, a ramp,
//! connection stages, a replay's times), `pace` (how a worker waits for the
//! next send) and `trial` (whether naps pay, measured on the run
//! itself).

pub(crate) mod arrival;
pub(crate) mod pace;
pub(crate) mod trial;

use std::sync::atomic::{AtomicU64, Ordering};

use arrival::Arrival;

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

/// The open model's arrival schedule for one worker: request `i` of the
/// whole run is intended at `start + arrival.at(i)`; worker `t` of `T`
/// sends `i ≡ t (mod T)`.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    start_ns: u64,
    /// When each request of the run is due (an open-model kind).
    arrival: Arrival,
    threads: u64,
    /// Global index of this worker's next request.
    next: u64,
    /// First global index not to send (`-n`, or the arrival's own count:
    /// a ramp's sends, a recording's), or u64::MAX.
    limit: u64,
}

impl Schedule {
    /// Worker `thread` of `threads`' share of `arrival` from `start_ns`, at
    /// most `limit` requests in all (`-n`).
    pub fn new(
        start_ns: u64,
        arrival: &Arrival,
        thread: u64,
        threads: u64,
        limit: Option<u64>,
    ) -> Self {
        let own = arrival.sends().unwrap_or(u64::MAX);
        Schedule {
            start_ns,
            arrival: arrival.clone(),
            threads: threads.max(1),
            next: thread,
            limit: limit.unwrap_or(u64::MAX).min(own),
        }
    }

    /// Intended send time of global request `i`.
    #[inline]
    pub fn intended(&self, i: u64) -> u64 {
        self.start_ns.saturating_add(self.arrival.at(i))
    }

    /// Give up the unsent requests intended more than `wait_ns` before
    /// `now` (no connection could take them in time); how many.
    pub fn drop_stale(&mut self, now: u64, wait_ns: u64) -> u64 {
        self.give_up_due(now.saturating_sub(wait_ns))
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
    /// unsent (no connection was free for it in time); how many.
    ///
    /// Not one by one: a rate the machine cannot reach leaves millions
    /// behind, and the end of a run must not take time in proportion to
    /// the sends it meant. The count comes from a search of the schedule
    /// (intended times never decrease): a gallop to a bound, then a
    /// bisection, a few dozen reads of [`Schedule::intended`] at most.
    pub fn give_up_due(&mut self, until: u64) -> u64 {
        let due = |k: u64| self.due_after(k, until);
        if !due(0) {
            return 0;
        }
        // `lo` is due, `hi` is not.
        let (mut lo, mut hi) = (0u64, 1u64);
        while due(hi) {
            lo = hi;
            hi = hi.saturating_mul(2);
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if due(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        self.next = self.next.saturating_add(hi.saturating_mul(self.threads));
        hi
    }

    /// Whether this worker's `k`-th next request exists and is intended at
    /// or before `until` (false past the end of the schedule or of u64).
    fn due_after(&self, k: u64, until: u64) -> bool {
        k.checked_mul(self.threads)
            .and_then(|d| self.next.checked_add(d))
            .is_some_and(|i| i < self.limit && self.intended(i) <= until)
    }

    /// No request left for this worker.
    pub fn done(&self) -> bool {
        self.next >= self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Worker `thread` of `threads`' share of `rate` requests/s from 0.
    fn at_rate(rate: f64, thread: u64, threads: u64, limit: Option<u64>) -> Schedule {
        Schedule::new(0, &Arrival::Constant(rate), thread, threads, limit)
    }

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
        let mut s0 = at_rate(1000.0, 0, 2, Some(5));
        let mut s1 = at_rate(1000.0, 1, 2, Some(5));
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
        let mut s = at_rate(1000.0, 0, 1, None);
        assert_eq!(s.pop_due(0), Some(0));
        assert_eq!(s.give_up_due(9_500_000), 9);
        assert_eq!(s.give_up_due(9_500_000), 0);
        assert_eq!(s.peek(), Some(10_000_000));
    }

    #[test]
    fn sends_older_than_the_wait_are_dropped() {
        let mut s = at_rate(1000.0, 0, 1, None);
        // At 100 ms, with a 30 ms wait: sends due at 0..=70 ms are dropped.
        assert_eq!(s.drop_stale(100_000_000, 30_000_000), 71);
        assert_eq!(s.drop_stale(100_000_000, 30_000_000), 0);
        assert_eq!(s.peek(), Some(71_000_000));
    }

    #[test]
    fn what_is_given_up_is_counted_without_a_step_per_send() {
        // 10^8/s, one second behind: 10^8 + 1 sends due (0, 10, 20 … ns);
        // one by one this took seconds, a search takes microseconds.
        let mut s = at_rate(1e8, 0, 1, None);
        let t = std::time::Instant::now();
        assert_eq!(s.give_up_due(1_000_000_000), 100_000_001);
        assert_eq!(s.peek(), Some(1_000_000_010));
        assert!(t.elapsed() < std::time::Duration::from_millis(100));
        // Every count agrees with taking the sends one at a time, for each
        // worker's share, up to the `-n` limit.
        for (thread, threads, limit, until) in [
            (0, 1, None, 0),
            (1, 3, None, 99_999_999),
            (2, 3, Some(50), u64::MAX),
            (0, 2, Some(7), 3_000_000),
        ] {
            let mut fast = at_rate(1000.0, thread, threads, limit);
            let mut slow = fast.clone();
            let mut n = 0;
            while slow.pop_due(until).is_some() {
                n += 1;
            }
            assert_eq!(
                fast.give_up_due(until),
                n,
                "{thread}/{threads} {limit:?} {until}"
            );
            assert_eq!((fast.peek(), fast.done()), (slow.peek(), slow.done()));
        }
    }

    #[test]
    fn schedule_has_no_drift_over_a_long_run() {
        let s = at_rate(3.0, 0, 1, None);
        // 3 req/s: request 3_000_000 is due at exactly 1_000_000 s.
        assert_eq!(s.intended(3_000_000), 1_000_000 * 1_000_000_000);
    }
}
