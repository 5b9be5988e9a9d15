//! Text and Markdown renderers for system reports and comparisons.
//!
//! The text layout follows UnixBench's own report line for line (result
//! block `%-40s %12.1f %-5s (%.1f s, %d samples)`, then the BASELINE /
//! RESULT / INDEX table and the "System Benchmarks Index Score" line), so a
//! reader of one reads the other — and `kurabe system import` reads kurabe's
//! text back. kurabe's additions go at the end of lines (the ± spread) or on
//! lines of their own (the score's interval). Renderers write to any
//! `io::Write`; colour and TTY decisions belong to the caller. JSON is plain
//! serde of the model and needs no renderer.

use std::io::{self, Write};

use kurabe_model::system::{
    CompareRow, SystemCompare, SystemReport, SystemRun, SystemSource, SystemTest, SystemVerdict,
};

const RULE: &str = "------------------------------------------------------------------------";

fn copies_text(n: u32) -> String {
    if n == 1 {
        "1 parallel copy".into()
    } else {
        format!("{n} parallel copies")
    }
}

fn pct(lo: f64, hi: f64, mid: f64) -> f64 {
    (hi - lo) / 2.0 / mid * 100.0
}

/// UnixBench-style text report.
pub fn text(r: &SystemReport, w: &mut dyn Write) -> io::Result<()> {
    let origin = match r.source {
        SystemSource::Kurabe => format!(
            "kurabe system {} mode (UnixBench-compatible System Benchmarks Index)",
            r.mode.as_deref().unwrap_or("default")
        ),
        SystemSource::UnixbenchImport => {
            "imported UnixBench report (single numbers, no spread)".into()
        }
    };
    writeln!(w, "   {origin}")?;
    writeln!(w)?;
    writeln!(w, "   System: {}: GNU/Linux", r.host)?;
    writeln!(w, "   OS: GNU/Linux -- {}", r.kernel)?;
    writeln!(w, "   Machine: {}", r.arch)?;
    writeln!(w)?;
    for run in &r.runs {
        writeln!(w, "{RULE}")?;
        writeln!(w, "Benchmark Run: {}", r.time)?;
        let cpus = r
            .cpus
            .map(|c| format!("{c} CPU{}", if c == 1 { "" } else { "s" }));
        writeln!(
            w,
            "{} in system; running {} of tests",
            cpus.unwrap_or_else(|| "? CPUs".into()),
            copies_text(run.copies)
        )?;
        writeln!(w)?;
        run_text(run, w)?;
        precision_text(r, run, w)?;
    }
    if r.mode.as_deref() == Some("quick") {
        writeln!(
            w,
            "Quick mode: 5 passes of 0.5 s for the fast tests, 3 of 0.8-1.5 s for the slow ones\n\
             (UnixBench: 10 x 10 s and 3 x 30-60 s). The intervals above are the precision that buys."
        )?;
    }
    if r.interrupted {
        writeln!(
            w,
            "Interrupted (Ctrl-C): tests that did not finish are missing."
        )?;
    }
    Ok(())
}

