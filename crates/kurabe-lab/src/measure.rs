//! Running one workload against a ready target (or none) and turning what
//! the probes saw into catalogue metrics.
//!
//! One function per workload kind: `http` (kurabe's load generator plus the
//! target tree's CPU and Σ PSS sampled while it runs), `command` (run and
//! time a command, like hyperfine: wall, user, sys, max RSS from `wait4`),
//! `watch` (sample CPU and memory for a duration) and `idle` (let the
//! target settle, then read its memory). Each returns every metric it has,
//! by catalogue name; the runner keeps the ones the workload selects.
//!
//! A command's executions go through kurabe's rusage helper
//! (`execute.rs`), so its `max_rss_bytes` is its own, not kurabe's, and
//! its Σ PSS peak is sampled when it lives long enough.
//! It must not print or touch the store.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use kurabe_http::load::{Names, Observer, Quiet};
use kurabe_model::http::HttpReport;
use kurabe_model::load::LoadSpec;
use kurabe_model::plan::{
    CommandLine, CommandOutput, CommandWorkload, ExecCost, HumanDuration, IdleWorkload, Measure,
    MemoryScope, SystemWorkload, WatchWorkload,
};
use kurabe_model::profile::Profiling;
use kurabe_model::run_detail::{
    CommandDetail, CommandExecution, HttpDetail, IdleDetail, IdleTarget, RunDetail, SettlingDetail,
    SystemDetail, TreeDetail, WatchDetail,
};
use kurabe_model::series::Interval;
use kurabe_probe::{MemInfo, SamplerConfig, TreeSampler, Watcher};
use kurabe_stop::Stop;

use crate::cachegrind::Counter;
use crate::execute::{Execution, Launch, Session, Timed};
use crate::measured::{counter_metrics, load_metrics, tree_metrics};
pub use crate::measured::{Measured, Probe};
use crate::target::RunFailure;

/// Sampling interval for a phase of `length`: ~50 samples, 20–250 ms.
fn interval_for(length: Duration) -> Duration {
    (length / 50).clamp(Duration::from_millis(20), Duration::from_millis(250))
}

fn watcher(probe: &Probe, interval: Duration) -> Result<Watcher, RunFailure> {
    let config = SamplerConfig {
        interval,
        ..SamplerConfig::default()
    };
    let sampler = TreeSampler::with_config(probe.pid, config, probe.cgroup.clone())
        .map_err(|e| RunFailure::new(format!("cannot sample the target: {e}")))?;
    Watcher::spawn_sampler(sampler, interval)
        .map_err(|e| RunFailure::new(format!("cannot sample the target: {e}")))
}

/// Sleep up to `d`, waking early when `stop` is set; false when stopped.
fn pause(d: Duration, stop: &Stop) -> bool {
    !stop.wait_timeout(d)
}

/// What watches a plan's http loads as they run (`kurabe run --tui`,
/// `--prometheus-addr`): an observer for each load, the warm-up's too.
pub trait LoadWatch: Send + Sync + std::fmt::Debug {
    /// A load of `spec` begins; `warmup`: it is the unmeasured warm-up.
    fn begin(&self, spec: &LoadSpec, warmup: bool) -> Arc<dyn Observer + Send + Sync>;
}

/// Run the load generator once, `observer` watching; `stop` stops it
/// (the engine polls the stop's own flag).
fn load(spec: &LoadSpec, stop: &Stop, observer: &dyn Observer) -> Result<HttpReport, RunFailure> {
    kurabe_http::load::run(spec, stop, observer)
        .map(|run| run.report)
        .map_err(|e| RunFailure::new(format!("load generator: {e}")))
}

/// The observer of one load: `watch`'s, else none.
fn observer_of(
    watch: Option<&dyn LoadWatch>,
    spec: &LoadSpec,
    warmup: bool,
) -> Arc<dyn Observer + Send + Sync> {
    match watch {
        Some(w) => w.begin(spec, warmup),
        None => Arc::new(Quiet),
    }
}

