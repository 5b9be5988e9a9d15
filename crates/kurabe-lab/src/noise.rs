//! `kurabe noise`: a workload against itself (A/A), interleaved as a real
//! experiment runs it, for a bounded time; from it this machine's noise.
//!
//! The experiment is the one the workload's own command would run: a
//! command goes through [`crate::cmd::run_cmd`] (as `kurabe cmd`, the
//! command twice, in the blocks the default would use), a URL through
//! [`crate::http_compare::plan`] (as `kurabe http A B`), a plan's variant
//! through the plan itself (as `kurabe run`), each with the variant
//! duplicated as `NAME (again)` and rounds added while the next one ends
//! within the time ([`crate::MoreRounds::UntilTime`]). The figures are
//! the experiment's own analysis (the A/A verdict is the one
//! [`kurabe_model::stats::decide`] gives) read by
//! [`kurabe_model::stats::noise`]: spread, drift, and what an experiment
//! of the default size and of the suggested size detects.
//!
//! Owns building those A/A experiments, which runs the figures read, the
//! default sizes, and the suggestion. Must not print or parse flags.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use kurabe_model::ending::Ending;
use kurabe_model::given::Given;
use kurabe_model::load::LoadSpec;
use kurabe_model::noise::{MetricNoise, NoiseReport, NoiseSubject, Suggestion};
use kurabe_model::notice::Notice;
use kurabe_model::plan::{Measure, OnFailure, Plan, ResolvedVariant, Variant};
use kurabe_model::record::{ExperimentStatus, Revision, RunRecord, RunStatus};
use kurabe_model::stats::noise::{band_rounded_up, detectable_at, runs_for_band, spread, Spread};
use kurabe_stop::Stop;
use kurabe_store::Store;

use crate::analysis::Row;
use crate::cmd::{self, CmdConfig, CmdError, CmdSpec, Runs, Shell};
use crate::http_compare::{self, AbError, DEFAULT_ROUNDS};
use crate::prepare::PrepareError;
use crate::{Event, LabError, MoreRounds, Outcome, RunOptions};

/// The time a noise run takes by default: a minute gives a command of up
/// to a second 30 runs a side (the CV then known to about ±13 %) and shows
/// how far the machine drifts over a minute, the length of an experiment
/// that asks `--until-confident` for a few more rounds.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(60);

/// The longest experiment a suggestion may ask for: `--until-confident`'s
/// default budget.
pub const SUGGESTION_TIME: Duration = Duration::from_secs(600);

/// What runs against itself.
#[derive(Debug)]
pub enum NoiseWorkload {
    /// A command, as `kurabe cmd` runs it.
    Command {
        /// The command.
        command: String,
        /// How it is run (`--shell`, `-N`).
        shell: Shell,
        /// What it is measured by (`--measure`).
        measure: Measure,
    },
    /// A URL under `load`, as `kurabe http A B` runs it.
    Url {
        /// The URL.
        url: String,
        /// The load each run sends (its `url` is the URL's).
        load: Box<LoadSpec>,
    },
    /// One variant of a plan, as `kurabe run` runs it.
    Plan {
        /// The plan, loaded and checked ([`crate::prepare::prepare`]).
        plan: Box<Plan>,
        /// Its options.
        options: Box<RunOptions>,
        /// The variant (default: the baseline, else the first).
        variant: Option<String>,
    },
}

/// The kind of workload `kurabe noise`'s argument names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoiseKind {
    /// Any other text: a command.
    Command,
    /// An `http://` or `https://` URL.
    Url,
    /// One word ending in `.toml`: a plan file.
    Plan,
}

impl NoiseKind {
    /// What `arg` reads as.
    pub fn of(arg: &str) -> NoiseKind {
        if arg.starts_with("http://") || arg.starts_with("https://") {
            NoiseKind::Url
        } else if !arg.contains(char::is_whitespace) && arg.ends_with(".toml") {
            NoiseKind::Plan
        } else {
            NoiseKind::Command
        }
    }

