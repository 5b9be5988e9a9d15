//! `kurabe check EXPERIMENT --baseline BRANCH|REV|EXPERIMENT`: the CI gate.
//! The experiment against the pooled runs of its baseline's recent
//! history (same plan, same host fingerprint); exit 1 on any "worse".
//!
//! Choosing the baseline experiments from the store is here; comparing and
//! rendering are `kurabe-report`'s.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use kurabe_model::record::{Entry, EntryId, Experiment};
use kurabe_report::{check_report, CheckInput};

use crate::output::{write_output, ReportFormat as Format};
use crate::store::{open_existing, parse_id};

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
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write to this file (atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Results store (file, sqlite:PATH or postgres://…) [default: $KURABE_STORE, else $XDG_DATA_HOME/kurabe/results.db].
    #[arg(long, value_name = "PATH|URL")]
    pub store: Option<PathBuf>,
}

/// Run `kurabe check`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Some(renderer) = kurabe_report::check_renderer(args.format.into()) else {
        bail!("--format: kurabe check writes text, md or json");
    };
    super::check_outputs(&[("-o", args.output.as_deref())])?;
    let store = open_existing(args.store.as_deref())?;
    let id = parse_id(&args.experiment)?;
    let Entry::Experiment(exp) = store.get(id)? else {
        bail!("{id} is a saved result; kurabe check takes an experiment (e…)");
    };
    let history = super::history::plan_or_label(&store, &exp.name)?;
    let base = baseline(&exp, history, &args.baseline, args.last as usize)?;
    let report = check_report(CheckInput {
        experiment: &exp,
        baseline: &args.baseline,
        history: &base,
    });
    write_output(
        args.output.as_deref(),
        &kurabe_report::to_string(&*renderer, &report),
    )?;
    Ok(if report.worse > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The last `n` experiments of the plan on `exp`'s host fingerprint that
/// `spec` names (a revision, or an experiment and those before it), `exp`
/// itself left out.
fn baseline(
    exp: &Experiment,
    history: Vec<Experiment>,
    spec: &str,
    n: usize,
) -> anyhow::Result<Vec<Experiment>> {
    let fp = exp.host_fingerprint();
    let as_id = spec
        .strip_prefix(['e', 'E'])
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|_| spec.parse::<EntryId>().ok());
    let upto = match as_id {
        Some(EntryId::Experiment(b)) => match history.iter().find(|e| e.id == b) {
            Some(e) => Some(e.started_at.clone()),
            None => bail!(
                "unknown baseline `{spec}`: no experiment {b} of plan `{}` in the store",
                exp.name
            ),
        },
        _ => None,
    };
    let named = |e: &Experiment| match &upto {
        Some(t) => e.started_at <= *t,
        None => e.origin.rev.as_ref().is_some_and(|r| r.matches(spec)),
    };
    let mut picked: Vec<Experiment> = history
        .into_iter()
        .filter(|e| e.id != exp.id && e.host_fingerprint() == fp && named(e))
        .collect();
    if picked.is_empty() {
        bail!(
            "unknown baseline `{spec}`: no other experiment of plan `{}` on this host fingerprint ({}) has that branch, commit or --rev label",
            exp.name,
            fp.as_deref().unwrap_or("-")
        );
    }
    picked.sort_by(|a, b| (&a.started_at, a.id).cmp(&(&b.started_at, b.id)));
    let skip = picked.len().saturating_sub(n);
    Ok(picked.split_off(skip))
}