/// The measured load, the target's newest sample handed to an observer
/// that watches the server while it runs.
fn load_watched(
    spec: &LoadSpec,
    stop: &Stop,
    observer: &dyn Observer,
    sampled: Option<&Watcher>,
) -> Result<HttpReport, RunFailure> {
    let Some(watcher) = sampled.filter(|_| observer.watches_server()) else {
        return load(spec, stop, observer);
    };
    let done = Stop::new();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.wait_timeout(SERVER_POINT_INTERVAL) {
                if let Some(point) = watcher.latest() {
                    observer.server(&point);
                }
            }
        });
        let report = load(spec, stop, observer);
        done.trigger(None);
        report
    })
}

/// How often a live view gets the target's newest sample.
const SERVER_POINT_INTERVAL: Duration = Duration::from_millis(100);

/// Default measured phase of an http workload that names neither `requests` nor `duration`.
pub const DEFAULT_HTTP_DURATION: Duration = Duration::from_secs(5);

/// How long the measured phase is expected to run (2 s for a request count).
fn expected_length(spec: &LoadSpec) -> Duration {
    spec.duration.map_or(Duration::from_secs(2), |d| d.0)
}

/// The workload's load as the engine runs it: only what is the plan's is
/// resolved (the URL the runner worked out from `url`, `path`, the
/// variant's server or the target's `{port}`; `body_file`,
/// `client_cert`, `ca_file` and `targets` relative to the plan's folder; the default measured
/// phase), everything else as written. No warm-up or soak: the caller runs
/// those apart.
pub(crate) fn plan_load(w: &LoadSpec, url: &str, plan_dir: &Path) -> LoadSpec {
    // Stages give their own length.
    let default_length = w.requests.is_none() && w.duration.is_none() && w.stages.is_empty();
    LoadSpec {
        url: Some(url.to_owned()),
        path: None,
        body_file: w.body_file.as_ref().map(|p| plan_dir.join(p)),
        client_cert: w.client_cert.as_ref().map(|p| plan_dir.join(p)),
        ca_file: w.ca_file.as_ref().map(|p| plan_dir.join(p)),
        // A set goes to the variant's URL: its targets keep their paths.
        targets: w.targets.as_ref().map(|p| plan_dir.join(p)),
        duration: w
            .duration
            .or(default_length.then_some(HumanDuration(DEFAULT_HTTP_DURATION))),
        warmup: None,
        soak: None,
        ..w.clone()
    }
}

/// The `http` workload: warm-up (unmeasured), then load with the target sampled.
pub fn http(
    w: &LoadSpec,
    url: &str,
    plan_dir: &Path,
    warmup: Option<Duration>,
    probe: Option<&Probe>,
    stop: &Arc<Stop>,
    watch: Option<&dyn LoadWatch>,
) -> Result<Measured, RunFailure> {
    let spec = plan_load(w, url, plan_dir);
    // Checked as `kurabe http` checks its flags, errors naming the plan's keys.
    kurabe_http::load::check(&spec, &Names::PLAN).map_err(|e| RunFailure::new(e.to_string()))?;
    if let Some(find) = &w.find_rate {
        return crate::find_rate::plan_run(find, &spec, stop);
    }
    let warmup = w.warmup.map(|d| d.0).or(warmup).unwrap_or_default();
    if let Some(length) = w.soak {
        let p = probe.ok_or_else(|| RunFailure::new("a soak run needs a [target] to sample"))?;
        return crate::soak::soak(spec, length.0, warmup, p, stop);
    }
    if !warmup.is_zero() {
        // A separate load run, so the target's CPU and memory during it stay out of the figures.
        // A staged workload warms up closed-model: its stages are the measured load.
        let warm = LoadSpec {
            requests: None,
            duration: Some(HumanDuration(warmup)),
            stages: Vec::new(),
            executor: None,
            ..spec.clone()
        };
        load(&warm, stop, &*observer_of(watch, &warm, true))?;
    }
    if stop.is_set() {
        return Err(RunFailure::new("interrupted"));
    }
    let w_probe = probe
        .map(|p| watcher(p, interval_for(expected_length(&spec))))
        .transpose()?;
    let sampler =
        probe.and_then(|p| crate::profiled::attach_tree(p.profile, p.pid, p.cgroup.clone()));
    let observer = observer_of(watch, &spec, false);
    let mut report = load_watched(&spec, stop, &*observer, w_probe.as_ref())?;
    let tree = w_probe.map(|w| w.stop().tree);
    if report.interrupted && stop.is_set() {
        return Err(RunFailure::new("interrupted"));
    }
    report.profile = sampler.map(|s| crate::profiled::finish_tree(s, report.answered_requests()));
    http_measured(report, tree, warmup)
}

