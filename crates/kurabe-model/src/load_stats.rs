//! A load's measurements: per-thread HDR histograms and counters
//! ([`Stats`]), their exact merge, the report figures they make
//! ([`Stats::fill_report`]) and the live look at a running load
//! ([`Snapshot`]) that observers (the live view, Prometheus, the fleet)
//! read.
//!
//! Each engine worker owns one [`Stats`] and touches nothing shared per
//! request; the merge happens once, after all workers have finished (or on
//! the coordinator, for a fleet's workers). Memory is fixed at creation (HDR
//! histograms with a fixed range), whatever the request count. With more
//! than one request name, each name also has a latency histogram of its own
//! (2 significant digits, growing to at most the same range) and its counts
//! in [`Counters::names`]: the per-request breakdown, merged by name as
//! exactly as the whole.
//!
//! Owns the histograms, their merge and their summaries. Must not read
//! clocks, do I/O or spawn threads: the engine times and records, this
//! module adds up.

use hdrhistogram::Histogram;
use std::time::Duration;

use crate::counters::{Counters, NameCounts};
use crate::failures::FailureKind;
use crate::http::{
    ConnectionTimes, HttpReport, LatencySummary, PercentileValue, PhaseTimes, RateInfo,
    RequestStats,
};

/// Highest latency the histograms track exactly (1 hour in µs); larger values saturate.
const MAX_US: u64 = 3_600_000_000;

/// ab's percentile table rows. 99.9 is not one: it is `latency_us.p999`,
/// and a second row from the total-time histogram gave it two values.
pub const PERCENTILES: [f64; 9] = [50.0, 66.0, 75.0, 80.0, 90.0, 95.0, 98.0, 99.0, 100.0];

/// An empty latency histogram: 1 µs .. 1 h, 3 significant digits.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, 3).expect("static histogram bounds are valid")
}

/// A request name's latency histogram: 2 significant digits, starting small
/// and growing with the largest value recorded (at most ~26 KiB at `MAX_US`).
pub fn name_histogram() -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 2, 2).expect("static histogram bounds are valid");
    h.auto(true);
    h
}

/// What one worker thread, one run or (merged) several hosts measured: HDR
/// histograms with fixed bounds and counters. Merging two is exact: histogram
/// counts and counters add, nothing is averaged.
#[derive(Clone)]
pub struct Stats {
    /// Request latency, µs (open model: from the intended send time).
    pub total: Histogram<u64>,
    /// ab's Connect phase, µs.
    pub connect: Histogram<u64>,
    /// ab's Processing phase, µs.
    pub processing: Histogram<u64>,
    /// ab's Waiting phase (time to first byte), µs.
    pub waiting: Histogram<u64>,
    /// Latency from the actual send (open model only; the main histogram is from the intended send).
    pub uncorrected: Histogram<u64>,
    /// Everything counted besides the histograms (the one counters type of
    /// the engine, the fleet and the reports).
    pub counters: Counters,
    /// Latency per request name, µs, by the index of `counters.names`
    /// (empty with one name: the whole is its row).
    pub name_latency: Vec<Histogram<u64>>,
}

impl Default for Stats {
    fn default() -> Self {
        Self::new()
    }
}

impl Stats {
    /// Empty histograms (1 µs .. 1 h, 3 significant digits) and zero counters.
    pub fn new() -> Self {
        Stats {
            total: histogram(),
            connect: histogram(),
            processing: histogram(),
            waiting: histogram(),
            uncorrected: histogram(),
            counters: Counters::default(),
            name_latency: Vec::new(),
        }
    }

    /// [`Stats::new`] with a row per name when there is more than one.
    pub fn for_names(names: &[String]) -> Self {
        let mut s = Stats::new();
        if names.len() > 1 {
            s.counters.names = names.iter().map(|n| NameCounts::new(n)).collect();
            s.name_latency = names.iter().map(|_| name_histogram()).collect();
        }
        s
    }

    /// [`Stats::new`] with a row per name, however many (a streamed set's
    /// names come during the run: [`Stats::grow`]).
    pub fn with_rows(names: &[String]) -> Self {
        let mut s = Stats::new();
        s.grow(names);
        s
    }

