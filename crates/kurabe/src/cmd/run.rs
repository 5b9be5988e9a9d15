//! `kurabe run PLAN.toml`: variants × workloads × rounds, stored, with verdicts.
//!
//! Loads and checks the plan (a bad plan exits 2 with `file:line: field:
//! message`), opens the results store, hands both to the runner in
//! `kurabe-lab`, prints progress on stderr and, at the end, the comparison
//! table (variant × metric: geometric mean, ratio to the baseline, 95 %
//! interval, verdict) and the `[[check]]` results. Exit 0; 1 when a check
//! failed or the experiment stopped on a failed run; 130 on Ctrl-C (finished
//! runs are kept, the experiment is marked interrupted); 2 on setup errors.
//!
//! The table here is deliberately small: the report crate renders the full
//! reports; this only has to answer "which is better" at the end of a run.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use kurabe_lab::analysis::{Analysis, CheckResult};
use kurabe_lab::{Event, Outcome, RunOptions};
use kurabe_model::stats::{Unit, Verdict};
use kurabe_store::{ExperimentStatus, RunStatus, Store};

use super::http::parse_duration;
use super::watch::write_output;

/// Output format of the final table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A plain-text table.
    Text,
    /// A Markdown table, ready to paste into an issue.
    Md,
    /// JSON: every row with its summary and comparison, and the checks.
    Json,
}

/// Arguments of `kurabe run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plan file (TOML): target, variants, workloads, checks. See examples/quickstart.toml.
    pub plan: PathBuf,
    /// Results store file (SQLite) [default: $KURABE_STORE, else $XDG_DATA_HOME/kurabe/results.db].
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// Rounds to run, overriding the plan's `repeat` (3 or more give an interval).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100000))]
    pub repeat: Option<u32>,
    /// Seed of the interleaved run order, overriding the plan's (default: drawn at start, recorded).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Keep adding rounds until every headline metric has a verdict (better, worse or within noise).
    #[arg(long)]
    pub until_confident: bool,
    /// Time budget of --until-confident for the whole experiment ("10m", "90s").
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "10m", requires = "until_confident")]
    pub max_time: Duration,
    /// Format of the final table.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the final table to this file instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// No progress lines on stderr.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

/// Run `kurabe run`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let plan = kurabe_lab::load_plan(&args.plan)?;
    kurabe_lab::check_supported(&plan)?;
    let plan_text = std::fs::read_to_string(&args.plan)
        .with_context(|| format!("cannot read {}", args.plan.display()))?;
    let mut store = match &args.store {
        Some(p) => Store::open(p),
        None => Store::open_default(),
    }
    .context("cannot open the results store (choose another with --store PATH)")?;
    let opts = RunOptions {
        plan_dir: kurabe_lab::runner::plan_dir(&args.plan),
        plan_text,
        seed: args.seed,
        repeat: args.repeat,
        kurabe_exe: std::env::current_exe().context("cannot find the kurabe executable")?,
        until_confident: args.until_confident.then_some(args.max_time),
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    let stop = crate::signal::install()?;
    let quiet = args.quiet;
    let mut progress = |e: &Event<'_>| {
        if !quiet {
            eprintln!("{}", progress_line(e));
        }
    };
    let outcome = kurabe_lab::run_experiment(&plan, &mut store, &opts, &stop, &mut progress)?;
    let body = match args.format {
        Format::Text => render_text(&outcome, false),
        Format::Md => render_text(&outcome, true),
        Format::Json => render_json(&outcome)?,
    };
    write_output(args.output.as_deref(), &body)?;
    for c in outcome.checks.iter().filter(|c| !c.passed) {
        eprintln!("kurabe: check failed: {}", c.description);
    }
    if let Some(why) = &outcome.stopped_by {
        eprintln!("kurabe: experiment stopped: {why}");
    }
    Ok(match outcome.status {
        ExperimentStatus::Interrupted => ExitCode::from(130),
        ExperimentStatus::Failed => ExitCode::from(1),
        _ if outcome.checks.iter().any(|c| !c.passed) => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    })
}

fn progress_line(e: &Event<'_>) -> String {
    match e {
        Event::Begin {
            experiment,
            seed,
            total,
        } => format!("kurabe run: experiment {experiment}, {total} runs, seed {seed}"),
        Event::RunStart {
            index,
            total,
            round,
            variant,
            workload,
        } => format!(
            "[{index}/{total}] round {}: {variant} / {workload}",
            round + 1
        ),
        Event::RunDone { index, record } => match record.status {
            RunStatus::Ok => {
                let first = record
                    .metrics
                    .first()
                    .map(|m| format!(": {} {}", m.name, fmt_value(m.value, unit_of(&m.name))))
                    .unwrap_or_default();
                format!("[{index}] ok{first}")
            }
            RunStatus::Failed => format!(
                "[{index}] FAILED: {}",
                record
                    .error_tail
                    .as_deref()
                    .unwrap_or("")
                    .replace('\n', "\n    ")
            ),
        },
        Event::RoundAdded { round } => {
            format!(
                "--until-confident: not settled yet, adding round {}",
                round + 1
            )
        }
    }
}

fn unit_of(metric: &str) -> Unit {
    kurabe_model::stats::metric::lookup(metric).map_or(Unit::Count, |m| m.unit)
}

