//! `kurabe system`: the UnixBench System Benchmarks Index of this machine,
//! and `kurabe system import` / `kurabe system compare` for UnixBench text
//! reports and earlier results.
//!
//! This file only turns flags into `kurabe_system` config, shows progress on
//! a terminal, and writes the report (text, JSON or Markdown) to stdout or
//! atomically to `-o FILE`. Exit codes: 0 done, 2 bad input or setup, 130
//! interrupted by Ctrl-C (143 SIGTERM, 129 SIGHUP) (the partial report is still written).

use std::path::PathBuf;
use std::process::ExitCode;

use kurabe_model::record::SavedRecord;
use kurabe_model::system::SystemCompare;
use kurabe_report::bars::StepsBar;
use kurabe_report::{record_renderer, write_rendered, Format};
use kurabe_system::choices::{parse_pct, parse_secs, Choices};
use kurabe_system::files::{compare_files, load_unixbench};

use crate::flags::format;
use kurabe_report::write::check_outputs;

/// Arguments of `kurabe system`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    action: Option<Box<Action>>,
    // Boxed: keeps `main`'s command enum small.
    #[command(flatten)]
    run: Box<RunArgs>,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Read a UnixBench text report (5.1.x / 6.0, one or more copy counts) into kurabe's result model.
    Import(ImportArgs),
    /// Compare two results (kurabe JSON or UnixBench text reports): B relative to A, per test, with a verdict where spread is known.
    Compare(CompareArgs),
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    #[command(flatten)]
    save: crate::flags::SaveArgs,
    /// Short durations and fewer passes: the whole index in about 35 s per copy count instead of UnixBench's ~30 min; the report states the spread that implies.
    #[arg(long, conflicts_with_all = ["precision", "max_time", "unixbench"])]
    quick: bool,
    /// Run passes until the score's 95 % interval, and each test's, is within ±PCT (default 2%); passes go to the tests that widen the score's interval most.
    #[arg(long, value_name = "PCT", value_parser = parse_pct, conflicts_with_all = ["passes", "unixbench"])]
    precision: Option<f64>,
    /// Time budget per copy count for --precision (default 9m: a third of UnixBench's ~28 min).
    #[arg(long, value_name = "DURATION", value_parser = parse_secs, conflicts_with_all = ["passes", "unixbench"])]
    max_time: Option<f64>,
    /// UnixBench's own fixed durations and passes (10 x 10 s, 3 x 30-60 s, settling sleeps; ~28 min per copy count) instead of the precision rule.
    #[arg(long)]
    unixbench: bool,
    /// Pin each test's processes: same-core (all on one CPU) or spread (each on its own CPU); default: the scheduler places them, as UnixBench does.
    #[arg(long, value_name = "PLACEMENT", value_parser = ["same-core", "spread"])]
    pin: Option<String>,
    /// Comma-separated tests to run (default: all 12): dhry2reg, whetstone-double, execl, fstime, fsbuffer, fsdisk, pipe, context1, spawn, shell1, shell8, syscall.
    #[arg(long, value_name = "LIST")]
    tests: Option<String>,
    /// Parallel copies of each test; repeat for several runs (default: 1 and the number of CPUs).
    #[arg(short = 'c', long = "copies", value_name = "N")]
    copies: Vec<u32>,
    /// Fixed passes per test instead of the precision rule (UnixBench: 10 for fast tests, 3 for slow tests); the lowest third is dropped.
    #[arg(long, value_name = "N")]
    passes: Option<u32>,
    /// Output format: text (UnixBench's report layout plus the spread), json (the versioned result model, schema/system-report.schema.json) or md (Markdown tables).
    #[arg(long, value_parser = format(&["text", "json", "md"]), default_value = "text")]
    format: Format,
    #[command(flatten)]
    out: crate::flags::OutputArg,
    /// No progress bar on stderr.
    #[arg(short, long)]
    quiet: bool,
    /// Seconds per pass for every test (for tests and benchmarks).
    #[arg(long, value_name = "DURATION", value_parser = parse_secs, hide = true)]
    seconds: Option<f64>,
    /// A replacement for the helper program the Execl and Process Creation tests run (default: the one built into kurabe).
    #[arg(long, value_name = "PATH", hide = true)]
    execl_helper: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct ImportArgs {
    #[command(flatten)]
    save: crate::flags::SaveArgs,
    /// The UnixBench text report (the file under UnixBench's results/ without extension).
    file: PathBuf,
    /// Output format: json (the versioned result model), text or md.
    #[arg(long, value_parser = format(&["json", "text", "md"]), default_value = "json")]
    format: Format,
    #[command(flatten)]
    out: crate::flags::OutputArg,
}

