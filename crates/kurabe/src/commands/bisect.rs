//! `kurabe bisect PLAN --good REV --bad REV --metric M`: the first commit
//! where a metric changes.
//!
//! Thin: turns the flags into [`kurabe_lab::bisect_run::BisectSettings`],
//! calls the search (which builds each commit once in a cached worktree
//! and measures it in interleaved experiments, recorded in the store) and
//! renders the answer with kurabe-report. Exit 0 when a commit (or a range
//! narrowed by unbuildable commits) is found, 1 when good and bad do not
//! differ beyond the noise band, 2 on bad input (unknown revision, good not
//! an ancestor of bad, an endpoint that does not build, outside git), 130
//! on Ctrl-C.

use std::path::PathBuf;
use std::process::ExitCode;

use kurabe_lab::bisect_run::{run_bisect, BisectSettings};
use kurabe_lab::prepare::parse_set;
use kurabe_lab::Event;
use kurabe_report::progress::bisect_event_line;
use kurabe_report::write::colour_for;
use kurabe_report::{bisect_renderer, write_rendered, Format};

use crate::flags::format;

/// Arguments of `kurabe bisect`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plan file: its [target], [build] and the variant and workload to measure. It must be inside the git work tree to search.
    pub plan: PathBuf,
    /// A revision where the metric is as it should be (older).
    #[arg(long, value_name = "REV")]
    pub good: String,
    /// A later revision where the metric has changed.
    #[arg(long, value_name = "REV")]
    pub bad: String,
    /// The metric to follow (a catalogue name such as cpu_ms_per_request or wall_time_s).
    #[arg(long, value_name = "METRIC")]
    pub metric: String,
    /// The plan's variant to run every commit as [default: the first].
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    /// The plan's workload to measure [default: the first that selects --metric].
    #[arg(long, value_name = "NAME")]
    pub workload: Option<String>,
    /// Rounds of each step's first experiment (3 or more give an interval).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: u32,
    /// Most rounds one commit gets when its verdicts do not settle (rounds double until then); after that a step is decided by the nearer mean and reported unsure.
    #[arg(long, value_name = "N", default_value_t = 24, value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub max_rounds: u32,
    #[command(flatten)]
    pub store: crate::flags::StoreArg,
    /// Fill the placeholder {KEY} with VALUE wherever it appears in the plan (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    pub set: Vec<(String, String)>,
    /// Output format: text (steps and answer for a terminal) or json (the search, schema/bisect-report.schema.json).
    #[arg(long, value_parser = format(&["text", "json"]), default_value = "text")]
    pub format: Format,
    #[command(flatten)]
    pub quiet: crate::flags::QuietArg,
}

/// Run `kurabe bisect`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // A step measures several commits at once: no one revision is "the
    // code measured" (`opts.rev` stays unset); the variants are named by commit.
    let (plan, opts) = kurabe_lab::prepare::prepare(&args.plan, &args.set)?;
    let mut store = kurabe_store::access::open_or_create(args.store.store.as_deref())?;
    // A second signal need not wait for the cleanup: the forced
    // exit kills every process kurabe started first.
    let stop = crate::signal::install_forceable()?;
    let settings = settings(&args, opts);
    let mut progress = |e: &Event<'_>| match bisect_event_line(e) {
        Some(line) if !args.quiet.quiet => eprintln!("{line}"),
        _ => {}
    };
    let report = match run_bisect(&plan, &settings, &mut store, &stop, &mut progress) {
        Ok(r) => r,
        Err(e) => return e.ending().map(crate::exit).ok_or_else(|| e.into()),
    };
    let renderer = bisect_renderer(args.format, colour_for(None));
    write_rendered(None, &*renderer, &report)?;
    Ok(crate::exit(kurabe_lab::bisect_run::ending(&report)))
}

/// The search's settings from the flags and the plan's run options.
fn settings(args: &Args, opts: kurabe_lab::RunOptions) -> BisectSettings {
    BisectSettings {
        good: args.good.clone(),
        bad: args.bad.clone(),
        metric: args.metric.clone(),
        variant: args.variant.clone(),
        workload: args.workload.clone(),
        rounds: args.rounds,
        max_rounds: args.max_rounds,
        opts,
    }
}
