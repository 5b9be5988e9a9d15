//! Two stored entries side by side (`kurabe results compare A B`): two
//! experiments metric by metric, or two saved results of the same kind
//! field by field — the 32-bit vs 64-bit question asked of two machines'
//! `kurabe mem` records. Ratios are B / A.
//!
//! Pure: entries in, [`EntryComparison`] out; [`render_comparison`] writes
//! the text table to a `Write` it is given.

use std::io::{self, Write};

use kurabe_model::experiment::{
    ComparedEntry, ComparisonRow, EntryComparison, ExperimentReport, MetricReport, WorkloadReport,
};
use kurabe_model::record::{Entry, SavedRecord};
use kurabe_model::stats::{compare_metric, metric, Direction, Summary, Unit, DEFAULT_NOISE_BAND};
use kurabe_model::SCHEMA_VERSION;

use crate::build::experiment_report;
use crate::escape::terminal;
use crate::words;

/// Why two entries cannot be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// An experiment and a saved result, or results of different kinds.
    #[error("cannot compare {a} ({a_kind}) with {b} ({b_kind}): compare two experiments, or two saved results of the same kind")]
    Mismatch {
        /// First id.
        a: String,
        /// Its kind.
        a_kind: String,
        /// Second id.
        b: String,
        /// Its kind.
        b_kind: String,
    },
    /// Nothing in common (after the `--metric` filter).
    #[error("{a} and {b} have no {what} in common{hint}")]
    NothingInCommon {
        /// First id.
        a: String,
        /// Second id.
        b: String,
        /// "metrics" or the filter.
        what: String,
        /// Names that exist, to pick from.
        hint: String,
    },
}

fn side(e: &Entry) -> ComparedEntry {
    match e {
        Entry::Experiment(x) => ComparedEntry {
            id: x.id.to_string(),
            kind: "experiment".into(),
            name: x.name.clone(),
            hostname: x.host.as_ref().map(|h| h.hostname.clone()),
            arch: x.host.as_ref().map(|h| h.arch.clone()),
        },
        Entry::Result(r) => ComparedEntry {
            id: r.id.to_string(),
            kind: r.kind().as_str().into(),
            name: r.label.clone(),
            hostname: r.host.as_ref().map(|h| h.hostname.clone()),
            arch: r.host.as_ref().map(|h| h.arch.clone()),
        },
    }
}

/// Compare `b` against `a`; `metrics` (if not empty) keeps only those
/// metric names or field names.
pub fn compare_entries(
    a: &Entry,
    b: &Entry,
    metrics: &[String],
) -> Result<EntryComparison, CompareError> {
    let (sa, sb) = (side(a), side(b));
    let mut rows = match (a, b) {
        (Entry::Experiment(x), Entry::Experiment(y)) => {
            experiment_rows(&experiment_report(x), &experiment_report(y))
        }
        (Entry::Result(x), Entry::Result(y)) if x.kind() == y.kind() => {
            result_rows(&x.record, &y.record)
        }
        _ => {
            return Err(CompareError::Mismatch {
                a: sa.id,
                a_kind: sa.kind,
                b: sb.id,
                b_kind: sb.kind,
            })
        }
    };
    let all: Vec<String> = rows.iter().map(|r| leaf(&r.key).to_owned()).collect();
    if !metrics.is_empty() {
        rows.retain(|r| metrics.iter().any(|m| m == leaf(&r.key) || *m == r.key));
    }
    if rows.is_empty() {
        let (what, hint) = nothing_in_common(metrics, all);
        return Err(CompareError::NothingInCommon {
            a: sa.id,
            b: sb.id,
            what,
            hint,
        });
    }
    Ok(EntryComparison {
        schema_version: SCHEMA_VERSION,
        a: sa,
        b: sb,
        rows,
    })
}

