//! The experiment runner: plan → schedule → runs → store → verdicts.
//!
//! Runs happen in rounds; each round runs every workload against every
//! variant once, variants in the round's order from
//! [`kurabe_model::stats::randomized_blocks`] (a seeded randomised Latin
//! square: A B | B A | …), so drift hits all variants alike. The seed is
//! recorded with the experiment. Every run starts the target fresh on a
//! newly allocated `{port}`, waits until it is ready, runs the workload with
//! the probes on, stops the target and its whole tree, and is committed to
//! the store before the next run starts. A failed run is recorded with its
//! stderr tail; `on_failure` decides whether the experiment goes on.
//! `--until-confident` looks at the data after the plan's rounds and each
//! time the rounds have doubled, at most five looks, and stops when every
//! headline metric is settled at 99 % (Bonferroni over the looks, so the
//! repeated looks do not inflate false verdicts; see
//! [`crate::analysis::stop_decision`]); the report reads the 95 % intervals. The
//! stop flag (Ctrl-C) ends the run in flight without recording it, keeps
//! the finished ones and marks the experiment interrupted.
//!
//! What it touches comes in through [`RunnerIo`]: a [`Launcher`] (the real
//! [`ProcessLauncher`] starts processes), a [`Sink`] (the store), a
//! [`Clock`], the stop flag and the progress callback, so the scheduling,
//! `on_failure`, `--until-confident` and interruption rules are unit-tested
//! with fakes (`runner/scheduling_tests.rs`), as well as end to end.
//!
//! It reports progress through a callback and never prints.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use kurabe_model::plan::{
    substitute, CommandLine, CommandWorkload, OnFailure, Plan, PortSpec, Ready, ResolvedVariant,
    StopSignal, WatchWorkload, Workload, WorkloadKind, KURABE_PLACEHOLDER, PORT_PLACEHOLDER,
    WORKTREE_PLACEHOLDER,
};
use kurabe_model::record::{
    ExperimentId, ExperimentStatus, HttpRun, MetricValue, NewExperiment, RunRecord, RunStatus,
};
use kurabe_model::stats::{metric, randomized_blocks};
use kurabe_model::time::rfc3339;
use kurabe_model::tree_counters::Counter;
use kurabe_stop::Stop;
use kurabe_store::{Store, StoreError};

use crate::analysis::{
    analyse, analyse_at, evaluate_checks, headline_metrics, stop_decision, Analysis, CheckResult,
    StopDecision, STOP_CONFIDENCE,
};
use crate::measure::{self, Measured, Probe};
use crate::target::{self, parse_ready_url, ReadyCheck, RunFailure, RunningTarget, TargetSpec};

/// How to run a plan.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Directory relative paths in the plan (`cwd`, `body_file`) start from,
    /// and the working directory of the target and commands without `cwd`.
    pub plan_dir: PathBuf,
    /// The plan file's text, stored with the experiment.
    pub plan_text: String,
    /// Seed of the run order (overrides the plan's; default: drawn at start).
    pub seed: Option<u64>,
    /// Rounds (overrides the plan's `repeat`).
    pub repeat: Option<u32>,
    /// What `{kurabe}` stands for: the running kurabe executable.
    pub kurabe_exe: PathBuf,
    /// Whether rounds are added after the plan's: `--until-confident`,
    /// or as many as fit a time (`kurabe noise`).
    pub more_rounds: MoreRounds,
    /// kurabe's version, stored with the experiment.
    pub tool_version: String,
    /// What `{worktree}` stands for, by variant name: the cached worktree
    /// of its `rev` ([`crate::git::prepare_revisions`]), else the top level
    /// of the plan's own work tree.
    pub worktrees: BTreeMap<String, PathBuf>,
    /// The code measured (git revision and/or CI label), stored with the
    /// experiment; `None` outside a git work tree without a label.
    pub rev: Option<kurabe_model::record::Revision>,
    /// What watches the http loads live (`--tui`, `--prometheus-addr`).
    pub live: Option<Arc<dyn measure::LoadWatch>>,
    /// Whether each command run's on-CPU stacks are sampled (`--profile`).
    pub profile: kurabe_model::profile::Profiling,
}

pub use kurabe_model::progress::Event;

/// Whether the runner adds rounds after the plan's (or `--repeat`'s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MoreRounds {
    /// The plan's rounds, no more.
    #[default]
    No,
    /// `--until-confident`: add rounds until every headline metric has a
    /// settled verdict at the stricter stop level, within this total time
    /// budget ([`crate::analysis::stop_decision`]).
    UntilConfident(Duration),
    /// `kurabe noise`: add rounds one at a time while the next one, at the
    /// pace so far, ends within this time since the experiment began.
    UntilTime(Duration),
}

impl MoreRounds {
    /// `--until-confident` within `budget` when given, else the plan's rounds.
    pub fn until_confident(budget: Option<Duration>) -> MoreRounds {
        budget.map_or(MoreRounds::No, MoreRounds::UntilConfident)
    }
}