    /// Rows for the names beyond those it has (`names` extends its own).
    pub fn grow(&mut self, names: &[String]) {
        for n in names.iter().skip(self.counters.names.len()) {
            self.counters.names.push(NameCounts::new(n));
            self.name_latency.push(name_histogram());
        }
    }

    /// Forget everything (end of warm-up), keeping the names' rows.
    pub fn clear(&mut self) {
        let names: Vec<String> = self.counters.names.drain(..).map(|n| n.name).collect();
        *self = Stats::with_rows(&names);
    }

    /// Count `n` failures of `kind`.
    #[inline]
    pub fn fail(&mut self, kind: FailureKind, n: u64) {
        self.counters.failures.add(kind, n);
    }

    /// Count `n` failures of `kind` for request name `name` too (nothing
    /// with one name).
    #[inline]
    pub fn fail_name(&mut self, name: u16, kind: FailureKind, n: u64) {
        if let Some(row) = self.counters.names.get_mut(usize::from(name)) {
            row.failures.add(kind, n);
        }
    }

    /// Whether a failure of `kind` still lacks its first error text.
    #[inline]
    pub fn wants_error(&self, kind: FailureKind) -> bool {
        !self.counters.first_errors.contains_key(kind.name())
    }

    /// Keep `text` as the first error of `kind` unless one is already kept.
    pub fn note_error(&mut self, kind: FailureKind, text: String) {
        self.counters
            .first_errors
            .entry(kind.name().to_owned())
            .or_insert(text);
    }

    /// Add `o` into `self`: histogram counts and every counter add up.
    pub fn merge(&mut self, o: &Stats) {
        // Same bounds on both sides: adding cannot fail.
        let _ = self.total.add(&o.total);
        let _ = self.connect.add(&o.connect);
        let _ = self.processing.add(&o.processing);
        let _ = self.waiting.add(&o.waiting);
        let _ = self.uncorrected.add(&o.uncorrected);
        // Names merge by name: rows `self` lacks are appended in `o`'s order.
        self.counters.merge(&o.counters);
        for (i, row) in o.counters.names.iter().enumerate() {
            let Some(j) = self.counters.names.iter().position(|r| r.name == row.name) else {
                continue;
            };
            while self.name_latency.len() <= j {
                self.name_latency.push(name_histogram());
            }
            if let Some(h) = o.name_latency.get(i) {
                let _ = self.name_latency[j].add(h);
            }
        }
    }

    /// One row of the breakdown per request name (none with one name),
    /// req/s over `duration_s`.
    pub fn breakdown(&self, duration_s: f64) -> Vec<RequestStats> {
        if self.counters.names.len() < 2 {
            // One name's row is the whole (a streamed set keeps one anyway).
            return Vec::new();
        }
        let empty = name_histogram();
        self.counters
            .names
            .iter()
            .enumerate()
            .map(|(i, n)| RequestStats {
                name: n.name.clone(),
                complete_requests: n.completed,
                failed_requests: n.failures.total(),
                failures: n.failures,
                requests_per_second: if duration_s > 0.0 {
                    n.completed as f64 / duration_s
                } else {
                    0.0
                },
                latency_us: summary(self.name_latency.get(i).unwrap_or(&empty)),
                status_codes: n.status_codes(),
                body_bytes: n.body_bytes,
            })
            .collect()
    }

    /// ab's connection times table (Connect, Processing, Waiting, Total).
    pub fn connection_times(&self) -> ConnectionTimes {
        ConnectionTimes {
            connect: phase(&self.connect),
            processing: phase(&self.processing),
            waiting: phase(&self.waiting),
            total: phase(&self.total),
        }
    }

    /// ab's percentile table ([`PERCENTILES`]) of the total latency.
    pub fn percentiles(&self) -> Vec<PercentileValue> {
        PERCENTILES
            .iter()
            .map(|&p| PercentileValue {
                percentile: p,
                latency_us: if self.total.is_empty() {
                    0
                } else if p >= 100.0 {
                    self.total.max()
                } else {
                    self.total.value_at_quantile(p / 100.0)
                },
            })
            .collect()
    }

