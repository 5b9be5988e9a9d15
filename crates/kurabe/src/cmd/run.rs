//! `kurabe run PLAN.toml`: variants × workloads × rounds, stored, with verdicts.
//!
//! Loads and checks the plan (a bad plan exits 2 with `file:line: field:
//! message`), opens the results store, hands both to the runner in
//! `kurabe-lab`, prints progress on stderr and, at the end, the stored
//! experiment as `kurabe report` renders it (kurabe-report: variant × metric,
//! ratio to the baseline, 95 % interval, verdict) followed by the `[[check]]`
//! results. Exit 0; 1 when a check failed, the experiment stopped on a
//! failed run, or a variant × workload has no successful run; 130 on Ctrl-C, 143 on SIGTERM, 129 on SIGHUP (finished runs are kept, the experiment is
//! marked interrupted); 2 on setup errors.

mod dryrun;

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use kurabe_lab::analysis::CheckResult;
use kurabe_lab::{Event, Outcome, RunOptions};
use kurabe_model::record::{Entry, EntryId, ExperimentStatus, RunStatus};
use kurabe_model::stats::Unit;
use kurabe_store::Store;

use crate::flags::parse_duration;
use crate::output::{colour_stdout, ReportFormat as Format};
use kurabe_report::escape;
use kurabe_report::write::write_file;

/// Arguments of `kurabe run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plan file (TOML): target, variants, workloads, checks. Programs it starts run in the plan file's folder, or in its `cwd` resolved against that folder. See examples/quickstart.toml. Limits: a regular file of at most 1 MiB, at most 10000 variants ([[variant]] × [matrix]) and 100000 runs (variants × workloads × rounds).
    pub plan: PathBuf,
    /// Results store file (SQLite) [default: $KURABE_STORE, else $XDG_DATA_HOME/kurabe/results.db].
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// Rounds to run, overriding the plan's `repeat` (3 or more give an interval).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100000))]
    pub repeat: Option<u32>,
    /// Seed of the interleaved run order, overriding the plan's (default: drawn at start, recorded).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Keep adding rounds until every headline metric (every metric a workload selects) is settled: better, worse, or within noise with the whole interval inside the band (not inconclusive). To keep repeated looks honest the stop decision reads a 99 % interval (Bonferroni over at most 5 looks: after the plan's `repeat` rounds, then each time the rounds have doubled); the report shows the normal 95 % verdicts.
    #[arg(long)]
    pub until_confident: bool,
    /// Time budget of --until-confident for the whole experiment ("10m", "90s").
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "10m", requires = "until_confident")]
    pub max_time: Duration,
    /// Format of the final report (html: a self-contained page with charts; use -o).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the final report to this file (atomically) instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write the report as a self-contained HTML page with charts to this file (atomically), whatever --format says.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// No progress lines on stderr.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Fill the placeholder {KEY} with VALUE wherever it appears in the plan (repeatable): binary paths from CI, a commit id, a work size. The stored plan is the filled one.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    pub set: Vec<(String, String)>,
    /// Check the plan and print the run schedule (variants × workloads × rounds, in order, and the estimated duration) without running anything.
    #[arg(long)]
    pub dry_run: bool,
    /// Label of the code measured (a CI build id, a tag), stored with the record beside the git commit, branch and dirty flag read from the current directory's work tree.
    #[arg(
        long = "rev",
        value_name = "LABEL",
        env = "KURABE_REV",
        hide_env_values = true
    )]
    pub rev: Option<String>,
}

/// `KEY=VALUE` of --set; KEY as placeholders are written (lowercase, digits, `_`).
pub(crate) fn parse_set(text: &str) -> Result<(String, String), String> {
    let (k, v) = text
        .split_once('=')
        .ok_or_else(|| format!("expected KEY=VALUE, got `{text}`"))?;
    let ident = k.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && k.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !ident {
        return Err(format!(
            "`{k}` is not a placeholder name: use lowercase letters, digits and _, as in {{commit}}"
        ));
    }
    Ok((k.to_owned(), v.to_owned()))
}

