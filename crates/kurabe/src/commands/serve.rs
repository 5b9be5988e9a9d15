//! `kurabe serve`: run the built-in tunable HTTP target server in the foreground.
//!
//! Owns flag parsing and the process edge (bound address on stdout, and
//! with `--http3` the HTTP/3 URL as the second line and the self-signed
//! certificate's file on stderr; Ctrl-C:
//! the first stops the server gracefully, a second exits at once); the server
//! itself is `kurabe_http::serve`.

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use kurabe_http::raise_fd_limit;
use kurabe_http::serve::h3::{Certificate, Http3};
use kurabe_http::serve::{self, Listeners, ServeConfig, ServeStats};
use kurabe_model::plan::parse_positive_duration;

/// Arguments of `kurabe serve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Port to listen on; 0 picks a free one. The bound address is printed on stdout as the first line.
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Address to bind (loopback by default; use `::1` for IPv6).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// Response body length in bytes, at most 67108864 (64 MiB: every response is built in memory).
    #[arg(long, default_value_t = 13, value_name = "BYTES",
          value_parser = clap::value_parser!(u64).range(..=serve::MAX_BODY_BYTES as u64))]
    pub body_bytes: u64,
    /// CPU time to burn per request (busy loop on the worker thread's CPU clock, so the cost holds under load), microseconds, at most 10000000 (10 s); a stop signal ends it early.
    #[arg(long, default_value_t = 0, value_name = "US",
          value_parser = clap::value_parser!(u64).range(..=serve::MAX_WORK_US))]
    pub work_us: u64,
    /// Delay every response by this many milliseconds (other connections keep being served).
    #[arg(long, default_value_t = 0, value_name = "MS")]
    pub latency_ms: u64,
    /// Serve requests one at a time through one simulated resource (a lock, a one-connection database) that each holds for US microseconds of wall-clock time, queued in arrival order across all threads: the server's capacity is exactly 1000000/US requests per second whatever else the machine runs (--work-us costs CPU, so its capacity depends on the CPU the server gets); at most 10000000 (10 s).
    #[arg(long, default_value_t = 0, value_name = "US",
          value_parser = clap::value_parser!(u64).range(..=serve::MAX_SERVICE_US))]
    pub service_us: u64,
    /// Allocate, touch and free this many KiB per request.
    #[arg(long, default_value_t = 0, value_name = "KB")]
    pub alloc_kb: usize,
    /// Keep this many bytes per request forever: a deliberate leak for leak-detection demos.
    #[arg(long, default_value_t = 0, value_name = "BYTES")]
    pub leak_bytes: usize,
    /// Status code of every response.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u16).range(100..=999))]
    pub status: u16,
    /// Send bodies with `Transfer-Encoding: chunked` (to HTTP/1.1 clients).
    #[arg(long)]
    pub chunked: bool,
    /// Answer `Connection: close` and close the connection after every response.
    #[arg(long)]
    pub close: bool,
    /// Worker threads, each with its own event loop [default: number of CPUs].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    /// Close a connection whose request head has not arrived completely this long after the connection opened or the head's first byte (slowloris protection), e.g. 10s or 500ms.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_positive_duration)]
    pub header_timeout: Duration,
    /// Close a connection when no bytes have moved either way for this long (idle keep-alive, stalled body, a client that stopped reading), e.g. 60s.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_positive_duration)]
    pub idle_timeout: Duration,
    /// Also answer HTTP/3 (QUIC v1, TLS 1.3, ALPN h3) on UDP on the same port number; its URL (https://localhost:PORT/ on 127.0.0.1) is the second line on stdout. One thread of its own applies --body-bytes, --status, --work-us, --alloc-kb, --leak-bytes, --service-us (the same queue), --latency-ms and --idle-timeout; --threads, --chunked, --close and --header-timeout are HTTP/1.1's.
    #[arg(long)]
    pub http3: bool,
    /// HTTP/3's certificate chain, PEM [default: a self-signed certificate for localhost, 127.0.0.1 and ::1 made at start, written to a file named on stderr for `kurabe http --cacert FILE`].
    #[arg(long, value_name = "FILE", requires_all = ["http3", "tls_key"])]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert, PEM.
    #[arg(long, value_name = "FILE", requires_all = ["http3", "tls_cert"])]
    pub tls_key: Option<PathBuf>,
}

impl Args {
    /// The library configuration these flags describe.
    fn config(&self) -> ServeConfig {
        ServeConfig {
            body_bytes: usize::try_from(self.body_bytes).unwrap_or(usize::MAX),
            work_us: self.work_us,
            latency_ms: self.latency_ms,
            service_us: self.service_us,
            alloc_kb: self.alloc_kb,
            leak_bytes: self.leak_bytes,
            status: self.status,
            chunked: self.chunked,
            close: self.close,
            threads: self
                .threads
                .map_or_else(serve::default_threads, |t| t as usize),
            header_timeout: self.header_timeout,
            idle_timeout: self.idle_timeout,
        }
    }

    /// HTTP/3's certificate, with `--http3`.
    fn certificate(&self) -> Option<Certificate> {
        let files = self.tls_cert.clone().zip(self.tls_key.clone());
        self.http3.then_some(match files {
            Some((cert, key)) => Certificate::Files { cert, key },
            None => Certificate::SelfSigned,
        })
    }
}

/// Run `kurabe serve` until Ctrl-C or SIGTERM.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let shutdown = crate::signal::install()?;
    // Nothing outlives a forced exit: a second signal need not wait for the workers.
    crate::signal::force_exit_on_second_signal();
    raise_fd_limit();
    let addr = SocketAddr::new(args.bind, args.port);
    let listener = serve::bind(addr).with_context(|| {
        format!("cannot listen on {addr}; pick another --port (0 = any free port)")
    })?;
    let bound = listener
        .local_addr()
        .context("cannot read the bound address")?;
    let mut listeners = Listeners::from(listener);
    let mut urls = vec![serve::url_of(bound)];
    let mut ca = None;
    if let Some(cert) = args.certificate() {
        let h3 = Http3::bind(bound, &cert, args.idle_timeout)?;
        urls.push(h3.url().context("cannot read the bound address")?);
        let dir = std::env::temp_dir();
        ca = (h3.write_ca(&dir))
            .with_context(|| format!("cannot write a file in {}", dir.display()))?;
        listeners = listeners.with_http3(h3);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", urls.join("\n")).context("cannot write to stdout")?;
    out.flush().context("cannot write to stdout")?;
    drop(out);
    if let Some(ca) = &ca {
        let path = ca.path().to_owned();
        crate::tell(kurabe_model::notice::Notice::ServeCertificate { path });
    }
    let stats = ServeStats::default();
    serve::run(listeners, &args.config(), &stats, &shutdown).context("server failed")?;
    let requests = stats.requests_served.load(Ordering::Relaxed);
    crate::tell(kurabe_model::notice::Notice::ServeStopped { requests });
    Ok(ExitCode::SUCCESS)
}
