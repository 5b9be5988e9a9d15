//! How commands reach the results store: which store (`--store`, else
//! `$KURABE_STORE`, else the XDG default), opening one that must exist,
//! entry ids, saving a single result with this machine's facts, and the
//! PostgreSQL URL a distributed run needs.
//!
//! Owns these small steps so every command takes them the same way. Must
//! not print or parse flags: the commands do (`save.rs` holds `--save`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use kurabe_model::record::{EntryId, Origin, ResultId, ResultKind, Revision};
use kurabe_probe::host::host_facts;
use kurabe_store::{Location, Store};

/// The store file: `--store`, else `$KURABE_STORE`, else the XDG default.
pub(crate) fn store_path(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    match flag {
        Some(p) => Ok(p.to_owned()),
        None => Ok(kurabe_store::default_path()?),
    }
}

/// Open an existing store; a missing file is an error (reading commands
/// must not create an empty store and report "nothing there"). A
/// PostgreSQL store is opened as is: an empty database is a valid store.
pub(crate) fn open_existing(flag: Option<&Path>) -> anyhow::Result<Store> {
    let path = store_path(flag)?;
    if let Location::Sqlite(file) = Location::parse(&path) {
        if !file.exists() {
            bail!(
                "no results store at {}; run `kurabe run` or `kurabe results import` first, or pass --store PATH|URL / set KURABE_STORE",
                file.display()
            );
        }
    }
    Ok(Store::open(&path)?)
}

/// Parse an entry id, with the fix in the message.
pub(crate) fn parse_id(s: &str) -> anyhow::Result<EntryId> {
    s.parse::<EntryId>().map_err(anyhow::Error::msg)
}

/// Save a single result (`--save` of http, watch, mem, system) to the
/// store at `store` (default path when `None`), with this machine's facts
/// and the code measured (`rev`: the `--rev` label, if any).
pub fn save_result(
    kind: ResultKind,
    label: &str,
    record: &serde_json::Value,
    store: Option<&Path>,
    rev: Option<String>,
) -> anyhow::Result<ResultId> {
    let path = store_path(store)?;
    let mut store = Store::open(&path)?;
    Ok(store.save_result(kind, label, &host_facts(), &origin(rev), record)?)
}

/// The code measured: the git revision of the current directory's work
/// tree, with the `--rev` / `KURABE_REV` label attached.
pub(crate) fn current_rev(label: Option<String>) -> Option<Revision> {
    let dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    kurabe_probe::rev::revision(&dir, label)
}

/// Where a record is measured now: [`current_rev`] and the cgroup limits
/// in force.
pub(crate) fn origin(label: Option<String>) -> Origin {
    Origin {
        rev: current_rev(label),
        limits: Some(kurabe_probe::cgroup::limits_in_force()),
    }
}

/// The `--store` value as a PostgreSQL URL, or a clear error.
pub(crate) fn postgres_url(store: Option<&Path>, flag_user: &str) -> anyhow::Result<String> {
    let Some(store) = store else {
        bail!("{flag_user} needs --store postgres://… (or KURABE_STORE): the workers and the coordinator meet in a PostgreSQL database");
    };
    let url = store.to_string_lossy().into_owned();
    if !kurabe_store::pg::is_url(&url) {
        bail!("{flag_user} needs a PostgreSQL store: give --store postgres://user@host/db (the SQLite file store cannot be shared between hosts)");
    }
    Ok(url)
}

/// A private directory for a throw-away results store (`kurabe cmd
/// --no-save`, `kurabe http A B` without `--save`), removed on drop, so
/// one runner and one report serve saved and unsaved runs alike.
pub(crate) struct ScratchDir(PathBuf);

impl ScratchDir {
    /// Create a fresh directory under the system's temporary directory.
    pub(crate) fn new() -> anyhow::Result<ScratchDir> {
        let base = std::env::temp_dir();
        for n in 0..100u32 {
            let dir = base.join(format!("kurabe-scratch-{}-{n}", std::process::id()));
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(ScratchDir(dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot create {}", dir.display()))
                }
            }
        }
        anyhow::bail!("cannot create a temporary directory in {}", base.display())
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
