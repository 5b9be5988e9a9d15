//! The board: the live figures of one load, rebuilt from each engine
//! snapshot into an immutable [`Frame`] that every view (the Prometheus
//! endpoint, the terminal view) reads without holding a lock.
//!
//! Owns the arithmetic of "now": rates over the last second, percentiles
//! of the last [`RECENT`] and of the whole run, histogram buckets, the ETA.
//! Must not render or do I/O; a reader only clones an `Arc`, so no view
//! can make the engine's observer thread wait for more than that.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use hdrhistogram::Histogram;
use kurabe_http::load::{Observer, Progress};
use kurabe_model::counters::Counters;
use kurabe_model::load_stats::Snapshot;
use kurabe_model::probe::WatchPoint;
use kurabe_model::stage::Executor;

/// How far back "the last seconds" reach (the recent percentiles).
pub const RECENT: Duration = Duration::from_secs(5);
/// The window of the rates.
const RATE_WINDOW: Duration = Duration::from_secs(1);
/// How often the board wants a snapshot.
pub const INTERVAL: Duration = Duration::from_millis(100);

/// Upper bounds of the latency histogram's buckets, seconds: powers of
/// √2 from 2⁻¹⁷ s (7.6 µs) to 2⁶ s (64 s), the boundaries of a Prometheus
/// native histogram of schema 1, so a classic histogram scraped from here
/// converts to a native one without re-bucketing.
pub fn bucket_bounds() -> Vec<f64> {
    (-34..=12).map(|k| 2f64.powf(f64::from(k) / 2.0)).collect()
}

/// What the board knows of the run before it starts.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    /// The run's name: its URL, or a request set's file.
    pub name: String,
    /// The request method; empty when each request has its own (a request
    /// set, a replay: their names say the method when not GET).
    pub method: String,
    /// The open model's target rate, requests per second.
    pub target_rate: Option<f64>,
    /// Warm-up before the measured phase.
    pub warmup: Duration,
    /// The measured phase's length, when limited by time (`-t`).
    pub duration: Option<Duration>,
    /// The measured phase's request count, when limited by count (`-n`).
    pub requests: Option<u64>,
    /// The load's stages (`--stage`), in order: each one's length and the
    /// target it ramps to from the previous one's (the first from 0).
    pub stages: Vec<(Duration, f64)>,
    /// The stages ramp open connections (closed model), not a rate.
    pub stages_connections: bool,
    /// Labels every metric of this run carries besides the request's
    /// (a plan's `variant` and `workload`), in order.
    pub labels: Vec<(String, String)>,
}

impl RunInfo {
    /// What a checked `spec` says of the run.
    pub fn of(
        spec: &kurabe_model::load::LoadSpec,
        checked: &kurabe_http::load::Checked,
    ) -> RunInfo {
        let (requests, duration) = checked.stop().limits();
        let set = checked.set_source().map(str::to_owned);
        let many = set.is_some() || spec.replay.is_some();
        RunInfo {
            name: spec.url.clone().or(set).unwrap_or_default(),
            method: match many {
                true => String::new(),
                false => checked.method().to_owned(),
            },
            target_rate: checked.rate(),
            warmup: spec.warmup.map(|d| d.0).unwrap_or_default(),
            duration,
            requests,
            stages: spec
                .stages
                .iter()
                .map(|s| (s.duration.0, s.target))
                .collect(),
            stages_connections: spec.executor == Some(Executor::RampingVus),
            labels: Vec::new(),
        }
    }
}

/// Where a staged load stands at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StageNow {
    /// 1-based number of the current stage (the last once they are over).
    pub index: usize,
    /// Stages in all.
    pub count: usize,
    /// The target the current stage ramps from.
    pub from: f64,
    /// The target it ramps to.
    pub to: f64,
    /// The target now, on the linear ramp.
    pub now: f64,
    /// Time left in the current stage.
    pub left: Duration,
}

impl RunInfo {
    /// Where the stages stand `t` into the measured phase; `None` without
    /// stages.
    pub fn stage_at(&self, t: Duration) -> Option<StageNow> {
        let count = self.stages.len();
        let (mut start, mut from) = (Duration::ZERO, 0.0);
        for (i, &(length, to)) in self.stages.iter().enumerate() {
            let end = start + length;
            if t < end || i + 1 == count {
                let into = t.saturating_sub(start).min(length);
                let frac = match length.is_zero() {
                    true => 1.0,
                    false => into.as_secs_f64() / length.as_secs_f64(),
                };
                return Some(StageNow {
                    index: i + 1,
                    count,
                    from,
                    to,
                    now: from + (to - from) * frac,
                    left: end.saturating_sub(t),
                });
            }
            (start, from) = (end, to);
        }
        None
    }
}

