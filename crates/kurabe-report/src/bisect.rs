//! `kurabe bisect`'s text: what was searched, each step with its two
//! verdicts, the skipped commits, the answer and how sure it is. JSON is
//! [`crate::Json`] over the same [`BisectReport`].

use std::fmt::Write as _;
use std::io::{self, Write};

use kurabe_model::stats::bisect::{BisectReport, Found, Side, Step};
use kurabe_model::stats::{metric, Comparison, Unit};

use crate::escape::terminal;
use crate::words::verdict;
use crate::{Render, Terminal};

impl Render<BisectReport> for Terminal {
    fn render(&self, r: &BisectReport, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(text(self, r).as_bytes())
    }
}

fn text(t: &Terminal, r: &BisectReport) -> String {
    let mut s = heading(r);
    let _ = writeln!(
        s,
        "  bad vs good: {}",
        phrase(&r.metric, &r.result.endpoints)
    );
    for (i, step) in r.result.steps.iter().enumerate() {
        s.push_str(&step_line(t, r, i + 1, step));
    }
    for skip in &r.result.skipped {
        let (commit, why) = (&skip.commit, &skip.reason);
        let _ = writeln!(s, "  skipped {}: {}", subject(r, commit), terminal(why));
    }
    s.push_str(&answer(t, r));
    s
}

/// The first line: what was searched, between which revisions.
fn heading(r: &BisectReport) -> String {
    format!(
        "bisect {}: {} / {} / {}, {} commits from {} (good) to {} (bad)\n",
        terminal(&r.plan),
        terminal(&r.variant),
        terminal(&r.workload),
        r.metric,
        r.commits,
        terminal(&r.good),
        terminal(&r.bad)
    )
}

fn phrase(metric_name: &str, c: &Comparison) -> String {
    let m = metric::lookup(metric_name);
    let unit = m.as_ref().map_or(Unit::Count, |m| m.unit);
    verdict(metric_name, unit, m.map(|m| m.direction), c).1
}

fn subject(r: &BisectReport, commit: &str) -> String {
    terminal(r.subjects.get(commit).map_or(commit, String::as_str)).into_owned()
}

fn step_line(t: &Terminal, r: &BisectReport, n: usize, step: &Step) -> String {
    let side = match step.side {
        Side::Good => t.paint("32", "good"),
        Side::Bad => t.paint("31", "bad"),
    };
    let how = if step.settled {
        String::new()
    } else {
        " (unsure: decided by the nearer mean)".to_owned()
    };
    format!(
        "  step {n}: {} → {side}{how}, {} runs; vs good {}; vs bad {}\n",
        subject(r, &step.commit),
        step.runs,
        phrase(&r.metric, &step.vs_good),
        phrase(&r.metric, &step.vs_bad)
    )
}

fn answer(t: &Terminal, r: &BisectReport) -> String {
    let sure = sureness(r);
    match &r.result.found {
        Found::Commit { first_bad, .. } => format!(
            "{} {}\n  {sure}\n",
            t.paint("1", "first commit where it changes:"),
            subject(r, first_bad)
        ),
        Found::Range { candidates } => {
            let names: Vec<String> = candidates.iter().map(|c| subject(r, c)).collect();
            format!(
                "{} one of (the earlier ones did not build): {}\n  {sure}\n",
                t.paint("1", "the change is in"),
                names.join("; ")
            )
        }
        Found::NoChange => format!(
            "{} the bad revision is not beyond the noise band from the good one\n",
            t.paint("1", "no change found:")
        ),
    }
}

/// How sure the answer is: the confidence when every decision settled.
fn sureness(r: &BisectReport) -> String {
    match r.result.confidence {
        Some(c) => format!(
            "every decision settled at 95 %, so the answer is right with probability ≥ {:.0} % (Bonferroni over the decisions)",
            c * 100.0
        ),
        None => "not sure: a decision was taken without a settled verdict (see the steps); run again with more --max-rounds".to_owned(),
    }
}
