//! Progress bars on stderr (indicatif): done/total and ETA for work that can
//! run longer than a few seconds.
//!
//! Owns the bar styles and the rule that a bar appears only on a terminal
//! and never with `-q`. Must not measure anything: libraries report progress
//! through their own callbacks and counters, commands feed the bar from them.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Whether to draw: asked for (not `-q`) and stderr is a terminal.
pub(crate) fn wanted(asked: bool) -> bool {
    asked && std::io::stderr().is_terminal()
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

/// Move `bar` over an experiment's runs: its length from the runner's
/// events (which `--until-confident` may raise), one step per finished run.
pub(crate) fn count_runs(bar: &ProgressBar, e: &kurabe_lab::Event<'_>) {
    use kurabe_lab::Event;
    match e {
        Event::Begin { total, .. } | Event::RunStart { total, .. } => {
            bar.set_length(*total as u64);
        }
        Event::RunDone { .. } => bar.inc(1),
        _ => {}
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
