//! `kurabe http … --workers N`: the coordinator side of a distributed run.
//!
//! Hands the flags' checked `LoadSpec` (every load flag) to the
//! coordinator, which stores it and gives each worker its share, runs it
//! on the fleet through the PostgreSQL store and writes the merged report
//! with the same renderer as a single client, followed (text) or preceded
//! on stderr (other formats) by one row per worker; the JSON record
//! carries the same rows in its `fleet` field. Lost workers get an
//! explicit `kurabe: note:` line. `--threshold`s are judged here, on the
//! merged histograms and counters (exact, per request name too), and
//! printed and exited on as a single client's are. Refused: `-g` (one line
//! per request in one file on one host) and a threshold's `,abort` (the
//! workers' progress rows carry counts, not histograms: there is no live
//! merged view to judge it on).

use std::process::ExitCode;
use std::sync::atomic::Ordering;

use kurabe_fleet::coordinator::{self, CoordEvent, Outcome, Plan};
use kurabe_model::record::SavedRecord;
use kurabe_report::bars::{wanted, LiveLine};
use kurabe_report::fleet_report;

use super::args::{Args, Resolved};
use super::outputs::write_outputs;
use kurabe_http::outcome::ending;
use kurabe_model::notice::Notice;

/// Run `kurabe http` over `workers` workers.
pub fn run_distributed(args: &Args, resolved: &Resolved, workers: u32) -> anyhow::Result<ExitCode> {
    // The load's own rules for --workers were checked with it
    // (`kurabe_http::load::check_spec`), and -g before it was read.
    let url = kurabe_store::access::postgres_url(args.save.store.store.as_deref(), "--workers")?;
    let plan = Plan::new(
        &resolved.spec,
        workers,
        args.experiment.clone(),
        args.wait_workers,
    )?;
    let interrupt = crate::signal::install()?;
    // A second signal (or a first one that has not ended the run within
    // the grace: a worker or the database that does not answer) ends the
    // coordinator at once: it started nothing, and the run is marked
    // cancelled at its first look at the stop.
    crate::signal::force_exit_on_second_signal();
    let mut client = kurabe_store::pg::connect_migrated(&url)?;
    let live = LiveLine::new(None, wanted(!args.quiet));
    let mut on = |e: CoordEvent| {
        if let CoordEvent::Created { run_id } = &e {
            cancel_on_forced_exit(&url, *run_id);
        }
        live.coord_event(&e)
    };
    let mut outcome = coordinator::run(&mut client, &plan, &interrupt, &mut on)?;
    live.finish();
    let seconds = outcome.report.duration_s;
    outcome.report.thresholds = resolved.load.judge_thresholds(&outcome.stats, seconds);
    write_merged(args, resolved, &outcome)?;
    args.save.save_if_asked(&plan.experiment, || {
        SavedRecord::Http(Box::new(outcome.report.clone()))
    })?;
    let signalled = interrupt.load(Ordering::Relaxed);
    Ok(crate::exit(ending(
        &outcome.report,
        args.max_error_rate,
        signalled,
    )))
}

/// A forced exit (a second signal before the run looked at its stop)
/// still marks run `run_id` cancelled, on a connection of its own: its
/// workers would otherwise load on until the run's end.
fn cancel_on_forced_exit(url: &str, run_id: i64) {
    let url = url.to_owned();
    crate::signal::on_forced_exit(move || {
        if let Ok(mut client) = kurabe_store::pg::connect(&url) {
            let _ = coordinator::cancel_unless_ended(&mut client, run_id);
        }
    });
}

/// The notes, then the merged report with its per-worker rows, followed by
/// the worker table (text), or with the table on stderr (other formats).
fn write_merged(args: &Args, resolved: &Resolved, outcome: &Outcome) -> anyhow::Result<()> {
    for note in &outcome.notes {
        crate::tell(Notice::Note { text: note.clone() });
    }
    let (doc, table) = fleet_report(&outcome.report, args.format, &resolved.layout);
    if let Some(table) = table {
        eprint!("{table}");
    }
    write_outputs(args, &outcome.report, &doc)
}
