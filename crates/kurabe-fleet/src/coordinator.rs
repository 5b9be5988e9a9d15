//! The coordinator side of a distributed run: create it, wait for the
//! workers, set the common start, watch progress and liveness, merge.
//!
//! A worker is lost when its heartbeat is older than the timeout or its
//! database session is gone from `pg_stat_activity` (a killed process's
//! session ends at once). A lost worker's share is marked `lost` with a note;
//! its progress rows stay, the other workers go on, and the merge uses every
//! result that was stored. Nothing here prints: progress goes to a callback,
//! the outcome is data.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kurabe_http::request::DEFAULT_TIMEOUT;
use kurabe_model::http::{FleetSummary, FleetWorker, HttpReport};
use kurabe_model::load::LoadSpec;
use kurabe_model::load_stats::Stats;
use postgres::Client;

use crate::error::{db, json};
use crate::spec::{self, Share};
use crate::tally::{self, EncodedHistograms, StoredCounters};
use crate::worker::{notify, wait_notification};
use crate::{FleetError, COORD_CHANNEL, WORK_CHANNEL};

/// What the coordinator was asked to do.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Experiment name the run is filed under.
    pub experiment: String,
    /// The whole run, as stored: the body inline ([`Plan::new`]).
    pub spec: LoadSpec,
    /// Number of workers that must take part.
    pub workers: u32,
    /// How long to wait for the workers to claim their shares.
    pub gather_timeout: Duration,
    /// Time between "all claimed" and the common start (lets workers measure their clock offset).
    pub start_delay: Duration,
    /// A worker whose heartbeat is older than this is lost.
    pub heartbeat_timeout: Duration,
}

impl Plan {
    /// `spec` over `workers` workers, filed under `experiment` (default
    /// "http URL"), waiting `gather_timeout` for them to claim their
    /// shares. A `body_file` is read here and stored inline
    /// (`body_base64`): the workers run on other hosts; so is a request
    /// set of at most [`INLINE_SET_BYTES`] (a larger one is read from the
    /// same path on every worker's host, as `-E` is).
    pub fn new(
        spec: &LoadSpec,
        workers: u32,
        experiment: Option<String>,
        gather_timeout: Duration,
    ) -> Result<Plan, FleetError> {
        let spec = inline_set(&inline_body(spec)?);
        spec::split(&spec, workers)?;
        Ok(Plan {
            experiment: experiment
                .unwrap_or_else(|| format!("http {}", spec.url.as_deref().unwrap_or_default())),
            spec,
            workers,
            gather_timeout,
            start_delay: Duration::from_millis(1500),
            // Killed workers are seen at once (their session ends); the heartbeat
            // covers hung hosts and partitions, generous so a busy host is not dropped.
            heartbeat_timeout: Duration::from_secs(10),
        })
    }
}

/// The largest request set stored inline in the run's spec (the
/// engine's bound on a shared set read from standard input).
pub const INLINE_SET_BYTES: u64 = kurabe_http::load::INLINE_SET_BYTES;

/// `spec` with its `targets` file's text inline (`targets_text`) when it
/// is small and UTF-8; else as given (the engine's check says what is wrong).
fn inline_set(spec: &LoadSpec) -> LoadSpec {
    let Some(path) = spec.targets.as_ref().filter(|p| p.as_os_str() != "-") else {
        return spec.clone();
    };
    // A larger file is never read here: each worker streams it from its
    // path. A file that is not a regular file is left to the engine's
    // check too, which says what is wrong.
    let name = kurabe_input::Name::new("the --targets file");
    let input = kurabe_input::open(path, name)
        .ok()
        .filter(|i| i.size() <= INLINE_SET_BYTES);
    match input.map(|i| i.read_text(INLINE_SET_BYTES)) {
        Some(Ok(text)) => LoadSpec {
            targets: None,
            targets_text: Some(text),
            ..spec.clone()
        },
        _ => spec.clone(),
    }
}

