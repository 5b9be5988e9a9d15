//! One HTTP load run in this process (`kurabe http`, `kurabe demo`): the
//! load itself (the engine takes the caller's stop and observer as they
//! are), and the server's process tree sampled over the measured phase
//! (after the warm-up).
//!
//! Owns the glue around `kurabe_http::load::run` for a load the user
//! started by hand. Must not print, draw or word anything: notes come back
//! with the report as [`Notice`]s, progress goes to the caller's observer.

use std::time::{Duration, Instant};

use kurabe_http::load::LoadError;
use kurabe_http::load::{Checked, Observer};
use kurabe_http::tags::{MAX_NAMES, OTHER};
use kurabe_http::{is_loopback, Target};
use kurabe_model::http::HttpReport;
use kurabe_model::notice::Notice;
use kurabe_model::profile::Profiling;
use kurabe_probe::{WatchSummary, Watcher};
use kurabe_stop::Stop;

/// How often the server's process tree is sampled during a load test.
const SERVER_SAMPLE_INTERVAL: Duration = Duration::from_millis(100);

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
            (false, None) if is_loopback(&target.host) => ServerChoice::Listener(target.port),
            (false, None) => ServerChoice::Off,
        }
    }

    /// The PID to watch, and a note when server metrics are off for a
    /// reason the user should know. A `--server-pid` that does not exist
    /// is an error; a loopback URL with no findable listener (e.g. another
    /// user's process) only turns server metrics off.
    pub fn resolve(self) -> Result<(Option<u32>, Option<Notice>), NoSuchServer> {
        match self {
            ServerChoice::Off => Ok((None, None)),
            ServerChoice::Pid(pid) if !std::path::Path::new(&format!("/proc/{pid}")).exists() => {
                Err(NoSuchServer(pid))
            }
            ServerChoice::Pid(pid) => Ok((Some(pid), None)),
            ServerChoice::Listener(port) => Ok(match kurabe_probe::find_listener(port) {
                Ok(Some(pid)) => (Some(pid), None),
                Ok(None) => (None, Some(Notice::NoListener { port })),
                // The probe's own sentence names `kurabe watch`'s `-p`;
                // here `-p` is ab's POST file.
                Err(kurabe_probe::ProbeError::ListenerHidden(port)) => {
                    (None, Some(Notice::ListenerHidden { port }))
                }
                Err(e) => (None, Some(Notice::ServerMetricsOff { why: e.to_string() })),
            }),
        }
    }
}

/// The local server a load measures: its root process, and whether its
/// on-CPU stacks are sampled over the measured phase (`--profile`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Server {
    /// The server tree's root.
    pub pid: u32,
    /// Whether its stacks are sampled.
    pub profile: Profiling,
}

impl Server {
    /// `pid`'s CPU and memory watched, its stacks not sampled.
    pub fn watched(pid: u32) -> Server {
        Server {
            pid,
            profile: Profiling::Off,
        }
    }
}

/// A finished (or interrupted) load.
#[derive(Debug)]
pub struct LocalRun {
    /// The report, with the server's CPU and memory when it was watched.
    pub report: HttpReport,
    /// What the user should know about the server's figures.
    pub notes: Vec<Notice>,
}

/// Run the load test (checked, its inputs read once) until it ends or
/// `stop` is triggered, with `observer` watching it.
///
/// With a `server`, that process tree is sampled over the measured phase
/// (after the warm-up) and the report gains its CPU and memory, and its
/// profile when asked for.
pub fn run_load(
    load: Checked,
    stop: &Stop,
    server: Option<Server>,
    observer: &dyn Observer,
) -> Result<LocalRun, LoadError> {
    // `finished` ends the server sampling.
    let finished = Stop::new();
    let warmup = load.warmup();
    // Its stacks are sampled from before the load starts (a short load
    // would be over before a sampler started beside it had attached),
    // counted from the end of the warm-up.
    let sampler = server.and_then(|s| crate::profiled::attach_tree(s.profile, s.pid, None));
    let (report, watched) = std::thread::scope(|scope| {
        let finished_ref = &finished;
        let sampler = sampler.as_ref();
        let watcher = server.map(|s| {
            scope.spawn(move || watch_server(s.pid, warmup, finished_ref, observer, sampler))
        });
        let report = kurabe_http::load::run_checked(load, stop, observer);
        finished.trigger(None);
        let watched = watcher.and_then(|h| h.join().ok());
        (report, watched)
    });
    let mut run = LocalRun {
        report: report?.report,
        notes: Vec::new(),
    };
    if let Some(folded) = names_folded(&run.report) {
        run.notes.push(folded);
    }
    match watched {
        Some(Ok(Some(summary))) => {
            add_server(&mut run, &summary);
            let answered = run.report.answered_requests();
            run.report.profile = sampler.map(|s| crate::profiled::finish_tree(s, answered));
        }
        Some(Err(e)) => run
            .notes
            .push(Notice::ServerMetricsOff { why: e.to_string() }),
        _ => {}
    }
    Ok(run)
}

/// The note of a breakdown whose names passed the bound: the rows after
/// the first [`MAX_NAMES`] share one ([`OTHER`]).
fn names_folded(report: &HttpReport) -> Option<Notice> {
    let folded =
        report.requests.len() > MAX_NAMES && report.requests.iter().any(|r| r.name == OTHER);
    folded.then(|| Notice::NamesFolded {
        kept: MAX_NAMES,
        row: OTHER.to_owned(),
    })
}

/// The server's CPU and memory over the measured phase, into the report
/// (with a note when the server exited during the run).
fn add_server(run: &mut LocalRun, summary: &WatchSummary) {
    let tree = &summary.tree;
    if tree.root_exited {
        run.notes.push(Notice::ServerExited { pid: tree.pid });
    }
    if let Some(note) = summary.skipped_note() {
        run.notes.push(Notice::ServerSkipped { note });
    }
    // Counted from /proc: the hardware counters never are, and on a machine
    // without a PMU the line says so.
    if let Some(why) = kurabe_probe::pmu::hardware_off() {
        run.notes.push(Notice::HardwareOff { why });
    }
    run.report.server = Some(tree.server_metrics(run.report.answered_requests()));
}

/// Sample the server tree from the end of the warm-up until the load
/// finishes (`None` when it finished within the warm-up), and count its
/// stacks from then; an observer that watches the server gets the
/// newest point as it comes.
fn watch_server(
    pid: u32,
    warmup: Option<Duration>,
    finished: &Stop,
    observer: &dyn Observer,
    sampler: Option<&kurabe_profile::Sampler>,
) -> Result<Option<WatchSummary>, kurabe_probe::ProbeError> {
    if finished.wait_until(Instant::now() + warmup.unwrap_or_default()) {
        return Ok(None);
    }
    if warmup.is_some() {
        sampler.inspect(|s| s.count_from_now());
    }
    let watcher = Watcher::spawn(pid, SERVER_SAMPLE_INTERVAL)?;
    if observer.watches_server() {
        while !finished.wait_timeout(SERVER_SAMPLE_INTERVAL) {
            if let Some(point) = watcher.latest() {
                observer.server(&point);
            }
        }
    } else {
        finished.wait();
    }
    Ok(Some(watcher.stop()))
}
