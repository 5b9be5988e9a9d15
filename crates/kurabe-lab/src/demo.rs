//! `kurabe demo`: the built-in server in this process on a free loopback
//! port, the load `kurabe http -k -c C -t D` sends to it, and the server's
//! own request count set against the client's.
//!
//! Owns the wiring of these parts (the server gets half the cores: client
//! and server share this machine). Must not print or run the load: the
//! caller runs it through [`crate::http_load`] and says what it found.

use std::time::Duration;

use kurabe_http::load::{Names, SpecError};
use kurabe_http::serve::{self, ServeConfig, Server};
use kurabe_model::ending::Ending;
use kurabe_model::http::HttpReport;
use kurabe_model::load::LoadSpec;
use kurabe_model::plan::HumanDuration;

/// Why the demo could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// No loopback port to listen on.
    #[error("cannot listen on a loopback port")]
    Listen(#[source] std::io::Error),
    /// The server's threads did not start.
    #[error("cannot start the built-in server")]
    Start(#[source] std::io::Error),
    /// No time to put load on the server.
    #[error("--duration 0: give a positive duration, e.g. --duration 3s")]
    NoDuration,
    /// The load does not check (the flags' own message).
    #[error(transparent)]
    Load(#[from] SpecError),
}

/// A running demo: the server and the load aimed at it.
pub struct Demo {
    /// The built-in server, serving until stopped.
    pub server: Server,
    /// Its worker threads.
    pub threads: usize,
    /// `kurabe http -k -c concurrency -t duration URL`, checked as the CLI checks it.
    pub load: LoadSpec,
}

impl Demo {
    /// Start the server (burning `work_us` of CPU per request) and resolve
    /// the load of `concurrency` keep-alive connections for `duration`.
    pub fn start(
        work_us: u64,
        concurrency: u32,
        duration: Duration,
        ncpus: u32,
    ) -> Result<Demo, DemoError> {
        if duration.is_zero() {
            return Err(DemoError::NoDuration);
        }
        let threads = (ncpus / 2).max(1) as usize;
        let listener = serve::bind("127.0.0.1:0".parse().expect("valid address"))
            .map_err(DemoError::Listen)?;
        let config = ServeConfig {
            work_us,
            threads,
            ..ServeConfig::default()
        };
        let server = Server::start(listener, config).map_err(DemoError::Start)?;
        let load = LoadSpec {
            concurrency,
            keep_alive: true,
            duration: Some(HumanDuration(duration)),
            ..LoadSpec::for_url(&serve::url_of(server.addr()))
        };
        kurabe_http::load::check(&load, &Names::FLAGS)?;
        Ok(Demo {
            server,
            threads,
            load,
        })
    }

    /// How the demo ended: interrupted by `signalled`, or failed when the
    /// server did not serve every request the client `sent`.
    pub fn ending((served, sent): (u64, u64), signalled: bool) -> Ending {
        match (signalled, served == sent) {
            (true, _) => Ending::Signalled(None),
            (false, true) => Ending::Done,
            (false, false) => Ending::Failed(None),
        }
    }

    /// (requests the server served, requests the client sent), after
    /// waiting up to 2 s for requests still in the server's socket buffers.
    pub fn served(&self, report: &HttpReport) -> (u64, u64) {
        let sent = report.complete_requests + report.failed_requests + report.in_flight_at_end;
        let served = self
            .server
            .stats()
            .wait_served(sent, Duration::from_secs(2));
        (served, sent)
    }
}
