//! `kurabe run PLAN.toml`: variants × workloads × rounds, stored, with verdicts.
//!
//! Loads and checks the plan (a bad plan exits 2 with `file:line: field:
//! message`), opens the results store, hands both to the runner in
//! `kurabe-lab`, prints progress on stderr (or, with `--tui`, draws each
//! http run live and prints the progress lines after; `--prometheus-addr`
//! serves them: `crate::live`) and, at the end, the stored
//! experiment as `kurabe report` renders it (kurabe-report: variant × metric,
//! ratio to the baseline, 95 % interval, verdict) followed by the `[[check]]`
//! results. Exit 0; 1 when a check failed, the experiment stopped on a
//! failed run, or a variant × workload has no successful run; 99 when a
//! variant failed one of its workload's `thresholds` (each run judged); 130 on Ctrl-C or `q` in the live view, 143 on SIGTERM, 129 on SIGHUP (finished runs are kept, the experiment is
//! marked interrupted); 2 on setup errors.

use std::path::PathBuf;
use std::process::ExitCode;

use kurabe_lab::prepare::parse_set;
use kurabe_lab::Outcome;
use kurabe_model::notice::Notice;
use kurabe_report::escape;
use kurabe_report::progress::{bisect_event_line, outcome_messages, report_with_checks};
use kurabe_store::Store;

use crate::flags::format;
use crate::live::Progress;
use kurabe_report::write::{check_outputs, colour_for, write_output};
use kurabe_report::Format;

/// Arguments of `kurabe run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plan file (TOML): target, variants, workloads, checks. Programs it starts run in the plan file's folder, or in its `cwd` resolved against that folder. See examples/quickstart.toml. Limits: a regular file of at most 1 MiB, at most 10000 variants ([[variant]] × [matrix]) and 100000 runs (variants × workloads × rounds).
    pub plan: PathBuf,
    #[command(flatten)]
    pub store: crate::flags::StoreArg,
    /// Rounds to run, overriding the plan's `repeat` (3 or more give an interval).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100000))]
    pub repeat: Option<u32>,
    /// Seed of the interleaved run order, overriding the plan's (default: drawn at start, recorded).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub confident: crate::flags::ConfidentArgs,
    /// Format of the final report (html: a self-contained page with charts; use -o).
    #[arg(long, value_parser = format(&["text", "md", "json", "csv", "html"]), default_value = "text")]
    pub format: Format,
    #[command(flatten)]
    pub out: crate::flags::OutputArg,
    /// Also write the report as a self-contained HTML page with charts to this file (atomically), whatever --format says.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub quiet: crate::flags::QuietArg,
    /// Fill the placeholder {KEY} with VALUE wherever it appears in the plan (repeatable): binary paths from CI, a commit id, a work size. The stored plan is the filled one.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    pub set: Vec<(String, String)>,
    /// Check the plan and print the run schedule (variants × workloads × rounds, in order, and the estimated duration) without running anything.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub rev: crate::flags::RevArg,
    #[command(flatten)]
    pub live: crate::live::LiveArgs,
    #[command(flatten)]
    pub profile: crate::flags::ProfileArg,
}

/// Run `kurabe run`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (plan, mut opts) = kurabe_lab::prepare::prepare(&args.plan, &args.set)?;
    if args.dry_run {
        let schedule = kurabe_lab::dry_run::dry_run(&plan, args.repeat, args.seed);
        let text = kurabe_report::progress::dry_run_text(&schedule);
        write_output(None, &text)?;
        return Ok(ExitCode::SUCCESS);
    }
    args.live.check(Some(&plan))?;
    check_outputs(&[("-o", args.out.path()), ("--html", args.html.as_deref())])?;
    opts.profile = args.profile.profiling(args.quiet.quiet)?;
    let mut store = kurabe_store::access::open_or_create(args.store.store.as_deref())?;
    // A second signal need not wait for the cleanup: the forced
    // exit kills every process kurabe started first.
    let stop = crate::signal::install_forceable()?;
    match prepare_revisions(&plan, &opts.plan_dir, &stop, args.quiet.quiet) {
        Ok(w) => opts.worktrees = w,
        Err(kurabe_lab::git::GitError::Interrupted(_)) => return Ok(crate::signal::exit_code()),
        Err(e) => return Err(e.into()),
    }
    (opts.seed, opts.repeat) = (args.seed, args.repeat);
    opts.more_rounds = args.confident.more_rounds();
    opts.rev = args.rev.current();
    let name = args.plan.file_name().unwrap_or(args.plan.as_os_str());
    let progress = Progress {
        quiet: args.quiet.quiet,
        title: format!("kurabe run {}", name.to_string_lossy()),
        bar: &|bar, e| bar.event(e),
        held: bisect_event_line,
    };
    let outcome =
        crate::live::run_experiment(&plan, &mut store, opts, &stop, &args.live, progress)?;
    let thresholds_failed = write_reports(&args, &store, &outcome)?;
    let o = &outcome;
    for line in outcome_messages(&o.checks, o.stopped_by.as_deref(), &o.failed_cells) {
        eprintln!("{line}");
    }
    Ok(crate::exit(outcome.ending(thresholds_failed)))
}

/// Check out and build every variant's `rev` (cached), saying which on stderr.
fn prepare_revisions(
    plan: &kurabe_model::plan::Plan,
    plan_dir: &std::path::Path,
    stop: &std::sync::Arc<kurabe_stop::Stop>,
    quiet: bool,
) -> Result<std::collections::BTreeMap<String, PathBuf>, kurabe_lab::git::GitError> {
    kurabe_lab::git::prepare_revisions(plan, plan_dir, stop, &mut |p| {
        if !quiet {
            let line = kurabe_report::progress::revision_line(p);
            eprintln!("{}", escape::terminal_lines(&line));
        }
    })
}

/// The final report to stdout or `-o`, and the HTML page to `--html`;
/// the notice naming the failed thresholds, when one failed.
fn write_reports(args: &Args, store: &Store, outcome: &Outcome) -> anyhow::Result<Option<Notice>> {
    let exp = kurabe_store::access::recorded_experiment(store, outcome.experiment)?;
    let report = kurabe_report::experiment_report(&exp);
    let colour = colour_for(args.out.path());
    let body = report_with_checks(&report, &outcome.checks, args.format, colour);
    write_output(args.out.path(), &body)?;
    if let Some(path) = &args.out.output {
        crate::tell(kurabe_model::notice::Notice::Wrote { path: path.clone() });
    }
    if let Some(path) = &args.html {
        eprintln!("{}", kurabe_report::write_html_page(&exp, path)?);
    }
    Ok(kurabe_report::thresholds::failed_line(&report))
}
