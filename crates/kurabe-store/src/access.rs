//! How a command reaches the store: which one (`--store`, else
//! `$KURABE_STORE`, else the XDG default), opening one that must already
//! exist, entry ids from the command line, the PostgreSQL URL a distributed
//! run needs, and a throw-away directory for an unsaved run's store.
//!
//! Owns these small steps so every command takes them the same way. Must
//! not print or know about flags beyond naming them in its messages.

use std::path::{Path, PathBuf};

use kurabe_model::host::HostFacts;
use kurabe_model::record::{Entry, Experiment, ExperimentId, Origin, ResultId, SavedRecord};

use crate::{EntryId, Location, Store, StoreError};

/// Why a store could not be reached as the command asked.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    /// A reading command pointed at an SQLite file that does not exist.
    #[error("no results store at {}; run `kurabe run` or `kurabe results import` first, or pass --store PATH|URL / set KURABE_STORE", .0.display())]
    Missing(PathBuf),
    /// An id that does not parse (the message says what one looks like).
    #[error("{0}")]
    BadId(String),
    /// A distributed run without a store at all.
    #[error("{0} needs --store postgres://… (or KURABE_STORE): the workers and the coordinator meet in a PostgreSQL database")]
    NoPostgres(String),
    /// A distributed run with an SQLite store.
    #[error("{0} needs a PostgreSQL store: give --store postgres://user@host/db (the SQLite file store cannot be shared between hosts)")]
    NotPostgres(String),
    /// An experiment this process recorded is no longer there.
    #[error("experiment {0} vanished from the store")]
    Vanished(ExperimentId),
    /// An id given as an experiment's names a saved result.
    #[error("{0} is a saved result, not an experiment; `kurabe results show {0}` shows it, `kurabe results list` lists experiments (e…)")]
    NotAnExperiment(EntryId),
    /// The store itself failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The private directory of an unsaved run's store could not be made.
    #[error(transparent)]
    Scratch(#[from] std::io::Error),
}

/// The store: `flag` (`--store`), else `$KURABE_STORE`, else the XDG default.
pub fn store_path(flag: Option<&Path>) -> Result<PathBuf, StoreError> {
    match flag {
        Some(p) => Ok(p.to_owned()),
        None => crate::default_path(),
    }
}

/// Open an existing store; a missing file is an error (reading commands
/// must not create an empty store and report "nothing there"). A
/// PostgreSQL store is opened as is: an empty database is a valid store.
pub fn open_existing(flag: Option<&Path>) -> Result<Store, AccessError> {
    let path = store_path(flag)?;
    if let Location::Sqlite(file) = Location::parse(&path) {
        if !file.exists() {
            return Err(AccessError::Missing(file));
        }
    }
    Ok(Store::open(&path)?)
}

/// Open the store at `flag` (default path when `None`) to save into it,
/// creating it if needed; a store that cannot be written is refused here,
/// before any work.
pub fn open_or_create(flag: Option<&Path>) -> Result<Store, StoreError> {
    Store::open(&store_path(flag)?)?.for_saving()
}

