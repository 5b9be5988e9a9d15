//! Turning samples into a summary, and a background watcher.
//!
//! [`Recorder`] folds [`Sample`]s into a [`WatchSummary`] (series, CPU
//! percentiles, memory peaks). [`Watcher`] runs a [`TreeSampler`] on its own
//! thread until [`Watcher::stop`]: this is what `kurabe http` uses for the
//! server's CPU and Σ PSS while it generates load.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kurabe_model::probe::{SamplerCost, WatchPoint};
use kurabe_model::run_detail::TreeDetail;

use crate::error::{ProbeError, Result};
use crate::procfs;
use crate::tree::{Sample, SamplerConfig, TreeSampler};

/// Everything a watch measured, before it becomes a report: the tree's
/// summary as runs record it ([`TreeDetail`], the one shape every report
/// reads) and what only a live watch knows besides.
#[derive(Debug, Clone, Default)]
pub struct WatchSummary {
    /// The tree's summary: CPU, memory peaks, processes, the series.
    pub tree: TreeDetail,
    /// 95th percentile of per-interval CPU, percent of one core.
    pub cpu_percent_p95: f64,
    /// Root's VmHWM at its last readable sample.
    pub root_hwm_bytes: Option<u64>,
    /// Peak memory of the cgroup.
    pub cgroup_memory_peak_bytes: Option<u64>,
    /// True when some process's PSS could not be read (its RSS stood in).
    pub pss_unreadable: bool,
    /// Samples that could not be taken (kurabe out of file descriptors);
    /// the next sample taken covers their interval.
    pub samples_skipped: u64,
    /// Why the first skipped sample could not be taken.
    pub skipped_because: Option<String>,
    /// The sampler's own cost.
    pub cost: SamplerCost,
}

impl WatchSummary {
    /// A line for the reader when samples were skipped, saying how many and why.
    pub fn skipped_note(&self) -> Option<String> {
        let why = self.skipped_because.as_deref()?;
        Some(format!(
            "{} of {} samples skipped, the next one covering their time: {why}",
            self.samples_skipped,
            self.tree.samples + self.samples_skipped
        ))
    }
}

/// Folds samples into a [`WatchSummary`].
#[derive(Debug)]
pub struct Recorder {
    start: Instant,
    last: Instant,
    count_first: bool,
    s: WatchSummary,
    pct: Vec<f64>,
    pss_sum: f64,
    pss_n: u64,
    cpu_cum: f64,
}

impl Recorder {
    /// A recorder whose clock starts at `start` (the spawn time for a started
    /// command). `count_first`: the first sample's CPU is real (counted from
    /// the root's start), not a baseline.
    pub fn new(root: u32, start: Instant, count_first: bool) -> Self {
        Self {
            start,
            last: start,
            count_first,
            s: WatchSummary {
                tree: TreeDetail {
                    pid: root,
                    ..TreeDetail::default()
                },
                ..WatchSummary::default()
            },
            pct: Vec::new(),
            pss_sum: 0.0,
            pss_n: 0,
            cpu_cum: 0.0,
        }
    }

    /// Add one sample.
    pub fn push(&mut self, x: &Sample) {
        let at = x.at.unwrap_or_else(Instant::now);
        let wall = at.saturating_duration_since(self.last).as_secs_f64();
        self.last = at;
        let s = &mut self.s.tree;
        s.samples += 1;
        // A counter missing from one sample is missing from the sum.
        s.counters = if s.samples == 1 {
            x.counters
        } else {
            s.counters.plus(&x.counters)
        };
        s.cpu_seconds_proc += x.cpu_seconds_proc;
        if let Some(c) = x.cpu_seconds_cgroup {
            *s.cpu_seconds_cgroup.get_or_insert(0.0) += c;
        }
        let cpu = x.cpu_seconds_cgroup.unwrap_or(x.cpu_seconds_proc);
        self.cpu_cum += cpu;
        let counts = !x.first || self.count_first;
        let cpu_percent = if counts && wall > 0.0 {
            cpu / wall * 100.0
        } else {
            0.0
        };
        if counts && wall > 0.0 {
            self.pct.push(cpu_percent);
        }
        if x.size.rss_bytes > 0 {
            if self.pss_n == 0 {
                s.pss_start_bytes = x.size.pss_bytes;
            }
            self.pss_n += 1;
            self.pss_sum += x.size.pss_bytes as f64;
            s.pss_end_bytes = x.size.pss_bytes;
        }
        add_peaks(&mut self.s, x);
        let t_s = at.saturating_duration_since(self.start).as_secs_f64();
        self.s
            .tree
            .series
            .push(point(x, t_s, cpu_percent, self.cpu_cum));
    }
    /// The newest point of the series.
    pub fn last_point(&self) -> Option<WatchPoint> {
        self.s.tree.series.last().copied()
    }

