//! `kurabe worker`: register, claim a share of a run, start at the common
//! time, run the load generator for that share, stream progress, store the
//! histograms and counters, repeat.
//!
//! All state lives in rows: a worker is a `fleet_workers` row (with its
//! database session's PID, so a killed worker is seen the moment its session
//! ends), a claimed share is a `fleet_assignments` row taken with
//! `FOR UPDATE SKIP LOCKED`, progress is one `fleet_progress` row per second,
//! the result one `fleet_results` row written in the same transaction that
//! marks the share done. The worker never prints; it reports [`WorkerEvent`]s.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kurabe_http::load::Observer;
use kurabe_model::http::HttpReport;
use kurabe_model::load::LoadSpec;
use kurabe_model::load_stats::{Snapshot, Stats};
use kurabe_stop::Stop;
use postgres::Client;

use crate::clock::{self, ClockOffset};
use crate::error::{db, json};
use crate::spec::{self, Share};
use crate::{tally, FleetError, COORD_CHANNEL, WORK_CHANNEL};

/// How a worker behaves.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Name shown in reports (host name and PID by default).
    pub name: String,
    /// Client threads per share (at most the share's connections).
    pub threads: u32,
    /// How often to heartbeat and write a progress row.
    pub heartbeat: Duration,
    /// Stop after one share (for scripts and tests).
    pub once: bool,
}

/// `kurabe worker`'s flags as plain values ([`WorkerFlags::resolve`] checks them).
#[derive(Debug, Clone, Default)]
pub struct WorkerFlags {
    /// `--name` (default: HOSTNAME-PID).
    pub name: Option<String>,
    /// `--threads` (default: the CPUs available, or ⌈`cpus`⌉).
    pub threads: Option<u32>,
    /// `--cpus`: the CPU quota the worker runs under, if any.
    pub cpus: Option<f64>,
    /// `--heartbeat`.
    pub heartbeat: Duration,
    /// `--once`.
    pub once: bool,
}

/// A `kurabe worker` flag out of range.
#[derive(Debug, thiserror::Error)]
pub enum WorkerFlagError {
    /// `--cpus` zero, negative or not a number.
    #[error("--cpus {0}: give a positive number of CPUs, e.g. 0.5")]
    Cpus(f64),
    /// `--heartbeat` zero or above 5 s.
    #[error("--heartbeat: give an interval between 1ms and 5s (coordinators declare a worker lost after 10 s without one)")]
    Heartbeat,
    /// `--threads 0`.
    #[error("--threads 0: use at least 1 (or leave it out for the default)")]
    Threads,
}

impl WorkerFlags {
    /// Check `--cpus` alone (a worker with a quota re-runs itself in a
    /// cgroup before anything else).
    pub fn checked_cpus(&self) -> Result<Option<f64>, WorkerFlagError> {
        match self.cpus {
            Some(c) if !(c.is_finite() && c > 0.0) => Err(WorkerFlagError::Cpus(c)),
            c => Ok(c),
        }
    }

    /// The worker's configuration on a machine with `ncpus` CPUs named
    /// `hostname`: threads from `--threads`, else the CPUs available (or
    /// `--cpus`, rounded up); the name defaults to HOSTNAME-PID.
    pub fn resolve(self, ncpus: u32, hostname: &str) -> Result<WorkerConfig, WorkerFlagError> {
        self.checked_cpus()?;
        if self.heartbeat.is_zero() || self.heartbeat > Duration::from_secs(5) {
            return Err(WorkerFlagError::Heartbeat);
        }
        if self.threads == Some(0) {
            return Err(WorkerFlagError::Threads);
        }
        let threads = self
            .threads
            .unwrap_or_else(|| self.cpus.map_or(ncpus, |c| c.ceil() as u32).max(1));
        let name = self
            .name
            .unwrap_or_else(|| format!("{hostname}-{}", std::process::id()));
        Ok(WorkerConfig {
            name,
            threads,
            heartbeat: self.heartbeat,
            once: self.once,
        })
    }
}

pub use kurabe_model::fleet::WorkerEvent;

/// What watches this worker's shares live (`kurabe worker
/// --prometheus-addr`): asked for an observer as each share's load starts,
/// which then gets the engine's progress and snapshots as a `kurabe http`
/// observer does.
pub trait ShareWatch: Sync {
    /// The observer of the share of run `run_id` whose load is `load`.
    fn share(&self, run_id: i64, load: &LoadSpec) -> Arc<dyn Observer + Send + Sync>;
}

