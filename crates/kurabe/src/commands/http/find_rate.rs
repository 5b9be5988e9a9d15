//! `kurabe http URL --find-rate --slo 'p(99)<50ms'`: the highest open-model
//! rate the server sustains within the SLOs, with its interval and the
//! latency curve (in text, JSON, or with -w an HTML page that draws it).
//!
//! Owns the order of the checks, the step lines on stderr and the exit
//! status: 0 with an answer, 1 when even the lowest rate breaks an SLO,
//! 128 + the signal when interrupted. The search is `kurabe_lab::find_rate`'s,
//! its rules `kurabe_model::capacity`'s, the flags that contradict it
//! (it sets the rate and each step's length itself)
//! `kurabe_lab::http_runs`' and `kurabe_report::capacity_format`'s.

use std::process::ExitCode;

use anyhow::bail;
use kurabe_lab::find_rate::{check_search, DEFAULT_CONNECTIONS};
use kurabe_lab::http_runs::refuse_for_search;
use kurabe_lab::saved_search::keep_search;
use kurabe_model::capacity::{FindRateNames, Settings};
use kurabe_model::given::Given;
use kurabe_report::write::{check_outputs, write_output};
use kurabe_report::{capacity_format, capacity_renderer, to_string, Format};

use kurabe_model::load::LoadSpec;

use super::args::{load_spec, names, Args};

/// Run the search of one URL.
pub fn run(args: &Args, given: &Given) -> anyhow::Result<ExitCode> {
    let (spec, settings, format) = checked(args, given)?;
    check_outputs(&[("-o", args.out.path())])?;
    args.save.check_store()?;
    let interrupt = crate::live::stop_for_load()?;
    let quiet = args.quiet;
    let report = kurabe_lab::find_rate::find_rate(&spec, &settings, &interrupt, &mut |s| {
        if !quiet {
            eprintln!("kurabe: {}", kurabe_report::progress::capacity_step_line(s));
        }
    })?;
    // -w: the page in place of the text, as ab's -w prints its HTML table.
    let rendered = to_string(&*capacity_renderer(format), &report);
    write_output(args.out.path(), &rendered)?;
    if args.save.save.is_some() {
        let (store, rev) = (args.save.store.store.as_deref(), args.save.rev.current());
        crate::tell(keep_search(store, &spec, rev, (&report, &settings))?);
    }
    Ok(crate::exit(kurabe_lab::find_rate::ending(report.verdict)))
}

/// The load every step runs (with its `find_rate`), the search's
/// settings and the report's format, checked as the first step will run,
/// errors naming the flags; the flags a search sets, judges or writes
/// itself refused (`kurabe_lab::http_runs`).
pub fn checked(args: &Args, given: &Given) -> anyhow::Result<(LoadSpec, Settings, Format)> {
    let Some(find) = args.find_rate.spec() else {
        bail!("internal: --find-rate expected");
    };
    let settings = find.settings(&FindRateNames::FLAGS)?;
    refuse_for_search(given, args.save.save.as_deref())?;
    let format = capacity_format(args.format, args.html)?;
    let spec = LoadSpec {
        concurrency: args.concurrency.unwrap_or(DEFAULT_CONNECTIONS),
        ..load_spec(args)?
    };
    // The search sets each step's rate and length (-t and --rate were refused).
    Ok((
        check_search(spec, &settings, &names(args))?,
        settings,
        format,
    ))
}
