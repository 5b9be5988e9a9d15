//! The fleet's tables, created and upgraded idempotently.
//!
//! The tables share the database with the results store, so every name starts
//! with `fleet_` and the fleet keeps its own version table
//! (`fleet_schema_version`). Several coordinators and workers may start at
//! once: the migration runs in one transaction under a transaction-scoped
//! advisory lock, so exactly one of them applies each step.

use postgres::Client;

use crate::error::db;
use crate::FleetError;

/// Advisory lock key for fleet migrations ("kurabeFl" as ASCII).
const MIGRATION_LOCK: i64 = 0x6b75_7261_6265_466c;

/// Migrations in order; index + 1 is the version.
const MIGRATIONS: &[&str] = &[r#"
CREATE TABLE fleet_workers (
    id            bigserial PRIMARY KEY,
    name          text        NOT NULL,
    backend_pid   integer     NOT NULL,
    state         text        NOT NULL DEFAULT 'idle',
    registered_at timestamptz NOT NULL DEFAULT now(),
    heartbeat_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE fleet_runs (
    id          bigserial PRIMARY KEY,
    experiment  text        NOT NULL,
    spec        jsonb       NOT NULL,
    workers     integer     NOT NULL,
    coordinator_pid integer NOT NULL,
    state       text        NOT NULL DEFAULT 'gathering',
    created_at  timestamptz NOT NULL DEFAULT now(),
    start_at    timestamptz,
    finished_at timestamptz
);
CREATE TABLE fleet_assignments (
    run_id      bigint      NOT NULL REFERENCES fleet_runs(id) ON DELETE CASCADE,
    slot        integer     NOT NULL,
    share       jsonb       NOT NULL,
    worker_id   bigint      REFERENCES fleet_workers(id),
    state       text        NOT NULL DEFAULT 'open',
    note        text,
    claimed_at  timestamptz,
    finished_at timestamptz,
    PRIMARY KEY (run_id, slot)
);
CREATE INDEX fleet_assignments_open ON fleet_assignments (run_id, slot) WHERE state = 'open';
CREATE TABLE fleet_progress (
    run_id     bigint      NOT NULL,
    slot       integer     NOT NULL,
    elapsed_ms bigint      NOT NULL,
    completed  bigint      NOT NULL,
    failed     bigint      NOT NULL,
    at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, slot, elapsed_ms),
    FOREIGN KEY (run_id, slot) REFERENCES fleet_assignments ON DELETE CASCADE
);
CREATE TABLE fleet_results (
    run_id           bigint NOT NULL,
    slot             integer NOT NULL,
    worker_id        bigint NOT NULL REFERENCES fleet_workers(id),
    report           jsonb  NOT NULL,
    counters         jsonb  NOT NULL,
    hist_total       bytea  NOT NULL,
    hist_connect     bytea  NOT NULL,
    hist_processing  bytea  NOT NULL,
    hist_waiting     bytea  NOT NULL,
    hist_uncorrected bytea  NOT NULL,
    PRIMARY KEY (run_id, slot),
    FOREIGN KEY (run_id, slot) REFERENCES fleet_assignments ON DELETE CASCADE
);
"#];

/// The table that records which migrations ran.
const VERSION_TABLE: &str = "CREATE TABLE IF NOT EXISTS fleet_schema_version (
     version    integer     PRIMARY KEY,
     applied_at timestamptz NOT NULL DEFAULT now()
 )";

/// Create or upgrade the fleet tables; safe to call from many processes at once.
pub fn ensure(client: &mut Client) -> Result<(), FleetError> {
    let mut tx = client
        .transaction()
        .map_err(db("cannot start the schema transaction"))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(db("cannot take the fleet migration lock"))?;
    tx.batch_execute(VERSION_TABLE)
        .map_err(db("cannot create fleet_schema_version"))?;
    let current: i32 = tx
        .query_one(
            "SELECT coalesce(max(version), 0) FROM fleet_schema_version",
            &[],
        )
        .map_err(db("cannot read fleet_schema_version"))?
        .get(0);
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        tx.batch_execute(sql)
            .map_err(db("cannot apply a fleet migration"))?;
        tx.execute(
            "INSERT INTO fleet_schema_version (version) VALUES ($1)",
            &[&(i as i32 + 1)],
        )
        .map_err(db("cannot record a fleet migration"))?;
    }
    tx.commit().map_err(db("cannot commit the fleet schema"))
}

/// The schema version this build writes.
pub fn latest_version() -> i32 {
    MIGRATIONS.len() as i32
}