/// A claimed share with what is needed to run it.
struct Claim {
    run_id: i64,
    share: Share,
    /// The whole run's load, as the coordinator stored it.
    spec: LoadSpec,
    experiment: String,
}

/// Serve runs until `stop` is set (or after one share with `once`);
/// `client` is connected to a store database whose schema is up to date;
/// `watch`, when given, watches each share's load.
pub fn serve(
    client: &mut Client,
    cfg: &WorkerConfig,
    stop: &Arc<Stop>,
    watch: Option<&dyn ShareWatch>,
    on: &mut dyn FnMut(WorkerEvent),
) -> Result<(), FleetError> {
    let worker_id: i64 = client
        .query_one(
            "INSERT INTO fleet_workers (name, backend_pid) VALUES ($1, pg_backend_pid()) RETURNING id",
            &[&cfg.name],
        )
        .map_err(db("cannot register the worker"))?
        .get(0);
    on(WorkerEvent::Registered { worker_id });
    client
        .batch_execute(&format!("LISTEN {WORK_CHANNEL}"))
        .map_err(db("cannot LISTEN for runs"))?;
    let result = serve_loop(client, (cfg, worker_id, watch), stop, on);
    // Best effort: a worker that leaves says so; one that dies is found by the coordinator.
    let _ = client.execute(
        "UPDATE fleet_workers SET state = 'gone', heartbeat_at = now() WHERE id = $1",
        &[&worker_id],
    );
    result
}

fn serve_loop(
    client: &mut Client,
    (cfg, worker_id, watch): (&WorkerConfig, i64, Option<&dyn ShareWatch>),
    stop: &Arc<Stop>,
    on: &mut dyn FnMut(WorkerEvent),
) -> Result<(), FleetError> {
    while !stop.is_set() {
        heartbeat(client, worker_id, "idle")?;
        match claim(client, worker_id)? {
            Some(c) => {
                on(c.claimed_event());
                let job = Job {
                    cfg,
                    worker_id,
                    watch,
                    claim: &c,
                };
                run_share(client, &job, stop, on)?;
                if cfg.once {
                    return Ok(());
                }
            }
            None => wait_notification(client, Duration::from_millis(250))?,
        }
    }
    Ok(())
}

fn heartbeat(client: &mut Client, worker_id: i64, state: &str) -> Result<(), FleetError> {
    client
        .execute(
            "UPDATE fleet_workers SET heartbeat_at = now(), state = $2 WHERE id = $1",
            &[&worker_id, &state],
        )
        .map_err(db("cannot heartbeat"))?;
    Ok(())
}

/// Wait up to `d` for a notification on a channel we listen to, then drain the rest.
pub(crate) fn wait_notification(client: &mut Client, d: Duration) -> Result<(), FleetError> {
    use postgres::fallible_iterator::FallibleIterator;
    let mut n = client.notifications();
    let lost = db("lost the LISTEN connection");
    if n.timeout_iter(d).next().map_err(lost)?.is_some() {
        n.iter().count().map_err(db("lost the LISTEN connection"))?;
    }
    Ok(())
}

impl Claim {
    /// The event that says this share was taken.
    fn claimed_event(&self) -> WorkerEvent {
        WorkerEvent::Claimed {
            run_id: self.run_id,
            share: self.share,
            experiment: self.experiment.clone(),
        }
    }
}

/// Take the oldest open share of a gathering run whose coordinator is
/// still connected, skipping rows others hold.
const CLAIM_SQL: &str = "UPDATE fleet_assignments a
                SET worker_id = $1, state = 'claimed', claimed_at = now()
               FROM (SELECT a2.run_id, a2.slot
                       FROM fleet_assignments a2 JOIN fleet_runs r ON r.id = a2.run_id
                      WHERE a2.state = 'open' AND r.state = 'gathering'
                        AND EXISTS (SELECT 1 FROM pg_stat_activity s WHERE s.pid = r.coordinator_pid)
                      ORDER BY a2.run_id, a2.slot
                      LIMIT 1
                        FOR UPDATE OF a2 SKIP LOCKED) pick,
                    fleet_runs r
              WHERE a.run_id = pick.run_id AND a.slot = pick.slot AND r.id = a.run_id
          RETURNING a.run_id, a.share::text, r.spec::text, r.experiment";