/// A row per numeric field both saved records have (as `a.b.c` paths).
fn result_rows(a: &SavedRecord, b: &SavedRecord) -> Vec<ComparisonRow> {
    let (fa, fb) = (record_fields(a), record_fields(b));
    fa.iter()
        .filter_map(|(k, va)| {
            let vb = fb.iter().find(|(kb, _)| kb == k)?.1;
            Some(single_row(k, *va, vb))
        })
        .collect()
}

/// What was not found in common, and with `--metric` the names it takes.
fn nothing_in_common(metrics: &[String], mut names: Vec<String>) -> (String, String) {
    if metrics.is_empty() {
        return ("metrics".to_owned(), String::new());
    }
    names.dedup();
    names.sort();
    names.dedup();
    (
        format!("metric named {}", metrics.join(", ")),
        format!("; --metric takes one of: {}", names.join(", ")),
    )
}

/// Last segment of a row key (the metric or field name).
fn leaf(key: &str) -> &str {
    key.rsplit([' ', '.']).next().unwrap_or(key)
}

/// The numeric fields of a saved record, named by their `a.b.c` paths
/// in its JSON ([`flatten`]): what `results compare` compares and a
/// saved result's history follows.
pub(crate) fn record_fields(record: &SavedRecord) -> Vec<(String, f64)> {
    let mut fields = Vec::new();
    flatten("", &record.to_value(), &mut fields);
    fields
}

/// Numeric leaves of a JSON record as `a.b.c` paths; the schema version,
/// process ids and anonymous arrays are left out.
fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, f64)>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, x) in map {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                // A pid names a process on one machine at one moment; as a
                // number it compares nothing.
                if k != "schema_version" && !is_pid(k) {
                    flatten(&path, x, out);
                }
            }
        }
        // Arrays of identified objects (system runs by copies, tests by
        // id) get one path segment per element; other arrays (time series,
        // passes) are not comparable field by field. Lists keyed by a name
        // that need not be unique (processes: five `rustc`) are summed per
        // name, see `by_name`.
        serde_json::Value::Array(items) => flatten_items(prefix, items, out),
        serde_json::Value::Number(n) => {
            if let Some(f) = n.as_f64() {
                out.push((prefix.to_owned(), f));
            }
        }
        _ => {}
    }
}

/// The items of an array: by id, by name (summed, see `by_name`), or by copies.
fn flatten_items(prefix: &str, items: &[serde_json::Value], out: &mut Vec<(String, f64)>) {
    let mut named = Vec::new();
    for x in items {
        let id = x.get("id").and_then(serde_json::Value::as_str);
        let name = x.get("name").and_then(serde_json::Value::as_str);
        if let Some(id) = id {
            flatten(&format!("{prefix}.{id}"), x, out);
        } else if let Some(name) = name {
            named.push((name, x));
        } else if let Some(c) = x.get("copies") {
            // The identifying count is in the path; not a row of its own.
            let mut x = x.clone();
            if let Some(o) = x.as_object_mut() {
                o.remove("copies");
            }
            flatten(&format!("{prefix}.copies={c}"), &x, out);
        }
    }
    for (name, merged) in by_name(&named) {
        flatten(&format!("{prefix}.{name}"), &merged, out);
    }
}

/// True for fields that hold a process id.
fn is_pid(key: &str) -> bool {
    key == "pid" || key == "ppid" || key.ends_with("_pid")
}

/// Name-keyed list items merged per name, in first-seen order: numeric
/// fields summed, and for process lists (items with a `pid`) a
/// `processes` count — what `smem -c "name pss"` summed by command shows
/// when two machines are compared, since single processes (their pids,
/// their order) do not correspond between two snapshots.
fn by_name<'a>(items: &[(&'a str, &serde_json::Value)]) -> Vec<(&'a str, serde_json::Value)> {
    let mut out: Vec<(&str, serde_json::Map<String, serde_json::Value>)> = Vec::new();
    for (name, x) in items {
        let i = match out.iter().position(|(n, _)| n == name) {
            Some(i) => i,
            None => {
                out.push((name, serde_json::Map::new()));
                out.len() - 1
            }
        };
        if let Some(fields) = x.as_object() {
            add_fields(&mut out[i].1, fields);
        }
    }
    out.into_iter()
        .map(|(n, m)| (n, serde_json::Value::Object(m)))
        .collect()
}

