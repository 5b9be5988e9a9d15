//! `kurabe system`: the UnixBench System Benchmarks Index of this machine,
//! and `kurabe system import` / `kurabe system compare` for UnixBench text
//! reports and earlier results.
//!
//! This file only turns flags into `kurabe_system` config, shows progress on
//! a terminal, and writes the report (text, JSON or Markdown) to stdout or
//! atomically to `-o FILE`. Exit codes: 0 done, 2 bad input or setup, 130
//! interrupted by Ctrl-C (143 SIGTERM, 129 SIGHUP) (the partial report is still written).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use kurabe_model::system::{SystemCompare, SystemReport};
use kurabe_report::write::write_with;
use kurabe_report::{Json, Markdown, Render, Terminal};
use kurabe_system::{compare, import, Config, Profile, TestId};

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

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    /// UnixBench's report layout plus the spread.
    Text,
    /// The versioned result model (schema/system-report.schema.json).
    Json,
    /// Markdown tables.
    Md,
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    #[command(flatten)]
    save: crate::save::SaveArgs,
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
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Write the report to FILE (atomically) instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
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
    save: crate::save::SaveArgs,
    /// The UnixBench text report (the file under UnixBench's results/ without extension).
    file: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Json)]
    format: Format,
    /// Write to FILE (atomically) instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct CompareArgs {
    /// Baseline result: kurabe JSON (run or import) or a UnixBench text report.
    a: PathBuf,
    /// Result compared with A.
    b: PathBuf,
    /// Half-width of the noise band in percent: verdicts better/worse need the whole 95 % interval outside it.
    #[arg(long, value_name = "PCT", default_value_t = 2.0)]
    noise: f64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Write to FILE (atomically) instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
}

/// Run `kurabe system`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.action.map(|a| *a) {
        Some(Action::Import(a)) => run_import(a),
        Some(Action::Compare(a)) => run_compare(a),
        None => run_bench(*args.run),
    }
}

fn config(a: &RunArgs) -> anyhow::Result<Config> {
    let tests = match &a.tests {
        Some(list) => kurabe_system::parse_tests(list)?,
        None => kurabe_system::catalog::ALL
            .iter()
            .map(|s| s.id)
            .collect::<Vec<TestId>>(),
    };
    let mut profile = if a.quick {
        Profile::quick()
    } else if a.unixbench || a.passes.is_some() {
        Profile::default_unixbench()
    } else {
        Profile::precision(
            a.precision.unwrap_or(DEFAULT_PRECISION),
            a.max_time.unwrap_or(DEFAULT_MAX_TIME_S),
        )?
    };
    if let Some(s) = a.seconds {
        profile = profile.with_seconds(s)?;
    }
    if let Some(p) = a.passes {
        profile = profile.with_passes(p)?;
    }
    let copies = if a.copies.is_empty() {
        let n = std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1);
        if n > 1 {
            vec![1, n]
        } else {
            vec![1]
        }
    } else {
        a.copies.clone()
    };
    Ok(Config {
        tests,
        copies,
        profile,
        execl_helper: a.execl_helper.clone(),
        temp_parent: std::env::temp_dir(),
        pin: a.pin.as_deref().and_then(kurabe_system::pin::Pin::parse),
        cgroup_procs: Vec::new(),
    })
}

/// Default target of the precision rule: ±2 % on the score.
const DEFAULT_PRECISION: f64 = 0.02;
/// Default time budget per copy count: a third of UnixBench's ~28 minutes.
const DEFAULT_MAX_TIME_S: f64 = 540.0;

fn parse_pct(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => kurabe_model::plan::parse_fraction(&format!("{}%", p.trim()))?,
        // A bare number is a percentage here, as in `--noise 2`.
        None => kurabe_model::plan::parse_fraction(&format!("{t}%"))?,
    };
    Ok(v)
}

fn parse_secs(s: &str) -> Result<f64, String> {
    kurabe_model::plan::parse_duration(s).map(|d| d.as_secs_f64())
}

