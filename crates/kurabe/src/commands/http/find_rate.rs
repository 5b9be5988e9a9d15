//! `kurabe http URL --find-rate --slo 'p(99)<50ms'`: the highest open-model
//! rate the server sustains within the SLOs, with its interval and the
//! latency curve (in text, JSON, or with -w an HTML page that draws it).
//!
//! Owns the flags that contradict a search (a search sets the rate and
//! each step's length itself), the step lines on stderr and the exit
//! status: 0 with an answer, 1 when even the lowest rate breaks an SLO,
//! 128 + the signal when interrupted. The search is `kurabe_lab::find_rate`'s,
//! its rules `kurabe_model::capacity`'s.

use std::process::ExitCode;

use anyhow::{bail, Context};
use kurabe_lab::find_rate::{check_search, DEFAULT_CONNECTIONS};
use kurabe_lab::http_compare::{self, AbSpec};
use kurabe_lab::http_runs::refuse_for_search;
use kurabe_model::capacity::{CapacityReport, FindRateNames, Settings};
use kurabe_model::given::Given;
use kurabe_report::write::{check_outputs, write_output};
use kurabe_report::{capacity_renderer, to_string, Format};

use kurabe_model::load::LoadSpec;

use super::args::{load_spec, names, Args};

/// Run the search of one URL.
pub fn run(args: &Args, given: &Given) -> anyhow::Result<ExitCode> {
    let (spec, settings) = checked(args, given)?;
    check_outputs(&[("-o", args.out.path())])?;
    args.save.check_store()?;
    let interrupt = crate::signal::install_stop()?;
    crate::signal::force_exit_on_second_signal();
    kurabe_http::raise_fd_limit();
    let quiet = args.quiet;
    let report = kurabe_lab::find_rate::find_rate(&spec, &settings, &interrupt, &mut |s| {
        if !quiet {
            eprintln!("kurabe: {}", kurabe_report::progress::capacity_step_line(s));
        }
    })?;
    write_report(args, &report)?;
    if args.save.save.is_some() {
        save(args, &spec, (&report, &settings))?;
    }
    Ok(crate::exit(kurabe_lab::find_rate::ending(report.verdict)))
}

/// The report to `-o` (or stdout) in `--format`, or with -w as a page.
fn write_report(args: &Args, report: &CapacityReport) -> anyhow::Result<()> {
    // -w: the page in place of the text, as ab's -w prints its HTML table.
    let format = if args.html { Format::Html } else { args.format };
    write_output(
        args.out.path(),
        &to_string(&*capacity_renderer(format), report),
    )?;
    Ok(())
}

/// `--save`: the search kept as the experiment of the one-URL A/B plan
/// (`http: URL`), one run per search, so `history` follows its capacity.
fn save(args: &Args, spec: &LoadSpec, found: (&CapacityReport, &Settings)) -> anyhow::Result<()> {
    let urls = [found.0.url.clone()];
    let plan = http_compare::plan(&AbSpec {
        urls: &urls,
        load: spec,
        rounds: (found.0.searches.len() as u32).max(1),
    })?;
    let opts = kurabe_lab::prepare::options_here(&plan, args.save.rev.current())?;
    let mut store =
        kurabe_store::access::open_or_create(args.save.store.store.as_deref()).context("--save")?;
    let id = kurabe_lab::saved_search::save_search(&mut store, &plan, &opts, found)
        .context("--save: cannot keep the search in the results store")?;
    crate::tell(kurabe_model::notice::Notice::SavedExperiment { id });
    Ok(())
}

/// The load every step runs (with its `find_rate`) and the search's
/// settings, checked as the first step will run, errors naming the flags.
pub fn checked(args: &Args, given: &Given) -> anyhow::Result<(LoadSpec, Settings)> {
    let settings = settings(args, given)?;
    let spec = LoadSpec {
        concurrency: args.concurrency.unwrap_or(DEFAULT_CONNECTIONS),
        ..load_spec(args)?
    };
    // The search sets each step's rate and length (-t and --rate were refused).
    Ok((check_search(spec, &settings, &names(args))?, settings))
}

/// The search's settings from the flags, refusing what contradicts one.
fn settings(args: &Args, given: &Given) -> anyhow::Result<Settings> {
    let Some(find) = args.find_rate.spec() else {
        bail!("internal: --find-rate expected");
    };
    let settings = find.settings(&FindRateNames::FLAGS)?;
    refuse_contradictions(args, given)?;
    Ok(settings)
}

/// Flags a search cannot honour: it sets the rate, the length and the
/// warm-up of every step itself, and judges steps by the SLOs only
/// (`kurabe_lab::http_runs`); then the values it cannot honour.
fn refuse_contradictions(args: &Args, given: &Given) -> anyhow::Result<()> {
    refuse_for_search(given)?;
    if args.html && args.format != Format::Text {
        bail!("-w contradicts --find-rate: -w is the HTML page in place of the text");
    }
    if args.save.save.as_deref().is_some_and(|l| !l.is_empty()) {
        bail!("--save=LABEL contradicts --find-rate: a search is saved as an experiment named after its URL; use --save without a label");
    }
    if !matches!(args.format, Format::Text | Format::Json) {
        bail!("--format with --find-rate: text or json (-w for the HTML page)");
    }
    Ok(())
}
