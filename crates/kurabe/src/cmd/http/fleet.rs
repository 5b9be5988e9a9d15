//! `kurabe http … --workers N`: the coordinator side of a distributed run.
//!
//! Turns the already validated single-client config into a
//! [`kurabe_fleet::spec::RunSpec`], runs it on the fleet through the
//! PostgreSQL store and writes the merged report with the same renderer as a
//! single client, followed (text) or preceded on stderr (other formats) by one
//! row per worker; the JSON record carries the same rows in its `fleet` field. Lost workers get an explicit `kurabe: note:` line.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::bail;
use kurabe_fleet::coordinator::{self, CoordEvent, Outcome, Plan};
use kurabe_fleet::spec::RunSpec;

use super::{write_outputs, Args, Format, Resolved};
use crate::load::render;

/// Run `kurabe http` over `workers` workers.
pub fn run_distributed(args: &Args, resolved: &Resolved, workers: u32) -> anyhow::Result<ExitCode> {
    let url = crate::store::postgres_url(args.save.store.as_deref(), "--workers")?;
    if args.requests.is_none() && args.time_limit.is_none() {
        bail!("--workers needs -n REQUESTS or -t TIME: a distributed run must know when to stop");
    }
    if args.gnuplot.is_some() {
        bail!("-g writes one line per request on one host; it cannot be used with --workers");
    }
    let spec = RunSpec::from_load(&resolved.load)?;
    spec.split(workers)?;
    let plan = Plan {
        experiment: args
            .experiment
            .clone()
            .unwrap_or_else(|| format!("http {}", spec.url)),
        spec,
        workers,
        gather_timeout: args.wait_workers,
        start_delay: Duration::from_millis(1500),
        // Killed workers are seen at once (their session ends); the heartbeat
        // covers hung hosts and partitions, generous so a busy host is not dropped.
        heartbeat_timeout: Duration::from_secs(10),
    };
    let interrupt = crate::signal::install()?;
    let mut client = kurabe_store::pg::connect(&url)?;
    let show = resolved.progress && std::io::stderr().is_terminal();
    let mut on = |e: CoordEvent| log_event(&e, show);
    let outcome = coordinator::run(&mut client, &plan, &interrupt, &mut on)?;
    if show {
        eprint!("\r\x1b[K");
    }
    for note in &outcome.notes {
        eprintln!("kurabe: note: {note}");
    }
    let mut outcome = outcome;
    outcome.report.fleet = Some(outcome.summary());
    let mut rendered = render(&outcome.report, resolved.format, &resolved.layout)?;
    let table = worker_table(&outcome);
    if resolved.format == Format::Text {
        rendered.extend_from_slice(b"\n");
        rendered.extend_from_slice(table.as_bytes());
    } else {
        eprint!("{table}");
    }
    write_outputs(resolved, &outcome.report, &rendered)?;
    args.save.save_if_asked(
        kurabe_model::record::ResultKind::Http,
        &plan.experiment,
        &outcome.report,
    )?;
    Ok(super::exit_code(
        &outcome.report,
        resolved.max_error_rate,
        interrupt.load(Ordering::Relaxed),
    ))
}

fn log_event(e: &CoordEvent, show: bool) {
    match e {
        CoordEvent::Created { run_id } => {
            eprintln!("kurabe: fleet run {run_id} created; waiting for workers")
        }
        CoordEvent::Claimed { claimed, wanted } => {
            eprintln!("kurabe: {claimed} of {wanted} workers ready")
        }
        CoordEvent::Started { in_s } => eprintln!("kurabe: load starts in {in_s:.1} s"),
        CoordEvent::Lost { slot, worker, note } => {
            eprintln!("kurabe: note: worker {worker} (slot {slot}) lost: {note}; the run goes on")
        }
        CoordEvent::Progress {
            completed,
            failed,
            elapsed_s,
        } if show => eprint!(
            "\r\x1b[K{completed} requests done, {failed} failed, {elapsed_s:.1} s (all workers)"
        ),
        CoordEvent::Progress { .. } => {}
    }
}

/// One row per worker: its own req/s, latency and state, to spot a worker that was the bottleneck.
pub(crate) fn worker_table(o: &Outcome) -> String {
    let mut s = format!(
        "Workers (fleet run {}):\n{:>4}  {:<24} {:>6} {:>10} {:>8} {:>10} {:>10} {:>10}  {}\n",
        o.run_id,
        "slot",
        "worker",
        "conc",
        "complete",
        "failed",
        "req/s",
        "p50 ms",
        "p99 ms",
        "state"
    );
    for w in &o.workers {
        match &w.report {
            Some(r) => s.push_str(&format!(
                "{:>4}  {:<24} {:>6} {:>10} {:>8} {:>10.1} {:>10.3} {:>10.3}  {}\n",
                w.slot,
                w.worker,
                r.concurrency,
                r.complete_requests,
                r.failed_requests,
                r.requests_per_second,
                r.latency_us.p50 as f64 / 1000.0,
                r.latency_us.p99 as f64 / 1000.0,
                w.state
            )),
            None => s.push_str(&format!(
                "{:>4}  {:<24} {:>6} {:>10} {:>8} {:>10} {:>10} {:>10}  {} (last progress {:.1} s: {} completed, {} failed; not merged)\n",
                w.slot,
                w.worker,
                "-",
                w.progress_completed,
                w.progress_failed,
                "-",
                "-",
                "-",
                w.state,
                w.progress_elapsed_s,
                w.progress_completed,
                w.progress_failed
            )),
        }
    }
    s
}
