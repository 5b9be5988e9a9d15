//! `kurabe check EXPERIMENT --baseline BRANCH|REV|EXPERIMENT`: the CI gate.
//! The experiment against the pooled runs of its baseline's recent
//! history (same plan, same host fingerprint); exit 1 on any "worse".
//! `--threshold EXPR` (the grammar of `kurabe http --threshold` and a
//! plan's `thresholds`, one parser) judges the stored http records of an
//! experiment (each run) or of a saved `kurabe http` result, with or
//! without `--baseline`; a failed threshold exits 99 (k6's code).
//!
//! Choosing the baseline experiments, comparing, judging and rendering are
//! `kurabe-report`'s (`check_entry`); this file reads the store and picks
//! the exit status.

use std::process::ExitCode;

use kurabe_report::check_thresholds::{ending, parse_flags};
use kurabe_report::{check_entry, results_as_experiments, Gate};
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
    #[arg(
        long,
        value_name = "BRANCH|REV|EXPERIMENT",
        required_unless_present = "thresholds"
    )]
    pub baseline: Option<String>,
    /// Fail unless THRESHOLD holds on the stored http records (repeatable; the notation of kurabe http --threshold): p(95)<200ms, failed<1%, rate>=1000, checks>99%, p(95){name:checkout}<300ms. Each run of an experiment (e…) is judged, or a saved kurabe http result (r…); a record keeps p(50), p(90), p(99), p(99.9), p(100) and ab's table (66, 75, 80, 95, 98), not its histogram. Any FAIL exits 99.
    #[arg(long = "threshold", value_name = "THRESHOLD")]
    pub thresholds: Vec<String>,
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
    let renderer = kurabe_report::check_renderer(args.format).expect("clap offers text, md, json");
    let thresholds = parse_flags(&args.thresholds).map_err(anyhow::Error::msg)?;
    check_outputs(&[("-o", args.out.path())])?;
    let store = open_existing(args.store.store.as_deref())?;
    let id = parse_id(&args.experiment)?;
    let gate = Gate {
        baseline: args.baseline.as_deref(),
        last: args.last as usize,
        thresholds: &thresholds,
    };
    let history = |name: &str| -> anyhow::Result<_> {
        Ok(plan_or_label(&store, name, results_as_experiments)?)
    };
    let report = check_entry(&store.get(id)?, &id.to_string(), &gate, history)?;
    write_rendered(args.out.path(), &*renderer, &report)?;
    Ok(crate::exit(ending(&report)))
}
