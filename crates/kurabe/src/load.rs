//! Running one HTTP load in this process (`kurabe http`, `kurabe demo`):
//! Ctrl-C relayed to the engine, a progress line on a terminal, the server's
//! process tree sampled over the measured phase, and the report rendered in
//! the chosen format.
//!
//! Owns the glue around `kurabe_http::client::run`. Must not parse flags
//! or pick outputs: the commands do.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use kurabe_http::client::{self, LoadConfig, RunControl};
use kurabe_model::http::HttpReport;

use crate::render::http::{renderer, Format};

/// Render `report` in `format`.
pub(crate) fn render(report: &HttpReport, format: Format) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    renderer(format)
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
    interrupt: &AtomicBool,
    server: Option<u32>,
) -> anyhow::Result<HttpReport> {
    let ctl = RunControl::default();
    let finished = AtomicBool::new(false);
    let show = progress && std::io::stderr().is_terminal();
    let (report, watched) = std::thread::scope(|scope| {
        scope.spawn(|| monitor(&ctl, &finished, interrupt, show));
        let finished_ref = &finished;
        let watcher =
            server.map(|pid| scope.spawn(move || watch_server(pid, load.warmup, finished_ref)));
        let report = client::run(load, &ctl);
        finished.store(true, Ordering::Relaxed);
        let watched = watcher.and_then(|h| h.join().ok().flatten());
        (report, watched)
    });
    let mut report = report?;
    if let Some(summary) = watched {
        if summary.root_exited {
            eprintln!(
                "kurabe: note: the server process {} exited during the run; its figures cover the time it was alive",
                summary.root
            );
        }
        report.server = Some(summary.server_metrics(report.complete_requests));
    }
    Ok(report)
}

/// Sample the server tree from the end of the warm-up until the load finishes.
fn watch_server(
    pid: u32,
    warmup: Option<Duration>,
    finished: &AtomicBool,
) -> Option<kurabe_probe::WatchSummary> {
    let measure_from = Instant::now() + warmup.unwrap_or_default();
    while Instant::now() < measure_from {
        if finished.load(Ordering::Relaxed) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let watcher = match kurabe_probe::Watcher::spawn(pid, SERVER_SAMPLE_INTERVAL) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("kurabe: note: server metrics off: {e}");
            return None;
        }
    };
    while !finished.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(10));
    }
    Some(watcher.stop())
}

/// Relay Ctrl-C into `ctl.stop` and, on a terminal, refresh a progress line ~4×/s.
fn monitor(ctl: &RunControl, finished: &AtomicBool, interrupt: &AtomicBool, show: bool) {
    let start = Instant::now();
    let mut last_print = start;
    while !finished.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(20));
        if interrupt.load(Ordering::Relaxed) {
            ctl.stop.store(true, Ordering::Relaxed);
        }
        if show && last_print.elapsed() >= Duration::from_millis(250) {
            last_print = Instant::now();
            let done = ctl.progress.completed.load(Ordering::Relaxed);
            let failed = ctl.progress.failed.load(Ordering::Relaxed);
            let secs = start.elapsed().as_secs_f64();
            eprint!("\r\x1b[K{}", progress_line(done, failed, secs));
        }
    }
    if show {
        eprint!("\r\x1b[K");
    }
}

/// "12345 requests done, 0 failed, 6172 req/s, 2.0 s".
fn progress_line(done: u64, failed: u64, secs: f64) -> String {
    let rate = if secs > 0.0 { done as f64 / secs } else { 0.0 };
    format!("{done} requests done, {failed} failed, {rate:.0} req/s, {secs:.1} s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_line_shows_count_and_rate() {
        assert_eq!(
            progress_line(1000, 2, 2.0),
            "1000 requests done, 2 failed, 500 req/s, 2.0 s"
        );
    }
}
