//! The engine's one entry: [`run`] takes a [`LoadSpec`] (the whole
//! description of a load, from the CLI, a plan or the fleet), a [`Stop`]
//! handle and an [`Observer`], and returns one [`LoadRun`].
//!
//! Owns the entry, the observer contract and the one check every path
//! shares ([`check_spec`]: the same rules and defaults for flags, plans and
//! fleet specs, with errors that name the setting as the user wrote it,
//! made whole before any input is read; [`CheckedSpec::read`] then reads
//! the inputs into a resolved load). Must
//! not print, and must not put anything on the engine's hot path: the
//! observer is called from a thread of its own a few times a second, never
//! per request; the workers poll the stop's flag as they polled their own.

mod check;
mod error;
pub(crate) mod files;
mod gate;
mod resolve;

use std::sync::Arc;
use std::time::{Duration, Instant};

use kurabe_model::http::HttpReport;
use kurabe_model::load::LoadSpec;
use kurabe_model::load_stats::{Snapshot, Stats};
use kurabe_model::probe::WatchPoint;
use kurabe_model::threshold::ThresholdResult;
use kurabe_stop::Stop;

use crate::client::{self, Load, RunControl};
pub use crate::client::{GnuplotFile, HeadTrace, LoadError};
pub use crate::request::Names;
pub use check::{check_spec, CheckedSpec, Loaded, INLINE_SET_BYTES};
pub use error::SpecError;
pub use files::check_files;
pub use resolve::MAX_RATE_PER_CLIENT;

/// What a finished (or stopped) load measured.
pub struct LoadRun {
    /// The report, as every renderer and the store read it.
    pub report: HttpReport,
    /// The histograms and counters the report was built from, so runs on
    /// several hosts merge exactly ([`Stats::merge`], then
    /// [`Stats::fill_report`]).
    pub stats: Stats,
}

impl std::fmt::Debug for LoadRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadRun")
            .field("report", &self.report)
            .finish_non_exhaustive()
    }
}

/// How far a running load is (the measured phase's counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Requests with a complete response.
    pub completed: u64,
    /// Failed requests.
    pub failed: u64,
    /// Time since the load began (warm-up included).
    pub elapsed: Duration,
}

/// Outputs that tap the load as it runs, besides its report: ab's `-g`
/// file (one line per request) and `-v` trace (every response head). They
/// are written by the workers themselves, so they cost only when asked for.
#[derive(Debug, Clone, Default)]
pub struct Taps {
    /// ab's `-g` gnuplot file, opened by the caller.
    pub gnuplot: Option<GnuplotFile>,
    /// Called with each response head as received (ab's `-v 2` log).
    pub head_trace: Option<HeadTrace>,
}

/// What a caller watches of a running load. Every method has a default
/// that does nothing, so an observer implements only what it shows.
///
/// The engine calls it from one thread of its own, never from a worker:
/// a slow observer delays its own next call, not a request. Later
/// capabilities (per-second samples for issue 25's series, the live view
/// of issue 26) arrive as further methods with empty defaults.
pub trait Observer: Sync {
    /// How often [`Observer::progress`] is wanted; `None` (the default): never.
    fn progress_interval(&self) -> Option<Duration> {
        None
    }

    /// How far the load is; called every [`Observer::progress_interval`].
    fn progress(&self, _progress: Progress) {}

    /// The outputs that tap the load (read once, before it starts).
    fn taps(&self) -> Taps {
        Taps::default()
    }

    /// Whether [`Observer::snapshot`] is wanted (read once, before the
    /// load starts): then the workers copy their figures at each progress
    /// publication (a histogram copy every ~50 ms per thread, never per
    /// request), and the snapshot comes every [`Observer::progress_interval`].
    fn wants_snapshots(&self) -> bool {
        false
    }

    /// The load as it stands; called after each [`Observer::progress`].
    fn snapshot(&self, _snapshot: &Snapshot) {}

    /// Whether [`Observer::server`] is wanted, when the caller samples a
    /// local server's process tree during the load.
    fn watches_server(&self) -> bool {
        false
    }

    /// The server's newest sample (CPU, Σ PSS), every ~100 ms while the
    /// caller samples it (from the caller's sampling thread).
    fn server(&self, _point: &WatchPoint) {}
}

/// An observer that watches nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Quiet;

impl Observer for Quiet {}

