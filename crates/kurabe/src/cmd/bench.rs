//! `kurabe cmd [OPTIONS] COMMAND...`: hyperfine's one-liner, with CPU,
//! memory, interleaving and verdicts.
//!
//! hyperfine's options with their names and meanings; the arguments become
//! a [`CmdConfig`] (parameter lists and scans expanded into commands) and
//! `kurabe-lab`'s [`run_cmd`] runs it as an experiment. Prints progress on
//! stderr, then hyperfine's lines per command with kurabe's verdicts
//! (`kurabe report ID` renders the stored experiment), and writes the
//! hyperfine-layout exports. Exit 0; 1 when a command failed
//! (unless `-i`); 2 on usage errors; 130 on Ctrl-C.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use kurabe_lab::cmdbench::{run_cmd, CmdConfig, CmdError, CmdEvent, Runs, Shell};
use kurabe_lab::cmdparams::{CommandList, Scan};
use kurabe_lab::Event;
use kurabe_model::plan::{parse_size, ByteSize, CommandOutput, Limits};
use kurabe_report::bench::TimeUnit;
use kurabe_store::{Entry, EntryId, ExperimentStatus, Store};

use kurabe_report::write::write_file;

use crate::flags::parse_duration;

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
    /// Perform at least NUM runs of each command (default: 10).
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
    /// Feed this file to every command's standard input (default: none).
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Print the commands' output instead of discarding it (same as --output=inherit).
    #[arg(long, conflicts_with = "output")]
    pub show_output: bool,
    /// Where the commands' output goes: null (default), pipe (read and discarded), inherit, or a FILE.
    #[arg(long, value_name = "WHERE")]
    pub output: Option<String>,
    /// Time unit of the terminal output and the Markdown export: microsecond, millisecond or second (default: automatic; CSV and JSON stay in seconds, as hyperfine's do).
    #[arg(short = 'u', long, value_name = "UNIT", value_parser = parse_time_unit)]
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
    /// Keep adding rounds until every metric's verdict is settled (the stop rule of `kurabe run --until-confident`).
    #[arg(long)]
    pub until_confident: bool,
    /// Time budget of --until-confident ("10m", "90s").
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "10m", requires = "until_confident")]
    pub max_time: Duration,
    /// Keep the environment's size fixed (by default it is padded by a random 0–4 KiB per run, so stack alignment cannot favour one command).
    #[arg(long)]
    pub no_randomize_env: bool,
    /// CPU quota for every command in cores, e.g. 0.5 (cgroup), to emulate a smaller machine.
    #[arg(long, value_name = "CORES")]
    pub cpus: Option<f64>,
    /// CPUs every command may run on, e.g. 0 or 0-1 (cgroup cpuset).
    #[arg(long, value_name = "LIST")]
    pub cpuset: Option<String>,
    /// Memory limit for every command, e.g. 512M (cgroup).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory: Option<u64>,
    /// Seed of the interleaved run order (default: drawn at start, recorded).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Do not keep the result in the results store (--store is then ignored).
    #[arg(long)]
    pub no_save: bool,
    /// Results store (file, sqlite:PATH or postgres://…) [default: $KURABE_STORE, else $XDG_DATA_HOME/kurabe/results.db].
    #[arg(
        long,
        value_name = "PATH|URL",
        env = "KURABE_STORE",
        hide_env_values = true
    )]
    pub store: Option<PathBuf>,
    /// Label of the code measured (a CI build id, a tag), stored with the record beside the git commit, branch and dirty flag read from the current directory's work tree.
    #[arg(
        long = "rev",
        value_name = "LABEL",
        env = "KURABE_REV",
        hide_env_values = true
    )]
    pub rev: Option<String>,
    /// Also write the report as a self-contained HTML page with charts to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// No progress lines on stderr.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

fn parse_time_unit(s: &str) -> Result<TimeUnit, String> {
    match s {
        "microsecond" | "us" | "µs" => Ok(TimeUnit::Microsecond),
        "millisecond" | "ms" => Ok(TimeUnit::Millisecond),
        "second" | "s" => Ok(TimeUnit::Second),
        _ => Err(format!(
            "expected microsecond, millisecond or second, got `{s}`"
        )),
    }
}

