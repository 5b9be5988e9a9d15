//! `kurabe cmd`: hyperfine's one-liner, run as an experiment.
//!
//! Owns turning a list of commands and hyperfine's options ([`CmdConfig`])
//! into an in-memory [`Plan`] — one variant per command, one `command`
//! workload — and the steps hyperfine takes around its timing loop: the
//! `--setup` commands, warm-up executions, the shell's own start-up
//! (measured and subtracted, as hyperfine does), the automatic run count
//! (about 3 s per command, at least `--min-runs`), and `--cleanup`. The
//! timing itself is [`crate::run_experiment`]'s: interleaved shuffled blocks
//! (each round runs one block of executions of every command, in the
//! round's random order), the store, `--until-confident`, verdicts. The
//! finished experiment is collected into hyperfine's export layout
//! ([`CmdExport`]).
//!
//! Setup and cleanup run once per command, all setups before the first
//! round and all cleanups after the last (the commands are interleaved, so
//! there is no "before this command's runs" in between).
//!
//! The shell's start-up, as hyperfine measures it (its
//! `ShellExecutor::calibrate`): before the warm-up, the shell runs the
//! empty command (`sh -c ''`) through the same launcher as the commands,
//! 5 untimed executions (the first ones pay for cold caches and would
//! inflate the figure), then `SHELL_CALIBRATION_RUNS` (50, hyperfine's
//! count) timed ones; the mean wall, user and system time is subtracted
//! from every timed execution, clamped at 0, as hyperfine does. With `-N`
//! nothing is measured or subtracted. Because both tools subtract the same
//! quantity measured the same way, their means agree for commands of 5 ms
//! and more (`bench/cmd-vs-hyperfine.sh` compares them, through the shell
//! and with `-N`).
//!
//! Measured by instructions (`--measure instructions`), every execution
//! runs under Cachegrind (`crate::cachegrind`) and the metric is its
//! instruction count alone. The shell's start-up is taken off the same
//! way: the empty command's count, under Cachegrind through the same
//! launcher (`SHELL_COUNT_RUNS` executions: the count does not vary
//! from run to run, so hyperfine's 50 are not needed), is subtracted from
//! every execution's. Measuring it rather than requiring `-N` keeps
//! commands with pipes, globs and quotes working, and what is subtracted
//! is what a shell that runs nothing executes, so the counts left are the
//! commands' own (within 0.02 % of valgrind run on the command itself).
//! valgrind is looked for before anything runs; without it the options
//! are refused.
//!
//! It must not print (progress goes through a callback) or parse command lines.

pub mod params;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use kurabe_model::bench::{CmdExecution, CmdExport, CmdResult};
use kurabe_model::ending::Ending;
use kurabe_model::notice::Notice;
use kurabe_model::plan::{
    CommandLine, CommandOutput, CommandWorkload, ExecCost, Limits, Measure, OnFailure, Plan,
    Variant, Workload, WorkloadKind,
};
use kurabe_model::profile::{Per, ProfileReport, ProfiledRun, Profiling};
use kurabe_model::run_detail::{CommandExecution, RunDetail};
use kurabe_model::tree_counters::Counter;
use kurabe_stop::Stop;
use kurabe_store::{RunStatus, Store};

use crate::measure::{self, CommandRun};
use crate::runner::{Event, LabError, MoreRounds, Outcome, RunOptions};
use crate::target::RunFailure;

/// Metrics every command reports, in this order.
pub const CMD_METRICS: [&str; 4] = [
    "wall_time_s",
    "user_time_s",
    "system_time_s",
    "max_rss_bytes",
];

/// Reported too when every command lived long enough in its warm-up to
/// have its memory sampled (100 ms): Σ PSS of the command's tree.
pub const CMD_PSS_METRIC: &str = "pss_peak_bytes";

/// The metric of `--measure instructions`: instructions per execution.
pub const CMD_INSTRUCTIONS_METRIC: &str = "instructions";

/// Wall time the automatic run count aims at per command (hyperfine's 3 s).
const TARGET_TIME_PER_COMMAND: Duration = Duration::from_secs(3);

/// Most rounds of blocks: beyond this, more executions go into each block,
/// so the per-run cost of the runner (a store commit) stays amortised.
const MAX_ROUNDS: u32 = 30;

/// hyperfine's least number of runs per command (`--min-runs`' default).
pub const DEFAULT_MIN_RUNS: u32 = 10;

/// The least runs per command when counting instructions: each run is
/// ~50× slower, and the counts barely vary.
pub const INSTRUCTION_MIN_RUNS: u32 = 3;

/// The least runs per command by default for what is `measure`d.
pub fn default_min_runs(measure: Measure) -> u32 {
    match measure {
        Measure::Instructions => INSTRUCTION_MIN_RUNS,
        Measure::Time => DEFAULT_MIN_RUNS,
    }
}

/// Executions of the empty command that measure the shell's start-up.
const SHELL_CALIBRATION_RUNS: u32 = 50;

/// Executions of the empty command under Cachegrind that count the
/// shell's start-up (the count is the same every time; the mean is taken).
const SHELL_COUNT_RUNS: u32 = 3;