/// Take the oldest open share of a gathering run, skipping rows others hold.
fn claim(client: &mut Client, worker_id: i64) -> Result<Option<Claim>, FleetError> {
    let row = client
        .query_opt(CLAIM_SQL, &[&worker_id])
        .map_err(db("cannot claim a share"))?;
    let Some(row) = row else {
        return Ok(None);
    };
    let run_id: i64 = row.get(0);
    let share: Share = serde_json::from_str(row.get(1)).map_err(json("share"))?;
    let spec: LoadSpec = serde_json::from_str(row.get(2)).map_err(json("run spec"))?;
    notify(client, COORD_CHANNEL, run_id)?;
    Ok(Some(Claim {
        run_id,
        share,
        spec,
        experiment: row.get(3),
    }))
}

pub(crate) fn notify(client: &mut Client, channel: &str, run_id: i64) -> Result<(), FleetError> {
    client
        .execute("SELECT pg_notify($1, $2)", &[&channel, &run_id.to_string()])
        .map_err(db("cannot NOTIFY"))?;
    Ok(())
}

/// The run's state and start time; a run whose coordinator's session is gone
/// (killed before the start) is marked `failed` so nobody waits for it.
fn run_state(client: &mut Client, run_id: i64) -> Result<(String, Option<f64>), FleetError> {
    let row = client
        .query_one(
            "UPDATE fleet_runs SET state = CASE
                    WHEN state = 'gathering'
                     AND NOT EXISTS (SELECT 1 FROM pg_stat_activity s WHERE s.pid = coordinator_pid)
                    THEN 'failed' ELSE state END
              WHERE id = $1
          RETURNING state, extract(epoch FROM start_at)::float8",
            &[&run_id],
        )
        .map_err(db("cannot read the run"))?;
    Ok((row.get(0), row.get(1)))
}

/// Give a claimed share back (Ctrl-C before the start).
fn release(client: &mut Client, c: &Claim, worker_id: i64) -> Result<(), FleetError> {
    client
        .execute(
            "UPDATE fleet_assignments SET state = 'open', worker_id = NULL, claimed_at = NULL
              WHERE run_id = $1 AND slot = $2 AND worker_id = $3 AND state = 'claimed'",
            &[&c.run_id, &(c.share.slot as i32), &worker_id],
        )
        .map_err(db("cannot release the share"))?;
    notify(client, COORD_CHANNEL, c.run_id)
}

/// When the next heartbeat is due.
struct Beat {
    last: Instant,
    every: Duration,
}

impl Beat {
    fn new(every: Duration) -> Self {
        Self {
            last: Instant::now(),
            every,
        }
    }

    /// The instant the next heartbeat is due.
    fn next(&self) -> Instant {
        self.last + self.every
    }

    /// True (and restarted) when a heartbeat is due now.
    fn due(&mut self) -> bool {
        let due = self.last.elapsed() >= self.every;
        if due {
            self.last = Instant::now();
        }
        due
    }
}

/// One claimed share being worked on: what every step of it needs.
struct Job<'a> {
    cfg: &'a WorkerConfig,
    worker_id: i64,
    /// What watches the share's load live, if anything.
    watch: Option<&'a dyn ShareWatch>,
    claim: &'a Claim,
}

impl Job<'_> {
    fn heartbeat(&self, client: &mut Client, state: &str) -> Result<(), FleetError> {
        heartbeat(client, self.worker_id, state)
    }
}

fn run_share(
    client: &mut Client,
    job: &Job<'_>,
    stop: &Arc<Stop>,
    on: &mut dyn FnMut(WorkerEvent),
) -> Result<(), FleetError> {
    let c = job.claim;
    // Blocks on the LISTEN socket and on the stop, never a fixed sleep.
    let mut beat = Beat::new(job.cfg.heartbeat);
    let Some(start_db_s) = wait_for_start_time(client, job, &mut beat, stop, on)? else {
        return Ok(());
    };
    // Convert the database's start time to ours and wait for it.
    let clock = clock::measure(client, 7)?;
    let in_s = clock.until(start_db_s).as_secs_f64();
    on(WorkerEvent::Starting {
        run_id: c.run_id,
        in_s,
        clock_offset_s: clock.offset_s,
        clock_uncertainty_s: clock.uncertainty_s,
    });
    let load = spec::share_spec(&c.spec, &c.share, job.cfg.threads);
    if let Err(why) = runnable_here(&load, stop) {
        return store_failure(client, c, job.worker_id, &why, on);
    }
    if !sleep_until_start(client, job, &mut beat, clock, start_db_s, stop)? {
        let why = "worker stopped before the start";
        return store_failure(client, c, job.worker_id, why, on);
    }
    run_started(client, job, &load, stop, on)
}

