//! `kurabe watch`: CPU and memory of a process tree over time.
//!
//! The tree is a PID (`-p`), the server behind a TCP port (`--port`), or a
//! command kurabe starts (`-- CMD ARGS`, optionally under cgroup limits). The
//! session (sampling loop, cgroup, the child's lifetime) is
//! `kurabe_probe::WatchSession`; this file turns flags into its config, shows
//! the live line, picks the renderer (text, JSON, CSV, SVG chart: they live
//! in `kurabe-report`) and
//! picks the exit status: the command's own (128 + signal when killed), or
//! 128 + signal when kurabe was stopped by SIGINT/SIGTERM/SIGHUP. A started
//! command dies with the watch: its process group, its descendants and its
//! cgroup are killed at the end, and with kurabe itself (`PR_SET_PDEATHSIG`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::flags::{format, parse_duration};
use anyhow::Context;
use kurabe_model::probe::WatchReport;
use kurabe_model::record::SavedRecord;
use kurabe_probe::signals::watch_status;
use kurabe_probe::watch_request::WatchRequest;
use kurabe_probe::{CommandSpec, SessionConfig, WatchSession};
use kurabe_report::bars::{wanted, LiveLine};
use kurabe_report::write::{check_outputs, write_file};
use kurabe_report::{to_string, watch_live_line, watch_renderer, write_rendered, Format, Svg};

/// Arguments of `kurabe watch`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["pid", "port", "command"])))]
#[command(after_help = "\
Exit status with -- CMD: CMD's own (128 + the signal when a signal killed it), as /usr/bin/time \
passes it on (137 after an OOM kill at --memory); 0 when --duration ended it. Watching a PID or \
port: 0 when it exited or --duration ended. Stopped by a signal: 128 + the signal (130 Ctrl-C, \
143 SIGTERM, 129 SIGHUP), after the command's tree and cgroup are killed.")]
pub struct Args {
    #[command(flatten)]
    pub save: crate::flags::SaveArgs,
    /// Watch this process and all its descendants.
    #[arg(short = 'p', long, value_name = "PID")]
    pub pid: Option<u32>,
    /// Watch the process listening on this TCP port (IPv4 or IPv6) and its descendants.
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,
    /// Time between samples ("0.5" seconds, "500ms", "2s").
    #[arg(short, long, default_value = "0.5", value_name = "DURATION", value_parser = parse_duration)]
    pub interval: Duration,
    /// Stop after this long ("30" seconds, "2s", "1m30s"; a started command is then killed with its tree).
    #[arg(short, long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    #[command(flatten)]
    pub limits: crate::flags::LimitArgs,
    /// Output format: text summary, JSON report, or CSV time series.
    #[arg(long, value_parser = format(&["text", "json", "csv"]), default_value = "text")]
    pub format: Format,
    /// No live status line or progress bar on stderr.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub out: crate::flags::OutputArg,
    /// Also draw CPU and memory over time as an SVG chart into this file.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Do not give the started command a private cgroup (CPU from /proc and rusage only).
    #[arg(long, hide = true)]
    pub no_cgroup: bool,
    /// Share of one core the sampler may spend reading smaps_rollup (PSS).
    #[arg(long, hide = true, default_value_t = 0.004)]
    pub pss_budget: f64,
    /// The command to start and watch (after `--`).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// Run `kurabe watch`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (target, cfg) = request(&args).check()?;
    check_outputs(&[("-o", args.out.path()), ("--svg", args.svg.as_deref())])?;
    args.save.check_store()?;
    // A second signal need not wait for the cleanup: the forced
    // exit kills every process kurabe started first.
    let stop = crate::signal::install_forceable()?;
    let session = WatchSession::start(&target, cfg)?;
    // With -d the end is known: a bar with ETA; else the live line alone.
    let live = LiveLine::new(args.duration, wanted(!args.quiet));
    let report = session.run(&stop, &mut |s, t| {
        live.update(
            t,
            &watch_live_line(t, s.size.processes, s.size.pss_bytes, s.size.rss_bytes),
        );
    });
    live.finish();
    write_report(&args, &report)?;
    Ok(ExitCode::from(watch_status(&report)))
}

/// Render the report to stdout or `-o`, the SVG to `--svg`, and save it if asked.
fn write_report(args: &Args, report: &WatchReport) -> anyhow::Result<()> {
    write_rendered(args.out.path(), &*watch_renderer(args.format), report)?;
    if let Some(path) = &args.svg {
        write_file(path, to_string(&Svg, report).as_bytes()).context("--svg")?;
    }
    args.save.save_if_asked(&report.label(), || {
        SavedRecord::Watch(Box::new(report.clone()))
    })
}

/// Flags → what to watch and how often.
fn request(args: &Args) -> WatchRequest {
    let limits = args.limits.plan_limits().unwrap_or_default();
    let command = CommandSpec {
        argv: args.command.clone(),
        limits: (&limits).into(),
        cgroup: !args.no_cgroup,
        // stdout carries the report: the command's output goes to stderr.
        stdout_to_stderr: args.format != Format::Text && args.out.path().is_none(),
    };
    let config = SessionConfig {
        interval: args.interval,
        duration: args.duration,
        pss_budget: args.pss_budget,
    };
    WatchRequest {
        pid: args.pid,
        port: args.port,
        command,
        config,
    }
}