/// How commands are run (hyperfine's `--shell`, `-N`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shell {
    /// `/bin/sh -c COMMAND`.
    Default,
    /// This program and its arguments, then `-c COMMAND` (`bash --norc`).
    Program(Vec<String>),
    /// No shell: the command is split into words and run directly.
    None,
}

impl Shell {
    /// Parse `--shell`'s value: `none`, `default`, or a command line.
    pub fn parse(text: &str) -> Result<Shell, CmdError> {
        match text.trim() {
            "none" => Ok(Shell::None),
            "default" => Ok(Shell::Default),
            other => match shlex::split(other) {
                Some(words) if !words.is_empty() => Ok(Shell::Program(words)),
                _ => Err(CmdError::Usage(format!(
                    "--shell: cannot split `{text}` into words; give a shell like `bash` or `bash --norc`, or `none`"
                ))),
            },
        }
    }

    /// `command` as this shell runs it.
    pub fn command_line(&self, command: &str) -> Result<CommandLine, CmdError> {
        match self {
            Shell::Default => Ok(CommandLine::Shell(command.to_owned())),
            Shell::Program(words) => {
                let mut argv = words.clone();
                argv.extend(["-c".to_owned(), command.to_owned()]);
                Ok(CommandLine::Argv(argv))
            }
            Shell::None => match shlex::split(command) {
                Some(words) if !words.is_empty() => Ok(CommandLine::Argv(words)),
                _ => Err(CmdError::Usage(format!(
                    "cannot split `{command}` into words without a shell (-N): check its quotes, or drop -N"
                ))),
            },
        }
    }
}

/// How many timed executions each command gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// Exactly this many (`--runs`).
    Exact(u32),
    /// About 3 s per command, within these bounds (`--min-runs`, `--max-runs`).
    Auto {
        /// At least this many (hyperfine's default 10).
        min: u32,
        /// At most this many.
        max: Option<u32>,
    },
    /// `kurabe noise`: blocks of the size the default (`Auto`) would
    /// run, [`FIRST_ROUNDS`] rounds of them and then more while the next
    /// ends within this time; a command too short to time is refused.
    For(Duration),
}

/// Rounds a [`Runs::For`] experiment starts with: the fewest that give an interval.
pub const FIRST_ROUNDS: u32 = 3;

/// What kurabe can time of one execution, seconds: below 1 ms, what is
/// left once the shell's start-up is taken off is mostly that start-up's
/// own jitter (tenths of a millisecond on a busy machine), and user and
/// system time are split by the kernel's tick.
pub const TIMEABLE_S: f64 = 1e-3;

/// Timed executions of each command, after one untimed, that tell a
/// [`Runs::For`] experiment whether it can be timed (their mean).
const TIMING_PROBE_RUNS: u32 = 5;

/// What a command too short to time should take an execution instead,
/// seconds: ten times [`TIMEABLE_S`], so its jitter is a tenth of a run.
pub const MEASURABLE_S: f64 = 10.0 * TIMEABLE_S;

/// Times a command of `wall_s` an execution must be repeated in one
/// command to take [`MEASURABLE_S`] (an execution that left nothing to
/// time counts as 10 µs).
pub fn repetitions_to_time(wall_s: f64) -> u32 {
    (MEASURABLE_S / wall_s.max(1e-5)).ceil() as u32
}

/// One command to benchmark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdSpec {
    /// Name in reports (`-n`, else the command).
    pub name: String,
    /// The command, parameters substituted.
    pub command: String,
    /// Its parameter values (`-L`, `-P`).
    pub parameters: BTreeMap<String, String>,
}

/// Everything `kurabe cmd` was asked to do.
#[derive(Debug, Clone)]
pub struct CmdConfig {
    /// The commands, in the order given.
    pub commands: Vec<CmdSpec>,
    /// Index of the reference command in `commands`.
    pub reference: usize,
    /// How commands are run.
    pub shell: Shell,
    /// Timed executions per command.
    pub runs: Runs,
    /// Untimed executions of each command before the first round.
    pub warmup: u32,
    /// `--prepare`: none, one for all commands, or one per command.
    pub prepare: Vec<String>,
    /// `--setup`, run once per command before the first round.
    pub setup: Option<String>,
    /// `--cleanup`, run once per command after the last round.
    pub cleanup: Option<String>,
    /// Record non-zero exit codes instead of stopping.
    pub ignore_failure: bool,
    /// File fed to every execution's stdin.
    pub input: Option<PathBuf>,
    /// Where the commands' output goes.
    pub output: CommandOutput,
    /// Pad the environment by a random size per execution.
    pub randomize_env: bool,
    /// Limits every execution runs under.
    pub limits: Option<Limits>,
    /// `--until-confident` with its time budget.
    pub until_confident: Option<Duration>,
    /// Seed of the run order.
    pub seed: Option<u64>,
    /// Working directory of the commands.
    pub cwd: PathBuf,
    /// The running kurabe executable.
    pub kurabe_exe: PathBuf,
    /// kurabe's version, stored with the experiment.
    pub tool_version: String,
    /// The code measured, stored with the experiment.
    pub rev: Option<kurabe_model::record::Revision>,
    /// What each execution is measured by (`--measure`).
    pub measure: Measure,
    /// Whether each run's on-CPU stacks are sampled (`--profile`).
    pub profile: Profiling,
}

