//! The per-second series of a run (issue 25): each worker cuts its figures
//! at every whole second of the measured phase and hands the second's
//! counts and latency histogram to the run's [`Collector`], which merges
//! the workers' shares of that second, keeps its percentiles as numbers
//! and recycles the histogram.
//!
//! Why the counts are differences of the worker's running totals: so the
//! rows add up to the report's totals exactly, whatever happens between
//! two cuts. A worker cuts when its clock passes a second's end (checked
//! once per turn and per answer: one comparison), so a response is in the
//! second its worker read the clock for it.
//!
//! Memory: one histogram per worker plus one per second not yet reported
//! by every worker (workers cut within a tick, ≤ 20 ms, of each other), and
//! ~100 bytes per finished second. Owns the cut, the merge and the rows.
//! Must not read the clock or be touched per request beyond the record.

use std::collections::BTreeMap;
use std::sync::Mutex;

use hdrhistogram::Histogram;
use kurabe_model::counters::Counters;
use kurabe_model::series::Interval;

/// One second, ns.
pub(crate) const SECOND_NS: u64 = 1_000_000_000;

/// The counts a row takes from a worker's running totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    sent: u64,
    completed: u64,
    failed: u64,
    dropped: u64,
}

impl Counts {
    fn of(c: &Counters) -> Counts {
        Counts {
            sent: c.sent_requests,
            completed: c.completed,
            failed: c.failures.total(),
            dropped: c.dropped_sends,
        }
    }

    fn minus(self, o: Counts) -> Counts {
        Counts {
            sent: self.sent - o.sent,
            completed: self.completed - o.completed,
            failed: self.failed - o.failed,
            dropped: self.dropped - o.dropped,
        }
    }

    fn add(&mut self, o: Counts) {
        self.sent += o.sent;
        self.completed += o.completed;
        self.failed += o.failed;
        self.dropped += o.dropped;
    }
}

/// A second some workers have reported.
struct Row {
    reported: u64,
    counts: Counts,
    latency: Histogram<u64>,
}

/// What the collector holds behind its lock.
struct Rows {
    pending: BTreeMap<u64, Row>,
    done: BTreeMap<u64, (Counts, [u64; 4])>,
    /// Per worker that made its last cut: the last second it reported
    /// (none: it never measured). It accounts for the seconds after that.
    retired: Vec<Option<u64>>,
    spare: Vec<Histogram<u64>>,
}

/// The rows of one run, shared by its workers.
pub(crate) struct Collector {
    workers: u64,
    rows: Mutex<Rows>,
}

impl Collector {
    /// A collector for `workers` workers.
    pub(crate) fn new(workers: u64) -> Collector {
        Collector {
            workers: workers.max(1),
            rows: Mutex::new(Rows {
                pending: BTreeMap::new(),
                done: BTreeMap::new(),
                retired: Vec::new(),
                spare: Vec::new(),
            }),
        }
    }

    /// A worker's share of second `index`; `latency` is merged and reset.
    fn report(&self, index: u64, counts: Counts, latency: &mut Histogram<u64>) {
        let Ok(mut rows) = self.rows.lock() else {
            return;
        };
        let rows = &mut *rows;
        let row = rows.pending.entry(index).or_insert_with(|| Row {
            reported: 0,
            counts: Counts::default(),
            latency: rows.spare.pop().unwrap_or_else(|| empty_like(latency)),
        });
        row.reported += 1;
        row.counts.add(counts);
        if !latency.is_empty() {
            // Same bounds on both sides: adding cannot fail.
            let _ = row.latency.add(&*latency);
            latency.reset();
        }
        rows.settle(self.workers);
    }

    /// A worker has made its last cut: later seconds wait for the others only.
    fn retire(&self, last: Option<u64>) {
        if let Ok(mut rows) = self.rows.lock() {
            rows.retired.push(last);
            rows.settle(self.workers);
        }
    }

