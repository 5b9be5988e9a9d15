//! The runner's progress and outcome as lines of text for people: one line
//! per [`Event`], the failed variant × workload pairs, the `[[check]]`
//! results under a report, the revision being prepared, and the schedule
//! of `kurabe run --dry-run`, each step of a `--find-rate` search; which events a bar or `kurabe bisect` shows.
//!
//! Owns these texts so `kurabe run` and `kurabe bisect` say the same
//! thing. Must not print: the binary decides where (a bar, stderr) and
//! escapes for the terminal.

use std::fmt::Write as _;
use std::time::Duration;

use kurabe_model::capacity::CapacityStep;
use kurabe_model::progress::{CheckResult, DryRun, Event, FailedCell, Prepared};
use kurabe_model::record::{RunRecord, RunStatus};
use kurabe_model::stats::Unit;

use crate::escape::{terminal, terminal_lines};
use crate::Format;
use kurabe_model::experiment::ExperimentReport;

/// One step of `--find-rate` as a progress line: `search 1, 800/s: 799/s answered, p99 1.6ms: pass`.
pub fn capacity_step_line(s: &CapacityStep) -> String {
    let verdict = s
        .why_failed()
        .map_or("pass".to_owned(), |w| format!("FAIL ({w})"));
    format!(
        "search {}, {:.1}/s: {:.1}/s answered, p50 {:.2}ms, p99 {:.2}ms, {:.2}% failed: {verdict}",
        s.search + 1,
        s.target_per_s,
        s.achieved_per_s,
        s.latency_p50_us as f64 / 1000.0,
        s.latency_p99_us as f64 / 1000.0,
        s.failed_percent
    )
}

/// One progress event as a line (`[3/12] round 2: a / w`, `[3] ok: …`).
pub fn event_line(e: &Event<'_>) -> String {
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
        Event::RunDone { index, record } => run_done(*index, record),
        Event::Note(note) => format!("note: {note}"),
        Event::RoundAdded { round } => format!(
            "--until-confident: not settled yet, adding round {}",
            round + 1
        ),
    }
}

/// A bar's message while a run is in flight, escaped: "round 2: a / w".
pub fn run_in_flight(e: &Event<'_>) -> Option<String> {
    let Event::RunStart {
        round,
        variant,
        workload,
        ..
    } = e
    else {
        return None;
    };
    Some(terminal_lines(&format!(
        "round {}: {variant} / {workload}",
        round + 1
    )))
}

/// The line of an event during `kurabe bisect`, escaped, if it has one: a
/// search runs many experiments, so only their starts, notes and failed
/// runs are worth a line.
pub fn bisect_event_line(e: &Event<'_>) -> Option<String> {
    let worth = match e {
        Event::RunDone { record, .. } => record.status == RunStatus::Failed,
        Event::RunStart { .. } => false,
        _ => true,
    };
    worth.then(|| terminal_lines(&event_line(e)))
}

/// "[3] ok: requests_per_s 1234/s", or "[3] FAILED: " and the error tail.
fn run_done(index: usize, record: &RunRecord) -> String {
    match record.status {
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
    }
}

/// The progress line of a runner event during `kurabe http A B`, if it has
/// one (`[3/10] round 2: URL`, `[3] FAILED: …`, `note: …`).
pub fn ab_event_line(e: &Event<'_>) -> Option<String> {
    Some(match e {
        Event::Begin { total, .. } => format!("kurabe http: {total} runs, interleaved"),
        Event::RunStart {
            index,
            total,
            round,
            variant,
            ..
        } => format!("[{index}/{total}] round {}: {variant}", round + 1),
        Event::RunDone { index, record } if record.status == RunStatus::Failed => format!(
            "[{index}] FAILED: {}",
            record.error_tail.as_deref().unwrap_or("")
        ),
        Event::Note(n) => format!("note: {n}"),
        _ => return None,
    })
}

/// "kurabe: experiment failed: every run of a / w failed (3 of 3); the
/// last one said:" and its tail, indented.
pub fn failed_cell_message(cell: &FailedCell) -> String {
    let mut s = format!(
        "kurabe: experiment failed: every run of {} / {} failed ({} of {})",
        cell.variant, cell.workload, cell.runs, cell.runs
    );
    if let Some(tail) = &cell.last_error {
        s.push_str("; the last one said:");
        for line in tail.lines() {
            s.push_str("\n    ");
            s.push_str(line);
        }
    }
    s
}

/// What went wrong in a finished experiment, one message each, escaped
/// for the terminal: the failed checks, why it stopped early, and the
/// variant × workload pairs that never succeeded.
pub fn outcome_messages(
    checks: &[CheckResult],
    stopped_by: Option<&str>,
    failed: &[FailedCell],
) -> Vec<String> {
    let failed_checks = checks.iter().filter(|c| !c.passed);
    let mut out: Vec<String> = failed_checks
        .map(|c| format!("kurabe: check failed: {}", terminal(&c.description)))
        .collect();
    out.extend(stopped_by.map(|why| format!("kurabe: experiment stopped: {why}")));
    out.extend(
        failed
            .iter()
            .map(|c| terminal_lines(&failed_cell_message(c))),
    );
    out
}

