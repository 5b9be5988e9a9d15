//! The live views of a load run in this process (issue 26): the flags,
//! the Prometheus endpoint's start (bound before any request, so a bad or
//! taken address is a setup error) and its linger after the run, the
//! terminal view's start and end (`crate::tui`), and a worker's endpoint,
//! which serves each of its shares in turn.
//!
//! Owns the flags and the glue. Must not compute figures (the board's,
//! `kurabe_live::board`) nor render them (`kurabe_live::openmetrics`,
//! `kurabe_live::view`).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use kurabe_fleet::worker::ShareWatch;
use kurabe_http::load::{Names, Observer};
use kurabe_lab::measure::LoadWatch;
use kurabe_lab::Event;
use kurabe_live::board::{Board, RunInfo};
use kurabe_live::endpoint::{Endpoint, Serving, Source};
use kurabe_live::slot::Slot;
use kurabe_live::{addr, openmetrics};
use kurabe_model::load::LoadSpec;
use kurabe_report::bars::RunsBar;

use kurabe_stop::Stop;

use crate::flags::parse_duration;
use crate::tui::{Picture, Tui};

/// The live-view flags of a load.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct LiveArgs {
    /// Serve Prometheus metrics (OpenMetrics text at http://ADDR/metrics) while the load runs: ":PORT" listens on 127.0.0.1 only, "0.0.0.0:PORT" or "[::]:PORT" on every interface, ":0" on any free port (the address is printed on stderr).
    #[arg(long, value_name = "ADDR")]
    pub prometheus_addr: Option<String>,
    /// After the load, keep serving its final figures (they match the report) until one more scrape came or this long passed ("5s") [default: stop at once].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "prometheus_addr")]
    pub prometheus_linger: Option<Duration>,
    /// A live terminal view while the load runs (rate, latency, status codes, failures, the local server's CPU and memory, a latency histogram); q or Ctrl-C stops the run early and prints the report. Needs a terminal on stdout; the report is the same as without it.
    #[arg(long)]
    pub tui: bool,
}

impl LiveArgs {
    /// Refuse what cannot work before anything starts: `--tui` with no
    /// terminal on stdout.
    pub(crate) fn check(&self) -> anyhow::Result<()> {
        if self.tui {
            crate::tui::check_terminal()?;
        }
        Ok(())
    }
}

/// The live views of one run: the board, the endpoint serving it, the
/// terminal view drawing it.
pub(crate) struct Live {
    board: Arc<Board>,
    serving: Option<Serving>,
    linger: Option<Duration>,
    tui: Option<Tui>,
}

impl Live {
    /// Start what `args` ask for, for a run described by `info` (`title`:
    /// the view's first words; `interrupt`: what `q` triggers); `None` when
    /// nothing is asked. Binds before any request is sent.
    pub(crate) fn start(
        args: &LiveArgs,
        info: RunInfo,
        title: String,
        interrupt: &Arc<Stop>,
    ) -> anyhow::Result<Option<Live>> {
        if args.prometheus_addr.is_none() && !args.tui {
            return Ok(None);
        }
        let board = Arc::new(Board::new(info));
        let serving = match &args.prometheus_addr {
            Some(given) => Some(serve(given, board_source(&board))?),
            None => None,
        };
        let tui = match args.tui {
            true => {
                let b = Arc::clone(&board);
                let picture: Picture = Arc::new(move || (b.frame(), title.clone()));
                Some(Tui::start(picture, Arc::clone(interrupt))?)
            }
            false => None,
        };
        Ok(Some(Live {
            board,
            serving,
            linger: args.prometheus_linger,
            tui,
        }))
    }

    /// The terminal view is up (then nothing else may draw on the terminal).
    pub(crate) fn has_tui(&self) -> bool {
        self.tui.is_some()
    }

    /// Take the terminal view down, giving the terminal back; what comes
    /// after (notes, the report) prints as without `--tui`.
    pub(crate) fn end_tui(&mut self) -> anyhow::Result<()> {
        match self.tui.take() {
            Some(t) => t.finish(),
            None => Ok(()),
        }
    }

