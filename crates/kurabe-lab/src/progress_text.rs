//! The runner's progress and outcome as lines of text for people: one line
//! per [`Event`], the failed variant × workload pairs, the `[[check]]`
//! results under a report, the revision being prepared, and the `--set
//! KEY=VALUE` grammar of the commands that run plans.
//!
//! Owns these texts so `kurabe run` and `kurabe bisect` say the same
//! thing. Must not print: the binary decides where (a bar, stderr) and
//! escapes for the terminal.

use std::fmt::Write as _;

use kurabe_model::record::RunStatus;
use kurabe_model::stats::Unit;

use crate::analysis::CheckResult;
use crate::git::Prepared;
use crate::{Event, FailedCell};

/// One progress event as a line ("[3/12] round 2: a / w", "[3] ok: …").
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

/// "[3] ok: requests_per_s 1234/s", or "[3] FAILED: " and the error tail.
fn run_done(index: usize, record: &kurabe_model::record::RunRecord) -> String {
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

/// "kurabe: revision v2 = 1a2b3c4 (built) in DIR".
pub fn revision_line(p: &Prepared) -> String {
    let how = if p.built_now { "built" } else { "cached" };
    format!(
        "kurabe: revision {} = {} ({how}) in {}",
        p.rev,
        crate::git::short(&p.commit),
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

/// `KEY=VALUE` of `--set`; KEY as placeholders are written (lowercase,
/// digits, `_`).
pub fn parse_set(text: &str) -> Result<(String, String), String> {
    let (k, v) = text
        .split_once('=')
        .ok_or_else(|| format!("expected KEY=VALUE, got `{text}`"))?;
    let ident = k.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && k.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !ident {
        return Err(format!(
            "`{k}` is not a placeholder name: use lowercase letters, digits and _, as in {{commit}}"
        ));
    }
    Ok((k.to_owned(), v.to_owned()))
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

    #[test]
    fn values_carry_their_unit() {
        assert_eq!(fmt_value(12345.6, Unit::PerSecond), "12346/s");
        assert_eq!(fmt_value(3.0 * 1048576.0, Unit::Bytes), "3.000 MiB");
        assert_eq!(fmt_value(250.0, Unit::Microseconds), "250.0 µs");
    }

    #[test]
    fn set_takes_placeholder_names_only() {
        assert_eq!(parse_set("a_1=x=y").unwrap(), ("a_1".into(), "x=y".into()));
        assert!(parse_set("Commit=1")
            .unwrap_err()
            .contains("placeholder name"));
        assert!(parse_set("novalue").unwrap_err().contains("KEY=VALUE"));
    }
}
