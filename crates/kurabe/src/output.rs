//! Where a command's output goes: colour on stdout, and writing a rendered
//! body to `-o FILE` or stdout.
//!
//! Owns these edge decisions so commands make them alike. Must not render:
//! the bytes come from `kurabe-report`.

use std::io::{IsTerminal, Write};
use std::path::Path;

use anyhow::Context;

/// Colour on stdout: a terminal, and `NO_COLOR` unset or empty (no-color.org).
pub(crate) fn colour_stdout() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Render `report` with `renderer` and write it to `path` or stdout.
pub(crate) fn write_rendered<R: ?Sized>(
    path: Option<&Path>,
    renderer: &dyn kurabe_report::Render<R>,
    report: &R,
) -> anyhow::Result<()> {
    write_output(path, &kurabe_report::to_string(renderer, report))
}

/// `--html FILE`: the stored experiment as a self-contained page with
/// charts, said on stderr (`kurabe run`, `kurabe cmd`).
pub(crate) fn write_html_page(exp: &kurabe_store::Experiment, path: &Path) -> anyhow::Result<()> {
    let report = kurabe_report::experiment_report(exp);
    let page = kurabe_report::to_string(&kurabe_report::Html, &report);
    kurabe_report::write::write_file(path, page.as_bytes()).context("--html")?;
    eprintln!("wrote {} (open it in a browser)", path.display());
    Ok(())
}

/// Write `body` to `path` (through the one file writer) or to stdout.
pub(crate) fn write_output(path: Option<&Path>, body: &str) -> anyhow::Result<()> {
    match path {
        None => {
            let mut out = std::io::stdout().lock();
            let context = "cannot write the report to stdout";
            out.write_all(body.as_bytes()).context(context)?;
            out.flush().context(context)?;
        }
        Some(p) => kurabe_report::write::write_file(p, body.as_bytes()).context("-o")?,
    }
    Ok(())
}