fn run_text(run: &SystemRun, w: &mut dyn Write) -> io::Result<()> {
    for t in &run.tests {
        if let Some(err) = &t.error {
            writeln!(
                w,
                "{:<40} {:>12} {:<5} FAILED: {err}",
                t.name, "---", t.unit
            )?;
            continue;
        }
        write!(
            w,
            "{:<40} {:12.1} {:<5} ({:.1} s, {} samples)",
            t.name, t.result, t.unit, t.time_s, t.samples
        )?;
        if let (Some(lo), Some(hi)) = (t.ci95_low, t.ci95_high) {
            write!(w, "  ±{:.1} %", pct(lo, hi, t.result))?;
        }
        writeln!(w)?;
        modes_text(t, w)?;
    }
    writeln!(w)?;
    let head = if run.partial {
        "System Benchmarks Partial Index"
    } else {
        "System Benchmarks Index Values"
    };
    writeln!(
        w,
        "{:<40} {:>12} {:>12} {:>8}",
        head, "BASELINE", "RESULT", "INDEX"
    )?;
    for t in &run.tests {
        match (t.baseline, t.index) {
            (Some(b), Some(i)) => {
                writeln!(w, "{:<40} {:12.1} {:12.1} {:8.1}", t.name, b, t.result, i)?
            }
            _ => writeln!(
                w,
                "{:<40} {:>12} {:12.1} {:>8}",
                t.name, "---", t.result, "---"
            )?,
        }
    }
    writeln!(w, "{:<40} {:>12} {:>12} {:>8}", "", "", "", "========")?;
    let title = if run.partial {
        "System Benchmarks Index Score (Partial Only)"
    } else {
        "System Benchmarks Index Score"
    };
    match run.score {
        Some(s) => writeln!(w, "{title:<66} {s:8.1}")?,
        None => writeln!(w, "{title:<66} {:>8}", "---")?,
    }
    if let (Some(s), Some(lo), Some(hi)) = (run.score, run.score_ci95_low, run.score_ci95_high) {
        writeln!(
            w,
            "95 % interval of the score: {lo:.1} – {hi:.1} (±{:.1} %)",
            pct(lo, hi, s)
        )?;
    } else if run.tests.iter().any(|t| !t.passes.is_empty()) {
        writeln!(
            w,
            "95 % interval of the score: not available (a test has fewer than 2 kept passes)"
        )?;
    }
    writeln!(w)
}

/// Distinct placements among a test's passes, one line.
fn modes_text(t: &SystemTest, w: &mut dyn Write) -> io::Result<()> {
    if t.modes.is_empty() {
        return Ok(());
    }
    let parts: Vec<String> = t
        .modes
        .iter()
        .map(|m| {
            format!(
                "{:.1} {} in {}/{} passes",
                m.rate,
                t.unit,
                m.passes,
                t.passes.len()
            )
        })
        .collect();
    writeln!(
        w,
        "  {} modes (placements): {}",
        t.modes.len(),
        parts.join("; ")
    )
}

/// What a precision-driven run reached, and what limited the score.
fn precision_text(r: &SystemReport, run: &SystemRun, w: &mut dyn Write) -> io::Result<()> {
    if let Some(rule) = r.precision {
        let reached = match (run.score, run.score_ci95_low, run.score_ci95_high) {
            (Some(s), Some(lo), Some(hi)) => format!("±{:.1} %", pct(lo, hi, s)),
            _ => "no interval".into(),
        };
        writeln!(
            w,
            "Precision: target ±{:.1} %, reached {reached} in {:.0} s (budget {:.0} s)",
            rule.target * 100.0,
            run.elapsed_s.unwrap_or(0.0),
            rule.max_time_s
        )?;
        let short: Vec<String> = run
            .tests
            .iter()
            .filter(|t| t.stop.as_deref().is_some_and(|s| s != "target"))
            .map(|t| format!("{} ({})", t.id, t.stop.as_deref().unwrap_or("")))
            .collect();
        if !short.is_empty() {
            writeln!(w, "Tests short of the target: {}", short.join(", "))?;
        }
    }
    if !run.limited_by.is_empty() {
        let parts: Vec<String> = run
            .limited_by
            .iter()
            .filter_map(|id| run.tests.iter().find(|t| &t.id == id))
            .map(|t| {
                let share = t.score_variance_share.unwrap_or(0.0) * 100.0;
                format!("{} ({share:.0} % of the variance)", t.id)
            })
            .collect();
        writeln!(w, "Score precision limited by: {}", parts.join(", "))?;
    }
    if r.precision.is_some() || !run.limited_by.is_empty() {
        writeln!(w)?;
    }
    Ok(())
}