/// `spec` with its `body_file`'s contents inline as `body_base64`.
fn inline_body(spec: &LoadSpec) -> Result<LoadSpec, FleetError> {
    use base64::Engine as _;
    let Some(path) = &spec.body_file else {
        return Ok(spec.clone());
    };
    let name = kurabe_input::Name::new("the body file");
    let body = kurabe_input::read(path, name, kurabe_http::request::MAX_BODY_BYTES)
        .map_err(|e| FleetError::Invalid(e.to_string()))?;
    Ok(LoadSpec {
        body_file: None,
        body_base64: Some(base64::engine::general_purpose::STANDARD.encode(body)),
        ..spec.clone()
    })
}

pub use kurabe_model::fleet::CoordEvent;

/// How one worker's share ended.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerRow {
    /// Slot number.
    pub slot: u32,
    /// Worker name.
    pub worker: String,
    /// `done`, `lost`, `failed` or `open` (never claimed).
    pub state: String,
    /// The worker's own report (done only).
    pub report: Option<HttpReport>,
    /// Last progress row: completed responses.
    pub progress_completed: u64,
    /// Last progress row: failed requests.
    pub progress_failed: u64,
    /// Last progress row: elapsed seconds.
    pub progress_elapsed_s: f64,
    /// Why the share is not done, if it is not.
    pub note: Option<String>,
}

/// The result of a distributed run.
#[derive(Clone)]
pub struct Outcome {
    /// Run id in `fleet_runs`.
    pub run_id: i64,
    /// Merged report: the same record one client would produce, with the
    /// per-worker rows and notes in its `fleet` field.
    pub report: HttpReport,
    /// Merged histograms and counters.
    pub stats: Stats,
    /// One row per share.
    pub workers: Vec<WorkerRow>,
    /// Explicit notes (lost or failed workers).
    pub notes: Vec<String>,
}

impl Outcome {
    /// The per-worker rows and notes as they go into the JSON record (and the store).
    pub fn summary(&self) -> FleetSummary {
        FleetSummary {
            run_id: self.run_id,
            workers: self.workers.iter().map(WorkerRow::summary).collect(),
            notes: self.notes.clone(),
        }
    }
}

impl WorkerRow {
    /// This share's row: its own figures when done, else its last progress.
    fn summary(&self) -> FleetWorker {
        let r = self.report.as_ref();
        FleetWorker {
            slot: self.slot,
            worker: self.worker.clone(),
            state: self.state.clone(),
            concurrency: r.map(|r| r.concurrency),
            complete_requests: r.map_or(self.progress_completed, |r| r.complete_requests),
            failed_requests: r.map_or(self.progress_failed, |r| r.failed_requests),
            requests_per_second: r.map(|r| r.requests_per_second),
            latency_p50_us: r.map(|r| r.latency_us.p50),
            latency_p99_us: r.map(|r| r.latency_us.p99),
            merged: r.is_some(),
            note: self.note.clone(),
            progress_elapsed_s: self.progress_elapsed_s,
        }
    }
}

/// Condition under which a worker counts as dead (used in SQL with `w` = fleet_workers, `$2` = timeout s).
const DEAD: &str = "(w.heartbeat_at < now() - make_interval(secs => $2)
                     OR NOT EXISTS (SELECT 1 FROM pg_stat_activity s WHERE s.pid = w.backend_pid))";

/// Run `plan` on the fleet and merge the results; `client` is connected to
/// a store database whose schema is up to date (the fleet's tables are in it).
pub fn run(
    client: &mut Client,
    plan: &Plan,
    stop: &AtomicBool,
    on: &mut dyn FnMut(CoordEvent),
) -> Result<Outcome, FleetError> {
    let shares = spec::split(&plan.spec, plan.workers)?;
    client
        .batch_execute(&format!("LISTEN {COORD_CHANNEL}"))
        .map_err(db("cannot LISTEN for workers"))?;
    let run_id = create_run(client, plan, &shares)?;
    on(CoordEvent::Created { run_id });
    if let Err(e) = gather(client, plan, run_id, stop, on) {
        fail_run(client, run_id);
        return Err(e);
    }
    let start_s = start_run(client, plan, run_id)?;
    on(CoordEvent::Started { in_s: start_s });
    watch(client, plan, run_id, stop, deadline(plan, start_s), on)?;
    let outcome = collect(client, plan, run_id)?;
    client
        .execute(
            "UPDATE fleet_runs SET state = CASE WHEN state = 'cancelled' THEN state ELSE 'done' END,
                    finished_at = now() WHERE id = $1",
            &[&run_id],
        )
        .map_err(db("cannot close the run"))?;
    Ok(outcome)
}

