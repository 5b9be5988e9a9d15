//! The live-view flags of a load (issue 26) and the edge of
//! `kurabe_live::here`: the flags as [`ViewOptions`], the endpoint's
//! address and a load's notes told on stderr, an experiment's held lines
//! printed once the terminal view is down.
//!
//! Owns the flags and what reaches stderr. Must not compute, serve or
//! draw figures, nor watch a run (`kurabe_live`).

use std::sync::Arc;
use std::time::Duration;

use kurabe_http::load::{Checked, Taps};
use kurabe_lab::http_load::LocalRun;
use kurabe_lab::http_load::ServerChoice;
use kurabe_live::here::{HereError, Watched};
use kurabe_live::views::ViewOptions;
use kurabe_model::http::HttpReport;
use kurabe_model::load::LoadSpec;
use kurabe_model::notice::Notice;
use kurabe_stop::Stop;

use crate::flags::parse_duration;

pub(crate) use kurabe_live::here::Progress;

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
    /// Refuse what cannot work before anything starts
    /// ([`ViewOptions::check`]), for `plan`'s workloads too.
    pub(crate) fn check(&self, plan: Option<&kurabe_model::plan::Plan>) -> anyhow::Result<()> {
        Ok(self.options().check(plan)?)
    }

    /// One load of `command` (`kurabe http`) in this process under the
    /// views the flags ask for, and whether a signal stopped it: the stop
    /// installed ([`stop_for_load`]), the server to measure found (a note told when it
    /// cannot be), then [`kurabe_live::here::run_here`], its notes told.
    pub(crate) fn run_here(
        &self,
        load: (&LoadSpec, Checked),
        (server, profile, command): (ServerChoice, Option<&crate::flags::ProfileArg>, &str),
        (progress, taps): (bool, Taps),
    ) -> anyhow::Result<(HttpReport, bool)> {
        let interrupt = stop_for_load()?;
        let (server, note) = server.resolve()?;
        if let Some(note) = note {
            crate::tell(note);
        }
        let profile = match profile {
            Some(p) => p.profiling_server(server, !progress)?,
            None => kurabe_model::profile::Profiling::Off,
        };
        let server = server.map(|pid| kurabe_lab::http_load::Server { pid, profile });
        let watched = Watched {
            views: &self.options(),
            command,
            progress,
            taps,
            bound: &mut serving,
        };
        let run = kurabe_live::here::run_here(load, server, watched, &interrupt);
        Ok((told(run)?, interrupt.is_set()))
    }

    /// The views the flags ask for.
    fn options(&self) -> ViewOptions {
        ViewOptions {
            prometheus_addr: self.prometheus_addr.clone(),
            linger: self.prometheus_linger,
            tui: self.tui,
        }
    }
}

/// The stop of loads run in this process, and their file limit raised:
/// a first signal ends them gracefully, a second exits at once (nothing
/// of kurabe's is left behind: the drain of requests in flight, a
/// share's or the database's answer need not be waited for).
pub(crate) fn stop_for_load() -> anyhow::Result<Arc<Stop>> {
    let stop = crate::signal::install_stop()?;
    crate::signal::force_exit_on_second_signal();
    kurabe_http::raise_fd_limit();
    Ok(stop)
}

/// Say where the metrics are served.
pub(crate) fn serving(addr: std::net::SocketAddr) {
    crate::tell(Notice::ServingMetrics { addr });
}

/// A load's report, its notes told; its error as such (`main` finds a
/// worker's panic, 70, and an interruption in its chain).
pub(crate) fn told(run: Result<LocalRun, HereError>) -> anyhow::Result<HttpReport> {
    let run = run?;
    run.notes.into_iter().for_each(crate::tell);
    Ok(run.report)
}

/// [`kurabe_live::here::run_experiment`] with the views `live` asks for,
/// the held lines printed once the view is down.
pub(crate) fn run_experiment(
    plan: &kurabe_model::plan::Plan,
    store: &mut kurabe_store::Store,
    opts: kurabe_lab::RunOptions,
    stop: &Arc<Stop>,
    live: &LiveArgs,
    to: Progress<'_>,
) -> anyhow::Result<kurabe_lab::Outcome> {
    let views = (&live.options(), &mut serving as &mut dyn FnMut(_));
    let ran = kurabe_live::here::run_experiment(plan, store, opts, stop, views, to)?;
    for line in ran.held {
        eprintln!("{line}");
    }
    Ok(ran.outcome?)
}
