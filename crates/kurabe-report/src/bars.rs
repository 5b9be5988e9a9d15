//! Progress on stderr while work runs: indicatif bars with done/total and
//! ETA, and the status line rewritten in place where no bar fits.
//!
//! Owns the bar styles, what each kind of work shows on its bar (an
//! experiment's runs, an HTTP load, the UnixBench steps, a watch), and the
//! rule that a bar appears only on a terminal and never with `-q`. The one
//! part of this crate that draws on the terminal. Must not measure: the
//! libraries report progress as data (events, counters) and the binary
//! feeds the bars from them.

use std::io::{IsTerminal, Write as _};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use kurabe_model::progress::Event;
use kurabe_model::record::RunStatus;

use crate::escape::terminal_lines;
use crate::progress::{event_line, run_in_flight};

/// Whether to draw: asked for (not `-q`) and stderr is a terminal.
pub fn wanted(asked: bool) -> bool {
    asked && std::io::stderr().is_terminal()
}

/// Rewrite the status line on stderr in place: `text`, or nothing to clear it.
fn status_line(text: &str) {
    eprint!("\r\x1b[K{text}");
    let _ = std::io::stderr().flush();
}

/// A bar over `total` items (`unit`: "requests", "runs"), hidden unless `show`.
fn counter(total: u64, unit: &str, show: bool) -> ProgressBar {
    let template = format!("{{bar:20}} {{pos}}/{{len}} {unit}  ETA {{eta}}  {{wide_msg}}");
    bar(total, &template, show)
}