/// Best effort: mark a run that never started failed and tell the workers.
fn fail_run(client: &mut Client, run_id: i64) {
    let _ = client.execute(
        "UPDATE fleet_runs SET state = 'failed', finished_at = now() WHERE id = $1",
        &[&run_id],
    );
    let _ = notify(client, WORK_CHANNEL, run_id);
}

/// Set the common start `plan.start_delay` from now (database clock) and
/// tell the workers; the seconds until it.
fn start_run(client: &mut Client, plan: &Plan, run_id: i64) -> Result<f64, FleetError> {
    let start_s: f64 = client
        .query_one(
            "UPDATE fleet_runs SET state = 'running', start_at = now() + make_interval(secs => $2)
              WHERE id = $1 RETURNING extract(epoch FROM start_at - now())::float8",
            &[&run_id, &plan.start_delay.as_secs_f64()],
        )
        .map_err(db("cannot start the run"))?
        .get(0);
    notify(client, WORK_CHANNEL, run_id)?;
    Ok(start_s)
}

/// When a timed run's shares are overdue: the planned end plus the
/// request timeout and three heartbeat timeouts. `None` for `-n` runs.
fn deadline(plan: &Plan, start_s: f64) -> Option<Instant> {
    let spec = &plan.spec;
    let warmup = spec.warmup.map_or(Duration::ZERO, |w| w.0);
    let timeout = spec.timeout.map_or(DEFAULT_TIMEOUT, |t| t.0);
    spec.duration.map(|d| {
        Instant::now()
            + Duration::from_secs_f64(start_s.max(0.0))
            + d.0
            + warmup
            + timeout
            + plan.heartbeat_timeout * 3
    })
}

fn create_run(client: &mut Client, plan: &Plan, shares: &[Share]) -> Result<i64, FleetError> {
    let spec = serde_json::to_string(&plan.spec).map_err(json("run spec"))?;
    let mut tx = client
        .transaction()
        .map_err(db("cannot start creating the run"))?;
    let run_id: i64 = tx
        .query_one(
            "INSERT INTO fleet_runs (experiment, spec, workers, coordinator_pid)
             VALUES ($1, $2::text::jsonb, $3, pg_backend_pid()) RETURNING id",
            &[&plan.experiment, &spec, &(plan.workers as i32)],
        )
        .map_err(db("cannot create the run"))?
        .get(0);
    add_assignments(&mut tx, run_id, shares)?;
    tx.execute(
        "SELECT pg_notify($1, $2)",
        &[&WORK_CHANNEL, &run_id.to_string()],
    )
    .map_err(db("cannot NOTIFY"))?;
    tx.commit().map_err(db("cannot commit the run"))?;
    Ok(run_id)
}

/// One open `fleet_assignments` row per share.
fn add_assignments(
    tx: &mut postgres::Transaction<'_>,
    run_id: i64,
    shares: &[Share],
) -> Result<(), FleetError> {
    for s in shares {
        let share = serde_json::to_string(s).map_err(json("share"))?;
        let sql =
            "INSERT INTO fleet_assignments (run_id, slot, share) VALUES ($1, $2, $3::text::jsonb)";
        tx.execute(sql, &[&run_id, &(s.slot as i32), &share])
            .map_err(db("cannot create an assignment"))?;
    }
    Ok(())
}

/// Shares of `run_id` in one of `states` (a SQL list such as `'claimed', 'running'`).
fn count_shares(client: &mut Client, run_id: i64, states: &str) -> Result<u32, FleetError> {
    let n: i64 = client
        .query_one(
            &format!(
                "SELECT count(*) FROM fleet_assignments WHERE run_id = $1 AND state IN ({states})"
            ),
            &[&run_id],
        )
        .map_err(db("cannot count shares"))?
        .get(0);
    Ok(n as u32)
}