/// An http run's metrics and record: the load's figures and, with a
/// probe, the target tree's (CPU per request goes into the report too).
fn http_measured(
    mut report: HttpReport,
    tree: Option<TreeDetail>,
    warmup: Duration,
) -> Result<Measured, RunFailure> {
    if report.complete_requests == 0 {
        // Every kind that failed, a check as much as a refused connect.
        let kinds: Vec<_> = report
            .failures
            .seen()
            .map(|(kind, n)| format!("{} {n}", kind.name()))
            .collect();
        return Err(RunFailure::new(format!(
            "no request completed ({} failed: {})",
            report.failed_requests,
            kinds.join(", ")
        )));
    }
    let mut m = BTreeMap::new();
    load_metrics(&report, &mut m);
    let all = report.complete_requests + report.failed_requests;
    let failed = 100.0 * report.failed_requests as f64 / all.max(1) as f64;
    m.insert("failed_percent", failed);
    if let Some(t) = &tree {
        tree_metrics(t, &mut m);
        counter_metrics(&t.counters, Some(report.answered_requests()), &mut m);
        let sm = t.server_metrics(report.answered_requests());
        if let Some(cpu) = sm.cpu_ms_per_request {
            m.insert("cpu_ms_per_request", cpu);
        }
        report.server = Some(sm);
    }
    let record = RunDetail::Http(Box::new(HttpDetail {
        settling: tree.as_ref().map(|t| settling_record(t, warmup)),
        target: tree,
        throughput_settling: Some(throughput_settling(&report.series, warmup)),
        http: report,
        soak: None,
    }));
    Ok(Measured { metrics: m, record })
}

/// The `watch` workload on an already started target (or command) tree.
pub fn watch(w: &WatchWorkload, probe: &Probe, stop: &Stop) -> Result<Measured, RunFailure> {
    if let Some(warmup) = w.warmup {
        if !pause(warmup.0, stop) {
            return Err(RunFailure::new("interrupted"));
        }
    }
    let interval = w.interval.map_or(Duration::from_millis(100), |i| i.0);
    let watcher = watcher(probe, interval)?;
    let completed = pause(w.duration.0, stop);
    let s = watcher.stop().tree;
    if !completed {
        return Err(RunFailure::new("interrupted"));
    }
    let mut m = BTreeMap::new();
    tree_metrics(&s, &mut m);
    counter_metrics(&s.counters, None, &mut m);
    let warmup = w.warmup.map_or(Duration::ZERO, |d| d.0);
    Ok(Measured {
        metrics: m,
        record: RunDetail::Watch(Box::new(WatchDetail {
            settling: Some(settling_record(&s, warmup)),
            target: s,
        })),
    })
}

/// Noise band a change in the CPU series must clear to count as warm-up:
/// per-interval CPU % is far noisier than a run's mean, so wider than the
/// 2 % verdict band.
const SETTLING_BAND: f64 = 0.10;

/// Where the target's CPU % settled within the measured phase (found by
/// the change-point method, [`kurabe_model::stats::warmup`]) and the
/// warm-up that ran before it, for the report's warm-up check.
fn settling_record(s: &TreeDetail, warmup: Duration) -> SettlingDetail {
    let times: Vec<f64> = s.series.iter().map(|p| p.t_s).collect();
    let cpu: Vec<f64> = s.series.iter().map(|p| p.cpu_percent).collect();
    // The first sample has no interval before it (its CPU % is 0).
    let found = kurabe_model::stats::warmup::settling(
        &times[1.min(times.len())..],
        &cpu[1.min(cpu.len())..],
        SETTLING_BAND,
    );
    SettlingDetail {
        series: "cpu_percent".into(),
        warmup_s: warmup.as_secs_f64(),
        found,
    }
}

