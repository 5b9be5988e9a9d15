//! `kurabe demo`: a complete load test with no other software — the built-in
//! server in-process on a free loopback port, `kurabe http` against it, the
//! ab-style report, and the server's own request count reconciled with the
//! client's.
//!
//! Owns only the flags and the process edge; the server and the load
//! `kurabe http -k -c C -t D` resolves to are `kurabe_lab::demo`'s,
//! rendering `kurabe_report`'s ab text.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use kurabe_lab::demo::{Demo, DemoProtocol};
use kurabe_report::write::write_output;
use kurabe_report::{demo_banner, served_line, to_string, AbText};

use crate::flags::parse_duration;
use crate::live::told;

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
    /// Put the load on the server's HTTP/3 side (QUIC on UDP, `kurabe serve --http3`), trusting its self-signed certificate, instead of HTTP/1.1.
    #[arg(long)]
    pub http3: bool,
    /// Quiet: no progress line on stderr.
    #[arg(short = 'q')]
    pub quiet: bool,
}

/// Run `kurabe demo`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // The server and the load are threads of this process.
    let interrupt = crate::live::stop_for_load()?;
    let ncpus = kurabe_probe::procfs::online_cpus();
    let protocol = match args.http3 {
        true => DemoProtocol::Http3,
        false => DemoProtocol::Http1,
    };
    let load = (args.concurrency, args.duration);
    let demo = Demo::start(args.work_us, load, ncpus, protocol)?;
    let banner = demo_banner(
        &demo.url,
        (demo.threads, args.work_us),
        (args.concurrency, args.http3),
        args.duration,
    );
    eprintln!("{banner}");
    // The server runs inside this process, so watching it would count the
    // client's CPU too: no server metrics here.
    let load = kurabe_http::load::check(&demo.load, &kurabe_http::load::Names::FLAGS)?;
    let run =
        kurabe_live::here::run_load(load, !args.quiet, &interrupt, None, <_>::default(), None);
    let report = told(run)?;
    let (served, sent) = demo.served(&report);
    let mut text = to_string(&AbText::default(), &report);
    text.push_str(&served_line(served, sent));
    write_output(None, &text)?;
    demo.server.stop().context("the built-in server failed")?;
    Ok(crate::exit(Demo::ending(
        (served, sent),
        interrupt.is_set(),
    )))
}
