//! The terminal edge of one HTTP load in this process (`kurabe http`,
//! `kurabe demo`): the progress bar, the notes on stderr, and the report
//! rendered in the chosen format. The load itself, the stop relay and the
//! server sampling are `kurabe_lab::local_load`'s.

use indicatif::ProgressBar;
use kurabe_http::client::{LoadConfig, StopCondition};
use kurabe_lab::local_load::{self, Tick};
use kurabe_model::http::HttpReport;
use kurabe_model::stop::Stop;
use kurabe_report::{AbLayout, Format};

/// Render `report` in `format`, in ab's `layout`.
pub(crate) fn render(report: &HttpReport, format: Format, layout: &AbLayout) -> String {
    kurabe_report::to_string(&*kurabe_report::http_renderer(format, layout), report)
}

/// Run the load test, relaying Ctrl-C to the engine and showing progress
/// on a terminal (unless `!progress`); `server`: the process tree to sample.
pub(crate) fn run_load(
    load: &LoadConfig,
    progress: bool,
    interrupt: &std::sync::Arc<Stop>,
    server: Option<u32>,
) -> anyhow::Result<HttpReport> {
    let show = crate::progress::wanted(progress);
    let timed = matches!(load.stop, StopCondition::Duration(_));
    let bar = progress_bar(&load.stop, show);
    let tick = |t: Tick| show_tick(&bar, t, timed);
    let run = local_load::run_load(load, interrupt, server, show.then_some(&tick as _))?;
    bar.finish_and_clear();
    for note in &run.notes {
        eprintln!("kurabe: note: {note}");
    }
    Ok(run.report)
}

/// Move the bar: over time for `-t` (`timed`), else over requests done or failed.
fn show_tick(bar: &ProgressBar, t: Tick, timed: bool) {
    if timed {
        bar.set_position(t.elapsed.as_millis() as u64);
        bar.set_message(format!("{} done, {} failed", t.done, t.failed));
    } else {
        bar.set_position(t.done + t.failed);
        bar.set_message(format!("{} failed", t.failed));
    }
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