/// Adds an item's numeric fields (not its pid) to `merged`, and one to
/// `processes` when the item is a process.
fn add_fields(
    merged: &mut serde_json::Map<String, serde_json::Value>,
    fields: &serde_json::Map<String, serde_json::Value>,
) {
    let mut add = |k: &str, v: f64| {
        let sum = merged
            .get(k)
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(0.0)
            + v;
        merged.insert(k.to_owned(), serde_json::json!(sum));
    };
    if fields.contains_key("pid") {
        add("processes", 1.0);
    }
    for (k, v) in fields {
        if let (false, Some(v)) = (is_pid(k), v.as_f64()) {
            add(k, v);
        }
    }
}

/// Unit from a snake_case name's suffix, the house convention.
fn unit_of(name: &str) -> Option<Unit> {
    if let Some(m) = metric::lookup(name) {
        return Some(m.unit);
    }
    let u = if name.ends_with("_bytes") {
        Unit::Bytes
    } else if name.ends_with("_us") {
        Unit::Microseconds
    } else if name.ends_with("_ms") {
        Unit::Milliseconds
    } else if name.ends_with("_s") || name.ends_with("_seconds") {
        Unit::Seconds
    } else if name.ends_with("_per_second") {
        Unit::PerSecond
    } else if name.contains("percent") {
        Unit::Percent
    } else {
        return None;
    };
    Some(u)
}

fn single_row(key: &str, a: f64, b: f64) -> ComparisonRow {
    let name = leaf(key);
    let unit = unit_of(name);
    let ratio = (a != 0.0).then(|| b / a);
    ComparisonRow {
        key: key.to_owned(),
        unit,
        a_value: a,
        b_value: b,
        a_samples: 1,
        b_samples: 1,
        ratio,
        comparison: None,
        phrase: ratio.map_or_else(
            || "no ratio: A is zero".to_owned(),
            |r| words::single(name, unit.unwrap_or(Unit::Count), r),
        ),
    }
}

fn experiment_rows(a: &ExperimentReport, b: &ExperimentReport) -> Vec<ComparisonRow> {
    let mut rows = Vec::new();
    for wa in &a.workloads {
        let Some(wb) = b.workloads.iter().find(|w| w.name == wa.name) else {
            continue;
        };
        let pairs = variant_pairs(wa, wb);
        for ma in &wa.metrics {
            let Some(mb) = wb.metrics.iter().find(|m| m.name == ma.name) else {
                continue;
            };
            for (va, vb) in &pairs {
                rows.extend(metric_row(&wa.name, (ma, va), (mb, vb)));
            }
        }
    }
    rows
}

/// Same-named variants pair up; one variant on each side pairs regardless of name.
fn variant_pairs<'a>(
    wa: &'a WorkloadReport,
    wb: &'a WorkloadReport,
) -> Vec<(&'a String, &'a String)> {
    if wa.variants.len() == 1 && wb.variants.len() == 1 {
        return vec![(&wa.variants[0], &wb.variants[0])];
    }
    wa.variants
        .iter()
        .filter_map(|v| wb.variants.iter().find(|x| *x == v).map(|x| (v, x)))
        .collect()
}

/// The samples of `variant` in metric `m` (none when it has no values).
fn samples_of(m: &MetricReport, variant: &str) -> Vec<f64> {
    m.variants
        .iter()
        .find(|v| v.variant == variant)
        .map(|v| v.samples.clone())
        .unwrap_or_default()
}

