//! `kurabe demo`: the built-in server in this process on a free loopback
//! port, the load `kurabe http -k -c C -t D` sends to it (or, with
//! [`DemoProtocol::Http3`], `kurabe http --http3 -c C -t D` to its HTTP/3
//! side, trusting its self-signed certificate), and the server's own
//! request count set against the client's.
//!
//! Owns the wiring of these parts (the server gets half the cores: client
//! and server share this machine). Must not print or run the load: the
//! caller runs it through [`crate::http_load`] and says what it found.

use std::time::Duration;

use kurabe_http::load::{Names, SpecError};
use kurabe_http::serve::h3::{CaFile, Certificate, Http3, Http3Error};
use kurabe_http::serve::{self, Listeners, ServeConfig, Server};
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
    /// The server's HTTP/3 side could not be set up.
    #[error(transparent)]
    Http3(#[from] Http3Error),
    /// The self-signed certificate could not be written for the client to trust.
    #[error("cannot write the server's certificate to a temporary file")]
    CaFile(#[source] std::io::Error),
}

/// What the demo's load speaks to the built-in server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DemoProtocol {
    /// HTTP/1.1 keep-alive connections (`kurabe http -k`).
    Http1,
    /// HTTP/3 (`kurabe http --http3`) to the server's UDP side, its
    /// self-signed certificate trusted (`--cacert`).
    Http3,
}

/// A running demo: the server and the load aimed at it.
pub struct Demo {
    /// The built-in server, serving until stopped.
    pub server: Server,
    /// Its threads that serve the load (HTTP/3's is one).
    pub threads: usize,
    /// The URL the load goes to.
    pub url: String,
    /// `kurabe http -k -c concurrency -t duration URL`, checked as the CLI checks it.
    pub load: LoadSpec,
    /// The certificate the HTTP/3 load trusts; removed with the demo.
    _ca: Option<CaFile>,
}

impl Demo {
    /// Start the server (burning `work_us` of CPU per request) and resolve
    /// the load of `concurrency` keep-alive connections for `duration`,
    /// speaking `protocol`.
    pub fn start(
        work_us: u64,
        (concurrency, duration): (u32, Duration),
        ncpus: u32,
        protocol: DemoProtocol,
    ) -> Result<Demo, DemoError> {
        if duration.is_zero() {
            return Err(DemoError::NoDuration);
        }
        let workers = (ncpus / 2).max(1) as usize;
        let listener = serve::bind("127.0.0.1:0".parse().expect("valid address"))
            .map_err(DemoError::Listen)?;
        let addr = listener.local_addr().map_err(DemoError::Listen)?;
        let (listeners, url, ca) = match protocol {
            DemoProtocol::Http1 => (Listeners::from(listener), serve::url_of(addr), None),
            DemoProtocol::Http3 => {
                let idle = serve::DEFAULT_IDLE_TIMEOUT;
                let h3 = Http3::bind(addr, &Certificate::SelfSigned, idle)?;
                let url = h3.url().map_err(DemoError::Listen)?;
                let ca = (h3.write_ca(&std::env::temp_dir())).map_err(DemoError::CaFile)?;
                (Listeners::from(listener).with_http3(h3), url, ca)
            }
        };
        let config = ServeConfig {
            work_us,
            threads: workers,
            ..ServeConfig::default()
        };
        let server = Server::start(listeners, config).map_err(DemoError::Start)?;
        let load = LoadSpec {
            concurrency,
            keep_alive: true,
            http3: protocol == DemoProtocol::Http3,
            ca_file: ca.as_ref().map(|c| c.path().to_owned()),
            duration: Some(HumanDuration(duration)),
            ..LoadSpec::for_url(&url)
        };
        kurabe_http::load::check(&load, &Names::FLAGS)?;
        Ok(Demo {
            server,
            threads: match protocol {
                DemoProtocol::Http1 => workers,
                DemoProtocol::Http3 => 1,
            },
            url,
            load,
            _ca: ca,
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