/// A worker that died after claiming gives its share back.
fn reopen_dead(client: &mut Client, run_id: i64, hb: f64) -> Result<(), FleetError> {
    client
        .execute(
            &format!(
                "UPDATE fleet_assignments a SET state = 'open', worker_id = NULL, claimed_at = NULL
                   FROM fleet_workers w
                  WHERE a.run_id = $1 AND a.worker_id = w.id AND a.state = 'claimed' AND {DEAD}"
            ),
            &[&run_id, &hb],
        )
        .map_err(db("cannot reopen shares of dead workers"))?;
    Ok(())
}

/// Why to stop gathering before every share is claimed: a stop, or the gather timeout.
fn give_up(plan: &Plan, started: Instant, claimed: u32, stop: &AtomicBool) -> Option<FleetError> {
    if stop.load(Ordering::Relaxed) {
        let why = "interrupted while waiting for workers";
        return Some(FleetError::Invalid(why.into()));
    }
    let (wanted, waited_s) = (plan.workers, started.elapsed().as_secs_f64());
    (started.elapsed() >= plan.gather_timeout).then_some(FleetError::NotEnoughWorkers {
        claimed,
        wanted,
        waited_s,
    })
}

/// Wait until every share is claimed by a live worker.
fn gather(
    client: &mut Client,
    plan: &Plan,
    run_id: i64,
    stop: &AtomicBool,
    on: &mut dyn FnMut(CoordEvent),
) -> Result<(), FleetError> {
    let started = Instant::now();
    let mut last = u32::MAX;
    let wanted = plan.workers;
    loop {
        reopen_dead(client, run_id, plan.heartbeat_timeout.as_secs_f64())?;
        let claimed = count_shares(client, run_id, "'claimed'")?;
        if claimed != last {
            on(CoordEvent::Claimed { claimed, wanted });
            last = claimed;
        }
        if claimed == wanted {
            return Ok(());
        }
        if let Some(e) = give_up(plan, started, claimed, stop) {
            return Err(e);
        }
        wait_notification(client, Duration::from_millis(250))?;
    }
}

/// Mark shares of dead (or, when `overdue`, of all still active) workers
/// lost, with the reason; `$2` is the heartbeat timeout in seconds.
const LOSE_SQL: &str = "UPDATE fleet_assignments a SET state = 'lost', finished_at = now(),
        note = CASE
          WHEN NOT EXISTS (SELECT 1 FROM pg_stat_activity s WHERE s.pid = w.backend_pid)
            THEN 'its database session ended (process killed, crashed or host unreachable)'
          WHEN $3 THEN 'no result long after the planned end'
          ELSE 'no heartbeat for ' || $2::text || ' s' END
   FROM fleet_workers w
  WHERE a.run_id = $1 AND a.worker_id = w.id AND a.state IN ('claimed', 'running')
    AND (DEAD OR $3)
RETURNING a.slot, w.name, a.note";

/// Declare lost the workers that died (or all active ones when `overdue`).
fn mark_lost(
    client: &mut Client,
    run_id: i64,
    hb: f64,
    overdue: bool,
    on: &mut dyn FnMut(CoordEvent),
) -> Result<(), FleetError> {
    let lost = client
        .query(&LOSE_SQL.replace("DEAD", DEAD), &[&run_id, &hb, &overdue])
        .map_err(db("cannot check worker liveness"))?;
    for row in lost {
        on(CoordEvent::Lost {
            slot: row.get::<_, i32>(0) as u32,
            worker: row.get(1),
            note: row.get(2),
        });
    }
    Ok(())
}

/// Sum of every share's latest progress row.
fn progress(client: &mut Client, run_id: i64) -> Result<CoordEvent, FleetError> {
    let row = client
        .query_one(
            "SELECT coalesce(sum(completed), 0)::int8, coalesce(sum(failed), 0)::int8,
                    coalesce(max(elapsed_ms), 0)::int8
               FROM (SELECT DISTINCT ON (slot) completed, failed, elapsed_ms
                       FROM fleet_progress WHERE run_id = $1
                      ORDER BY slot, elapsed_ms DESC) latest",
            &[&run_id],
        )
        .map_err(db("cannot read progress"))?;
    Ok(CoordEvent::Progress {
        completed: row.get::<_, i64>(0) as u64,
        failed: row.get::<_, i64>(1) as u64,
        elapsed_s: row.get::<_, i64>(2) as f64 / 1000.0,
    })
}

