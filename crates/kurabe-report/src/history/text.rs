//! Text: a history as a terminal reads it — per series one line with the
//! latest value and its change points, each with the experiments around
//! it, the ratio with its interval and the verdict; and `kurabe check`'s
//! table.

use std::io::{self, Write};

use kurabe_model::history::{
    CheckReport, CheckRow, HistoryChange, HistoryReport, HistorySeries, Order,
};
use kurabe_model::stats::Verdict;

use crate::escape::terminal as esc;
use crate::{words, Render};

/// Plain-text history and check renderer.
pub struct HistoryText;

/// `worse`, `better`, `within noise`, …: the verdict as one word group.
pub(crate) fn verdict_word(v: &Verdict) -> &'static str {
    match v {
        Verdict::Better => "better",
        Verdict::Worse => "worse",
        Verdict::WithinNoise => "within noise",
        Verdict::Inconclusive { .. } => "inconclusive",
        Verdict::NoInterval { .. } => "no interval",
    }
}

/// ` · worse` or ` · better` after a phrase (the phrase already says
/// "within noise" or "inconclusive"); empty otherwise.
pub(crate) fn verdict_suffix(v: &Verdict) -> &'static str {
    match v {
        Verdict::Better => " · better",
        Verdict::Worse => " · worse",
        _ => "",
    }
}

/// `get / fast / cpu_ms_per_request`.
pub(crate) fn series_title(s: &HistorySeries) -> String {
    format!("{} / {} / {}", s.workload, s.variant, s.metric)
}

/// `host 0123… (bench1, Intel …), 3 other hosts` or `all hosts`.
pub(crate) fn hosts_line(r: &HistoryReport) -> String {
    let Some(fp) = &r.host_fingerprint else {
        return format!("all hosts ({})", r.hosts.len());
    };
    let mine = r.hosts.iter().find(|h| &h.fingerprint == fp);
    let names = mine.map_or(String::new(), |h| {
        format!(" ({}, {})", h.hostnames.join(", "), h.cpu_model)
    });
    let others = r.hosts.len().saturating_sub(1);
    let more = match others {
        0 => String::new(),
        n => format!("; {n} other host fingerprint(s): --host FP or --all-hosts"),
    };
    format!("host {fp}{names}{more}")
}

/// Where a change lies and what it is, the one sentence every format
/// shows: `at e12 (abc1234), after e11 (9f00e1d): 1.10× … · worse`. Each
/// part is escaped by `esc`; `strong` wraps the experiment and `span` the
/// phrase (HTML's markup; empty for plain text).
pub(crate) fn change_sentence(
    c: &HistoryChange,
    esc: &dyn Fn(&str) -> String,
    strong: [&str; 2],
    span: [&str; 2],
) -> String {
    format!(
        "at {}{}{} ({}), after {} ({}): {}{}{}{}",
        strong[0],
        esc(&c.experiment),
        strong[1],
        esc(&c.rev),
        esc(&c.previous_experiment),
        esc(&c.previous_rev),
        span[0],
        esc(&c.phrase),
        verdict_suffix(&c.verdict),
        span[1]
    )
}

/// A change in short, unescaped: `e12 (abc1234): 1.10× … · worse`.
pub(crate) fn change_short(c: &HistoryChange) -> String {
    format!(
        "{} ({}): {}{}",
        c.experiment,
        c.rev,
        c.phrase,
        verdict_suffix(&c.verdict)
    )
}

/// The latest value of a series in its unit, `none` when it has no point.
pub(crate) fn latest(s: &HistorySeries, none: &str) -> String {
    s.points
        .last()
        .map_or(none.to_owned(), |p| words::value(s.unit, p.value))
}

fn series(s: &HistorySeries, out: &mut dyn Write) -> io::Result<()> {
    let changes = match s.changes.len() {
        0 => "no change".to_owned(),
        1 => "1 change".to_owned(),
        n => format!("{n} changes"),
    };
    let summarised = match s.points.iter().filter(|p| p.from_summary).count() {
        0 => String::new(),
        n => format!(" ({n} from summary only)"),
    };
    writeln!(
        out,
        "{}: {} points{summarised}, latest {}, {changes}",
        esc(&series_title(s)),
        s.points.len(),
        latest(s, "-"),
    )?;
    for c in &s.changes {
        let sentence = change_sentence(c, &|t| esc(t).into_owned(), ["", ""], ["", ""]);
        writeln!(out, "  change {sentence}")?;
    }
    Ok(())
}

impl Render<HistoryReport> for HistoryText {
    fn render(&self, r: &HistoryReport, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "history of {} · {}", esc(&r.name), esc(&hosts_line(r)))?;
        let experiments = r.series.iter().map(|s| s.points.len()).max().unwrap_or(0);
        let order = match r.order {
            Order::Commit => "commit",
            Order::Time => "time",
        };
        writeln!(out, "{experiments} experiments in {order} order\n")?;
        for s in &r.series {
            series(s, out)?;
        }
        Ok(())
    }
}

/// `  get / fast / cpu_ms_per_request: 9.4 vs 8.0 · 1.18× … · worse`.
fn check_row(row: &CheckRow, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "  {} / {} / {}: {} vs {} · {}{}",
        esc(&row.workload),
        esc(&row.variant),
        esc(&row.metric),
        words::value(row.unit, row.value),
        words::value(row.unit, row.baseline_value),
        esc(&row.phrase),
        verdict_suffix(&row.verdict)
    )
}

impl Render<CheckReport> for HistoryText {
    fn render(&self, r: &CheckReport, out: &mut dyn Write) -> io::Result<()> {
        let (id, rev, name) = (esc(&r.experiment), esc(&r.rev), esc(&r.name));
        if r.baseline.is_empty() {
            writeln!(out, "check {id} ({rev}) of {name}: thresholds")?;
            return check_thresholds(r, out);
        }
        writeln!(
            out,
            "check {id} ({rev}) of {name} against {} (experiments {})",
            esc(&r.baseline),
            esc(&r.baseline_experiments.join(" "))
        )?;
        for row in &r.rows {
            check_row(row, out)?;
        }
        writeln!(
            out,
            "{} worse, {} better, {} checked",
            r.worse,
            r.better,
            r.rows.len()
        )?;
        check_thresholds(r, out)
    }
}

/// The `--threshold`s of a check, workload by workload (nothing without).
fn check_thresholds(r: &CheckReport, out: &mut dyn Write) -> io::Result<()> {
    let escape = |s: &str| esc(s).into_owned();
    for w in &r.thresholds {
        writeln!(out, "{}", esc(&w.workload))?;
        crate::thresholds::text(&w.variants, &escape, out)?;
    }
    Ok(())
}
