//! `kurabe cmd` on the terminal: hyperfine's lines per command ("Time
//! (mean ± σ)", "Range (min … max)", runs), kurabe's memory line (max RSS
//! of the command itself, Σ PSS peak when it was sampled), hyperfine's
//! summary of relative speed, then kurabe's ratio with its 95 % interval
//! and verdict for every metric against the reference. Measured by
//! instructions (`--measure instructions`), the count takes the time
//! lines' place and the summary's, and the time under Cachegrind is shown
//! as what it is.
//!
//! Plain text (no colour), so it reads the same in a log.

use std::io::{self, Write};

use kurabe_model::bench::{CmdExport, CmdResult};
use kurabe_model::plan::Measure;
use kurabe_model::stats::{metric, Comparison, Summary, Unit};

use super::{reference, TimeUnit};
use crate::words;

/// Order of the verdict lines; other metrics follow by name.
const METRIC_ORDER: [&str; 6] = [
    "instructions",
    "wall_time_s",
    "user_time_s",
    "system_time_s",
    "max_rss_bytes",
    "pss_peak_bytes",
];

/// Every command's block, hyperfine's summary and kurabe's verdicts.
/// `unit`: hyperfine's `--time-unit` (default: chosen per command).
pub fn write_terminal(
    export: &CmdExport,
    unit: Option<TimeUnit>,
    out: &mut dyn Write,
) -> io::Result<()> {
    for (i, r) in export.results.iter().enumerate() {
        let is_reference = r.name == export.reference && export.results.len() > 1;
        command_block(i + 1, r, is_reference, unit, out)?;
        writeln!(out)?;
    }
    if let Some(why) = export.hardware_off {
        writeln!(out, "{}\n", words::hardware_off(why))?;
    }
    let Some(base) = reference(export) else {
        return Ok(());
    };
    if export.results.len() < 2 {
        return Ok(());
    }
    speed_summary(export, base, out)?;
    verdicts(export, base, out)?;
    match &export.profile {
        Some(p) => crate::profile::write_profile(p, false, out),
        None => Ok(()),
    }
}

/// hyperfine's two lines for one command, plus kurabe's memory line.
fn command_block(
    n: usize,
    r: &CmdResult,
    is_reference: bool,
    unit: Option<TimeUnit>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let u = unit.unwrap_or_else(|| TimeUnit::auto(r.mean));
    let t = |s: f64| u.format(s);
    let tag = if is_reference { " (reference)" } else { "" };
    writeln!(out, "Benchmark {n}: {}{tag}", r.name)?;
    if !r.instructions.is_empty() {
        instruction_lines(r, u, out)?;
        return failures(r, out);
    }
    let cpu = format!("[User: {}, System: {}]", t(r.user), t(r.system));
    match r.stddev {
        Some(sd) => {
            writeln!(
                out,
                "  Time (mean ± σ):     {:>8} ± {:>8}    {cpu}",
                t(r.mean),
                t(sd)
            )?;
            writeln!(
                out,
                "  Range (min … max):   {:>8} … {:>8}    {} runs",
                t(r.min),
                t(r.max),
                r.times.len()
            )?;
        }
        None => writeln!(
            out,
            "  Time (abs ≡):        {:>8}               {cpu}",
            t(r.mean)
        )?,
    }
    let pss = r.pss_peak_bytes.map_or(String::new(), |p| {
        format!("    [Σ PSS peak: {}]", words::mib(p))
    });
    writeln!(
        out,
        "  Memory (max RSS):    {:>8}{pss}",
        words::mib(r.max_rss_bytes)
    )?;
    if !r.counters.is_empty() {
        let line = words::counters_line(&r.counters);
        let mut head = "  Counters (mean):";
        for part in words::wrap_parts(&line, 100 - 23) {
            writeln!(out, "{head:<23}{part}")?;
            head = "";
        }
    }
    failures(r, out)
}