/// A [`LoadSpec`] that checks: what it resolves to, for the caller's own
/// decisions before the run (which server to measure, what `-v` shows).
#[derive(Debug, Clone)]
pub struct Checked(Load);

impl Checked {
    /// Where the requests go.
    pub fn target(&self) -> &crate::Target {
        &self.0.target
    }

    /// When the measured phase stops.
    pub fn stop(&self) -> client::StopCondition {
        self.0.stop
    }

    /// The request method (`-m`, `-i`, `-p`, `-u` resolved; of a set or
    /// a replay, its first request's).
    pub fn method(&self) -> &str {
        self.0.first_method()
    }

    /// The open model's target rate, requests per second (`None`: closed model).
    pub fn rate(&self) -> Option<f64> {
        self.0.arrival.rate()
    }

    /// The thresholds judged on a finished run's `stats` over `seconds` of
    /// measuring, as [`run`] judges its own: for a fleet's merged
    /// histograms and counters, which no single run holds.
    pub fn judge_thresholds(&self, stats: &Stats, seconds: f64) -> Vec<ThresholdResult> {
        let names = self.0.labels.names();
        gate::judge_finished(&self.0.thresholds, names, stats, seconds, None)
    }

    /// How long the load runs before its measured phase.
    pub fn warmup(&self) -> Option<Duration> {
        self.0.warmup
    }

    /// Client threads the run uses (the default resolved).
    pub fn threads(&self) -> u32 {
        self.0.threads
    }

    /// What a replay read of its log, and its pace (`None`: not a replay).
    pub fn replay_summary(&self) -> Option<&kurabe_model::replay::ReplaySummary> {
        match &self.0.requests {
            client::Requests::Replay(r) => Some(&r.summary),
            _ => None,
        }
    }

    /// Where the request set comes from, as given (`-` for standard
    /// input), when the spec names one.
    pub fn set_source(&self) -> Option<&str> {
        self.0.requests.set().map(|s| s.source.as_str())
    }

    /// The resolved configuration, for the callers that still take one
    /// until each passes its [`LoadSpec`] instead.
    pub(crate) fn config(&self) -> &Load {
        &self.0
    }
}

/// [`check_spec`] of a load one client runs, then its inputs read
/// ([`CheckedSpec::read`]): what it resolves to, running nothing. Callers
/// check before they open outputs or start a target.
pub fn check(spec: &LoadSpec, names: &Names) -> Result<Checked, SpecError> {
    Ok(check_spec(spec.clone(), names, 1)?.read()?.load)
}

/// [`check`], its inputs' reading given up once `stop` is set
/// ([`SpecError::Stopped`]): for a caller that checks while it must
/// still answer its stop (a fleet worker checking its share), as the
/// reading of a large set or log takes seconds.
pub fn check_or_stop(spec: &LoadSpec, names: &Names, stop: &Stop) -> Result<Checked, SpecError> {
    Ok(check_spec(spec.clone(), names, 1)?.read_or_stop(stop)?.load)
}

/// Run one load test and return what it measured.
///
/// `spec` is checked first ([`check`], errors naming plan keys); setup
/// problems (unresolvable host, TLS configuration, unwritable `-g` file,
/// too few descriptors) are `Err`, and so is a worker thread's panic
/// ([`LoadError::WorkerPanic`], after the other workers were stopped);
/// everything that goes wrong with a request is counted in the report's
/// `failures`. The run always ends: at the stop condition, when `stop` is
/// triggered (seen by every worker within ~20 ms; the report is marked
/// interrupted) or, with `abort_on_error`, at the first failure.
///
/// Accounting: every request the engine writes ends up in exactly one of
/// `complete_requests`, `failed_requests` or `in_flight_at_end`, so their
/// sum is what the server received. With `requests` exactly that many are
/// issued (completed + failed = n unless interrupted). Requests the server
/// never saw because it closed a reused keep-alive connection first are
/// resent on a new connection and counted once.
pub fn run(spec: &LoadSpec, stop: &Stop, observer: &dyn Observer) -> Result<LoadRun, LoadError> {
    let cfg = resolve_or_stop(spec, stop)?;
    run_config(cfg, stop, observer)
}

