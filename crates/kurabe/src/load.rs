//! The terminal edge of one HTTP load in this process (`kurabe http`,
//! `kurabe demo`): the progress bar, the notes on stderr, and the live
//! board fed when a live view is on (`crate::live`). The load itself and
//! the server sampling are `kurabe_lab::http_load`'s.

use std::time::Duration;

use kurabe_http::load::{Checked, Observer, Progress, Taps};
use kurabe_model::load_stats::Snapshot;
use std::sync::Arc;

use kurabe_live::board::{self, Board};
use kurabe_model::http::HttpReport;
use kurabe_model::probe::WatchPoint;
use kurabe_report::bars::{wanted, LoadBar};
use kurabe_stop::Stop;

use crate::live::Live;

/// How often the progress bar is fed.
const TICK_INTERVAL: Duration = Duration::from_millis(250);

/// What the terminal watches of a load: the bar (when shown), the taps
/// and the live board (when a live view is on).
struct Terminal {
    bar: LoadBar,
    show: bool,
    taps: Taps,
    live: Option<Arc<Board>>,
}

impl Observer for Terminal {
    fn progress_interval(&self) -> Option<Duration> {
        match &self.live {
            Some(_) => Some(board::INTERVAL),
            None => self.show.then_some(TICK_INTERVAL),
        }
    }

    fn progress(&self, p: Progress) {
        self.bar.tick(p.completed, p.failed, p.elapsed);
    }

    fn taps(&self) -> Taps {
        self.taps.clone()
    }

    fn wants_snapshots(&self) -> bool {
        self.live.is_some()
    }

    fn snapshot(&self, snapshot: &Snapshot) {
        if let Some(b) = &self.live {
            b.update(snapshot);
        }
    }

    fn watches_server(&self) -> bool {
        self.live.is_some()
    }

    fn server(&self, point: &WatchPoint) {
        if let Some(b) = &self.live {
            b.server(point);
        }
    }
}

/// Run the load test until it ends or `interrupt` comes, showing progress
/// on a terminal (unless `!progress`) and writing `taps`; `server`: the
/// process tree to sample; `live`: the live views, whose board is fed as
/// the load runs (the progress bar is off while the terminal view is up).
pub(crate) fn run_load(
    load: Checked,
    progress: bool,
    interrupt: &Stop,
    server: Option<u32>,
    taps: Taps,
    mut live: Option<&mut Live>,
) -> anyhow::Result<HttpReport> {
    let show = wanted(progress) && !live.as_ref().is_some_and(|l| l.has_tui());
    let terminal = Terminal {
        bar: LoadBar::new(load.stop().limits(), show),
        show,
        taps,
        live: live.as_ref().map(|l| l.board()),
    };
    let run = kurabe_lab::http_load::run_load(load, interrupt, server, &terminal);
    terminal.bar.finish();
    // The terminal is the user's again before anything is printed.
    if let Some(l) = live.as_mut() {
        l.end_tui()?;
    }
    let run = run?;
    for note in run.notes {
        // -q: the PMU's absence is no news; what went wrong still is.
        if progress || !matches!(note, kurabe_model::notice::Notice::HardwareOff { .. }) {
            crate::tell(note);
        }
    }
    Ok(run.report)
}