/// p50, p90, p99 and max of some latencies, µs (all 0 when there are none).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Percentiles {
    /// Latencies counted.
    pub count: u64,
    /// Median, µs.
    pub p50_us: u64,
    /// 90th percentile, µs.
    pub p90_us: u64,
    /// 99th percentile, µs.
    pub p99_us: u64,
    /// Largest, µs.
    pub max_us: u64,
}

impl Percentiles {
    fn of(h: &Histogram<u64>) -> Percentiles {
        if h.is_empty() {
            return Percentiles::default();
        }
        Percentiles {
            count: h.len(),
            p50_us: h.value_at_quantile(0.50),
            p90_us: h.value_at_quantile(0.90),
            p99_us: h.value_at_quantile(0.99),
            max_us: h.max(),
        }
    }
}

/// The figures of one moment of the run.
#[derive(Debug, Clone, Default)]
pub struct Frame {
    /// What was known before the run.
    pub info: RunInfo,
    /// Time since the load began (warm-up included).
    pub elapsed: Duration,
    /// Time since the measured phase began.
    pub measured: Duration,
    /// The run is over: these are its final figures, as the report has them.
    pub finished: bool,
    /// Everything counted (measured phase).
    pub counters: Counters,
    /// Requests written and not yet answered.
    pub in_flight: u64,
    /// Requests sent per second over the last second.
    pub sent_rate: f64,
    /// Responses (complete or failed) per second over the last second.
    pub answered_rate: f64,
    /// Latency over the whole measured phase.
    pub whole: Percentiles,
    /// Latency over the last [`RECENT`].
    pub recent: Percentiles,
    /// Cumulative count per [`bucket_bounds`] bound, whole run (the last
    /// bound's count is not all: `whole.count` is the `+Inf` bucket).
    pub buckets: Vec<u64>,
    /// Count per [`bucket_bounds`] bucket (not cumulative) over the last
    /// [`RECENT`], for a live histogram; one more slot for beyond the last.
    pub recent_buckets: Vec<u64>,
    /// Sum of all latencies, seconds (at the histogram's precision).
    pub latency_sum_s: f64,
    /// The local server's newest sample, when one is watched.
    pub server: Option<WatchPoint>,
}

impl Frame {
    /// Where the stages stand now (`None` without stages).
    pub fn stage(&self) -> Option<StageNow> {
        self.info.stage_at(self.measured)
    }

    /// The open model's target rate now: the staged ramp's, else the
    /// run's one rate; `None` in the closed model.
    pub fn target_rate(&self) -> Option<f64> {
        match self.stage() {
            Some(s) if !self.info.stages_connections => Some(s.now),
            Some(_) => None,
            None => self.info.target_rate,
        }
    }

    /// Time left by the run's limit (`-t`, or `-n` at the current rate).
    pub fn eta(&self) -> Option<Duration> {
        if self.finished {
            return Some(Duration::ZERO);
        }
        if let Some(d) = self.info.duration {
            return Some((d + self.info.warmup).saturating_sub(self.elapsed));
        }
        let n = self.info.requests?;
        let done = self.counters.completed + self.counters.failures.total();
        let rate = self.answered_rate;
        (rate > 0.0).then(|| Duration::from_secs_f64(n.saturating_sub(done) as f64 / rate))
    }
}

/// One snapshot's counts, kept for the rates.
#[derive(Debug, Clone, Copy)]
struct Tick {
    at: Duration,
    sent: u64,
    answered: u64,
}

/// What the board keeps between snapshots.
#[derive(Default)]
struct State {
    ticks: VecDeque<Tick>,
    /// The whole-run histogram as it stood about once a second.
    marks: VecDeque<(Duration, Histogram<u64>)>,
    server: Option<WatchPoint>,
}

/// The live figures of one load; an [`Observer`] that feeds itself.
pub struct Board {
    info: RunInfo,
    bounds: Vec<f64>,
    state: Mutex<State>,
    frame: Mutex<Arc<Frame>>,
}

impl std::fmt::Debug for Board {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Board").field("info", &self.info).finish()
    }
}