    /// Count a sample that could not be taken, keeping the first reason.
    pub fn skip(&mut self, why: &ProbeError) {
        self.s.samples_skipped += 1;
        self.s
            .skipped_because
            .get_or_insert_with(|| why.to_string());
    }

    /// Finish at `end` with the sampler that produced the samples.
    pub fn finish(mut self, end: Instant, sampler: &TreeSampler) -> WatchSummary {
        let s = &mut self.s;
        let d = end.saturating_duration_since(self.start).as_secs_f64();
        s.tree.duration_s = d;
        s.tree.pss_mean_bytes = if self.pss_n > 0 {
            (self.pss_sum / self.pss_n as f64) as u64
        } else {
            0
        };
        s.cpu_percent_p95 = percentile(&mut self.pct, 95.0);
        s.tree.cpu_percent_max = self.pct.iter().copied().fold(0.0, f64::max);
        s.cgroup_memory_peak_bytes = sampler.cgroup().and_then(|c| c.memory_peak_bytes());
        let cost = sampler.cost();
        let secs = cost.cpu_ns as f64 / 1e9;
        s.cost = SamplerCost {
            cpu_seconds: secs,
            us_per_process_sample: if cost.process_samples > 0 {
                secs * 1e6 / cost.process_samples as f64
            } else {
                0.0
            },
            cpu_percent: if d > 0.0 { secs / d * 100.0 } else { 0.0 },
            pss_reads_deferred: cost.pss_deferred,
        };
        self.s
    }
}

/// Fold one sample's peaks and flags into the summary.
fn add_peaks(w: &mut WatchSummary, x: &Sample) {
    let s = &mut w.tree;
    s.pss_peak_bytes = s.pss_peak_bytes.max(x.size.pss_bytes);
    s.rss_peak_bytes = s.rss_peak_bytes.max(x.size.rss_bytes);
    s.uss_peak_bytes = s.uss_peak_bytes.max(x.size.uss_bytes);
    s.processes_max = s.processes_max.max(x.size.processes);
    s.threads_max = s.threads_max.max(x.size.threads);
    s.root_exited |= !x.root_alive;
    if x.root_hwm_bytes.is_some() {
        w.root_hwm_bytes = x.root_hwm_bytes;
    }
    w.pss_unreadable |= x.pss_unreadable > 0;
}

/// One sample as a point of the series, `t_s` seconds after the start.
fn point(x: &Sample, t_s: f64, cpu_percent: f64, cpu_seconds: f64) -> WatchPoint {
    WatchPoint {
        t_s,
        cpu_percent,
        cpu_seconds,
        size: x.size,
    }
}

/// Nearest-rank percentile (0 for no values). Sorts `v`.
pub fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// A sampler running on its own thread. See [`Watcher::spawn`].
#[derive(Debug)]
pub struct Watcher {
    stop: Arc<AtomicBool>,
    latest: Latest,
    thread: JoinHandle<WatchSummary>,
}

/// The newest point of a watch, for live views while it runs.
type Latest = Arc<Mutex<Option<WatchPoint>>>;

impl Watcher {
    /// Watch `pid` and its descendants every `interval` on a background thread.
    ///
    /// The first sample (the start values: Σ PSS start, CPU baseline) is taken
    /// before this returns, so an unknown PID is an error here. The thread
    /// keeps sampling until [`Watcher::stop`] or until the root exits.
    pub fn spawn(pid: u32, interval: Duration) -> Result<Self> {
        let config = SamplerConfig {
            interval,
            ..SamplerConfig::default()
        };
        Self::spawn_sampler(TreeSampler::with_config(pid, config, None)?, interval)
    }

    /// Like [`Watcher::spawn`] with a prepared sampler (own budget, cgroup).
    pub fn spawn_sampler(mut sampler: TreeSampler, interval: Duration) -> Result<Self> {
        let start = Instant::now();
        let first = sampler.sample()?;
        let stop = Arc::new(AtomicBool::new(false));
        let latest = Latest::default();
        let (flag, newest) = (stop.clone(), latest.clone());
        let thread = std::thread::Builder::new()
            .name("kurabe-watch".into())
            .spawn(move || sample_loop(sampler, &first, (start, interval), &flag, &newest))
            .map_err(|e| ProbeError::Read {
                path: "thread".into(),
                source: e,
            })?;
        Ok(Self {
            stop,
            latest,
            thread,
        })
    }

