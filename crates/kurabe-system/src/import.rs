//! Import of UnixBench text reports (5.1.x and 6.0 `results/*` files).
//!
//! A report has a banner, a system block (`System:`, `OS:`, `Machine:`
//! lines), then one block per copy count: a `Benchmark Run:` line, a
//! `N CPUs in system; running K parallel copies of tests` line, one line per
//! test (`name  result unit  (time s, n samples)`), the index table and the
//! `System Benchmarks Index Score` line. This module reads the system facts
//! and every block into a [`SystemReport`] with `source = unixbench-import`,
//! recomputing each index from the result and kurabe's copy of the BYTE
//! baselines (the same numbers as UnixBench's `index.base`), and the overall
//! score as their geometric mean.
//!
//! Imported results are single numbers: no passes and no interval. Pure: it
//! parses a string, the caller reads the file.

use kurabe_model::system::{SystemReport, SystemRun, SystemSource, SystemTest};

use crate::catalog;

/// Why a text could not be imported.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ImportError {
    /// Nothing that looks like UnixBench output.
    #[error("not a UnixBench report: no 'Benchmark Run:' line; give the text file UnixBench wrote under results/ (not the .log or .html)")]
    NotUnixBench,
    /// A block stops before its index score.
    #[error("truncated UnixBench report: the run with {copies} {what} ends before its 'System Benchmarks Index Score' line; import a complete report")]
    Truncated {
        /// Copy count of the cut block.
        copies: u32,
        /// "copy"/"copies".
        what: &'static str,
    },
    /// A block without any test line.
    #[error("UnixBench report block {block} (line {line}) has no test results; the file is damaged or truncated")]
    Empty {
        /// 1-based block number.
        block: usize,
        /// Its line number.
        line: usize,
    },
    /// A malformed test line.
    #[error("cannot read line {line} of the UnixBench report: '{text}'")]
    BadLine {
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
    },
}

/// Parse a UnixBench text report.
pub fn parse(text: &str) -> Result<SystemReport, ImportError> {
    let lines: Vec<&str> = text.lines().collect();
    let starts = block_starts(&lines);
    if starts.is_empty() {
        return Err(ImportError::NotUnixBench);
    }
    let header = &lines[..starts[0]];
    let (host, kernel, arch) = system_facts(header);
    let time = lines[starts[0]].trim()["Benchmark Run:".len()..]
        .trim()
        .to_string();
    let (runs, cpus) = parse_blocks(&lines, &starts)?;
    Ok(SystemReport {
        schema_version: kurabe_model::SCHEMA_VERSION,
        source: SystemSource::UnixbenchImport,
        host,
        kernel,
        arch,
        time,
        cpus,
        mode: None,
        interrupted: false,
        precision: None,
        pin: None,
        runs,
    })
}

/// The lines where a "Benchmark Run:" block starts.
fn block_starts(lines: &[&str]) -> Vec<usize> {
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with("Benchmark Run:"))
        .map(|(i, _)| i)
        .collect()
}

/// Every "Benchmark Run" block (starting at the lines `starts`) as a run,
/// and the CPU count the first block that names one gives.
fn parse_blocks(
    lines: &[&str],
    starts: &[usize],
) -> Result<(Vec<SystemRun>, Option<u32>), ImportError> {
    let mut runs = Vec::new();
    let mut cpus = None;
    for (b, &start) in starts.iter().enumerate() {
        let end = starts.get(b + 1).copied().unwrap_or(lines.len());
        let (run, ncpu) = parse_block(&lines[start..end], start, b + 1)?;
        cpus = cpus.or(ncpu);
        runs.push(run);
    }
    Ok((runs, cpus))
}

fn system_facts(header: &[&str]) -> (String, String, String) {
    let mut host = String::from("unknown");
    let mut kernel = String::from("unknown");
    let mut arch = String::from("unknown");
    for l in header {
        let l = l.trim();
        if let Some(rest) = l.strip_prefix("System:") {
            host = rest
                .trim()
                .split(':')
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
        } else if let Some(rest) = l.strip_prefix("OS:") {
            if let Some(k) = rest.split(" -- ").nth(1) {
                kernel = k.trim().to_string();
            }
        } else if let Some(rest) = l.strip_prefix("Machine:") {
            arch = rest
                .split_whitespace()
                .next()
                .unwrap_or("unknown")
                .to_string();
        }
    }
    (host, kernel, arch)
}