/// What `kurabe cmd` reports as it goes.
#[derive(Debug)]
pub enum CmdEvent<'a> {
    /// A preliminary step (setup, warm-up, calibration) is starting.
    Step(&'a str),
    /// The schedule is fixed.
    Planned {
        /// Rounds of blocks.
        rounds: u32,
        /// Executions per command per block.
        block: u32,
        /// The shell start-up subtracted, seconds.
        shell_overhead_s: f64,
        /// The shell start-up subtracted, instructions (0 unless counted).
        shell_overhead_instructions: f64,
    },
    /// The runner's progress.
    Run(&'a Event<'a>),
}

impl CmdEvent<'_> {
    /// The progress line for people, when the event deserves one (the
    /// binary decides where it goes).
    pub fn line(&self) -> Option<String> {
        match self {
            CmdEvent::Step(what) => Some(format!("kurabe cmd: {what}")),
            CmdEvent::Planned {
                rounds,
                block,
                shell_overhead_s,
                shell_overhead_instructions,
            } => Some(planned_line(
                *rounds,
                *block,
                *shell_overhead_s,
                *shell_overhead_instructions,
            )),
            CmdEvent::Run(e) => run_line(e),
        }
    }
}

/// "kurabe cmd: 25 interleaved rounds of 40 runs per command; …".
fn planned_line(rounds: u32, block: u32, shell_overhead_s: f64, instructions: f64) -> String {
    let per = match block {
        1 => "1 run".to_owned(),
        n => format!("{n} runs"),
    };
    let shell = if instructions > 0.0 {
        format!("; shell start-up {instructions:.0} instructions subtracted")
    } else if shell_overhead_s > 0.0 {
        let ms = shell_overhead_s * 1e3;
        format!("; shell start-up {ms:.2} ms subtracted")
    } else {
        String::new()
    };
    format!("kurabe cmd: {rounds} interleaved rounds of {per} per command{shell}")
}

/// The runner's events `kurabe cmd` shows: the start, failed runs, added rounds.
fn run_line(e: &Event<'_>) -> Option<String> {
    match e {
        Event::Begin {
            experiment, seed, ..
        } => Some(format!("kurabe cmd: experiment {experiment}, seed {seed}")),
        Event::RunDone { index, record } if record.status == RunStatus::Failed => {
            let tail = record.error_tail.as_deref().unwrap_or("");
            Some(format!("[{index}] FAILED: {tail}"))
        }
        Event::RoundAdded { round } => Some(format!(
            "--until-confident: not settled yet, adding round {}",
            round + 1
        )),
        _ => None,
    }
}