/// A value in its unit, about four significant digits; bytes as MiB.
fn fmt_value(v: f64, unit: Unit) -> String {
    let num = |x: f64| {
        if x.abs() >= 1000.0 {
            format!("{x:.0}")
        } else if x.abs() >= 10.0 {
            format!("{x:.1}")
        } else {
            format!("{x:.3}")
        }
    };
    match unit {
        Unit::Bytes => format!("{} MiB", num(v / (1024.0 * 1024.0))),
        Unit::PerSecond => format!("{}/s", num(v)),
        Unit::Count | Unit::Score => num(v),
        u => format!("{} {}", num(v), u.symbol()),
    }
}

fn verdict_text(v: &Verdict) -> String {
    match v {
        Verdict::NoInterval { .. } => "no interval (fewer than 3 runs)".into(),
        other => other.to_string(),
    }
}

/// Rows as table cells: workload, metric, variant, n, geo mean, ratio, interval, verdict.
fn cells(a: &Analysis) -> Vec<[String; 8]> {
    a.rows
        .iter()
        .map(|r| {
            let n = r.samples.len().to_string();
            let gm = r
                .summary
                .as_ref()
                .and_then(|s| s.geometric_mean.or(Some(s.median)))
                .map_or("-".into(), |g| fmt_value(g, r.metric.unit));
            let (ratio, interval, verdict) = match (&r.comparison, r.variant == a.baseline) {
                (_, true) => ("baseline".into(), String::new(), String::new()),
                (None, _) => ("-".into(), String::new(), "no data".into()),
                (Some(c), _) => (
                    c.ratio.map_or("-".into(), |x| format!("{x:.3}×")),
                    match (c.ratio_low, c.ratio_high) {
                        (Some(l), Some(h)) => format!("[{l:.3}, {h:.3}]"),
                        _ => String::new(),
                    },
                    verdict_text(&c.verdict),
                ),
            };
            [
                r.workload.clone(),
                r.metric.name.clone(),
                r.variant.clone(),
                n,
                gm,
                ratio,
                interval,
                verdict,
            ]
        })
        .collect()
}

const HEADER: [&str; 8] = [
    "workload",
    "metric",
    "variant",
    "n",
    "geo mean",
    "vs baseline",
    "95% interval",
    "verdict",
];

fn render_text(o: &Outcome, markdown: bool) -> String {
    let mut out = String::new();
    let failed = o
        .runs
        .iter()
        .filter(|r| r.status == RunStatus::Failed)
        .count();
    let _ = writeln!(
        out,
        "{}experiment {} ({}), seed {}, {} runs ({} failed), baseline {}\n",
        if markdown { "**" } else { "" },
        o.experiment,
        o.status,
        o.seed,
        o.runs.len(),
        failed,
        o.analysis.baseline,
    );
    let rows = cells(&o.analysis);
    if markdown {
        let _ = writeln!(out, "| {} |", HEADER.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(HEADER.len()));
        for r in &rows {
            let esc: Vec<String> = r.iter().map(|c| c.replace('|', "\\|")).collect();
            let _ = writeln!(out, "| {} |", esc.join(" | "));
        }
    } else {
        let mut w = HEADER.map(|h| h.chars().count());
        for r in &rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate() {
                let pad = w[i] - c.chars().count();
                // Numbers right-aligned, words left-aligned.
                if (3..=4).contains(&i) {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(c);
                } else {
                    s.push_str(c);
                    s.push_str(&" ".repeat(pad));
                }
                s.push_str("  ");
            }
            s.trim_end().to_owned()
        };
        let _ = writeln!(out, "{}", line(&HEADER.map(String::from)));
        for r in &rows {
            let _ = writeln!(out, "{}", line(r));
        }
    }
    if !o.checks.is_empty() {
        let _ = writeln!(out, "\nchecks:");
        for c in &o.checks {
            let _ = writeln!(out, "  {} {}", check_mark(c), c.description);
        }
    }
    out
}

fn check_mark(c: &CheckResult) -> &'static str {
    if c.passed {
        "PASS"
    } else {
        "FAIL"
    }
}

fn render_json(o: &Outcome) -> anyhow::Result<String> {
    let rows: Vec<serde_json::Value> = o
        .analysis
        .rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "workload": r.workload,
                "metric": r.metric.name,
                "unit": r.metric.unit,
                "variant": r.variant,
                "samples": r.samples,
                "summary": r.summary,
                "comparison": r.comparison,
            })
        })
        .collect();
    let checks: Vec<serde_json::Value> = o
        .checks
        .iter()
        .map(|c| serde_json::json!({"description": c.description, "passed": c.passed}))
        .collect();
    let doc = serde_json::json!({
        "schema_version": kurabe_model::SCHEMA_VERSION,
        "experiment_id": o.experiment.0,
        "status": o.status,
        "seed": o.seed,
        "baseline": o.analysis.baseline,
        "runs": o.runs.len(),
        "failed_runs": o.runs.iter().filter(|r| r.status == RunStatus::Failed).count(),
        "rows": rows,
        "checks": checks,
    });
    Ok(serde_json::to_string_pretty(&doc)? + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_carry_their_unit() {
        assert_eq!(fmt_value(12345.6, Unit::PerSecond), "12346/s");
        assert_eq!(fmt_value(3.0 * 1048576.0, Unit::Bytes), "3.000 MiB");
        assert_eq!(fmt_value(250.0, Unit::Microseconds), "250.0 µs");
    }
}
