//! Markdown: a history's series and changes as GitHub tables, and `kurabe
//! check`'s comment-ready table (regressions first, improvements too).

use std::io::{self, Write};

use kurabe_model::history::{CheckReport, CheckRow, HistoryReport, HistorySeries};
use kurabe_model::stats::Verdict;

use super::text::{change_short, hosts_line, latest, series_title, verdict_word};
use crate::escape::markdown as esc;
use crate::{words, Render};

/// Markdown history and check renderer.
pub struct HistoryMarkdown;

impl Render<HistoryReport> for HistoryMarkdown {
    fn render(&self, r: &HistoryReport, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "## History of {}\n\n{}\n",
            esc(&r.name),
            esc(&hosts_line(r))
        )?;
        writeln!(
            out,
            "| series | points | latest | changes |\n|---|---:|---:|---|"
        )?;
        for s in &r.series {
            series_row(s, out)?;
        }
        Ok(())
    }
}

/// One series' row: its points, latest value and changes.
fn series_row(s: &HistorySeries, out: &mut dyn Write) -> io::Result<()> {
    let changes: Vec<String> = s.changes.iter().map(|c| esc(&change_short(c))).collect();
    let changes = if changes.is_empty() {
        "–".to_owned()
    } else {
        changes.join("<br>")
    };
    writeln!(
        out,
        "| {} | {} | {} | {changes} |",
        esc(&series_title(s)),
        s.points.len(),
        esc(&latest(s, "–")),
    )
}

fn check_row(row: &CheckRow, out: &mut dyn Write) -> io::Result<()> {
    let mark = match (row.direction.is_some(), row.verdict) {
        (true, Verdict::Worse) => "❌ worse",
        (true, Verdict::Better) => "✅ better",
        _ => verdict_word(&row.verdict),
    };
    writeln!(
        out,
        "| {} | {} | {} | {} | {} | {} | {} |",
        esc(&row.workload),
        esc(&row.variant),
        esc(&words::label(&row.metric)),
        esc(&words::value(row.unit, row.baseline_value)),
        esc(&words::value(row.unit, row.value)),
        esc(&row.phrase),
        mark
    )
}

/// Regressions first, then improvements, then the rest (stable within each).
fn worst_first(rows: &[CheckRow]) -> Vec<&CheckRow> {
    let rank = |row: &&CheckRow| match row.verdict {
        Verdict::Worse => 0,
        Verdict::Better => 1,
        _ => 2,
    };
    let mut rows: Vec<&CheckRow> = rows.iter().collect();
    rows.sort_by_key(rank);
    rows
}

impl Render<CheckReport> for HistoryMarkdown {
    fn render(&self, r: &CheckReport, out: &mut dyn Write) -> io::Result<()> {
        if r.baseline.is_empty() {
            let (name, id, rev) = (esc(&r.name), esc(&r.experiment), esc(&r.rev));
            writeln!(out, "### kurabe check: thresholds\n\n{name} `{id}` ({rev})")?;
            return check_thresholds(r, out);
        }
        check_heading(r, out)?;
        writeln!(
            out,
            "| workload | variant | metric | baseline | this | change | verdict |"
        )?;
        writeln!(out, "|---|---|---|---:|---:|---|---|")?;
        for row in worst_first(&r.rows) {
            check_row(row, out)?;
        }
        writeln!(
            out,
            "\n{} worse, {} better, {} checked.",
            r.worse,
            r.better,
            r.rows.len()
        )?;
        check_thresholds(r, out)
    }
}

/// The check's heading: how many regressions, and what was checked
/// against which baseline.
fn check_heading(r: &CheckReport, out: &mut dyn Write) -> io::Result<()> {
    let head = match r.worse {
        0 => "no regression".to_owned(),
        n => format!("{n} regression(s)"),
    };
    writeln!(
        out,
        "### kurabe check: {head}\n\n{} `{}` ({}) against `{}` (runs of {} pooled)\n",
        esc(&r.name),
        esc(&r.experiment),
        esc(&r.rev),
        esc(&r.baseline),
        esc(&r.baseline_experiments.join(", "))
    )
}

/// The `--threshold`s of a check, workload by workload (nothing without).
fn check_thresholds(r: &CheckReport, out: &mut dyn Write) -> io::Result<()> {
    for w in &r.thresholds {
        writeln!(out, "\n#### {}", esc(&w.workload))?;
        crate::thresholds::markdown(&w.variants, &esc, out)?;
    }
    Ok(())
}