/// Run `kurabe run`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let vars = args.set.iter().cloned().collect();
    let (plan, plan_text) = kurabe_lab::load_plan_filled(&args.plan, &vars)?;
    kurabe_lab::check_supported(&plan)?;
    if args.dry_run {
        let rounds = args.repeat.unwrap_or(plan.repeat).max(1);
        let text = dryrun::render(&plan, rounds, args.seed.or(plan.seed));
        std::io::stdout().lock().write_all(text.as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    super::check_outputs(&[
        ("-o", args.output.as_deref()),
        ("--html", args.html.as_deref()),
    ])?;
    let mut store = match &args.store {
        Some(p) => Store::open(p),
        None => Store::open_default(),
    }?;
    let stop = crate::signal::install_stop()?;
    let plan_dir = kurabe_lab::runner::plan_dir(&args.plan);
    let worktrees = match prepare_revisions(&plan, &plan_dir, &stop, args.quiet) {
        Ok(w) => w,
        Err(kurabe_lab::git::GitError::Interrupted(_)) => return Ok(crate::signal::exit_code()),
        Err(e) => return Err(e.into()),
    };
    let opts = RunOptions {
        plan_dir,
        plan_text,
        seed: args.seed,
        repeat: args.repeat,
        kurabe_exe: std::env::current_exe().context("cannot find the kurabe executable")?,
        until_confident: args.until_confident.then_some(args.max_time),
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
        worktrees,
        rev: crate::store::current_rev(args.rev.clone()),
    };
    let quiet = args.quiet;
    let bar = crate::progress::counter(0, "runs", crate::progress::wanted(!quiet));
    let mut progress = |e: &Event<'_>| {
        if bar.is_hidden() {
            if !quiet {
                eprintln!("{}", escape::terminal_lines(&progress_line(e)));
            }
        } else {
            show_on_bar(&bar, e);
        }
    };
    let outcome = kurabe_lab::run_experiment(&plan, &mut store, &opts, &stop, &mut progress)?;
    bar.finish_and_clear();
    let colour = args.output.is_none() && colour_stdout();
    let body = render(&store, &outcome, args.format, colour)?;
    match &args.output {
        Some(path) => {
            write_file(path, &body).context("-o")?;
            eprintln!("wrote {}", path.display());
        }
        None => std::io::stdout().lock().write_all(&body)?,
    }
    if let Some(path) = &args.html {
        let page = render(&store, &outcome, Format::Html, false)?;
        write_file(path, &page).context("--html")?;
        eprintln!("wrote {} (open it in a browser)", path.display());
    }
    for c in outcome.checks.iter().filter(|c| !c.passed) {
        eprintln!("kurabe: check failed: {}", escape::terminal(&c.description));
    }
    if let Some(why) = &outcome.stopped_by {
        eprintln!("kurabe: experiment stopped: {why}");
    }
    for cell in &outcome.failed_cells {
        eprintln!("{}", escape::terminal_lines(&failed_cell_message(cell)));
    }
    Ok(match outcome.status {
        ExperimentStatus::Interrupted => crate::signal::exit_code(),
        ExperimentStatus::Failed => ExitCode::from(1),
        _ if outcome.checks.iter().any(|c| !c.passed) => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    })
}

/// Check out and build every variant's `rev` (cached), saying which on stderr.
pub(crate) fn prepare_revisions(
    plan: &kurabe_model::plan::Plan,
    plan_dir: &std::path::Path,
    stop: &std::sync::Arc<kurabe_model::stop::Stop>,
    quiet: bool,
) -> Result<std::collections::BTreeMap<String, PathBuf>, kurabe_lab::git::GitError> {
    kurabe_lab::git::prepare_revisions(plan, plan_dir, stop, &mut |p| {
        if !quiet {
            let how = if p.built_now { "built" } else { "cached" };
            let line = format!(
                "kurabe: revision {} = {} ({how}) in {}",
                p.rev,
                kurabe_lab::git::short(&p.commit),
                p.dir.display()
            );
            eprintln!("{}", escape::terminal_lines(&line));
        }
    })
}

/// On a terminal: the bar counts finished runs out of the total (which
/// `--until-confident` may raise), names the run in flight, and prints the
/// start line and failed runs above itself.
fn show_on_bar(bar: &indicatif::ProgressBar, e: &Event<'_>) {
    match e {
        Event::Begin { total, .. } => {
            bar.set_length(*total as u64);
            bar.println(escape::terminal_lines(&progress_line(e)));
        }
        Event::RunStart {
            total,
            round,
            variant,
            workload,
            ..
        } => {
            bar.set_length(*total as u64);
            bar.set_message(escape::terminal_lines(&format!(
                "round {}: {variant} / {workload}",
                round + 1
            )));
        }
        Event::RunDone { record, .. } => {
            bar.inc(1);
            if record.status == RunStatus::Failed {
                bar.println(escape::terminal_lines(&progress_line(e)));
            }
        }
        Event::RoundAdded { .. } | Event::Note(_) => {
            bar.println(escape::terminal_lines(&progress_line(e)))
        }
    }
}