/// Metric `ma` of variant `va` in A against `mb` of `vb` in B; none
/// unless both have values.
fn metric_row(
    workload: &str,
    (ma, va): (&MetricReport, &str),
    (mb, vb): (&MetricReport, &str),
) -> Option<ComparisonRow> {
    let (sa, sb) = (samples_of(ma, va), samples_of(mb, vb));
    let (xa, xb) = (Summary::of(&sa)?, Summary::of(&sb)?);
    let dir = ma.direction.unwrap_or(Direction::HigherIsBetter);
    let c = compare_metric(&ma.name, &sa, &sb, dir, DEFAULT_NOISE_BAND);
    let (_, phrase) = words::verdict(&ma.name, ma.unit, ma.direction, &c);
    let variant = if va == vb {
        va.to_owned()
    } else {
        format!("{va} → {vb}")
    };
    Some(ComparisonRow {
        key: format!("{workload} / {variant} / {}", ma.name),
        unit: Some(ma.unit),
        a_value: xa.geometric_mean.unwrap_or(xa.median),
        b_value: xb.geometric_mean.unwrap_or(xb.median),
        a_samples: xa.n,
        b_samples: xb.n,
        ratio: c.ratio,
        comparison: Some(c),
        phrase,
    })
}

/// `e1 experiment "name" on host (arch)`: a side's title line.
fn entry_title(e: &ComparedEntry) -> String {
    let host = match (&e.hostname, &e.arch) {
        (Some(h), Some(a)) => format!(" on {h} ({a})"),
        (Some(h), None) => format!(" on {h}"),
        _ => String::new(),
    };
    format!("{} {} \"{}\"{host}", e.id, e.kind, e.name)
}

/// A row's cells: key, A and B (with the sample count when over one), the phrase.
fn row_cells(r: &ComparisonRow) -> [String; 4] {
    let v = |x: f64| words::value(r.unit.unwrap_or(Unit::Count), x);
    let n = |x: f64, n: usize| {
        if n > 1 {
            format!("{} (n={n})", v(x))
        } else {
            v(x)
        }
    };
    [
        terminal(&r.key).into_owned(),
        n(r.a_value, r.a_samples),
        n(r.b_value, r.b_samples),
        r.phrase.clone(),
    ]
}

/// `kurabe results compare` in `format`: JSON (for scripts), else the
/// text table of [`render_comparison`].
pub fn write_comparison_in(
    format: crate::Format,
    c: &EntryComparison,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        crate::Format::Json => crate::Render::render(&crate::Json, c, out),
        _ => render_comparison(c, out),
    }
}

