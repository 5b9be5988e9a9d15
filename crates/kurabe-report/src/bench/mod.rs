//! `kurabe cmd`'s output: hyperfine's terminal lines (`terminal.rs`) and
//! its Markdown and CSV tables of a [`CmdExport`] in hyperfine's columns,
//! each with kurabe's additions (max RSS, Σ PSS, the ratio to the reference
//! with its 95 % interval and verdict), and the time unit they share
//! (hyperfine's `--time-unit`: terminal and Markdown; CSV and JSON stay in
//! seconds, as hyperfine's do). Measured by instructions, the Markdown
//! table shows the counts, the CSV adds an `instructions` column, and the
//! ratio, interval and verdict of both are the count's.
//!
//! It must not touch files but through [`crate::write`]: every writer
//! writes to the `Write` it is given, and [`write_exports`] hands the
//! export files to the one file writer.

mod terminal;

pub use terminal::write_terminal;

use std::io::{self, Write};

use kurabe_model::bench::{CmdExport, CmdResult};
use kurabe_model::plan::Measure;
use kurabe_model::stats::{Comparison, Unit};

/// Unit of the times in the terminal and Markdown (hyperfine's `--time-unit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// Microseconds.
    Microsecond,
    /// Milliseconds.
    Millisecond,
    /// Seconds.
    Second,
}

impl std::str::FromStr for TimeUnit {
    type Err = String;

    /// hyperfine's `--time-unit` names (microsecond, millisecond, second), or us, µs, ms, s.
    fn from_str(s: &str) -> Result<TimeUnit, String> {
        match s {
            "microsecond" | "us" | "µs" => Ok(TimeUnit::Microsecond),
            "millisecond" | "ms" => Ok(TimeUnit::Millisecond),
            "second" | "s" => Ok(TimeUnit::Second),
            _ => Err(format!(
                "expected microsecond, millisecond or second, got `{s}`"
            )),
        }
    }
}

/// The export files of `kurabe cmd` (hyperfine's `--export-*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Export {
    /// hyperfine's JSON plus kurabe's fields.
    Json,
    /// The Markdown table.
    Markdown,
    /// hyperfine's CSV plus kurabe's columns.
    Csv,
}

/// The bytes of one export file; `unit` applies to Markdown.
pub fn export(kind: Export, export: &CmdExport, unit: Option<TimeUnit>) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    match kind {
        // hyperfine's shape, with the float noise rounded away as in every kurabe JSON.
        Export::Json => crate::Render::render(&crate::Json, export, &mut out)?,
        Export::Markdown => write_markdown(export, unit, &mut out)?,
        Export::Csv => write_csv(export, &mut out)?,
    }
    Ok(out)
}

/// An export file that could not be made or written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}", path.display())]
pub struct ExportError {
    /// The file asked for.
    pub path: std::path::PathBuf,
    /// Why.
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

/// The files `kurabe cmd` writes beside its terminal lines: hyperfine's
/// exports and the HTML page (each `None` when not asked for).
#[derive(Debug, Clone, Copy, Default)]
pub struct BenchFiles<'a> {
    /// `--export-json`.
    pub json: Option<&'a std::path::Path>,
    /// `--export-markdown`.
    pub markdown: Option<&'a std::path::Path>,
    /// `--export-csv`.
    pub csv: Option<&'a std::path::Path>,
    /// `--html`.
    pub html: Option<&'a std::path::Path>,
}

impl BenchFiles<'_> {
    /// Every file can be written, before anything runs; the first that
    /// cannot is named by its flag.
    pub fn check(&self) -> Result<(), crate::write::OutputError> {
        crate::write::check_outputs(&[
            ("--export-json", self.json),
            ("--export-markdown", self.markdown),
            ("--export-csv", self.csv),
            ("--html", self.html),
        ])
    }

    /// Write the exports asked for ([`write_exports`]).
    pub fn write_exports(
        &self,
        export: &CmdExport,
        unit: Option<TimeUnit>,
    ) -> Result<(), ExportError> {
        let files = [
            (self.json, Export::Json),
            (self.markdown, Export::Markdown),
            (self.csv, Export::Csv),
        ];
        write_exports(&files, export, unit)
    }
}

/// Write each export asked for (`--export-json FILE`, …: `None` when not
/// asked) through the one file writer; `unit` applies to Markdown.
pub fn write_exports(
    files: &[(Option<&std::path::Path>, Export)],
    export_data: &CmdExport,
    unit: Option<TimeUnit>,
) -> Result<(), ExportError> {
    for (path, kind) in files {
        let Some(path) = path else { continue };
        let failed = |source: Box<dyn std::error::Error + Send + Sync>| ExportError {
            path: path.to_path_buf(),
            source,
        };
        let bytes = export(*kind, export_data, unit).map_err(|e| failed(e.into()))?;
        crate::write::write_file(path, &bytes).map_err(|e| failed(e.into()))?;
    }
    Ok(())
}

