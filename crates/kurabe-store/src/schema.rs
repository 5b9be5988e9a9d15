//! The database schema and its migrations.
//!
//! The schema version lives in SQLite's `PRAGMA user_version`. Each entry
//! of [`MIGRATIONS`] moves the schema one version up and runs, with the
//! version bump, in one transaction: a migration either happened completely
//! or not at all, and opening a store that is up to date changes nothing.
//! Never edit a released migration; append a new one.

use rusqlite::{Connection, TransactionBehavior};

use crate::error::{Context, StoreError};

/// Migration `i` takes the schema from version `i` to `i + 1`.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: experiments and their runs.
    r#"
    CREATE TABLE host (
        id           INTEGER PRIMARY KEY,
        hostname     TEXT NOT NULL,
        cpu_model    TEXT NOT NULL,
        cores        INTEGER NOT NULL,
        memory_bytes INTEGER NOT NULL,
        kernel       TEXT NOT NULL,
        arch         TEXT NOT NULL,
        UNIQUE (hostname, cpu_model, cores, memory_bytes, kernel, arch)
    );
    CREATE TABLE experiment (
        id           INTEGER PRIMARY KEY,
        name         TEXT NOT NULL,
        plan_text    TEXT NOT NULL,
        host_id      INTEGER REFERENCES host (id),
        tool_version TEXT NOT NULL,
        seed         INTEGER,
        started_at   TEXT NOT NULL,
        finished_at  TEXT,
        status       TEXT NOT NULL
                     CHECK (status IN ('running', 'complete', 'interrupted', 'failed'))
    );
    CREATE TABLE run (
        id            INTEGER PRIMARY KEY,
        experiment_id INTEGER NOT NULL REFERENCES experiment (id) ON DELETE CASCADE,
        variant       TEXT NOT NULL,
        workload      TEXT NOT NULL,
        round         INTEGER NOT NULL,
        status        TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
        error_tail    TEXT,
        started_at    TEXT NOT NULL,
        finished_at   TEXT NOT NULL,
        metrics_json  TEXT NOT NULL,
        record_json   TEXT
    );
    CREATE INDEX run_experiment ON run (experiment_id, round);
    CREATE TABLE metric (
        run_id INTEGER NOT NULL REFERENCES run (id) ON DELETE CASCADE,
        name   TEXT NOT NULL,
        value  REAL NOT NULL,
        unit   TEXT NOT NULL,
        PRIMARY KEY (run_id, name)
    ) WITHOUT ROWID;
    "#,
    // 2: single saved results (`kurabe http --save` and friends), and
    //    querying one metric across runs.
    r#"
    CREATE TABLE result (
        id          INTEGER PRIMARY KEY,
        kind        TEXT NOT NULL CHECK (kind IN ('http', 'watch', 'mem', 'system', 'unixbench')),
        label       TEXT NOT NULL,
        host_id     INTEGER REFERENCES host (id),
        created_at  TEXT NOT NULL,
        record_json TEXT NOT NULL
    );
    CREATE INDEX metric_name ON metric (name);
    "#,
];

/// Schema version this build writes.
pub(crate) const CURRENT: i64 = MIGRATIONS.len() as i64;

/// Current schema version of the database.
pub(crate) fn version(conn: &Connection) -> Result<i64, StoreError> {
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
        .ctx("reading the schema version")
}

/// Apply migrations until the schema is at `target`.
pub(crate) fn migrate_to(conn: &mut Connection, target: i64) -> Result<(), StoreError> {
    // The common case, an up-to-date store, must not take the write lock:
    // opening would then wait on every other writer.
    if version(conn)? >= target {
        return Ok(());
    }
    loop {
        // IMMEDIATE takes the write lock before reading the version, so two
        // processes opening a new store at once cannot both migrate it.
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .ctx("starting a migration")?;
        let v: i64 = tx
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .ctx("reading the schema version")?;
        if v >= target {
            return Ok(());
        }
        tx.execute_batch(MIGRATIONS[v as usize])
            .ctx("migrating the schema")?;
        tx.pragma_update(None, "user_version", v + 1)
            .ctx("recording the schema version")?;
        tx.commit().ctx("committing a migration")?;
    }
}
