//! `kurabe http URL_A URL_B …`: an A/B of endpoints in interleaved rounds.
//!
//! The flags are checked exactly as for one URL ([`super::args::early`],
//! so the same mistakes give the same messages), then become an in-memory
//! plan (`kurabe_lab::http_compare`): one variant per URL, one http workload
//! that is the flags' `LoadSpec` (every load flag, `-b -B -X -E -f -Z`
//! included), `--rounds` rounds. kurabe-lab's
//! runner interleaves the rounds, probes the server listening on a
//! loopback URL's port for CPU and memory (one note names the URLs it
//! cannot measure) and records every run; the report is the experiment's:
//! each URL's figures and, against the first, ratios with 95 % intervals
//! and verdicts. `--save` keeps the experiment in the results store;
//! without it, a private store in a temporary directory is used and removed.

use std::process::ExitCode;

use anyhow::Context;
use kurabe_http::load::check_spec;
use kurabe_lab::http_compare::{self, AbSpec, DEFAULT_ROUNDS};
use kurabe_lab::http_runs::refuse_for_compare;
use kurabe_lab::Event;
use kurabe_model::given::Given;
use kurabe_model::load::HttpVersion;
use kurabe_model::plan::Plan;
use kurabe_store::access::{recorded_experiment, CannotOpen, RunStore};
use kurabe_store::Store;

use super::args::{early, Args};
use crate::live::Progress;
use kurabe_model::notice::Notice;
use kurabe_report::bars::RunsBar;
use kurabe_report::http_compare_doc;
use kurabe_report::progress::ab_event_line;
use kurabe_report::write::{check_outputs, colour_for, write_output};

/// Run `kurabe http` with two or more URLs.
pub fn run(args: &Args, given: &Given) -> anyhow::Result<ExitCode> {
    let urls: Vec<String> = args.url.iter().chain(&args.more_urls).cloned().collect();
    refuse_for_compare(given, args.save.save.as_deref())?;
    let versions = super::args::url_versions(args)?;
    let names = http_compare::names(&urls, &versions)?;
    let plan = plan(args, given, (&urls, &versions))?;
    check_outputs(&[("-o", args.out.path())])?;
    // Without --save, a private store in a directory removed at the end.
    let mut store = RunStore::open(args.save.store.store.as_deref(), args.save.save.is_some())
        .map_err(CannotOpen::Store)?;
    let outcome = run_plan(args, (&plan, &urls), &mut store.store)?;
    let exp = recorded_experiment(&store.store, outcome.experiment)?;
    let rounds = args.rounds.unwrap_or(DEFAULT_ROUNDS);
    let colour = colour_for(args.out.path());
    let doc = http_compare_doc(&exp, &names, rounds, args.format, colour);
    write_output(args.out.path(), &doc)?;
    if args.save.save.is_some() {
        crate::tell(Notice::SavedExperiment {
            id: outcome.experiment,
        });
    }
    Ok(crate::exit(http_compare::ending(&outcome, &names)))
}

/// The flags checked as for one URL (same rules, same messages), then the
/// plan: every URL gets the flags' one load spec.
fn plan(
    args: &Args,
    given: &Given,
    (urls, versions): (&[String], &[HttpVersion]),
) -> anyhow::Result<Plan> {
    let spec = if args.find_rate.find_rate {
        super::find_rate::checked(args, given)?.0
    } else {
        let checked = early(args).and_then(|e| e.finish(args));
        checked
            .with_context(|| format!("checking {}", urls[0]))?
            .spec
    };
    // Each URL's own version must make sense of the same flags too.
    for (url, version) in urls.iter().zip(versions) {
        check_spec(version.apply(&spec), &super::args::names(args), 1)
            .with_context(|| format!("checking {url} over HTTP/{}", version.name()))?;
    }
    Ok(http_compare::plan(&AbSpec {
        urls,
        versions,
        load: &spec,
        rounds: args.rounds.unwrap_or(DEFAULT_ROUNDS),
    })?)
}

/// Run the plan into `store`, with progress lines on stderr unless `-q`.
fn run_plan(
    args: &Args,
    (plan, urls): (&Plan, &[String]),
    store: &mut Store,
) -> anyhow::Result<kurabe_lab::Outcome> {
    let mut opts = kurabe_lab::prepare::options_here(plan, args.save.rev.current())?;
    opts.profile = args.profile.profiling(args.quiet)?;
    let stop = crate::signal::install_stop()?;
    // The loads run in this process and the store's writes are
    // transactions: a forced exit leaves nothing behind.
    crate::signal::force_exit_on_second_signal();
    // On a terminal a bar over the runs, with the lines above it.
    let progress = Progress {
        quiet: args.quiet,
        title: format!("kurabe http {}", urls.join(" ")),
        bar: &|bar: &RunsBar, e: &Event<'_>| {
            bar.count(e);
            bar.line(ab_event_line(e));
        },
        held: ab_event_line,
    };
    crate::live::run_experiment(plan, store, opts, &stop, &args.live, progress)
}