/// Where the throughput settled within the measured phase: the per-second
/// series' complete responses per second (the last, shorter interval left
/// out), judged as the CPU series is. A load whose server or client warms
/// up (JIT, caches, connection pools) shows it here even without a target
/// to sample.
fn throughput_settling(series: &[Interval], warmup: Duration) -> SettlingDetail {
    let whole: Vec<&Interval> = series.iter().filter(|i| i.duration_s >= 0.999).collect();
    let times: Vec<f64> = whole.iter().map(|i| i.start_s).collect();
    let rate: Vec<f64> = whole
        .iter()
        .map(|i| i.completed as f64 / i.duration_s)
        .collect();
    SettlingDetail {
        series: "completed_per_s".into(),
        warmup_s: warmup.as_secs_f64(),
        found: kurabe_model::stats::warmup::settling(&times, &rate, SETTLING_BAND),
    }
}

/// Default settle time of an `idle` workload.
pub const DEFAULT_SETTLE: Duration = Duration::from_secs(5);

/// The `idle` workload: wait `settle`, then read memory once.
pub fn idle(w: &IdleWorkload, probe: Option<&Probe>, stop: &Stop) -> Result<Measured, RunFailure> {
    if !pause(w.settle.map_or(DEFAULT_SETTLE, |d| d.0), stop) {
        return Err(RunFailure::new("interrupted"));
    }
    let mut m = BTreeMap::new();
    let mut record = IdleDetail {
        target: None,
        system_used_bytes: None,
    };
    if let Some(p) = probe {
        let mut sampler = TreeSampler::with_config(p.pid, SamplerConfig::default(), None)
            .map_err(|e| RunFailure::new(format!("the target is gone: {e}")))?;
        let s = sampler
            .sample()
            .map_err(|e| RunFailure::new(format!("cannot sample the target: {e}")))?
            .size;
        m.insert("pss_steady_bytes", s.pss_bytes as f64);
        m.insert("rss_peak_bytes", s.rss_bytes as f64);
        m.insert("uss_peak_bytes", s.uss_bytes as f64);
        record.target = Some(IdleTarget {
            pid: p.pid,
            processes: s.processes,
            pss_bytes: s.pss_bytes,
            rss_bytes: s.rss_bytes,
            uss_bytes: s.uss_bytes,
        });
    }
    if w.scope == MemoryScope::System || probe.is_none() {
        let mi = MemInfo::read().map_err(|e| RunFailure::new(format!("/proc/meminfo: {e}")))?;
        m.insert("system_used_bytes", mi.used() as f64);
        record.system_used_bytes = Some(mi.used());
    }
    Ok(Measured {
        metrics: m,
        record: RunDetail::Idle(record),
    })
}

/// The `system` workload: the UnixBench-style index (kurabe-system).
///
/// Copies: the plan's `copies`, else one pass with 1 copy and one with
/// every core, as UnixBench does. Passes: the precision rule (`precision`,
/// default 2 %, within `max_time`, default 9m per copy count) unless the
/// workload asks for `quick` or `unixbench`. Metrics, from the first copy
/// count: `system_index`, and `system_index_<test>` for every test that
/// produced an index, so each round gives a sample per test and the plan's
/// interleaved rounds give verdicts per test as well as for the score. The
/// full report goes into the record. With `limits` (the variant's), every
/// test process runs in a fresh cgroup with those limits, removed afterwards.
pub fn system(
    w: &SystemWorkload,
    limits: Option<&kurabe_probe::cgroup::Limits>,
    stop: &Stop,
) -> Result<Measured, RunFailure> {
    let fail = |e: &dyn std::fmt::Display| RunFailure::new(format!("system workload: {e}"));
    // Dropping the cgroup kills anything left in it and removes it.
    let cgroup = match limits.filter(|l| !l.is_empty()) {
        Some(l) => Some(kurabe_probe::cgroup::RunCgroup::create(l).map_err(|e| fail(&e))?),
        None => None,
    };
    let cfg = system_config(w, cgroup.as_ref()).map_err(|e| fail(&e))?;
    let report = kurabe_system::run(&cfg, stop, &mut |_| {}).map_err(|e| fail(&e))?;
    drop(cgroup);
    if report.interrupted {
        return Err(RunFailure::new("interrupted"));
    }
    let metrics = system_metrics(&report)?;
    Ok(Measured {
        metrics,
        record: RunDetail::System(Box::new(SystemDetail { system: report })),
    })
}