/// Run `kurabe cmd`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let cfg = config(&args)?;
    super::check_outputs(&[
        ("--export-json", args.export_json.as_deref()),
        ("--export-markdown", args.export_markdown.as_deref()),
        ("--export-csv", args.export_csv.as_deref()),
        ("--html", args.html.as_deref()),
    ])?;
    // --no-save: a private store in a temporary directory, gone at exit,
    // so the same runner and report serve both cases.
    let scratch = if args.no_save {
        Some(crate::store::ScratchDir::new()?)
    } else {
        None
    };
    let mut store = match (&scratch, &args.store) {
        (Some(dir), _) => Store::open(&dir.path().join("cmd.db")),
        (None, Some(p)) => Store::open(p),
        (None, None) => Store::open_default(),
    }
    .and_then(Store::for_saving)
    .context("cannot open the results store (choose another with --store PATH, or --no-save)")?;
    let stop = crate::signal::install_stop()?;
    let quiet = args.quiet;
    let bar = crate::progress::counter(0, "runs", crate::progress::wanted(!quiet));
    let mut progress = |e: &CmdEvent<'_>| show_progress(&bar, quiet, e);
    let done = run_cmd(&cfg, &mut store, &stop, &mut progress);
    bar.finish_and_clear();
    let done = match done {
        Ok(d) => d,
        Err(CmdError::Failed(why)) => {
            eprintln!("kurabe: error: {why}");
            return Ok(ExitCode::from(1));
        }
        Err(e) => return Err(e.into()),
    };
    let mut export = done.export.clone();
    if args.no_save {
        export.experiment_id = None;
    }
    let Entry::Experiment(exp) = store.get(EntryId::Experiment(done.outcome.experiment))? else {
        bail!(
            "experiment {} vanished from the store",
            done.outcome.experiment
        );
    };
    let mut body = Vec::new();
    kurabe_report::bench::write_terminal(&export, args.time_unit, &mut body)?;
    std::io::stdout().lock().write_all(&body)?;
    write_exports(&args, &export)?;
    if let Some(path) = &args.html {
        let report = kurabe_report::experiment_report(&exp);
        let mut page = Vec::new();
        kurabe_report::renderer(kurabe_report::Format::Html, false).render(&report, &mut page)?;
        write_file(path, &page).context("--html")?;
        eprintln!("wrote {} (open it in a browser)", path.display());
    }
    if !args.no_save && !quiet {
        let id = done.outcome.experiment;
        eprintln!("kurabe: saved as {id}; see `kurabe report {id}`");
    }
    Ok(exit_code(&done.outcome.status, done.failure.as_deref()))
}

/// The runner's runs move the bar (on a terminal); the progress lines go
/// above it, or to stderr without one; nothing with `-q`.
fn show_progress(bar: &indicatif::ProgressBar, quiet: bool, e: &CmdEvent<'_>) {
    match e {
        CmdEvent::Run(Event::Begin { total, .. } | Event::RunStart { total, .. }) => {
            bar.set_length(*total as u64);
        }
        CmdEvent::Run(Event::RunDone { .. }) => bar.inc(1),
        _ => {}
    }
    match e.line() {
        Some(line) if !quiet && bar.is_hidden() => eprintln!("{line}"),
        Some(line) if !quiet => bar.println(line),
        _ => {}
    }
}

/// 130 on Ctrl-C; 1 with the failed command's error; else 0.
fn exit_code(status: &ExperimentStatus, failure: Option<&str>) -> ExitCode {
    if *status == ExperimentStatus::Interrupted {
        return ExitCode::from(130);
    }
    match failure {
        Some(why) => {
            eprintln!("kurabe: error: {why}\nkurabe: use -i/--ignore-failure to record non-zero exit codes instead of stopping");
            ExitCode::from(1)
        }
        None => ExitCode::SUCCESS,
    }
}

fn write_exports(args: &Args, export: &kurabe_model::bench::CmdExport) -> anyhow::Result<()> {
    if let Some(path) = &args.export_json {
        // hyperfine's shape, with the float noise rounded away as in every kurabe JSON.
        let text = kurabe_report::to_string(&kurabe_report::Json, export);
        write_export(path, text.as_bytes())?;
    }
    if let Some(path) = &args.export_markdown {
        let mut out = Vec::new();
        kurabe_report::bench::write_markdown(export, args.time_unit, &mut out)?;
        write_export(path, &out)?;
    }
    if let Some(path) = &args.export_csv {
        let mut out = Vec::new();
        kurabe_report::bench::write_csv(export, &mut out)?;
        write_export(path, &out)?;
    }
    Ok(())
}

fn write_export(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    write_file(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

/// The arguments as the lab's typed configuration.
fn config(args: &Args) -> anyhow::Result<CmdConfig> {
    let shell = match (&args.shell, args.no_shell) {
        (_, true) => Shell::None,
        (Some(s), false) => Shell::parse(s)?,
        (None, false) => Shell::Default,
    };
    let output = match (&args.output, args.show_output) {
        (_, true) => CommandOutput::Inherit,
        (Some(o), false) => CommandOutput::parse(o),
        (None, false) => CommandOutput::Null,
    };
    let limits = Limits {
        cpus: args.cpus,
        cpuset: args.cpuset.clone(),
        memory: args.memory.map(ByteSize),
    };
    Ok(CmdConfig {
        commands: command_list(args).expand()?,
        reference: 0,
        shell,
        runs: Runs::from_flags(args.runs, args.min_runs, args.max_runs)?,
        warmup: args.warmup,
        prepare: args.prepare.clone(),
        setup: args.setup.clone(),
        cleanup: args.cleanup.clone(),
        ignore_failure: args.ignore_failure,
        input: args.input.clone(),
        output,
        randomize_env: !args.no_randomize_env,
        limits: (limits != Limits::default()).then_some(limits),
        until_confident: args.until_confident.then_some(args.max_time),
        seed: args.seed,
        cwd: std::env::current_dir().context("cannot read the current directory")?,
        kurabe_exe: std::env::current_exe().context("cannot find the kurabe executable")?,
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
        rev: crate::store::current_rev(args.rev.clone()),
    })
}

/// The commands and parameter flags as given.
fn command_list(args: &Args) -> CommandList {
    let pairs = args.parameter_list.chunks_exact(2);
    let scan = match args.parameter_scan.as_slice() {
        [name, min, max] => Some(Scan {
            name: name.clone(),
            min: min.clone(),
            max: max.clone(),
            step: args.parameter_step_size.clone(),
        }),
        _ => None,
    };
    CommandList {
        commands: args.commands.clone(),
        names: args.command_name.clone(),
        reference: args.reference.clone(),
        lists: pairs.map(|p| (p[0].clone(), p[1].clone())).collect(),
        scan,
    }
}
