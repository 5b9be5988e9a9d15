//! Terminal table: per workload, one row per variant with the headline
//! metrics (median ± CV), then per non-baseline variant a `vs baseline`
//! line with ratio, interval and verdict — the layout of DESIGN.md.
//!
//! Colour (ANSI) only when the caller asks; it never looks at the terminal.

use std::io::{self, Write};

use kurabe_model::experiment::{ExperimentReport, Tone, WorkloadReport};

use crate::{cell, host_line, status_line, variant_title, words, Renderer, LEGEND};

/// Plain-text table renderer.
pub struct Terminal {
    /// Colour verdicts (green better, red worse) and bold headers.
    pub color: bool,
}

impl Terminal {
    fn paint(&self, code: &str, text: &str) -> String {
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
        let metrics: Vec<_> = w
            .headline
            .iter()
            .filter_map(|h| w.metrics.iter().find(|m| &m.name == h))
            .collect();
        let rows: Vec<(String, Vec<String>)> = w
            .variants
            .iter()
            .map(|v| {
                (
                    variant_title(r, v),
                    metrics.iter().map(|m| cell(m, v)).collect(),
                )
            })
            .collect();
        let first = rows
            .iter()
            .map(|(t, _)| t.chars().count())
            .chain([w.name.chars().count()])
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
        let mut head = format!("{:<first$}", w.name);
        for (m, width) in metrics.iter().zip(&widths) {
            head.push_str(&format!("{:<width$}", words::label(&m.name)));
        }
        writeln!(out, "{}", self.paint("1", head.trim_end()))?;
        for (title, cells) in &rows {
            let mut line = format!("{title:<first$}");
            for (c, width) in cells.iter().zip(&widths) {
                line.push_str(&format!("{c:<width$}"));
            }
            writeln!(out, "{}", line.trim_end())?;
        }
        for v in w
            .variants
            .iter()
            .filter(|v| r.baseline.as_ref() != Some(*v))
        {
            let phrases: Vec<String> = metrics
                .iter()
                .filter_map(|m| m.versus_baseline.iter().find(|x| &x.variant == v))
                .map(|x| match x.tone {
                    Tone::Good => self.paint("32", &x.phrase),
                    Tone::Bad => self.paint("31", &x.phrase),
                    Tone::Neutral => x.phrase.clone(),
                })
                .collect();
            if phrases.is_empty() {
                continue;
            }
            let base = r.baseline.as_deref().unwrap_or_default();
            let lead = if w.variants.len() > 2 {
                format!("  {v} vs {base}")
            } else {
                format!("  vs {base}")
            };
            writeln!(out, "{lead:<first$}{}", phrases.join("   "))?;
        }
        Ok(())
    }
}

impl Renderer for Terminal {
    fn render(&self, r: &ExperimentReport, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "{}  ({}, {})",
            self.paint("1", &r.name),
            r.id,
            status_line(r)
        )?;
        if let Some(h) = host_line(r) {
            writeln!(out, "{h}")?;
        }
        if r.workloads.is_empty() {
            writeln!(out, "\nno successful runs recorded")?;
        }
        for w in &r.workloads {
            writeln!(out)?;
            self.workload(r, w, out)?;
        }
        if !r.failures.is_empty() {
            writeln!(out, "\n{}", self.paint("1", "failed runs"))?;
            for f in &r.failures {
                let tail = f.error_tail.as_deref().unwrap_or("(no error output)");
                let last = tail.lines().last().unwrap_or_default();
                writeln!(
                    out,
                    "  {} · {} · round {}: {last}",
                    f.variant, f.workload, f.round
                )?;
            }
        }
        writeln!(out, "\n{}", self.paint("2", LEGEND))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment_report;
    use crate::testdata::sample_experiment;

    fn render(color: bool) -> String {
        let mut out = Vec::new();
        Terminal { color }
            .render(&experiment_report(&sample_experiment()), &mut out)
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn snapshot() {
        let expected = "\
ruby GC settings  (e3, interrupted · 6 of 7 runs ok, 1 failed)
bench1 · x86_64 · 2 cores · Intel(R) Celeron(R) CPU 2.40GHz · 2.00 GiB RAM · kernel 6.1.0

index page       req/s           PSS peak         CPU ms/req
ruby (baseline)  106.2/s ±1.1%   39.0 MiB ±0.3%   9.40 ms ±1.1%
ruby + big heap  125.3/s ±1.0%   60.2 MiB ±0.2%   8.00 ms ±1.2%
  vs ruby        1.18× [1.15, 1.21] faster   1.54× [1.54, 1.55] more memory   0.85× [0.83, 0.87] less CPU

failed runs
  ruby + big heap · index page · round 3: out of memory

Values are medians of successful runs ± coefficient of variation. Ratios are geometric means against the baseline with 95 % Welch intervals; better or worse only when the whole interval clears the noise band (default ±2 %), otherwise within noise (inconclusive while the interval straddles a band edge).
";
        assert_eq!(render(false), expected);
    }

    #[test]
    fn colour_only_when_asked() {
        assert!(!render(false).contains('\x1b'));
        let c = render(true);
        assert!(c.contains("\x1b[32m1.18×"), "{c}");
        assert!(c.contains("\x1b[31m1.54×"), "{c}");
    }
}