/// Why `kurabe cmd` could not do its work.
#[derive(Debug, thiserror::Error)]
pub enum CmdError {
    /// The options do not make a benchmark (exit 2).
    #[error("{0}")]
    Usage(String),
    /// A setup, warm-up or calibration execution failed (exit 1).
    #[error("{0}")]
    Failed(String),
    /// A command too short to time (exit 2): repeat it in one command.
    #[error("`{command}` takes {:.3} ms an execution{}, less than the {} ms kurabe can time; repeat it {repeat} times in one command (`for i in $(seq {repeat}); do {command}; done`) and measure that", wall_s * 1e3, if *shell { " once the shell's start-up is taken off" } else { "" }, TIMEABLE_S * 1e3)]
    TooShort {
        /// The command.
        command: String,
        /// Its execution's wall time (less the shell's start-up), seconds.
        wall_s: f64,
        /// Whether a shell's start-up was taken off.
        shell: bool,
        /// Repetitions that make it measurable.
        repeat: u32,
    },
    /// The store or the runner refused (exit 2).
    #[error(transparent)]
    Lab(#[from] LabError),
}

/// The experiment and its hyperfine-layout export.
#[derive(Debug, Clone)]
pub struct CmdOutcome {
    /// The runner's outcome.
    pub outcome: Outcome,
    /// hyperfine's layout, plus kurabe's fields.
    pub export: CmdExport,
    /// The first failed run's error, when a command failed.
    pub failure: Option<String>,
}

impl CmdOutcome {
    /// How the benchmark ended: interrupted, a command failed (the
    /// notice suggests `-i`), or done.
    pub fn ending(&self) -> Ending {
        if self.outcome.status == kurabe_model::record::ExperimentStatus::Interrupted {
            return Ending::Signalled(None);
        }
        match &self.failure {
            Some(why) => Ending::Failed(Some(Notice::CommandFailed {
                why: why.clone(),
                suggest_ignore: true,
            })),
            None => Ending::Done,
        }
    }
}

impl CmdError {
    /// How a benchmark stopped by this error ends, when it is not a
    /// usage or setup error: a signal during the warm-up or calibration
    /// stops an execution, and that is the interruption, not a failing
    /// command.
    pub fn ending(&self) -> Option<Ending> {
        match self {
            CmdError::Failed(_) if kurabe_probe::signals::received().is_some() => {
                Some(Ending::Signalled(Some(Notice::Interrupted)))
            }
            CmdError::Failed(why) => Some(Ending::Failed(Some(Notice::CommandFailed {
                why: why.clone(),
                suggest_ignore: false,
            }))),
            _ => None,
        }
    }
}

/// Run the benchmark `cfg` describes, recording it in `store`.
pub fn run_cmd(
    cfg: &CmdConfig,
    store: &mut Store,
    stop: &Arc<Stop>,
    on_event: &mut dyn FnMut(&CmdEvent<'_>),
) -> Result<CmdOutcome, CmdError> {
    let pre = Preliminaries {
        cfg,
        stop: stop.flag(),
    };
    // Built first so bad options are refused before anything runs.
    check_valgrind(cfg)?;
    check_files(cfg)?;
    let first = pre.plan(&Sized::default())?;
    let sized = pre.size(&first, on_event)?;
    let plan = pre.plan(&sized)?;
    let ran = crate::run_experiment(&plan, store, &pre.options(&plan)?, stop, &mut |e| {
        on_event(&CmdEvent::Run(e))
    });
    // Cleanup runs even when the benchmark failed, as hyperfine's does not
    // leave artifacts behind on success only.
    let cleaned = match &cfg.cleanup {
        Some(c) => pre.each_command(c, "--cleanup"),
        None => Ok(()),
    };
    // The launchers kept between blocks (and from the warm-up) are done.
    crate::execute::retire_idle();
    let outcome = ran?;
    cleaned?;
    Ok(finished(cfg, outcome, &sized))
}

/// `--measure instructions` needs valgrind on PATH: one line naming the
/// package, before anything runs.
fn check_valgrind(cfg: &CmdConfig) -> Result<(), CmdError> {
    match cfg.measure {
        Measure::Instructions if crate::cachegrind::find_valgrind().is_none() => {
            Err(CmdError::Usage(crate::cachegrind::missing_message()))
        }
        _ => Ok(()),
    }
}

/// `--input` must be readable and `--output FILE` writable (it is
/// created, as hyperfine does): a usage error, not a failing command.
fn check_files(cfg: &CmdConfig) -> Result<(), CmdError> {
    if let Some(p) = &cfg.input {
        std::fs::File::open(p).map_err(|e| {
            CmdError::Usage(format!(
                "--input: cannot read {}: {e}; give a readable file, or null for no input",
                p.display()
            ))
        })?;
    }
    if let CommandOutput::File(p) = &cfg.output {
        let opened = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p);
        opened.map_err(|e| {
            CmdError::Usage(format!(
                "--output: cannot write {}: {e}; give a writable file, or null, pipe or inherit",
                p.display()
            ))
        })?;
    }
    Ok(())
}

/// The outcome with its export and the first failed run's error.
fn finished(cfg: &CmdConfig, outcome: Outcome, sized: &Sized) -> CmdOutcome {
    let failure = outcome
        .runs
        .iter()
        .find(|r| r.status == RunStatus::Failed)
        .map(|r| r.error_tail.clone().unwrap_or_default());
    let export = collect(cfg, &outcome, sized.block, &sized.overhead);
    CmdOutcome {
        outcome,
        export,
        failure,
    }
}

/// The schedule and settings the steps before the runs decide.
#[derive(Debug, Clone, Default)]
struct Sized {
    rounds: u32,
    block: u32,
    /// The shell's start-up, subtracted from every execution.
    overhead: ExecCost,
    /// Every command lived long enough in its warm-up to sample Σ PSS.
    with_pss: bool,
}

/// hyperfine's run count: enough for about 3 s per command, at least
/// `min`, at most `max`. Interleaved commands share one count, so the
/// budget is 3 s times the number of commands over their summed time.
pub fn auto_runs(first_times_s: &[f64], overhead_s: f64, min: u32, max: Option<u32>) -> u32 {
    let per_round: f64 = first_times_s.iter().map(|t| t.max(overhead_s)).sum();
    let budget = TARGET_TIME_PER_COMMAND.as_secs_f64() * first_times_s.len() as f64;
    let n = if per_round > 0.0 {
        (budget / per_round).ceil().min(u32::MAX as f64) as u32
    } else {
        u32::MAX
    };
    let n = n.max(min);
    max.map_or(n, |m| n.min(m)).max(1)
}

/// Split `n` executions per command into rounds of equal blocks: one
/// execution per block up to `MAX_ROUNDS`, then bigger blocks, a divisor
/// of `n` when one gives at least 10 rounds (else `n` rounds up to whole blocks).
pub fn blocks(n: u32) -> (u32, u32) {
    let n = n.max(1);
    if n <= MAX_ROUNDS {
        return (n, 1);
    }
    let smallest = n.div_ceil(MAX_ROUNDS);
    let exact = (smallest..=n / 10).find(|b| n % b == 0);
    let b = exact.unwrap_or(smallest);
    (n.div_ceil(b), b)
}

/// The steps before and after the runner, with what they need.
/// `--prepare` given neither once nor once per command.
fn prepare_count_mismatch(cfg: &CmdConfig) -> CmdError {
    CmdError::Usage(format!(
        "--prepare was given {} times for {} commands; give it once for all, or once per command",
        cfg.prepare.len(),
        cfg.commands.len()
    ))
}

/// The workload's `prepare` command: none, the one given, or the variant's
/// own through the shell.
fn prepare_command(cfg: &CmdConfig) -> Result<Option<CommandLine>, CmdError> {
    Ok(match cfg.prepare.as_slice() {
        [] => None,
        [one] => Some(cfg.shell.command_line(one)?),
        // One per command: through the shell (-N cannot split a placeholder).
        _ => Some(
            match &cfg.shell {
                Shell::None => Shell::Default,
                s => s.clone(),
            }
            .command_line(&format!("{{{PREPARE_VAR}}}"))?,
        ),
    })
}

struct Preliminaries<'a> {
    cfg: &'a CmdConfig,
    stop: &'a AtomicBool,
}

