//! UnixBench-layout text of a system report, and the comparison table.

use std::io::{self, Write};

use kurabe_model::system::{
    CompareRow, CompareRun, SystemCompare, SystemReport, SystemRun, SystemSource, SystemTest,
};

use super::{copies_text, opt, pct, ratio_cells, verdict_cell, RULE};
use crate::escape::terminal;
use crate::{Render, Terminal};

impl Render<SystemReport> for Terminal {
    fn render(&self, r: &SystemReport, out: &mut dyn Write) -> io::Result<()> {
        text(r, out)
    }
}

impl Render<SystemCompare> for Terminal {
    fn render(&self, c: &SystemCompare, out: &mut dyn Write) -> io::Result<()> {
        compare_text(c, out)
    }
}

/// UnixBench-style text report.
fn text(r: &SystemReport, w: &mut dyn Write) -> io::Result<()> {
    header_text(r, w)?;
    for run in &r.runs {
        writeln!(w, "{RULE}")?;
        writeln!(w, "Benchmark Run: {}", r.time)?;
        let cpus = r
            .cpus
            .map(|c| format!("{c} CPU{}", if c == 1 { "" } else { "s" }));
        writeln!(
            w,
            "{} in system; running {} of tests",
            cpus.unwrap_or_else(|| "? CPUs".into()),
            copies_text(run.copies)
        )?;
        writeln!(w)?;
        run_text(run, w)?;
        precision_text(r, run, w)?;
    }
    if r.mode.as_deref() == Some("quick") {
        writeln!(
            w,
            "Quick mode: 5 passes of 0.5 s for the fast tests, 3 of 0.8-1.5 s for the slow ones\n\
             (UnixBench: 10 x 10 s and 3 x 30-60 s). The intervals above are the precision that buys."
        )?;
    }
    if r.interrupted {
        writeln!(
            w,
            "Interrupted (Ctrl-C): tests that did not finish are missing."
        )?;
    }
    Ok(())
}

/// Where the numbers come from and the machine, as UnixBench heads its report.
fn header_text(r: &SystemReport, w: &mut dyn Write) -> io::Result<()> {
    let origin = match r.source {
        SystemSource::Kurabe => format!(
            "kurabe system {} mode (UnixBench-compatible System Benchmarks Index)",
            r.mode.as_deref().unwrap_or("default")
        ),
        SystemSource::UnixbenchImport => {
            "imported UnixBench report (single numbers, no spread)".into()
        }
    };
    writeln!(w, "   {origin}")?;
    writeln!(w)?;
    writeln!(w, "   System: {}: GNU/Linux", terminal(&r.host))?;
    writeln!(w, "   OS: GNU/Linux -- {}", terminal(&r.kernel))?;
    writeln!(w, "   Machine: {}", r.arch)?;
    writeln!(w)
}

/// One copy count: the tests' results, the index table, the score.
fn run_text(run: &SystemRun, w: &mut dyn Write) -> io::Result<()> {
    for t in &run.tests {
        test_line(t, w)?;
    }
    writeln!(w)?;
    index_table(run, w)?;
    score_text(run, w)
}

/// A test's result with its time, samples and interval (or why it failed).
fn test_line(t: &SystemTest, w: &mut dyn Write) -> io::Result<()> {
    if let Some(err) = &t.error {
        return writeln!(
            w,
            "{:<40} {:>12} {:<5} FAILED: {}",
            terminal(&t.name),
            "---",
            t.unit,
            terminal(err)
        );
    }
    write!(
        w,
        "{:<40} {:12.1} {:<5} ({:.1} s, {} samples)",
        terminal(&t.name),
        t.result,
        t.unit,
        t.time_s,
        t.samples
    )?;
    if let (Some(lo), Some(hi)) = (t.ci95_low, t.ci95_high) {
        write!(w, "  ±{:.1} %", pct(lo, hi, t.result))?;
    }
    writeln!(w)?;
    modes_text(t, w)
}

/// Baseline, result and index of each test.
fn index_table(run: &SystemRun, w: &mut dyn Write) -> io::Result<()> {
    let head = if run.partial {
        "System Benchmarks Partial Index"
    } else {
        "System Benchmarks Index Values"
    };
    writeln!(
        w,
        "{:<40} {:>12} {:>12} {:>8}",
        head, "BASELINE", "RESULT", "INDEX"
    )?;
    for t in &run.tests {
        match (t.baseline, t.index) {
            (Some(b), Some(i)) => writeln!(
                w,
                "{:<40} {:12.1} {:12.1} {:8.1}",
                terminal(&t.name),
                b,
                t.result,
                i
            )?,
            _ => writeln!(
                w,
                "{:<40} {:>12} {:12.1} {:>8}",
                terminal(&t.name),
                "---",
                t.result,
                "---"
            )?,
        }
    }
    Ok(())
}

/// The index score and its interval.
fn score_text(run: &SystemRun, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w, "{:<40} {:>12} {:>12} {:>8}", "", "", "", "========")?;
    let title = if run.partial {
        "System Benchmarks Index Score (Partial Only)"
    } else {
        "System Benchmarks Index Score"
    };
    match run.score {
        Some(s) => writeln!(w, "{title:<66} {s:8.1}")?,
        None => writeln!(w, "{title:<66} {:>8}", "---")?,
    }
    if let (Some(s), Some(lo), Some(hi)) = (run.score, run.score_ci95_low, run.score_ci95_high) {
        writeln!(
            w,
            "95 % interval of the score: {lo:.1} – {hi:.1} (±{:.1} %)",
            pct(lo, hi, s)
        )?;
    } else if run.tests.iter().any(|t| !t.passes.is_empty()) {
        writeln!(
            w,
            "95 % interval of the score: not available (a test has fewer than 2 kept passes)"
        )?;
    }
    writeln!(w)
}