    /// ab's `-e` rows: for i = 0..=100 the latency at ab's index
    /// `0.5 + count·i/100` into the sorted latencies (0: the fastest, 100:
    /// the slowest); empty when nothing completed.
    pub fn percent_served(&self) -> Vec<u64> {
        let count = self.total.len();
        if count == 0 {
            return Vec::new();
        }
        (0..=100u64)
            .map(|i| match i {
                0 => self.total.min(),
                100 => self.total.max(),
                _ => {
                    let idx = ((0.5 + count as f64 * i as f64 / 100.0) as u64).min(count - 1);
                    // Rank idx + 1 of count; the half keeps the ceiling off float noise.
                    self.total
                        .value_at_quantile((idx as f64 + 0.5) / count as f64)
                }
            })
            .collect()
    }

    /// The open model's block: `requested` req/s against what was sent over `duration_s`.
    pub fn rate_info(&self, requested: f64, duration_s: f64) -> RateInfo {
        RateInfo {
            requested_per_s: requested,
            achieved_per_s: if duration_s > 0.0 {
                self.counters.sent_requests as f64 / duration_s
            } else {
                0.0
            },
            latency_uncorrected_us: summary(&self.uncorrected),
            late_sends: self.counters.late_sends,
            dropped_sends: self.counters.dropped_sends,
        }
    }

    /// Set every field of `report` that comes from histograms and counters
    /// (counts, failures, status codes, bytes, req/s over `report.duration_s`,
    /// latency summary and percentiles, ab's connection times, the open-model
    /// rate block for `rate`). One run and a merge of many use this same
    /// function, so a merged report reads exactly like one client's.
    pub fn fill_report(&self, report: &mut HttpReport, rate: Option<f64>) {
        let duration_s = report.duration_s;
        self.counters.fill_report(report);
        report.requests_per_second = if duration_s > 0.0 {
            self.counters.completed as f64 / duration_s
        } else {
            0.0
        };
        report.latency_us = summary(&self.total);
        report.latency_percentiles_us = self.percentiles();
        report.connection_times_us = self.connection_times();
        report.percent_served_us = self.percent_served();
        report.rate = rate.map(|r| self.rate_info(r, duration_s));
        report.requests = self.breakdown(duration_s);
    }
}

/// Summary of a latency histogram (all zero when empty).
pub fn summary(h: &Histogram<u64>) -> LatencySummary {
    if h.is_empty() {
        return LatencySummary::default();
    }
    LatencySummary {
        min: h.min(),
        mean: h.mean(),
        stdev: h.stdev(),
        p50: h.value_at_quantile(0.50),
        p90: h.value_at_quantile(0.90),
        p99: h.value_at_quantile(0.99),
        p999: h.value_at_quantile(0.999),
        max: h.max(),
    }
}

fn phase(h: &Histogram<u64>) -> PhaseTimes {
    if h.is_empty() {
        return PhaseTimes::default();
    }
    PhaseTimes {
        min: h.min(),
        mean: h.mean(),
        sd: h.stdev(),
        median: h.value_at_quantile(0.5),
        max: h.max(),
    }
}

/// One request's times as ab's `-g` file lists them: when it started
/// (wall clock) and its phases, µs. The engine hands them to the `-g` tap;
/// the line they make is kurabe-report's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestTimes {
    /// Start, µs since the Unix epoch.
    pub start_unix_us: u64,
    /// ab's ctime: connecting.
    pub connect_us: u64,
    /// ab's dtime: processing (the total less connecting).
    pub processing_us: u64,
    /// ab's ttime: the whole request.
    pub total_us: u64,
    /// ab's wait: to the first byte of the response.
    pub wait_us: u64,
}

/// A look at a running load, for live views (issue 26): every worker's
/// figures as it last published them (≤ ~50 ms old), merged, covering the
/// measured phase only (empty during a warm-up).
#[derive(Clone)]
pub struct Snapshot {
    /// Time since the load began (warm-up included).
    pub elapsed: Duration,
    /// Time since the measured phase began (zero during a warm-up).
    pub measured: Duration,
    /// Request latency so far, µs, as the report's histogram counts it
    /// (open model: from the intended send time).
    pub latency: Histogram<u64>,
    /// Latency by request name, µs, by the index of `counters.names`
    /// (empty with one name: the whole is its row).
    pub name_latency: Vec<Histogram<u64>>,
    /// Everything counted so far (completed, failures by bucket, status
    /// codes, sent requests, …).
    pub counters: Counters,
    /// Requests written and not yet answered.
    pub in_flight: u64,
    /// The load is over and these are its final figures (the last
    /// snapshot, taken after every worker stopped: they match the report).
    pub finished: bool,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("elapsed", &self.elapsed)
            .field("measured", &self.measured)
            .field("requests", &self.latency.len())
            .field("counters", &self.counters)
            .field("in_flight", &self.in_flight)
            .field("finished", &self.finished)
            .finish()
    }
}

