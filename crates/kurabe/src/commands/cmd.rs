//! `kurabe cmd [OPTIONS] COMMAND...`: hyperfine's one-liner, with CPU,
//! memory, interleaving and verdicts.
//!
//! hyperfine's options with their names and meanings; the arguments become
//! a [`CmdConfig`] (parameter lists and scans expanded into commands) and
//! `kurabe-lab`'s [`run_cmd`] runs it as an experiment. Prints progress on
//! stderr, then hyperfine's lines per command with kurabe's verdicts
//! (`kurabe report ID` renders the stored experiment), and writes the
//! hyperfine-layout exports. Exit 0; 1 when a command failed
//! (unless `-i`); 2 on usage errors; 130 on Ctrl-C (`CmdOutcome::ending`).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use kurabe_lab::cmd::params::{input_flag, output_flag, shell_flag, CommandList};
use kurabe_lab::cmd::{run_cmd, CmdConfig, CmdError, CmdEvent, CmdOutcome, Runs};
use kurabe_model::notice::Notice;
use kurabe_model::plan::Measure;
use kurabe_report::bars::RunsBar;
use kurabe_report::bench::{BenchFiles, TimeUnit};
use kurabe_store::access::{recorded_experiment, CannotOpen, RunStore};
use kurabe_store::Store;

/// Arguments of `kurabe cmd`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example: kurabe cmd 'gzip -9 -k -f f' 'zstd -19 -k -f f'")]
pub struct Args {
    /// The commands to compare, each run by the shell (see --shell) unless -N.
    #[arg(required = true, value_name = "COMMAND")]
    pub commands: Vec<String>,
    /// Perform NUM untimed warm-up runs of each command first (fills caches).
    #[arg(short = 'w', long, value_name = "NUM", default_value_t = 0)]
    pub warmup: u32,
    /// Perform at least NUM runs of each command (default: 10; 3 with --measure instructions, whose counts do not wobble).
    #[arg(short = 'm', long, value_name = "NUM", value_parser = clap::value_parser!(u32).range(1..))]
    pub min_runs: Option<u32>,
    /// Perform at most NUM runs of each command (default: no limit).
    #[arg(short = 'M', long, value_name = "NUM", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_runs: Option<u32>,
    /// Perform exactly NUM runs of each command (default: about 3 s per command, at least 10).
    #[arg(short = 'r', long, value_name = "NUM", value_parser = clap::value_parser!(u32).range(1..), conflicts_with_all = ["min_runs", "max_runs"])]
    pub runs: Option<u32>,
    /// Execute CMD before every timed run (untimed), e.g. to clear caches; once for all commands or once per command.
    #[arg(short = 'p', long, value_name = "CMD")]
    pub prepare: Vec<String>,
    /// Execute CMD once per command before the first run (e.g. to build it with its {parameters}).
    #[arg(short = 's', long, value_name = "CMD")]
    pub setup: Option<String>,
    /// Execute CMD once per command after the last run (e.g. to remove what it made).
    #[arg(short = 'c', long, value_name = "CMD")]
    pub cleanup: Option<String>,
    /// Shell that runs the commands: a name or path, a command line like "bash --norc", "default" (sh), or "none". Its own start-up time is measured and subtracted, as hyperfine does.
    #[arg(short = 'S', long, value_name = "SHELL")]
    pub shell: Option<String>,
    /// No shell: split each command into words and run it directly (--shell=none).
    #[arg(short = 'N', conflicts_with = "shell")]
    pub no_shell: bool,
    /// Benchmark every command once per value of the comma-separated VALUES, with {VAR} replaced; repeat for every combination.
    #[arg(short = 'L', long, num_args = 2, value_names = ["VAR", "VALUES"], action = clap::ArgAction::Append)]
    pub parameter_list: Vec<String>,
    /// Benchmark every command for VAR = MIN, MIN+1 … MAX ({VAR} replaced); see -D for other steps.
    #[arg(short = 'P', long, num_args = 3, value_names = ["VAR", "MIN", "MAX"], conflicts_with = "parameter_list")]
    pub parameter_scan: Vec<String>,
    /// Step of --parameter-scan (decimals allowed: -P delay 0.3 0.7 -D 0.2).
    #[arg(short = 'D', long, value_name = "DELTA", requires = "parameter_scan")]
    pub parameter_step_size: Option<String>,
    /// Name a command in reports (once per command, in order); {VAR} is replaced.
    #[arg(short = 'n', long, value_name = "NAME")]
    pub command_name: Vec<String>,
    /// Compare against this command (run and reported first) instead of the first one given.
    #[arg(long, value_name = "CMD")]
    pub reference: Option<String>,
    /// Record non-zero exit codes instead of stopping the benchmark with exit status 1.
    #[arg(short = 'i', long)]
    pub ignore_failure: bool,
    /// Feed this file to every command's standard input (default: none; `null` is none too, as in hyperfine).
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Print the commands' output instead of discarding it (same as --output=inherit).
    #[arg(long, conflicts_with = "output")]
    pub show_output: bool,
    /// Where the commands' output goes: null (default), pipe (read and discarded), inherit, or a FILE.
    #[arg(long, value_name = "WHERE")]
    pub output: Option<String>,
    /// Time unit of the terminal output and the Markdown export: microsecond, millisecond or second (default: automatic; CSV and JSON stay in seconds, as hyperfine's do).
    #[arg(short = 'u', long, value_name = "UNIT", value_parser = str::parse::<TimeUnit>)]
    pub time_unit: Option<TimeUnit>,
    /// Write hyperfine's JSON (results[].command, mean, stddev, median, user, system, min, max, times, memory_usage_byte, exit_codes, parameters; seconds, bytes) plus kurabe's fields to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Write a Markdown table (hyperfine's columns, max RSS, ratio with interval and verdict) to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// Write hyperfine's CSV (seconds) plus max RSS, ratio, interval and verdict to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// What to measure: time (wall, user, system, max RSS; the default), or instructions executed, counted under valgrind's Cachegrind: deterministic where time is noise (shared vCPU, CI runner), about 50× slower; needs the `valgrind` package.
    #[arg(long, value_name = "WHAT", default_value = "time", value_parser = str::parse::<Measure>)]
    pub measure: Measure,
    #[command(flatten)]
    pub confident: crate::flags::ConfidentArgs,
    /// Keep the environment's size fixed (by default it is padded by a random 0–4 KiB per run, so stack alignment cannot favour one command).
    #[arg(long)]
    pub no_randomize_env: bool,
    #[command(flatten)]
    pub limits: crate::flags::LimitArgs,
    /// Seed of the interleaved run order (default: drawn at start, recorded).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Do not keep the result in the results store (--store is then ignored).
    #[arg(long)]
    pub no_save: bool,
    #[command(flatten)]
    pub store: crate::flags::StoreArg,
    #[command(flatten)]
    pub rev: crate::flags::RevArg,
    /// Also write the report as a self-contained HTML page with charts to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub profile: crate::flags::ProfileArg,
    #[command(flatten)]
    pub quiet: crate::flags::QuietArg,
}