/// The experiment's outcome.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Its id in the store.
    pub experiment: ExperimentId,
    /// How it ended.
    pub status: ExperimentStatus,
    /// Seed of the run order.
    pub seed: u64,
    /// Variant names in plan order.
    pub variants: Vec<String>,
    /// Every recorded run, in run order.
    pub runs: Vec<RunRecord>,
    /// Summaries and verdicts.
    pub analysis: Analysis,
    /// `[[check]]` results.
    pub checks: Vec<CheckResult>,
    /// Why the experiment stopped early, when it did.
    pub stopped_by: Option<String>,
    /// Variant × workload pairs that ran and never succeeded: each one marks
    /// the experiment failed, as there is nothing to compare for it.
    pub failed_cells: Vec<FailedCell>,
}

pub use kurabe_model::progress::FailedCell;

/// The variant × workload pairs, in plan order, that have runs and no
/// successful one. Pairs that never ran (an experiment cut short) are not listed.
pub fn cells_without_success(
    variants: &[String],
    workloads: &[String],
    runs: &[RunRecord],
) -> Vec<FailedCell> {
    let mut out = Vec::new();
    for v in variants {
        for w in workloads {
            let cell: Vec<&RunRecord> = runs
                .iter()
                .filter(|r| &r.variant == v && &r.workload == w)
                .collect();
            if !cell.is_empty() && cell.iter().all(|r| r.status == RunStatus::Failed) {
                out.push(FailedCell {
                    variant: v.clone(),
                    workload: w.clone(),
                    runs: cell.len(),
                    last_error: cell.last().and_then(|r| r.error_tail.clone()),
                });
            }
        }
    }
    out
}

/// Errors that keep an experiment from running at all.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The results store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The plan asks for something this build cannot do.
    #[error("{0}")]
    Unsupported(String),
}

/// Refuse plans this build cannot run, before anything starts (a `system`
/// workload naming a test that does not exist, a header that would inject
/// lines into the request).
pub fn check_supported(plan: &Plan) -> Result<(), LabError> {
    for (i, w) in plan.workloads.iter().enumerate() {
        match &w.kind {
            WorkloadKind::System(s) if !s.tests.is_empty() => {
                kurabe_system::parse_tests(&s.tests.join(",")).map_err(|e| {
                    LabError::Unsupported(format!("`workload[{i}].system.tests`: {e}"))
                })?;
            }
            WorkloadKind::Http(h) => check_headers(h).map_err(|(field, e)| {
                LabError::Unsupported(format!("`workload[{i}].http.{field}`: {e}"))
            })?,
            _ => {}
        }
    }
    Ok(())
}

/// Refuse a `--repeat` that makes more runs than an experiment may have
/// (the plan's own `repeat` is checked when it is loaded).
fn check_size(plan: &Plan, repeat: u32) -> Result<(), LabError> {
    use kurabe_model::plan::MAX_RUNS;
    match plan.run_count(repeat) {
        Some(n) if n <= MAX_RUNS => Ok(()),
        _ => Err(LabError::Unsupported(format!(
            "--repeat {repeat}: {} workloads × {repeat} rounds of every variant is more than the {MAX_RUNS} runs an experiment may have; lower --repeat",
            plan.workloads.len()
        ))),
    }
}

/// Every header source of an http workload, checked by the load generator's
/// one rule (as `-H`, `-C`, `-T` are): the failing field and why.
fn check_headers(
    h: &kurabe_model::load::LoadSpec,
) -> Result<(), (&'static str, kurabe_http::header::HeaderError)> {
    use kurabe_http::header::check;
    for hd in &h.headers {
        check(&hd.name, &hd.value).map_err(|e| ("headers", e))?;
    }
    for c in &h.cookies {
        check("Cookie", c).map_err(|e| ("cookies", e))?;
    }
    if let Some(t) = &h.content_type {
        check("Content-Type", t).map_err(|e| ("content_type", e))?;
    }
    Ok(())
}

/// A run-order seed drawn from the clock and the process id.
pub fn default_seed() -> u64 {
    let t = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    t ^ (u64::from(std::process::id()) << 32)
}

fn signal_number(s: StopSignal) -> libc::c_int {
    match s {
        StopSignal::Term => libc::SIGTERM,
        StopSignal::Int => libc::SIGINT,
        StopSignal::Quit => libc::SIGQUIT,
        StopSignal::Hup => libc::SIGHUP,
        StopSignal::Kill => libc::SIGKILL,
    }
}

/// argv of a command line: a string runs through `/bin/sh -c`.
pub(crate) fn argv_of(cmd: &CommandLine, extra: &[String]) -> Vec<String> {
    match cmd {
        CommandLine::Argv(v) => v.iter().chain(extra).cloned().collect(),
        CommandLine::Shell(s) => {
            let mut line = s.clone();
            for a in extra {
                line.push(' ');
                line.push_str(&kurabe_model::plan::shell_quote(a));
            }
            vec!["/bin/sh".into(), "-c".into(), line]
        }
    }
}

