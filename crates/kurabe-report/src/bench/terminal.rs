//! `kurabe cmd` on the terminal: hyperfine's lines per command ("Time
//! (mean ± σ)", "Range (min … max)", runs), kurabe's memory line (max RSS
//! of the command itself, Σ PSS peak when it was sampled), hyperfine's
//! summary of relative speed, then kurabe's ratio with its 95 % interval
//! and verdict for every metric against the reference.
//!
//! Plain text (no colour), so it reads the same in a log.

use std::io::{self, Write};

use kurabe_model::bench::{CmdExport, CmdResult};
use kurabe_model::stats::{metric, Comparison, Unit};

use super::{reference, TimeUnit};
use crate::words;

/// Order of the verdict lines; other metrics follow by name.
const METRIC_ORDER: [&str; 5] = [
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
    let Some(base) = reference(export) else {
        return Ok(());
    };
    if export.results.len() < 2 {
        return Ok(());
    }
    speed_summary(export, base, out)?;
    verdicts(export, base, out)
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
    writeln!(out, "Summary")?;
    writeln!(out, "  {} ran", base.name)?;
    for r in export.results.iter().filter(|r| r.name != base.name) {
        if base.mean <= 0.0 || r.mean <= 0.0 {
            writeln!(out, "    (no ratio: a mean time is zero) {}", r.name)?;
            continue;
        }
        writeln!(out, "{} {}", times_than(base, r), r.name)?;
    }
    writeln!(out)
}

/// How many times faster or slower the reference ran than `r`, ± the
/// spread, in hyperfine's words (both means above zero).
fn times_than(base: &CmdResult, r: &CmdResult) -> String {
    let ratio = r.mean / base.mean;
    let shown = if ratio >= 1.0 { ratio } else { 1.0 / ratio };
    let sd = match (base.stddev, r.stddev) {
        (Some(a), Some(b)) => {
            let cv = ((a / base.mean).powi(2) + (b / r.mean).powi(2)).sqrt();
            format!(" ± {:.2}", shown * cv)
        }
        _ => String::new(),
    };
    if format!("{shown:.2}") == "1.00" {
        format!("    As fast (1.00{sd}) as")
    } else if ratio > 1.0 {
        format!("{shown:8.2}{sd} times faster than")
    } else {
        format!("{shown:8.2}{sd} times slower than")
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
            writeln!(out, "    {:<13} {}", words::label(name), describe(name, c))?;
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
                wall_s: w,
                user_s: w / 4.0,
                system_s: w / 8.0,
                max_rss_bytes: 2 * 1048576,
                pss_peak_bytes: pss,
                exit_code: Some(0),
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
