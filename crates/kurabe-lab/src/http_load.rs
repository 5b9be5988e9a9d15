//! One HTTP load run in this process (`kurabe http`, `kurabe demo`): the
//! stop signal relayed to the engine, the server's process tree sampled
//! over the measured phase (after the warm-up), and how far the load is,
//! reported to the caller's progress callback a few times a second.
//!
//! Owns the glue around `kurabe_http::client::run` for a load the user
//! started by hand. Must not print or draw: notes come back with the
//! report, progress goes through the callback.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kurabe_http::client::{self, LoadConfig, LoadError, RunControl, Target};
use kurabe_model::http::HttpReport;
use kurabe_model::stop::Stop;
use kurabe_probe::{WatchSummary, Watcher};

/// How often the server's process tree is sampled during a load test.
const SERVER_SAMPLE_INTERVAL: Duration = Duration::from_millis(100);

/// How often the progress callback is called.
const TICK_INTERVAL: Duration = Duration::from_millis(250);

/// Which process, if any, to measure as the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerChoice {
    /// Server metrics off (`--no-server-metrics`, or the target is not on this machine).
    Off,
    /// Find the process listening on this local TCP port.
    Listener(u16),
    /// This PID (`--server-pid`).
    Pid(u32),
}

/// A `--server-pid` that names no process.
#[derive(Debug, thiserror::Error)]
#[error(
    "--server-pid {0}: no such process; give the PID of the running server or leave the flag out"
)]
pub struct NoSuchServer(pub u32);

impl ServerChoice {
    /// `--no-server-metrics` (`off`), `--server-pid` and the URL's target:
    /// a loopback URL's listener is measured unless told otherwise.
    pub fn from_flags(off: bool, pid: Option<u32>, target: &Target) -> ServerChoice {
        match (off, pid) {
            (true, _) => ServerChoice::Off,
            (false, Some(pid)) => ServerChoice::Pid(pid),
            (false, None) if client::is_loopback(&target.host) => {
                ServerChoice::Listener(target.port)
            }
            (false, None) => ServerChoice::Off,
        }
    }

    /// The PID to watch, and a note when server metrics are off for a
    /// reason the user should know. A `--server-pid` that does not exist
    /// is an error; a loopback URL with no findable listener (e.g. another
    /// user's process) only turns server metrics off.
    pub fn resolve(self) -> Result<(Option<u32>, Option<String>), NoSuchServer> {
        match self {
            ServerChoice::Off => Ok((None, None)),
            ServerChoice::Pid(pid) if !std::path::Path::new(&format!("/proc/{pid}")).exists() => {
                Err(NoSuchServer(pid))
            }
            ServerChoice::Pid(pid) => Ok((Some(pid), None)),
            ServerChoice::Listener(port) => Ok(match kurabe_probe::find_listener(port) {
                Ok(Some(pid)) => (Some(pid), None),
                Ok(None) => (None, Some(format!("no process of this machine found listening on port {port}; server metrics off (use --server-pid to name it)"))),
                Err(e) => (None, Some(format!("server metrics off: {e}"))),
            }),
        }
    }
}

/// How far the load is, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub struct Tick {
    /// Requests with a complete response.
    pub done: u64,
    /// Failed requests.
    pub failed: u64,
    /// Time since the load began.
    pub elapsed: Duration,
}

/// A finished (or interrupted) load.
#[derive(Debug)]
pub struct LocalRun {
    /// The report, with the server's CPU and memory when it was watched.
    pub report: HttpReport,
    /// What the user should know about the server's figures.
    pub notes: Vec<String>,
}

/// Run the load test, relaying `interrupt` to the engine and calling `tick`
/// (if any) about four times a second.
///
/// With `server = Some(pid)`, that process tree is sampled over the measured
/// phase (after the warm-up) and the report gains its CPU and memory.
pub fn run_load(
    load: &LoadConfig,
    interrupt: &Arc<Stop>,
    server: Option<u32>,
    tick: Option<&(dyn Fn(Tick) + Sync)>,
) -> Result<LocalRun, LoadError> {
    let ctl = RunControl::default();
    // `finished` ends the server sampling; `wake` (also set by the
    // interrupt) wakes the monitor at once for either.
    let (finished, wake) = (Stop::new(), interrupt.child());
    let (report, watched) = std::thread::scope(|scope| {
        let (ctl_ref, wake_ref, finished_ref) = (&ctl, &wake, &finished);
        scope.spawn(move || monitor(ctl_ref, wake_ref, interrupt, tick));
        let watcher =
            server.map(|pid| scope.spawn(move || watch_server(pid, load.warmup, finished_ref)));
        let report = client::run(load, &ctl);
        finished.trigger(None);
        wake.trigger(None);
        let watched = watcher.and_then(|h| h.join().ok());
        (report, watched)
    });
    let mut run = LocalRun {
        report: report?,
        notes: Vec::new(),
    };
    match watched {
        Some(Ok(Some(summary))) => add_server(&mut run, &summary),
        Some(Err(e)) => run.notes.push(format!("server metrics off: {e}")),
        _ => {}
    }
    Ok(run)
}

/// The server's CPU and memory over the measured phase, into the report
/// (with a note when the server exited during the run).
fn add_server(run: &mut LocalRun, summary: &WatchSummary) {
    if summary.root_exited {
        run.notes.push(format!(
            "the server process {} exited during the run; its figures cover the time it was alive",
            summary.root
        ));
    }
    if let Some(note) = summary.skipped_note() {
        run.notes.push(format!("server metrics: {note}"));
    }
    run.report.server = Some(summary.server_metrics(run.report.complete_requests));
}

/// Sample the server tree from the end of the warm-up until the load
/// finishes (`None` when it finished within the warm-up).
fn watch_server(
    pid: u32,
    warmup: Option<Duration>,
    finished: &Stop,
) -> Result<Option<WatchSummary>, kurabe_probe::ProbeError> {
    if finished.wait_until(Instant::now() + warmup.unwrap_or_default()) {
        return Ok(None);
    }
    let watcher = Watcher::spawn(pid, SERVER_SAMPLE_INTERVAL)?;
    finished.wait();
    Ok(Some(watcher.stop()))
}

/// Relay the interrupt into `ctl.stop` and call `tick` ~4×/s until `wake`
/// (the load finished, or the interrupt); blocks on `wake` between ticks.
fn monitor(ctl: &RunControl, wake: &Stop, interrupt: &Stop, tick: Option<&(dyn Fn(Tick) + Sync)>) {
    let start = Instant::now();
    let every = tick.map_or(Duration::from_secs(3600), |_| TICK_INTERVAL);
    while !wake.wait_timeout(every) {
        if let Some(tick) = tick {
            tick(Tick {
                done: ctl.progress.completed.load(Ordering::Relaxed),
                failed: ctl.progress.failed.load(Ordering::Relaxed),
                elapsed: start.elapsed(),
            });
        }
    }
    if interrupt.is_set() {
        ctl.stop.store(true, Ordering::Relaxed);
    }
}
