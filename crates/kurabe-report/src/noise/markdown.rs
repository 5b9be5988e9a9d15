//! The Markdown of a noise report: the same figures, verdicts and
//! suggestion as the terminal's, as a table and a code block.

use std::io::{self, Write};

use kurabe_model::noise::NoiseReport;

use super::{
    cells, false_verdicts, heading, plan_lines, suggestion_flags, suggestion_line, titles, verdicts,
};
use crate::escape::markdown;
use crate::{Markdown, Render};

impl Render<NoiseReport> for Markdown {
    fn render(&self, r: &NoiseReport, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "### {}", markdown(&heading(r)))?;
        writeln!(out)?;
        let titles = titles(r);
        writeln!(out, "| {} |", titles.join(" | "))?;
        let rule: Vec<&str> = (0..titles.len())
            .map(|c| if c == 0 { ":--" } else { "--:" })
            .collect();
        writeln!(out, "|{}|", rule.join("|"))?;
        for m in &r.metrics {
            let row: Vec<String> = cells(r, m).iter().map(|c| markdown(c)).collect();
            writeln!(out, "| {} |", row.join(" | "))?;
        }
        writeln!(out)?;
        writeln!(out, "A against A′ (should read within noise):")?;
        writeln!(out)?;
        for (_, name, words) in verdicts(r) {
            writeln!(out, "- **{}**: {}", markdown(&name), markdown(&words))?;
        }
        if let Some(line) = false_verdicts(r) {
            writeln!(out)?;
            writeln!(out, "{}", markdown(&line))?;
        }
        writeln!(out)?;
        writeln!(out, "{}:", markdown(&suggestion_line(r)))?;
        writeln!(out)?;
        writeln!(out, "```")?;
        writeln!(out, "{}", suggestion_flags(r))?;
        for line in plan_lines(r) {
            writeln!(out, "{line}")?;
        }
        writeln!(out, "```")
    }
}
