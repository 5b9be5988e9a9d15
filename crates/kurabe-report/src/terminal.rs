//! Terminal table: per workload, one row per variant with the headline
//! metrics (median ± CV), then per non-baseline variant a `vs baseline`
//! line with ratio, interval and verdict — the layout of DESIGN.md; and the
//! same per request name when the runs broke their requests down.
//!
//! Colour (ANSI) only when the caller asks; it never looks at the terminal.

use std::io::{self, Write};

use kurabe_model::experiment::{
    ExperimentReport, MetricReport, Tone, VersusBaseline, WorkloadReport,
};

use crate::chart::truncate;
use crate::escape::terminal;
use crate::words::wrap;
use crate::{
    baseline_of, cell, headline_metrics, host_line, legend, request_workload, status_line,
    variant_title, versus_of, words, Render,
};

/// Terminal lines stay within this many columns.
pub const WIDTH: usize = 100;

/// The name column never gets narrower than this when rows are cut to fit.
const MIN_NAME: usize = 18;

/// Plain-text table renderer.
pub struct Terminal {
    /// Colour verdicts (green better, red worse) and bold headers.
    pub color: bool,
}

impl Terminal {
    pub(crate) fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    fn workload(
        &self,
        r: &ExperimentReport,
        w: &WorkloadReport,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        let metrics = headline_metrics(w);
        let rows = rows(r, w, &metrics);
        let (first, widths) = column_widths(w, &metrics, &rows);
        let labels: Vec<String> = metrics.iter().map(|m| words::label(&m.name)).collect();
        let head = table_line(&terminal(&w.name), &labels, first, &widths);
        writeln!(out, "{}", self.paint("1", &head))?;
        for (title, cells) in &rows {
            writeln!(out, "{}", table_line(title, cells, first, &widths))?;
        }
        let base = baseline_of(r, w);
        for v in w.variants.iter().filter(|v| base != Some(v.as_str())) {
            self.versus(&versus_lead(r, w, v), &metrics, v, first, out)?;
        }
        capacity_sentences(w, out)
    }

    /// A workload's table with its warm-up notes, its thresholds and a
    /// table per request name.
    fn workload_section(
        &self,
        r: &ExperimentReport,
        w: &WorkloadReport,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        self.workload(r, w, out)?;
        for c in &w.warmup {
            let line = format!("  note: {}", crate::words::warmup(c));
            // Escape, then wrap: the other order shows the wrap's newlines as `\n`.
            writeln!(out, "{}", self.paint("33", &wrap(&terminal(&line), WIDTH)))?;
        }
        crate::thresholds::text(&w.thresholds, &|t| terminal(t).into_owned(), out)?;
        for q in &w.requests {
            writeln!(out)?;
            self.workload(r, &request_workload(w, q), out)?;
        }
        match &w.profile {
            Some(p) => crate::profile::write_profile(p, false, out),
            None => Ok(()),
        }
    }

    /// A verdict phrase, green when better, red when worse.
    fn paint_phrase(&self, x: &VersusBaseline) -> String {
        self.paint_tone(x.tone, &x.phrase)
    }

    /// `text` green when `tone` is good, red when bad.
    fn paint_tone(&self, tone: Tone, text: &str) -> String {
        match tone {
            Tone::Good => self.paint("32", text),
            Tone::Bad => self.paint("31", text),
            Tone::Neutral => text.to_owned(),
        }
    }

    /// The phrases side by side after `lead`, under the columns (from
    /// `first`); none when the line would pass [`WIDTH`].
    fn side_by_side(
        &self,
        lead: &str,
        found: &[(&MetricReport, &VersusBaseline)],
        first: usize,
    ) -> Option<String> {
        // A long variant name must not run into its first phrase.
        let pad = first.max(lead.chars().count() + 3);
        let plain: usize = found
            .iter()
            .map(|(_, x)| x.phrase.chars().count() + 3)
            .sum();
        if pad + plain > WIDTH + 3 {
            return None;
        }
        let phrases: Vec<String> = found.iter().map(|(_, x)| self.paint_phrase(x)).collect();
        Some(format!("{lead:<pad$}{}", phrases.join("   ")))
    }