pub(crate) fn progress_line(e: &Event<'_>) -> String {
    match e {
        Event::Begin {
            experiment,
            seed,
            total,
        } => format!("kurabe run: experiment {experiment}, {total} runs, seed {seed}"),
        Event::RunStart {
            index,
            total,
            round,
            variant,
            workload,
        } => format!(
            "[{index}/{total}] round {}: {variant} / {workload}",
            round + 1
        ),
        Event::RunDone { index, record } => match record.status {
            RunStatus::Ok => {
                let first = record
                    .metrics
                    .first()
                    .map(|m| format!(": {} {}", m.name, fmt_value(m.value, unit_of(&m.name))))
                    .unwrap_or_default();
                format!("[{index}] ok{first}")
            }
            RunStatus::Failed => format!(
                "[{index}] FAILED: {}",
                record
                    .error_tail
                    .as_deref()
                    .unwrap_or("")
                    .replace('\n', "\n    ")
            ),
        },
        Event::Note(note) => format!("note: {note}"),
        Event::RoundAdded { round } => {
            format!(
                "--until-confident: not settled yet, adding round {}",
                round + 1
            )
        }
    }
}

/// "experiment failed: every run of a / w failed (3 of 3); the last one said:" and its tail, indented.
fn failed_cell_message(cell: &kurabe_lab::FailedCell) -> String {
    let mut s = format!(
        "kurabe: experiment failed: every run of {} / {} failed ({} of {})",
        cell.variant, cell.workload, cell.runs, cell.runs
    );
    if let Some(tail) = &cell.last_error {
        s.push_str("; the last one said:");
        for line in tail.lines() {
            s.push_str("\n    ");
            s.push_str(line);
        }
    }
    s
}

fn unit_of(metric: &str) -> Unit {
    kurabe_model::stats::metric::lookup(metric).map_or(Unit::Count, |m| m.unit)
}

/// A value in its unit, about four significant digits; bytes as MiB.
fn fmt_value(v: f64, unit: Unit) -> String {
    let num = |x: f64| {
        if x.abs() >= 1000.0 {
            format!("{x:.0}")
        } else if x.abs() >= 10.0 {
            format!("{x:.1}")
        } else {
            format!("{x:.3}")
        }
    };
    match unit {
        Unit::Bytes => format!("{} MiB", num(v / (1024.0 * 1024.0))),
        Unit::PerSecond => format!("{}/s", num(v)),
        Unit::Count | Unit::Score => num(v),
        u => format!("{} {}", num(v), u.symbol()),
    }
}

fn check_mark(c: &CheckResult) -> &'static str {
    if c.passed {
        "PASS"
    } else {
        "FAIL"
    }
}

/// The stored experiment rendered by `kurabe-report`, plus the check
/// results under a text or Markdown table (JSON stays the report model).
fn render(store: &Store, o: &Outcome, format: Format, colour: bool) -> anyhow::Result<Vec<u8>> {
    let Entry::Experiment(exp) = store.get(EntryId::Experiment(o.experiment))? else {
        anyhow::bail!("experiment {} vanished from the store", o.experiment);
    };
    let report = kurabe_report::experiment_report(&exp);
    let mut out = Vec::new();
    kurabe_report::renderer(format.into(), colour).render(&report, &mut out)?;
    if matches!(format, Format::Text | Format::Md) && !o.checks.is_empty() {
        let mut s = String::from("\nchecks:\n");
        for c in &o.checks {
            let _ = writeln!(
                s,
                "  {} {}",
                check_mark(c),
                escape::terminal(&c.description)
            );
        }
        out.extend_from_slice(s.as_bytes());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_carry_their_unit() {
        assert_eq!(fmt_value(12345.6, Unit::PerSecond), "12346/s");
        assert_eq!(fmt_value(3.0 * 1048576.0, Unit::Bytes), "3.000 MiB");
        assert_eq!(fmt_value(250.0, Unit::Microseconds), "250.0 µs");
    }
}
