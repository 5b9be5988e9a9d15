//! The differential profile in words (`--profile`): for each variant
//! against the baseline, how much more (or less) CPU it spends per
//! execution or request and which functions account for it — "B spends
//! 12.3 ms/exec more; 82 % of it in `extra_work` (…)" — then a table of
//! the functions that changed most, each with its share of the
//! difference, its ratio with interval, and the verdict. Terminal text
//! and Markdown share the sentences; the table is plain text on a
//! terminal (fits 100 columns) and a Markdown table in Markdown.
//!
//! Must not compute: the comparison is kurabe-model's.

use std::io::{self, Write};

use kurabe_model::profile::{
    FunctionChange, Per, ProfileComparison, ProfileReport, RunProfile, TOP_FUNCTIONS,
};
use kurabe_model::stats::{Comparison, Verdict};

/// Terminal lines fit this many columns.
const WIDTH: usize = 100;

/// Widest function name shown on a terminal line (longer ones are cut
/// with `…`; the JSON and Markdown keep them whole).
const NAME_WIDTH: usize = 32;

/// Every comparison of `report`: the sentence, then the table.
pub fn write_profile(
    report: &ProfileReport,
    markdown: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let per = per_word(report.per);
    let runs = report.runs.len();
    let kernel = report.runs.iter().all(|r| r.profile.kernel_frames);
    let frames = if kernel {
        "user and kernel"
    } else {
        "user-space"
    };
    let lost: u64 = report.runs.iter().map(|r| r.profile.lost_records).sum();
    let head = format!("Profile: on-CPU stacks ({frames}) sampled in {runs} runs");
    match markdown {
        true => writeln!(out, "\n### {head}\n")?,
        false => writeln!(out, "{head}")?,
    }
    lost_line(lost, out)?;
    for c in &report.comparisons {
        match markdown {
            true => writeln!(out, "{}", sentence(c, per))?,
            false => writeln!(out, "{}", crate::words::wrap(&sentence(c, per), WIDTH))?,
        }
        match markdown {
            true => markdown_table(c, per, out)?,
            false => text_table(c, per, out)?,
        }
    }
    Ok(())
}

/// One run's profile (`kurabe http --profile`: the server's, with
/// nothing to compare it with): its whole sampled CPU and the functions
/// with the most own CPU, each with its share.
pub fn write_run(
    run: &RunProfile,
    per: Per,
    markdown: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let per = per_word(per);
    let frames = match run.kernel_frames {
        true => "user and kernel",
        false => "user-space",
    };
    let samples = run.samples();
    let head = format!("Profile: on-CPU stacks ({frames}) of the server, {samples} samples");
    let whole = run.ms_per(samples);
    let line = format!(
        "{} ms/{per} of CPU sampled; the functions with the most own CPU:",
        ms(whole)
    );
    match markdown {
        true => writeln!(
            out,
            "\n### {head}\n\n{line}\n\n| Function | ms/{per} | Share |\n|:---|---:|---:|"
        )?,
        false => writeln!(
            out,
            "\n{head}\n{line}\n  {:>12}  {:>6}  function",
            format!("ms/{per}"),
            "share"
        )?,
    }
    for (f, v) in run.top_functions(TOP_FUNCTIONS) {
        let share = 100.0 * v / whole.max(f64::MIN_POSITIVE);
        match markdown {
            true => writeln!(out, "| `{}` | {v:.3} | {share:.0} % |", md_name(&f))?,
            false => writeln!(
                out,
                "  {v:>12.3}  {share:>5.0}%  {}",
                crate::chart::truncate(&f, NAME_WIDTH + 40)
            )?,
        }
    }
    lost_line(run.lost_records, out)
}

/// The note of records the kernel dropped, when it did.
fn lost_line(lost: u64, out: &mut dyn Write) -> io::Result<()> {
    match lost {
        0 => Ok(()),
        n => writeln!(
            out,
            "  ({n} sample records lost: kurabe read its ring too late)"
        ),
    }
}

/// A function's name in a Markdown cell.
fn md_name(f: &str) -> String {
    f.replace('|', "\\|").replace('`', "'")
}