/// Whether this host can run the share, checked as the flags are (errors
/// name them); the one file a spec names, `-E`'s, must be on this host.
/// A stop gives the check up (a large set's reading included).
fn runnable_here(load: &LoadSpec, stop: &Stop) -> Result<(), String> {
    if let Some(cert) = load.client_cert.as_deref().filter(|c| !c.exists()) {
        return Err(format!(
            "-E '{}' is not on this worker's host: every worker reads the client certificate from its own disk; copy it to that path on every worker host",
            cert.display()
        ));
    }
    kurabe_http::load::check_or_stop(load, &kurabe_http::load::Names::FLAGS, stop)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// The start time has come: run the share's load and store the outcome.
fn run_started(
    client: &mut Client,
    job: &Job<'_>,
    load: &LoadSpec,
    stop: &Arc<Stop>,
    on: &mut dyn FnMut(WorkerEvent),
) -> Result<(), FleetError> {
    mark_running(client, job.claim, job.worker_id)?;
    let live = job.watch.map(|w| w.share(job.claim.run_id, load));
    let w = Watched::new(stop, Instant::now(), live);
    let started = w.started;
    let outcome = run_load(client, job, load, w)?;
    if let Ok(run) = &outcome {
        if aborted(load, &run.report, stop) {
            abort_run(client, job.claim.run_id)?;
        }
    }
    finish_share(client, job, outcome, started, on)
}

/// Whether this share stopped at its first failure (`--abort-on-error`),
/// not at a stop of its own.
fn aborted(load: &LoadSpec, report: &HttpReport, stop: &Stop) -> bool {
    load.abort_on_error && report.interrupted && report.failed_requests > 0 && !stop.is_set()
}

/// `--abort-on-error` on many hosts: the first failure anywhere cancels
/// the run, and every other worker stops at its next heartbeat, as one
/// client stops at its first failure.
fn abort_run(client: &mut Client, run_id: i64) -> Result<(), FleetError> {
    client
        .execute(
            "UPDATE fleet_runs SET state = 'cancelled' WHERE id = $1 AND state = 'running'",
            &[&run_id],
        )
        .map_err(db("cannot stop the run at the first failure"))?;
    notify(client, WORK_CHANNEL, run_id)
}

fn mark_running(client: &mut Client, c: &Claim, worker_id: i64) -> Result<(), FleetError> {
    client
        .execute(
            "UPDATE fleet_assignments SET state = 'running' WHERE run_id = $1 AND slot = $2 AND worker_id = $3",
            &[&c.run_id, &(c.share.slot as i32), &worker_id],
        )
        .map_err(db("cannot mark the share running"))?;
    Ok(())
}

/// Wait for the coordinator to set the common start time (database
/// seconds). `None` when the share was given back (stop) or the run
/// ended before it started; both are already dealt with.
fn wait_for_start_time(
    client: &mut Client,
    job: &Job<'_>,
    beat: &mut Beat,
    stop: &Stop,
    on: &mut dyn FnMut(WorkerEvent),
) -> Result<Option<f64>, FleetError> {
    let c = job.claim;
    loop {
        if stop.is_set() {
            release(client, c, job.worker_id)?;
            return Ok(None);
        }
        let (state, start) = run_state(client, c.run_id)?;
        match (state.as_str(), start) {
            ("running", Some(start)) => return Ok(Some(start)),
            ("gathering", _) => {}
            _ => {
                let (run_id, reason) = (c.run_id, state);
                on(WorkerEvent::Abandoned { run_id, reason });
                return Ok(None);
            }
        }
        if beat.due() {
            job.heartbeat(client, "claimed")?;
        }
        // Blocks on the LISTEN socket: the coordinator's NOTIFY wakes it.
        wait_notification(client, Duration::from_millis(250))?;
    }
}

/// Wait for the common start, heartbeating meanwhile; false when stopped.
///
/// Kept as a timed wait: it paces to a deadline (the start time), and each
/// wait is one `Stop::wait_until` that a stop cuts short at once.
fn sleep_until_start(
    client: &mut Client,
    job: &Job<'_>,
    beat: &mut Beat,
    offset: ClockOffset,
    start_db_s: f64,
    stop: &Stop,
) -> Result<bool, FleetError> {
    loop {
        let left = offset.until(start_db_s);
        if left.is_zero() {
            return Ok(true);
        }
        if stop.wait_until((Instant::now() + left).min(beat.next())) {
            return Ok(false);
        }
        if beat.due() {
            job.heartbeat(client, "claimed")?;
        }
    }
}

type LoadOutcome = Result<kurabe_http::load::LoadRun, kurabe_http::load::LoadError>;

/// Run the engine on a thread while this one streams progress and watches
/// for cancellation; the database errors of the watch come first.
fn run_load(
    client: &mut Client,
    job: &Job<'_>,
    load: &LoadSpec,
    w: Watched<'_>,
) -> Result<LoadOutcome, FleetError> {
    let (outcome, watch) = std::thread::scope(|s| {
        let engine = s.spawn(|| {
            let r = kurabe_http::load::run(load, &w.engine_stop, &w.seen);
            w.finished.store(true, Ordering::SeqCst);
            w.wake.trigger(None);
            r
        });
        let watch = watch_run(client, job, &w);
        if watch.is_err() {
            // Without the database we cannot report; stop the load rather than run blind.
            w.engine_stop.trigger(None);
        }
        let outcome = match engine.join() {
            Ok(r) => r,
            Err(p) => std::panic::resume_unwind(p),
        };
        (outcome, watch)
    });
    watch?;
    Ok(outcome)
}

/// Store what the engine produced (or why it could not run).
fn finish_share(
    client: &mut Client,
    job: &Job<'_>,
    outcome: LoadOutcome,
    started: Instant,
    on: &mut dyn FnMut(WorkerEvent),
) -> Result<(), FleetError> {
    let c = job.claim;
    let kurabe_http::load::LoadRun { report, stats } = match outcome {
        Ok(r) => r,
        Err(e) => return store_failure(client, c, job.worker_id, &e.to_string(), on),
    };
    let elapsed_ms = started.elapsed().as_millis() as i64;
    let (done, failed) = (report.complete_requests, report.failed_requests);
    progress_row(client, c, elapsed_ms, done, failed)?;
    store_result(client, c, job.worker_id, &report, &stats)?;
    on(WorkerEvent::Finished {
        run_id: c.run_id,
        report: Box::new(report),
    });
    Ok(())
}

/// The engine's counts as its observer last saw them (every 100 ms; the
/// progress rows are written every heartbeat), and the live watch of the
/// share, which sees what it would see in `kurabe http`.
#[derive(Default)]
struct Seen {
    completed: AtomicU64,
    failed: AtomicU64,
    live: Option<Arc<dyn Observer + Send + Sync>>,
}

impl kurabe_http::load::Observer for Seen {
    fn progress_interval(&self) -> Option<Duration> {
        Some(Duration::from_millis(100))
    }

    fn progress(&self, p: kurabe_http::load::Progress) {
        self.completed.store(p.completed, Ordering::Relaxed);
        self.failed.store(p.failed, Ordering::Relaxed);
        if let Some(l) = &self.live {
            l.progress(p);
        }
    }

    fn wants_snapshots(&self) -> bool {
        self.live.as_ref().is_some_and(|l| l.wants_snapshots())
    }

    fn snapshot(&self, s: &Snapshot) {
        if let Some(l) = &self.live {
            l.snapshot(s);
        }
    }
}

/// What the watch of a running share looks at.
struct Watched<'a> {
    seen: Seen,
    /// The engine's stop: the worker's stop, a cancelled run or a lost database.
    engine_stop: Arc<Stop>,
    /// Triggered when the engine ends or the stop comes: what the watch blocks on.
    wake: Arc<Stop>,
    finished: AtomicBool,
    stop: &'a Stop,
    started: Instant,
}