impl Snapshot {
    /// Nothing measured yet.
    pub fn empty() -> Snapshot {
        Snapshot {
            elapsed: Duration::ZERO,
            measured: Duration::ZERO,
            latency: histogram(),
            name_latency: Vec::new(),
            counters: Counters::default(),
            in_flight: 0,
            finished: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_adds_counts_and_histograms() {
        let mut a = Stats::new();
        let mut b = Stats::new();
        a.total.record(100).unwrap();
        b.total.record(300).unwrap();
        a.counters.completed = 1;
        b.counters.completed = 1;
        b.counters.status.count(200);
        b.fail(FailureKind::Timeout, 2);
        a.merge(&b);
        assert_eq!(a.counters.completed, 2);
        assert_eq!(a.counters.failures.timeout, 2);
        assert_eq!(a.counters.status_codes().get("200"), Some(&1));
        assert_eq!(a.total.len(), 2);
        let p = a.percentiles();
        assert_eq!(p.len(), 9);
        assert!(
            p.iter().all(|x| x.percentile != 99.9),
            "p99.9 is latency_us.p999 only"
        );
        assert!(p.last().unwrap().latency_us >= 300);
        assert!((summary(&a.total).mean - 200.0).abs() < 1.0);
    }

    /// Record `values` (name index, latency) as `record` does for a name's row.
    fn feed(s: &mut Stats, values: &[(usize, u64)]) {
        for &(i, v) in values {
            s.counters.names[i].answered(200 + i as u16, 10);
            s.name_latency[i].record(v).unwrap();
        }
    }

    #[test]
    fn per_name_histograms_merge_exactly() {
        let names = ["a".to_owned(), "b".to_owned()];
        let values: Vec<(usize, u64)> = (1..5000u64)
            .map(|i| ((i % 3 == 0) as usize, i * 7919 % 2_000_000 + 1))
            .collect();
        let (left, right) = values.split_at(1234);
        let (mut one, mut two) = (Stats::for_names(&names), Stats::for_names(&names));
        feed(&mut one, left);
        feed(&mut two, right);
        let mut all = Stats::for_names(&names);
        feed(&mut all, &values);
        // Into an empty total, as the thread join and the fleet merge start.
        let mut merged = Stats::new();
        merged.merge(&one);
        merged.merge(&two);
        assert_eq!(merged.name_latency, all.name_latency);
        assert_eq!(merged.counters.names, all.counters.names);
        let (m, a) = (merged.breakdown(2.0), all.breakdown(2.0));
        assert_eq!(m, a);
        assert_eq!(
            m[1].complete_requests,
            values.iter().filter(|v| v.0 == 1).count() as u64
        );
        assert_eq!(m[1].status_codes.get("201"), Some(&m[1].complete_requests));
        assert!((m[0].requests_per_second - m[0].complete_requests as f64 / 2.0).abs() < 1e-9);
    }

    #[test]
    fn one_name_has_no_rows_and_clear_keeps_the_names() {
        assert!(Stats::for_names(&["only".to_owned()])
            .breakdown(1.0)
            .is_empty());
        let mut s = Stats::for_names(&["a".to_owned(), "b".to_owned()]);
        feed(&mut s, &[(1, 5)]);
        s.fail_name(0, FailureKind::Check, 2);
        s.clear();
        let rows = s.breakdown(1.0);
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[1].name.as_str(), rows[1].complete_requests), ("b", 0));
        assert_eq!(rows[0].failures.check, 0);
    }

    #[test]
    fn clear_forgets_warmup() {
        let mut a = Stats::new();
        a.total.record(5).unwrap();
        a.counters.completed = 3;
        a.clear();
        assert_eq!(a.counters.completed, 0);
        assert!(a.total.is_empty());
    }
}
