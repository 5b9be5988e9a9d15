//! Opening an SQLite store that cannot be written: a read-only file, folder
//! or file system (a mounted backup, a shared directory).
//!
//! Owns the read-only connection: `mode=ro`, and `immutable=1` when SQLite
//! cannot set up the WAL index beside the file. Must not write anything:
//! no migration, no mark, no journal; writes through such a connection fail
//! with SQLite's "readonly" error, which [`crate::StoreError`] explains.

use std::path::Path;

use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::schema::{self, Owner};
use crate::{StoreError, BUSY_TIMEOUT};

/// True when opening read-write failed because the store cannot be written.
pub(crate) fn is_not_writable(e: &StoreError) -> bool {
    let cause = match e {
        StoreError::Open { cause, .. } | StoreError::Db { cause, .. } => cause,
        _ => return false,
    };
    matches!(
        cause.sqlite_error_code(),
        Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied)
    )
}

/// Open the kurabe store at `path` for reading only.
pub(crate) fn open(path: &Path) -> Result<Connection, StoreError> {
    match open_as(path, false) {
        // A WAL store whose folder cannot hold the `-wal`/`-shm` files:
        // read the file as it is (nothing can be writing it: nobody can).
        // SQLite says CannotOpen on a read-only mount and ReadOnly when only
        // the permission bits forbid creating them.
        Err(StoreError::Open { cause, .. })
            if matches!(
                cause.sqlite_error_code(),
                Some(ErrorCode::CannotOpen | ErrorCode::ReadOnly)
            ) =>
        {
            open_as(path, true)
        }
        r => r,
    }
}

/// One read-only attempt, checked: a kurabe store at a schema this build
/// reads without migrating (`READS_FROM` to `CURRENT`).
fn open_as(path: &Path, immutable: bool) -> Result<Connection, StoreError> {
    let open_err = |cause| StoreError::Open {
        path: path.to_owned(),
        cause,
    };
    let uri = uri(path, immutable);
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(&uri, flags).map_err(open_err)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
    let read_only = |why: String| StoreError::ReadOnly {
        path: path.to_owned(),
        why,
    };
    match schema::owner(&conn).map_err(open_err)? {
        Owner::Kurabe => {}
        Owner::New => return Err(read_only("holds no results yet".into())),
        Owner::Other(what) => {
            return Err(StoreError::NotKurabe {
                path: path.to_owned(),
                what,
            })
        }
    }
    let found = schema::version(&conn)?;
    if found > schema::CURRENT {
        return Err(StoreError::TooNew {
            path: path.to_owned(),
            found,
            supported: schema::CURRENT,
        });
    }
    if found < schema::READS_FROM {
        return Err(read_only(format!(
            "from an older kurabe (schema {found}, this one reads {} to {}): upgrading it needs one write",
            schema::READS_FROM,
            schema::CURRENT
        )));
    }
    Ok(conn)
}

/// The `file:` URI of `path` with `mode=ro` (and `immutable=1`), with the
/// characters that URIs reserve, control characters and non-ASCII bytes
/// percent-encoded (SQLite decodes them back to the same bytes).
fn uri(path: &Path, immutable: bool) -> String {
    let mut out = String::from("file:");
    for b in path.as_os_str().as_encoded_bytes() {
        match b {
            b'?' | b'#' | b'%' | 0..=0x1f | 0x7f.. => out.push_str(&format!("%{b:02X}")),
            _ => out.push(char::from(*b)),
        }
    }
    out.push_str("?mode=ro");
    if immutable {
        out.push_str("&immutable=1");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_escape_what_uris_reserve() {
        assert_eq!(
            uri(Path::new("/a b/r?.db"), false),
            "file:/a b/r%3F.db?mode=ro"
        );
        assert_eq!(
            uri(Path::new("/x/100%#.db"), true),
            "file:/x/100%25%23.db?mode=ro&immutable=1"
        );
        assert_eq!(uri(Path::new("/é"), false), "file:/%C3%A9?mode=ro");
    }
}
