//! `kurabe check EXPERIMENT --baseline BRANCH|REV|EXPERIMENT`: the CI gate.
//! The experiment against the pooled runs of its baseline's recent
//! history (same plan, same host fingerprint); exit 1 on any "worse".
//! `--threshold EXPR` (the grammar of `kurabe http --threshold` and a
//! plan's `thresholds`, one parser) judges the stored http records of an
//! experiment (each run) or of a saved `kurabe http` result, with or
//! without `--baseline`; a failed threshold exits 99 (k6's code).
//!
//! Choosing the baseline experiments, comparing, judging and rendering are
//! `kurabe-report`'s; this file reads the store and picks the exit status.

use std::process::ExitCode;

use anyhow::bail;
use kurabe_model::history::{CheckReport, WorkloadThresholds};
use kurabe_model::record::{Entry, Experiment, ResultKind, SavedResult};
use kurabe_model::threshold::Threshold;
use kurabe_report::baseline::baseline;
use kurabe_report::check_thresholds::{
    experiment_records, failed_line, judge, thresholds_report, StoredHttp,
};
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
    let Some(renderer) = kurabe_report::check_renderer(args.format) else {
        bail!("--format: kurabe check writes text, md or json");
    };
    let thresholds = parse_thresholds(&args.thresholds)?;
    check_outputs(&[("-o", args.out.path())])?;
    let store = open_existing(args.store.store.as_deref())?;
    let id = parse_id(&args.experiment)?;
    let report = match (store.get(id)?, &args.baseline) {
        (Entry::Experiment(exp), Some(b)) => {
            let mut r = against_baseline(&store, &exp, b, args.last)?;
            r.thresholds = judged(&thresholds, &experiment_records(&exp), &r.experiment)?;
            r
        }
        (Entry::Experiment(exp), None) => {
            let rev = exp
                .origin
                .rev
                .as_ref()
                .map_or("-".to_owned(), |r| r.short());
            let judged = judged(&thresholds, &experiment_records(&exp), &id.to_string())?;
            thresholds_report(id.to_string(), rev, exp.name.clone(), judged)
        }
        (Entry::Result(_), Some(_)) => {
            bail!("{id} is a saved result; kurabe check --baseline takes an experiment (e…)")
        }
        (Entry::Result(saved), None) => saved_report(&saved, &thresholds)?,
    };
    write_rendered(args.out.path(), &*renderer, &report)?;
    if let Some(line) = failed_line(&report) {
        eprintln!("kurabe: {}", kurabe_report::escape::terminal(&line));
        return Ok(ExitCode::from(super::http::THRESHOLD_FAILED));
    }
    Ok(ExitCode::from(u8::from(report.worse > 0)))
}

/// `--threshold`s, each parsed by the one grammar.
fn parse_thresholds(texts: &[String]) -> anyhow::Result<Vec<Threshold>> {
    texts
        .iter()
        .map(|t| t.parse::<Threshold>().map_err(|e| anyhow::anyhow!("--{e}")))
        .collect()
}

/// The experiment against the pooled runs of its baseline.
fn against_baseline(
    store: &kurabe_store::Store,
    exp: &Experiment,
    baseline_ref: &str,
    last: u32,
) -> anyhow::Result<CheckReport> {
    let history = plan_or_label(store, &exp.name, results_as_experiments)?;
    let base = baseline(exp, history, baseline_ref, last as usize)?;
    Ok(check_report(CheckInput {
        experiment: exp,
        baseline: baseline_ref,
        history: &base,
    }))
}

/// `thresholds` judged on `records` of entry `id`; none without thresholds.
fn judged(
    thresholds: &[Threshold],
    records: &[StoredHttp<'_>],
    id: &str,
) -> anyhow::Result<Vec<WorkloadThresholds>> {
    if thresholds.is_empty() {
        return Ok(Vec::new());
    }
    if records.is_empty() {
        bail!("--threshold judges stored http load records, and {id} has no successful http run: give an experiment with an http workload, or a saved kurabe http result (r…)");
    }
    judge(thresholds, records).map_err(anyhow::Error::msg)
}

/// A saved result's check: its one http record judged.
fn saved_report(saved: &SavedResult, thresholds: &[Threshold]) -> anyhow::Result<CheckReport> {
    let id = saved.id.to_string();
    let kind = saved.kind();
    if kind != ResultKind::Http {
        bail!("{id} is a saved {} result; --threshold judges http load records (a saved kurabe http result, or an experiment)", kind.as_str());
    }
    let Some(record) = saved.record.http() else {
        bail!("{id}: the stored http record is not one this kurabe reads (written by another version?)");
    };
    let one = [StoredHttp {
        workload: "http",
        variant: &saved.label,
        record,
    }];
    let judged = judged(thresholds, &one, &id)?;
    Ok(thresholds_report(
        id,
        "-".into(),
        saved.label.clone(),
        judged,
    ))
}