    /// The kind as a message names it.
    fn what(self) -> &'static str {
        match self {
            NoiseKind::Command => "a command",
            NoiseKind::Url => "a URL",
            NoiseKind::Plan => "a plan file (.toml)",
        }
    }

    /// Refuse the first of each kind's own flags in `given` that belongs
    /// to another kind than `arg`'s, `self`.
    pub fn refuse_others(self, arg: &str, given: &Given) -> Result<(), NoiseError> {
        match KIND_FLAGS.iter().find(|(f, k)| *k != self && given.has(f)) {
            Some((flag, k)) => Err(NoiseError::Usage(format!(
                "{flag} applies to {}, and `{arg}` reads as {}: drop {flag}",
                k.what(),
                self.what()
            ))),
            None => Ok(()),
        }
    }
}

/// `kurabe noise`'s flags of every kind, as given; the argument's kind
/// takes its own ([`NoiseWorkload::from_flags`]).
#[derive(Debug, Clone, Default)]
pub struct NoiseFlags {
    /// A plan's variant (default: its baseline, else its first).
    pub variant: Option<String>,
    /// A plan's placeholders (`--set KEY=VALUE`).
    pub set: Vec<(String, String)>,
    /// A command's shell (`--shell`).
    pub shell: Option<String>,
    /// A command run without a shell (`-N`).
    pub no_shell: bool,
    /// What a command is measured by (default: time).
    pub measure: Option<Measure>,
    /// Connections to a URL (`-c`).
    pub concurrency: Option<u32>,
    /// Requests of each run against a URL (`-n`).
    pub requests: Option<u64>,
    /// Length of each run against a URL (`-t`).
    pub timelimit: Option<Duration>,
    /// Keep-alive to a URL (`-k`).
    pub keep_alive: bool,
}

impl NoiseWorkload {
    /// `arg` as a URL, a plan or a command, with that kind's `flags`;
    /// another kind's flags (in `given`) are refused.
    pub fn from_flags(arg: &str, flags: NoiseFlags, given: &Given) -> Result<Self, NoiseError> {
        let kind = NoiseKind::of(arg);
        kind.refuse_others(arg, given)?;
        Ok(match kind {
            NoiseKind::Url => NoiseWorkload::Url {
                url: arg.to_owned(),
                load: Box::new(url_load(
                    arg,
                    flags.concurrency,
                    (flags.requests, flags.timelimit),
                    flags.keep_alive,
                )),
            },
            NoiseKind::Plan => {
                let path = std::path::Path::new(arg);
                let (plan, options) = crate::prepare::prepare(path, &flags.set)
                    .map_err(|e| NoiseError::PlanFile(path.to_owned(), Box::new(e)))?;
                NoiseWorkload::Plan {
                    plan: Box::new(plan),
                    options: Box::new(options),
                    variant: flags.variant,
                }
            }
            NoiseKind::Command => NoiseWorkload::Command {
                command: arg.to_owned(),
                shell: cmd::params::shell_flag(flags.shell.as_deref(), flags.no_shell)?,
                measure: flags.measure.unwrap_or(Measure::Time),
            },
        })
    }
}

/// Each kind's own flags (the others refuse them), in the order named.
const KIND_FLAGS: [(&str, NoiseKind); 9] = [
    ("--variant", NoiseKind::Plan),
    ("--set", NoiseKind::Plan),
    ("--shell", NoiseKind::Command),
    ("-N", NoiseKind::Command),
    ("--measure", NoiseKind::Command),
    ("-c", NoiseKind::Url),
    ("-n", NoiseKind::Url),
    ("-t", NoiseKind::Url),
    ("-k", NoiseKind::Url),
];

/// Length of each run against a URL when neither requests nor a
/// duration is given.
pub const DEFAULT_RUN_TIME: Duration = Duration::from_secs(1);

/// The load of each run against `url`: `concurrency` connections (1 when
/// none), `requests` or for `duration` ([`DEFAULT_RUN_TIME`] when
/// neither), kept alive or not.
pub fn url_load(
    url: &str,
    concurrency: Option<u32>,
    (requests, duration): (Option<u64>, Option<Duration>),
    keep_alive: bool,
) -> LoadSpec {
    let duration = match (requests, duration) {
        (None, None) => Some(DEFAULT_RUN_TIME),
        (_, t) => t,
    };
    LoadSpec {
        concurrency: concurrency.unwrap_or(1),
        requests,
        duration: duration.map(kurabe_model::quantity::HumanDuration),
        keep_alive,
        ..LoadSpec::for_url(url)
    }
}

