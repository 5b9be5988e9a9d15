//! `kurabe results`: the history in the results store — list, show,
//! compare two entries, export, import, remove.
//!
//! The store (`kurabe-store`) owns the data and its guarantees; comparisons
//! and reports are `kurabe-report`'s. This file turns arguments into calls,
//! picks the store (an SQLite file or a `postgres://` server), and prints.
//! `copy` moves history between stores, in either direction.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use kurabe_model::record::{Entry, EntryId, ResultKind};
use kurabe_probe::host::host_facts;
use kurabe_store::{Location, Store};

use crate::store::{open_existing, parse_id, save_result, store_path};

use kurabe_report::write::write_file;
use kurabe_report::{escape, Json, Render};

/// Output format of the listing commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned text for people.
    Text,
    /// JSON for scripts.
    Json,
}

/// Kinds of saved results (mirrors `kurabe_store::ResultKind`; clap stays in the binary).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// `kurabe http --format json`.
    Http,
    /// `kurabe watch --format json`.
    Watch,
    /// `kurabe mem --format json`.
    Mem,
    /// `kurabe system --format json`.
    System,
    /// An imported UnixBench report as JSON.
    Unixbench,
}

impl From<Kind> for ResultKind {
    fn from(k: Kind) -> ResultKind {
        match k {
            Kind::Http => ResultKind::Http,
            Kind::Watch => ResultKind::Watch,
            Kind::Mem => ResultKind::Mem,
            Kind::System => ResultKind::System,
            Kind::Unixbench => ResultKind::Unixbench,
        }
    }
}

