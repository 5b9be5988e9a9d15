//! Where a command's output goes: the experiment report formats shared by
//! `report` and `run`, colour on stdout, and writing a rendered body to
//! `-o FILE` or stdout.
//!
//! Owns these edge decisions so commands make them alike. Must not render:
//! the bytes come from `kurabe-report`.

use std::io::{IsTerminal, Write};
use std::path::Path;

use anyhow::Context;

/// Experiment report formats (`kurabe report`, `kurabe run`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// The comparison table for a terminal.
    Text,
    /// Markdown, ready to paste into an issue or a blog.
    Md,
    /// The report model as JSON (schema/experiment-report.schema.json).
    Json,
    /// One row per workload × metric × variant.
    Csv,
    /// One self-contained HTML file with SVG charts.
    Html,
}

impl From<ReportFormat> for kurabe_report::Format {
    fn from(f: ReportFormat) -> Self {
        match f {
            ReportFormat::Text => kurabe_report::Format::Text,
            ReportFormat::Md => kurabe_report::Format::Markdown,
            ReportFormat::Json => kurabe_report::Format::Json,
            ReportFormat::Csv => kurabe_report::Format::Csv,
            ReportFormat::Html => kurabe_report::Format::Html,
        }
    }
}

/// Colour on stdout: a terminal, and `NO_COLOR` unset or empty (no-color.org).
pub(crate) fn colour_stdout() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Write `body` to `path` (through the one file writer) or to stdout.
pub(crate) fn write_output(path: Option<&Path>, body: &str) -> anyhow::Result<()> {
    match path {
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(body.as_bytes())?;
            out.flush()?;
        }
        Some(p) => kurabe_report::write::write_file(p, body.as_bytes()).context("-o")?,
    }
    Ok(())
}