impl TimeUnit {
    /// The unit hyperfine would choose for `seconds`: µs below 1 ms, ms below 1 s.
    pub fn auto(seconds: f64) -> TimeUnit {
        if seconds < 1e-3 {
            TimeUnit::Microsecond
        } else if seconds < 1.0 {
            TimeUnit::Millisecond
        } else {
            TimeUnit::Second
        }
    }

    /// `seconds` in this unit with its symbol, as hyperfine prints it
    /// (`10.5 ms`, `1.234 s`).
    pub fn format(self, seconds: f64) -> String {
        let v = seconds * self.scale();
        match self {
            TimeUnit::Second => format!("{v:.3} s"),
            _ => format!("{v:.1} {}", self.symbol()),
        }
    }

    fn scale(self) -> f64 {
        match self {
            TimeUnit::Microsecond => 1e6,
            TimeUnit::Millisecond => 1e3,
            TimeUnit::Second => 1.0,
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            TimeUnit::Microsecond => "µs",
            TimeUnit::Millisecond => "ms",
            TimeUnit::Second => "s",
        }
    }
}

/// The reference command's result, for the "Relative" column.
fn reference(export: &CmdExport) -> Option<&CmdResult> {
    export.results.iter().find(|r| r.name == export.reference)
}

/// The metric the ratio columns compare: the count when measured by
/// instructions, else the wall time.
fn compared(export: &CmdExport) -> &'static str {
    match export.measure {
        Measure::Time => "wall_time_s",
        Measure::Instructions => "instructions",
    }
}

/// "1.98 [1.95, 2.01] slower" from `metric`'s comparison; "1.00" for the reference.
fn relative(r: &CmdResult, metric: &str) -> String {
    match r.versus_reference.get(metric) {
        None => "1.00".to_owned(),
        Some(c) => describe(c, metric),
    }
}

fn describe(c: &Comparison, metric: &str) -> String {
    let known = kurabe_model::stats::metric::lookup(metric);
    let unit = known.as_ref().map_or(Unit::Count, |m| m.unit);
    crate::words::verdict(metric, unit, known.map(|m| m.direction), c).1
}

/// hyperfine's Markdown table, with kurabe's max RSS column.
pub fn write_markdown(
    export: &CmdExport,
    unit: Option<TimeUnit>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let unit = unit.unwrap_or_else(|| TimeUnit::auto(reference(export).map_or(0.0, |r| r.mean)));
    if export.measure == Measure::Instructions {
        return markdown_counts(export, unit, out);
    }
    let (s, sym) = (unit.scale(), unit.symbol());
    writeln!(
        out,
        "| Command | Mean [{sym}] | Min [{sym}] | Max [{sym}] | Max RSS [MiB] | Relative |"
    )?;
    writeln!(out, "|:---|---:|---:|---:|---:|---:|")?;
    for r in &export.results {
        let sd = r
            .stddev
            .map_or(String::new(), |d| format!(" ± {:.1}", d * s));
        writeln!(
            out,
            "| `{}` | {:.1}{sd} | {:.1} | {:.1} | {:.1} | {} |",
            r.name.replace('|', "\\|").replace('`', "'"),
            r.mean * s,
            r.min * s,
            r.max * s,
            r.max_rss_bytes as f64 / 1048576.0,
            relative(r, "wall_time_s")
        )?;
    }
    match &export.profile {
        Some(p) => crate::profile::write_profile(p, true, out),
        None => Ok(()),
    }
}

/// The Markdown table of instruction counts, with the time under Cachegrind.
fn markdown_counts(export: &CmdExport, unit: TimeUnit, out: &mut dyn Write) -> io::Result<()> {
    let (s, sym) = (unit.scale(), unit.symbol());
    writeln!(
        out,
        "| Command | Instructions | Min | Max | Time under Cachegrind [{sym}] | Relative |"
    )?;
    writeln!(out, "|:---|---:|---:|---:|---:|---:|")?;
    for r in &export.results {
        let (min, max) = (r.instructions.iter().min(), r.instructions.iter().max());
        let count = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
        writeln!(
            out,
            "| `{}` | {} | {} | {} | {:.1} | {} |",
            r.name.replace('|', "\\|").replace('`', "'"),
            r.instructions_mean
                .map_or(String::new(), |m| format!("{m:.0}")),
            count(min.copied()),
            count(max.copied()),
            r.mean * s,
            relative(r, "instructions")
        )?;
    }
    Ok(())
}