    /// The `vs baseline` line of variant `v` (led by `lead`): its phrases
    /// side by side under the columns, or one per line (with the metric's
    /// label) when side by side would pass [`WIDTH`].
    fn versus(
        &self,
        lead: &str,
        metrics: &[&MetricReport],
        v: &str,
        first: usize,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        let found: Vec<(&MetricReport, &VersusBaseline)> = metrics
            .iter()
            .filter_map(|m| Some((*m, versus_of(m, v)?)))
            .collect();
        if found.is_empty() {
            return Ok(());
        }
        if let Some(line) = self.side_by_side(lead, &found, first) {
            return writeln!(out, "{line}");
        }
        self.one_per_line(lead, &found, out)
    }

    /// `lead` on its own line, then each phrase on one of its own with the
    /// metric's label.
    fn one_per_line(
        &self,
        lead: &str,
        found: &[(&MetricReport, &VersusBaseline)],
        out: &mut dyn Write,
    ) -> io::Result<()> {
        writeln!(out, "{lead}")?;
        for (m, x) in found {
            // A long phrase ("inconclusive: this run could only detect
            // …") goes on under itself, within WIDTH.
            let label = words::label(&m.name);
            let room = WIDTH.saturating_sub(8 + label.chars().count()).max(40);
            let text = wrap(&x.phrase, room).replace('\n', "\n        ");
            writeln!(out, "      {label}: {}", self.paint_tone(x.tone, &text))?;
        }
        Ok(())
    }
}

/// One row per variant of the workload: its title and a cell per metric.
fn rows(
    r: &ExperimentReport,
    w: &WorkloadReport,
    metrics: &[&MetricReport],
) -> Vec<(String, Vec<String>)> {
    w.variants
        .iter()
        .map(|v| {
            let cells = metrics.iter().map(|m| cell(m, v)).collect();
            (terminal(&variant_title(r, w, v)).into_owned(), cells)
        })
        .collect()
}

/// The width of the name column and of each metric's column (3 spaces
/// after the widest cell or label); wide rows (long names, many metrics)
/// cut the names, not the numbers, to stay within [`WIDTH`].
fn column_widths(
    w: &WorkloadReport,
    metrics: &[&MetricReport],
    rows: &[(String, Vec<String>)],
) -> (usize, Vec<usize>) {
    let first = rows
        .iter()
        .map(|(t, _)| t.chars().count())
        .chain([terminal(&w.name).chars().count()])
        .max()
        .unwrap_or(0)
        + 2;
    let widths: Vec<usize> = (0..metrics.len())
        .map(|i| {
            rows.iter()
                .map(|(_, c)| c[i].chars().count())
                .chain([words::label(&metrics[i].name).chars().count()])
                .max()
                .unwrap_or(0)
                + 3
        })
        .collect();
    let table: usize = widths.iter().sum();
    (first.min(WIDTH.saturating_sub(table).max(MIN_NAME)), widths)
}

/// A line of the table: the name cut to the first column, the cells
/// padded to theirs, no trailing blanks.
fn table_line(name: &str, cells: &[String], first: usize, widths: &[usize]) -> String {
    let mut line = format!("{:<first$}", truncate(name, first - 2));
    for (c, width) in cells.iter().zip(widths) {
        line.push_str(&format!("{c:<width$}"));
    }
    line.trim_end().to_owned()
}

/// `  vs ruby`, or `  fast vs ruby` when there are more than two variants.
fn versus_lead(r: &ExperimentReport, w: &WorkloadReport, v: &str) -> String {
    let base = terminal(baseline_of(r, w).unwrap_or_default());
    let lead = if w.variants.len() > 2 {
        format!("  {} vs {base}", terminal(v))
    } else {
        format!("  vs {base}")
    };
    truncate(&lead, WIDTH - 4)
}

/// For a capacity search (`find_rate`), each variant against the
/// baseline in one sentence, the SLOs named.
fn capacity_sentences(w: &WorkloadReport, out: &mut dyn Write) -> io::Result<()> {
    let Some(m) = w.metrics.iter().find(|m| m.name == "capacity_per_second") else {
        return Ok(());
    };
    for x in &m.versus_baseline {
        let (v, b) = (terminal(&x.variant), terminal(&x.baseline));
        if let Some(line) = words::sustains(&v, &b, &w.slos, &x.comparison) {
            writeln!(out, "{}", wrap(&line, WIDTH))?;
        }
    }
    Ok(())
}