/// Runs one variant × workload and measures it. The real launcher starts
/// the target and the workload's processes ([`ProcessLauncher`]); unit
/// tests of the schedule and stop rules hand in a fake.
pub trait Launcher {
    /// One run: start, ready, measure, stop.
    fn launch(
        &mut self,
        variant: &ResolvedVariant,
        workload: &Workload,
    ) -> Result<Measured, RunFailure>;
}

/// Where an experiment and its runs are recorded: the results store, or a
/// fake in unit tests. Each run is handed over as soon as it finishes.
pub trait Sink {
    /// Record a new experiment; its id.
    fn begin(&mut self, experiment: &NewExperiment) -> Result<ExperimentId, StoreError>;
    /// Record one finished run.
    fn record(&mut self, experiment: ExperimentId, run: &RunRecord) -> Result<(), StoreError>;
    /// Record how the experiment ended.
    fn finish(
        &mut self,
        experiment: ExperimentId,
        status: ExperimentStatus,
    ) -> Result<(), StoreError>;
}

impl Sink for Store {
    fn begin(&mut self, experiment: &NewExperiment) -> Result<ExperimentId, StoreError> {
        self.begin_experiment(experiment)
    }
    fn record(&mut self, experiment: ExperimentId, run: &RunRecord) -> Result<(), StoreError> {
        self.record_run(experiment, run).map(drop)
    }
    fn finish(
        &mut self,
        experiment: ExperimentId,
        status: ExperimentStatus,
    ) -> Result<(), StoreError> {
        self.finish_experiment(experiment, status)
    }
}

/// Time since the experiment began, against `--until-confident`'s budget.
pub trait Clock {
    /// Elapsed time.
    fn elapsed(&self) -> Duration;
}

impl Clock for Instant {
    fn elapsed(&self) -> Duration {
        Instant::elapsed(self)
    }
}

/// The real launcher: every run starts the plan's target fresh and runs
/// the workload against it with the probes on.
pub struct ProcessLauncher<'a> {
    plan: &'a Plan,
    opts: &'a RunOptions,
    stop: &'a Arc<Stop>,
}

impl Launcher for ProcessLauncher<'_> {
    fn launch(&mut self, v: &ResolvedVariant, w: &Workload) -> Result<Measured, RunFailure> {
        self.run_once(v, w)
    }
}