/// hyperfine's CSV (seconds), parameters as `parameter_NAME` columns, then
/// kurabe's `max_rss_bytes`, `ratio`, `ratio_low`, `ratio_high`, `verdict`,
/// `detectable_change_pct`.
pub fn write_csv(export: &CmdExport, out: &mut dyn Write) -> io::Result<()> {
    let params: Vec<&String> = {
        let mut p: Vec<&String> = export
            .results
            .iter()
            .flat_map(|r| r.parameters.keys())
            .collect();
        p.sort();
        p.dedup();
        p
    };
    let mut header = "command,mean,stddev,median,user,system,min,max".to_owned();
    for p in &params {
        header.push_str(&format!(",parameter_{p}"));
    }
    header.push_str(",max_rss_bytes");
    if export.measure == Measure::Instructions {
        header.push_str(",instructions");
    }
    header.push_str(",ratio,ratio_low,ratio_high,verdict,detectable_change_pct");
    writeln!(out, "{header}")?;
    for r in &export.results {
        let mut row = format!(
            "{},{},{},{},{},{},{},{}",
            field(&r.command),
            r.mean,
            r.stddev.map_or(String::new(), |d| d.to_string()),
            r.median,
            r.user,
            r.system,
            r.min,
            r.max
        );
        for p in &params {
            row.push(',');
            row.push_str(&field(r.parameters.get(*p).map_or("", String::as_str)));
        }
        row.push_str(&kurabe_cells(export, r));
        writeln!(out, "{row}")?;
    }
    Ok(())
}

/// kurabe's CSV cells of `r`: max RSS, the mean count when counted, then
/// the ratio, its interval and the verdict of the compared metric.
fn kurabe_cells(export: &CmdExport, r: &CmdResult) -> String {
    let metric = compared(export);
    let c = r.versus_reference.get(metric);
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| x.to_string());
    let mut cells = format!(",{}", r.max_rss_bytes);
    if export.measure == Measure::Instructions {
        cells.push_str(&format!(",{}", opt(r.instructions_mean)));
    }
    cells.push_str(&format!(
        ",{},{},{},{},{}",
        opt(c.and_then(|c| c.ratio)),
        opt(c.and_then(|c| c.ratio_low)),
        opt(c.and_then(|c| c.ratio_high)),
        c.map_or(String::new(), |c| field(&describe(c, metric))),
        opt(c.and_then(|c| c.detectable_change_pct))
    ));
    cells
}

/// A CSV field, quoted when it must be (RFC 4180).
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kurabe_model::bench::CmdExecution;
    use std::collections::BTreeMap;

    fn export() -> CmdExport {
        let e = |w: f64| CmdExecution {
            counters: Default::default(),
            wall_s: w,
            user_s: 0.0,
            system_s: 0.0,
            max_rss_bytes: 1048576,
            pss_peak_bytes: None,
            exit_code: Some(0),
            instructions: None,
        };
        let mut params = BTreeMap::new();
        params.insert("x".to_owned(), "1,2".to_owned());
        let a = CmdResult::from_executions("sleep 0.1", "a", params, &[e(0.1), e(0.1)]).unwrap();
        CmdExport {
            results: vec![a],
            schema_version: 1,
            experiment_id: None,
            reference: "a".into(),
            seed: 1,
            rounds: 2,
            block_size: 1,
            shell_overhead_s: 0.0,
            measure: Default::default(),
            shell_overhead_instructions: None,
            hardware_off: None,
            profile: None,
        }
    }

    #[test]
    fn markdown_uses_the_time_unit() {
        let mut out = Vec::new();
        write_markdown(&export(), None, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("Mean [ms]"), "{text}");
        assert!(
            text.contains("| `a` | 100.0 ± 0.0 | 100.0 | 100.0 | 1.0 | 1.00 |"),
            "{text}"
        );
        let mut out = Vec::new();
        write_markdown(&export(), Some(TimeUnit::Second), &mut out).unwrap();
        assert!(String::from_utf8(out)
            .unwrap()
            .contains("| `a` | 0.1 ± 0.0 |"));
    }

    #[test]
    fn csv_quotes_and_names_parameters() {
        let mut out = Vec::new();
        write_csv(&export(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut lines = text.lines();
        assert_eq!(
            lines.next().unwrap(),
            "command,mean,stddev,median,user,system,min,max,parameter_x,max_rss_bytes,ratio,ratio_low,ratio_high,verdict,detectable_change_pct"
        );
        assert!(lines
            .next()
            .unwrap()
            .starts_with("sleep 0.1,0.1,0,0.1,0,0,0.1,0.1,\"1,2\",1048576,"));
    }
}
