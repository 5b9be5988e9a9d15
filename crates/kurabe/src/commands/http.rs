//! `kurabe http URL`: an ab-compatible HTTP load test.
//!
//! Owns choosing the run (one client here, an A/B of URLs, or a fleet of
//! workers) and the terminal edge of one client (Ctrl-C, and where ab's
//! `-v` log goes: its lines are `kurabe_report::ab_log`'s, which masks
//! the `-P` and `-A` passwords).
//! The flags are `args.rs`'s, the files and exit status `outputs.rs`'s; the
//! load generator itself is `kurabe_http::load`, which never sees clap
//! types.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use kurabe_http::load::HeadTrace;
use kurabe_http::outcome::ending;
use kurabe_http::sent_head::sent_head;
use kurabe_lab::http_runs::{choose, refuse_for_fleet, HttpRun};
use kurabe_model::given::Given;
use kurabe_model::record::SavedRecord;
use kurabe_report::ab_log;
use kurabe_report::write::{check_outputs, write_log};
use kurabe_report::{http_renderer, to_string, Format};

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

/// Run `kurabe http`: the run the `given` flags choose
/// (`kurabe_lab::http_runs`, which refuses the flags that contradict it).
pub fn run(args: Args, given: &Given) -> anyhow::Result<ExitCode> {
    match choose(given)? {
        HttpRun::Search => return find_rate::run(&args, given),
        HttpRun::Compare => {
            args.live.check(None)?;
            return ab::run(&args, given);
        }
        HttpRun::One => {}
    }
    // What needs no target of a set first: a set on standard input is
    // read in `finish`. The store is opened (made) once the load is whole.
    let early = early(&args)?;
    args.live.check(None)?;
    check_outputs(&[
        ("-o", args.out.path()),
        ("-e", args.percentiles_csv.as_deref()),
        ("--series-csv", args.series_csv.as_deref()),
        ("-g", args.gnuplot.as_deref()),
    ])?;
    refuse_for_fleet(given)?;
    let resolved = early.finish(&args)?;
    args.save.check_store()?;
    match args.workers {
        Some(workers) => fleet::run_distributed(&args, &resolved, workers),
        None => run_here(&args, resolved),
    }
}

/// One client in this process: the load, the report and its files.
fn run_here(args: &Args, resolved: Resolved) -> anyhow::Result<ExitCode> {
    let (gnuplot, mut taps) = open_gnuplot(args.gnuplot.as_deref())?;
    if args.verbosity >= 2 {
        let head = sent_head(&resolved.load);
        write_log(args.format, &ab_log::preamble(&head.method, &head.head));
        taps.head_trace = Some(trace(args.format, args.verbosity));
    }
    let (report, signalled) = args.live.run_here(
        (&resolved.spec, resolved.load),
        (resolved.server, Some(&args.profile), "kurabe http"),
        (!args.quiet, taps),
    )?;
    let rendered = to_string(&*http_renderer(args.format, &resolved.layout), &report);
    write_outputs(args, &report, &rendered)?;
    if let Some(pending) = gnuplot.filter(|_| !no_response(&report, "-g")) {
        pending.commit().context("-g")?;
    }
    args.save.save_if_asked(&report.label(), || {
        SavedRecord::Http(Box::new(report.clone()))
    })?;
    Ok(crate::exit(ending(&report, args.max_error_rate, signalled)))
}

/// The `-v 2` tap: every response head, logged as ab logs it.
fn trace(format: Format, verbosity: u8) -> HeadTrace {
    HeadTrace(Arc::new(move |bytes: &[u8]| {
        write_log(format, &ab_log::head_received(bytes, verbosity))
    }))
}
