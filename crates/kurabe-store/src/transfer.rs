//! Moving history in and out of stores (`kurabe results export`, `import`,
//! `copy`, `rm`, `save`): all-or-none, checked before anything changes.
//!
//! Owns the order of the steps (check every id before removing any; read
//! a copy back and compare it with the original) and what each step
//! added, as data ([`Added`]). Must not print or word the summaries the
//! commands print (`kurabe_report::notice::added`).

use std::path::{Path, PathBuf};

use crate::access::{open_existing, parse_ids, AccessError, MeasuredOn};
use crate::{Entry, EntryId, Location, Store};
use kurabe_model::record::{ResultId, ResultKind, SavedRecord};

/// Why a transfer did not happen (or, for a copy, did not check out).
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    /// The export file could not be opened.
    #[error("cannot read {}; give the file written by `kurabe results export`", .0.display())]
    ReadExport(PathBuf, #[source] std::io::Error),
    /// The record file could not be opened.
    #[error("cannot read {}; give a file written with --format json", .0.display())]
    ReadRecord(PathBuf, #[source] std::io::Error),
    /// The export or the record file is not a regular file, larger than
    /// [`MAX_EXPORT_BYTES`] / [`MAX_RECORD_BYTES`], or not UTF-8.
    #[error(transparent)]
    Input(kurabe_input::InputError),
    /// The record to save could not be read from stdin.
    #[error("cannot read the record from stdin")]
    ReadStdin(#[source] std::io::Error),
    /// The record on stdin is larger than [`MAX_RECORD_BYTES`].
    #[error("the record on standard input is more than {} MiB: give the output of one kurabe command run with --format json", MAX_RECORD_BYTES >> 20)]
    StdinTooLarge,
    /// The record is not JSON.
    #[error("{} is not JSON ({cause}); give the output of a kurabe command run with --format json", .file.display())]
    NotJson {
        /// The file (`-`: stdin).
        file: PathBuf,
        /// What serde_json said (in the message, not a `source`).
        cause: serde_json::Error,
    },
    /// The record is JSON but not an object.
    #[error("{} is not a JSON object; give the output of a kurabe command run with --format json", .0.display())]
    NotObject(PathBuf),
    /// `copy` from a store to itself.
    #[error("--from and --to name the same store; give two different stores")]
    SameStore,
    /// A copied entry read back differs from its original.
    #[error("the copy of {id} in {} differs from the original; the copy is kept, compare with `kurabe results show`", .store.display())]
    CopyDiffers {
        /// The original's id.
        id: EntryId,
        /// The target store (without password).
        store: PathBuf,
    },
    /// Opening, reading or writing a store failed.
    #[error(transparent)]
    Access(#[from] AccessError),
}

impl From<crate::StoreError> for TransferError {
    fn from(e: crate::StoreError) -> Self {
        TransferError::Access(e.into())
    }
}

/// The entries `ids` of `store` (all when empty, oldest first) as one
/// export file's text, ending in a newline; and how many there are.
pub fn export(store: &Store, ids: &[String]) -> Result<(usize, String), TransferError> {
    let ids: Vec<EntryId> = if ids.is_empty() {
        store.list()?.into_iter().map(|e| e.id).rev().collect()
    } else {
        parse_ids(ids)?
    };
    let mut json = store.export_json(&ids)?;
    json.push('\n');
    Ok((ids.len(), json))
}

pub use kurabe_model::notice::Added;

/// Add the entries of the export file `file` to the store at `store`
/// (created if needed), all or none.
pub fn import(store: &Path, file: &Path) -> Result<Added, TransferError> {
    let name = kurabe_input::Name::new("the export");
    let text = kurabe_input::read_text(file, name, MAX_EXPORT_BYTES)
        .map_err(|e| input_error(e, TransferError::ReadExport))?;
    let mut target = Store::open(store)?;
    let ids = target.import_json(&text)?;
    Ok(Added {
        ids: ids.into_iter().map(|b| (None, b)).collect(),
        from: None,
        to: target.path().to_owned(),
    })
}

/// Export from `from`, import into `to` in one transaction, then read the
/// copies back and check they equal the originals (ids aside), so "copied"
/// means nothing was lost.
pub fn copy(from: &Path, to: &Path, ids: &[String]) -> Result<Added, TransferError> {
    if Location::parse(from) == Location::parse(to) {
        return Err(TransferError::SameStore);
    }
    let source = open_existing(Some(from))?;
    let ids: Vec<EntryId> = if ids.is_empty() {
        source.all_ids()?
    } else {
        parse_ids(ids)?
    };
    let export = source.export(&ids)?;
    let mut target = Store::open(to)?;
    let new_ids = target.import(&export)?;
    let copied = target.export(&new_ids)?;
    for (a, b) in export.entries.iter().zip(&copied.entries) {
        if without_ids(a) != without_ids(b) {
            let store = target.path().to_owned();
            return Err(TransferError::CopyDiffers {
                id: entry_id(a),
                store,
            });
        }
    }
    Ok(Added {
        ids: ids.into_iter().map(Some).zip(new_ids).collect(),
        from: Some(source.path().to_owned()),
        to: target.path().to_owned(),
    })
}

/// An entry as JSON with its own and its runs' ids blanked.
fn without_ids(e: &Entry) -> serde_json::Value {
    let mut v = serde_json::to_value(e).expect("entries serialise");
    v["id"] = serde_json::Value::Null;
    if let Some(runs) = v.get_mut("runs").and_then(|r| r.as_array_mut()) {
        runs.iter_mut()
            .for_each(|r| r["id"] = serde_json::Value::Null);
    }
    v
}

fn entry_id(e: &Entry) -> EntryId {
    match e {
        Entry::Experiment(x) => x.id.into(),
        Entry::Result(x) => x.id.into(),
    }
}

/// Remove the entries `ids`: every one checked first (it exists and,
/// without `force`, is not running), then all removed; returns them.
pub fn remove(
    store: &mut Store,
    ids: &[String],
    force: bool,
) -> Result<Vec<EntryId>, TransferError> {
    // Check all first: a typo (or a running experiment) in the third id
    // must not leave the first two deleted.
    let ids = parse_ids(ids)?;
    for id in &ids {
        store.get(*id)?;
        if !force {
            store.check_not_running(*id)?;
        }
    }
    for id in &ids {
        store.delete(*id, force)?;
    }
    Ok(ids)
}

/// `kurabe results save`: the record in `file` (or stdin, `-`) saved to
/// the store at `store` as a result of `kind` measured `on`, labelled
/// `label` or, by default, "KIND on HOST".
pub fn save_file(
    store: Option<&Path>,
    kind: ResultKind,
    label: Option<String>,
    file: &Path,
    on: &MeasuredOn,
) -> Result<ResultId, TransferError> {
    let record = read_record(file)?;
    let label = label.unwrap_or_else(|| format!("{} on {}", kind.as_str(), on.host.hostname));
    let record = SavedRecord::read(kind, record);
    Ok(crate::access::save_result(&label, &record, store, on)?)
}

/// The largest export `kurabe results import` reads: it is held as text
/// and as JSON before it is stored.
pub const MAX_EXPORT_BYTES: u64 = 256 << 20;

/// The largest record `kurabe results save` reads (a file or standard input).
pub const MAX_RECORD_BYTES: u64 = 64 << 20;

/// `e`, a file that could not be opened as `open` says it.
fn input_error(
    e: kurabe_input::InputError,
    open: fn(PathBuf, std::io::Error) -> TransferError,
) -> TransferError {
    match e {
        kurabe_input::InputError::Open { path, err, .. } => open(path, err),
        e => TransferError::Input(e),
    }
}

/// The record on standard input, at most [`MAX_RECORD_BYTES`].
fn read_stdin_record() -> Result<String, TransferError> {
    let mut text = String::new();
    let stdin = std::io::stdin().lock();
    std::io::Read::read_to_string(
        &mut std::io::Read::take(stdin, MAX_RECORD_BYTES + 1),
        &mut text,
    )
    .map_err(TransferError::ReadStdin)?;
    if text.len() as u64 > MAX_RECORD_BYTES {
        return Err(TransferError::StdinTooLarge);
    }
    Ok(text)
}

/// The JSON object `kurabe results save` stores, from a file or stdin (`-`).
pub fn read_record(file: &Path) -> Result<serde_json::Value, TransferError> {
    let text = if file.as_os_str() == "-" {
        read_stdin_record()?
    } else {
        let name = kurabe_input::Name::new("the record").or_stdin();
        kurabe_input::read_text(file, name, MAX_RECORD_BYTES)
            .map_err(|e| input_error(e, TransferError::ReadRecord))?
    };
    let record: serde_json::Value =
        serde_json::from_str(&text).map_err(|cause| TransferError::NotJson {
            file: file.to_owned(),
            cause,
        })?;
    if !record.is_object() {
        return Err(TransferError::NotObject(file.to_owned()));
    }
    Ok(record)
}
