//! A load or an experiment run in this process and watched from its
//! terminal (`kurabe http`, `replay`, `demo`, `run`, `http A B`,
//! `worker`): the progress bar (kurabe-report's) beside the live views,
//! the views fed as the work runs, and the lines an experiment leaves
//! under the terminal view, handed back for after it.
//!
//! Owns that glue: which observer a load gets, when the bar is off (the
//! terminal view is up), when the terminal is given back. Must not
//! compute figures (the board does), run anything itself (kurabe-lab
//! does) nor print a notice (the caller tells them).

use std::sync::Arc;
use std::time::Duration;

use kurabe_fleet::worker::ShareWatch;
use kurabe_http::load::{Checked, Observer, Progress as LoadProgress, Taps};
use kurabe_lab::http_load::LocalRun;
use kurabe_lab::measure::LoadWatch;
use kurabe_lab::Event;
use kurabe_model::load::LoadSpec;
use kurabe_model::load_stats::Snapshot;
use kurabe_model::probe::WatchPoint;
use kurabe_report::bars::{wanted, LoadBar, RunsBar};
use kurabe_stop::Stop;

use crate::board::{self, Board};
use crate::views::{Bound, Live, RunLive, RunWatch, ViewError, ViewOptions, WorkerLive};

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

    fn progress(&self, p: LoadProgress) {
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

/// Why a load watched from the terminal did not end with a report. Each
/// shows its cause's line and holds it as its source, so the cause is in
/// the error's chain: a load worker's panic or an interruption is found
/// there (`kurabe_http::outcome::is_worker_panic`, `is_interrupted`).
#[derive(Debug, thiserror::Error)]
pub enum HereError {
    /// The load itself.
    #[error("{0}")]
    Load(#[from] kurabe_http::load::LoadError),
    /// The terminal view could not give the terminal back.
    #[error("{0}")]
    Tui(#[from] crate::tui::TuiError),
    /// A live view could not start.
    #[error("{0}")]
    View(#[from] ViewError),
}

/// Where one load's views and progress go (`kurabe http`, `replay`).
pub struct Watched<'a> {
    /// The views asked for.
    pub views: &'a ViewOptions,
    /// The command whose load it is (`kurabe http`): the live view's
    /// title is it and the run's name (its URL or set).
    pub command: &'a str,
    /// A progress bar on a terminal (`-q` turns it off).
    pub progress: bool,
    /// The files the load writes as it runs.
    pub taps: Taps,
    /// Told where the endpoint listens.
    pub bound: Bound<'a>,
}

/// One load of `spec` here under the views `watched` asks for: the views
/// started, the load run ([`run_load`]), the views finished.
pub fn run_here(
    (spec, load): (&LoadSpec, Checked),
    server: Option<kurabe_lab::http_load::Server>,
    watched: Watched<'_>,
    interrupt: &Arc<Stop>,
) -> Result<LocalRun, HereError> {
    let info = board::RunInfo::of(spec, &load);
    let title = format!("{} {}", watched.command, info.name);
    let views = watched.views;
    let mut live = Live::start(views, info, title, interrupt, watched.bound)?;
    let progress = watched.progress;
    let run = run_load(
        load,
        progress,
        interrupt,
        server,
        watched.taps,
        live.as_mut(),
    )?;
    if let Some(live) = live {
        live.finish()?;
    }
    Ok(run)
}

/// Run the load until it ends or `interrupt` comes, showing progress on
/// a terminal (unless `!progress`) and writing `taps`; `server`: the
/// process tree to sample; `live`: the live views, whose board is fed as
/// the load runs (the bar is off while the terminal view is up). The
/// terminal is the user's again when this returns. The notes kept are the
/// ones to tell: without a bar (`-q`) the PMU's absence is no news.
pub fn run_load(
    load: Checked,
    progress: bool,
    interrupt: &Stop,
    server: Option<kurabe_lab::http_load::Server>,
    taps: Taps,
    mut live: Option<&mut Live>,
) -> Result<LocalRun, HereError> {
    let show = wanted(progress) && !live.as_ref().is_some_and(|l| l.has_tui());
    let terminal = Terminal {
        bar: LoadBar::new(load.stop().limits(), show),
        show,
        taps,
        live: live.as_ref().map(|l| l.board()),
    };
    let run = kurabe_lab::http_load::run_load(load, interrupt, server, &terminal);
    terminal.bar.finish();
    if let Some(l) = live.as_mut() {
        l.end_tui()?;
    }
    let mut run = run?;
    run.notes
        .retain(|n| progress || !matches!(n, kurabe_model::notice::Notice::HardwareOff { .. }));
    Ok(run)
}

impl ShareWatch for WorkerLive {
    fn share(&self, _run_id: i64, load: &LoadSpec) -> Arc<dyn Observer + Send + Sync> {
        WorkerLive::share(self, load)
    }
}

impl LoadWatch for RunWatch {
    fn begin(&self, spec: &LoadSpec, warmup: bool) -> Arc<dyn Observer + Send + Sync> {
        RunWatch::begin(self, spec, warmup)
    }
}

/// Where an experiment's progress goes (`kurabe run`, `kurabe http A B`).
pub struct Progress<'a> {
    /// `-q`: nowhere.
    pub quiet: bool,
    /// The live view's first words.
    pub title: String,
    /// What the bar (or, without a terminal, stderr) makes of an event.
    pub bar: &'a dyn Fn(&RunsBar, &Event<'_>),
    /// The line an event leaves under the terminal view, shown once the
    /// view is down.
    pub held: fn(&Event<'_>) -> Option<String>,
}

/// An experiment run with its views: the runner's outcome, and the lines
/// its events left while the terminal view was up (to print now).
pub struct Ran {
    /// What the runner returned.
    pub outcome: Result<kurabe_lab::Outcome, kurabe_lab::LabError>,
    /// The held lines, in order.
    pub held: Vec<String>,
}

/// Run the experiment with its progress on a bar or stderr and, when
/// `views` ask, every http load on the live views (one endpoint, one
/// terminal view for all the runs; `q` triggers `stop`); `bound` is told
/// where the endpoint listens.
pub fn run_experiment(
    plan: &kurabe_model::plan::Plan,
    store: &mut kurabe_store::Store,
    mut opts: kurabe_lab::RunOptions,
    stop: &Arc<Stop>,
    (views, bound): (&ViewOptions, Bound<'_>),
    to: Progress<'_>,
) -> Result<Ran, ViewError> {
    let live = RunLive::start(views, to.title, stop, bound)?;
    let watch = live.as_ref().map(RunLive::watch);
    opts.live = watch.clone().map(|w| w as Arc<dyn LoadWatch>);
    let tui = live.as_ref().is_some_and(RunLive::has_tui);
    let bar = RunsBar::new(to.quiet || tui);
    let mut held = Vec::new();
    let mut progress = |e: &Event<'_>| {
        if let (
            Some(w),
            Event::RunStart {
                variant, workload, ..
            },
        ) = (&watch, e)
        {
            w.run_started(kurabe_report::progress::event_line(e), variant, workload);
        }
        match tui {
            true if !to.quiet => held.extend((to.held)(e)),
            true => {}
            false => (to.bar)(&bar, e),
        }
    };
    let outcome = kurabe_lab::run_experiment(plan, store, &opts, stop, &mut progress);
    bar.finish();
    if let Some(live) = live {
        live.finish()?;
    }
    Ok(Ran { outcome, held })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kurabe_http::load::LoadError;

    #[test]
    fn the_cause_is_in_the_chain_and_its_line_is_the_errors() {
        let e = HereError::from(LoadError::Interrupted);
        assert!(kurabe_http::outcome::is_interrupted(&e));
        assert_eq!(e.to_string(), LoadError::Interrupted.to_string());
    }
}