    /// The board the load's observer feeds.
    pub(crate) fn board(&self) -> Arc<Board> {
        Arc::clone(&self.board)
    }

    /// The run is over: linger if asked (until one more scrape of the final
    /// figures, at most the linger), then stop serving.
    pub(crate) fn finish(mut self) -> anyhow::Result<()> {
        self.end_tui()?;
        if let (Some(s), Some(linger)) = (&self.serving, self.linger) {
            s.wait_served_beyond(s.served(), Instant::now() + linger);
        }
        self.serving.take();
        Ok(())
    }
}

/// `board`'s newest frame as OpenMetrics text.
fn board_source(board: &Arc<Board>) -> Source {
    let b = Arc::clone(board);
    Arc::new(move || openmetrics::render(&b.frame()))
}

/// `kurabe worker --prometheus-addr`: one endpoint for the worker's life,
/// serving the figures of its current share (between shares, the last
/// one's final figures; before the first, zeros).
pub(crate) struct WorkerLive {
    slot: Arc<Slot>,
    _serving: Serving,
}

impl WorkerLive {
    /// Bind `given` (before the worker registers: a bad or taken address
    /// is a setup error) and serve there.
    pub(crate) fn start(given: &str) -> anyhow::Result<WorkerLive> {
        let slot = Arc::new(Slot::new());
        let s = Arc::clone(&slot);
        let serving = serve(given, Arc::new(move || openmetrics::render(&s.frame())))?;
        Ok(WorkerLive {
            slot,
            _serving: serving,
        })
    }
}

impl ShareWatch for WorkerLive {
    fn share(&self, _run_id: i64, load: &LoadSpec) -> Arc<dyn Observer + Send + Sync> {
        // The share was checked before it started; a spec that no longer
        // checks only loses the view's name and limits.
        let info = kurabe_http::load::check(load, &Names::FLAGS)
            .map(|c| RunInfo::of(load, &c))
            .unwrap_or_default();
        self.slot.begin(info)
    }
}

/// Bind `given` and serve `source` there (the address on stderr).
fn serve(given: &str, source: Source) -> anyhow::Result<Serving> {
    let endpoint = Endpoint::bind(addr::parse(given)?)?;
    let serving = endpoint
        .serve(source, openmetrics::CONTENT_TYPE)
        .context("--prometheus-addr: cannot start the endpoint's thread")?;
    let addr = serving.local_addr();
    crate::tell(kurabe_model::notice::Notice::ServingMetrics { addr });
    Ok(serving)
}

/// The live views of `kurabe run`: one endpoint and one terminal view for
/// the whole experiment, showing each http load in turn (the slot's
/// current board) under the run in flight.
pub(crate) struct RunLive {
    watch: Arc<RunWatch>,
    serving: Option<Serving>,
    linger: Option<Duration>,
    tui: Option<Tui>,
}

/// Which run is in flight, and the board of its load: what the runner's
/// http loads report to.
#[derive(Debug)]
pub(crate) struct RunWatch {
    slot: Slot,
    title: String,
    now: Mutex<RunNow>,
}

/// The run in flight, as its events said.
#[derive(Debug, Clone, Default)]
struct RunNow {
    /// "[3/12] round 1: a / w".
    run: String,
    /// Its variant and workload, as metric labels.
    labels: Vec<(String, String)>,
    /// Its load is the warm-up.
    warmup: bool,
}

impl RunLive {
    /// Start what `args` ask for, the view under `title`; `None` when
    /// nothing is asked. Binds before any run starts.
    fn start(
        args: &LiveArgs,
        title: String,
        interrupt: &Arc<Stop>,
    ) -> anyhow::Result<Option<RunLive>> {
        if args.prometheus_addr.is_none() && !args.tui {
            return Ok(None);
        }
        let watch = Arc::new(RunWatch {
            slot: Slot::new(),
            title,
            now: Mutex::new(RunNow::default()),
        });
        let serving = match &args.prometheus_addr {
            Some(given) => {
                let w = Arc::clone(&watch);
                Some(serve(
                    given,
                    Arc::new(move || openmetrics::render(&w.slot.frame())),
                )?)
            }
            None => None,
        };
        let tui = match args.tui {
            true => Some(Tui::start(watch.picture(), Arc::clone(interrupt))?),
            false => None,
        };
        Ok(Some(RunLive {
            watch,
            serving,
            linger: args.prometheus_linger,
            tui,
        }))
    }