/// `exec` or `req`.
fn per_word(per: Per) -> &'static str {
    match per {
        Per::Execution => "exec",
        Per::Request => "req",
    }
}

/// "B spends 12.3 ms/exec more; 82 % of it in `f` (2.9× [2.6, 3.2])".
pub fn sentence(c: &ProfileComparison, per: &str) -> String {
    let diff = c.candidate_ms - c.baseline_ms;
    let more = if diff >= 0.0 { "more" } else { "less" };
    let total = format!(
        "{} spends {} ms/{per} {more} CPU than {} ({}, {})",
        c.candidate,
        ms(diff.abs()),
        c.baseline,
        ratio_text(&c.total),
        short_verdict(c.total.verdict)
    );
    // Within noise, shares of a difference that may be nothing say nothing.
    let beyond = matches!(c.total.verdict, Verdict::Better | Verdict::Worse);
    let top = c
        .functions
        .iter()
        .filter(|_| beyond)
        .find(|f| (f.candidate_ms - f.baseline_ms) * diff > 0.0);
    match top {
        Some(f) => format!(
            "{total}; {:.0} % of it in `{}` ({})",
            f.share_of_difference_pct,
            f.function,
            function_change(f)
        ),
        None => total,
    }
}

/// A function's change: its ratio with interval where every run sampled
/// it, else its difference with interval; and the verdict.
fn function_change(f: &FunctionChange) -> String {
    let v = short_verdict(f.verdict);
    if f.ratio.ratio_low.is_some() {
        return format!("{}, {v}", ratio_text(&f.ratio));
    }
    let d = &f.difference;
    match (d.difference_low, d.difference_high) {
        (Some(l), Some(h)) => format!("{:+.2} ms [{l:+.2}, {h:+.2}], {v}", d.difference),
        _ => format!("{:+.2} ms, {v}", d.difference),
    }
}

/// `2.90× [2.60, 3.20]`, or the ratio alone, or `—`.
fn ratio_text(c: &Comparison) -> String {
    match (c.ratio, c.ratio_low, c.ratio_high) {
        (Some(r), Some(l), Some(h)) => format!("{r:.2}× [{l:.2}, {h:.2}]"),
        (Some(r), _, _) => format!("{r:.2}×"),
        _ => "—".to_owned(),
    }
}

/// The verdict in a word or two: CPU is lower-is-better, so "more" is worse.
fn short_verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Better => "less, beyond noise",
        Verdict::Worse => "more, beyond noise",
        Verdict::WithinNoise | Verdict::Inconclusive { .. } => "within noise",
        Verdict::NoInterval { .. } => "no interval",
    }
}

/// Milliseconds as they read: 12.3, 0.41, 0.012.
fn ms(v: f64) -> String {
    match v {
        v if v >= 10.0 => format!("{v:.1}"),
        v if v >= 0.1 => format!("{v:.2}"),
        v => format!("{v:.3}"),
    }
}

/// The functions as aligned text.
fn text_table(c: &ProfileComparison, per: &str, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "  {:>12}  {:>6}  {:<22}  {:<18}  function",
        format!("ms/{per}"),
        "share",
        "ratio",
        "verdict"
    )?;
    for f in &c.functions {
        let name = crate::chart::truncate(&f.function, NAME_WIDTH);
        writeln!(
            out,
            "  {:>+12.3}  {:>5.0}%  {:<22}  {:<18}  {name}",
            f.candidate_ms - f.baseline_ms,
            f.share_of_difference_pct,
            ratio_text(&f.ratio),
            short_verdict(f.verdict),
        )?;
    }
    writeln!(out)
}

/// The functions as a Markdown table.
fn markdown_table(c: &ProfileComparison, per: &str, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "\n| Function | Δ ms/{per} | Share | Ratio | Verdict |")?;
    writeln!(out, "|:---|---:|---:|:---|:---|")?;
    for f in &c.functions {
        writeln!(
            out,
            "| `{}` | {:+.3} | {:.0} % | {} | {} |",
            md_name(&f.function),
            f.candidate_ms - f.baseline_ms,
            f.share_of_difference_pct,
            ratio_text(&f.ratio),
            short_verdict(f.verdict)
        )?;
    }
    writeln!(out)
}