impl Preliminaries<'_> {
    /// `--setup`, the shell's start-up, the warm-up (of `first`'s
    /// variants), and from them the number of rounds and the block size.
    fn size(
        &self,
        first: &Plan,
        on_event: &mut dyn FnMut(&CmdEvent<'_>),
    ) -> Result<Sized, CmdError> {
        let overhead = self.setup_and_shell(on_event)?;
        on_event(&CmdEvent::Step("warm-up"));
        let first = self.warm_up(first)?;
        let (rounds, block) = self.schedule(&first, &overhead)?;
        on_event(&CmdEvent::Planned {
            rounds,
            block,
            shell_overhead_s: overhead.wall_s,
            shell_overhead_instructions: overhead.instructions,
        });
        let with_pss = first.iter().all(|m| m.contains_key(CMD_PSS_METRIC));
        Ok(Sized {
            rounds,
            block,
            overhead,
            with_pss,
        })
    }

    /// `--setup`, then the shell's start-up (none with `-N`).
    fn setup_and_shell(
        &self,
        on_event: &mut dyn FnMut(&CmdEvent<'_>),
    ) -> Result<ExecCost, CmdError> {
        if let Some(setup) = &self.cfg.setup {
            on_event(&CmdEvent::Step("setup"));
            self.each_command(setup, "--setup")?;
        }
        if self.cfg.shell == Shell::None {
            return Ok(ExecCost::default());
        }
        on_event(&CmdEvent::Step("measuring the shell's start-up"));
        self.shell_overhead()
    }

    /// Rounds and block size: `-r` executions per command, or enough for
    /// about 3 s each by the warm-up's times, in blocks; for
    /// [`Runs::For`] the default's blocks, [`FIRST_ROUNDS`] of them.
    fn schedule(&self, first: &[Metrics], overhead: &ExecCost) -> Result<(u32, u32), CmdError> {
        let first_times: Vec<f64> = first.iter().map(|m| metric(m, "wall_time_s")).collect();
        let auto = |min, max| auto_runs(&first_times, overhead.wall_s, min, max);
        Ok(match self.cfg.runs {
            Runs::Exact(n) => blocks(n),
            Runs::Auto { min, max } => blocks(auto(min, max)),
            Runs::For(_) => {
                self.check_timeable(&first_times, overhead.wall_s)?;
                (FIRST_ROUNDS, blocks(auto(DEFAULT_MIN_RUNS, None)).1)
            }
        })
    }

    /// A timed command whose execution took less than [`TIMEABLE_S`] is
    /// refused, with the repetitions that would make it measurable.
    /// The warm-up ran before the shell's start-up was subtracted: it is
    /// taken off `first_times` here.
    fn check_timeable(&self, first_times: &[f64], shell_s: f64) -> Result<(), CmdError> {
        let cfg = self.cfg;
        let own = first_times.iter().map(|t| (t - shell_s).max(0.0));
        let short =
            (own.zip(&cfg.commands)).find(|(t, _)| *t < TIMEABLE_S && cfg.measure == Measure::Time);
        match short {
            Some((wall_s, c)) => Err(CmdError::TooShort {
                command: c.command.clone(),
                wall_s,
                shell: cfg.shell != Shell::None,
                repeat: repetitions_to_time(wall_s),
            }),
            None => Ok(()),
        }
    }

    /// The runner's options for `plan`.
    fn options(&self, plan: &Plan) -> Result<RunOptions, CmdError> {
        let cfg = self.cfg;
        Ok(RunOptions {
            plan_dir: cfg.cwd.clone(),
            plan_text: crate::plan::plan_text(plan).map_err(|e| CmdError::Usage(e.to_string()))?,
            seed: cfg.seed,
            repeat: None,
            kurabe_exe: cfg.kurabe_exe.clone(),
            more_rounds: match cfg.runs {
                Runs::For(time) => MoreRounds::UntilTime(time),
                _ => cfg
                    .until_confident
                    .map_or(MoreRounds::No, MoreRounds::UntilConfident),
            },
            tool_version: cfg.tool_version.clone(),
            worktrees: Default::default(),
            rev: cfg.rev.clone(),
            live: None,
            profile: cfg.profile,
        })
    }

    /// The experiment: one variant per command, one command workload of
    /// `block` executions, `rounds` rounds (at least 1 each); Σ PSS among
    /// the metrics when `with_pss`.
    fn plan(&self, sized: &Sized) -> Result<Plan, CmdError> {
        let cfg = self.cfg;
        let reference = &cfg.commands[cfg.reference];
        let workload = self.workload(sized)?;
        let metrics = metric_names(cfg.measure, sized.with_pss);
        let plan = Plan {
            name: plan_name(&cfg.commands),
            description: Some("kurabe cmd".into()),
            repeat: sized.rounds.max(1),
            warmup: None,
            baseline: Some(reference.name.clone()),
            on_failure: OnFailure::Stop,
            seed: cfg.seed,
            noise_band: None,
            noise_bands: BTreeMap::new(),
            target: None,
            build: None,
            variants: self.variants()?,
            matrix: BTreeMap::new(),
            workloads: vec![Workload {
                name: "command".into(),
                metrics: Some(metrics),
                kind: WorkloadKind::Command(workload),
            }],
            checks: Vec::new(),
        };
        check(&plan)?;
        Ok(plan)
    }

    /// One variant per command, each with its own `--prepare` when given per command.
    fn variants(&self) -> Result<Vec<Variant>, CmdError> {
        let cfg = self.cfg;
        let per_command_prepare = cfg.prepare.len() > 1;
        if per_command_prepare && cfg.prepare.len() != cfg.commands.len() {
            return Err(prepare_count_mismatch(cfg));
        }
        let variant = |(i, c): (usize, &CmdSpec)| -> Result<Variant, CmdError> {
            let vars = per_command_prepare
                .then(|| (PREPARE_VAR.to_owned(), cfg.prepare[i].clone()))
                .into_iter()
                .collect();
            Ok(Variant {
                name: c.name.clone(),
                env: BTreeMap::new(),
                vars,
                url: None,
                http_version: None,
                args: Vec::new(),
                command: Some(cfg.shell.command_line(&c.command)?),
                limits: cfg.limits.clone(),
                rev: None,
            })
        };
        cfg.commands.iter().enumerate().map(variant).collect()
    }

    /// The command workload every variant runs: `block` executions.
    fn workload(&self, sized: &Sized) -> Result<CommandWorkload, CmdError> {
        let cfg = self.cfg;
        let prepare = prepare_command(cfg)?;
        let overhead = sized.overhead;
        Ok(CommandWorkload {
            command: cfg
                .shell
                .command_line(&cfg.commands[cfg.reference].command)?,
            runs: sized.block.max(1),
            prepare,
            ignore_failure: cfg.ignore_failure,
            stdin: cfg.input.clone(),
            randomize_env: cfg.randomize_env,
            subtract: (overhead != ExecCost::default()).then_some(overhead),
            measure: cfg.measure,
            ..once(1, 0, cfg.output.clone())
        })
    }

    /// Run `command` once (through the shell, output as configured); a
    /// failure stops everything, whatever `--ignore-failure` says.
    fn exec(
        &self,
        command: &CommandLine,
        w: &CommandWorkload,
        vars: &BTreeMap<String, String>,
    ) -> Result<measure::Measured, RunFailure> {
        let argv = crate::runner::argv_of(&command.substitute(vars), &[]);
        let prepare = w
            .prepare
            .as_ref()
            .map(|p| crate::runner::argv_of(&p.substitute(vars), &[]));
        let limits = self.cfg.limits.as_ref().map(crate::runner::probe_limits);
        let env = BTreeMap::new();
        let run = CommandRun {
            argv: &argv,
            prepare: prepare.as_deref(),
            env: &env,
            cwd: Some(self.cfg.cwd.clone()),
            limits: limits.as_ref(),
            profile: Profiling::Off,
        };
        measure::command(w, &run, self.stop)
    }

    /// Run `text` (with `{param}`s of each command filled) once per command.
    fn each_command(&self, text: &str, flag: &str) -> Result<(), CmdError> {
        for c in &self.cfg.commands {
            let line = self
                .cfg
                .shell
                .command_line(&substitute_params(text, &c.parameters))?;
            let w = once(1, 0, self.cfg.output.clone());
            self.exec(&line, &w, &BTreeMap::new())
                .map_err(|e| CmdError::Failed(format!("{flag} for `{}`: {}", c.name, e.text())))?;
        }
        Ok(())
    }

    /// Mean cost of the shell running nothing (hyperfine subtracts it).
    /// Counted instructions do not wobble: a few executions of the empty
    /// command under Cachegrind, measured as the commands are, give its count.
    fn shell_overhead(&self) -> Result<ExecCost, CmdError> {
        let line = self.cfg.shell.command_line("")?;
        let w = match self.cfg.measure {
            Measure::Time => once(SHELL_CALIBRATION_RUNS, 5, CommandOutput::Null),
            Measure::Instructions => CommandWorkload {
                measure: Measure::Instructions,
                ..once(SHELL_COUNT_RUNS, 0, CommandOutput::Null)
            },
        };
        let m = self
            .exec(&line, &w, &BTreeMap::new())
            .map_err(|e| CmdError::Failed(format!("cannot run the shell: {}", e.text())))?;
        Ok(ExecCost {
            wall_s: metric(&m.metrics, "wall_time_s"),
            user_s: metric(&m.metrics, "user_time_s"),
            system_s: metric(&m.metrics, "system_time_s"),
            instructions: metric(&m.metrics, "instructions"),
        })
    }

    /// `--warmup` executions of each command, then one timed execution
    /// each ([`TIMING_PROBE_RUNS`] for [`Runs::For`]): its wall time sizes
    /// the automatic run count; whether its memory was sampled decides the
    /// Σ PSS metric. Failures are fatal here unless `--ignore-failure`, as
    /// they would be in the runs.
    fn warm_up(&self, plan: &Plan) -> Result<Vec<Metrics>, CmdError> {
        let WorkloadKind::Command(template) = &plan.workloads[0].kind else {
            return Ok(Vec::new());
        };
        let mut times = Vec::new();
        for v in plan.resolved_variants() {
            let mut w = template.clone();
            (w.runs, w.warmup_runs) = match self.cfg.runs {
                // Whether a command can be timed is read from a few
                // executions after a cold one, not from the cold one.
                Runs::For(_) => (TIMING_PROBE_RUNS, self.cfg.warmup.max(1)),
                _ => (1, self.cfg.warmup),
            };
            w.randomize_env = false;
            let command = v.command.as_ref().unwrap_or(&template.command);
            let m = self.exec(command, &w, &v.params).map_err(|e| {
                CmdError::Failed(format!(
                    "{}\nkurabe: use -i/--ignore-failure to record non-zero exit codes instead of stopping",
                    e.text()
                ))
            })?;
            times.push(m.metrics);
        }
        Ok(times)
    }
}

/// The metrics every command reports, Σ PSS too when `with_pss`; only
/// the count when measured by instructions (times under Cachegrind are
/// Cachegrind's, not the command's).
fn metric_names(measure: Measure, with_pss: bool) -> Vec<String> {
    if measure == Measure::Instructions {
        return vec![CMD_INSTRUCTIONS_METRIC.to_owned()];
    }
    CMD_METRICS
        .iter()
        .chain(with_pss.then_some(&CMD_PSS_METRIC))
        .map(|m| m.to_string())
        .collect()
}

/// Metric values by catalogue name, as measured.
type Metrics = BTreeMap<&'static str, f64>;

/// `name`'s value in `m`, 0 when absent.
fn metric(m: &Metrics, name: &str) -> f64 {
    m.get(name).copied().unwrap_or(0.0)
}

/// Variable holding each command's own `--prepare`.
const PREPARE_VAR: &str = "prepare_command";

/// A command workload of `runs` executions after `warmup` untimed ones.
fn once(runs: u32, warmup: u32, output: CommandOutput) -> CommandWorkload {
    CommandWorkload {
        command: CommandLine::Argv(Vec::new()),
        runs,
        warmup_runs: warmup,
        cwd: None,
        timeout: None,
        prepare: None,
        ignore_failure: false,
        stdin: None,
        output,
        randomize_env: false,
        subtract: None,
        pass_secrets: true,
        measure: Measure::Time,
    }
}

/// `{name}` → value for each parameter (hyperfine's substitution: plain text).
pub fn substitute_params(text: &str, params: &BTreeMap<String, String>) -> String {
    kurabe_model::plan::substitute(text, params)
}

/// "cmd: A vs B", shortened to fit a listing.
fn plan_name(commands: &[CmdSpec]) -> String {
    let names: Vec<&str> = commands.iter().map(|c| c.name.as_str()).collect();
    kurabe_model::plan::joined_name("cmd", &names)
}

/// Validate the built plan; commands may hold brace text that is not a
/// placeholder (`awk '{print}'`), which hyperfine runs as written.
fn check(plan: &Plan) -> Result<(), CmdError> {
    let problems: Vec<_> = plan
        .validate()
        .err()
        .unwrap_or_default()
        .into_iter()
        .filter(|p| !p.message.starts_with("unknown placeholder"))
        .collect();
    match problems.first() {
        None => Ok(()),
        Some(p) => Err(CmdError::Usage(p.message.clone())),
    }
}

/// The executions of every command, in run order, into hyperfine's layout.
fn collect(cfg: &CmdConfig, outcome: &Outcome, block: u32, overhead: &ExecCost) -> CmdExport {
    let results = cfg
        .commands
        .iter()
        .filter_map(|c| result_of(c, outcome))
        .collect();
    let rounds = outcome.runs.iter().map(|r| r.round + 1).max().unwrap_or(0);
    CmdExport {
        results,
        schema_version: kurabe_model::SCHEMA_VERSION,
        experiment_id: Some(outcome.experiment.to_string()),
        reference: cfg.commands[cfg.reference].name.clone(),
        seed: outcome.seed,
        rounds,
        block_size: block,
        shell_overhead_s: overhead.wall_s,
        measure: cfg.measure,
        shell_overhead_instructions: (cfg.measure == Measure::Instructions
            && cfg.shell != Shell::None)
            .then_some(overhead.instructions),
        hardware_off: hardware_off(outcome),
        profile: profile_report(cfg, outcome),
    }
}

/// Every profiled run and each command against the reference (`--profile`).
fn profile_report(cfg: &CmdConfig, outcome: &Outcome) -> Option<ProfileReport> {
    let runs: Vec<ProfiledRun> = outcome
        .runs
        .iter()
        .filter(|r| r.status == RunStatus::Ok)
        .filter_map(|r| {
            let profile = match r.record.as_ref()? {
                RunDetail::Command(c) => c.profile.clone()?,
                _ => return None,
            };
            let (variant, round) = (r.variant.clone(), r.round);
            Some(ProfiledRun {
                variant,
                round,
                profile,
            })
        })
        .collect();
    if runs.is_empty() {
        return None;
    }
    let reference = &cfg.commands[cfg.reference].name;
    let others = cfg.commands.iter().map(|c| c.name.as_str());
    let names: Vec<&str> = std::iter::once(reference.as_str())
        .chain(others.filter(|n| n != reference))
        .collect();
    let band = kurabe_model::stats::DEFAULT_NOISE_BAND;
    Some(ProfileReport::of(Per::Execution, runs, &names, band))
}

/// Why the hardware counters are missing, when no execution counted them.
fn hardware_off(outcome: &Outcome) -> Option<kurabe_model::tree_counters::HardwareOff> {
    let counted = outcome
        .runs
        .iter()
        .filter_map(|r| r.record.as_ref())
        .flat_map(RunDetail::executions)
        .any(|e| e.counters.get(Counter::Instructions).is_some());
    if counted {
        return None;
    }
    kurabe_probe::pmu::hardware_off()
}

/// One command's executions and comparisons; `None` when none succeeded.
fn result_of(c: &CmdSpec, outcome: &Outcome) -> Option<CmdResult> {
    let execs: Vec<CmdExecution> = outcome
        .runs
        .iter()
        .filter(|r| r.variant == c.name && r.status == RunStatus::Ok)
        .filter_map(|r| r.record.as_ref())
        .flat_map(executions_of)
        .collect();
    let mut r = CmdResult::from_executions(&c.command, &c.name, c.parameters.clone(), &execs)?;
    r.versus_reference = outcome
        .analysis
        .rows
        .iter()
        .filter(|row| row.variant == c.name)
        .filter_map(|row| Some((row.metric.name.to_owned(), row.comparison?)))
        .collect();
    Some(r)
}

/// The executions a `command` run recorded.
fn executions_of(record: &RunDetail) -> Vec<CmdExecution> {
    let exec = |e: &CommandExecution| CmdExecution {
        wall_s: e.wall_time_s,
        user_s: e.user_time_s,
        system_s: e.system_time_s,
        max_rss_bytes: e.max_rss_bytes,
        pss_peak_bytes: e.pss_peak_bytes,
        exit_code: e.exit_code,
        instructions: e.instructions,
        counters: e.counters,
    };
    record.executions().iter().map(exec).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines_say_the_schedule_and_the_shell() {
        assert_eq!(
            planned_line(25, 40, 0.0012, 0.0),
            "kurabe cmd: 25 interleaved rounds of 40 runs per command; shell start-up 1.20 ms subtracted"
        );
        assert_eq!(
            CmdEvent::Planned {
                rounds: 10,
                block: 1,
                shell_overhead_s: 0.0,
                shell_overhead_instructions: 0.0,
            }
            .line()
            .unwrap(),
            "kurabe cmd: 10 interleaved rounds of 1 run per command"
        );
        assert_eq!(
            CmdEvent::Step("warm-up").line().unwrap(),
            "kurabe cmd: warm-up"
        );
    }

    #[test]
    fn blocks_amortise_long_series() {
        assert_eq!(blocks(10), (10, 1));
        assert_eq!(blocks(30), (30, 1));
        assert_eq!(blocks(1000), (25, 40));
        assert_eq!(blocks(0), (1, 1));
        // A prime: no divisor leaves ≥ 10 rounds, so round up to whole blocks.
        let (r, b) = blocks(997);
        assert!(r * b >= 997 && r <= MAX_ROUNDS, "{r} × {b}");
    }

    #[test]
    fn auto_runs_spend_about_three_seconds_per_command() {
        assert_eq!(auto_runs(&[0.1, 0.2], 0.0, 10, None), 20);
        assert_eq!(auto_runs(&[1.0], 0.0, 10, None), 10);
        assert_eq!(auto_runs(&[0.001], 0.0, 10, Some(500)), 500);
        assert_eq!(auto_runs(&[0.0], 0.0, 10, Some(7)), 7);
    }

    #[test]
    fn shells_build_command_lines() {
        assert_eq!(
            Shell::Default.command_line("sleep 1").unwrap(),
            CommandLine::Shell("sleep 1".into())
        );
        assert_eq!(
            Shell::parse("bash --norc")
                .unwrap()
                .command_line("echo 'a b'")
                .unwrap(),
            CommandLine::Argv(vec![
                "bash".into(),
                "--norc".into(),
                "-c".into(),
                "echo 'a b'".into()
            ])
        );
        assert_eq!(
            Shell::None.command_line("echo 'a b'").unwrap(),
            CommandLine::Argv(vec!["echo".into(), "a b".into()])
        );
        assert!(Shell::None.command_line("echo 'unclosed").is_err());
        assert_eq!(Shell::parse("none").unwrap(), Shell::None);
    }
}