#[derive(Debug, clap::Args)]
struct CompareArgs {
    /// Baseline result: kurabe JSON (run or import) or a UnixBench text report.
    a: PathBuf,
    /// Result compared with A.
    b: PathBuf,
    /// Half-width of the noise band in percent: verdicts better/worse need the whole 95 % interval outside it.
    #[arg(long, value_name = "PCT", default_value_t = kurabe_model::stats::DEFAULT_NOISE_BAND * 100.0)]
    noise: f64,
    /// Output format: text (UnixBench's report layout plus the spread), json (the versioned result model, schema/system-report.schema.json) or md (Markdown tables).
    #[arg(long, value_parser = format(&["text", "json", "md"]), default_value = "text")]
    format: Format,
    #[command(flatten)]
    out: crate::flags::OutputArg,
}

/// Run `kurabe system`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.action.map(|a| *a) {
        Some(Action::Import(a)) => run_import(a),
        Some(Action::Compare(a)) => run_compare(a),
        None => run_bench(*args.run),
    }
}

fn choices(a: RunArgs) -> Choices {
    Choices {
        tests: a.tests,
        quick: a.quick,
        unixbench: a.unixbench,
        precision: a.precision,
        max_time_s: a.max_time,
        seconds: a.seconds,
        passes: a.passes,
        copies: a.copies,
        pin: a.pin,
        execl_helper: a.execl_helper,
    }
}

fn run_bench(a: RunArgs) -> anyhow::Result<ExitCode> {
    let (format, output, save, quiet) = (a.format, a.out.output.clone(), a.save.clone(), a.quiet);
    let cfg = choices(a).config()?;
    check_outputs(&[("-o", output.as_deref())])?;
    save.check_store()?;
    // Every copy is on kurabe-probe's launch list, and the scratch
    // directory too: a forced exit kills and removes them.
    let stop = crate::signal::install_forceable()?;
    let report = run_with_bar(&cfg, &stop, quiet)?;
    write_rendered(output.as_deref(), &*record_renderer(format, false), &report)?;
    // An interrupted run is not saved: its report is partial.
    let ending = kurabe_system::ending(&report);
    if !report.interrupted {
        let label = report.label();
        save.save_if_asked(&label, || SavedRecord::System(Box::new(report)))?;
    }
    Ok(crate::exit(ending))
}

/// The run, with a bar on a terminal: one step per test and copy count,
/// a step starting at its first pass.
fn run_with_bar(
    cfg: &kurabe_system::Config,
    stop: &kurabe_stop::Stop,
    quiet: bool,
) -> anyhow::Result<kurabe_model::system::SystemReport> {
    let mut bar = StepsBar::new((cfg.tests.len() * cfg.copies.len()) as u64, quiet);
    let mut progress =
        |p: kurabe_system::Progress<'_>| bar.pass(p.copies, p.test.name, p.pass, p.passes);
    let result = kurabe_system::run(cfg, stop, &mut progress);
    bar.finish();
    Ok(result?)
}

fn run_import(a: ImportArgs) -> anyhow::Result<ExitCode> {
    let report = load_unixbench(&a.file)?;
    write_rendered(a.out.path(), &*record_renderer(a.format, false), &report)?;
    let label = format!("unixbench {}", a.file.display());
    a.save
        .save_if_asked(&label, || SavedRecord::Unixbench(Box::new(report)))?;
    Ok(ExitCode::SUCCESS)
}

fn run_compare(a: CompareArgs) -> anyhow::Result<ExitCode> {
    let c: SystemCompare = compare_files(&a.a, &a.b, a.noise)?;
    write_rendered(a.out.path(), &*record_renderer(a.format, false), &c)?;
    Ok(ExitCode::SUCCESS)
}
