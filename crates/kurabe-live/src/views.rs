//! The live views of loads in this process, started and ended together
//! (issue 26): the Prometheus endpoint (bound before any request, so a bad
//! or taken address is a setup error) and its linger after the run, and
//! the terminal view ([`crate::tui`]). Three shapes: [`Live`] for one load
//! (`kurabe http`, `kurabe replay`), [`WorkerLive`] for a fleet worker's
//! endpoint, which serves each of its shares in turn, and [`RunLive`] for
//! an experiment, which shows each of its http loads under the run in
//! flight ([`RunWatch`]).
//!
//! Owns the start, the linger and the end. Must not compute figures
//! ([`crate::board`]), render them ([`crate::openmetrics`],
//! [`crate::view`]) or print: the endpoint's address goes to the caller's
//! `bound`, which says it before the terminal view takes the screen.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kurabe_http::load::{Names, Observer};
use kurabe_model::load::LoadSpec;
use kurabe_model::plan::Plan;
use kurabe_stop::Stop;

use crate::board::{Board, RunInfo};
use crate::endpoint::{BindError, Endpoint, Serving, Source};
use crate::slot::Slot;
use crate::tui::{Picture, Tui, TuiError};
use crate::{addr, openmetrics};

/// What the caller asked to see (`--prometheus-addr`, `--prometheus-linger`, `--tui`).
#[derive(Debug, Clone, Default)]
pub struct ViewOptions {
    /// Where to serve OpenMetrics, as given (`:PORT`, `HOST:PORT`).
    pub prometheus_addr: Option<String>,
    /// How long to keep serving the final figures after the load.
    pub linger: Option<Duration>,
    /// Draw the live terminal view.
    pub tui: bool,
}

impl ViewOptions {
    /// Refuse what cannot work before anything starts: `--tui` with no
    /// terminal on stdout, or with a workload of `plan` writing to the
    /// terminal (it would scribble over the view).
    pub fn check(&self, plan: Option<&Plan>) -> Result<(), TuiError> {
        if !self.tui {
            return Ok(());
        }
        crate::tui::check_terminal()?;
        match plan.and_then(Plan::inherits_terminal) {
            Some(w) => Err(TuiError::Inherits(w.name.clone())),
            None => Ok(()),
        }
    }

    /// Whether any view is asked for.
    fn any(&self) -> bool {
        self.prometheus_addr.is_some() || self.tui
    }
}

