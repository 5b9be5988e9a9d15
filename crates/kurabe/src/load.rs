//! The terminal edge of one HTTP load in this process (`kurabe http`,
//! `kurabe demo`): the progress bar and the notes on stderr. The load itself
//! and the server sampling are `kurabe_lab::http_load`'s.

use std::time::Duration;

use kurabe_http::load::{Observer, Progress, Taps};
use kurabe_model::http::HttpReport;
use kurabe_model::load::LoadSpec;
use kurabe_model::stop::Stop;
use kurabe_report::bars::{wanted, LoadBar};

/// How often the progress bar is fed.
const TICK_INTERVAL: Duration = Duration::from_millis(250);

/// What the terminal watches of a load: the bar (when shown) and the taps.
struct Terminal {
    bar: LoadBar,
    show: bool,
    taps: Taps,
}

impl Observer for Terminal {
    fn progress_interval(&self) -> Option<Duration> {
        self.show.then_some(TICK_INTERVAL)
    }

    fn progress(&self, p: Progress) {
        self.bar.tick(p.completed, p.failed, p.elapsed);
    }

    fn taps(&self) -> Taps {
        self.taps.clone()
    }
}

/// Run the load test until it ends or `interrupt` comes, showing progress
/// on a terminal (unless `!progress`) and writing `taps`; `server`: the
/// process tree to sample.
pub(crate) fn run_load(
    load: &LoadSpec,
    progress: bool,
    interrupt: &Stop,
    server: Option<u32>,
    taps: Taps,
) -> anyhow::Result<HttpReport> {
    let show = wanted(progress);
    let terminal = Terminal {
        bar: LoadBar::new(load.stop().limits(), show),
        show,
        taps,
    };
    let run = kurabe_lab::http_load::run_load(load, interrupt, server, &terminal)?;
    terminal.bar.finish();
    for note in &run.notes {
        eprintln!("kurabe: note: {note}");
    }
    Ok(run.report)
}