/// Lock, whatever a panicking holder left: the figures are still figures.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Board {
    /// A board for a run described by `info`, with an empty first frame.
    pub fn new(info: RunInfo) -> Board {
        let bounds = bucket_bounds();
        let frame = Frame {
            info: info.clone(),
            buckets: vec![0; bounds.len()],
            recent_buckets: vec![0; bounds.len() + 1],
            ..Frame::default()
        };
        Board {
            info,
            bounds,
            state: Mutex::new(State::default()),
            frame: Mutex::new(Arc::new(frame)),
        }
    }

    /// The newest frame.
    pub fn frame(&self) -> Arc<Frame> {
        Arc::clone(&lock(&self.frame))
    }

    /// Take in one engine snapshot.
    pub fn update(&self, s: &Snapshot) {
        let mut st = lock(&self.state);
        let answered = s.counters.completed + s.counters.failures.total();
        let now = s.measured;
        st.ticks.push_back(Tick {
            at: now,
            sent: s.counters.sent_requests,
            answered,
        });
        while st.ticks.len() > 2 && st.ticks[1].at + RATE_WINDOW <= now {
            st.ticks.pop_front();
        }
        let (first, last) = (st.ticks[0], st.ticks[st.ticks.len() - 1]);
        let dt = (last.at.saturating_sub(first.at)).as_secs_f64();
        let per_s = |a: u64, b: u64| {
            if dt > 0.0 {
                (a.saturating_sub(b)) as f64 / dt
            } else {
                0.0
            }
        };
        let recent = self.recent(&mut st, s);
        let mut buckets = vec![0; self.bounds.len()];
        let mut recent_buckets = vec![0; self.bounds.len() + 1];
        // A value counts at the low end of its HDR bucket: 2 s exactly is
        // in `le="2"` (the histogram's precision is 0.1 %).
        let low = |h: &Histogram<u64>, v: u64| h.lowest_equivalent(v);
        for v in s.latency.iter_recorded() {
            let i = self.bucket_of(low(&s.latency, v.value_iterated_to()));
            if let Some(b) = buckets.get_mut(i) {
                *b += v.count_at_value();
            }
        }
        for i in 1..buckets.len() {
            buckets[i] += buckets[i - 1];
        }
        for v in recent.iter_recorded() {
            recent_buckets[self.bucket_of(low(&recent, v.value_iterated_to()))] +=
                v.count_at_value();
        }
        let frame = Frame {
            info: self.info.clone(),
            elapsed: s.elapsed,
            measured: s.measured,
            finished: s.finished,
            counters: s.counters.clone(),
            in_flight: s.in_flight,
            sent_rate: per_s(last.sent, first.sent),
            answered_rate: per_s(last.answered, first.answered),
            whole: Percentiles::of(&s.latency),
            recent: Percentiles::of(&recent),
            buckets,
            recent_buckets,
            latency_sum_s: s.latency.mean() * s.latency.len() as f64 * 1e-6,
            server: st.server,
        };
        drop(st);
        *lock(&self.frame) = Arc::new(frame);
    }

    /// The histogram of the last [`RECENT`]: the whole run's less what it
    /// was at the oldest mark still inside the window.
    fn recent(&self, st: &mut State, s: &Snapshot) -> Histogram<u64> {
        let now = s.measured;
        if st
            .marks
            .back()
            .is_none_or(|(at, _)| *at + Duration::from_secs(1) <= now)
        {
            st.marks.push_back((now, s.latency.clone()));
        }
        while st.marks.len() > 1 && st.marks[1].0 + RECENT <= now {
            st.marks.pop_front();
        }
        let mut recent = s.latency.clone();
        if let Some((_, old)) = st.marks.front() {
            if recent.subtract(old).is_err() {
                recent = s.latency.clone();
            }
        }
        recent
    }

    /// The index of the first bound at or above `us` (the number of bounds
    /// when above them all).
    fn bucket_of(&self, us: u64) -> usize {
        let s = us as f64 * 1e-6;
        self.bounds.partition_point(|&b| b < s)
    }

    /// Take in the server's newest sample.
    pub fn server(&self, point: &WatchPoint) {
        lock(&self.state).server = Some(*point);
        let mut frame = lock(&self.frame);
        let mut f = Frame::clone(&frame);
        f.server = Some(*point);
        *frame = Arc::new(f);
    }
}

impl Observer for Board {
    fn progress_interval(&self) -> Option<Duration> {
        Some(INTERVAL)
    }

    fn progress(&self, _progress: Progress) {}

    fn wants_snapshots(&self) -> bool {
        true
    }

    fn snapshot(&self, snapshot: &Snapshot) {
        self.update(snapshot);
    }

    fn watches_server(&self) -> bool {
        true
    }

