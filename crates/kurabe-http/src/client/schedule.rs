//! Who may send the next request: the closed model's shared request budget
//! (`-n`), the open model's constant-arrival schedule (`--rate`) and its
//! ramped form (`--stage 30s:200`: [`Ramp`], the rate linear within each
//! stage, so request `i` is due where the integral of the rate reaches `i`).
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
    /// Stages: the ramped rate (`rate` is then unused).
    ramp: Option<Arc<Ramp>>,
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
            ramp: None,
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

    /// The same schedule following stages' ramp, if any (at most its sends).
    pub fn with_ramp(mut self, ramp: Option<&Arc<Ramp>>) -> Self {
        if let Some(r) = ramp {
            self.limit = self.limit.min(r.sends());
            self.ramp = Some(Arc::clone(r));
        }
        self
    }

    /// Intended send time of global request `i`.
    #[inline]
    pub fn intended(&self, i: u64) -> u64 {
        match (&self.replay, &self.ramp) {
            (Some(r), _) => self.start_ns + r.at(i),
            (None, Some(r)) => self.start_ns + r.at(i),
            (None, None) => self.start_ns + (i as f64 * 1e9 / self.rate) as u64,
        }
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

/// One stage of a ramp: the rate goes linearly from `from` to `to`
/// (requests/s) over `len_s` seconds starting `start_s` into the run,
/// after `before` sends.
#[derive(Debug, Clone, Copy)]
struct Leg {
    start_s: f64,
    len_s: f64,
    from: f64,
    to: f64,
    before: f64,
}

impl Leg {
    /// Sends in this stage.
    fn sends(&self) -> f64 {
        (self.from + self.to) / 2.0 * self.len_s
    }

    /// Seconds into the stage at which `x` of its sends have been due:
    /// the root of `from·τ + (to − from)/(2·len)·τ² = x`, in the form that
    /// stays exact when the rate is flat or starts at 0.
    fn time_of(&self, x: f64) -> f64 {
        if x <= 0.0 {
            return 0.0;
        }
        let a = (self.to - self.from) / (2.0 * self.len_s);
        let disc = (self.from * self.from + 4.0 * a * x).max(0.0);
        (2.0 * x / (self.from + disc.sqrt())).min(self.len_s)
    }

    /// Sends due `t` seconds into the stage.
    fn sends_by(&self, t: f64) -> f64 {
        let t = t.clamp(0.0, self.len_s);
        self.from * t + (self.to - self.from) / (2.0 * self.len_s) * t * t
    }
}

/// The open model's arrival rate ramped linearly between stage targets
/// (`--stage`), starting from 0 requests/s.
#[derive(Debug, Clone)]
pub(crate) struct Ramp {
    legs: Vec<Leg>,
}

impl Ramp {
    /// The ramp through `(duration, target rate)` stages.
    pub fn new(stages: &[(std::time::Duration, f64)]) -> Ramp {
        let (mut legs, mut at, mut before, mut from) = (Vec::new(), 0.0, 0.0, 0.0);
        for &(d, to) in stages {
            let leg = Leg {
                start_s: at,
                len_s: d.as_secs_f64().max(1e-9),
                from,
                to,
                before,
            };
            before += leg.sends();
            at += leg.len_s;
            from = to;
            legs.push(leg);
        }
        Ramp { legs }
    }

    /// How many sends the whole ramp makes.
    pub fn sends(&self) -> u64 {
        self.legs
            .last()
            .map_or(0, |l| (l.before + l.sends()).ceil() as u64)
    }

    /// Sends due in the first `t` seconds.
    pub fn sends_by(&self, t: f64) -> f64 {
        let mut n = 0.0;
        for l in self.legs.iter().filter(|l| l.start_s < t) {
            n = l.before + l.sends_by(t - l.start_s);
        }
        n
    }

    /// The target `t` seconds in: linear within each stage, the last
    /// stage's once the ramp is over.
    pub fn level_at(&self, t: f64) -> f64 {
        match self.legs.iter().find(|l| t < l.start_s + l.len_s) {
            Some(l) => l.from + (l.to - l.from) * ((t - l.start_s).max(0.0) / l.len_s),
            None => self.legs.last().map_or(0.0, |l| l.to),
        }
    }

    /// Intended time of send `i`, ns after the start.
    pub fn at(&self, i: u64) -> u64 {
        let x = i as f64;
        let leg = self
            .legs
            .iter()
            .rev()
            .find(|l| l.before <= x && l.sends() > 0.0)
            .or(self.legs.first());
        let Some(l) = leg else { return 0 };
        ((l.start_s + l.time_of(x - l.before)) * 1e9) as u64
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
    fn a_ramp_sends_where_the_rates_integral_reaches_each_send() {
        let secs = std::time::Duration::from_secs;
        // 0 → 100/s over 10 s (500 sends), 100/s for 10 s (1000), 100 → 0 over 10 s (500).
        let r = Ramp::new(&[(secs(10), 100.0), (secs(10), 100.0), (secs(10), 0.0)]);
        assert_eq!(r.sends(), 2000);
        assert_eq!(r.at(0), 0);
        // 50·t²/10 = 125 at t = 5 s; 500 at 10 s; 1000 at 15 s.
        assert!((r.at(125) as f64 - 5e9).abs() < 1e3, "{}", r.at(125));
        assert!((r.at(500) as f64 - 10e9).abs() < 1e3);
        assert!((r.at(1000) as f64 - 15e9).abs() < 1e3);
        // Ramp down: 1500 + 100·τ − 5·τ² = 1875 at τ = 5.
        assert!((r.at(1875) as f64 - 25e9).abs() < 1e3, "{}", r.at(1875));
        assert!((r.sends_by(25.0) - 1875.0).abs() < 1e-6);
        assert!((0..2000).all(|i| r.at(i) <= r.at(i + 1)), "in order");
        let mut s = Schedule::new(0, 1.0, 0, 1, None).with_ramp(Some(&Arc::new(r)));
        assert_eq!(s.give_up_due(u64::MAX), 2000);
        assert!(s.done());
    }

    #[test]
    fn a_ramps_level_is_linear_within_each_stage() {
        let secs = std::time::Duration::from_secs;
        let r = Ramp::new(&[(secs(10), 100.0), (secs(10), 100.0), (secs(5), 0.0)]);
        let at = |t| r.level_at(t);
        assert_eq!(
            (at(0.0), at(5.0), at(15.0), at(22.5), at(99.0)),
            (0.0, 50.0, 100.0, 50.0, 0.0)
        );
        // Its integral over a second is that second's mean target.
        assert!((r.sends_by(6.0) - r.sends_by(5.0) - 55.0).abs() < 1e-9);
    }

    #[test]
    fn sends_older_than_the_wait_are_dropped() {
        let mut s = Schedule::new(0, 1000.0, 0, 1, None);
        // At 100 ms, with a 30 ms wait: sends due at 0..=70 ms are dropped.
        assert_eq!(s.drop_stale(100_000_000, 30_000_000), 71);
        assert_eq!(s.drop_stale(100_000_000, 30_000_000), 0);
        assert_eq!(s.peek(), Some(71_000_000));
    }

    #[test]
    fn what_is_given_up_is_counted_without_a_step_per_send() {
        // 10^8/s, one second behind: 10^8 + 1 sends due (0, 10, 20 … ns);
        // one by one this took seconds, a search takes microseconds.
        let mut s = Schedule::new(0, 1e8, 0, 1, None);
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
            let mut fast = Schedule::new(0, 1000.0, thread, threads, limit);
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
        let s = Schedule::new(0, 3.0, 0, 1, None);
        // 3 req/s: request 3_000_000 is due at exactly 1_000_000 s.
        assert_eq!(s.intended(3_000_000), 1_000_000 * 1_000_000_000);
    }
}