/// The count's lines in hyperfine's shape, then the time under Cachegrind.
fn instruction_lines(r: &CmdResult, u: TimeUnit, out: &mut dyn Write) -> io::Result<()> {
    let counts: Vec<f64> = r.instructions.iter().map(|&c| c as f64).collect();
    let Some(s) = Summary::of(&counts) else {
        return Ok(());
    };
    let n = |v: f64| words::value(Unit::Count, v.round());
    let sd = s.stdev.map_or(String::new(), |d| format!(" ± {}", n(d)));
    writeln!(out, "  Instructions (mean ± σ): {}{sd}", n(s.mean))?;
    writeln!(
        out,
        "  Range (min … max):       {} … {}    {} runs",
        n(s.min),
        n(s.max),
        counts.len()
    )?;
    writeln!(
        out,
        "  Time under Cachegrind:   {} (mean, not compared)",
        u.format(r.mean)
    )
}

/// hyperfine's warning when executions failed and were recorded (`-i`).
fn failures(r: &CmdResult, out: &mut dyn Write) -> io::Result<()> {
    let failed = r.exit_codes.iter().filter(|c| **c != Some(0)).count();
    if failed > 0 {
        writeln!(
            out,
            "  Warning: {failed} of {} runs ended with a non-zero exit code or a signal (ignored with -i).",
            r.exit_codes.len()
        )?;
    }
    Ok(())
}

/// hyperfine's "Summary": how many times faster the reference ran, ± the
/// spread hyperfine derives from both standard deviations.
fn speed_summary(export: &CmdExport, base: &CmdResult, out: &mut dyn Write) -> io::Result<()> {
    let words = match export.measure {
        Measure::Time => &TIME_WORDS,
        Measure::Instructions => &COUNT_WORDS,
    };
    writeln!(out, "Summary")?;
    writeln!(out, "  {} {}", base.name, words[4])?;
    let figure = |r: &CmdResult| match export.measure {
        Measure::Time => (r.mean, r.stddev),
        Measure::Instructions => count_mean_sd(r),
    };
    for r in export.results.iter().filter(|r| r.name != base.name) {
        let (b, c) = (figure(base), figure(r));
        if b.0 <= 0.0 || c.0 <= 0.0 {
            writeln!(out, "    (no ratio: {} is zero) {}", words[3], r.name)?;
            continue;
        }
        writeln!(out, "{} {}", times_than(b, c, words), r.name)?;
    }
    writeln!(out)
}

/// hyperfine's words for time: equal, less, more, what is zero, the verb.
const TIME_WORDS: [&str; 5] = ["As fast", "faster", "slower", "a mean time", "ran"];

/// The same for instruction counts.
const COUNT_WORDS: [&str; 5] = [
    "As many instructions",
    "fewer instructions",
    "more instructions",
    "a mean count",
    "executed",
];

/// Mean and standard deviation of `r`'s instruction counts.
fn count_mean_sd(r: &CmdResult) -> (f64, Option<f64>) {
    let counts: Vec<f64> = r.instructions.iter().map(|&c| c as f64).collect();
    Summary::of(&counts).map_or((0.0, None), |s| (s.mean, s.stdev))
}

/// How many times faster or slower (fewer or more) the reference's
/// `base` (mean, σ) is than `r`'s, ± the spread, in hyperfine's words
/// (both means above zero).
fn times_than(base: (f64, Option<f64>), r: (f64, Option<f64>), words: &[&str; 5]) -> String {
    let ratio = r.0 / base.0;
    let shown = if ratio >= 1.0 { ratio } else { 1.0 / ratio };
    let sd = match (base.1, r.1) {
        (Some(a), Some(b)) => {
            let cv = ((a / base.0).powi(2) + (b / r.0).powi(2)).sqrt();
            format!(" ± {:.2}", shown * cv)
        }
        _ => String::new(),
    };
    if format!("{shown:.2}") == "1.00" {
        format!("    {} (1.00{sd}) as", words[0])
    } else if ratio > 1.0 {
        format!("{shown:8.2}{sd} times {} than", words[1])
    } else {
        format!("{shown:8.2}{sd} times {} than", words[2])
    }
}