/// A bar over a fixed time, position in milliseconds, hidden unless `show`.
fn timer(total: Duration, show: bool) -> ProgressBar {
    bar(
        millis(total),
        "{bar:20} {elapsed}/{duration}  ETA {eta}  {wide_msg}",
        show,
    )
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
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

/// A bar over an experiment's runs on a terminal with the progress lines
/// above it; without a terminal the lines alone on stderr; nothing with `-q`.
pub struct RunsBar {
    bar: ProgressBar,
    quiet: bool,
}

impl RunsBar {
    /// A bar unless `quiet` or stderr is not a terminal.
    pub fn new(quiet: bool) -> RunsBar {
        let bar = counter(0, "runs", wanted(!quiet));
        RunsBar { bar, quiet }
    }

    /// Move the bar: its length from the runner's events (which
    /// `--until-confident` may raise), one step per finished run.
    pub fn count(&self, e: &Event<'_>) {
        match e {
            Event::Begin { total, .. } | Event::RunStart { total, .. } => {
                self.bar.set_length(*total as u64);
            }
            Event::RunDone { .. } => self.bar.inc(1),
            _ => {}
        }
    }

    /// `kurabe run`'s view of `e`: counted; on a bar the run in flight is
    /// its message and a run that did not fail says nothing; every other
    /// event (all of them without a bar) gets its line.
    pub fn event(&self, e: &Event<'_>) {
        self.count(e);
        if !self.bar.is_hidden() {
            if let Some(now) = run_in_flight(e) {
                self.bar.set_message(now);
                return;
            }
            if matches!(e, Event::RunDone { record, .. } if record.status != RunStatus::Failed) {
                return;
            }
        }
        self.line(Some(terminal_lines(&event_line(e))));
    }

    /// A progress line: above the bar, or on stderr without one; none with `-q`.
    pub fn line(&self, line: Option<String>) {
        match line {
            Some(line) if !self.quiet && self.bar.is_hidden() => eprintln!("{line}"),
            Some(line) if !self.quiet => self.bar.println(line),
            _ => {}
        }
    }

    /// Remove the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// An HTTP load's bar: over requests when their number is known (`-n`),
/// else over the time limit (`-t`).
pub struct LoadBar {
    bar: ProgressBar,
    timed: bool,
}

impl LoadBar {
    /// A bar over `requests`, else over `time` (a load's stop condition as
    /// (requests, time limit)); hidden unless `show`.
    pub fn new((requests, time): (Option<u64>, Option<Duration>), show: bool) -> LoadBar {
        match requests {
            Some(n) => LoadBar {
                bar: counter(n, "requests", show),
                timed: false,
            },
            None => LoadBar {
                bar: timer(time.unwrap_or_default(), show),
                timed: true,
            },
        }
    }

    /// Move the bar: over time when timed, else over requests done or failed.
    pub fn tick(&self, done: u64, failed: u64, elapsed: Duration) {
        if self.timed {
            self.bar.set_position(millis(elapsed));
            self.bar
                .set_message(format!("{done} done, {failed} failed"));
        } else {
            self.bar.set_position(done + failed);
            self.bar.set_message(format!("{failed} failed"));
        }
    }

    /// Remove the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// `kurabe system`'s bar: one step per test and copy count, a step
/// starting at its first pass, the pass in flight as the message.
pub struct StepsBar {
    bar: ProgressBar,
    steps: u64,
    started: u64,
}

impl StepsBar {
    /// A bar over `steps` tests, hidden with `quiet` or off a terminal.
    pub fn new(steps: u64, quiet: bool) -> StepsBar {
        let bar = counter(steps, "tests", wanted(!quiet));
        StepsBar {
            bar,
            steps,
            started: 0,
        }
    }

    /// Pass `pass` of `passes` (0: the precision rule decides) of `test` at `copies` is starting.
    pub fn pass(&mut self, copies: u32, test: &str, pass: u32, passes: u32) {
        if pass == 1 {
            // The steps before this one are done.
            self.bar.set_position(self.started.min(self.steps));
            self.started += 1;
        }
        let message = crate::system_pass(copies, test, pass, passes);
        self.bar.set_message(message);
    }

    /// Remove the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// A live line of work without a known count: over time with an ETA when
/// its `duration` is known (`watch -d`), else the status line rewritten in
/// place (`watch`, a fleet run); nothing unless `show`.
pub struct LiveLine {
    bar: ProgressBar,
    show: bool,
}

impl LiveLine {
    /// A timer bar over `duration`, or the status line without one.
    pub fn new(duration: Option<Duration>, show: bool) -> LiveLine {
        let bar = match duration {
            Some(d) => timer(d, show),
            None => ProgressBar::hidden(),
        };
        LiveLine { bar, show }
    }

    /// Show `text`, `elapsed` into the work (which only a bar over a known
    /// duration uses).
    pub fn update(&self, elapsed: Duration, text: &str) {
        if !self.bar.is_hidden() {
            self.bar.set_position(millis(elapsed));
            self.bar.set_message(text.to_owned());
        } else if self.show {
            status_line(text);
        }
    }

    /// Remove the bar and clear the line.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
        if self.show {
            status_line("");
        }
    }

    /// A fleet coordinator's event `e`: its line on stderr
    /// ([`crate::fleet_events::coord_line`]), or its live progress here.
    pub fn coord_event(&self, e: &kurabe_model::fleet::CoordEvent) {
        if let Some(line) = crate::fleet_events::coord_line(e) {
            eprintln!("{line}");
        } else if let Some(progress) = crate::fleet_events::progress_text(e) {
            self.update(Duration::ZERO, &progress);
        }
    }
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

    #[test]
    fn a_load_bar_counts_requests_when_known_else_time() {
        let by_count = LoadBar::new((Some(100), Some(Duration::from_secs(9))), false);
        by_count.tick(40, 2, Duration::from_secs(1));
        assert_eq!(by_count.bar.position(), 42);
        let by_time = LoadBar::new((None, Some(Duration::from_secs(9))), false);
        by_time.tick(40, 2, Duration::from_millis(1500));
        assert_eq!(by_time.bar.position(), 1500);
    }

    #[test]
    fn a_steps_bar_counts_a_step_done_when_the_next_begins() {
        let mut b = StepsBar::new(2, true);
        b.pass(1, "dhry2reg", 1, 3);
        assert_eq!(b.bar.position(), 0);
        b.pass(1, "dhry2reg", 2, 3);
        b.pass(1, "spawn", 1, 3);
        assert_eq!(b.bar.position(), 1);
        b.pass(2, "spawn", 1, 3);
        b.pass(2, "spawn", 1, 3);
        assert_eq!(b.bar.position(), 2, "never past the end");
    }
}
