//! The live views of a load run in this process (issue 26): the flags,
//! the Prometheus endpoint's start (bound before any request, so a bad or
//! taken address is a setup error) and its linger after the run, the
//! terminal view's start and end (`crate::tui`), and a worker's endpoint,
//! which serves each of its shares in turn.
//!
//! Owns the flags and the glue. Must not compute figures (the board's,
//! `kurabe_live::board`) nor render them (`kurabe_live::openmetrics`,
//! `kurabe_live::view`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use kurabe_fleet::worker::ShareWatch;
use kurabe_http::load::{Names, Observer};
use kurabe_live::board::{Board, RunInfo};
use kurabe_live::endpoint::{Endpoint, Serving, Source};
use kurabe_live::slot::Slot;
use kurabe_live::{addr, openmetrics};
use kurabe_model::load::LoadSpec;

use kurabe_model::stop::Stop;

use crate::flags::parse_duration;
use crate::tui::Tui;

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
            true => Some(Tui::start(
                Arc::clone(&board),
                title,
                Arc::clone(interrupt),
            )?),
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
    eprintln!(
        "kurabe: serving Prometheus metrics at http://{}/metrics",
        serving.local_addr()
    );
    Ok(serving)
}
