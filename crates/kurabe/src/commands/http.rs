//! `kurabe http URL`: an ab-compatible HTTP load test.
//!
//! Owns choosing the run (one client here, an A/B of URLs, or a fleet of
//! workers) and the terminal edge of one client (Ctrl-C, and where ab's
//! `-v` log goes: its lines are `kurabe_report::ab_log`'s, which masks
//! the `-P` and `-A` passwords).
//! The flags are `args.rs`'s, the files and exit status `outputs.rs`'s; the
//! load generator itself is `kurabe_http::load`, which never sees clap
//! types.

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context};
use kurabe_http::load::HeadTrace;
use kurabe_http::sent_head::sent_head;
use kurabe_model::record::SavedRecord;
use kurabe_report::ab_log;
use kurabe_report::write::check_outputs;
use kurabe_report::{http_renderer, to_string, Format};

use kurabe_live::board::RunInfo;
pub(crate) use outputs::{exit_code, THRESHOLD_FAILED};
use outputs::{no_response, open_gnuplot, write_outputs};

pub use args::Args;
use args::{early, Resolved};

/// `kurabe http URL_A URL_B …`: an A/B of endpoints in interleaved rounds.
mod ab;
/// The flags and their resolution into the load config.
mod args;
/// `--find-rate --slo …`: capacity under an SLO.
pub(crate) mod find_rate;
/// `--workers N`: the distributed run, coordinated through PostgreSQL.
mod fleet;
/// The `-g`, `-e` and report files, and the exit status.
mod outputs;

/// Run `kurabe http`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(flag) = args.find_rate.stray() {
        bail!("{flag} belongs to --find-rate: add --find-rate, or drop {flag}");
    }
    if args.find_rate.find_rate && args.series_csv.is_some() {
        bail!("--series-csv with --find-rate: the search runs many steps, each its own run; drop --series-csv");
    }
    if args.find_rate.find_rate && (args.live.prometheus_addr.is_some() || args.live.tui) {
        bail!("--prometheus-addr and --tui watch one load, and --find-rate runs a search of many: drop them, or watch one step's rate with kurabe http URL --rate R --tui");
    }
    if !args.thresholds.is_empty() {
        one_run_only(&args)?;
    }
    if args.profile.profile.is_some() && (args.find_rate.find_rate || args.workers.is_some()) {
        bail!("--profile samples the server over one load per run: drop it, or drop --find-rate and --workers");
    }
    if args.find_rate.find_rate && args.more_urls.is_empty() {
        return find_rate::run(&args);
    }
    if !args.more_urls.is_empty() {
        args.live.check()?;
        return ab::run(&args);
    }
    if args.rounds.is_some() {
        bail!("--rounds compares two or more URLs: give URL_B too, or drop --rounds");
    }
    // What needs no target of a set first: a set on standard input is
    // read in `finish`. The store is opened (made) once the load is whole.
    let early = early(&args)?;
    args.live.check()?;
    check_outputs(&[
        ("-o", args.out.path()),
        ("-e", args.percentiles_csv.as_deref()),
        ("--series-csv", args.series_csv.as_deref()),
        ("-g", args.gnuplot.as_deref()),
    ])?;
    if args.workers.is_some() && args.live.prometheus_addr.is_some() {
        bail!("--prometheus-addr with --workers: give it to each `kurabe worker`, which serves its own share");
    }
    if args.workers.is_some() && args.live.tui {
        bail!("--tui watches a run in this process: drop --workers, or drop --tui");
    }
    if args.workers.is_some() && args.gnuplot.is_some() {
        bail!("-g writes one line per request on one host; it cannot be used with --workers");
    }
    let resolved = early.finish(&args)?;
    args.save.check_store()?;
    match args.workers {
        Some(workers) => fleet::run_distributed(&args, &resolved, workers),
        None => run_here(&args, resolved),
    }
}

/// `--threshold` judges one run (in this process, or a fleet's merged
/// run): refuse the modes that would judge something else, or nothing.
fn one_run_only(args: &Args) -> anyhow::Result<()> {
    if args.find_rate.find_rate {
        bail!("--threshold with --find-rate: a search states its limits as --slo (same notation): use --slo");
    }
    if !args.more_urls.is_empty() {
        bail!("--threshold judges one run: drop URL_B, or run each URL on its own");
    }
    Ok(())
}

/// One client in this process: the load, the report and its files.
fn run_here(args: &Args, resolved: Resolved) -> anyhow::Result<ExitCode> {
    let (gnuplot, mut taps) = open_gnuplot(args.gnuplot.as_deref())?;
    let interrupt = crate::signal::install_stop()?;
    // Nothing of kurabe's is left behind by a forced exit: a second signal
    // need not wait for the drain of requests in flight.
    crate::signal::force_exit_on_second_signal();
    kurabe_http::raise_fd_limit();
    if args.verbosity >= 2 {
        let head = sent_head(&resolved.load);
        verbose(args.format, &ab_log::preamble(&head.method, &head.head));
        taps.head_trace = Some(trace(args.format, args.verbosity));
    }
    let title = format!(
        "kurabe http {}",
        RunInfo::of(&resolved.spec, &resolved.load).name
    );
    let report = args.live.run_here(
        (&resolved.spec, resolved.load),
        (resolved.server, Some(&args.profile), title),
        (!args.quiet, taps),
        &interrupt,
    )?;
    let rendered = to_string(&*http_renderer(args.format, &resolved.layout), &report);
    write_outputs(args, &report, &rendered)?;
    if let Some(pending) = gnuplot.filter(|_| !no_response(&report, "-g")) {
        pending.commit().context("-g")?;
    }
    let label = format!("http {}", report.url);
    args.save
        .save_if_asked(&label, || SavedRecord::Http(Box::new(report.clone())))?;
    Ok(exit_code(&report, args.max_error_rate, interrupt.is_set()))
}

/// Print `-v` output where ab prints it, stdout, unless the report there is
/// JSON, CSV or Markdown (then stderr, so the document stays parseable).
/// A closed pipe ends the log quietly (the report write reports it).
fn verbose(format: Format, text: &str) {
    let _ = if format == Format::Text {
        std::io::stdout().lock().write_all(text.as_bytes())
    } else {
        std::io::stderr().lock().write_all(text.as_bytes())
    };
}

/// The `-v 2` tap: every response head, logged as ab logs it.
fn trace(format: Format, verbosity: u8) -> HeadTrace {
    HeadTrace(Arc::new(move |bytes: &[u8]| {
        verbose(format, &ab_log::head_received(bytes, verbosity))
    }))
}
