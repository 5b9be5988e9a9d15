//! The terminal text of a noise report: the heading, a table of figures
//! per metric, the A/A verdicts, and the suggestion.

use std::io::{self, Write};

use kurabe_model::experiment::Tone;
use kurabe_model::noise::NoiseReport;

use super::{
    cells, false_verdicts, heading, plan_lines, suggestion_flags, suggestion_line, titles, verdicts,
};
use crate::escape::terminal;
use crate::{Render, Terminal};

impl Render<NoiseReport> for Terminal {
    fn render(&self, r: &NoiseReport, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{}", terminal(&heading(r)))?;
        writeln!(out)?;
        table(r, out)?;
        writeln!(out)?;
        writeln!(out, "A against A′ (should read within noise):")?;
        for (tone, name, words) in verdicts(r) {
            let words = match tone {
                Tone::Good => self.paint("32", &words),
                Tone::Bad => self.paint("31", &words),
                Tone::Neutral => words,
            };
            writeln!(out, "  {:<18} {}", terminal(&name), terminal(&words))?;
        }
        if let Some(line) = false_verdicts(r) {
            writeln!(out, "{line}")?;
        }
        writeln!(out)?;
        writeln!(out, "{}:", suggestion_line(r))?;
        writeln!(out, "  {}", terminal(&suggestion_flags(r)))?;
        for line in plan_lines(r) {
            writeln!(out, "  {}", terminal(&line))?;
        }
        Ok(())
    }
}

/// The figures, one aligned row per metric.
fn table(r: &NoiseReport, out: &mut dyn Write) -> io::Result<()> {
    let mut rows = vec![titles(r)];
    rows.extend(r.metrics.iter().map(|m| cells(r, m)));
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| {
            rows.iter()
                .map(|row| row[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in &rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let pad = widths[c] - cell.chars().count();
            if c == 0 {
                line.push_str(&format!("{cell}{}", " ".repeat(pad)));
            } else {
                line.push_str(&format!("  {}{cell}", " ".repeat(pad)));
            }
        }
        writeln!(out, "{}", terminal(line.trim_end()))?;
    }
    Ok(())
}