/// [`run`] for a load [`check`] already resolved: its inputs as that
/// read them, not read again, so a body, a held set or a log is in
/// memory once (and is what was checked).
pub fn run_checked(
    load: Checked,
    stop: &Stop,
    observer: &dyn Observer,
) -> Result<LoadRun, LoadError> {
    run_config(load.0, stop, observer)
}

/// How often a wait for [`resolve_or_stop`]'s reader looks at the stop.
const RESOLVE_POLL: Duration = Duration::from_millis(20);

/// `spec` resolved on a thread of its own while this one waits for it or
/// for `stop` ([`LoadError::Interrupted`]): reading a large set or log
/// takes seconds, and a signal must not wait for it (issue 38). The
/// reader sees the stop too and gives up at its next block or batch of
/// lines (a cancelled fleet share's reader does not keep its CPU until
/// the file's end); nothing it read is used.
fn resolve_or_stop(spec: &LoadSpec, stop: &Stop) -> Result<Load, LoadError> {
    let done = Arc::new(Stop::new());
    let slot = Arc::new(std::sync::Mutex::new(None));
    let (owned, read, told) = (spec.clone(), Arc::clone(&slot), Arc::clone(&done));
    let flag = Arc::clone(stop.flag());
    std::thread::Builder::new()
        .name("kurabe-resolve".to_owned())
        .spawn(move || {
            let cfg = check_spec(owned, &Names::PLAN, 1)
                .and_then(|c| c.read_stopping(&flag))
                .map(|l| l.load.0);
            *read.lock().unwrap_or_else(|p| p.into_inner()) = Some(cfg);
            told.trigger(None);
        })
        .map_err(|e| LoadError::Spec(format!("cannot start a thread to read the load: {e}")))?;
    while !done.wait_timeout(RESOLVE_POLL) {
        if stop.is_set() {
            return Err(LoadError::Interrupted);
        }
    }
    let cfg = slot.lock().unwrap_or_else(|p| p.into_inner()).take();
    Ok(cfg.expect("set before the trigger")?)
}

/// [`run`] for a configuration already resolved: for the callers that
/// still build one themselves, until each builds a [`LoadSpec`] instead.
/// With an aborting threshold the run has a stop of its own, which the
/// caller's triggers and a failing threshold's [`gate::Gate`] too; the
/// report's `thresholds` are judged on the finished run.
pub(crate) fn run_config(
    cfg: Load,
    stop: &Stop,
    observer: &dyn Observer,
) -> Result<LoadRun, LoadError> {
    let thresholds = cfg.thresholds.clone();
    let names = cfg.labels.names().to_vec();
    let (mut run, aborted) = match thresholds.iter().any(|t| t.abort) {
        false => (run_observed(cfg, stop, observer)?, None),
        true => {
            let own = Arc::new(Stop::new());
            stop.link(&own);
            let gate = gate::Gate {
                inner: observer,
                thresholds: &thresholds,
                names: &names,
                stop: &own,
                tripped: std::sync::Mutex::new(None),
            };
            let run = run_observed(cfg, &own, &gate)?;
            let tripped = *gate.tripped.lock().unwrap_or_else(|p| p.into_inner());
            (run, tripped)
        }
    };
    run.report.thresholds = gate::judge_finished(
        &thresholds,
        &names,
        &run.stats,
        run.report.duration_s,
        aborted,
    );
    Ok(run)
}

/// Run `cfg` with `observer` watching it.
fn run_observed(mut cfg: Load, stop: &Stop, observer: &dyn Observer) -> Result<LoadRun, LoadError> {
    let taps = observer.taps();
    if taps.gnuplot.is_some() {
        cfg.gnuplot_file = taps.gnuplot;
    }
    if taps.head_trace.is_some() {
        cfg.setup.trace = taps.head_trace;
    }
    // The workers poll the stop's own flag: no relay between the two.
    let mut ctl = RunControl::with_stop(Arc::clone(stop.flag()));
    if observer.wants_snapshots() {
        ctl.live = Some(client::measure::live::Live::new(
            cfg.threads.clamp(1, cfg.concurrency),
        ));
    }
    let finished = Stop::new();
    let warmup = cfg.warmup.unwrap_or_default();
    let (report, stats) = std::thread::scope(|s| {
        if let Some(every) = observer.progress_interval() {
            let (ctl, finished) = (&ctl, &finished);
            s.spawn(move || watch(ctl, finished, (every, warmup), observer));
        }
        let r = client::run_with_stats(cfg, &ctl);
        finished.trigger(None);
        r
    })?;
    Ok(LoadRun { report, stats })
}