impl ProcessLauncher<'_> {
    fn vars(&self, v: &ResolvedVariant, port: u16) -> BTreeMap<String, String> {
        let mut vars = v.params.clone();
        vars.insert(PORT_PLACEHOLDER.into(), port.to_string());
        vars.insert(
            KURABE_PLACEHOLDER.into(),
            self.opts.kurabe_exe.display().to_string(),
        );
        if let Some(dir) = self.opts.worktrees.get(&v.name) {
            vars.insert(WORKTREE_PLACEHOLDER.into(), dir.display().to_string());
        }
        vars
    }

    /// Working directory of a started program: the plan's folder, or a
    /// `cwd` from the plan resolved against it — never kurabe's own cwd,
    /// so a plan behaves the same from whichever directory it is run.
    fn resolve_dir(&self, p: Option<&PathBuf>) -> Option<PathBuf> {
        Some(match p {
            Some(d) => self.opts.plan_dir.join(d),
            None => self.opts.plan_dir.clone(),
        })
    }

    /// The target's command line, environment, readiness and limits for
    /// variant `v` with `vars` substituted; `None` for plans without a target.
    fn target_spec(
        &self,
        v: &ResolvedVariant,
        vars: &BTreeMap<String, String>,
        port: u16,
    ) -> Option<Result<TargetSpec, RunFailure>> {
        let t = self.plan.target.as_ref()?;
        let cmd = v.command.as_ref().unwrap_or(&t.command).substitute(vars);
        let args: Vec<String> = v.args.iter().map(|a| substitute(a, vars)).collect();
        let argv = argv_of(&cmd, &args);
        let env = substituted(t.env.iter().chain(&v.env), vars);
        let ready = match ready_check(t, v, vars, port) {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        let limits = cgroup_limits(v);
        Some(Ok(TargetSpec {
            argv,
            env,
            cwd: self.resolve_dir(t.cwd.as_ref()),
            ready,
            stop_signal: signal_number(t.stop_signal),
            stop_grace: t.stop_grace.0,
            startup_timeout: t.startup_timeout.0,
            limits,
        }))
    }

    /// One run: start, ready, measure, stop. Dropping the target on any
    /// error path kills its tree and cgroup.
    fn run_once(&self, v: &ResolvedVariant, w: &Workload) -> Result<Measured, RunFailure> {
        let port = target::free_port()
            .map_err(|e| RunFailure::new(format!("cannot allocate a port: {e}")))?;
        let vars = self.vars(v, port);
        let mut running = self.start_target(v, &vars, port)?;
        let probe = running.as_ref().map(|t| Probe {
            pid: t.pid(),
            cgroup: t.cgroup_reader(),
            profile: self.opts.profile,
        });
        let measured = self.measure(v, w, &vars, port, probe.as_ref());
        if let Some(t) = running.as_mut() {
            // A target that died under load makes the figures meaningless.
            t.check_alive("during the workload")?;
        }
        let measured = measured.map_err(|e| match running.as_mut() {
            Some(t) if e.stderr_tail.is_empty() => RunFailure {
                stderr_tail: t.stderr_tail(),
                ..e
            },
            _ => e,
        })?;
        if let Some(t) = running {
            t.stop();
        }
        Ok(measured)
    }

    /// The plan's target for this variant, started and ready; `None` for
    /// plans without a target.
    fn start_target(
        &self,
        v: &ResolvedVariant,
        vars: &BTreeMap<String, String>,
        port: u16,
    ) -> Result<Option<RunningTarget>, RunFailure> {
        let Some(spec) = self.target_spec(v, vars, port) else {
            return Ok(None);
        };
        let mut t = target::start(&spec?)?;
        t.wait_ready(self.stop)?;
        Ok(Some(t))
    }

    /// Run the workload (the target, if any, is up and probed).
    fn measure(
        &self,
        v: &ResolvedVariant,
        w: &Workload,
        vars: &BTreeMap<String, String>,
        port: u16,
        probe: Option<&Probe>,
    ) -> Result<Measured, RunFailure> {
        let env = substituted(v.env.iter(), vars);
        match &w.kind {
            WorkloadKind::Http(h) => {
                let url = http_url(h, v, vars, port);
                // Without a target, a server on this machine is still
                // measured: the process listening on the URL's port.
                let probe = probe
                    .cloned()
                    .or_else(|| local_server(&url, self.opts.profile));
                match v.http_version {
                    Some(version) => self.http(&version.apply(h), &url, probe.as_ref()),
                    None => self.http(h, &url, probe.as_ref()),
                }
            }
            WorkloadKind::Command(c) => self.command(v, c, vars, &env),
            WorkloadKind::Watch(wt) => self.watch(wt, vars, env, probe),
            WorkloadKind::Idle(i) => measure::idle(i, probe, self.stop),
            WorkloadKind::System(sw) => measure::system(sw, cgroup_limits(v).as_ref(), self.stop),
        }
    }

    /// An http workload against `url`, `probe` sampled.
    fn http(
        &self,
        h: &kurabe_model::load::LoadSpec,
        url: &str,
        probe: Option<&Probe>,
    ) -> Result<Measured, RunFailure> {
        let warmup = self.plan.warmup.map(|d| d.0);
        let watch = self.opts.live.as_deref();
        measure::http(h, url, &self.opts.plan_dir, warmup, probe, self.stop, watch)
    }

    /// A command workload. Without a target, a variant's command and
    /// limits are its command workloads' (the plan `kurabe cmd` builds).
    fn command(
        &self,
        v: &ResolvedVariant,
        c: &CommandWorkload,
        vars: &BTreeMap<String, String>,
        env: &BTreeMap<String, String>,
    ) -> Result<Measured, RunFailure> {
        let own = self.plan.target.is_none();
        let command = v.command.as_ref().filter(|_| own).unwrap_or(&c.command);
        let argv = argv_of(&command.substitute(vars), &[]);
        let prepare = c
            .prepare
            .as_ref()
            .map(|p| argv_of(&p.substitute(vars), &[]));
        let limits = cgroup_limits(v).filter(|_| own);
        let run = measure::CommandRun {
            argv: &argv,
            prepare: prepare.as_deref(),
            env,
            cwd: self.resolve_dir(c.cwd.as_ref()),
            limits: limits.as_ref(),
            profile: self.opts.profile,
        };
        measure::command(c, &run, self.stop.flag())
    }

    /// A watch workload: its own command started and watched, else the target.
    fn watch(
        &self,
        wt: &WatchWorkload,
        vars: &BTreeMap<String, String>,
        env: BTreeMap<String, String>,
        probe: Option<&Probe>,
    ) -> Result<Measured, RunFailure> {
        let Some(cmd) = &wt.command else {
            return match probe {
                Some(p) => measure::watch(wt, p, self.stop),
                None => Err(RunFailure::new(
                    "a watch workload needs a target or a command",
                )),
            };
        };
        let spec = watched_command(argv_of(&cmd.substitute(vars), &[]), env);
        let spec = TargetSpec {
            cwd: self.resolve_dir(wt.cwd.as_ref()),
            ..spec
        };
        let watched = target::start(&spec)?;
        let p = Probe {
            pid: watched.pid(),
            cgroup: watched.cgroup_reader(),
            profile: Default::default(),
        };
        let r = measure::watch(wt, &p, self.stop);
        watched.stop();
        r
    }
}

