//! `kurabe history PLAN|LABEL`: a plan's (or a saved-result label's)
//! metrics over its experiments on one host fingerprint, with change points.
//!
//! Reading the store is here; building the history (change points,
//! verdicts) and rendering it are `kurabe-report`'s.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use kurabe_report::{history_to_show, results_as_experiments, Hosts};
use kurabe_store::series::plan_or_label;

use crate::flags::format;
use kurabe_report::write::{check_outputs, write_file};
use kurabe_report::{write_rendered, Format};
use kurabe_store::access::open_existing;

/// Arguments of `kurabe history`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Plan name (as `kurabe results list` shows it) or a saved result's label.
    pub name: String,
    /// Output format (json: schema/history.schema.json; html: every series charted with its changes marked).
    #[arg(long, value_parser = format(&["text", "md", "json", "csv", "html"]), default_value = "text")]
    pub format: Format,
    #[command(flatten)]
    pub out: crate::flags::OutputArg,
    /// Also write the history as a self-contained HTML page with charts to this file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Only experiments on this host fingerprint [default: the newest experiment's].
    #[arg(long, value_name = "FINGERPRINT", conflicts_with = "all_hosts")]
    pub host: Option<String>,
    /// Experiments of every machine in one series (the machine's changes then show as changes).
    #[arg(long)]
    pub all_hosts: bool,
    #[command(flatten)]
    pub store: crate::flags::StoreArg,
}

/// Run `kurabe history`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    check_outputs(&[("-o", args.out.path()), ("--html", args.html.as_deref())])?;
    let store = open_existing(args.store.store.as_deref())?;
    let experiments = plan_or_label(&store, &args.name, results_as_experiments)?;
    let hosts = Hosts::from_flags(args.host.as_deref(), args.all_hosts);
    let report = history_to_show(&args.name, &experiments, &hosts, args.host.as_deref())
        .map_err(anyhow::Error::msg)?;
    write_rendered(
        args.out.path(),
        &*kurabe_report::history_renderer(args.format),
        &report,
    )?;
    if let Some(path) = &args.html {
        let html = kurabe_report::to_string(&kurabe_report::HistoryHtml::default(), &report);
        write_file(path, html.as_bytes()).context("--html")?;
    }
    Ok(ExitCode::SUCCESS)
}