/// Everything `kurabe noise` was asked to do.
#[derive(Debug)]
pub struct NoiseConfig {
    /// What runs against itself.
    pub workload: NoiseWorkload,
    /// How long the interleaved runs may take (at least 3 rounds run).
    pub duration: Duration,
    /// Seed of the run order.
    pub seed: Option<u64>,
    /// The code measured.
    pub rev: Option<Revision>,
}

/// Why there is no noise report.
#[derive(Debug, thiserror::Error)]
pub enum NoiseError {
    /// The request does not make an experiment (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The command cannot be run as `kurabe cmd` runs it (exit 2; its
    /// `Failed` is a failing command, exit 1; `TooShort` exit 2).
    #[error(transparent)]
    Cmd(#[from] CmdError),
    /// The URL cannot be load-tested (exit 2).
    #[error(transparent)]
    Ab(#[from] AbError),
    /// The plan's options cannot be made (exit 2).
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    /// The plan file named as the workload cannot be run (exit 2).
    #[error("cannot run {}", .0.display())]
    PlanFile(std::path::PathBuf, #[source] Box<PrepareError>),
    /// The store or the runner refused (exit 2).
    #[error(transparent)]
    Lab(#[from] LabError),
    /// A variant's revision could not be checked out or built (exit 2).
    #[error(transparent)]
    Git(#[from] crate::git::GitError),
    /// The workload failed while it was measured (exit 1).
    #[error("the workload failed, so its noise cannot be measured: {0}")]
    Failed(String),
    /// A signal stopped it (exit 128 + the signal).
    #[error("interrupted")]
    Interrupted,
}

impl NoiseError {
    /// How a noise run stopped by this error ends, when it is not a usage
    /// or setup error: interrupted, or the workload failed.
    pub fn ending(&self) -> Option<Ending> {
        match self {
            NoiseError::Interrupted => Some(Ending::Signalled(None)),
            NoiseError::Failed(why) => Some(Ending::Failed(Some(Notice::NoiseWorkloadFailed {
                why: why.clone(),
            }))),
            _ => None,
        }
    }
}

/// [`run_noise`] in a private store of its own: the A/A experiment is a
/// means, not a result.
pub fn run_noise_private(
    cfg: &NoiseConfig,
    stop: &Arc<Stop>,
    on_event: &mut dyn FnMut(&Event<'_>),
) -> Result<NoiseReport, NoiseError> {
    let mut scratch = kurabe_store::access::RunStore::open(None, false)
        .map_err(|e| NoiseError::Usage(format!("cannot make a private results store: {e}")))?;
    run_noise(cfg, &mut scratch.store, stop, on_event)
}

/// Run `cfg`'s workload against itself into `store`; its noise.
pub fn run_noise(
    cfg: &NoiseConfig,
    store: &mut Store,
    stop: &Arc<Stop>,
    on_event: &mut dyn FnMut(&Event<'_>),
) -> Result<NoiseReport, NoiseError> {
    let started_at = kurabe_model::time::rfc3339(SystemTime::now());
    let clock = Instant::now();
    let ran = match &cfg.workload {
        NoiseWorkload::Command {
            command,
            shell,
            measure,
        } => run_command(cfg, (command, shell, *measure), store, stop, on_event)?,
        NoiseWorkload::Url { url, load } => run_url(cfg, url, load, store, stop, on_event)?,
        NoiseWorkload::Plan {
            plan,
            options,
            variant,
        } => run_plan(
            cfg,
            plan,
            options,
            variant.as_deref(),
            store,
            stop,
            on_event,
        )?,
    };
    check_ran(&ran.outcome)?;
    let timing = Timing {
        started_at,
        budget_s: cfg.duration.as_secs_f64(),
        elapsed_s: clock.elapsed().as_secs_f64(),
    };
    Ok(report(ran, timing))
}

/// An A/A experiment that ran, with what reading it needs.
struct Ran {
    subject: NoiseSubject,
    outcome: Outcome,
    /// Executions in one run.
    executions_per_run: u32,
    /// Runs a side of a default experiment.
    default_runs: u32,
}

/// When and how long.
struct Timing {
    started_at: String,
    budget_s: f64,
    elapsed_s: f64,
}

/// Interrupted, or failed: no noise to read.
fn check_ran(o: &Outcome) -> Result<(), NoiseError> {
    if o.status == ExperimentStatus::Interrupted {
        return Err(NoiseError::Interrupted);
    }
    let failed = o.runs.iter().find(|r| r.status == RunStatus::Failed);
    if o.status == ExperimentStatus::Failed || failed.is_some() {
        let why = failed
            .and_then(|r| r.error_tail.clone())
            .or_else(|| o.stopped_by.clone())
            .unwrap_or_else(|| "a run failed".into());
        return Err(NoiseError::Failed(why.trim().to_owned()));
    }
    Ok(())
}

/// The name of the second side of an A/A.
fn again(name: &str) -> String {
    format!("{name} (again)")
}

/// A command against itself, as `kurabe cmd` runs two commands.
fn run_command(
    cfg: &NoiseConfig,
    (command, shell, measure): (&str, &Shell, Measure),
    store: &mut Store,
    stop: &Arc<Stop>,
    on_event: &mut dyn FnMut(&Event<'_>),
) -> Result<Ran, NoiseError> {
    let cmd_cfg = twice(cfg, command, shell, measure)?;
    let done = cmd::run_cmd(&cmd_cfg, store, stop, &mut |e| {
        if let cmd::CmdEvent::Run(e) = e {
            on_event(e)
        }
    });
    let done = match done {
        // Its first line: the second suggests `kurabe cmd -i`.
        Err(CmdError::Failed(why)) => {
            let first = why.lines().next().unwrap_or_default();
            return Err(NoiseError::Failed(first.to_owned()));
        }
        other => other?,
    };
    let default_runs = default_cmd_rounds(&done.outcome, &done.export, measure);
    Ok(Ran {
        subject: NoiseSubject::Command {
            command: command.to_owned(),
        },
        outcome: done.outcome,
        executions_per_run: done.export.block_size.max(1),
        default_runs,
    })
}

/// `kurabe cmd`'s configuration for `command` and its twin, run for the
/// time asked in the default's blocks, with `kurabe cmd`'s defaults.
fn twice(
    cfg: &NoiseConfig,
    command: &str,
    shell: &Shell,
    measure: Measure,
) -> Result<CmdConfig, NoiseError> {
    let spec = |name: String| CmdSpec {
        name,
        command: command.to_owned(),
        parameters: BTreeMap::new(),
    };
    Ok(CmdConfig {
        commands: vec![spec(command.to_owned()), spec(again(command))],
        reference: 0,
        shell: shell.clone(),
        runs: Runs::For(cfg.duration),
        warmup: 0,
        prepare: Vec::new(),
        setup: None,
        cleanup: None,
        ignore_failure: false,
        input: None,
        output: kurabe_model::plan::CommandOutput::Null,
        randomize_env: true,
        limits: None,
        until_confident: None,
        seed: cfg.seed,
        cwd: std::env::current_dir().map_err(PrepareError::Cwd)?,
        kurabe_exe: std::env::current_exe().map_err(PrepareError::Exe)?,
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
        rev: cfg.rev.clone(),
        measure,
        profile: Default::default(),
    })
}

/// The rounds a default `kurabe cmd` of two such commands runs: its
/// executions (≈3 s per command by their time, at least 10; 3 counting
/// instructions) in its blocks.
fn default_cmd_rounds(
    o: &Outcome,
    export: &kurabe_model::bench::CmdExport,
    measure: Measure,
) -> u32 {
    let wall: Vec<f64> = o
        .analysis
        .rows
        .iter()
        .filter(|r| r.metric.name == "wall_time_s")
        .filter_map(|r| r.summary.map(|s| s.mean))
        .collect();
    let min = cmd::default_min_runs(measure);
    let n = cmd::auto_runs(&wall, export.shell_overhead_s, min, None);
    cmd::blocks(n).0
}

/// A URL against itself, as `kurabe http A B` runs two URLs.
fn run_url(
    cfg: &NoiseConfig,
    url: &str,
    load: &LoadSpec,
    store: &mut Store,
    stop: &Arc<Stop>,
    on_event: &mut dyn FnMut(&Event<'_>),
) -> Result<Ran, NoiseError> {
    let urls = [url.to_owned()];
    let spec = http_compare::AbSpec {
        urls: &urls,
        versions: &[],
        load,
        rounds: cmd::FIRST_ROUNDS,
    };
    let one = http_compare::plan(&spec)?;
    let variant = one.variants[0].clone();
    let plan = against_itself(one, variant)?;
    let mut opts = crate::prepare::options_here(&plan, cfg.rev.clone())?;
    opts.seed = cfg.seed;
    opts.more_rounds = MoreRounds::UntilTime(cfg.duration);
    let outcome = crate::run_experiment(&plan, store, &opts, stop, on_event)?;
    Ok(Ran {
        subject: NoiseSubject::Url {
            url: url.to_owned(),
        },
        outcome,
        executions_per_run: 1,
        default_runs: DEFAULT_ROUNDS,
    })
}

/// A plan's variant against itself, as `kurabe run` runs the plan.
fn run_plan(
    cfg: &NoiseConfig,
    plan: &Plan,
    options: &RunOptions,
    variant: Option<&str>,
    store: &mut Store,
    stop: &Arc<Stop>,
    on_event: &mut dyn FnMut(&Event<'_>),
) -> Result<Ran, NoiseError> {
    let chosen = pick_variant(plan, variant)?;
    let name = chosen.name.clone();
    let mut aa = against_itself(plan.clone(), written(chosen))?;
    aa.repeat = cmd::FIRST_ROUNDS;
    let mut opts = options.clone();
    (opts.seed, opts.rev) = (cfg.seed, cfg.rev.clone());
    opts.more_rounds = MoreRounds::UntilTime(cfg.duration);
    opts.plan_text = crate::plan::plan_text(&aa).map_err(PrepareError::Plan)?;
    opts.worktrees = crate::git::prepare_revisions(&aa, &opts.plan_dir, stop, &mut |_| {})?;
    let outcome = crate::run_experiment(&aa, store, &opts, stop, on_event)?;
    Ok(Ran {
        subject: NoiseSubject::Plan {
            plan: plan.name.clone(),
            variant: name,
        },
        outcome,
        executions_per_run: 1,
        default_runs: plan.repeat.max(1),
    })
}

/// The variant named `name`, else the plan's baseline, else its first.
fn pick_variant(plan: &Plan, name: Option<&str>) -> Result<ResolvedVariant, NoiseError> {
    let variants = plan.resolved_variants();
    let wanted = name
        .map(str::to_owned)
        .or_else(|| plan.baseline_name())
        .or_else(|| variants.first().map(|v| v.name.clone()));
    let found = variants.iter().find(|v| Some(&v.name) == wanted.as_ref());
    match (found, name) {
        (Some(v), _) => Ok(v.clone()),
        (None, Some(n)) => {
            let names: Vec<String> = variants.iter().map(|v| format!("`{}`", v.name)).collect();
            Err(NoiseError::Usage(format!(
                "--variant: the plan has no variant `{n}`; it has {}",
                names.join(", ")
            )))
        }
        (None, None) => Err(NoiseError::Usage(
            "the plan has no variant to measure".into(),
        )),
    }
}

/// A resolved variant written out again: its matrix values as `vars`.
fn written(v: ResolvedVariant) -> Variant {
    Variant {
        name: v.name,
        env: v.env,
        vars: v.params,
        url: v.url,
        http_version: v.http_version,
        args: v.args,
        command: v.command,
        limits: v.limits,
        rev: v.rev,
    }
}

/// `plan` with `variant` and its twin `NAME (again)` as its only
/// variants, the first the baseline; a failed run ends it (a failing
/// workload has no noise to measure).
fn against_itself(mut plan: Plan, variant: Variant) -> Result<Plan, NoiseError> {
    let twin = Variant {
        name: again(&variant.name),
        ..variant.clone()
    };
    plan.baseline = Some(variant.name.clone());
    plan.variants = vec![variant, twin];
    plan.matrix.clear();
    plan.on_failure = OnFailure::Stop;
    plan.name = format!("noise: {}", plan.name);
    match plan.validate() {
        Ok(()) => Ok(plan),
        Err(problems) => Err(NoiseError::Usage(problems[0].to_string())),
    }
}

/// The noise record of an A/A experiment.
fn report(ran: Ran, t: Timing) -> NoiseReport {
    let rounds = ran
        .outcome
        .runs
        .iter()
        .map(|r| r.round + 1)
        .max()
        .unwrap_or(0);
    let per_round_s = t.elapsed_s / f64::from(rounds.max(1));
    let most = (SUGGESTION_TIME.as_secs_f64() / per_round_s.max(1e-9)).floor() as u32;
    let most = most.max(ran.default_runs);
    let readings = readings(&ran.outcome);
    let suggested = suggested_rounds(&readings, ran.default_runs, most);
    let metrics: Vec<MetricNoise> = readings
        .iter()
        .map(|r| metric_noise(r, ran.default_runs, most, suggested))
        .collect();
    NoiseReport {
        schema_version: kurabe_model::SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
        started_at: t.started_at,
        subject: ran.subject,
        budget_s: t.budget_s,
        elapsed_s: t.elapsed_s,
        rounds,
        executions_per_run: ran.executions_per_run,
        default_runs: ran.default_runs,
        suggestion: suggestion(&metrics, suggested, per_round_s),
        metrics,
    }
}

/// One metric's A/A row and its spread.
struct Reading<'a> {
    /// The A′ row: its comparison is the A/A verdict.
    row: &'a Row,
    spread: Spread,
    /// The first metric of its workload: the one the rounds are sized by.
    leads: bool,
}

/// Every workload × metric with values: the twin's row (which carries
/// the comparison) and the spread of both sides' runs.
fn readings(o: &Outcome) -> Vec<Reading<'_>> {
    let baseline = &o.analysis.baseline;
    let mut seen_workloads: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for row in o.analysis.rows.iter().filter(|r| &r.variant != baseline) {
        let Some(base) = o.analysis.row(&row.workload, &row.metric.name, baseline) else {
            continue;
        };
        let in_order = in_run_order(&o.runs, &row.workload, &row.metric.name);
        let Some(spread) = spread(&in_order, [&base.samples, &row.samples]) else {
            continue;
        };
        let leads = !seen_workloads.contains(&row.workload.as_str());
        seen_workloads.push(&row.workload);
        out.push(Reading { row, spread, leads });
    }
    out
}

/// The values of `metric` in the successful runs of `workload`, both
/// sides, in the order they ran (drift is read along it).
fn in_run_order(runs: &[RunRecord], workload: &str, metric: &str) -> Vec<f64> {
    runs.iter()
        .filter(|r| r.status == RunStatus::Ok && r.workload == workload)
        .filter_map(|r| r.metrics.iter().find(|v| v.name == metric))
        .map(|v| v.value)
        .filter(|v| v.is_finite())
        .collect()
}

/// Rounds that bring each workload's first metric to its band: the most
/// any needs, at least the default's, at most `most`.
fn suggested_rounds(readings: &[Reading<'_>], default_runs: u32, most: u32) -> u32 {
    readings
        .iter()
        .filter(|r| r.leads)
        .filter_map(|r| {
            let v = r.spread.log_variance?;
            Some(runs_for_band(v, r.row.metric.noise_band, default_runs, most).unwrap_or(most))
        })
        .max()
        .unwrap_or(default_runs)
        .clamp(default_runs, most)
}

/// The figures of one metric.
fn metric_noise(r: &Reading<'_>, default_runs: u32, most: u32, suggested: u32) -> MetricNoise {
    let (row, s) = (r.row, &r.spread);
    let band = row.metric.noise_band;
    let v = s.log_variance;
    let detectable_suggested = v.and_then(|v| detectable_at(v, suggested));
    MetricNoise {
        id: format!("{}.{}", row.workload, row.metric.name),
        workload: row.workload.clone(),
        metric: row.metric.name.to_owned(),
        runs: s.runs,
        mean: s.mean,
        cv_pct: s.cv_pct,
        robust_spread_pct: s.robust_pct,
        drift_pct: s.drift_pct.map(|d| d.0),
        drift_low_pct: s.drift_pct.map(|d| d.1),
        drift_high_pct: s.drift_pct.map(|d| d.2),
        aa: row.comparison.unwrap_or_else(|| no_comparison(band)),
        noise_band: band,
        detectable_default_pct: v.and_then(|v| detectable_at(v, default_runs)),
        runs_for_band: v.and_then(|v| runs_for_band(v, band, 3, most)),
        detectable_suggested_pct: detectable_suggested,
        suggested_noise_band: detectable_suggested.map(band_rounded_up),
    }
}

/// A comparison there was no data for (no run succeeded on a side).
fn no_comparison(band: f64) -> kurabe_model::stats::Comparison {
    let reason = kurabe_model::stats::NoIntervalReason::TooFewRuns {
        baseline_runs: 0,
        candidate_runs: 0,
    };
    kurabe_model::stats::Comparison::without_interval(None, reason, band)
}

/// The rounds and, per metric name, the band (the largest over workloads).
fn suggestion(metrics: &[MetricNoise], rounds: u32, per_round_s: f64) -> Suggestion {
    let mut noise_bands: BTreeMap<String, f64> = BTreeMap::new();
    for m in metrics {
        if let Some(b) = m.suggested_noise_band {
            let slot = noise_bands.entry(m.metric.clone()).or_insert(b);
            *slot = slot.max(b);
        }
    }
    Suggestion {
        rounds,
        estimated_s: per_round_s * f64::from(rounds),
        max_time_s: SUGGESTION_TIME.as_secs_f64(),
        noise_bands,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        let text = r#"name = "p"
repeat = 4
baseline = "a1"
[matrix]
size = ["1", "2"]
[[variant]]
name = "a{size}"
[[variant]]
name = "b"
[[workload]]
name = "w"
command = { command = "sleep 0.{size}", runs = 1 }
"#;
        crate::plan::parse_plan(text, "p.toml").unwrap()
    }

    #[test]
    fn the_argument_names_its_kind_and_refuses_the_others_flags() {
        assert_eq!(NoiseKind::of("https://h/"), NoiseKind::Url);
        assert_eq!(NoiseKind::of("p.toml"), NoiseKind::Plan);
        assert_eq!(NoiseKind::of("cat p.toml"), NoiseKind::Command);
        let given = Given::new(["--set"]);
        assert!(NoiseKind::Plan.refuse_others("p.toml", &given).is_ok());
        let e = NoiseKind::Url
            .refuse_others("http://h/", &given)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "--set applies to a plan file (.toml), and `http://h/` reads as a URL: drop --set"
        );
        let load = url_load("http://h/", None, (None, None), true);
        assert_eq!(load.duration.map(|d| d.0), Some(DEFAULT_RUN_TIME));
        assert_eq!((load.concurrency, load.keep_alive), (1, true));
        assert_eq!(
            url_load("http://h/", Some(4), (Some(9), None), false).duration,
            None
        );
    }

    #[test]
    fn the_variant_is_the_one_named_else_the_baseline() {
        let p = plan();
        assert_eq!(pick_variant(&p, Some("a2")).unwrap().name, "a2");
        assert_eq!(pick_variant(&p, None).unwrap().params["size"], "1");
        let NoiseError::Usage(e) = pick_variant(&p, Some("c")).unwrap_err() else {
            panic!("a usage error");
        };
        assert!(
            e.contains("no variant `c`") && e.contains("`a1`, `a2`"),
            "{e}"
        );
    }

    #[test]
    fn against_itself_is_the_variant_and_its_twin_stopping_on_a_failure() {
        let p = plan();
        let v = written(pick_variant(&p, Some("a2")).unwrap());
        let aa = against_itself(p, v).unwrap();
        let names: Vec<String> = aa.resolved_variants().into_iter().map(|v| v.name).collect();
        assert_eq!(names, ["a2", "a2 (again)"]);
        assert_eq!(aa.baseline.as_deref(), Some("a2"));
        assert_eq!(aa.on_failure, OnFailure::Stop);
        let twin = &aa.resolved_variants()[1];
        assert_eq!(twin.params["size"], "2", "the matrix value kept");
    }
}