    /// The experiment is over: give the terminal back, linger if asked,
    /// stop serving.
    fn finish(mut self) -> anyhow::Result<()> {
        let drawn = self.tui.take().map_or(Ok(()), Tui::finish);
        if let (Some(s), Some(linger)) = (&self.serving, self.linger) {
            s.wait_served_beyond(s.served(), Instant::now() + linger);
        }
        self.serving.take();
        drawn
    }
}

impl RunWatch {
    /// Follow the runner: a run starting is the one in flight, on a fresh
    /// board until its load begins (a workload that is not http has none).
    fn event(&self, e: &Event<'_>) {
        let Event::RunStart {
            variant, workload, ..
        } = e
        else {
            return;
        };
        let labels = vec![
            ("variant".to_owned(), (*variant).to_owned()),
            ("workload".to_owned(), (*workload).to_owned()),
        ];
        *lock(&self.now) = RunNow {
            run: kurabe_report::progress::event_line(e),
            labels: labels.clone(),
            warmup: false,
        };
        self.slot.begin(RunInfo {
            labels,
            ..RunInfo::default()
        });
    }

    /// The view's picture: the current board under the run in flight.
    fn picture(self: &Arc<Self>) -> Picture {
        let w = Arc::clone(self);
        Arc::new(move || {
            let now = lock(&w.now).clone();
            let phase = if now.warmup { "  (warm-up)" } else { "" };
            let title = format!("{}  {}{phase}", w.title, now.run);
            (w.slot.frame(), title)
        })
    }
}

impl LoadWatch for RunWatch {
    fn begin(&self, spec: &LoadSpec, warmup: bool) -> Arc<dyn Observer + Send + Sync> {
        // The runner checked the spec before this load; one that no longer
        // checks only loses the view's name and limits.
        let mut info = kurabe_http::load::check(spec, &Names::PLAN)
            .map(|c| RunInfo::of(spec, &c))
            .unwrap_or_default();
        let mut now = lock(&self.now);
        now.warmup = warmup;
        info.labels.clone_from(&now.labels);
        if warmup {
            info.labels.push(("phase".into(), "warm-up".into()));
        }
        self.slot.begin(info)
    }
}

/// Lock, whatever a panicking holder left.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where an experiment's progress goes (`kurabe run`, `kurabe http A B`).
pub(crate) struct Progress<'a> {
    /// `-q`: nowhere.
    pub quiet: bool,
    /// The live view's first words.
    pub title: String,
    /// What the bar (or, without a terminal, stderr) makes of an event.
    pub bar: &'a dyn Fn(&RunsBar, &Event<'_>),
    /// The line an event leaves under the terminal view, printed once the
    /// view is down.
    pub held: fn(&Event<'_>) -> Option<String>,
}

/// Run the experiment with its progress on a bar or stderr and, when
/// `live` asks, every http load on the live views (one endpoint, one
/// terminal view for all the runs; `q` triggers `stop`).
pub(crate) fn run_experiment(
    plan: &kurabe_model::plan::Plan,
    store: &mut kurabe_store::Store,
    mut opts: kurabe_lab::RunOptions,
    stop: &Arc<Stop>,
    live: &LiveArgs,
    to: Progress<'_>,
) -> anyhow::Result<kurabe_lab::Outcome> {
    let live = RunLive::start(live, to.title, stop)?;
    let watch = live.as_ref().map(|l| Arc::clone(&l.watch));
    opts.live = watch.clone().map(|w| w as Arc<dyn LoadWatch>);
    let tui = live.as_ref().is_some_and(|l| l.tui.is_some());
    let bar = RunsBar::new(to.quiet || tui);
    let mut held = Vec::new();
    let mut progress = |e: &Event<'_>| {
        if let Some(w) = &watch {
            w.event(e);
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
    for line in held {
        eprintln!("{line}");
    }
    Ok(outcome?)
}
