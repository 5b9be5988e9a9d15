//! `kurabe site -o DIR`: the whole store as a static dashboard (see
//! `kurabe_report::site_pages`), regenerated incrementally: a page is
//! rewritten only when its text changed.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use kurabe_model::record::Experiment;
use kurabe_report::write::write_if_changed;

use crate::store::open_existing;

/// Arguments of `kurabe site`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory to write the site into (created if missing); open DIR/index.html, no server needed.
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: PathBuf,
    /// Results store (file, sqlite:PATH or postgres://…) [default: $KURABE_STORE, else $XDG_DATA_HOME/kurabe/results.db].
    #[arg(long, value_name = "PATH|URL")]
    pub store: Option<PathBuf>,
}

/// Run `kurabe site`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let store = open_existing(args.store.as_deref())?;
    let mut names: Vec<String> = Vec::new();
    for e in store
        .list()?
        .into_iter()
        .rev()
        .filter(|e| e.kind == "experiment")
    {
        if !names.contains(&e.name) {
            names.push(e.name);
        }
    }
    let plans: Vec<(String, Vec<Experiment>)> = names
        .into_iter()
        .map(|n| Ok((n.clone(), super::history::plan_or_label(&store, &n)?)))
        .collect::<anyhow::Result<_>>()?;
    let pages = kurabe_report::site_pages(&plans);
    let (mut written, mut same) = (0, 0);
    for page in &pages {
        let path = args.output.join(&page.path);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("-o: cannot create {}", dir.display()))?;
        }
        if write_if_changed(&path, page.html.as_bytes()).context("-o")? {
            written += 1;
        } else {
            same += 1;
        }
    }
    eprintln!(
        "kurabe: site of {} plan(s) in {}: {written} page(s) written, {same} unchanged; open {}",
        plans.len(),
        args.output.display(),
        args.output.join("index.html").display()
    );
    Ok(ExitCode::SUCCESS)
}
