//! The live-view flags of a load and their glue (issue 26): the flags
//! as [`ViewOptions`], the views' start with the endpoint's address told
//! on stderr, a worker's and an experiment's views as the fleet's and
//! the runner's watchers, and an experiment's progress beside them.
//!
//! Owns the flags and the glue. Must not compute, serve or draw figures
//! (`kurabe_live`: the board, the endpoint, the terminal view).

use std::sync::Arc;
use std::time::Duration;

use kurabe_fleet::worker::ShareWatch;
use kurabe_http::load::Observer;
use kurabe_lab::measure::LoadWatch;
use kurabe_lab::Event;
use kurabe_live::board::RunInfo;
use kurabe_live::views::{RunLive, RunWatch, ViewOptions, WorkerLive};
use kurabe_model::load::LoadSpec;
use kurabe_model::notice::Notice;
use kurabe_report::bars::RunsBar;
use kurabe_stop::Stop;

use crate::flags::parse_duration;

pub(crate) use kurabe_live::views::Live;

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
            kurabe_live::tui::check_terminal()?;
        }
        Ok(())
    }

    /// The views the flags ask for.
    fn options(&self) -> ViewOptions {
        ViewOptions {
            prometheus_addr: self.prometheus_addr.clone(),
            linger: self.prometheus_linger,
            tui: self.tui,
        }
    }

    /// Start the views of one load (see [`Live::start`]).
    pub(crate) fn start(
        &self,
        info: RunInfo,
        title: String,
        interrupt: &Arc<Stop>,
    ) -> anyhow::Result<Option<Live>> {
        Ok(Live::start(
            &self.options(),
            info,
            title,
            interrupt,
            &mut serving,
        )?)
    }
}

/// Say where the metrics are served.
fn serving(addr: std::net::SocketAddr) {
    crate::tell(Notice::ServingMetrics { addr });
}

/// `kurabe worker --prometheus-addr`: the endpoint, each share's observer.
pub(crate) struct WorkerViews(WorkerLive);

impl WorkerViews {
    /// Bind `given` before the worker registers.
    pub(crate) fn start(given: &str) -> anyhow::Result<WorkerViews> {
        Ok(WorkerViews(WorkerLive::start(given, &mut serving)?))
    }
}

impl ShareWatch for WorkerViews {
    fn share(&self, _run_id: i64, load: &LoadSpec) -> Arc<dyn Observer + Send + Sync> {
        self.0.share(load)
    }
}

/// An experiment's loads on its live views.
#[derive(Debug)]
struct RunViews(Arc<RunWatch>);

impl LoadWatch for RunViews {
    fn begin(&self, spec: &LoadSpec, warmup: bool) -> Arc<dyn Observer + Send + Sync> {
        self.0.begin(spec, warmup)
    }
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
    let live = RunLive::start(&live.options(), to.title, stop, &mut serving)?;
    let watch = live.as_ref().map(RunLive::watch);
    opts.live = watch
        .clone()
        .map(|w| Arc::new(RunViews(w)) as Arc<dyn LoadWatch>);
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
    for line in held {
        eprintln!("{line}");
    }
    Ok(outcome?)
}