/// Tell the caller the experiment began (and whether some variant is remote).
fn announce(
    io: &mut RunnerIo<'_>,
    plan: &Plan,
    variants: &[ResolvedVariant],
    (experiment, seed, total): (ExperimentId, u64, usize),
) {
    (io.on_event)(&Event::Begin {
        experiment,
        seed,
        total,
    });
    if let Some(note) = remote_note(plan, variants) {
        (io.on_event)(&Event::Note(note));
    }
}

/// The experiment row: plan, seed, this machine and kurabe, the code's
/// revision and the cgroup limits in force.
pub(crate) fn new_experiment(plan: &Plan, opts: &RunOptions, seed: u64) -> NewExperiment {
    NewExperiment {
        name: plan.name.clone(),
        plan_text: opts.plan_text.clone(),
        seed: Some(seed),
        host: kurabe_probe::host::host_facts(),
        tool_version: opts.tool_version.clone(),
        origin: kurabe_model::record::Origin {
            rev: opts.rev.clone(),
            limits: Some(kurabe_probe::cgroup::limits_in_force()),
        },
    }
}

/// A watch workload's own command as a target: ready at once, SIGTERM
/// with a second's grace at the end.
fn watched_command(argv: Vec<String>, env: BTreeMap<String, String>) -> TargetSpec {
    TargetSpec {
        argv,
        env,
        cwd: None,
        ready: ReadyCheck::Immediately,
        stop_signal: libc::SIGTERM,
        stop_grace: Duration::from_secs(1),
        startup_timeout: Duration::from_secs(1),
        limits: None,
    }
}

/// Environment entries with `vars` substituted in their values.
fn substituted<'e>(
    env: impl Iterator<Item = (&'e String, &'e String)>,
    vars: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    env.map(|(k, val)| (k.clone(), substitute(val, vars)))
        .collect()
}

/// How the target's readiness is checked: the plan's `ready`, else a TCP
/// connect to `{port}` when the command uses it, else at once.
fn ready_check(
    t: &kurabe_model::plan::Target,
    v: &ResolvedVariant,
    vars: &BTreeMap<String, String>,
    port: u16,
) -> Result<ReadyCheck, RunFailure> {
    let variant_parts = v.command.as_ref().map(|c| c.parts()).unwrap_or_default();
    let uses_port = t
        .command
        .parts()
        .iter()
        .chain(variant_parts.iter())
        .any(|p| p.contains("{port}"));
    Ok(match &t.ready {
        Some(Ready::Url(u)) => parse_ready_url(&substitute(u, vars)).map_err(RunFailure::new)?,
        Some(Ready::Tcp(PortSpec::Fixed(p))) => ReadyCheck::Tcp(*p),
        Some(Ready::Tcp(PortSpec::Allocated)) => ReadyCheck::Tcp(port),
        Some(Ready::Log(l)) => ReadyCheck::Log(l.clone()),
        None if uses_port => ReadyCheck::Tcp(port),
        None => ReadyCheck::Immediately,
    })
}

/// The URL an http workload loads for variant `v`: its own `url`, else
/// `path` on the variant's existing server, else on the target's `{port}`.
fn http_url(
    h: &kurabe_model::load::LoadSpec,
    v: &ResolvedVariant,
    vars: &BTreeMap<String, String>,
    port: u16,
) -> String {
    let path = h.path.as_deref().map(|p| substitute(p, vars));
    match (&h.url, &v.url, path) {
        (Some(u), _, _) => substitute(u, vars),
        (None, Some(base), None) => substitute(base, vars),
        (None, Some(base), Some(path)) => join_url(&substitute(base, vars), &path),
        (None, None, path) => format!("http://127.0.0.1:{port}{}", path.as_deref().unwrap_or("/")),
    }
}

/// `base` (a server's URL, maybe with a path prefix) with `path` appended.
fn join_url(base: &str, path: &str) -> String {
    format!("{}{path}", base.trim_end_matches('/'))
}

/// The port of a URL whose host is this machine's loopback.
fn is_loopback_url(url: &str) -> Option<u16> {
    let t = kurabe_http::Target::parse(url).ok()?;
    let host = t.host.trim_start_matches('[').trim_end_matches(']');
    let local = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    local.then_some(t.port)
}

/// The process listening on a loopback URL's port, to sample as the server.
fn local_server(url: &str, profile: kurabe_model::profile::Profiling) -> Option<Probe> {
    let port = is_loopback_url(url)?;
    let pid = kurabe_probe::find_listener(port).ok().flatten()?;
    Some(Probe {
        pid,
        cgroup: None,
        profile,
    })
}

/// One note for the http workloads whose server kurabe cannot measure:
/// no [target] and a URL that is not on this machine.
fn remote_note(plan: &Plan, variants: &[ResolvedVariant]) -> Option<String> {
    if plan.target.is_some() {
        return None;
    }
    let mut remote = Vec::new();
    for w in &plan.workloads {
        let WorkloadKind::Http(h) = &w.kind else {
            continue;
        };
        for v in variants {
            let url = http_url(h, v, &v.params, 0);
            if is_loopback_url(&url).is_none() && !remote.contains(&v.name) {
                remote.push(v.name.clone());
            }
        }
    }
    (!remote.is_empty()).then(|| {
        format!(
            "server CPU and memory are measured only for servers on this machine; not for: {}",
            remote.join(", ")
        )
    })
}

