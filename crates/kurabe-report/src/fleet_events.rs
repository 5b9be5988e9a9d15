//! What the fleet's events say to people: one line per worker event
//! ("kurabe worker NAME: took slot 1 of run 7 …") and per coordinator event
//! ("kurabe: 2 of 3 workers ready").
//!
//! Owns these texts so the worker and the coordinator word the same run
//! the same way (`kurabe-fleet` reports the events as data). Must not
//! print: the binary writes the lines to stderr and draws the
//! coordinator's live progress itself.

use kurabe_model::fleet::{CoordEvent, WorkerEvent};

/// The log line of worker `name`'s event.
pub fn worker_line(name: &str, e: &WorkerEvent) -> String {
    let what = match e {
        WorkerEvent::Registered { worker_id } => {
            format!("registered as worker {worker_id}; waiting for runs")
        }
        WorkerEvent::Claimed {
            run_id,
            share,
            experiment,
        } => format!(
            "took slot {} of run {run_id} ('{experiment}'): -c {}{}{}",
            share.slot,
            share.concurrency,
            share
                .requests
                .map(|n| format!(" -n {n}"))
                .unwrap_or_default(),
            share
                .rate
                .map(|r| format!(" --rate {r:.1}"))
                .unwrap_or_default()
        ),
        WorkerEvent::Starting {
            run_id,
            in_s,
            clock_offset_s,
            clock_uncertainty_s,
        } => format!(
            "run {run_id} starts in {in_s:.2} s (database clock {:+.1} ms from ours, ±{:.1} ms)",
            clock_offset_s * 1000.0,
            clock_uncertainty_s * 1000.0
        ),
        WorkerEvent::Finished { run_id, report } => format!(
            "run {run_id} done: {} complete, {} failed, {:.1} req/s; stored",
            report.complete_requests, report.failed_requests, report.requests_per_second
        ),
        WorkerEvent::Failed { run_id, error } => format!("run {run_id} failed: {error}"),
        WorkerEvent::Abandoned { run_id, reason } => {
            format!("run {run_id} ended before the start ({reason})")
        }
    };
    format!("kurabe worker {name}: {what}")
}

/// The log line of a coordinator event; `None` for live progress, which
/// the caller draws on a terminal ([`progress_text`]).
pub fn coord_line(e: &CoordEvent) -> Option<String> {
    Some(match e {
        CoordEvent::Created { run_id } => {
            format!("kurabe: fleet run {run_id} created; waiting for workers")
        }
        CoordEvent::Claimed { claimed, wanted } => {
            format!("kurabe: {claimed} of {wanted} workers ready")
        }
        CoordEvent::Started { in_s } => format!("kurabe: load starts in {in_s:.1} s"),
        CoordEvent::Lost { slot, worker, note } => {
            format!("kurabe: note: worker {worker} (slot {slot}) lost: {note}; the run goes on")
        }
        CoordEvent::Progress { .. } => return None,
    })
}

/// The live progress of all workers together, for a terminal line.
pub fn progress_text(e: &CoordEvent) -> Option<String> {
    match e {
        CoordEvent::Progress {
            completed,
            failed,
            elapsed_s,
        } => Some(format!(
            "{completed} requests done, {failed} failed, {elapsed_s:.1} s (all workers)"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_name_the_worker_and_the_run() {
        let e = WorkerEvent::Failed {
            run_id: 7,
            error: "boom".into(),
        };
        assert_eq!(
            worker_line("w1", &e),
            "kurabe worker w1: run 7 failed: boom"
        );
        let c = CoordEvent::Claimed {
            claimed: 2,
            wanted: 3,
        };
        assert_eq!(coord_line(&c).unwrap(), "kurabe: 2 of 3 workers ready");
        let p = CoordEvent::Progress {
            completed: 10,
            failed: 1,
            elapsed_s: 1.5,
        };
        assert_eq!(coord_line(&p), None);
        assert_eq!(
            progress_text(&p).unwrap(),
            "10 requests done, 1 failed, 1.5 s (all workers)"
        );
    }
}