/// Run `kurabe cmd`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let cfg = config(&args)?;
    files(&args).check()?;
    let flag = args.store.store.as_deref();
    let mut store = RunStore::open(flag, !args.no_save).map_err(CannotOpen::NoSave)?;
    let done = match measure(&cfg, &mut store.store, args.quiet.quiet)? {
        Ok(d) => d,
        Err(e) => return e.ending().map(crate::exit).ok_or_else(|| e.into()),
    };
    write_results(&args, &store.store, &done)?;
    Ok(crate::exit(done.ending()))
}

/// The `--export-*` files and the `--html` page asked for.
fn files(args: &Args) -> BenchFiles<'_> {
    BenchFiles {
        json: args.export_json.as_deref(),
        markdown: args.export_markdown.as_deref(),
        csv: args.export_csv.as_deref(),
        html: args.html.as_deref(),
    }
}

/// Run the commands, with a bar on a terminal and lines on stderr (none with `-q`).
fn measure(
    cfg: &CmdConfig,
    store: &mut Store,
    quiet: bool,
) -> anyhow::Result<Result<CmdOutcome, CmdError>> {
    // Every command runs under a helper on kurabe-probe's launch list
    // (killed with its tree by a forced exit), and the store's writes
    // are transactions.
    let stop = crate::signal::install_forceable()?;
    let bar = RunsBar::new(quiet);
    let mut progress = |e: &CmdEvent<'_>| {
        if let CmdEvent::Run(run) = e {
            bar.count(run);
        }
        bar.line(e.line());
    };
    let done = run_cmd(cfg, store, &stop, &mut progress);
    bar.finish();
    Ok(done)
}

/// hyperfine's lines on stdout, the exports and the `--html` page.
fn write_results(args: &Args, store: &Store, done: &CmdOutcome) -> anyhow::Result<()> {
    let mut export = done.export.clone();
    if args.no_save {
        export.experiment_id = None;
    }
    let mut body = Vec::new();
    kurabe_report::bench::write_terminal(&export, args.time_unit, &mut body)?;
    std::io::stdout().lock().write_all(&body)?;
    files(args).write_exports(&export, args.time_unit)?;
    if let Some(path) = &args.html {
        let exp = recorded_experiment(store, done.outcome.experiment)?;
        eprintln!("{}", kurabe_report::write_html_page(&exp, path)?);
    }
    if !args.no_save && !args.quiet.quiet {
        let id = done.outcome.experiment;
        crate::tell(Notice::SavedExperiment { id });
    }
    Ok(())
}

/// The arguments as the lab's typed configuration.
fn config(args: &Args) -> anyhow::Result<CmdConfig> {
    Ok(CmdConfig {
        commands: command_list(args).expand()?,
        reference: 0,
        shell: shell_flag(args.shell.as_deref(), args.no_shell)?,
        runs: Runs::from_flags(args.runs, (args.min_runs, args.max_runs), args.measure)?,
        warmup: args.warmup,
        prepare: args.prepare.clone(),
        setup: args.setup.clone(),
        cleanup: args.cleanup.clone(),
        ignore_failure: args.ignore_failure,
        input: input_flag(args.input.as_deref()),
        output: output_flag(args.output.as_deref(), args.show_output),
        randomize_env: !args.no_randomize_env,
        limits: args.limits.plan_limits(),
        until_confident: args.confident.budget(),
        seed: args.seed,
        cwd: std::env::current_dir().context("cannot read the current directory")?,
        kurabe_exe: std::env::current_exe().context("cannot find the kurabe executable")?,
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
        rev: args.rev.current(),
        measure: args.measure,
        profile: args.profile.profiling(args.quiet.quiet)?,
    })
}

/// The commands and parameter flags as given.
fn command_list(args: &Args) -> CommandList {
    CommandList::from_flags(
        args.commands.clone(),
        args.command_name.clone(),
        args.reference.clone(),
        &args.parameter_list,
        &args.parameter_scan,
        args.parameter_step_size.clone(),
    )
}