/// The comparison as an aligned text table.
pub fn render_comparison(c: &EntryComparison, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "A: {}\nB: {}\n",
        terminal(&entry_title(&c.a)),
        terminal(&entry_title(&c.b))
    )?;
    let cells: Vec<[String; 4]> = c.rows.iter().map(row_cells).collect();
    let head = ["", "A", "B", "B vs A"];
    let width = |i: usize| {
        cells
            .iter()
            .map(|c| c[i].chars().count())
            .chain([head[i].len()])
            .max()
            .unwrap_or(0)
            + 3
    };
    let (w0, w1, w2) = (width(0), width(1), width(2));
    writeln!(
        out,
        "{:<w0$}{:<w1$}{:<w2$}{}",
        head[0], head[1], head[2], head[3]
    )?;
    for c in &cells {
        writeln!(out, "{:<w0$}{:<w1$}{:<w2$}{}", c[0], c[1], c[2], c[3])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::sample_experiment;
    use kurabe_model::record::{ResultId, ResultKind, SavedResult};

    fn mem(id: i64, used: f64) -> Entry {
        Entry::Result(SavedResult {
            id: ResultId(id),
            label: "after boot".into(),
            host: None,
            created_at: "2026-11-29T20:00:00.000Z".into(),
            origin: Default::default(),
            record: SavedRecord::read(
                ResultKind::Mem,
                serde_json::json!({
                    "schema_version": 1, "host": "vps",
                    "total_bytes": 1_000_000, "used_bytes": used, "top": [{"pss_bytes": 5}],
                    "runs": [{"copies": 1, "tests": [{"id": "dhry2reg", "index": used / 1000.0, "passes": [{"rate": 1}]}]}],
                }),
            ),
        })
    }

    #[test]
    fn saved_results_compare_field_by_field() {
        let c = compare_entries(&mem(1, 100_000.0), &mem(2, 160_000.0), &[]).unwrap();
        let keys: Vec<&str> = c.rows.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "runs.copies=1.tests.dhry2reg.index",
                "total_bytes",
                "used_bytes"
            ]
        );
        assert_eq!(c.rows[2].ratio, Some(1.6));
        assert_eq!(c.rows[2].phrase, "1.60× more memory");
        assert!(c.rows[2].comparison.is_none());
        let only = compare_entries(&mem(1, 1.0), &mem(2, 2.0), &["used_bytes".into()]).unwrap();
        assert_eq!(only.rows.len(), 1);
        let err = compare_entries(&mem(1, 1.0), &mem(2, 2.0), &["nope".into()]).unwrap_err();
        assert!(
            err.to_string()
                .contains("--metric takes one of: index, total_bytes, used_bytes"),
            "{err}"
        );
    }

    fn procs(id: i64, list: &[(u32, &str, u64)]) -> Entry {
        let top: Vec<_> = list
            .iter()
            .map(|(pid, name, pss)| serde_json::json!({"pid": pid, "name": name, "command": name, "pss_bytes": pss}))
            .collect();
        Entry::Result(SavedResult {
            id: ResultId(id),
            label: "after boot".into(),
            host: None,
            created_at: "2026-11-29T20:00:00.000Z".into(),
            origin: Default::default(),
            record: SavedRecord::read(
                ResultKind::Mem,
                serde_json::json!({"schema_version": 1, "used_bytes": 100, "top_processes": top}),
            ),
        })
    }

    /// Processes do not correspond between two snapshots: five `rustc` on
    /// one machine, two on the other. They compare per command name
    /// (summed memory, process count), never by pid.
    #[test]
    fn process_lists_compare_per_command_name_not_per_pid() {
        let a = procs(
            1,
            &[
                (11, "rustc", 100),
                (12, "rustc", 200),
                (13, "nginx", 50),
                (14, "rustc", 300),
            ],
        );
        let b = procs(
            2,
            &[(901, "rustc", 400), (7, "nginx", 60), (902, "rustc", 500)],
        );
        let c = compare_entries(&a, &b, &[]).unwrap();
        let keys: Vec<&str> = c.rows.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "top_processes.rustc.processes",
                "top_processes.rustc.pss_bytes",
                "top_processes.nginx.processes",
                "top_processes.nginx.pss_bytes",
                "used_bytes",
            ]
        );
        let row = |k: &str| c.rows.iter().find(|r| r.key == k).unwrap();
        assert_eq!(row("top_processes.rustc.pss_bytes").a_value, 600.0);
        assert_eq!(row("top_processes.rustc.pss_bytes").b_value, 900.0);
        assert_eq!(row("top_processes.rustc.processes").a_value, 3.0);
        assert_eq!(row("top_processes.rustc.processes").b_value, 2.0);
    }

    #[test]
    fn experiments_compare_with_verdicts_and_kinds_must_match() {
        let a = Entry::Experiment(sample_experiment());
        let mut e = sample_experiment();
        for r in &mut e.runs {
            for m in &mut r.run.metrics {
                m.value *= 2.0;
            }
        }
        let b = Entry::Experiment(e);
        let c = compare_entries(&a, &b, &["requests_per_second".into()]).unwrap();
        assert_eq!(c.rows.len(), 2);
        assert_eq!(c.rows[0].key, "index page / ruby / requests_per_second");
        assert!(
            c.rows[0].phrase.starts_with("2.00× [1.9"),
            "{}",
            c.rows[0].phrase
        );
        assert!(
            c.rows[0].phrase.contains("faster (could detect"),
            "{}",
            c.rows[0].phrase
        );
        let err = compare_entries(&a, &mem(1, 1.0), &[]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot compare e3 (experiment) with r1 (mem)"),
            "{err}"
        );
        let mut out = Vec::new();
        render_comparison(&c, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("B vs A"), "{text}");
    }
}