/// Why a live view cannot start or end cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// `--prometheus-addr` does not parse.
    #[error(transparent)]
    Addr(#[from] addr::AddrError),
    /// The address cannot be listened on.
    #[error(transparent)]
    Bind(#[from] BindError),
    /// No thread for the endpoint.
    #[error("--prometheus-addr: cannot start the endpoint's thread: {0}")]
    Thread(#[source] std::io::Error),
    /// The terminal view's own trouble.
    #[error(transparent)]
    Tui(#[from] TuiError),
}

/// Told the endpoint's address once it listens (before the terminal view starts).
pub type Bound<'a> = &'a mut dyn FnMut(SocketAddr);

/// The endpoint and the terminal view, whichever were asked for.
struct Views {
    serving: Option<Serving>,
    linger: Option<Duration>,
    tui: Option<Tui>,
}

impl Views {
    /// Serve `source` and draw `picture` as `opts` ask.
    fn start(
        opts: &ViewOptions,
        source: Source,
        picture: Picture,
        interrupt: &Arc<Stop>,
        bound: Bound<'_>,
    ) -> Result<Views, ViewError> {
        let serving = match &opts.prometheus_addr {
            Some(given) => Some(serve(given, source, bound)?),
            None => None,
        };
        let tui = match opts.tui {
            true => Some(Tui::start(picture, Arc::clone(interrupt))?),
            false => None,
        };
        Ok(Views {
            serving,
            linger: opts.linger,
            tui,
        })
    }

    /// Take the terminal view down, giving the terminal back.
    fn end_tui(&mut self) -> Result<(), TuiError> {
        self.tui.take().map_or(Ok(()), Tui::finish)
    }

    /// Give the terminal back, linger if asked (until one more scrape of
    /// the final figures, at most the linger), stop serving.
    fn finish(mut self) -> Result<(), TuiError> {
        let drawn = self.end_tui();
        if let (Some(s), Some(linger)) = (&self.serving, self.linger) {
            s.wait_served_beyond(s.served(), Instant::now() + linger);
        }
        self.serving.take();
        drawn
    }
}

/// Bind `given` and serve `source` there, telling `bound` the address.
pub fn serve(given: &str, source: Source, bound: Bound<'_>) -> Result<Serving, ViewError> {
    let endpoint = Endpoint::bind(addr::parse(given)?)?;
    let serving = endpoint
        .serve(source, openmetrics::CONTENT_TYPE)
        .map_err(ViewError::Thread)?;
    bound(serving.local_addr());
    Ok(serving)
}

/// The live views of one load: the board, the endpoint serving it, the
/// terminal view drawing it.
pub struct Live {
    board: Arc<Board>,
    views: Views,
}

impl Live {
    /// Start what `opts` ask for, for a run described by `info` (`title`:
    /// the view's first words; `interrupt`: what `q` triggers); `None` when
    /// nothing is asked. Binds before any request is sent.
    pub fn start(
        opts: &ViewOptions,
        info: RunInfo,
        title: String,
        interrupt: &Arc<Stop>,
        bound: Bound<'_>,
    ) -> Result<Option<Live>, ViewError> {
        if !opts.any() {
            return Ok(None);
        }
        let board = Arc::new(Board::new(info));
        let b = Arc::clone(&board);
        let source: Source = Arc::new(move || openmetrics::render(&b.frame()));
        let b = Arc::clone(&board);
        let picture: Picture = Arc::new(move || (b.frame(), title.clone()));
        let views = Views::start(opts, source, picture, interrupt, bound)?;
        Ok(Some(Live { board, views }))
    }

    /// The terminal view is up (then nothing else may draw on the terminal).
    pub fn has_tui(&self) -> bool {
        self.views.tui.is_some()
    }

    /// Take the terminal view down, giving the terminal back; what comes
    /// after (notes, the report) prints as without `--tui`.
    pub fn end_tui(&mut self) -> Result<(), TuiError> {
        self.views.end_tui()
    }

    /// The board the load's observer feeds.
    pub fn board(&self) -> Arc<Board> {
        Arc::clone(&self.board)
    }

    /// The run is over: linger if asked, then stop serving.
    pub fn finish(self) -> Result<(), TuiError> {
        self.views.finish()
    }
}

/// A fleet worker's endpoint (`kurabe worker --prometheus-addr`): one for
/// the worker's life, serving the figures of its current share (between
/// shares, the last one's final figures; before the first, zeros).
pub struct WorkerLive {
    slot: Arc<Slot>,
    _serving: Serving,
}

impl WorkerLive {
    /// Bind `given` (before the worker registers: a bad or taken address
    /// is a setup error) and serve there.
    pub fn start(given: &str, bound: Bound<'_>) -> Result<WorkerLive, ViewError> {
        let slot = Arc::new(Slot::new());
        let s = Arc::clone(&slot);
        let serving = serve(
            given,
            Arc::new(move || openmetrics::render(&s.frame())),
            bound,
        )?;
        Ok(WorkerLive {
            slot,
            _serving: serving,
        })
    }

    /// The observer of a share about to run `load`.
    pub fn share(&self, load: &LoadSpec) -> Arc<dyn Observer + Send + Sync> {
        // The share was checked before it started; a spec that no longer
        // checks only loses the view's name and limits.
        let info = kurabe_http::load::check(load, &Names::FLAGS)
            .map(|c| RunInfo::of(load, &c))
            .unwrap_or_default();
        self.slot.begin(info)
    }
}

/// The live views of an experiment: one endpoint and one terminal view
/// for the whole of it, showing each http load in turn (the slot's
/// current board) under the run in flight.
pub struct RunLive {
    watch: Arc<RunWatch>,
    views: Views,
}

/// Which run is in flight, and the board of its load: what the runner's
/// http loads report to.
#[derive(Debug)]
pub struct RunWatch {
    slot: Slot,
    title: String,
    now: Mutex<RunNow>,
}

/// The run in flight.
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
    /// Start what `opts` ask for, the view under `title`; `None` when
    /// nothing is asked. Binds before any run starts.
    pub fn start(
        opts: &ViewOptions,
        title: String,
        interrupt: &Arc<Stop>,
        bound: Bound<'_>,
    ) -> Result<Option<RunLive>, ViewError> {
        if !opts.any() {
            return Ok(None);
        }
        let watch = Arc::new(RunWatch {
            slot: Slot::new(),
            title,
            now: Mutex::new(RunNow::default()),
        });
        let w = Arc::clone(&watch);
        let source: Source = Arc::new(move || openmetrics::render(&w.slot.frame()));
        let views = Views::start(opts, source, watch.picture(), interrupt, bound)?;
        Ok(Some(RunLive { watch, views }))
    }

    /// What the runner's loads and events report to.
    pub fn watch(&self) -> Arc<RunWatch> {
        Arc::clone(&self.watch)
    }

    /// The terminal view is up.
    pub fn has_tui(&self) -> bool {
        self.views.tui.is_some()
    }

    /// The experiment is over: give the terminal back, linger if asked,
    /// stop serving.
    pub fn finish(self) -> Result<(), TuiError> {
        self.views.finish()
    }
}

impl RunWatch {
    /// A run starts (`line`: the progress line naming it): it is the one
    /// in flight, on a fresh board until its load begins (a workload that
    /// is not http has none).
    pub fn run_started(&self, line: String, variant: &str, workload: &str) {
        let labels = vec![
            ("variant".to_owned(), variant.to_owned()),
            ("workload".to_owned(), workload.to_owned()),
        ];
        *lock(&self.now) = RunNow {
            run: line,
            labels: labels.clone(),
            warmup: false,
        };
        self.slot.begin(RunInfo {
            labels,
            ..RunInfo::default()
        });
    }

    /// The observer of the run's load of `spec` (`warmup`: its warm-up).
    pub fn begin(&self, spec: &LoadSpec, warmup: bool) -> Arc<dyn Observer + Send + Sync> {
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

/// Lock, whatever a panicking holder left.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