/// Arguments of `kurabe results`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Results store: a file, sqlite:PATH, or postgres://… (settings the URL leaves out come from PG* variables; put no password here, use PGPASSWORD or ~/.pgpass) [default: $KURABE_STORE, else $XDG_DATA_HOME/kurabe/results.db].
    #[arg(long, global = true, value_name = "PATH|URL")]
    pub store: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// `kurabe results` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// List experiments and saved results, newest first.
    List {
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Show one entry: an experiment's comparison table, or a saved result's record.
    Show {
        /// Id from `kurabe results list` (`e12`, `r7`; a bare number is an experiment).
        id: String,
        /// Output format (json: the entry with every run, as exported).
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Two experiments, or two saved results of the same kind, side by side (ratios are B / A).
    Compare {
        /// Entry A, the reference.
        a: String,
        /// Entry B.
        b: String,
        /// Compare only this metric or record field (repeatable).
        #[arg(long = "metric", value_name = "NAME")]
        metrics: Vec<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Write entries as a kurabe export (JSON) for `kurabe results import` elsewhere.
    Export {
        /// Entries to export; none means everything in the store.
        ids: Vec<String>,
        /// Write to this file (atomically) instead of stdout.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Add the entries of an export file to the store (all or none; they get new ids).
    Import {
        /// File written by `kurabe results export`.
        file: PathBuf,
    },
    /// Save a command's JSON record as a result: `kurabe mem --format json | kurabe results save --kind mem -`.
    Save {
        /// Which command wrote the record.
        #[arg(long, value_enum)]
        kind: Kind,
        /// Label in listings [default: the kind and the host name].
        #[arg(long)]
        label: Option<String>,
        /// JSON file written with `--format json`, or `-` for stdin.
        file: PathBuf,
    },
    /// Copy entries from one store to another, e.g. `--from sqlite:results.db --to postgres://db/kurabe` (all or none; they get new ids in the target).
    Copy {
        /// Store to read: a file, sqlite:PATH or postgres://….
        #[arg(long, value_name = "PATH|URL")]
        from: PathBuf,
        /// Store to add to (created if needed): a file, sqlite:PATH or postgres://….
        #[arg(long, value_name = "PATH|URL")]
        to: PathBuf,
        /// Entries to copy; none means everything in --from.
        ids: Vec<String>,
    },
    /// Remove entries (an experiment with all its runs).
    Rm {
        /// Entries to remove.
        #[arg(required = true)]
        ids: Vec<String>,
        /// Remove an experiment even while it is running (its kurabe then fails to record the rest).
        #[arg(long)]
        force: bool,
    },
}

/// Run `kurabe results`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let store = args.store.as_deref();
    let mut out = std::io::stdout().lock();
    match args.command {
        Command::List { format } => list(&open_existing(store)?, format, &mut out)?,
        Command::Show { id, format } => {
            let entry = open_existing(store)?.get(parse_id(&id)?)?;
            show(&entry, format, &mut out)?;
        }
        Command::Compare {
            a,
            b,
            metrics,
            format,
        } => {
            let s = open_existing(store)?;
            let (ea, eb) = (s.get(parse_id(&a)?)?, s.get(parse_id(&b)?)?);
            let c = kurabe_report::compare_entries(&ea, &eb, &metrics)?;
            match format {
                Format::Text => kurabe_report::render_comparison(&c, &mut out)?,
                Format::Json => Json.render(&c, &mut out)?,
            }
        }
        Command::Export { ids, output } => export(store, &ids, output.as_deref(), &mut out)?,
        Command::Import { file } => import(store, &file, &mut out)?,
        Command::Save { kind, label, file } => {
            let record = read_record(&file)?;
            let kind = ResultKind::from(kind);
            let label =
                label.unwrap_or_else(|| format!("{} on {}", kind.as_str(), host_facts().hostname));
            let id = save_result(kind, &label, &record, store, None)?;
            writeln!(out, "saved {id}")?;
        }
        Command::Copy { from, to, ids } => copy(&from, &to, &ids, &mut out)?,
        Command::Rm { ids, force } => remove(store, &ids, force, &mut out)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `kurabe results export`: the entries `ids` (all when empty, oldest
/// first) as one JSON file, to `output` or stdout.
fn export(
    store: Option<&Path>,
    ids: &[String],
    output: Option<&Path>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let s = open_existing(store)?;
    let ids: Vec<EntryId> = if ids.is_empty() {
        s.list()?.into_iter().map(|e| e.id).rev().collect()
    } else {
        ids.iter().map(|i| parse_id(i)).collect::<Result<_, _>>()?
    };
    let mut json = s.export_json(&ids)?;
    json.push('\n');
    match output {
        Some(path) => {
            write_file(path, json.as_bytes()).context("-o")?;
            eprintln!("exported {} entries to {}", ids.len(), path.display());
        }
        None => out.write_all(json.as_bytes())?,
    }
    Ok(())
}

/// `kurabe results import`: a file written by `export`, into the store.
fn import(store: Option<&Path>, file: &Path, out: &mut dyn Write) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(file).with_context(|| {
        format!(
            "cannot read {}; give the file written by `kurabe results export`",
            file.display()
        )
    })?;
    let path = store_path(store)?;
    let mut target = Store::open(&path)?;
    let ids = target.import_json(&text)?;
    let names: Vec<String> = ids.iter().map(ToString::to_string).collect();
    writeln!(
        out,
        "imported {} into {}",
        if names.is_empty() {
            "nothing".to_owned()
        } else {
            names.join(", ")
        },
        // For PostgreSQL, the URL without its password.
        target.path().display()
    )?;
    Ok(())
}

/// The JSON object `kurabe results save` stores, from a file or stdin (`-`).
fn read_record(file: &Path) -> anyhow::Result<serde_json::Value> {
    let text = if file.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).context("cannot read the record from stdin")?
    } else {
        std::fs::read_to_string(file).with_context(|| {
            format!(
                "cannot read {}; give a file written with --format json",
                file.display()
            )
        })?
    };
    let record: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "{} is not JSON ({e}); give the output of a kurabe command run with --format json",
            file.display()
        )
    })?;
    if !record.is_object() {
        bail!(
            "{} is not a JSON object; give the output of a kurabe command run with --format json",
            file.display()
        );
    }
    Ok(record)
}

/// `kurabe results rm`: every id checked first, then all removed.
fn remove(
    store: Option<&Path>,
    ids: &[String],
    force: bool,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let mut s = open_existing(store)?;
    // Check all first: a typo (or a running experiment) in the third id
    // must not leave the first two deleted.
    let ids: Vec<EntryId> = ids.iter().map(|i| parse_id(i)).collect::<Result<_, _>>()?;
    for id in &ids {
        s.get(*id)?;
        if !force {
            s.check_not_running(*id)?;
        }
    }
    for id in ids {
        s.delete(id, force)?;
        writeln!(out, "removed {id}")?;
    }
    Ok(())
}