    /// The rows of a measured phase that lasted `length_ns`, in order,
    /// each second present (a second nobody reported is zeros); `target`:
    /// the open model's mean target over `[start_s, start_s + duration_s)`.
    pub(crate) fn finish(
        &self,
        length_ns: u64,
        target: impl Fn(f64, f64) -> Option<f64>,
    ) -> Vec<Interval> {
        let Ok(mut rows) = self.rows.lock() else {
            return Vec::new();
        };
        rows.settle(0);
        let last = rows.done.keys().next_back().copied();
        let seconds = length_ns.div_ceil(SECOND_NS).max(last.map_or(0, |l| l + 1));
        (0..seconds)
            .map(|i| {
                let (c, p) = rows.done.get(&i).copied().unwrap_or_default();
                let start = i * SECOND_NS;
                let len = length_ns.saturating_sub(start).min(SECOND_NS);
                interval(i, len, c, p, &target)
            })
            .filter(|r| r.duration_s > 0.0 || r.sent + r.completed + r.failed + r.dropped > 0)
            .collect()
    }
}

impl Rows {
    /// Finish every pending second `workers` have accounted for (0: all).
    fn settle(&mut self, workers: u64) {
        while let Some(entry) = self.pending.first_entry() {
            let index = *entry.key();
            // A retired worker that reported this second is in `reported`.
            let after = |l: &&Option<u64>| l.is_none_or(|l| l < index);
            let retired = self.retired.iter().filter(after).count() as u64;
            if workers > 0 && entry.get().reported + retired < workers {
                return;
            }
            let (index, mut row) = entry.remove_entry();
            let h = &row.latency;
            let p = [
                h.value_at_quantile(0.5),
                h.value_at_quantile(0.9),
                h.value_at_quantile(0.99),
                h.max(),
            ];
            self.done.insert(index, (row.counts, p));
            row.latency.reset();
            self.spare.push(row.latency);
        }
    }
}

/// An empty histogram with `h`'s bounds and precision.
fn empty_like(h: &Histogram<u64>) -> Histogram<u64> {
    let mut e = h.clone();
    e.reset();
    e
}

/// Row `i`, `len_ns` long.
fn interval(
    i: u64,
    len_ns: u64,
    c: Counts,
    [p50, p90, p99, max]: [u64; 4],
    target: &impl Fn(f64, f64) -> Option<f64>,
) -> Interval {
    let (start_s, duration_s) = (i as f64, len_ns as f64 / 1e9);
    Interval {
        start_s,
        duration_s,
        sent: c.sent,
        completed: c.completed,
        failed: c.failed,
        dropped: c.dropped,
        achieved_per_s: if duration_s > 0.0 {
            c.sent as f64 / duration_s
        } else {
            0.0
        },
        target_per_s: target(start_s, duration_s),
        target_connections: None,
        latency_p50_us: p50,
        latency_p90_us: p90,
        latency_p99_us: p99,
        latency_max_us: max,
    }
}

/// A worker's cut: the second it is in, its latency so far in that
/// second, and its running totals at the last cut.
pub(crate) struct Meter {
    /// Monotonic end of the current second.
    next_ns: u64,
    /// End of the run (u64::MAX: none): the second ending there is the
    /// last, cut by [`Meter::close`] with the sends made at the end.
    end_ns: u64,
    index: u64,
    /// Latency of this second's responses, µs.
    pub latency: Histogram<u64>,
    last: Counts,
    on: bool,
}

impl Meter {
    /// A meter whose histograms look like `like`; off until [`Meter::start`].
    pub(crate) fn new(like: &Histogram<u64>) -> Meter {
        Meter {
            next_ns: u64::MAX,
            end_ns: u64::MAX,
            index: 0,
            latency: empty_like(like),
            last: Counts::default(),
            on: false,
        }
    }

    /// The measured phase begins at `at` (counters just cleared) and ends at `end`.
    pub(crate) fn start(&mut self, at: u64, end: u64) {
        self.next_ns = at.saturating_add(SECOND_NS);
        self.end_ns = end;
        self.index = 0;
        self.latency.reset();
        self.last = Counts::default();
        self.on = true;
    }

