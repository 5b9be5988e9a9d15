//! The terminal edge of one HTTP load in this process (`kurabe http`,
//! `kurabe demo`): the progress bar and the notes on stderr. The load itself, the stop relay and the
//! server sampling are `kurabe_lab::http_load`'s.

use kurabe_http::client::LoadConfig;
use kurabe_lab::http_load::{self, Tick};
use kurabe_model::http::HttpReport;
use kurabe_model::stop::Stop;
use kurabe_report::bars::{wanted, LoadBar};

/// Run the load test, relaying Ctrl-C to the engine and showing progress
/// on a terminal (unless `!progress`); `server`: the process tree to sample.
pub(crate) fn run_load(
    load: &LoadConfig,
    progress: bool,
    interrupt: &std::sync::Arc<Stop>,
    server: Option<u32>,
) -> anyhow::Result<HttpReport> {
    let show = wanted(progress);
    let bar = LoadBar::new(load.stop.limits(), show);
    let tick = |t: Tick| bar.tick(t.done, t.failed, t.elapsed);
    let run = http_load::run_load(load, interrupt, server, show.then_some(&tick as _))?;
    bar.finish();
    for note in &run.notes {
        eprintln!("kurabe: note: {note}");
    }
    Ok(run.report)
}
