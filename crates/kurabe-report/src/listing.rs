//! The store's entries as text (`kurabe results list` and `show`): an
//! aligned table of entries, and one entry (an experiment's comparison
//! table, or a saved result's header and record).
//!
//! Owns these two layouts. Must not read the store: entries come in.

use std::io::{self, Write};
use std::path::Path;

use kurabe_model::record::{Entry, ListEntry, SavedResult};

use crate::{escape, Format, Json, Render};

/// `kurabe results list` in `format`: JSON (for scripts), else the
/// aligned table of [`write_listing`].
pub fn write_listing_in(
    format: Format,
    entries: &[ListEntry],
    store: &Path,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        Format::Json => Json.render(entries, out),
        _ => write_listing(entries, store, out),
    }
}

/// `kurabe results show` in `format`: JSON (the entry with every run, as
/// exported), else the text of [`write_entry`].
pub fn write_entry_in(
    format: Format,
    entry: &Entry,
    colour: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        Format::Json => Json.render(entry, out),
        _ => write_entry(entry, colour, out),
    }
}

/// The listing of `entries` as an aligned table (newest first as given);
/// an empty store says so, naming `store`.
pub fn write_listing(entries: &[ListEntry], store: &Path, out: &mut dyn Write) -> io::Result<()> {
    if entries.is_empty() {
        return writeln!(out, "the store {} is empty", store.display());
    }
    let rows: Vec<[String; 6]> = entries.iter().map(row).collect();
    let head = ["ID", "KIND", "CREATED (UTC)", "HOST", "STATUS", "NAME"].map(String::from);
    let widths: Vec<usize> = (0..head.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([head[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    writeln!(out, "{}", line(&head, &widths))?;
    for r in &rows {
        writeln!(out, "{}", line(r, &widths))?;
    }
    Ok(())
}

/// One entry's cells: id, kind, creation time, host, status, name.
fn row(e: &ListEntry) -> [String; 6] {
    let status = match e.status {
        Some(s) if e.failed_runs > 0 => format!("{s}, {} runs ({} failed)", e.runs, e.failed_runs),
        Some(s) => format!("{s}, {} runs", e.runs),
        None => String::new(),
    };
    [
        e.id.to_string(),
        e.kind.clone(),
        e.created_at
            .get(..19)
            .unwrap_or(&e.created_at)
            .replace('T', " "),
        escape::terminal(e.hostname.as_deref().unwrap_or_default()).into_owned(),
        status,
        escape::terminal(&e.name).into_owned(),
    ]
}

/// Cells padded to `widths`, the last one as is, trailing blanks trimmed.
fn line(cells: &[String], widths: &[usize]) -> String {
    let mut s = String::new();
    for (i, c) in cells.iter().enumerate() {
        if i + 1 == cells.len() {
            s.push_str(c);
        } else {
            s.push_str(&format!("{c:<w$}  ", w = widths[i]));
        }
    }
    s.trim_end().to_owned()
}

/// One entry as text: an experiment's report table (coloured when
/// `colour`), or a saved result's header and its record as pretty JSON.
pub fn write_entry(entry: &Entry, colour: bool, out: &mut dyn Write) -> io::Result<()> {
    match entry {
        Entry::Experiment(e) => {
            let report = crate::experiment_report(e);
            crate::renderer(crate::Format::Text, colour).render(&report, out)
        }
        Entry::Result(r) => write_result(r, out),
    }
}

fn write_result(r: &SavedResult, out: &mut dyn Write) -> io::Result<()> {
    let label = escape::terminal(&r.label);
    writeln!(out, "{} · {} result · {label}", r.id, r.kind().as_str())?;
    writeln!(out, "saved {}", r.created_at)?;
    if let Some(h) = &r.host {
        writeln!(
            out,
            "host {} · {} · {} cores · {} · kernel {}",
            h.hostname, h.arch, h.cores, h.cpu_model, h.kernel
        )?;
    }
    writeln!(out)?;
    crate::Render::render(&crate::Json, &r.record.to_value(), out)
}