/// Mark run `run_id` cancelled unless it has ended, and tell the
/// workers (they stop their load): for a coordinator forced out (a
/// second signal) before its own [`run`] looked at its stop, on a
/// connection of its own (the run's may be busy).
pub fn cancel_unless_ended(client: &mut Client, run_id: i64) -> Result<(), FleetError> {
    client
        .execute(
            "UPDATE fleet_runs SET state = 'cancelled'
              WHERE id = $1 AND state NOT IN ('done', 'failed', 'cancelled')",
            &[&run_id],
        )
        .map_err(db("cannot cancel the run"))?;
    notify(client, WORK_CHANNEL, run_id)
}

/// Mark the run cancelled and tell the workers (they stop their load).
fn cancel_run(client: &mut Client, run_id: i64) -> Result<(), FleetError> {
    client
        .execute(
            "UPDATE fleet_runs SET state = 'cancelled' WHERE id = $1",
            &[&run_id],
        )
        .map_err(db("cannot cancel the run"))?;
    notify(client, WORK_CHANNEL, run_id)
}

/// Follow the run until no share is claimed or running.
fn watch(
    client: &mut Client,
    plan: &Plan,
    run_id: i64,
    stop: &AtomicBool,
    deadline: Option<Instant>,
    on: &mut dyn FnMut(CoordEvent),
) -> Result<(), FleetError> {
    let hb = plan.heartbeat_timeout.as_secs_f64();
    let mut cancelled_at: Option<Instant> = None;
    let mut last_progress = Instant::now();
    loop {
        if stop.load(Ordering::Relaxed) && cancelled_at.is_none() {
            cancel_run(client, run_id)?;
            cancelled_at = Some(Instant::now());
        }
        let overdue = deadline.is_some_and(|d| Instant::now() > d)
            || cancelled_at.is_some_and(|t| t.elapsed() > plan.heartbeat_timeout * 3);
        mark_lost(client, run_id, hb, overdue, on)?;
        if count_shares(client, run_id, "'claimed', 'running'")? == 0 {
            return Ok(());
        }
        if last_progress.elapsed() >= Duration::from_millis(500) {
            last_progress = Instant::now();
            on(progress(client, run_id)?);
        }
        // Blocks on the LISTEN socket: a worker's NOTIFY wakes it.
        wait_notification(client, Duration::from_millis(200))?;
    }
}

/// Every share's outcome, its stored result and its last progress row.
const COLLECT_SQL: &str =
    "SELECT a.slot, coalesce(w.name, ''), a.state, a.note, r.report::text, r.counters::text,
        r.hist_total, r.hist_connect, r.hist_processing, r.hist_waiting, r.hist_uncorrected,
        p.completed, p.failed, p.elapsed_ms
   FROM fleet_assignments a
   LEFT JOIN fleet_workers w ON w.id = a.worker_id
   LEFT JOIN fleet_results r ON r.run_id = a.run_id AND r.slot = a.slot
   LEFT JOIN LATERAL (SELECT completed, failed, elapsed_ms FROM fleet_progress p
                       WHERE p.run_id = a.run_id AND p.slot = a.slot
                       ORDER BY elapsed_ms DESC LIMIT 1) p ON true
  WHERE a.run_id = $1
  ORDER BY a.slot";

/// The worker's stored report and statistics from a [`COLLECT_SQL`] row, if it stored any.
fn stored_result(row: &postgres::Row) -> Result<Option<(HttpReport, Stats)>, FleetError> {
    let (Some(rep), Some(cnt)) = (row.get::<_, Option<&str>>(4), row.get::<_, Option<&str>>(5))
    else {
        return Ok(None);
    };
    let report: HttpReport = serde_json::from_str(rep).map_err(json("report"))?;
    let counters = StoredCounters::from_json(cnt).map_err(json("counters"))?;
    let hists = EncodedHistograms {
        total: row.get(6),
        connect: row.get(7),
        processing: row.get(8),
        waiting: row.get(9),
        uncorrected: row.get(10),
    };
    Ok(Some((report, tally::decode(&hists, &counters)?)))
}