/// Call `observer` every `every` until `finished` (which wakes it at once);
/// `warmup`: how long the measured phase waits after the start.
fn watch(
    ctl: &RunControl,
    finished: &Stop,
    (every, warmup): (Duration, Duration),
    observer: &dyn Observer,
) {
    let start = Instant::now();
    let mut snapshot = ctl.live.as_ref().map(|_| Snapshot::empty());
    while !finished.wait_timeout(every) {
        observer.progress(Progress {
            completed: ctl
                .progress
                .completed
                .load(std::sync::atomic::Ordering::Relaxed),
            failed: ctl
                .progress
                .failed
                .load(std::sync::atomic::Ordering::Relaxed),
            elapsed: start.elapsed(),
        });
        if let (Some(live), Some(snap)) = (&ctl.live, &mut snapshot) {
            snap.in_flight = live.merge_into(
                &mut snap.latency,
                &mut snap.name_latency,
                &mut snap.counters,
            );
            snap.elapsed = start.elapsed();
            snap.measured = snap.elapsed.saturating_sub(warmup);
            observer.snapshot(snap);
        }
    }
    // Every worker has made its last publication: the final figures.
    if let (Some(live), Some(snap)) = (&ctl.live, &mut snapshot) {
        live.merge_into(
            &mut snap.latency,
            &mut snap.name_latency,
            &mut snap.counters,
        );
        snap.in_flight = 0;
        snap.elapsed = start.elapsed();
        snap.measured = snap.elapsed.saturating_sub(warmup);
        snap.finished = true;
        observer.snapshot(snap);
    }
}