/// A run's store did not open: the line says how to choose another.
#[derive(Debug, thiserror::Error)]
pub enum CannotOpen {
    /// Of a command that saves unless `--no-save` (`kurabe cmd`, `kurabe
    /// noise`), which can also do without.
    #[error("cannot open the results store (choose another with --store PATH, or --no-save)")]
    NoSave(#[source] AccessError),
    /// Of `kurabe http A B`.
    #[error("cannot open the results store (choose another with --store PATH)")]
    Store(#[source] AccessError),
}

/// Unless `--no-save` (`keep` false), open the store at `flag` now, made
/// if needed, so a store that cannot take the result is refused before
/// any work.
pub fn check_savable(flag: Option<&Path>, keep: bool) -> Result<(), CannotOpen> {
    if keep {
        open_or_create(flag).map_err(|e| CannotOpen::NoSave(e.into()))?;
    }
    Ok(())
}

/// The store a run's experiment goes into, with the private directory it
/// lives in when the run is not kept (removed once the store is closed).
pub struct RunStore {
    /// The store.
    pub store: Store,
    // Declared after `store`, so dropped after it: the directory goes once
    // the database is closed.
    _scratch: Option<ScratchDir>,
}

impl RunStore {
    /// `keep`: the store at `flag` or the default, created if needed;
    /// else a fresh one in a private directory (`kurabe cmd --no-save`,
    /// `kurabe http A B` without `--save`), so one runner and one report
    /// serve both. Refused before any work when it cannot be written.
    pub fn open(flag: Option<&Path>, keep: bool) -> Result<RunStore, AccessError> {
        if keep {
            let store = open_or_create(flag)?;
            return Ok(RunStore {
                store,
                _scratch: None,
            });
        }
        let dir = ScratchDir::new()?;
        let store = Store::open(&dir.path().join("results.db"))?.for_saving()?;
        Ok(RunStore {
            store,
            _scratch: Some(dir),
        })
    }
}

/// Where a saved result was measured: the machine's facts and the code
/// measured. The caller gathers them (the binary reads them with
/// kurabe-probe); the store records what it is handed and never reads the
/// host itself.
#[derive(Debug, Clone)]
pub struct MeasuredOn {
    /// The machine's CPU, memory, kernel and name.
    pub host: HostFacts,
    /// The code measured and the limits in force.
    pub origin: Origin,
}

/// Save a single result (`--save` of http, watch, mem, system; `kurabe
/// results save`) to the store at `flag` (default when `None`), with the
/// machine's facts and the code measured `on`.
pub fn save_result(
    label: &str,
    record: &SavedRecord,
    flag: Option<&Path>,
    on: &MeasuredOn,
) -> Result<ResultId, StoreError> {
    let mut store = open_or_create(flag)?;
    store.save_result(label, &on.host, &on.origin, record)
}

/// The experiment a run just recorded, as stored.
pub fn recorded_experiment(store: &Store, id: ExperimentId) -> Result<Experiment, AccessError> {
    match store.get(EntryId::Experiment(id))? {
        Entry::Experiment(exp) => Ok(exp),
        Entry::Result(_) => Err(AccessError::Vanished(id)),
    }
}

/// The experiment `id` names, refused when it names a saved result.
pub fn experiment(store: &Store, id: EntryId) -> Result<Experiment, AccessError> {
    match store.get(id)? {
        Entry::Experiment(exp) => Ok(exp),
        Entry::Result(_) => Err(AccessError::NotAnExperiment(id)),
    }
}

/// One entry id (`e12`, `r7`, `12`), with the fix in the message.
pub fn parse_id(s: &str) -> Result<EntryId, AccessError> {
    s.parse::<EntryId>().map_err(AccessError::BadId)
}

/// Every id of `ids`, or the first that does not parse.
pub fn parse_ids(ids: &[String]) -> Result<Vec<EntryId>, AccessError> {
    ids.iter().map(|i| parse_id(i)).collect()
}

/// The `--store` value as a PostgreSQL URL; `flag_user` names the flag or
/// command that needs it in the message.
pub fn postgres_url(store: Option<&Path>, flag_user: &str) -> Result<String, AccessError> {
    let Some(store) = store else {
        return Err(AccessError::NoPostgres(flag_user.to_owned()));
    };
    let url = store.to_string_lossy().into_owned();
    if !crate::pg::is_url(&url) {
        return Err(AccessError::NotPostgres(flag_user.to_owned()));
    }
    Ok(url)
}

/// A private directory for a throw-away results store (`kurabe cmd
/// --no-save`, `kurabe http A B` without `--save`), removed on drop, so
/// one runner and one report serve saved and unsaved runs alike.
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// Create a fresh directory under the system's temporary directory.
    pub fn new() -> std::io::Result<ScratchDir> {
        let base = std::env::temp_dir();
        for n in 0..100u32 {
            let dir = base.join(format!("kurabe-scratch-{}-{n}", std::process::id()));
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(ScratchDir(dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    let msg = format!("cannot create {}: {e}", dir.display());
                    return Err(std::io::Error::new(e.kind(), msg));
                }
            }
        }
        Err(std::io::Error::other(format!(
            "cannot create a temporary directory in {}",
            base.display()
        )))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_not_created_and_ids_say_their_form() {
        let dir = ScratchDir::new().unwrap();
        let file = dir.path().join("none.db");
        let err = open_existing(Some(&file)).err().unwrap();
        assert!(err.to_string().starts_with("no results store at "), "{err}");
        assert!(!file.exists());
        assert!(parse_id("x1").unwrap_err().to_string().contains("`e12`"));
        assert_eq!(parse_ids(&["e2".into()]).unwrap().len(), 1);
    }

    #[test]
    fn only_postgres_urls_are_shared_stores() {
        let e = postgres_url(None, "--workers").unwrap_err().to_string();
        assert!(e.starts_with("--workers needs --store postgres://"), "{e}");
        let f = postgres_url(Some(Path::new("a.db")), "x").unwrap_err();
        assert!(f.to_string().contains("SQLite file store"));
        let url = "postgres://u@h/d";
        assert_eq!(postgres_url(Some(Path::new(url)), "x").unwrap(), url);
    }
}