/// Markdown report: one table per copy count.
pub fn markdown(r: &SystemReport, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w, "# System Benchmarks Index — {}", r.host)?;
    writeln!(w)?;
    writeln!(
        w,
        "{} · kernel {} · {} · {}",
        match r.source {
            SystemSource::Kurabe =>
                format!("kurabe, {} mode", r.mode.as_deref().unwrap_or("default")),
            SystemSource::UnixbenchImport => "imported UnixBench report".into(),
        },
        r.kernel,
        r.arch,
        r.time
    )?;
    for run in &r.runs {
        writeln!(w)?;
        writeln!(w, "## {}", copies_text(run.copies))?;
        writeln!(w)?;
        writeln!(
            w,
            "| Test | Result | Unit | Time (s) | Samples | 95 % CI | Baseline | Index |"
        )?;
        writeln!(w, "|---|---:|---|---:|---:|---|---:|---:|")?;
        for t in &run.tests {
            writeln!(
                w,
                "| {} | {:.1} | {} | {:.1} | {} | {} | {} | {} |",
                t.name,
                t.result,
                t.unit,
                t.time_s,
                t.samples,
                ci_text(t),
                t.baseline
                    .map(|b| format!("{b:.1}"))
                    .unwrap_or_else(|| "—".into()),
                t.index
                    .map(|i| format!("{i:.1}"))
                    .unwrap_or_else(|| "—".into()),
            )?;
        }
        writeln!(w)?;
        let score = run
            .score
            .map(|s| format!("{s:.1}"))
            .unwrap_or_else(|| "—".into());
        write!(
            w,
            "**System Benchmarks Index Score{}: {score}**",
            if run.partial { " (partial)" } else { "" }
        )?;
        if let (Some(s), Some(lo), Some(hi)) = (run.score, run.score_ci95_low, run.score_ci95_high)
        {
            write!(w, " (95 % CI {lo:.1} – {hi:.1}, ±{:.1} %)", pct(lo, hi, s))?;
        }
        writeln!(w)?;
    }
    Ok(())
}

fn ci_text(t: &SystemTest) -> String {
    match (t.ci95_low, t.ci95_high) {
        (Some(lo), Some(hi)) => format!("±{:.1} %", pct(lo, hi, t.result)),
        _ if t.error.is_some() => "failed".into(),
        _ => "—".into(),
    }
}

fn verdict_text(v: SystemVerdict) -> &'static str {
    match v {
        SystemVerdict::Better => "better",
        SystemVerdict::Worse => "worse",
        SystemVerdict::WithinNoise => "within noise",
        SystemVerdict::Inconclusive => "inconclusive",
        SystemVerdict::NoVerdict => "no verdict",
    }
}

fn opt(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.1}")).unwrap_or_else(|| "---".into())
}

fn ratio_cells(r: &CompareRow) -> (String, String) {
    let ratio = r
        .ratio
        .map(|x| format!("{x:.3}"))
        .unwrap_or_else(|| "---".into());
    let ci = match (r.ratio_ci95_low, r.ratio_ci95_high) {
        (Some(lo), Some(hi)) => format!("[{lo:.3}, {hi:.3}]"),
        _ => "---".into(),
    };
    (ratio, ci)
}

/// Text comparison table.
pub fn compare_text(c: &SystemCompare, w: &mut dyn Write) -> io::Result<()> {
    for (tag, s) in [("A", &c.a), ("B", &c.b)] {
        let src = match s.source {
            SystemSource::Kurabe => "kurabe run",
            SystemSource::UnixbenchImport => "UnixBench import",
        };
        writeln!(
            w,
            "{tag}: {} ({src}; {} {} {})",
            s.label, s.host, s.kernel, s.arch
        )?;
    }
    if c.runs.is_empty() {
        writeln!(
            w,
            "\nA and B have no copy count in common: nothing to compare."
        )?;
    }
    for run in &c.runs {
        writeln!(w)?;
        writeln!(
            w,
            "{} — B/A > 1 means B is faster; noise band ±{:.0} %",
            copies_text(run.copies),
            c.noise_band * 100.0
        )?;
        writeln!(
            w,
            "{:<40} {:>12} {:>12} {:>7} {:>17}  VERDICT",
            "TEST", "A", "B", "B/A", "95 % CI"
        )?;
        let mut notes: Vec<String> = Vec::new();
        for r in run.tests.iter().chain(std::iter::once(&run.score)) {
            let (ratio, ci) = ratio_cells(r);
            let mut verdict = verdict_text(r.verdict).to_string();
            if let Some(reason) = &r.reason {
                if let Some(k) = notes.iter().position(|n| n == reason) {
                    verdict.push_str(&format!(" [{}]", k + 1));
                } else {
                    notes.push(reason.clone());
                    verdict.push_str(&format!(" [{}]", notes.len()));
                }
            }
            if r.id == "score" {
                writeln!(w)?;
            }
            writeln!(
                w,
                "{:<40} {:>12} {:>12} {:>7} {:>17}  {}",
                r.name,
                opt(r.result_a),
                opt(r.result_b),
                ratio,
                ci,
                verdict
            )?;
        }
        for (i, n) in notes.iter().enumerate() {
            writeln!(w, "[{}] {n}", i + 1)?;
        }
    }
    Ok(())
}