/// Turn a run's outcome into the record the store keeps.
fn record_of(
    v: &str,
    w: &Workload,
    round: u32,
    started_at: String,
    result: Result<Measured, RunFailure>,
) -> RunRecord {
    let mut r = RunRecord {
        variant: v.into(),
        workload: w.name.clone(),
        round,
        status: RunStatus::Ok,
        error_tail: None,
        started_at,
        finished_at: rfc3339(SystemTime::now()),
        metrics: Vec::new(),
        record: None,
        http: None,
    };
    match result {
        Ok(m) => {
            r.metrics = selected_values(w, &m);
            r.http = HttpRun::of_detail(&m.record);
            r.record = Some(m.record);
        }
        Err(f) => {
            r.status = RunStatus::Failed;
            r.error_tail = Some(f.text());
        }
    }
    r
}

/// The values of the metrics `w` selects, with their units, in its order.
/// The tree's counters are kept whatever the selection: every report
/// judges them beside it (`analysis::counters_seen`).
fn selected_values(w: &Workload, m: &Measured) -> Vec<MetricValue> {
    let selected = w.selected_metrics();
    let counters = m
        .metrics
        .keys()
        .filter(|n| Counter::is_metric(n) && !selected.iter().any(|s| s == *n))
        .map(|n| n.to_string());
    let names: Vec<String> = selected.iter().cloned().chain(counters).collect();
    names
        .iter()
        .filter_map(|name| {
            let def = metric::lookup(name)?;
            let value = *m.metrics.get(name.as_str())?;
            Some(MetricValue {
                name: name.clone(),
                value,
                unit: def.unit.symbol().to_owned(),
            })
        })
        .collect()
}

/// Run `plan` and record everything in `store`.
///
/// `stop` is the Ctrl-C stop (waits block on it); `on_event` receives progress.
pub fn run_experiment(
    plan: &Plan,
    store: &mut Store,
    opts: &RunOptions,
    stop: &Arc<Stop>,
    on_event: &mut dyn FnMut(&Event<'_>),
) -> Result<Outcome, LabError> {
    check_supported(plan)?;
    check_size(plan, opts.repeat.unwrap_or(plan.repeat))?;
    let mut launcher = ProcessLauncher { plan, opts, stop };
    let mut io = RunnerIo {
        launcher: &mut launcher,
        sink: store,
        clock: &Instant::now(),
        stop: stop.flag(),
        on_event,
    };
    run_with(plan, opts, &mut io)
}

/// What the runner touches: the launcher, the sink, the clock, the stop
/// flag and the progress callback, handed in so tests can fake them.
pub struct RunnerIo<'a> {
    /// Runs one variant × workload.
    pub launcher: &'a mut dyn Launcher,
    /// Records the experiment and its runs.
    pub sink: &'a mut dyn Sink,
    /// Time since the start, for `--until-confident`'s budget.
    pub clock: &'a dyn Clock,
    /// The Ctrl-C flag.
    pub stop: &'a AtomicBool,
    /// Receives progress.
    pub on_event: &'a mut dyn FnMut(&Event<'_>),
}

/// [`run_experiment`] with every side effect behind `io`: the schedule,
/// `on_failure`, `--until-confident` and interruption, on any launcher and sink.
pub fn run_with(
    plan: &Plan,
    opts: &RunOptions,
    io: &mut RunnerIo<'_>,
) -> Result<Outcome, LabError> {
    let variants = plan.resolved_variants();
    let mut s = Session::begin(plan, opts, &variants, io)?;
    let mut round = 0;
    while round < s.rounds && s.stopped.is_none() {
        s.run_round(round, io)?;
        round += 1;
        if round == s.rounds && s.stopped.is_none() {
            match opts.more_rounds {
                MoreRounds::No => {}
                MoreRounds::UntilConfident(budget) => s.look(round, budget, io),
                MoreRounds::UntilTime(budget) => s.another_if_it_fits(round, budget, io),
            }
        }
    }
    s.finish(io.sink)
}

/// One experiment in progress.
struct Session<'a> {
    plan: &'a Plan,
    variants: &'a [ResolvedVariant],
    names: Vec<String>,
    experiment: ExperimentId,
    seed: u64,
    runs: Vec<RunRecord>,
    /// Runs planned so far.
    total: usize,
    /// Rounds planned so far.
    rounds: usize,
    /// `--until-confident` looks taken.
    looks: u32,
    /// How and why it stopped early, when it did.
    stopped: Option<(ExperimentStatus, String)>,
    /// Why it ended without every verdict settled (the experiment still completes).
    note: Option<String>,
}