/// The suite's configuration: the tests asked for (default: all), 1 copy
/// and one per core (or the copies asked for), in `cgroup` when given.
fn system_config(
    w: &SystemWorkload,
    cgroup: Option<&kurabe_probe::cgroup::RunCgroup>,
) -> Result<kurabe_system::Config, kurabe_system::Error> {
    let tests = if w.tests.is_empty() {
        kurabe_system::catalog::ALL.iter().map(|s| s.id).collect()
    } else {
        kurabe_system::parse_tests(&w.tests.join(","))?
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let copies = match w.copies {
        Some(c) => vec![c],
        None if cores > 1 => vec![1, cores],
        None => vec![1],
    };
    let procs = |c: &kurabe_probe::cgroup::RunCgroup| {
        c.dirs().iter().map(|d| d.join("cgroup.procs")).collect()
    };
    Ok(kurabe_system::Config {
        tests,
        copies,
        profile: system_profile(w)?,
        execl_helper: None,
        temp_parent: std::env::temp_dir(),
        pin: None,
        cgroup_procs: cgroup.map_or_else(Vec::new, procs),
    })
}

/// `system_index` and `system_index_<test>` of the first copy count.
fn system_metrics(
    report: &kurabe_model::system::SystemReport,
) -> Result<BTreeMap<&'static str, f64>, RunFailure> {
    let first = report.runs.first();
    let score = first
        .and_then(|r| r.score)
        .ok_or_else(|| RunFailure::new("system workload: no index score (no test finished)"))?;
    let mut m = BTreeMap::new();
    m.insert("system_index", score);
    for t in first.map_or(&[][..], |r| &r.tests[..]) {
        let metric = kurabe_model::stats::metric::SYSTEM_TEST_METRICS
            .iter()
            .find(|(id, _)| *id == t.id);
        if let (Some((_, name)), Some(index)) = (metric, t.index) {
            m.insert(name, index);
        }
    }
    Ok(m)
}

/// The passes a `system` workload asks for.
fn system_profile(w: &SystemWorkload) -> Result<kurabe_system::Profile, kurabe_system::Error> {
    if w.quick {
        Ok(kurabe_system::Profile::quick())
    } else if w.unixbench {
        Ok(kurabe_system::Profile::default_unixbench())
    } else {
        kurabe_system::Profile::precision(
            w.precision.map_or(0.02, |f| f.0),
            w.max_time.map_or(540.0, |d| d.0.as_secs_f64()),
        )
    }
}

/// What a `command` workload's run executes, substituted by the runner.
#[derive(Debug, Clone)]
pub struct CommandRun<'a> {
    /// The command's argv.
    pub argv: &'a [String],
    /// The `prepare` command's argv, run untimed before every execution.
    pub prepare: Option<&'a [String]>,
    /// Environment added to kurabe's.
    pub env: &'a BTreeMap<String, String>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// Limits the executions run under (a cgroup for the run).
    pub limits: Option<&'a kurabe_probe::cgroup::Limits>,
    /// Whether the timed executions' on-CPU stacks are sampled.
    pub profile: Profiling,
}