/// CPUs this process may run on (the default thread count's base).
fn online_cpus() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A server answering every request on one keep-alive connection at a time.
    fn server() -> u16 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { return };
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = s.read(&mut buf) {
                        if n == 0 {
                            return;
                        }
                        let k = buf[..n].windows(4).filter(|w| w == b"\r\n\r\n").count();
                        for _ in 0..k {
                            if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                                .is_err()
                            {
                                return;
                            }
                        }
                    }
                });
            }
        });
        port
    }

    struct Counting(AtomicU64);

    impl Observer for Counting {
        fn progress_interval(&self) -> Option<Duration> {
            Some(Duration::from_millis(10))
        }
        fn progress(&self, p: Progress) {
            self.0.fetch_max(p.completed, Ordering::Relaxed);
        }
    }

    #[test]
    fn a_spec_runs_and_a_stop_interrupts_it() {
        let port = server();
        let mut spec = LoadSpec::for_url(&format!("http://127.0.0.1:{port}/"));
        spec.keep_alive = true;
        spec.engine = kurabe_model::load::Engine::Epoll;
        spec.requests = Some(200);
        let run = run(&spec, &Stop::new(), &Quiet).unwrap();
        assert_eq!(run.report.complete_requests, 200);
        assert_eq!(run.stats.counters.completed, 200);

        spec.requests = None;
        spec.duration = Some(kurabe_model::plan::HumanDuration(Duration::from_secs(60)));
        let stop = Stop::new();
        let seen = Counting(AtomicU64::new(0));
        let t0 = Instant::now();
        let r = std::thread::scope(|s| {
            let h = s.spawn(|| super::run(&spec, &stop, &seen));
            // The observer saw requests complete: then stop.
            while seen.0.load(Ordering::Relaxed) < 50 {
                std::thread::sleep(Duration::from_millis(5));
            }
            stop.trigger(None);
            h.join().unwrap().unwrap()
        });
        assert!(r.report.interrupted && r.report.complete_requests >= 50);
        assert!(t0.elapsed() < Duration::from_secs(30));
    }

    /// Keeps the largest snapshot seen.
    #[derive(Default)]
    struct Watching(std::sync::Mutex<Option<(u64, u64, u64)>>);

    impl Observer for Watching {
        fn progress_interval(&self) -> Option<Duration> {
            Some(Duration::from_millis(10))
        }
        fn wants_snapshots(&self) -> bool {
            true
        }
        fn snapshot(&self, s: &Snapshot) {
            let seen = (
                s.latency.len(),
                s.counters.completed,
                s.counters.status.get(200),
            );
            *self.0.lock().unwrap() = Some(seen);
        }
    }

    #[test]
    fn snapshots_carry_the_latency_and_the_counters_of_every_worker() {
        let port = server();
        let mut spec = LoadSpec::for_url(&format!("http://127.0.0.1:{port}/"));
        spec.keep_alive = true;
        spec.engine = kurabe_model::load::Engine::Epoll;
        spec.concurrency = 4;
        spec.threads = Some(2);
        spec.duration = Some(kurabe_model::plan::HumanDuration(Duration::from_secs(60)));
        let stop = Stop::new();
        let seen = Watching::default();
        let r = std::thread::scope(|s| {
            let h = s.spawn(|| super::run(&spec, &stop, &seen));
            let at_least = |n| seen.0.lock().unwrap().is_some_and(|(h, _, _)| h >= n);
            while !at_least(100) {
                std::thread::sleep(Duration::from_millis(5));
            }
            stop.trigger(None);
            h.join().unwrap().unwrap()
        });
        let (h, completed, ok) = seen.0.lock().unwrap().unwrap();
        assert_eq!((h, ok), (completed, completed));
        assert!(completed >= 100 && completed <= r.report.complete_requests);
    }

    /// The ids of this process's threads called `name`, and the CPU
    /// ticks each has used (utime + stime).
    fn threads_called(name: &str) -> Vec<(u32, u64)> {
        let tasks = std::fs::read_dir("/proc/self/task").unwrap().flatten();
        let named = tasks.filter(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim_end() == name)
        });
        named
            .filter_map(|t| {
                let stat = std::fs::read_to_string(t.path().join("stat")).ok()?;
                let f: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
                let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
                Some((t.file_name().to_str()?.parse().ok()?, ticks))
            })
            .collect()
    }

    /// A stop while a large log is read for the run: the run returns at
    /// once, and its reader gives up too instead of parsing on to the
    /// log's end (seconds of CPU here) for nothing (issue 38).
    #[test]
    fn a_stop_ends_the_reading_of_a_large_log_not_only_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("big.log");
        let mut lines = String::with_capacity(300_000 * 80);
        for i in 0..300_000u32 {
            let (h, m, s) = (i / 3600 % 24, i / 60 % 60, i % 60);
            lines += &format!("127.0.0.1 - - [07/Dec/2026:{h:02}:{m:02}:{s:02} +0000] \"GET /a/{i} HTTP/1.1\" 200 2 \"-\" \"t\"\n");
        }
        std::fs::write(&log, lines).unwrap();
        let spec = LoadSpec {
            replay: Some(kurabe_model::replay::ReplaySpec::of(&log)),
            keep_alive: true,
            ..LoadSpec::for_url("http://127.0.0.1:9/")
        };
        let stop = Stop::new();
        std::thread::scope(|s| {
            let run = s.spawn(|| super::run(&spec, &stop, &Quiet));
            // A reader at work: a resolve thread that has used CPU.
            let deadline = Instant::now() + Duration::from_secs(60);
            let reading = loop {
                let busy: Vec<u32> = threads_called("kurabe-resolve")
                    .into_iter()
                    .filter(|(_, ticks)| *ticks > 2)
                    .map(|(tid, _)| tid)
                    .collect();
                if !busy.is_empty() {
                    break busy;
                }
                assert!(!run.is_finished(), "the log was read before the stop");
                assert!(Instant::now() < deadline, "no reader at work");
                std::thread::sleep(Duration::from_millis(5));
            };
            stop.trigger(None);
            let stopped = Instant::now();
            let r = run.join().unwrap();
            assert!(matches!(r, Err(LoadError::Interrupted)), "{r:?}");
            let gone = || {
                let left = threads_called("kurabe-resolve");
                reading.iter().all(|t| left.iter().all(|(l, _)| l != t))
            };
            while !gone() {
                let waited = stopped.elapsed();
                assert!(
                    waited < Duration::from_secs(2),
                    "the reader still reads after {waited:?}"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
        });
    }

    #[test]
    fn errors_name_plan_keys() {
        let mut spec = LoadSpec::for_url("http://127.0.0.1:9/");
        spec.pipeline = 2;
        let e = run(&spec, &Stop::new(), &Quiet).unwrap_err().to_string();
        assert_eq!(e, "http.pipeline 2 needs keep-alive: add http.keep_alive");
    }
}