impl<'a> Session<'a> {
    /// Record the experiment and announce it.
    fn begin(
        plan: &'a Plan,
        opts: &RunOptions,
        variants: &'a [ResolvedVariant],
        io: &mut RunnerIo<'_>,
    ) -> Result<Session<'a>, LabError> {
        let seed = opts.seed.or(plan.seed).unwrap_or_else(default_seed);
        let rounds = opts.repeat.unwrap_or(plan.repeat).max(1) as usize;
        let experiment = io.sink.begin(&new_experiment(plan, opts, seed))?;
        let total = variants.len() * plan.workloads.len() * rounds;
        announce(io, plan, variants, (experiment, seed, total));
        Ok(Session {
            plan,
            variants,
            names: variants.iter().map(|v| v.name.clone()).collect(),
            experiment,
            seed,
            runs: Vec::new(),
            total,
            rounds,
            looks: 0,
            stopped: None,
            note: None,
        })
    }

    /// Every workload against every variant once, in the round's order.
    fn run_round(&mut self, round: usize, io: &mut RunnerIo<'_>) -> Result<(), LabError> {
        // The schedule's prefix does not depend on its length, so rounds
        // added later continue the same seeded sequence.
        let order = randomized_blocks(self.variants.len(), round + 1, self.seed)
            .pop()
            .unwrap_or_default();
        for w in &self.plan.workloads {
            for &vi in &order {
                self.run_one(round as u32, &self.variants[vi], w, io)?;
                if self.stopped.is_some() {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// One run, recorded as soon as it ends; a stop request before or
    /// during it ends the experiment without recording it.
    fn run_one(
        &mut self,
        round: u32,
        v: &ResolvedVariant,
        w: &Workload,
        io: &mut RunnerIo<'_>,
    ) -> Result<(), LabError> {
        if self.interrupted(io.stop) {
            return Ok(());
        }
        (io.on_event)(&Event::RunStart {
            index: self.runs.len() + 1,
            total: self.total,
            round,
            variant: &v.name,
            workload: &w.name,
        });
        let started_at = rfc3339(SystemTime::now());
        let result = io.launcher.launch(v, w);
        if self.interrupted(io.stop) {
            // The run in flight was cut short: not a result.
            return Ok(());
        }
        let rec = record_of(&v.name, w, round, started_at, result);
        self.keep(rec, v, w, io)
    }

    /// Store a finished run, report it, and apply `on_failure`.
    fn keep(
        &mut self,
        rec: RunRecord,
        v: &ResolvedVariant,
        w: &Workload,
        io: &mut RunnerIo<'_>,
    ) -> Result<(), LabError> {
        io.sink.record(self.experiment, &rec)?;
        let failed = rec.status == RunStatus::Failed;
        self.runs.push(rec);
        (io.on_event)(&Event::RunDone {
            index: self.runs.len(),
            record: self.runs.last().expect("just pushed"),
        });
        if failed && self.plan.on_failure == OnFailure::Stop {
            self.stop_on_failure(v, w);
        }
        Ok(())
    }

    /// `on_failure = "stop"`: the experiment ends failed after the run just recorded.
    fn stop_on_failure(&mut self, v: &ResolvedVariant, w: &Workload) {
        let why = format!(
            "run {} ({} / {}) failed and on_failure = \"stop\"",
            self.runs.len(),
            v.name,
            w.name
        );
        self.stopped = Some((ExperimentStatus::Failed, why));
    }

    /// True (and the experiment marked interrupted) once Ctrl-C came.
    fn interrupted(&mut self, stop: &AtomicBool) -> bool {
        if stop.load(Ordering::Relaxed) {
            self.stopped = Some((ExperimentStatus::Interrupted, "interrupted".into()));
        }
        self.stopped.is_some()
    }

    /// `--until-confident` after `round` rounds: add rounds while some
    /// headline verdict is unsettled, as many as the time budget allows.
    /// Stop rule: see analysis::stop_decision and STOP_CONFIDENCE.
    fn look(&mut self, round: usize, budget: Duration, io: &mut RunnerIo<'_>) {
        self.looks += 1;
        let at_stop = analyse_at(self.plan, &self.names, &self.runs, STOP_CONFIDENCE);
        let headline = headline_metrics(self.plan);
        match stop_decision(&at_stop, &headline, self.looks, round) {
            StopDecision::Settled => {}
            StopDecision::OutOfLooks => {
                self.note = Some(format!(
                    "--until-confident: not every verdict settled at {:.0} % after \
                     {} looks; verdicts are reported as they stand",
                    STOP_CONFIDENCE * 100.0,
                    self.looks
                ));
            }
            StopDecision::MoreRounds(more) => {
                let add = more.min(rounds_that_fit(io.clock.elapsed(), round, budget, more));
                for _ in 0..add {
                    self.add_round(io);
                }
            }
        }
    }

    /// `kurabe noise` after `round` rounds: one more round when it ends
    /// within `budget` at the pace so far (and the experiment stays
    /// within the runs one may have).
    fn another_if_it_fits(&mut self, round: usize, budget: Duration, io: &mut RunnerIo<'_>) {
        let per_round = self.variants.len() * self.plan.workloads.len();
        let room = (self.total + per_round) as u64 <= kurabe_model::plan::MAX_RUNS;
        if room && rounds_that_fit(io.clock.elapsed(), round, budget, 1) >= 1 {
            self.add_round(io);
        }
    }

    /// Plan one more round, and say so.
    fn add_round(&mut self, io: &mut RunnerIo<'_>) {
        (io.on_event)(&Event::RoundAdded {
            round: self.rounds as u32,
        });
        self.rounds += 1;
        self.total += self.variants.len() * self.plan.workloads.len();
    }

    /// Mark the experiment's end in the sink and analyse it.
    fn finish(self, sink: &mut dyn Sink) -> Result<Outcome, LabError> {
        let (mut status, stopped_by) = match self.stopped {
            Some((status, why)) => (status, Some(why)),
            None => (ExperimentStatus::Complete, self.note),
        };
        let workload_names: Vec<String> =
            self.plan.workloads.iter().map(|w| w.name.clone()).collect();
        let failed_cells = cells_without_success(&self.names, &workload_names, &self.runs);
        if status == ExperimentStatus::Complete && !failed_cells.is_empty() {
            status = ExperimentStatus::Failed;
        }
        sink.finish(self.experiment, status)?;
        let analysis = analyse(self.plan, &self.names, &self.runs);
        let checks = evaluate_checks(self.plan, &analysis);
        Ok(Outcome {
            experiment: self.experiment,
            status,
            seed: self.seed,
            variants: self.names,
            runs: self.runs,
            analysis,
            checks,
            stopped_by,
            failed_cells,
        })
    }
}

/// Rounds that fit in what is left of `budget`, at the pace of the
/// `rounds` done in `elapsed`; `wanted` when no time has passed.
fn rounds_that_fit(elapsed: Duration, rounds: usize, budget: Duration, wanted: usize) -> usize {
    let per = elapsed / rounds.max(1) as u32;
    if per.is_zero() {
        return wanted;
    }
    (budget.saturating_sub(elapsed).as_nanos() / per.as_nanos()) as usize
}

/// Directory of a plan file, for relative paths in it and as the default
/// working directory of its programs. Absolute (against kurabe's cwd at
/// start) so error messages name a real place.
pub fn plan_dir(path: &Path) -> PathBuf {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::path::absolute(&dir).unwrap_or(dir)
}

/// A variant's `limits` in the form the cgroup code takes.
pub(crate) fn cgroup_limits(v: &ResolvedVariant) -> Option<kurabe_probe::cgroup::Limits> {
    v.limits.as_ref().map(probe_limits)
}

/// Plan limits in the form the cgroup code takes.
pub(crate) fn probe_limits(l: &kurabe_model::plan::Limits) -> kurabe_probe::cgroup::Limits {
    l.into()
}

#[cfg(test)]
mod scheduling_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_strings_get_quoted_args_and_lists_run_directly() {
        let s = argv_of(&CommandLine::Shell("serve -p 1".into()), &["a b".into()]);
        assert_eq!(s, vec!["/bin/sh", "-c", "serve -p 1 'a b'"]);
        let l = argv_of(&CommandLine::Argv(vec!["x".into()]), &["a b".into()]);
        assert_eq!(l, vec!["x", "a b"]);
    }

    fn run(variant: &str, workload: &str, ok: bool, error: &str) -> RunRecord {
        RunRecord {
            variant: variant.into(),
            workload: workload.into(),
            round: 0,
            status: if ok { RunStatus::Ok } else { RunStatus::Failed },
            error_tail: (!ok).then(|| error.to_owned()),
            started_at: String::new(),
            finished_at: String::new(),
            metrics: Vec::new(),
            record: None,
            http: None,
        }
    }

    #[test]
    fn a_pair_fails_only_when_none_of_its_runs_succeeded() {
        let names = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let runs = [
            run("a", "w1", false, "first"),
            run("a", "w1", true, ""),
            run("b", "w1", false, "first"),
            run("b", "w1", false, "exit code 127"),
            run("a", "w2", true, ""),
        ];
        let cells = cells_without_success(&names(&["a", "b"]), &names(&["w1", "w2"]), &runs);
        assert_eq!(
            cells,
            vec![FailedCell {
                variant: "b".into(),
                workload: "w1".into(),
                runs: 2,
                last_error: Some("exit code 127".into()),
            }],
            "a/w1 had one success; b/w2 never ran"
        );
    }

    #[test]
    fn added_rounds_continue_the_seeded_schedule() {
        let five = randomized_blocks(3, 5, 42);
        let seven = randomized_blocks(3, 7, 42);
        assert_eq!(five[..], seven[..5]);
        for (r, round) in seven.iter().enumerate() {
            assert_eq!(
                &randomized_blocks(3, r + 1, 42).pop().unwrap(),
                round,
                "round {r}"
            );
        }
    }
}
