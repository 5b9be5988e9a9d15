//! `kurabe site -o DIR`: the whole store as a static dashboard (see
//! `kurabe_report::site_pages`), regenerated incrementally: a page is
//! rewritten only when its text changed.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use kurabe_report::results_as_experiments;
use kurabe_report::site_files::write_site;
use kurabe_store::series::all_plans;

use kurabe_store::access::open_existing;

/// Arguments of `kurabe site`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory to write the site into (created if missing); open DIR/index.html, no server needed.
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: PathBuf,
    #[command(flatten)]
    pub store: crate::flags::StoreArg,
}

/// Run `kurabe site`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let store = open_existing(args.store.store.as_deref())?;
    let plans = all_plans(&store, results_as_experiments)?;
    let pages = kurabe_report::site_pages(&plans);
    let (written, same) = write_site(&args.output, &pages).context("-o")?;
    crate::tell(kurabe_model::notice::Notice::Site {
        plans: plans.len(),
        dir: args.output.clone(),
        written,
        unchanged: same,
    });
    Ok(ExitCode::SUCCESS)
}