/// `kurabe results copy`: export from one store, import into the other in
/// one transaction, then read the copies back and check they equal the
/// originals (ids aside), so "copied" means nothing was lost.
fn copy(from: &Path, to: &Path, ids: &[String], out: &mut dyn Write) -> anyhow::Result<()> {
    if Location::parse(from) == Location::parse(to) {
        bail!("--from and --to name the same store; give two different stores");
    }
    let source = open_existing(Some(from))?;
    let ids: Vec<EntryId> = if ids.is_empty() {
        source.all_ids()?
    } else {
        ids.iter().map(|i| parse_id(i)).collect::<Result<_, _>>()?
    };
    let export = source.export(&ids)?;
    let mut target = Store::open(to)?;
    let new_ids = target.import(&export)?;
    let copied = target.export(&new_ids)?;
    let strip = |e: &Entry| {
        let mut v = serde_json::to_value(e).expect("entries serialise");
        v["id"] = serde_json::Value::Null;
        if let Some(runs) = v.get_mut("runs").and_then(|r| r.as_array_mut()) {
            runs.iter_mut()
                .for_each(|r| r["id"] = serde_json::Value::Null);
        }
        v
    };
    for (a, b) in export.entries.iter().zip(&copied.entries) {
        if strip(a) != strip(b) {
            bail!(
                "the copy of {} in {} differs from the original; the copy is kept, compare with `kurabe results show`",
                entry_id(a),
                target.path().display()
            );
        }
    }
    writeln!(
        out,
        "copied {} entries from {} to {}: {}",
        new_ids.len(),
        source.path().display(),
        target.path().display(),
        ids.iter()
            .zip(&new_ids)
            .map(|(a, b)| format!("{a}→{b}"))
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    Ok(())
}

fn entry_id(e: &Entry) -> EntryId {
    match e {
        Entry::Experiment(x) => x.id.into(),
        Entry::Result(x) => x.id.into(),
    }
}

fn list(store: &Store, format: Format, out: &mut dyn Write) -> anyhow::Result<()> {
    let entries = store.list()?;
    if format == Format::Json {
        Json.render(&entries, out)?;
        return Ok(());
    }
    if entries.is_empty() {
        writeln!(out, "the store {} is empty", store.path().display())?;
        return Ok(());
    }
    let rows: Vec<[String; 6]> = entries
        .iter()
        .map(|e| {
            let status = match e.status {
                Some(s) if e.failed_runs > 0 => {
                    format!("{s}, {} runs ({} failed)", e.runs, e.failed_runs)
                }
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
        })
        .collect();
    let head = ["ID", "KIND", "CREATED (UTC)", "HOST", "STATUS", "NAME"];
    let widths: Vec<usize> = (0..head.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([head[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  ", w = widths[i]));
            }
        }
        s.trim_end().to_owned()
    };
    writeln!(out, "{}", line(&head.map(String::from)))?;
    for r in &rows {
        writeln!(out, "{}", line(r))?;
    }
    Ok(())
}

fn show(entry: &Entry, format: Format, out: &mut dyn Write) -> anyhow::Result<()> {
    if format == Format::Json {
        Json.render(entry, out)?;
        return Ok(());
    }
    match entry {
        Entry::Experiment(e) => {
            let report = kurabe_report::experiment_report(e);
            kurabe_report::renderer(kurabe_report::Format::Text, crate::output::colour_stdout())
                .render(&report, out)?;
        }
        Entry::Result(r) => {
            writeln!(
                out,
                "{} · {} result · {}",
                r.id,
                r.kind.as_str(),
                escape::terminal(&r.label)
            )?;
            writeln!(out, "saved {}", r.created_at)?;
            if let Some(h) = &r.host {
                writeln!(
                    out,
                    "host {} · {} · {} cores · {} · kernel {}",
                    h.hostname, h.arch, h.cores, h.cpu_model, h.kernel
                )?;
            }
            writeln!(out)?;
            serde_json::to_writer_pretty(&mut *out, &r.record)?;
            writeln!(out)?;
        }
    }
    Ok(())
}
