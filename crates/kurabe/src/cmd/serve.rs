//! `kurabe serve`: run the built-in tunable HTTP target server in the foreground.
//!
//! Owns flag parsing and the process edge (bound address on stdout, Ctrl-C);
//! the server itself is `kurabe_http::serve`.

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use anyhow::Context;
use kurabe_http::raise_fd_limit;
use kurabe_http::serve::{self, ServeConfig, ServeStats};

/// Arguments of `kurabe serve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Port to listen on; 0 picks a free one. The bound address is printed on stdout as the first line.
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Address to bind (loopback by default; use `::1` for IPv6).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// Response body length in bytes.
    #[arg(long, default_value_t = 13, value_name = "BYTES")]
    pub body_bytes: usize,
    /// CPU time to burn per request (busy loop on the worker thread's CPU clock, so the cost holds under load), microseconds.
    #[arg(long, default_value_t = 0, value_name = "US")]
    pub work_us: u64,
    /// Delay every response by this many milliseconds (other connections keep being served).
    #[arg(long, default_value_t = 0, value_name = "MS")]
    pub latency_ms: u64,
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
}

impl Args {
    /// The library configuration these flags describe.
    fn config(&self) -> ServeConfig {
        ServeConfig {
            body_bytes: self.body_bytes,
            work_us: self.work_us,
            latency_ms: self.latency_ms,
            alloc_kb: self.alloc_kb,
            leak_bytes: self.leak_bytes,
            status: self.status,
            chunked: self.chunked,
            close: self.close,
            threads: self
                .threads
                .map_or_else(serve::default_threads, |t| t as usize),
        }
    }
}

/// Run `kurabe serve` until Ctrl-C or SIGTERM.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let shutdown = crate::signal::install()?;
    raise_fd_limit();
    let addr = SocketAddr::new(args.bind, args.port);
    let listener = serve::bind(addr).with_context(|| {
        format!("cannot listen on {addr}; pick another --port (0 = any free port)")
    })?;
    let bound = listener
        .local_addr()
        .context("cannot read the bound address")?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", serve::url_of(bound)).context("cannot write to stdout")?;
    out.flush().context("cannot write to stdout")?;
    drop(out);
    let stats = ServeStats::default();
    serve::run(listener, &args.config(), &stats, &shutdown).context("server failed")?;
    eprintln!(
        "kurabe serve: stopped after {} requests",
        stats.requests_served.load(Ordering::Relaxed)
    );
    Ok(ExitCode::SUCCESS)
}