/// kurabe's judgement: per command and metric, the ratio against the
/// reference with its 95 % interval and verdict.
fn verdicts(export: &CmdExport, base: &CmdResult, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "Against {} (ratio of geometric means, 95 % interval, verdict)",
        base.name
    )?;
    let mut band = None;
    for r in export.results.iter().filter(|r| r.name != base.name) {
        writeln!(out, "  {}", r.name)?;
        let mut names: Vec<&String> = r.versus_reference.keys().collect();
        names.sort_by_key(|n| (METRIC_ORDER.iter().position(|m| m == n), n.as_str()));
        for name in names {
            let c = &r.versus_reference[name];
            band.get_or_insert(c.noise_band);
            // A long verdict ("inconclusive: this run could only detect
            // …") goes on under itself, within 100 columns.
            let label = words::label(name);
            let lead = 5 + label.chars().count().max(13);
            let text = words::wrap(&describe(name, c), 100 - lead);
            let text = text.replace('\n', &format!("\n{:18}", ""));
            writeln!(out, "    {label:<13} {text}")?;
        }
    }
    let band = band.map_or(String::new(), |b| format!(" (±{:.0} %)", b * 100.0));
    writeln!(
        out,
        "Better or worse only when the whole interval clears the noise band{band}; \
         otherwise within noise."
    )
}

/// "1.98× [1.95, 2.01] slower", in the words every report uses.
fn describe(name: &str, c: &Comparison) -> String {
    let known = metric::lookup(name);
    let unit = known.as_ref().map_or(Unit::Count, |m| m.unit);
    words::verdict(name, unit, known.map(|m| m.direction), c).1
}

#[cfg(test)]
mod tests {
    use super::*;
    use kurabe_model::bench::CmdExecution;
    use kurabe_model::stats::compare_metric_at;
    use std::collections::BTreeMap;

    fn result(name: &str, walls: &[f64], pss: Option<u64>) -> CmdResult {
        let execs: Vec<CmdExecution> = walls
            .iter()
            .map(|&w| CmdExecution {
                counters: Default::default(),
                wall_s: w,
                user_s: w / 4.0,
                system_s: w / 8.0,
                max_rss_bytes: 2 * 1048576,
                pss_peak_bytes: pss,
                exit_code: Some(0),
                instructions: None,
            })
            .collect();
        CmdResult::from_executions(name, name, BTreeMap::new(), &execs).unwrap()
    }

    fn export() -> CmdExport {
        let a = result("sleep 0.01", &[0.010, 0.011, 0.012], None);
        let mut b = result("sleep 0.02", &[0.020, 0.021, 0.022], Some(3 * 1048576));
        let wall = metric::lookup("wall_time_s").unwrap();
        let c = compare_metric_at(
            "wall_time_s",
            &a.times,
            &b.times,
            wall.direction,
            0.02,
            0.95,
        );
        b.versus_reference.insert("wall_time_s".into(), c);
        CmdExport {
            results: vec![a, b],
            schema_version: 1,
            experiment_id: None,
            reference: "sleep 0.01".into(),
            seed: 1,
            rounds: 3,
            block_size: 1,
            shell_overhead_s: 0.0,
            measure: Default::default(),
            shell_overhead_instructions: None,
            hardware_off: None,
            profile: None,
        }
    }

    fn render(unit: Option<TimeUnit>) -> String {
        let mut out = Vec::new();
        write_terminal(&export(), unit, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn hyperfine_lines_then_summary_then_verdicts() {
        let text = render(None);
        assert!(
            text.contains("Benchmark 1: sleep 0.01 (reference)\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "  Time (mean ± σ):      11.0 ms ±   1.0 ms    [User: 2.8 ms, System: 1.4 ms]"
            ),
            "{text}"
        );
        assert!(
            text.contains("  Range (min … max):    10.0 ms …  12.0 ms    3 runs"),
            "{text}"
        );
        assert!(
            text.contains("  Memory (max RSS):     2.0 MiB    [Σ PSS peak: 3.0 MiB]"),
            "{text}"
        );
        assert!(
            text.contains(
                "Summary\n  sleep 0.01 ran\n    1.91 ± 0.20 times faster than sleep 0.02"
            ),
            "{text}"
        );
        assert!(text.contains("    wall time     1.91× ["), "{text}");
        assert!(text.contains("slower"), "{text}");
    }

    #[test]
    fn time_unit_applies_to_every_time() {
        let text = render(Some(TimeUnit::Microsecond));
        assert!(text.contains("11000.0 µs ± 1000.0 µs"), "{text}");
        assert!(
            text.contains("[User: 2750.0 µs, System: 1375.0 µs]"),
            "{text}"
        );
        let text = render(Some(TimeUnit::Second));
        assert!(text.contains("0.011 s ±  0.001 s"), "{text}");
    }
}
