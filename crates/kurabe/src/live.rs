//! The live views of a load run in this process (issue 26): the flags,
//! the Prometheus endpoint's start (bound before any request, so a bad or
//! taken address is a setup error) and its linger after the run.
//!
//! Owns the flags and the glue. Must not compute figures (the board's,
//! `kurabe_live::board`) nor render them (`kurabe_live::openmetrics`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use kurabe_live::board::{Board, RunInfo};
use kurabe_live::endpoint::{Endpoint, Serving, Source};
use kurabe_live::{addr, openmetrics};

use crate::flags::parse_duration;

/// The live-view flags of a load.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct LiveArgs {
    /// Serve Prometheus metrics (OpenMetrics text at http://ADDR/metrics) while the load runs: ":PORT" listens on 127.0.0.1 only, "0.0.0.0:PORT" or "[::]:PORT" on every interface, ":0" on any free port (the address is printed on stderr).
    #[arg(long, value_name = "ADDR")]
    pub prometheus_addr: Option<String>,
    /// After the load, keep serving its final figures (they match the report) until one more scrape came or this long passed ("5s") [default: stop at once].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "prometheus_addr")]
    pub prometheus_linger: Option<Duration>,
}

/// The live views of one run: the board, and the endpoint serving it.
pub(crate) struct Live {
    board: Arc<Board>,
    serving: Option<Serving>,
    linger: Option<Duration>,
}

impl Live {
    /// Start what `args` ask for, for a run described by `info`; `None`
    /// when nothing is asked. Binds before any request is sent.
    pub(crate) fn start(args: &LiveArgs, info: RunInfo) -> anyhow::Result<Option<Live>> {
        let Some(given) = &args.prometheus_addr else {
            return Ok(None);
        };
        let at = addr::parse(given)?;
        let endpoint = Endpoint::bind(at)?;
        let board = Arc::new(Board::new(info));
        let b = Arc::clone(&board);
        let source: Source = Arc::new(move || openmetrics::render(&b.frame()));
        let serving = endpoint
            .serve(source, openmetrics::CONTENT_TYPE)
            .context("--prometheus-addr: cannot start the endpoint's thread")?;
        eprintln!(
            "kurabe: serving Prometheus metrics at http://{}/metrics",
            serving.local_addr()
        );
        Ok(Some(Live {
            board,
            serving: Some(serving),
            linger: args.prometheus_linger,
        }))
    }

    /// The board the load's observer feeds.
    pub(crate) fn board(&self) -> &Board {
        &self.board
    }

    /// The run is over: linger if asked (until one more scrape of the final
    /// figures, at most the linger), then stop serving.
    pub(crate) fn finish(mut self) {
        if let (Some(s), Some(linger)) = (&self.serving, self.linger) {
            s.wait_served_beyond(s.served(), Instant::now() + linger);
        }
        self.serving.take();
    }
}