/// The failed runs, each with the last line of its error output.
fn failures(r: &ExperimentReport, out: &mut dyn Write) -> io::Result<()> {
    for f in &r.failures {
        let tail = f.error_tail.as_deref().unwrap_or("(no error output)");
        let last = tail.lines().last().unwrap_or_default();
        writeln!(
            out,
            "  {} · {} · round {}: {}",
            terminal(&f.variant),
            terminal(&f.workload),
            f.round + 1,
            terminal(last)
        )?;
    }
    Ok(())
}

impl Render<ExperimentReport> for Terminal {
    fn render(&self, r: &ExperimentReport, out: &mut dyn Write) -> io::Result<()> {
        // A generated name ("http: A vs B vs C") is cut to fit the line.
        let tail = format!("  ({}, {})", terminal(&r.id), terminal(&status_line(r)));
        let room = WIDTH.saturating_sub(tail.chars().count()).max(20);
        let name = crate::chart::truncate(&terminal(&r.name), room);
        writeln!(out, "{}{tail}", self.paint("1", &name))?;
        if let Some(h) = host_line(r) {
            // A long CPU model and kernel name pass 100 columns on some hosts.
            writeln!(out, "{}", wrap(&terminal(&h), WIDTH))?;
        }
        if r.workloads.is_empty() {
            writeln!(out, "\nno successful runs recorded")?;
        }
        for w in &r.workloads {
            writeln!(out)?;
            self.workload_section(r, w, out)?;
        }
        if !r.failures.is_empty() {
            writeln!(out, "\n{}", self.paint("1", "failed runs"))?;
            failures(r, out)?;
        }
        writeln!(out, "\n{}", self.paint("2", &wrap(&legend(r), WIDTH)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment_report;
    use crate::testdata::{mixed_verdicts_experiment, sample_experiment};

    fn render_of(e: &kurabe_model::record::Experiment, color: bool) -> String {
        let mut out = Vec::new();
        Terminal { color }
            .render(&experiment_report(e), &mut out)
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    fn render(color: bool) -> String {
        render_of(&sample_experiment(), color)
    }

    /// Snapshots (no colour) under `src/snapshots/`; a changed rendering
    /// fails here until the new output is reviewed and committed.
    #[test]
    fn snapshot() {
        insta::assert_snapshot!("ruby", render(false));
        insta::assert_snapshot!(
            "every_verdict",
            render_of(&mixed_verdicts_experiment(), false)
        );
    }

    #[test]
    fn colour_only_when_asked() {
        assert!(!render(false).contains('\x1b'));
        let c = render(true);
        assert!(c.contains("\x1b[32m1.18×"), "{c}");
        assert!(c.contains("\x1b[31m1.54×"), "{c}");
    }

    /// Long names, three headline metrics, several verdicts: no line of the
    /// table passes 100 columns, and the cut names still say whose row it is.
    #[test]
    fn fits_one_hundred_columns() {
        let mut e = mixed_verdicts_experiment();
        for r in &mut e.runs {
            r.run.variant = format!(
                "{} with a very long descriptive variant name",
                r.run.variant
            );
            r.run.workload = format!("{} under a long workload name", r.run.workload);
        }
        // A generated name as long as `kurabe http A B C` makes (100 columns).
        e.name = format!("http: {}…", "http://127.0.0.1:44991/abc vs ".repeat(4))
            .chars()
            .take(100)
            .collect();
        let text = render_of(&e, false);
        for line in text.lines() {
            assert!(
                line.chars().count() <= WIDTH,
                "{} columns: {line}",
                line.chars().count()
            );
        }
        assert!(text.contains("v3 short with a"), "{text}");
        assert!(
            text.starts_with("http: http://127.0.0.1:44991/abc vs "),
            "{text}"
        );
        assert_eq!(wrap("a bb ccc", 4), "a bb\nccc");
    }
}