    /// The newest sample as a point of the series (CPU % over the last
    /// interval, CPU seconds so far, the tree's size), once a second
    /// sample was taken; for a live view while the watch runs.
    pub fn latest(&self) -> Option<WatchPoint> {
        *self.latest.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Take a last sample, stop the thread and return the summary.
    pub fn stop(self) -> WatchSummary {
        self.stop.store(true, Ordering::Release);
        self.thread.thread().unpark();
        self.thread.join().unwrap_or_default()
    }
}

/// The watcher thread: a sample every `interval` from `start` until `stop`
/// or the root exits. The park is a timed wait that paces the schedule and
/// that [`Watcher::stop`] cuts short (unpark), not a poll.
fn sample_loop(
    mut sampler: TreeSampler,
    first: &Sample,
    (start, interval): (Instant, Duration),
    stop: &AtomicBool,
    latest: &Mutex<Option<WatchPoint>>,
) -> WatchSummary {
    let mut rec = Recorder::new(sampler.root(), start, false);
    rec.push(first);
    let mut next = start + interval;
    loop {
        let now = Instant::now();
        if !stop.load(Ordering::Acquire) && now < next {
            std::thread::park_timeout(next - now);
            continue;
        }
        let alive = match sampler.sample() {
            Ok(s) => {
                rec.push(&s);
                *latest.lock().unwrap_or_else(|e| e.into_inner()) = rec.last_point();
                s.root_alive
            }
            Err(ProbeError::NoSuchProcess(_)) => false,
            // Out of descriptors: no sample now, try again on the schedule.
            Err(e) => {
                rec.skip(&e);
                true
            }
        };
        if stop.load(Ordering::Acquire) || !alive {
            break;
        }
        // From the end of the sample: one that took longer than the
        // interval (a starved thread) must not be followed by another at once.
        next = next_tick(next, interval, Instant::now());
    }
    rec.finish(Instant::now(), &sampler)
}

/// When to sample after the tick due at `due`: one `interval` on, or, when
/// `now` is already past that (the thread overslept on a busy machine, or a
/// sample took longer than the interval), the first tick still ahead.
/// Ticks that passed are skipped rather than sampled back to back: a
/// sample taken a fraction of a millisecond after the last sees no CPU
/// time (the kernel counts it in clock ticks), and a burst of them paints
/// a busy target idle.
pub fn next_tick(due: Instant, interval: Duration, now: Instant) -> Instant {
    let next = due + interval;
    if next > now || interval.is_zero() {
        return next;
    }
    let behind = (now - next).as_nanos() / interval.as_nanos();
    next + interval * (behind as u32 + 1)
}

/// CPU seconds this process (kurabe) has used so far.
pub fn self_cpu_seconds() -> f64 {
    procfs::self_cpu_seconds()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_missed_while_overslept_are_skipped_not_sampled_in_a_burst() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // On time: one interval on.
        assert_eq!(next_tick(t0, ms(100), t0), t0 + ms(100));
        assert_eq!(next_tick(t0, ms(100), t0 + ms(99)), t0 + ms(100));
        // Woken 730 ms late: the next tick is the first one still ahead, at 800 ms.
        assert_eq!(next_tick(t0, ms(100), t0 + ms(730)), t0 + ms(800));
        assert_eq!(next_tick(t0, ms(100), t0 + ms(800)), t0 + ms(900));
    }

    #[test]
    fn nearest_rank_percentile() {
        let mut v = vec![5.0, 1.0, 3.0, 2.0, 4.0];
        assert_eq!(percentile(&mut v, 95.0), 5.0);
        assert_eq!(percentile(&mut v, 50.0), 3.0);
        assert_eq!(percentile(&mut [], 95.0), 0.0);
        let mut w: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&mut w, 95.0), 95.0);
    }

    #[test]
    fn watcher_sees_itself() {
        // Not this test process: other tests in this binary start children
        // of it at any time (more of them overlap on a loaded machine), so
        // its tree's size is not ours to assert. A child of our own is
        // alone in its tree.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let w = Watcher::spawn(child.id(), Duration::from_millis(20)).unwrap();
        let s = w.stop().tree;
        let _ = child.kill();
        let _ = child.wait();
        // The first sample is taken in spawn, the last in stop.
        assert!(s.samples >= 2, "{s:?}");
        assert!(s.pss_peak_bytes > 0);
        assert!(s.rss_peak_bytes >= s.pss_peak_bytes);
        assert_eq!(s.processes_max, 1);
        assert!(!s.root_exited);
    }

    #[test]
    fn a_running_watch_shows_its_newest_point() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let w = Watcher::spawn(child.id(), Duration::from_millis(10)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let point = loop {
            if let Some(p) = w.latest() {
                break p;
            }
            assert!(Instant::now() < deadline, "no point within 20 s");
            std::thread::sleep(Duration::from_millis(5));
        };
        let s = w.stop();
        let _ = child.kill();
        let _ = child.wait();
        assert!(point.size.pss_bytes > 0 && point.size.processes == 1);
        assert!(point.t_s > 0.0 && point.t_s <= s.tree.duration_s);
    }

    #[test]
    fn unknown_pid_is_an_error() {
        let e = Watcher::spawn(u32::MAX - 1, Duration::from_millis(10)).unwrap_err();
        assert!(e.to_string().contains("no process with PID"));
    }
}
