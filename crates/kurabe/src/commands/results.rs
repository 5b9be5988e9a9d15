//! `kurabe results`: the history in the results store — list, show,
//! compare two entries, export, import, remove.
//!
//! The store (`kurabe-store`) owns the data and its guarantees; comparisons
//! and reports are `kurabe-report`'s. This file turns arguments into calls,
//! picks the store (an SQLite file or a `postgres://` server), and prints.
//! `copy` moves history between stores, in either direction; `import --from`
//! reads another harness's results (kurabe-lab's `import`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use kurabe_lab::import::{harness, save, HARNESSES};
use kurabe_model::record::ResultKind;
use kurabe_report::listing::{write_entry_in, write_listing_in};
use kurabe_report::notice::{added, removed, saved};
use kurabe_report::{write_comparison_in, Format};
use kurabe_store::transfer;

use crate::flags::format;
use kurabe_report::write::{colour_for, write_output};
use kurabe_store::access::{open_existing, parse_id, store_path};

/// A `--kind` value as the store's kind.
fn kind(name: &str) -> Result<ResultKind, String> {
    ResultKind::parse(name).ok_or_else(|| format!("unknown kind `{name}`"))
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
        /// Output format: text (aligned, for people) or json (for scripts).
        #[arg(long, value_parser = format(&["text", "json"]), default_value = "text")]
        format: Format,
    },
    /// Show one entry: an experiment's comparison table, or a saved result's record.
    Show {
        /// Id from `kurabe results list` (`e12`, `r7`; a bare number is an experiment).
        id: String,
        /// Output format: text, or json (the entry with every run, as exported).
        #[arg(long, value_parser = format(&["text", "json"]), default_value = "text")]
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
        /// Output format: text (aligned, for people) or json (for scripts).
        #[arg(long, value_parser = format(&["text", "json"]), default_value = "text")]
        format: Format,
    },
    /// Write entries as a kurabe export (JSON) for `kurabe results import` elsewhere.
    Export {
        /// Entries to export; none means everything in the store.
        ids: Vec<String>,
        #[command(flatten)]
        output: crate::flags::OutputArg,
    },
    /// Add the entries of an export file to the store (all or none; they get new ids), or with --from another harness's results as one experiment.
    Import {
        /// File written by `kurabe results export`; with --from, the harness's output (criterion: its target/criterion directory).
        file: PathBuf,
        /// Read another harness's results: hyperfine (an --export-json file), criterion (a target/criterion directory) or pytest-benchmark (a --benchmark-json file).
        #[arg(long, value_name = "HARNESS", value_parser = PossibleValuesParser::new(HARNESSES.iter().map(|h| h.name())))]
        from: Option<String>,
        /// With --from: the experiment's name, which history and check group by [default: the harness and what it measured, e.g. `hyperfine: A vs B`].
        #[arg(long, requires = "from")]
        name: Option<String>,
        /// With --from: record the machine an entry already in the store was measured on (`e12`, `r7`) instead of this one, so the import joins that machine's history.
        #[arg(long, value_name = "ENTRY", requires = "from")]
        host: Option<String>,
        #[command(flatten)]
        rev: crate::flags::RevArg,
    },
    /// Save a command's JSON record as a result: `kurabe mem --format json | kurabe results save --kind mem -`.
    Save {
        /// Which command wrote the record: http, watch, mem or system (`kurabe CMD --format json`), or unixbench (an imported UnixBench report as JSON).
        #[arg(long, value_parser = PossibleValuesParser::new(ResultKind::ALL.map(ResultKind::as_str)).try_map(|k| kind(&k)))]
        kind: ResultKind,
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

/// Run `kurabe results`: what the store holds, or the line saying what
/// changed in it (kurabe-report's words).
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let store = args.store.as_deref();
    let said = match args.command {
        Command::List { format } => return list(store, format),
        Command::Show { id, format } => return show(store, &id, format),
        Command::Compare {
            a,
            b,
            metrics,
            format,
        } => return compare(store, [a, b], &metrics, format),
        Command::Export { ids, output } => return export(store, &ids, output.path()),
        Command::Import {
            file, from: None, ..
        } => added(&transfer::import(&store_path(store)?, &file)?),
        Command::Import {
            file: input,
            from: Some(from),
            name,
            host,
            rev,
        } => {
            let harness = harness(&from).expect("clap offers only known harnesses");
            let host_of = host.as_deref().map(parse_id).transpose()?;
            let request = save::ImportRequest {
                input,
                name,
                host_of,
                rev: rev.rev,
            };
            added(&save::import(&store_path(store)?, harness, request)?)
        }
        Command::Save { kind, label, file } => {
            let here = kurabe_lab::saved_result::measured_here(None);
            saved(&transfer::save_file(store, kind, label, &file, &here)?)
        }
        Command::Copy { from, to, ids } => added(&transfer::copy(&from, &to, &ids)?),
        Command::Rm { ids, force } => {
            removed(&transfer::remove(&mut open_existing(store)?, &ids, force)?)
        }
    };
    writeln!(std::io::stdout().lock(), "{said}")?;
    Ok(ExitCode::SUCCESS)
}

/// `kurabe results list`.
fn list(store: Option<&Path>, format: Format) -> anyhow::Result<ExitCode> {
    let s = open_existing(store)?;
    write_listing_in(format, &s.list()?, s.path(), &mut std::io::stdout().lock())?;
    Ok(ExitCode::SUCCESS)
}

/// `kurabe results show ID`.
fn show(store: Option<&Path>, id: &str, format: Format) -> anyhow::Result<ExitCode> {
    let entry = open_existing(store)?.get(parse_id(id)?)?;
    write_entry_in(
        format,
        &entry,
        colour_for(None),
        &mut std::io::stdout().lock(),
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `kurabe results compare A B`.
fn compare(
    store: Option<&Path>,
    [a, b]: [String; 2],
    metrics: &[String],
    format: Format,
) -> anyhow::Result<ExitCode> {
    let s = open_existing(store)?;
    let (a, b) = (s.get(parse_id(&a)?)?, s.get(parse_id(&b)?)?);
    let c = kurabe_report::compare_entries(&a, &b, metrics)?;
    write_comparison_in(format, &c, &mut std::io::stdout().lock())?;
    Ok(ExitCode::SUCCESS)
}

/// `kurabe results export`: to `output` (saying so on stderr) or stdout.
fn export(store: Option<&Path>, ids: &[String], output: Option<&Path>) -> anyhow::Result<ExitCode> {
    let (n, json) = transfer::export(&open_existing(store)?, ids)?;
    write_output(output, &json)?;
    if let Some(path) = output {
        crate::tell(kurabe_model::notice::Notice::Exported {
            entries: n,
            path: path.to_owned(),
        });
    }
    Ok(ExitCode::SUCCESS)
}