fn run_bench(a: RunArgs) -> anyhow::Result<ExitCode> {
    let cfg = config(&a)?;
    super::check_outputs(&[("-o", a.output.as_deref())])?;
    let stop = crate::signal::install_stop()?;
    // One step per test and copy count; a step starts at its first pass.
    let steps = (cfg.tests.len() * cfg.copies.len()) as u64;
    let bar = crate::progress::counter(steps, "tests", crate::progress::wanted(true));
    let mut started = 0u64;
    let mut progress = |p: kurabe_system::Progress<'_>| {
        if p.pass == 1 {
            // The steps before this one are done.
            bar.set_position(started.min(steps));
            started += 1;
        }
        let of = if p.passes > 0 {
            format!("/{}", p.passes)
        } else {
            String::new()
        };
        bar.set_message(format!(
            "{} x {}  pass {}{of}",
            p.copies, p.test.name, p.pass
        ));
    };
    let result = kurabe_system::run(&cfg, &stop, &mut progress);
    bar.finish_and_clear();
    let report = result?;
    write_out(a.output.as_deref(), |w| render_report(&report, a.format, w))?;
    if !report.interrupted {
        a.save.save_if_asked(
            kurabe_model::record::ResultKind::System,
            &format!("system {}", report.host),
            &report,
        )?;
    }
    if report.interrupted {
        eprintln!("kurabe: interrupted; the report holds the tests that finished");
        return Ok(crate::signal::exit_code());
    }
    Ok(ExitCode::SUCCESS)
}

fn render_report(r: &SystemReport, f: Format, w: &mut dyn Write) -> std::io::Result<()> {
    renderer::<SystemReport>(f).render(r, w)
}

/// The renderer of `format`, for a system report or a comparison.
fn renderer<R>(format: Format) -> Box<dyn Render<R>>
where
    Terminal: Render<R>,
    Markdown: Render<R>,
    Json: Render<R>,
{
    match format {
        Format::Text => Box::new(Terminal { color: false }),
        Format::Md => Box::new(Markdown),
        Format::Json => Box::new(Json),
    }
}

fn run_import(a: ImportArgs) -> anyhow::Result<ExitCode> {
    let report = load_unixbench(&a.file)?;
    write_out(a.output.as_deref(), |w| render_report(&report, a.format, w))?;
    a.save.save_if_asked(
        kurabe_model::record::ResultKind::Unixbench,
        &format!("unixbench {}", a.file.display()),
        &report,
    )?;
    Ok(ExitCode::SUCCESS)
}

fn load_unixbench(path: &Path) -> anyhow::Result<SystemReport> {
    let text = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let text = String::from_utf8_lossy(&text);
    import::parse(&text).with_context(|| format!("{}", path.display()))
}

/// A kurabe JSON result, or a UnixBench text report imported on the fly.
fn load_any(path: &Path) -> anyhow::Result<SystemReport> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let trimmed = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if trimmed == Some(&b'{') {
        let r: SystemReport = serde_json::from_slice(&bytes).with_context(|| {
            format!(
                "{} is JSON but not a kurabe system result (from 'kurabe system --format json' or 'kurabe system import')",
                path.display()
            )
        })?;
        if r.schema_version > kurabe_model::SCHEMA_VERSION {
            bail!(
                "{} has schema_version {}, newer than this kurabe understands ({}); upgrade kurabe",
                path.display(),
                r.schema_version,
                kurabe_model::SCHEMA_VERSION
            );
        }
        return Ok(r);
    }
    load_unixbench(path)
}

fn run_compare(a: CompareArgs) -> anyhow::Result<ExitCode> {
    if !(a.noise.is_finite() && a.noise > 0.0 && a.noise < 100.0) {
        bail!(
            "--noise {} is out of range; give a percentage between 0 and 100, e.g. 2",
            a.noise
        );
    }
    let ra = load_any(&a.a)?;
    let rb = load_any(&a.b)?;
    let labels = (a.a.display().to_string(), a.b.display().to_string());
    let c: SystemCompare = compare::compare(&ra, &rb, (&labels.0, &labels.1), a.noise / 100.0);
    if c.runs.is_empty() {
        bail!(
            "{} and {} have no copy count in common ({:?} vs {:?}); compare runs made with the same -c",
            labels.0,
            labels.1,
            ra.runs.iter().map(|r| r.copies).collect::<Vec<_>>(),
            rb.runs.iter().map(|r| r.copies).collect::<Vec<_>>()
        );
    }
    write_out(a.output.as_deref(), |w| {
        renderer::<SystemCompare>(a.format).render(&c, w)
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Render to stdout, or to `path` through the one file writer (a failure
/// never leaves a half-written result).
fn write_out(
    path: Option<&Path>,
    render: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    match path {
        None => {
            let stdout = std::io::stdout();
            let mut lock = stdout.lock();
            render(&mut lock)?;
            lock.flush()?;
        }
        Some(p) => write_with(p, render).context("-o")?,
    }
    Ok(())
}
