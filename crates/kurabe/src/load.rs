//! Running one HTTP load in this process (`kurabe http`, `kurabe demo`):
//! Ctrl-C relayed to the engine, a progress line on a terminal, the server's
//! process tree sampled over the measured phase, and the report rendered in
//! the chosen format.
//!
//! Owns the glue around `kurabe_http::client::run`. Must not parse flags
//! or pick outputs: the commands do.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::ProgressBar;
use kurabe_http::client::{self, LoadConfig, RunControl, StopCondition};
use kurabe_model::http::HttpReport;
use kurabe_model::stop::Stop;

use kurabe_report::AbLayout;

use crate::cmd::http::Format;

/// Render `report` in `format`, in ab's `layout`.
pub(crate) fn render(
    report: &HttpReport,
    format: Format,
    layout: &AbLayout,
) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    kurabe_report::http_renderer(format.into(), layout)
        .render(report, &mut out)
        .context("cannot render the report")?;
    Ok(out)
}

/// How often the server's process tree is sampled during a load test.
const SERVER_SAMPLE_INTERVAL: Duration = Duration::from_millis(100);

/// Run the load test, relaying Ctrl-C to the engine and showing progress on a terminal.
///
/// With `server = Some(pid)`, that process tree is sampled over the measured
/// phase (after the warm-up) and the report gains its CPU and memory.
pub(crate) fn run_load(
    load: &LoadConfig,
    progress: bool,
    interrupt: &Arc<Stop>,
    server: Option<u32>,
) -> anyhow::Result<HttpReport> {
    let ctl = RunControl::default();
    // `finished` ends the server sampling; `wake` (also set by Ctrl-C)
    // wakes the monitor at once for either.
    let (finished, wake) = (Stop::new(), interrupt.child());
    let show = crate::progress::wanted(progress);
    let (report, watched) = std::thread::scope(|scope| {
        let timed = matches!(load.stop, StopCondition::Duration(_));
        let bar = progress_bar(&load.stop, show);
        let (ctl_ref, wake_ref, finished_ref) = (&ctl, &wake, &finished);
        scope.spawn(move || monitor(ctl_ref, wake_ref, interrupt, bar, timed));
        let watcher =
            server.map(|pid| scope.spawn(move || watch_server(pid, load.warmup, finished_ref)));
        let report = client::run(load, &ctl);
        finished.trigger(None);
        wake.trigger(None);
        let watched = watcher.and_then(|h| h.join().ok().flatten());
        (report, watched)
    });
    let mut report = report?;
    if let Some(summary) = watched {
        add_server(&mut report, &summary);
    }
    Ok(report)
}

/// The server's CPU and memory over the measured phase, into the report
/// (with a note when the server exited during the run).
fn add_server(report: &mut HttpReport, summary: &kurabe_probe::WatchSummary) {
    if summary.root_exited {
        eprintln!(
            "kurabe: note: the server process {} exited during the run; its figures cover the time it was alive",
            summary.root
        );
    }
    if let Some(note) = summary.skipped_note() {
        eprintln!("kurabe: note: server metrics: {note}");
    }
    report.server = Some(summary.server_metrics(report.complete_requests));
}

/// Sample the server tree from the end of the warm-up until the load finishes.
fn watch_server(
    pid: u32,
    warmup: Option<Duration>,
    finished: &Stop,
) -> Option<kurabe_probe::WatchSummary> {
    if finished.wait_until(Instant::now() + warmup.unwrap_or_default()) {
        return None;
    }
    let watcher = match kurabe_probe::Watcher::spawn(pid, SERVER_SAMPLE_INTERVAL) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("kurabe: note: server metrics off: {e}");
            return None;
        }
    };
    finished.wait();
    Some(watcher.stop())
}

/// Relay Ctrl-C into `ctl.stop` and, on a terminal, move the bar ~4×/s:
/// over time for `-t` (`timed`), else over requests done or failed.
/// Blocks on `wake` (the load finished, or Ctrl-C) between redraws.
fn monitor(ctl: &RunControl, wake: &Stop, interrupt: &Stop, bar: ProgressBar, timed: bool) {
    let start = Instant::now();
    let redraw = if bar.is_hidden() {
        Duration::from_secs(3600)
    } else {
        Duration::from_millis(250)
    };
    while !wake.wait_timeout(redraw) {
        let done = ctl.progress.completed.load(Ordering::Relaxed);
        let failed = ctl.progress.failed.load(Ordering::Relaxed);
        if timed {
            bar.set_position(start.elapsed().as_millis() as u64);
            bar.set_message(format!("{done} done, {failed} failed"));
        } else {
            bar.set_position(done + failed);
            bar.set_message(format!("{failed} failed"));
        }
    }
    if interrupt.is_set() {
        ctl.stop.store(true, Ordering::Relaxed);
    }
    bar.finish_and_clear();
}

/// `-n` → a bar over requests; `-t` alone → a bar over the time limit.
fn progress_bar(stop: &StopCondition, show: bool) -> ProgressBar {
    match *stop {
        StopCondition::Requests(n) | StopCondition::RequestsOrDuration(n, _) => {
            crate::progress::counter(n, "requests", show)
        }
        StopCondition::Duration(t) => crate::progress::timer(t, show),
    }
}