fn parse_block(
    block: &[&str],
    offset: usize,
    number: usize,
) -> Result<(SystemRun, Option<u32>), ImportError> {
    let mut copies = 1;
    let mut cpus = None;
    let mut tests = Vec::new();
    let mut reported_score = false;
    for (i, raw) in block.iter().enumerate() {
        let line = raw.trim_end();
        if let Some((n, c)) = cpus_and_copies(line) {
            (cpus, copies) = (n, c);
        } else if line
            .trim_start()
            .starts_with("System Benchmarks Index Score")
            || line.starts_with("No index results available")
        {
            reported_score = true;
        } else if is_test_line(line) {
            tests.push(parse_test_line(line).ok_or_else(|| ImportError::BadLine {
                line: offset + i + 1,
                text: line.trim().to_string(),
            })?);
        }
    }
    if !reported_score {
        return Err(ImportError::Truncated {
            copies,
            what: if copies == 1 { "copy" } else { "copies" },
        });
    }
    if tests.is_empty() {
        return Err(ImportError::Empty {
            block: number,
            line: offset + 1,
        });
    }
    Ok((block_run(copies, tests), cpus))
}

/// A block's tests, in name order, as a scored run at `copies` copies.
fn block_run(copies: u32, mut tests: Vec<SystemTest>) -> SystemRun {
    tests.sort_by(|a, b| a.name.cmp(&b.name));
    let mut run = crate::empty_run(copies);
    run.tests = tests;
    crate::finish_run(&mut run);
    run
}

/// From "N CPUs in system; running M parallel copies of tests": the CPUs
/// (if given) and the copies (1 if unreadable).
fn cpus_and_copies(line: &str) -> Option<(Option<u32>, u32)> {
    const MID: &str = " in system; running ";
    let pos = line.find(MID)?;
    let first_number = |t: &str| t.split_whitespace().next().and_then(|n| n.parse().ok());
    let cpus = first_number(&line[..pos]);
    let copies = first_number(&line[pos + MID.len()..]).unwrap_or(1);
    Some((cpus, copies))
}

fn is_test_line(line: &str) -> bool {
    let t = line.trim_end();
    t.contains(" s, ")
        && (t.ends_with("samples)") || t.ends_with("sample)") || t.contains(" samples)"))
}

/// `NAME   RESULT UNIT   (TIME s, N samples)` — the name may contain spaces
/// and parentheses ("Shell Scripts (8 concurrent)"), so read from the right.
fn parse_test_line(line: &str) -> Option<SystemTest> {
    let open = line.rfind(" (")?;
    let (left, right) = line.split_at(open);
    let (time_s, samples) = time_and_samples(right)?;
    let mut words: Vec<&str> = left.split_whitespace().collect();
    let unit = words.pop()?.to_string();
    let result: f64 = words.pop()?.parse().ok()?;
    let name = words.join(" ");
    if name.is_empty() {
        return None;
    }
    Some(imported_test(name, result, unit, time_s, samples))
}

/// A test line's figures as a test result (no passes: the report keeps none).
fn imported_test(name: String, result: f64, unit: String, time_s: f64, samples: u32) -> SystemTest {
    let spec = catalog::by_name(&name);
    let baseline = spec.map(|s| s.baseline);
    SystemTest {
        id: spec
            .map(|s| s.key.to_string())
            .unwrap_or_else(|| slug(&name)),
        name,
        result,
        unit,
        baseline,
        index: baseline
            .filter(|_| result > 0.0)
            .map(|b| crate::score::index(result, b)),
        time_s,
        samples,
        passes: Vec::new(),
        ci95_low: None,
        ci95_high: None,
        score_variance_share: None,
        stop: None,
        modes: Vec::new(),
        error: None,
    }
}

/// `(TIME s, N samples)` as (seconds, samples).
fn time_and_samples(paren: &str) -> Option<(f64, u32)> {
    let inner = paren.trim().strip_prefix('(')?;
    let inner = &inner[..inner.find(')')?];
    let mut parts = inner.split(',');
    let time_s: f64 = parts
        .next()?
        .trim()
        .strip_suffix('s')?
        .trim()
        .parse()
        .ok()?;
    let samples: u32 = parts.next()?.split_whitespace().next()?.parse().ok()?;
    Some((time_s, samples))
}

fn slug(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    s.trim_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_line_with_parentheses_in_the_name() {
        let t = parse_test_line(
            "Shell Scripts (8 concurrent)                   2881.7 lpm   (60.0 s, 2 samples)",
        )
        .unwrap();
        assert_eq!(t.id, "shell8");
        assert_eq!(t.result, 2881.7);
        assert_eq!(t.unit, "lpm");
        assert_eq!(t.time_s, 60.0);
        assert_eq!(t.samples, 2);
        assert!((t.index.unwrap() - 2881.7 / 6.0 * 10.0).abs() < 1e-9);
    }

    #[test]
    fn non_index_tests_are_kept_without_index() {
        let t = parse_test_line(
            "File Read 1024 bufsize 2000 maxblocks        3000000.0 KBps  (30.0 s, 2 samples)",
        )
        .unwrap();
        assert_eq!(t.id, "file-read-1024-bufsize-2000-maxblocks");
        assert_eq!(t.index, None);
    }

    #[test]
    fn garbage_is_not_unixbench() {
        assert_eq!(
            parse("hello\nworld\n").unwrap_err(),
            ImportError::NotUnixBench
        );
        assert_eq!(parse("").unwrap_err(), ImportError::NotUnixBench);
    }
}