/// Markdown comparison table.
pub fn compare_markdown(c: &SystemCompare, w: &mut dyn Write) -> io::Result<()> {
    writeln!(
        w,
        "# System Benchmarks Index: {} vs {}",
        c.a.label, c.b.label
    )?;
    for run in &c.runs {
        writeln!(w)?;
        writeln!(w, "## {}", copies_text(run.copies))?;
        writeln!(w)?;
        writeln!(w, "| Test | A | B | B/A | 95 % CI | Verdict |")?;
        writeln!(w, "|---|---:|---:|---:|---|---|")?;
        for r in run.tests.iter().chain(std::iter::once(&run.score)) {
            let (ratio, ci) = ratio_cells(r);
            let reason = r
                .reason
                .as_deref()
                .map(|s| format!(" — {s}"))
                .unwrap_or_default();
            writeln!(
                w,
                "| {} | {} | {} | {ratio} | {ci} | {}{reason} |",
                r.name,
                opt(r.result_a),
                opt(r.result_b),
                verdict_text(r.verdict)
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::score::PassSample;
    use kurabe_model::system::SystemRun;

    fn report() -> SystemReport {
        let spec = crate::TestId::Pipe.spec();
        let passes: Vec<PassSample> = [1000.0, 1010.0, 990.0, 1005.0]
            .iter()
            .map(|&c| PassSample {
                count: c * 10.0,
                time_s: 10.0,
            })
            .collect();
        let mut run = SystemRun {
            copies: 2,
            score: None,
            partial: true,
            score_ci95_low: None,
            score_ci95_high: None,
            elapsed_s: None,
            limited_by: Vec::new(),
            tests: vec![crate::test_result(spec, &passes, None)],
        };
        crate::finish_run(&mut run);
        SystemReport {
            schema_version: 1,
            source: SystemSource::Kurabe,
            host: "h".into(),
            kernel: "6.1".into(),
            arch: "x86_64".into(),
            time: "2026-11-29T00:00:00Z".into(),
            cpus: Some(2),
            mode: Some("quick".into()),
            interrupted: false,
            precision: None,
            pin: None,
            runs: vec![run],
        }
    }

    #[test]
    fn text_keeps_unixbench_lines_and_adds_the_spread() {
        let mut out = Vec::new();
        text(&report(), &mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(
            s.contains("2 CPUs in system; running 2 parallel copies of tests"),
            "{s}"
        );
        // %-40s %12.1f %-5s (%.1f s, %d samples), then kurabe's spread.
        assert!(s.contains("Pipe Throughput                                1005.0 lps   (10.0 s, 3 samples)  ±1.2 %"), "{s}");
        assert!(s.contains(
            "System Benchmarks Partial Index              BASELINE       RESULT    INDEX"
        ));
        assert!(s.contains(
            "Pipe Throughput                               12440.0       1005.0      0.8"
        ));
        let score_line = format!(
            "{:<66} {:8.1}",
            "System Benchmarks Index Score (Partial Only)", 0.8
        );
        assert!(s.contains(&score_line), "{s}");
        assert!(s.contains("95 % interval of the score:"));
        // And it reads back.
        let back = crate::import::parse(&s).unwrap();
        assert!((back.runs[0].tests[0].result - 1005.0).abs() < 0.05);
    }

    #[test]
    fn markdown_has_one_table_per_copy_count() {
        let mut out = Vec::new();
        markdown(&report(), &mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(s.contains("## 2 parallel copies"));
        assert!(
            s.contains("| Pipe Throughput | 1005.0 | lps | 10.0 | 3 | ±1.2 %"),
            "{s}"
        );
    }
}
