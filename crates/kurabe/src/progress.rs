//! Progress bars on stderr (indicatif): done/total and ETA for work that can
//! run longer than a few seconds.
//!
//! Owns the bar styles and the rule that a bar appears only on a terminal
//! and never with `-q`. Must not measure anything: libraries report progress
//! through their own callbacks and counters, commands feed the bar from them.

use std::io::{IsTerminal, Write as _};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Whether to draw: asked for (not `-q`) and stderr is a terminal.
pub(crate) fn wanted(asked: bool) -> bool {
    asked && std::io::stderr().is_terminal()
}

/// Rewrite the status line on stderr in place: `text`, or nothing to clear
/// it (a live line where no bar fits: `watch` without `-d`, a fleet run).
pub(crate) fn status_line(text: &str) {
    eprint!("\r\x1b[K{text}");
    let _ = std::io::stderr().flush();
}

/// A bar over `total` items (`unit`: "requests", "runs"), hidden unless `show`.
pub(crate) fn counter(total: u64, unit: &str, show: bool) -> ProgressBar {
    let template = format!("{{bar:20}} {{pos}}/{{len}} {unit}  ETA {{eta}}  {{wide_msg}}");
    bar(total, &template, show)
}

/// A bar over a fixed time, position in milliseconds, hidden unless `show`.
pub(crate) fn timer(total: Duration, show: bool) -> ProgressBar {
    let ms = u64::try_from(total.as_millis()).unwrap_or(u64::MAX);
    bar(
        ms,
        "{bar:20} {elapsed}/{duration}  ETA {eta}  {wide_msg}",
        show,
    )
}

/// A bar over an experiment's runs on a terminal with the progress lines
/// above it; without a terminal the lines alone on stderr; nothing with `-q`.
pub(crate) struct RunsBar {
    bar: ProgressBar,
    quiet: bool,
}

impl RunsBar {
    /// A bar unless `quiet` or stderr is not a terminal.
    pub(crate) fn new(quiet: bool) -> RunsBar {
        let bar = counter(0, "runs", wanted(!quiet));
        RunsBar { bar, quiet }
    }

    /// Whether the bar is drawn.
    pub(crate) fn shown(&self) -> bool {
        !self.bar.is_hidden()
    }

    /// Move the bar: its length from the runner's events (which
    /// `--until-confident` may raise), one step per finished run.
    pub(crate) fn count(&self, e: &kurabe_lab::Event<'_>) {
        use kurabe_lab::Event;
        match e {
            Event::Begin { total, .. } | Event::RunStart { total, .. } => {
                self.bar.set_length(*total as u64);
            }
            Event::RunDone { .. } => self.bar.inc(1),
            _ => {}
        }
    }

    /// Name the run in flight on the bar.
    pub(crate) fn message(&self, text: String) {
        self.bar.set_message(text);
    }

    /// A progress line: above the bar, or on stderr without one; none with `-q`.
    pub(crate) fn line(&self, line: Option<String>) {
        match line {
            Some(line) if !self.quiet && self.bar.is_hidden() => eprintln!("{line}"),
            Some(line) if !self.quiet => self.bar.println(line),
            _ => {}
        }
    }

    /// Remove the bar.
    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

fn bar(total: u64, template: &str, show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    // The templates above are constant and valid; fall back to the default style if not.
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_bars_draw_nothing_and_count() {
        let b = counter(10, "runs", false);
        assert!(b.is_hidden());
        b.inc(3);
        assert_eq!(b.position(), 3);
        assert!(timer(Duration::from_secs(5), false).is_hidden());
    }
}
