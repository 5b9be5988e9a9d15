//! `kurabe check EXPERIMENT --baseline BRANCH|REV|EXPERIMENT`: the CI gate.
//! The experiment against the pooled runs of its baseline's recent
//! history (same plan, same host fingerprint); exit 1 on any "worse".
//!
//! Choosing the baseline experiments, comparing and rendering are
//! `kurabe-report`'s; this file reads the store and picks the exit status.

use std::process::ExitCode;

use anyhow::bail;
use kurabe_model::record::Entry;
use kurabe_report::baseline::baseline;
use kurabe_report::{check_report, results_as_experiments, CheckInput};
use kurabe_store::series::plan_or_label;

use crate::flags::format;
use kurabe_report::write::check_outputs;
use kurabe_report::{write_rendered, Format};
use kurabe_store::access::{open_existing, parse_id};

/// Arguments of `kurabe check`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The experiment to check (`e42`), usually the one `kurabe run` just stored.
    pub experiment: String,
    /// What to compare against: a branch, a commit (4+ hex digits) or a --rev label recorded with earlier experiments of the same plan, or an experiment id (`e40`: it and the ones before it).
    #[arg(long, value_name = "BRANCH|REV|EXPERIMENT")]
    pub baseline: String,
    /// Pool the runs of the baseline's last N experiments on the same host fingerprint.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub last: u32,
    /// Output format: text, md (a comment-ready table, improvements too) or json (schema/check.schema.json).
    #[arg(long, value_parser = format(&["text", "md", "json"]), default_value = "text")]
    pub format: Format,
    #[command(flatten)]
    pub out: crate::flags::OutputArg,
    #[command(flatten)]
    pub store: crate::flags::StoreArg,
}

/// Run `kurabe check`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Some(renderer) = kurabe_report::check_renderer(args.format) else {
        bail!("--format: kurabe check writes text, md or json");
    };
    check_outputs(&[("-o", args.out.path())])?;
    let store = open_existing(args.store.store.as_deref())?;
    let id = parse_id(&args.experiment)?;
    let Entry::Experiment(exp) = store.get(id)? else {
        bail!("{id} is a saved result; kurabe check takes an experiment (e…)");
    };
    let history = plan_or_label(&store, &exp.name, results_as_experiments)?;
    let base = baseline(&exp, history, &args.baseline, args.last as usize)?;
    let report = check_report(CheckInput {
        experiment: &exp,
        baseline: &args.baseline,
        history: &base,
    });
    write_rendered(args.out.path(), &*renderer, &report)?;
    Ok(ExitCode::from(u8::from(report.worse > 0)))
}