    fn server(&self, point: &WatchPoint) {
        Board::server(self, point);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(at_ms: u64, latencies_us: &[u64], sent: u64) -> Snapshot {
        let mut s = Snapshot::empty();
        s.elapsed = Duration::from_millis(at_ms);
        s.measured = s.elapsed;
        for &v in latencies_us {
            s.latency.record(v).unwrap();
        }
        s.counters.completed = latencies_us.len() as u64;
        s.counters.sent_requests = sent;
        s
    }

    #[test]
    fn bounds_are_schema_1_native_boundaries() {
        let b = bucket_bounds();
        assert_eq!(b.len(), 47);
        assert_eq!(b[0], 2f64.powi(-17));
        assert_eq!(*b.last().unwrap(), 64.0);
        assert!(b
            .windows(2)
            .all(|w| (w[1] / w[0] - 2f64.sqrt()).abs() < 1e-12));
    }

    #[test]
    fn rates_come_from_the_last_second_and_buckets_are_cumulative() {
        let board = Board::new(RunInfo::default());
        board.update(&snapshot(0, &[], 0));
        board.update(&snapshot(500, &[100; 50], 60));
        board.update(&snapshot(1000, &[100; 100], 110));
        let f = board.frame();
        assert!((f.sent_rate - 110.0).abs() < 1e-9, "{}", f.sent_rate);
        assert!((f.answered_rate - 100.0).abs() < 1e-9);
        // 2 s on: the window starts at the 1 s tick, not at 0.
        let mut lat = vec![100; 100];
        lat.extend([3000; 300]);
        board.update(&snapshot(2000, &lat, 410));
        let f = board.frame();
        assert!((f.sent_rate - 300.0).abs() < 1e-9, "{}", f.sent_rate);
        let i = board.bucket_of(100);
        assert_eq!((f.buckets[i - 1], f.buckets[i]), (0, 100));
        assert_eq!(*f.buckets.last().unwrap(), 400);
        assert_eq!((f.whole.count, f.whole.max_us), (400, 3001));
        assert!((f.latency_sum_s - (100.0 * 100e-6 + 300.0 * 3001e-6)).abs() < 1e-3);
    }

    #[test]
    fn recent_percentiles_forget_what_is_older_than_the_window() {
        let board = Board::new(RunInfo::default());
        board.update(&snapshot(0, &[], 0));
        board.update(&snapshot(1000, &[50_000; 10], 10));
        let mut lat = vec![50_000; 10];
        lat.extend([100; 1000]);
        for t in 2..=7 {
            board.update(&snapshot(t * 1000, &lat, 1010));
        }
        let f = board.frame();
        assert_eq!(f.whole.max_us, 50_015);
        // The slow ones came before the oldest mark inside the last 5 s.
        assert_eq!(f.recent.count, 0);
        let board = Board::new(RunInfo::default());
        board.update(&snapshot(0, &[], 0));
        board.update(&snapshot(1000, &lat, 1010));
        assert_eq!(board.frame().recent.max_us, 50_015);
    }

    #[test]
    fn eta_from_the_time_limit_or_from_the_rate() {
        let mut info = RunInfo {
            duration: Some(Duration::from_secs(10)),
            warmup: Duration::from_secs(2),
            ..RunInfo::default()
        };
        let board = Board::new(info.clone());
        board.update(&snapshot(4000, &[], 0));
        assert_eq!(board.frame().eta(), Some(Duration::from_secs(8)));
        info.duration = None;
        info.requests = Some(300);
        let board = Board::new(info);
        board.update(&snapshot(0, &[], 0));
        board.update(&snapshot(1000, &[100; 100], 100));
        assert_eq!(board.frame().eta(), Some(Duration::from_secs(2)));
    }

    #[test]
    fn stages_say_where_the_ramp_stands_and_the_target_rate_follows() {
        let secs = Duration::from_secs;
        let info = RunInfo {
            target_rate: Some(150.0),
            stages: vec![(secs(10), 200.0), (secs(20), 200.0), (secs(10), 0.0)],
            ..RunInfo::default()
        };
        let at = |t: u64| info.stage_at(secs(t)).unwrap();
        assert_eq!((at(5).index, at(5).now, at(5).left), (1, 100.0, secs(5)));
        assert_eq!((at(10).index, at(10).from, at(10).to), (2, 200.0, 200.0));
        assert_eq!((at(35).index, at(35).now, at(35).count), (3, 100.0, 3));
        // Past the end: the last stage, nothing left, its end's target.
        assert_eq!((at(99).index, at(99).now, at(99).left), (3, 0.0, secs(0)));
        let board = Board::new(info);
        board.update(&snapshot(5000, &[100], 1));
        // The view and the gauge say the ramp's rate now, not the mean.
        assert_eq!(board.frame().target_rate(), Some(100.0));
        assert_eq!(RunInfo::default().stage_at(secs(1)), None);
        let closed = Board::new(RunInfo {
            stages: vec![(secs(10), 50.0)],
            stages_connections: true,
            ..RunInfo::default()
        });
        closed.update(&snapshot(2000, &[100], 1));
        assert_eq!(closed.frame().target_rate(), None);
        assert_eq!(closed.frame().stage().unwrap().now, 10.0);
    }
}
