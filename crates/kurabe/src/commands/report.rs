//! `kurabe report ID`: one experiment from the store as a terminal table,
//! Markdown, JSON, CSV or a self-contained HTML page with charts.
//!
//! Building, rendering and writing (atomically, so a reader never sees half
//! a report) are `kurabe-report`'s; this file picks the store and the
//! renderer, coloured where `kurabe_report::write::colour_for` says stdout
//! takes colour.

use std::process::ExitCode;

use crate::flags::format;
use kurabe_report::write::colour_for;
use kurabe_report::{write_rendered, Format};
use kurabe_store::access::{experiment, open_existing, parse_id};

/// Arguments of `kurabe report`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Experiment id from `kurabe results list` (`e12`, or `12`).
    pub id: String,
    /// Output format: text (the comparison table), md (Markdown, ready to paste into an issue or a blog), json (the report model, schema/experiment-report.schema.json), csv (one row per workload × metric × variant) or html (one self-contained page with SVG charts).
    #[arg(long, value_parser = format(&["text", "md", "json", "csv", "html"]), default_value = "text")]
    pub format: Format,
    #[command(flatten)]
    pub out: crate::flags::OutputArg,
    #[command(flatten)]
    pub store: crate::flags::StoreArg,
}

/// Run `kurabe report`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let store = open_existing(args.store.store.as_deref())?;
    let exp = experiment(&store, parse_id(&args.id)?)?;
    let report = kurabe_report::experiment_report(&exp);
    let renderer = kurabe_report::renderer(args.format, colour_for(args.out.path()));
    write_rendered(args.out.path(), &*renderer, &report)?;
    if let Some(path) = args.out.path() {
        crate::tell(kurabe_model::notice::Notice::Wrote {
            path: path.to_owned(),
        });
    }
    Ok(ExitCode::SUCCESS)
}