    /// Whether `now` is past the current second.
    #[inline]
    pub(crate) fn due(&self, now: u64) -> bool {
        now >= self.next_ns && self.next_ns < self.end_ns
    }

    /// Cut every second that ended by `now`, taking the counts from `c`.
    pub(crate) fn cut(&mut self, now: u64, c: &Counters, to: &Collector) {
        while self.on && self.due(now) {
            let cur = Counts::of(c);
            to.report(self.index, cur.minus(self.last), &mut self.latency);
            self.last = cur;
            self.index += 1;
            self.next_ns = self.next_ns.saturating_add(SECOND_NS);
        }
    }

    /// The worker's last cut (the end of its run): its partial second.
    pub(crate) fn close(&mut self, c: &Counters, to: &Collector) {
        let mut last = None;
        if self.on {
            let cur = Counts::of(c);
            to.report(self.index, cur.minus(self.last), &mut self.latency);
            self.on = false;
            last = Some(self.index);
        }
        to.retire(last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist() -> Histogram<u64> {
        Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap()
    }

    #[test]
    fn a_worker_that_closes_first_does_not_settle_the_last_second_alone() {
        let col = Collector::new(2);
        let (mut a, mut b) = (Meter::new(&hist()), Meter::new(&hist()));
        a.start(0, u64::MAX);
        b.start(0, u64::MAX);
        let c = Counters {
            completed: 5,
            sent_requests: 5,
            ..Counters::default()
        };
        // Both close in their first second, a before b.
        a.close(&c, &col);
        b.close(&c, &col);
        let rows = col.finish(SECOND_NS / 2, |_, _| None);
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].sent, rows[0].completed), (10, 10), "{rows:?}");
    }

    #[test]
    fn two_workers_rows_sum_to_their_totals_and_merge_latency() {
        let col = Collector::new(2);
        let (mut a, mut b) = (Meter::new(&hist()), Meter::new(&hist()));
        a.start(0, u64::MAX);
        b.start(0, u64::MAX);
        let (mut ca, mut cb) = (Counters::default(), Counters::default());
        ca.completed = 10;
        ca.sent_requests = 11;
        a.latency.record(1000).unwrap();
        a.cut(SECOND_NS + 5, &ca, &col);
        cb.completed = 4;
        cb.sent_requests = 4;
        b.latency.record(3000).unwrap();
        // b slept through two seconds: its counts go to the first.
        b.cut(3 * SECOND_NS, &cb, &col);
        ca.completed = 15;
        ca.sent_requests = 16;
        ca.failures.timeout = 2;
        a.close(&ca, &col);
        b.close(&cb, &col);
        let rows = col.finish(2 * SECOND_NS + SECOND_NS / 2, |_, _| Some(7.0));
        assert_eq!(rows.len(), 3, "{rows:?}");
        assert_eq!((rows[0].completed, rows[0].sent), (14, 15));
        assert!(
            (3000..=3003).contains(&rows[0].latency_max_us),
            "{:?}",
            rows[0]
        );
        assert!(
            (995..=1001).contains(&rows[0].latency_p50_us),
            "{:?}",
            rows[0]
        );
        assert_eq!((rows[1].completed, rows[1].failed), (5, 2));
        assert_eq!(rows[2].duration_s, 0.5);
        assert_eq!(rows[2].target_per_s, Some(7.0));
        assert_eq!(kurabe_model::series::sums(&rows), (20, 19, 2, 0));
    }

    #[test]
    fn a_second_is_settled_as_soon_as_every_worker_reported_it() {
        let col = Collector::new(2);
        let mut a = Meter::new(&hist());
        a.start(0, u64::MAX);
        a.cut(SECOND_NS, &Counters::default(), &col);
        assert!(col.rows.lock().unwrap().done.is_empty());
        let mut b = Meter::new(&hist());
        b.start(0, u64::MAX);
        b.cut(SECOND_NS, &Counters::default(), &col);
        let rows = col.rows.lock().unwrap();
        assert_eq!(
            (rows.done.len(), rows.pending.len(), rows.spare.len()),
            (1, 0, 1)
        );
    }
}
