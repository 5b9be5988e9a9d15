//! `kurabe noise CMD|URL|PLAN`: a workload against itself (A/A), for a
//! bounded time, and this machine's noise on it.
//!
//! Reads the argument as a URL (`http://`, `https://`), a plan file (one
//! word ending in `.toml`) or a command, and the flags of that kind into
//! a [`NoiseConfig`]; `kurabe_lab::noise` runs the experiment (in a
//! private store: the A/A experiment is a means, not a result) and reads
//! the noise; `kurabe-report` renders it; the record is saved under the
//! label `noise: …` (`kurabe history LABEL` follows it). Exit 0; 1 when
//! the workload failed; 2 on usage errors, and for a command too short to
//! time; 128 + the signal when interrupted.

use std::process::ExitCode;
use std::time::Duration;

use kurabe_lab::noise::{run_noise_private, NoiseConfig, NoiseError, NoiseFlags, NoiseWorkload};
use kurabe_lab::prepare::parse_set;
use kurabe_model::given::Given;
use kurabe_model::noise::NoiseReport;
use kurabe_model::plan::Measure;
use kurabe_model::record::SavedRecord;
use kurabe_report::bars::RunsBar;
use kurabe_report::write::{check_outputs, colour_for, write_output};
use kurabe_report::Format;

use crate::flags::{format, parse_duration};

/// Arguments of `kurabe noise`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  kurabe noise 'gzip -9 -k -f big.txt'\n  kurabe noise http://127.0.0.1:8080/ -c 4 -t 2s\n  kurabe noise plan.toml --variant 'ruby + big heap' --duration 5m"
)]
pub struct Args {
    /// What to run against itself: an http:// or https:// URL, a plan file (ending in .toml), or else a command (run by the shell unless -N).
    #[arg(value_name = "CMD|URL|PLAN")]
    pub workload: String,
    /// How long the interleaved runs may take ("60s", "5m"); at least 3 rounds run, however long they take.
    #[arg(short = 'd', long, value_name = "DURATION", value_parser = positive_duration, default_value = "60s")]
    pub duration: Duration,
    /// A plan's variant to run against itself (default: its baseline, else its first).
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    /// Fill the placeholder {KEY} of a plan with VALUE (repeatable), as `kurabe run --set`.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    pub set: Vec<(String, String)>,
    /// A command's shell, as `kurabe cmd --shell` (its start-up is measured and subtracted).
    #[arg(short = 'S', long, value_name = "SHELL")]
    pub shell: Option<String>,
    /// No shell: split the command into words and run it directly (--shell=none).
    #[arg(short = 'N', conflicts_with = "shell")]
    pub no_shell: bool,
    /// What a command is measured by: time, or instructions (under valgrind's Cachegrind), as `kurabe cmd --measure`.
    #[arg(long, value_name = "WHAT", value_parser = str::parse::<Measure>)]
    pub measure: Option<Measure>,
    /// Concurrent connections of each run against a URL (ab's -c) [default: 1].
    #[arg(short = 'c', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrency: Option<u32>,
    /// Requests in each run against a URL (ab's -n).
    #[arg(short = 'n', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub requests: Option<u64>,
    /// Length of each run against a URL (ab's -t) [default: 1s unless -n].
    #[arg(short = 't', long, value_name = "DURATION", value_parser = positive_duration)]
    pub timelimit: Option<Duration>,
    /// Keep connections to a URL alive (ab's -k).
    #[arg(short = 'k', long)]
    pub keep_alive: bool,
    /// Output format (json: schema/noise-report.schema.json).
    #[arg(long, value_parser = format(&["text", "md", "json"]), default_value = "text")]
    pub format: Format,
    #[command(flatten)]
    pub out: crate::flags::OutputArg,
    /// Seed of the interleaved run order (default: drawn at start).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Do not keep the result in the results store (--store is then ignored).
    #[arg(long)]
    pub no_save: bool,
    #[command(flatten)]
    pub store: crate::flags::StoreArg,
    #[command(flatten)]
    pub rev: crate::flags::RevArg,
    #[command(flatten)]
    pub quiet: crate::flags::QuietArg,
}

/// A duration above zero.
fn positive_duration(text: &str) -> Result<Duration, String> {
    match parse_duration(text)? {
        d if d.is_zero() => Err("give a duration above zero, like 60s or 5m".into()),
        d => Ok(d),
    }
}

/// Run `kurabe noise`.
pub fn run(args: Args, given: &Given) -> anyhow::Result<ExitCode> {
    let cfg = NoiseConfig {
        workload: NoiseWorkload::from_flags(&args.workload, flags(&args), given)?,
        duration: args.duration,
        seed: args.seed,
        rev: args.rev.current(),
    };
    check_outputs(&[("-o", args.out.path())])?;
    kurabe_store::access::check_savable(args.store.store.as_deref(), !args.no_save)?;
    let report = match measure(&cfg, args.quiet.quiet) {
        Ok(report) => report,
        Err(e) => return e.ending().map(crate::exit).ok_or_else(|| e.into()),
    };
    let body = kurabe_report::to_string(
        &*kurabe_report::record_renderer(args.format, colour_for(args.out.path())),
        &report,
    );
    write_output(args.out.path(), &body)?;
    save(&args, report)?;
    Ok(ExitCode::SUCCESS)
}

/// The A/A experiment in a private store, with a bar on a terminal.
fn measure(cfg: &NoiseConfig, quiet: bool) -> Result<NoiseReport, NoiseError> {
    // As for `kurabe cmd` and `kurabe http A B`: every command, target
    // and load runs under kurabe's launch list (killed with its tree by a
    // forced exit) and the store's writes are transactions.
    let stop =
        crate::signal::install_forceable().map_err(|e| NoiseError::Usage(format!("{e:#}")))?;
    let bar = RunsBar::new(quiet);
    let done = run_noise_private(cfg, &stop, &mut |e| bar.count(e));
    bar.finish();
    done
}

/// Keep the record under `noise: …` unless `--no-save`.
fn save(args: &Args, report: NoiseReport) -> anyhow::Result<()> {
    if args.no_save {
        return Ok(());
    }
    let label = report.subject.label();
    let record = SavedRecord::Noise(Box::new(report));
    let (store, rev) = (args.store.store.as_deref(), args.rev.rev.clone());
    let saved = kurabe_lab::saved_result::save_here(&label, &record, store, rev)?;
    if !args.quiet.quiet {
        crate::tell(saved);
    }
    Ok(())
}

/// Every kind's flags, as given: the argument's kind takes its own.
fn flags(args: &Args) -> NoiseFlags {
    NoiseFlags {
        variant: args.variant.clone(),
        set: args.set.clone(),
        shell: args.shell.clone(),
        no_shell: args.no_shell,
        measure: args.measure,
        concurrency: args.concurrency,
        requests: args.requests,
        timelimit: args.timelimit,
        keep_alive: args.keep_alive,
    }
}