/// The `command` workload: `warmup_runs` untimed executions, then `runs`
/// timed ones; metrics are the means (max RSS and Σ PSS: the largest).
/// Every execution is served by one kurabe rusage helper for the run
/// (`execute.rs`, and one more for `prepare`); with limits, all of them
/// run in one cgroup for the run.
pub fn command(
    w: &CommandWorkload,
    run: &CommandRun<'_>,
    stop: &AtomicBool,
) -> Result<Measured, RunFailure> {
    let helper =
        kurabe_helpers::rusage().map_err(|e| RunFailure::new(format!("command workload: {e}")))?;
    let cgroup = match run.limits {
        Some(l) if !l.is_empty() => Some(
            kurabe_probe::cgroup::RunCgroup::create(l)
                .map_err(|e| RunFailure::new(format!("cannot apply the limits: {e}")))?,
        ),
        _ => None,
    };
    // Under Cachegrind, each execution's counts are read before the next starts.
    let counter = match w.measure {
        Measure::Instructions => Some(Counter::new().map_err(RunFailure::new)?),
        Measure::Time => None,
    };
    let wrapped = counter.as_ref().map(|c| c.wrap(run.argv));
    let launch = Launch {
        helper: &helper,
        argv: wrapped.as_deref().unwrap_or(run.argv),
        env: run.env,
        cwd: run.cwd.as_deref(),
        workload: w,
        cgroup: cgroup.as_ref(),
        // Σ PSS under valgrind would be valgrind's.
        sample_memory: counter.is_none(),
    };
    let untimed = CommandWorkload {
        pass_secrets: w.pass_secrets,
        ..UNTIMED_HELPER_RUN.clone()
    };
    let mut prepare = run
        .prepare
        .map(|argv| {
            Session::start(Launch {
                argv,
                workload: &untimed,
                sample_memory: false,
                ..launch
            })
        })
        .transpose()?;
    let session = Session::start(launch)?;
    let sampler = crate::profiled::attach(run.profile, session.helper_pid());
    let execs = exec_all(w, session, prepare.as_mut(), counter.as_ref(), stop)?;
    let mut measured = command_measured(run.argv, &execs);
    if let (Some(s), RunDetail::Command(detail)) = (sampler, &mut measured.record) {
        let pids: Vec<u32> = execs.iter().map(|e| e.pid).collect();
        detail.profile = Some(crate::profiled::finish(s, &pids));
    }
    Ok(measured)
}

/// The warm-up executions (dropped), then the timed ones, each after
/// `prepare` when there is one; `subtract` taken off each timed one.
/// Without `prepare` or a `counter` they go to the helper as one request,
/// so kurabe is not woken between them.
fn exec_all(
    w: &CommandWorkload,
    mut session: Session<'_>,
    mut prepare: Option<&mut Session<'_>>,
    counter: Option<&Counter>,
    stop: &AtomicBool,
) -> Result<Vec<Execution>, RunFailure> {
    let timeout = w.timeout.map(|t| t.0);
    let total = w.warmup_runs + w.runs;
    let mut execs = if prepare.is_none() && counter.is_none() {
        session.run(total, timeout, stop)?
    } else {
        let mut execs = Vec::with_capacity(total as usize);
        for _ in 0..total {
            if let Some(p) = prepare.as_deref_mut() {
                p.run(1, timeout, stop).map_err(|e| RunFailure {
                    message: format!("prepare: {}", e.message),
                    ..e
                })?;
            }
            execs.extend(exec_one(&mut session, counter, timeout, stop)?);
        }
        execs
    };
    execs.drain(..(w.warmup_runs as usize).min(execs.len()));
    if let Some(cost) = &w.subtract {
        execs.iter_mut().for_each(|e| *e = less(*e, cost));
    }
    Ok(execs)
}

/// One execution, with its instruction count when a `counter` reads them.
fn exec_one(
    session: &mut Session<'_>,
    counter: Option<&Counter>,
    timeout: Option<Duration>,
    stop: &AtomicBool,
) -> Result<Vec<Execution>, RunFailure> {
    let mut execs = session.run(1, timeout, stop)?;
    if let Some(c) = counter {
        let counted = c.take().map_err(RunFailure::new)?;
        execs
            .iter_mut()
            .for_each(|e| e.instructions = Some(counted));
    }
    Ok(execs)
}

/// `e` less a fixed per-execution `cost`: times and instructions, never below 0.
fn less(e: Execution, cost: &ExecCost) -> Execution {
    let count = |i: u64| (i as f64 - cost.instructions).max(0.0).round() as u64;
    Execution {
        timed: e.timed.less(cost),
        instructions: e.instructions.map(count),
        ..e
    }
}