/// The tests that limit the score's precision, with their share of its variance.
fn limited_by(run: &SystemRun) -> String {
    let parts: Vec<String> = run
        .limited_by
        .iter()
        .filter_map(|id| run.tests.iter().find(|t| &t.id == id))
        .map(|t| {
            let share = t.score_variance_share.unwrap_or(0.0) * 100.0;
            format!("{} ({share:.0} % of the variance)", t.id)
        })
        .collect();
    parts.join(", ")
}

/// Distinct placements among a test's passes, one line.
fn modes_text(t: &SystemTest, w: &mut dyn Write) -> io::Result<()> {
    if t.modes.is_empty() {
        return Ok(());
    }
    let parts: Vec<String> = t
        .modes
        .iter()
        .map(|m| {
            format!(
                "{:.1} {} in {}/{} passes",
                m.rate,
                t.unit,
                m.passes,
                t.passes.len()
            )
        })
        .collect();
    writeln!(
        w,
        "  {} modes (placements): {}",
        t.modes.len(),
        parts.join("; ")
    )
}

/// What a precision-driven run reached, and what limited the score.
fn precision_text(r: &SystemReport, run: &SystemRun, w: &mut dyn Write) -> io::Result<()> {
    if let Some(rule) = r.precision {
        let reached = match (run.score, run.score_ci95_low, run.score_ci95_high) {
            (Some(s), Some(lo), Some(hi)) => format!("±{:.1} %", pct(lo, hi, s)),
            _ => "no interval".into(),
        };
        writeln!(
            w,
            "Precision: target ±{:.1} %, reached {reached} in {:.0} s (budget {:.0} s)",
            rule.target * 100.0,
            run.elapsed_s.unwrap_or(0.0),
            rule.max_time_s
        )?;
        let short: Vec<String> = run
            .tests
            .iter()
            .filter(|t| t.stop.as_deref().is_some_and(|s| s != "target"))
            .map(|t| format!("{} ({})", t.id, t.stop.as_deref().unwrap_or("")))
            .collect();
        if !short.is_empty() {
            writeln!(w, "Tests short of the target: {}", short.join(", "))?;
        }
    }
    if !run.limited_by.is_empty() {
        writeln!(w, "Score precision limited by: {}", limited_by(run))?;
    }
    if r.precision.is_some() || !run.limited_by.is_empty() {
        writeln!(w)?;
    }
    Ok(())
}

/// A comparison row's first column: the test's `--tests` id, which fits
/// where UnixBench's display names (up to 37 characters) would push the
/// table past 80 columns; the overall score reads "Index Score".
fn compare_label(r: &kurabe_model::system::CompareRow) -> String {
    match r.id.as_str() {
        "score" => "Index Score".to_owned(),
        id => terminal(id).into_owned(),
    }
}

/// Text comparison table, at most 80 columns wide (test ids, not names).
fn compare_text(c: &SystemCompare, w: &mut dyn Write) -> io::Result<()> {
    for (tag, s) in [("A", &c.a), ("B", &c.b)] {
        let src = match s.source {
            SystemSource::Kurabe => "kurabe run",
            SystemSource::UnixbenchImport => "UnixBench import",
        };
        writeln!(
            w,
            "{tag}: {} ({src}; {} {} {})",
            terminal(&s.label),
            terminal(&s.host),
            terminal(&s.kernel),
            terminal(&s.arch)
        )?;
    }
    if c.runs.is_empty() {
        writeln!(
            w,
            "\nA and B have no copy count in common: nothing to compare."
        )?;
    }
    for run in &c.runs {
        compare_run(c, run, w)?;
    }
    Ok(())
}

/// One copy count of a comparison: a row per test and the score, each
/// verdict's reason as a numbered note under the table (once per reason).
fn compare_run(c: &SystemCompare, run: &CompareRun, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w)?;
    writeln!(
        w,
        "{} — B/A > 1 means B is faster; noise band ±{:.0} %",
        copies_text(run.copies),
        c.noise_band * 100.0
    )?;
    writeln!(
        w,
        "{:<16} {:>11} {:>11} {:>6}  {:>14}  VERDICT",
        "TEST", "A", "B", "B/A", "95 % CI"
    )?;
    let mut notes: Vec<String> = Vec::new();
    for r in run.tests.iter().chain(std::iter::once(&run.score)) {
        if r.id == "score" {
            writeln!(w)?;
        }
        compare_row(r, &mut notes, w)?;
    }
    for (i, n) in notes.iter().enumerate() {
        writeln!(w, "[{}] {n}", i + 1)?;
    }
    Ok(())
}

/// A test (or the score) of both reports; its reason becomes a note reference.
fn compare_row(r: &CompareRow, notes: &mut Vec<String>, w: &mut dyn Write) -> io::Result<()> {
    let (ratio, ci) = ratio_cells(r);
    let mut verdict = verdict_cell(r);
    if let Some(reason) = &r.reason {
        if let Some(k) = notes.iter().position(|n| n == reason) {
            verdict.push_str(&format!(" [{}]", k + 1));
        } else {
            notes.push(reason.clone());
            verdict.push_str(&format!(" [{}]", notes.len()));
        }
    }
    writeln!(
        w,
        "{:<16} {:>11} {:>11} {:>6}  {:>14}  {}",
        compare_label(r),
        opt(r.result_a),
        opt(r.result_b),
        ratio,
        ci,
        verdict
    )
}
