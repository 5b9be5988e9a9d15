//! Errors of the results store, each saying what to do about it.

use std::path::PathBuf;

use crate::EntryId;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No place for the default store could be found.
    #[error("cannot find a place for the results store: neither XDG_DATA_HOME nor HOME is set; pass --store PATH or set KURABE_STORE")]
    NoDataDir,
    /// The store's folder could not be created.
    #[error("cannot create the folder {} for the results store: {cause}; choose another with --store PATH or KURABE_STORE", path.display())]
    CreateDir {
        /// The folder.
        path: PathBuf,
        /// The I/O error (not a `source`: its text is in this message already,
        /// and `{:#}` would print it twice).
        cause: std::io::Error,
    },
    /// The database could not be opened or set up.
    #[error("cannot open results store {}: {cause}; check that it is readable and writable, or choose another with --store PATH or KURABE_STORE", path.display())]
    Open {
        /// The database file.
        path: PathBuf,
        /// SQLite's error (not a `source`, see [`StoreError::CreateDir`]).
        cause: rusqlite::Error,
    },
    /// `--store` names a directory.
    #[error("results store {} is a directory: give a file in it, e.g. --store {}", path.display(), path.join("results.db").display())]
    IsDirectory {
        /// The directory.
        path: PathBuf,
    },
    /// `--store` names a named pipe, a device or a socket (SQLite would
    /// wait on a pipe for ever), or an input file cannot be read.
    #[error(transparent)]
    Input(#[from] kurabe_input::InputError),
    /// `--store` names a file that is not a kurabe store; it was left untouched.
    #[error("{} is not a kurabe results store ({what}); it was left untouched: choose another --store PATH", path.display())]
    NotKurabe {
        /// The file.
        path: PathBuf,
        /// What it is instead ("it is not an SQLite database", "it is another program's SQLite database").
        what: &'static str,
    },
    /// A command that saves was given a store it cannot write: refused
    /// before any work, so nothing measured is lost.
    #[error("cannot save to results store {}: the store is read-only (its file, folder or file system): reading works, saving needs a writable store; check its permissions or choose another --store", path.display())]
    NotWritable {
        /// The database file.
        path: PathBuf,
    },
    /// A read-only store that cannot be read as it is.
    #[error("results store {} is read-only and {why}; make it writable once, or choose another with --store PATH or KURABE_STORE", path.display())]
    ReadOnly {
        /// The database file.
        path: PathBuf,
        /// Why it cannot be read without writing to it.
        why: String,
    },
    /// The database was written by a newer kurabe.
    #[error("results store {} has schema version {found}, newer than this kurabe understands ({supported}); upgrade kurabe or use another store", path.display())]
    TooNew {
        /// The database file.
        path: PathBuf,
        /// Version found in the file.
        found: i64,
        /// Newest version this build knows.
        supported: i64,
    },
    /// No entry with that id.
    #[error("no {id} in the results store; `kurabe results list` shows the ids")]
    NotFound {
        /// The id asked for.
        id: EntryId,
    },
    /// Removing an experiment whose writer is still running (or cannot be
    /// judged from here: another host) would lose everything it measures.
    #[error("{id} is still running ({writer}); let it finish or stop it first, or remove it anyway with --force")]
    Running {
        /// The experiment.
        id: EntryId,
        /// Who writes it: "kurabe pid 123 on host h", as far as known.
        writer: String,
    },
    /// A run was recorded for an experiment that is already finished.
    #[error("experiment {id} is already finished ({status}); start a new experiment to record more runs")]
    Finished {
        /// The experiment.
        id: EntryId,
        /// Its final status.
        status: String,
    },
    /// An import file is not a kurabe export.
    #[error("cannot import: {reason}")]
    Import {
        /// What is wrong with the file.
        reason: String,
    },
    /// A `postgres://` URL or a `PG*` variable is not usable.
    #[error("results store {url}: {reason}")]
    PgUrl {
        /// The URL, password replaced by `***`.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// The PostgreSQL server could not be reached or refused the login.
    #[error(
        "cannot connect to PostgreSQL at {server}: {}{}",
        chain(cause),
        connect_hint(cause)
    )]
    PgConnect {
        /// The server, without password.
        server: String,
        /// The client's error; not a `source`, its text is in this message
        /// already (a source would be printed twice by `{:#}`).
        cause: postgres::Error,
    },
    /// TLS to PostgreSQL could not be set up.
    #[error("TLS to PostgreSQL at {server}: {reason}")]
    PgTls {
        /// The server, without password.
        server: String,
        /// What is wrong.
        reason: String,
    },
    /// A PostgreSQL query failed.
    #[error("results store: {action} failed: {}", chain(cause))]
    Pg {
        /// What was being done.
        action: &'static str,
        /// The client's error, server's message included (not a `source`:
        /// its text is in this message already).
        cause: postgres::Error,
    },
    /// A stored value is not what the schema promises (edited by hand, damaged).
    #[error("results store: {what}; the database was changed outside kurabe or is damaged, export what still reads or choose another --store")]
    Corrupt {
        /// What did not read.
        what: String,
    },
    /// A query failed (disk full, database locked longer than the busy timeout, corruption).
    #[error("results store: {action} failed: {cause}{hint}", hint = hint(cause))]
    Db {
        /// What was being done.
        action: &'static str,
        /// SQLite's error (not a `source`, see [`StoreError::CreateDir`]).
        cause: rusqlite::Error,
    },
}

/// An error and its causes on one line: the `postgres` crate's own message
/// is only the kind ("db error"), the server's words are in its source.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = cause.source();
    }
    out
}

/// The fix for a failed PostgreSQL connection.
fn connect_hint(e: &postgres::Error) -> &'static str {
    let text = chain(e);
    if text.contains("password") {
        "; give the password in PGPASSWORD or ~/.pgpass (PGPASSFILE), not on the command line"
    } else if text.contains("TLS") || text.contains("certificate") {
        "; check sslmode, and sslrootcert (PGSSLROOTCERT) for the server's CA"
    } else {
        "; check the URL, the PG* variables and that the server runs"
    }
}

/// The fix for the common SQLite failures.
fn hint(e: &rusqlite::Error) -> &'static str {
    use rusqlite::ErrorCode::*;
    match e.sqlite_error_code() {
        Some(DatabaseBusy | DatabaseLocked) => {
            "; another kurabe holds the store longer than the busy timeout, retry when it is done"
        }
        Some(DiskFull) => "; the disk is full, free space or choose another --store",
        Some(ReadOnly | CannotOpen | PermissionDenied) => {
            "; the store is read-only (its file, folder or file system): reading works, \
             saving needs a writable store, check its permissions or choose another --store"
        }
        Some(DatabaseCorrupt | NotADatabase) => {
            "; the file is damaged or not a kurabe store, choose another --store"
        }
        _ => "",
    }
}

/// Attach an action to a rusqlite result.
pub(crate) trait Context<T> {
    fn ctx(self, action: &'static str) -> Result<T, StoreError>;
}

impl<T> Context<T> for rusqlite::Result<T> {
    fn ctx(self, action: &'static str) -> Result<T, StoreError> {
        self.map_err(|cause| StoreError::Db { action, cause })
    }
}
