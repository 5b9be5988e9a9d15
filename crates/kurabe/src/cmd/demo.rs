//! `kurabe demo`: a complete load test with no other software — the built-in
//! server in-process on a free loopback port, `kurabe http` against it, the
//! ab-style report, and the server's own request count reconciled with the
//! client's.
//!
//! Owns only the wiring; serving is `kurabe_http::serve`, loading
//! `kurabe_http::client` with the load `kurabe http -k -c C -t D` resolves
//! to (`kurabe_http::cli_config`), rendering `kurabe_report`'s ab text.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use kurabe_http::cli_config::LoadFlags;
use kurabe_http::client::LoadConfig;
use kurabe_http::serve::{self, ServeConfig, Server};

use crate::flags::parse_duration;
use crate::load::{render, run_load};

/// Arguments of `kurabe demo`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// How long to put load on the server ("3s", "500ms", "1m").
    #[arg(long, value_parser = parse_duration, default_value = "3s")]
    pub duration: Duration,
    /// Concurrent keep-alive connections.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub concurrency: u32,
    /// CPU time the server burns per request, microseconds.
    #[arg(long, default_value_t = 20)]
    pub work_us: u64,
    /// Quiet: no progress line on stderr.
    #[arg(short = 'q')]
    pub quiet: bool,
}

/// Run `kurabe demo`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.duration.is_zero() {
        anyhow::bail!("--duration 0: give a positive duration, e.g. --duration 3s");
    }
    let interrupt = crate::signal::install_stop()?;
    kurabe_http::raise_fd_limit();
    let ncpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let server = start_server(&args, ncpus)?;
    // The server runs inside this process, so watching it would count the
    // client's CPU too: no server metrics here.
    let report = run_load(&load(&args, &server, ncpus)?, !args.quiet, &interrupt, None)?;
    let sent = report.complete_requests + report.failed_requests + report.in_flight_at_end;
    // Requests still in the server's socket buffers are counted as they are read.
    let served = server.stats().wait_served(sent, Duration::from_secs(2));
    let mut text = render(&report, kurabe_report::Format::Text, &Default::default())?;
    let verdict = if served == sent { "match" } else { "MISMATCH" };
    text.extend_from_slice(
        format!("Server's own count:     {served} requests served ({verdict})\n").as_bytes(),
    );
    let mut out = std::io::stdout().lock();
    std::io::Write::write_all(&mut out, &text).context("cannot write the report to stdout")?;
    drop(out);
    server.stop().context("the built-in server failed")?;
    Ok(if served == sent {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The built-in server on a free loopback port, with half of the cores
/// (client and server share this machine), announced on stderr.
fn start_server(args: &Args, ncpus: u32) -> anyhow::Result<Server> {
    let threads = (ncpus / 2).max(1) as usize;
    let listener = serve::bind("127.0.0.1:0".parse().expect("valid address"))
        .context("cannot listen on a loopback port")?;
    let config = ServeConfig {
        work_us: args.work_us,
        threads,
        ..ServeConfig::default()
    };
    let server = Server::start(listener, config).context("cannot start the built-in server")?;
    eprintln!(
        "kurabe demo: built-in server on {} ({threads} threads, {} µs CPU per request);\n  \
         {} keep-alive connections for {:?}",
        serve::url_of(server.addr()),
        args.work_us,
        args.concurrency,
        args.duration
    );
    Ok(server)
}

/// The load `kurabe http -k -c C -t DURATION URL` sends: the same flags, resolved the same way.
fn load(args: &Args, server: &Server, ncpus: u32) -> anyhow::Result<LoadConfig> {
    let flags = LoadFlags {
        url: serve::url_of(server.addr()),
        concurrency: args.concurrency,
        keep_alive: true,
        time_limit: Some(args.duration),
        ..LoadFlags::default()
    };
    Ok(flags.resolve(ncpus)?)
}
