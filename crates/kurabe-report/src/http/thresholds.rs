//! The thresholds of an [`HttpReport`] (`--threshold`, a plan's
//! `thresholds`): one line each, PASS or FAIL, the threshold as given and
//! what the run measured, and which one ended the run (`,abort`).
//!
//! Owns how they read in text. Must not judge them (the engine did) or
//! decide the exit status (the binary's).

use std::io::{self, Write};

use kurabe_model::http::HttpReport;
use kurabe_model::threshold::ThresholdResult;

use crate::escape::terminal;

/// The thresholds section, nothing when the run had none.
pub(super) fn text(r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
    if r.thresholds.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "Thresholds:")?;
    let width = r.thresholds.iter().map(|t| t.text.len()).max().unwrap_or(0);
    for t in &r.thresholds {
        line(t, width, out)?;
    }
    Ok(())
}

/// `  PASS  p(95)<200ms   12.3ms`, with a note on the one that ended the run.
fn line(t: &ThresholdResult, width: usize, out: &mut dyn Write) -> io::Result<()> {
    let verdict = if t.pass { "PASS" } else { "FAIL" };
    let text = terminal(&t.text);
    write!(out, "  {verdict}  {text:<width$}  {}", terminal(&t.shown))?;
    if t.aborted {
        write!(out, "  (failed during the run and ended it)")?;
    }
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_each_with_the_measured_value() {
        let r = HttpReport {
            thresholds: vec![
                ThresholdResult {
                    text: "p(95)<200ms".into(),
                    measured: 0.0123,
                    shown: "12.3ms".into(),
                    pass: true,
                    aborted: false,
                },
                ThresholdResult {
                    text: "failed<1%,abort".into(),
                    measured: 0.5,
                    shown: "50.00%".into(),
                    pass: false,
                    aborted: true,
                },
            ],
            ..HttpReport::default()
        };
        let mut out = Vec::new();
        text(&r, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\nThresholds:\n  PASS  p(95)<200ms      12.3ms\n  FAIL  failed<1%,abort  50.00%  (failed during the run and ended it)\n"
        );
    }
}