impl<'a> Watched<'a> {
    fn new(
        stop: &'a Arc<Stop>,
        started: Instant,
        live: Option<Arc<dyn Observer + Send + Sync>>,
    ) -> Self {
        Self {
            seen: Seen {
                live,
                ..Seen::default()
            },
            engine_stop: stop.child(),
            wake: stop.child(),
            finished: AtomicBool::new(false),
            stop,
            started,
        }
    }
}

/// Heartbeat and write a progress row every heartbeat until the engine
/// ends; stop the engine on a stop or when the run is cancelled. Blocks on
/// `wake` between heartbeats.
fn watch_run(client: &mut Client, job: &Job<'_>, w: &Watched<'_>) -> Result<(), FleetError> {
    let mut beat = Beat::new(job.cfg.heartbeat);
    loop {
        w.wake.wait_until(beat.next());
        if w.finished.load(Ordering::SeqCst) {
            return Ok(());
        }
        if w.stop.is_set() {
            // The engine's stop is this stop's child: it ends at once;
            // nothing is left to report until it has.
            return Ok(());
        }
        if !beat.due() {
            continue;
        }
        beat_once(client, job, w)?;
    }
}

/// One heartbeat of a running share: the worker's heartbeat, a progress
/// row, and the engine stopped when the run was cancelled.
fn beat_once(client: &mut Client, job: &Job<'_>, w: &Watched<'_>) -> Result<(), FleetError> {
    job.heartbeat(client, "running")?;
    progress_row(
        client,
        job.claim,
        w.started.elapsed().as_millis() as i64,
        w.seen.completed.load(Ordering::Relaxed),
        w.seen.failed.load(Ordering::Relaxed),
    )?;
    if run_state(client, job.claim.run_id)?.0 == "cancelled" {
        w.engine_stop.trigger(None);
    }
    Ok(())
}

