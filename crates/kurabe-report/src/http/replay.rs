//! The replay summary of an [`HttpReport`] made by `kurabe replay`: what
//! was read, replayed and skipped (by reason, with the first few places),
//! the pace, and the recorded against the scheduled and achieved
//! duration; also printed alone by `kurabe replay --dry-run`.
//!
//! Owns how the summary reads. Must not compute it (the engine's
//! `load::replay` did) and must not let a log's bytes reach the terminal
//! unescaped (excerpts are the log's text).

use std::io::{self, Write};

use kurabe_model::http::HttpReport;
use kurabe_model::replay::ReplaySummary;

use crate::escape::terminal;

/// The summary alone (`--dry-run`).
pub fn replay_text(s: &ReplaySummary) -> String {
    let mut out = Vec::new();
    summary(s, None, &mut out).expect("writing to a Vec does not fail");
    String::from_utf8(out).expect("the summary is UTF-8")
}

/// The report's replay block, when it has one.
pub(super) fn text(r: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
    match &r.replay {
        Some(s) => {
            writeln!(out)?;
            summary(s, Some(r.duration_s), out)
        }
        None => Ok(()),
    }
}

fn summary(s: &ReplaySummary, achieved_s: Option<f64>, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "Replay of {} ({}): {} {}s read, {} replayable",
        terminal(&s.log),
        terminal(&s.log_format),
        s.lines_read,
        s.unit,
        s.replayable
    )?;
    writeln!(
        out,
        "  pace:                 {} at {}x, {} sends",
        plural(s.loops, "loop"),
        trim(s.speed),
        s.scheduled
    )?;
    writeln!(
        out,
        "  recorded duration:    {:.3} s",
        s.recorded_duration_s
    )?;
    writeln!(
        out,
        "  scheduled duration:   {:.3} s",
        s.scheduled_duration_s
    )?;
    if let Some(a) = achieved_s {
        writeln!(
            out,
            "  achieved duration:    {a:.3} s (last response included)"
        )?;
    }
    let skipped: u64 = s.skipped.iter().map(|k| k.count).sum();
    if skipped == 0 {
        return writeln!(out, "  skipped:              none");
    }
    writeln!(out, "  skipped:              {skipped}")?;
    for k in &s.skipped {
        writeln!(out, "    {:>8}  {}", k.count, k.text)?;
        for p in &k.first {
            writeln!(
                out,
                "              {} {}: {}",
                s.unit,
                p.place,
                terminal(&p.excerpt)
            )?;
        }
    }
    Ok(())
}

fn plural(n: u32, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// 2 as "2", 0.5 as "0.5".
fn trim(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kurabe_model::replay::{ReplayPlace, ReplaySkipped};

    #[test]
    fn the_summary_lists_skips_with_places_and_escapes_the_log() {
        let s = ReplaySummary {
            log: "access.log".into(),
            log_format: "combined or common".into(),
            unit: "line".into(),
            lines_read: 5,
            replayable: 3,
            scheduled: 6,
            skipped: vec![ReplaySkipped {
                reason: "no_body".into(),
                text: "body not in the log".into(),
                count: 2,
                first: vec![ReplayPlace {
                    place: 4,
                    excerpt: "POST /x \u{1b}[31m".into(),
                }],
            }],
            loops: 2,
            speed: 2.0,
            recorded_duration_s: 4.0,
            scheduled_duration_s: 6.0,
        };
        let t = replay_text(&s);
        assert_eq!(
            t,
            "\
Replay of access.log (combined or common): 5 lines read, 3 replayable
  pace:                 2 loops at 2x, 6 sends
  recorded duration:    4.000 s
  scheduled duration:   6.000 s
  skipped:              2
           2  body not in the log
              line 4: POST /x \\e[31m
"
        );
    }
}