/// The settings a `prepare` command runs with: output discarded, failure fatal.
static UNTIMED_HELPER_RUN: CommandWorkload = CommandWorkload {
    command: CommandLine::Argv(Vec::new()),
    runs: 1,
    warmup_runs: 0,
    cwd: None,
    timeout: None,
    prepare: None,
    ignore_failure: false,
    stdin: None,
    output: CommandOutput::Null,
    randomize_env: false,
    subtract: None,
    pass_secrets: false,
    measure: Measure::Time,
};

/// Means of the executions (max RSS and Σ PSS peak: the largest) and
/// their record. Σ PSS is there when some execution lived long enough to
/// be sampled.
fn command_measured(argv: &[String], execs: &[Execution]) -> Measured {
    let n = execs.len().max(1) as f64;
    let mean = |f: fn(&Timed) -> f64| execs.iter().map(|e| f(&e.timed)).sum::<f64>() / n;
    let mut m = BTreeMap::new();
    m.insert("wall_time_s", mean(|t| t.wall_s));
    m.insert("user_time_s", mean(|t| t.user_s));
    m.insert("system_time_s", mean(|t| t.sys_s));
    m.insert(
        "max_rss_bytes",
        execs
            .iter()
            .map(|e| e.timed.max_rss_bytes)
            .max()
            .unwrap_or(0) as f64,
    );
    if let Some(pss) = execs.iter().filter_map(|e| e.pss_peak_bytes).max() {
        m.insert("pss_peak_bytes", pss as f64);
    }
    let counts: Vec<f64> = execs
        .iter()
        .filter_map(|e| e.instructions)
        .map(|i| i as f64)
        .collect();
    if !counts.is_empty() {
        m.insert(
            "instructions",
            counts.iter().sum::<f64>() / counts.len() as f64,
        );
    }
    let counted = execs
        .iter()
        .map(|e| e.timed.counters)
        .reduce(|a, b| a.plus(&b))
        .unwrap_or_default();
    counter_metrics(&counted.per(n), None, &mut m);
    let executions = execs.iter().map(execution_record).collect();
    Measured {
        metrics: m,
        record: RunDetail::Command(CommandDetail {
            command: argv.to_vec(),
            executions,
            profile: None,
        }),
    }
}

/// One execution as the run's record keeps it.
fn execution_record(e: &Execution) -> CommandExecution {
    CommandExecution {
        wall_time_s: e.timed.wall_s,
        user_time_s: e.timed.user_s,
        system_time_s: e.timed.sys_s,
        max_rss_bytes: e.timed.max_rss_bytes,
        exit_code: e.exit_code,
        pss_peak_bytes: e.pss_peak_bytes,
        instructions: e.instructions,
        counters: e.timed.counters,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(start_s: f64, duration_s: f64, completed: u64) -> Interval {
        Interval {
            start_s,
            duration_s,
            completed,
            ..Interval::default()
        }
    }

    #[test]
    fn throughput_that_climbs_for_ten_seconds_settles_late_and_the_short_tail_is_left_out() {
        // 10 s at 500/s (a cold cache), then 30 s at 1000/s, then a 0.3 s tail.
        let mut series: Vec<Interval> = (0..40)
            .map(|t| second(t as f64, 1.0, if t < 10 { 500 } else { 1000 }))
            .collect();
        series.push(second(40.0, 0.3, 10));
        let d = throughput_settling(&series, Duration::from_secs(2));
        assert_eq!(d.series, "completed_per_s");
        assert_eq!(d.warmup_s, 2.0);
        let found = d.found.expect("40 seconds are judged");
        assert!((9.0..=11.0).contains(&found.settled_at_s), "{found:?}");
        assert!(found.steady, "{found:?}");
        let flat: Vec<Interval> = (0..40).map(|t| second(t as f64, 1.0, 1000)).collect();
        let found = throughput_settling(&flat, Duration::ZERO).found.unwrap();
        assert_eq!(found.settled_at_s, 0.0, "{found:?}");
    }

    #[test]
    fn sampling_interval_stays_in_bounds() {
        assert_eq!(
            interval_for(Duration::from_millis(100)),
            Duration::from_millis(20)
        );
        assert_eq!(
            interval_for(Duration::from_secs(5)),
            Duration::from_millis(100)
        );
        assert_eq!(
            interval_for(Duration::from_secs(600)),
            Duration::from_millis(250)
        );
    }
}
