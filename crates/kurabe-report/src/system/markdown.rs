//! Markdown of a system report (one table per copy count) and of a comparison.

use std::io::{self, Write};

use kurabe_model::system::{CompareRow, SystemCompare, SystemReport, SystemRun, SystemSource};

use super::{ci_text, copies_text, opt, pct, ratio_cells, verdict_cell};
use crate::{Markdown, Render};

impl Render<SystemReport> for Markdown {
    fn render(&self, r: &SystemReport, out: &mut dyn Write) -> io::Result<()> {
        markdown(r, out)
    }
}

impl Render<SystemCompare> for Markdown {
    fn render(&self, c: &SystemCompare, out: &mut dyn Write) -> io::Result<()> {
        compare_markdown(c, out)
    }
}

/// Markdown report: one table per copy count.
fn markdown(r: &SystemReport, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w, "# System Benchmarks Index — {}", r.host)?;
    writeln!(w)?;
    writeln!(
        w,
        "{} · kernel {} · {} · {}",
        match r.source {
            SystemSource::Kurabe =>
                format!("kurabe, {} mode", r.mode.as_deref().unwrap_or("default")),
            SystemSource::UnixbenchImport => "imported UnixBench report".into(),
        },
        r.kernel,
        r.arch,
        r.time
    )?;
    for run in &r.runs {
        run_markdown(run, w)?;
    }
    Ok(())
}

/// One copy count: a table of the tests, then the score in bold.
fn run_markdown(run: &SystemRun, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w)?;
    writeln!(w, "## {}", copies_text(run.copies))?;
    writeln!(w)?;
    writeln!(
        w,
        "| Test | Result | Unit | Time (s) | Samples | 95 % CI | Baseline | Index |"
    )?;
    writeln!(w, "|---|---:|---|---:|---:|---|---:|---:|")?;
    for t in &run.tests {
        writeln!(
            w,
            "| {} | {:.1} | {} | {:.1} | {} | {} | {} | {} |",
            t.name,
            t.result,
            t.unit,
            t.time_s,
            t.samples,
            ci_text(t),
            one_decimal(t.baseline),
            one_decimal(t.index),
        )?;
    }
    writeln!(w)?;
    score_markdown(run, w)
}

/// The index score in bold, with its interval when there is one.
fn score_markdown(run: &SystemRun, w: &mut dyn Write) -> io::Result<()> {
    write!(
        w,
        "**System Benchmarks Index Score{}: {}**",
        if run.partial { " (partial)" } else { "" },
        one_decimal(run.score)
    )?;
    if let (Some(s), Some(lo), Some(hi)) = (run.score, run.score_ci95_low, run.score_ci95_high) {
        write!(w, " (95 % CI {lo:.1} – {hi:.1}, ±{:.1} %)", pct(lo, hi, s))?;
    }
    writeln!(w)
}

/// `1078.7`, or `—` when there is no value.
fn one_decimal(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.1}")).unwrap_or_else(|| "—".into())
}

/// Markdown comparison table.
fn compare_markdown(c: &SystemCompare, w: &mut dyn Write) -> io::Result<()> {
    writeln!(
        w,
        "# System Benchmarks Index: {} vs {}",
        c.a.label, c.b.label
    )?;
    for run in &c.runs {
        writeln!(w)?;
        writeln!(w, "## {}", copies_text(run.copies))?;
        writeln!(w)?;
        writeln!(w, "| Test | A | B | B/A | 95 % CI | Verdict |")?;
        writeln!(w, "|---|---:|---:|---:|---|---|")?;
        for r in run.tests.iter().chain(std::iter::once(&run.score)) {
            compare_row(r, w)?;
        }
    }
    Ok(())
}

/// One test (or the score) of both reports, with the ratio and the verdict's reason.
fn compare_row(r: &CompareRow, w: &mut dyn Write) -> io::Result<()> {
    let (ratio, ci) = ratio_cells(r);
    let reason = r
        .reason
        .as_deref()
        .map(|s| format!(" — {s}"))
        .unwrap_or_default();
    writeln!(
        w,
        "| {} | {} | {} | {ratio} | {ci} | {}{reason} |",
        r.name,
        opt(r.result_a),
        opt(r.result_b),
        verdict_cell(r)
    )
}