fn progress_row(
    client: &mut Client,
    c: &Claim,
    elapsed_ms: i64,
    completed: u64,
    failed: u64,
) -> Result<(), FleetError> {
    client
        .execute(
            "INSERT INTO fleet_progress (run_id, slot, elapsed_ms, completed, failed)
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
            &[
                &c.run_id,
                &(c.share.slot as i32),
                &elapsed_ms,
                &(completed as i64),
                &(failed as i64),
            ],
        )
        .map_err(db("cannot write a progress row"))?;
    Ok(())
}

/// One share's result row: report, counters and histograms.
const RESULT_SQL: &str = "INSERT INTO fleet_results (run_id, slot, worker_id, report, counters,
        hist_total, hist_connect, hist_processing, hist_waiting, hist_uncorrected)
 VALUES ($1, $2, $3, $4::text::jsonb, $5::text::jsonb, $6, $7, $8, $9, $10)";

/// Store the result, mark the share done and tell the coordinator, in one transaction.
fn store_result(
    client: &mut Client,
    c: &Claim,
    worker_id: i64,
    report: &HttpReport,
    stats: &Stats,
) -> Result<(), FleetError> {
    let (h, counters) = tally::encode(stats)?;
    let rep = serde_json::to_string(report).map_err(json("report"))?;
    let cnt = counters.to_json().map_err(json("counters"))?;
    let (id, slot) = (&c.run_id, &(c.share.slot as i32));
    let mut tx = client
        .transaction()
        .map_err(db("cannot start storing the result"))?;
    let (t, co, p, w, u) = (
        &h.total,
        &h.connect,
        &h.processing,
        &h.waiting,
        &h.uncorrected,
    );
    tx.execute(
        RESULT_SQL,
        &[id, slot, &worker_id, &rep, &cnt, t, co, p, w, u],
    )
    .map_err(db("cannot store the result"))?;
    mark_done(&mut tx, c, worker_id)?;
    tx.commit().map_err(db("cannot commit the result"))
}

/// Within the result's transaction: the share is done, and the coordinator hears of it.
fn mark_done(
    tx: &mut postgres::Transaction<'_>,
    c: &Claim,
    worker_id: i64,
) -> Result<(), FleetError> {
    tx.execute(
        "UPDATE fleet_assignments SET state = 'done', finished_at = now()
          WHERE run_id = $1 AND slot = $2 AND worker_id = $3",
        &[&c.run_id, &(c.share.slot as i32), &worker_id],
    )
    .map_err(db("cannot mark the share done"))?;
    let id = c.run_id.to_string();
    tx.execute("SELECT pg_notify($1, $2)", &[&COORD_CHANNEL, &id])
        .map_err(db("cannot NOTIFY"))?;
    Ok(())
}

fn store_failure(
    client: &mut Client,
    c: &Claim,
    worker_id: i64,
    error: &str,
    on: &mut dyn FnMut(WorkerEvent),
) -> Result<(), FleetError> {
    client
        .execute(
            "UPDATE fleet_assignments SET state = 'failed', note = $4, finished_at = now()
              WHERE run_id = $1 AND slot = $2 AND worker_id = $3",
            &[&c.run_id, &(c.share.slot as i32), &worker_id, &error],
        )
        .map_err(db("cannot mark the share failed"))?;
    notify(client, COORD_CHANNEL, c.run_id)?;
    on(WorkerEvent::Failed {
        run_id: c.run_id,
        error: error.to_string(),
    });
    Ok(())
}