/// "kurabe: revision v2 = 1a2b3c4d5e6f (built) in DIR".
pub fn revision_line(p: &Prepared) -> String {
    let how = if p.built_now { "built" } else { "cached" };
    let short = &p.commit[..p.commit.len().min(12)];
    format!(
        "kurabe: revision {} = {short} ({how}) in {}",
        p.rev,
        p.dir.display()
    )
}

/// "\nchecks:\n  PASS …\n  FAIL …\n" (empty without checks); descriptions
/// go through `escape` (the terminal's escaper, given by the caller).
pub fn checks_text(checks: &[CheckResult], escape: impl Fn(&str) -> String) -> String {
    if checks.is_empty() {
        return String::new();
    }
    let mut s = String::from("\nchecks:\n");
    for c in checks {
        let mark = if c.passed { "PASS" } else { "FAIL" };
        let _ = writeln!(s, "  {mark} {}", escape(&c.description));
    }
    s
}

/// `kurabe run`'s final report: the experiment in `format` (`color`: the
/// terminal table's), with the `[[check]]` results under a text or
/// Markdown table (JSON, CSV and HTML stay the report model).
pub fn report_with_checks(
    report: &ExperimentReport,
    checks: &[CheckResult],
    format: Format,
    color: bool,
) -> String {
    let mut out = crate::to_string(&*crate::renderer(format, color), report);
    if matches!(format, Format::Text | Format::Markdown) {
        out.push_str(&checks_text(checks, |d| terminal(d).into_owned()));
    }
    out
}

/// The schedule of `kurabe run --dry-run` and its estimated duration.
pub fn dry_run_text(d: &DryRun) -> String {
    let mut s = headline(d);
    let mut current = None;
    for r in &d.runs {
        if current != Some(r.round) {
            current = Some(r.round);
            let _ = write!(s, "\nround {}:", r.round + 1);
        }
        let _ = write!(s, "\n  {} / {}", r.variant, r.workload);
    }
    s.push('\n');
    let _ = writeln!(s, "\n{}", duration_line(d));
    s
}

/// "plan `p` is valid: 2 variants × 1 workload × 3 rounds = 6 runs (seed …)".
fn headline(d: &DryRun) -> String {
    let (seed, rounds) = (d.seed, d.rounds);
    format!(
        "plan `{}` is valid: {} variant{} × {} workload{} × {rounds} round{} = {} runs (seed {seed}; pass --seed {seed} to run this order)\n",
        d.plan,
        d.variants,
        plural(d.variants),
        d.workloads,
        plural(d.workloads),
        plural(rounds as usize),
        d.runs.len()
    )
}

/// "estimated duration: 2m 10s …", saying which parts it cannot know.
fn duration_line(d: &DryRun) -> String {
    let mut line = format!("estimated duration: at least {}", human(d.known));
    if !d.unknown.is_empty() {
        let _ = write!(
            line,
            ", plus the time of workload{} {} (a number of requests or executions)",
            plural(d.unknown.len()),
            d.unknown.join(", ")
        );
    }
    if d.has_target {
        line.push_str(", plus the target's start and stop for each run");
    }
    line
}

fn human(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{:.1}s", d.as_secs_f64()),
        60..=3599 => format!("{}m {}s", s / 60, s % 60),
        _ => format!("{}h {}m", s / 3600, s % 3600 / 60),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
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

#[cfg(test)]
mod tests {
    use super::*;
    use kurabe_model::progress::ScheduledRun;

    #[test]
    fn values_carry_their_unit() {
        assert_eq!(fmt_value(12345.6, Unit::PerSecond), "12346/s");
        assert_eq!(fmt_value(3.0 * 1048576.0, Unit::Bytes), "3.000 MiB");
        assert_eq!(fmt_value(250.0, Unit::Microseconds), "250.0 µs");
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(human(Duration::from_millis(1500)), "1.5s");
        assert_eq!(human(Duration::from_secs(130)), "2m 10s");
        assert_eq!(human(Duration::from_secs(7260)), "2h 1m");
    }

    #[test]
    fn a_dry_run_lists_rounds_and_what_it_cannot_estimate() {
        let run = |round, variant: &str| ScheduledRun {
            round,
            variant: variant.into(),
            workload: "w".into(),
        };
        let d = DryRun {
            plan: "p".into(),
            variants: 2,
            workloads: 1,
            rounds: 1,
            seed: 7,
            runs: vec![run(0, "b"), run(0, "a")],
            known: Duration::from_secs(130),
            unknown: vec!["w".into()],
            has_target: true,
        };
        assert_eq!(
            dry_run_text(&d),
            "plan `p` is valid: 2 variants × 1 workload × 1 round = 2 runs (seed 7; pass --seed 7 to run this order)\n\
             \nround 1:\n  b / w\n  a / w\n\nestimated duration: at least 2m 10s, plus the time of workload w \
             (a number of requests or executions), plus the target's start and stop for each run\n"
        );
    }
}