/// A share's row without its result, plus the note saying why it is not merged.
fn worker_row(row: &postgres::Row, report: Option<HttpReport>) -> (WorkerRow, Option<String>) {
    let count = |i| row.get::<_, Option<i64>>(i).unwrap_or(0);
    let mut w = WorkerRow {
        slot: row.get::<_, i32>(0) as u32,
        worker: row.get(1),
        state: row.get(2),
        note: row.get(3),
        report,
        progress_completed: count(11) as u64,
        progress_failed: count(12) as u64,
        progress_elapsed_s: count(13) as f64 / 1000.0,
    };
    if w.report.is_some() {
        return (w, None);
    }
    let why = w
        .note
        .clone()
        .unwrap_or_else(|| format!("share ended as '{}'", w.state));
    let text = format!(
        "worker {} (slot {}, {}) is not in the merged totals: {why}; its last progress row ({} completed, {} failed after {:.1} s) is kept in fleet_progress",
        if w.worker.is_empty() { "-" } else { &w.worker },
        w.slot, w.state, w.progress_completed, w.progress_failed, w.progress_elapsed_s
    );
    w.note.get_or_insert(why);
    (w, Some(text))
}

/// Read every share's outcome and merge the stored results.
fn collect(client: &mut Client, plan: &Plan, run_id: i64) -> Result<Outcome, FleetError> {
    let rows = client
        .query(COLLECT_SQL, &[&run_id])
        .map_err(db("cannot read the results"))?;
    let mut total = Stats::new();
    let mut done: Vec<HttpReport> = Vec::new();
    let mut workers = Vec::new();
    let mut notes = Vec::new();
    for row in &rows {
        let stored = stored_result(row)?;
        let report = stored.map(|(report, stats)| {
            total.merge(&stats);
            done.push(report.clone());
            report
        });
        let (w, note) = worker_row(row, report);
        workers.push(w);
        notes.extend(note);
    }
    let Some(report) = merged_report(&plan.spec, &done, &total) else {
        return Err(FleetError::NoResults(notes.join("; ")));
    };
    let mut outcome = Outcome {
        run_id,
        report,
        stats: total,
        workers,
        notes,
    };
    outcome.report.fleet = Some(outcome.summary());
    Ok(outcome)
}

/// The merged report: the first worker's record for what all share (URL,
/// method, document), run-wide figures combined, every histogram- and
/// counter-derived field recomputed from the merged `total` by the same code
/// a single client uses. `None` when no worker delivered.
pub fn merged_report(spec: &LoadSpec, done: &[HttpReport], total: &Stats) -> Option<HttpReport> {
    let first = done.first()?;
    let mut r = first.clone();
    r.concurrency = done.iter().map(|d| d.concurrency).sum();
    r.threads = done.iter().map(|d| d.threads).sum();
    r.duration_s = done.iter().map(|d| d.duration_s).fold(0.0, f64::max);
    r.interrupted = done.iter().any(|d| d.interrupted);
    r.started_at = done
        .iter()
        .map(|d| d.started_at.clone())
        .min()
        .unwrap_or_default();
    r.server_software = done.iter().find_map(|d| d.server_software.clone());
    r.document_length_bytes = done
        .iter()
        .map(|d| d.document_length_bytes)
        .find(|&n| n > 0)
        .unwrap_or(0);
    r.server = None;
    // A share's verdicts are not the whole's: the caller judges the merged run.
    r.thresholds = Vec::new();
    let series: Vec<&[kurabe_model::series::Interval]> =
        done.iter().map(|d| d.series.as_slice()).collect();
    r.series = kurabe_model::series::merge(&series);
    // Rate stages: the whole's rate is the workers' parts of the ramp added.
    let parts: Vec<f64> = done
        .iter()
        .filter_map(|d| d.rate.as_ref().map(|x| x.requested_per_s))
        .collect();
    let rate = spec
        .rate
        .or((!parts.is_empty()).then(|| parts.iter().sum()));
    total.fill_report(&mut r, rate);
    Some(r)
}
