//! kurabe's results store: every experiment, run and saved result, in SQLite.
//!
//! Owns the database file (by default `$XDG_DATA_HOME/kurabe/results.db`),
//! its schema and migrations, and the guarantee the rest of kurabe relies
//! on: a run handed to [`Store::record_run`] is committed, in its own
//! transaction, before the call returns — a crash or `kill -9` loses at most
//! the run in flight, and the file stays consistent (WAL journal,
//! `synchronous = FULL`). An experiment whose writer died stays `running`,
//! so it is never mistaken for a complete one.
//!
//! It must not print, compute statistics or know how results are rendered.

mod error;
mod host;
pub mod pg;
mod schema;
mod time;
mod types;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

pub use error::StoreError;
pub use host::HostFacts;
pub use time::rfc3339;
pub use types::{
    Entry, EntryId, Experiment, ExperimentId, ExperimentStatus, Export, ListEntry, MetricValue,
    NewExperiment, ResultId, ResultKind, RunRecord, RunStatus, SavedResult, StoredRun,
    EXPORT_FORMAT, EXPORT_VERSION,
};

use error::Context;

/// How long a writer waits for another one to finish before giving up.
/// Runs are committed seconds apart and each commit takes milliseconds, so
/// waiting is always the right call; 10 s covers a slow disk's fsync.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Environment variable naming the store file (like `--store`).
pub const STORE_ENV: &str = "KURABE_STORE";

/// Where the store lives when `--store` is not given: `$KURABE_STORE`, else
/// `$XDG_DATA_HOME/kurabe/results.db`, else `~/.local/share/kurabe/results.db`.
pub fn default_path() -> Result<PathBuf, StoreError> {
    default_path_from(|key| std::env::var_os(key))
}

/// [`default_path`] with the environment given as a lookup function.
pub fn default_path_from(env: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, StoreError> {
    let set = |key| env(key).filter(|v| !v.is_empty());
    if let Some(p) = set(STORE_ENV) {
        return Ok(PathBuf::from(p));
    }
    // The XDG spec says relative values are invalid and must be ignored.
    if let Some(p) = set("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        return Ok(p.join("kurabe").join("results.db"));
    }
    if let Some(home) = set("HOME") {
        return Ok(PathBuf::from(home).join(".local/share/kurabe/results.db"));
    }
    Err(StoreError::NoDataDir)
}

/// An open results store.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Open (creating if needed) the store at `path` and bring its schema up
    /// to date.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_at_version(path, schema::CURRENT)
    }

    /// Open the store at [`default_path`].
    pub fn open_default() -> Result<Store, StoreError> {
        Store::open(&default_path()?)
    }

    fn open_at_version(path: &Path, version: i64) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                path: dir.to_owned(),
                source,
            })?;
        }
        let open_err = |source| StoreError::Open {
            path: path.to_owned(),
            source,
        };
        let mut conn = Connection::open(path).map_err(open_err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        // WAL: readers never block the writer, and a killed writer leaves
        // the file consistent (its uncommitted frames are ignored on reopen).
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "wal", |r| r.get(0))
            .map_err(open_err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            // A file system without shared memory support (some network
            // mounts) refuses WAL; the rollback journal is still crash-safe.
            conn.pragma_update(None, "journal_mode", "delete")
                .map_err(open_err)?;
        }
        conn.pragma_update(None, "synchronous", "full")
            .map_err(open_err)?;
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(open_err)?;
        let found = schema::version(&conn)?;
        if found > schema::CURRENT {
            return Err(StoreError::TooNew {
                path: path.to_owned(),
                found,
                supported: schema::CURRENT,
            });
        }
        schema::migrate_to(&mut conn, version)?;
        Ok(Store {
            conn,
            path: path.to_owned(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Record the start of an experiment; its status is `running` until
    /// [`Store::finish_experiment`].
    pub fn begin_experiment(&mut self, new: &NewExperiment) -> Result<ExperimentId, StoreError> {
        let tx = self.write_tx()?;
        let host = upsert_host(&tx, &new.host)?;
        tx.execute(
            "INSERT INTO experiment (name, plan_text, host_id, tool_version, seed, started_at, status)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running')",
            params![
                new.name,
                new.plan_text,
                host,
                new.tool_version,
                new.seed.map(|s| s as i64),
                rfc3339(SystemTime::now())
            ],
        )
        .ctx("recording the experiment")?;
        let id = ExperimentId(tx.last_insert_rowid());
        tx.commit().ctx("committing the experiment")?;
        Ok(id)
    }

    /// Store one finished run, committed before this returns.
    ///
    /// Metric values that are not finite (NaN, ∞) are kept in the run's
    /// JSON (as null) but left out of the metric table, which only holds
    /// numbers that can be compared.
    pub fn record_run(
        &mut self,
        experiment: ExperimentId,
        run: &RunRecord,
    ) -> Result<i64, StoreError> {
        let tx = self.write_tx()?;
        let status: Option<String> = tx
            .query_row(
                "SELECT status FROM experiment WHERE id = ?1",
                [experiment.0],
                |r| r.get(0),
            )
            .optional()
            .ctx("looking up the experiment")?;
        match status.as_deref() {
            None => {
                return Err(StoreError::NotFound {
                    id: experiment.into(),
                })
            }
            Some("running") => {}
            Some(other) => {
                return Err(StoreError::Finished {
                    id: experiment.into(),
                    status: other.to_owned(),
                })
            }
        }
        let run_id = insert_run(&tx, experiment, run)?;
        tx.commit().ctx("committing the run")?;
        Ok(run_id)
    }

    /// Mark an experiment finished with `status` (not `running`).
    pub fn finish_experiment(
        &mut self,
        id: ExperimentId,
        status: ExperimentStatus,
    ) -> Result<(), StoreError> {
        let changed = self
            .conn
            .execute(
                "UPDATE experiment SET status = ?2, finished_at = ?3 WHERE id = ?1",
                params![id.0, status.as_str(), rfc3339(SystemTime::now())],
            )
            .ctx("finishing the experiment")?;
        if changed == 0 {
            return Err(StoreError::NotFound { id: id.into() });
        }
        Ok(())
    }

    /// Save a single result (`kurabe http --save` …): its kind, a label and
    /// its JSON record.
    pub fn save_result(
        &mut self,
        kind: ResultKind,
        label: &str,
        host: &HostFacts,
        record: &serde_json::Value,
    ) -> Result<ResultId, StoreError> {
        let tx = self.write_tx()?;
        let host = upsert_host(&tx, host)?;
        let id = insert_result(
            &tx,
            kind,
            label,
            Some(host),
            &rfc3339(SystemTime::now()),
            record,
        )?;
        tx.commit().ctx("committing the result")?;
        Ok(id)
    }

    /// Everything in the store, newest first.
    pub fn list(&self) -> Result<Vec<ListEntry>, StoreError> {
        let mut out = Vec::new();
        let mut stmt = self
            .conn
            .prepare(
                "SELECT e.id, e.name, h.hostname, e.started_at, e.status,
                        (SELECT count(*) FROM run r WHERE r.experiment_id = e.id),
                        (SELECT count(*) FROM run r WHERE r.experiment_id = e.id AND r.status = 'failed')
                 FROM experiment e LEFT JOIN host h ON h.id = e.host_id",
            )
            .ctx("listing experiments")?;
        let rows = stmt
            .query_map([], |r| {
                Ok(ListEntry {
                    id: EntryId::Experiment(ExperimentId(r.get(0)?)),
                    kind: "experiment".to_owned(),
                    name: r.get(1)?,
                    hostname: r.get(2)?,
                    created_at: r.get(3)?,
                    status: Some(ExperimentStatus::parse(&r.get::<_, String>(4)?)),
                    runs: r.get::<_, i64>(5)? as u64,
                    failed_runs: r.get::<_, i64>(6)? as u64,
                })
            })
            .ctx("listing experiments")?;
        for row in rows {
            out.push(row.ctx("listing experiments")?);
        }
        let mut stmt = self
            .conn
            .prepare(
                "SELECT r.id, r.kind, r.label, h.hostname, r.created_at
                 FROM result r LEFT JOIN host h ON h.id = r.host_id",
            )
            .ctx("listing results")?;
        let rows = stmt
            .query_map([], |r| {
                Ok(ListEntry {
                    id: EntryId::Result(ResultId(r.get(0)?)),
                    kind: r.get(1)?,
                    name: r.get(2)?,
                    hostname: r.get(3)?,
                    created_at: r.get(4)?,
                    status: None,
                    runs: 0,
                    failed_runs: 0,
                })
            })
            .ctx("listing results")?;
        for row in rows {
            out.push(row.ctx("listing results")?);
        }
        // RFC 3339 UTC strings sort chronologically; ties by id, newest first.
        let key = |e: &ListEntry| match e.id {
            EntryId::Experiment(id) => (0, id.0),
            EntryId::Result(id) => (1, id.0),
        };
        out.sort_by(|a, b| {
            b.created_at
                .cmp(&a.created_at)
                .then_with(|| key(b).cmp(&key(a)))
        });
        Ok(out)
    }

    /// One entry with everything recorded about it.
    pub fn get(&self, id: EntryId) -> Result<Entry, StoreError> {
        match id {
            EntryId::Experiment(e) => self.experiment(e).map(Entry::Experiment),
            EntryId::Result(r) => self.result(r).map(Entry::Result),
        }
    }

    /// Delete an entry (an experiment with its runs and metrics).
    pub fn delete(&mut self, id: EntryId) -> Result<(), StoreError> {
        let (sql, key) = match id {
            EntryId::Experiment(e) => ("DELETE FROM experiment WHERE id = ?1", e.0),
            EntryId::Result(r) => ("DELETE FROM result WHERE id = ?1", r.0),
        };
        // Runs and metrics go with their experiment (ON DELETE CASCADE).
        let changed = self.conn.execute(sql, [key]).ctx("deleting")?;
        if changed == 0 {
            return Err(StoreError::NotFound { id });
        }
        Ok(())
    }

    /// Values of one metric in one workload of an experiment, per variant,
    /// in round order; failed runs are left out.
    pub fn metric_samples(
        &self,
        experiment: ExperimentId,
        workload: &str,
        metric: &str,
    ) -> Result<BTreeMap<String, Vec<f64>>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT r.variant, m.value FROM run r JOIN metric m ON m.run_id = r.id
                 WHERE r.experiment_id = ?1 AND r.workload = ?2 AND m.name = ?3 AND r.status = 'ok'
                 ORDER BY r.round, r.id",
            )
            .ctx("reading metric samples")?;
        let rows = stmt
            .query_map(params![experiment.0, workload, metric], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?))
            })
            .ctx("reading metric samples")?;
        let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for row in rows {
            let (variant, value) = row.ctx("reading metric samples")?;
            out.entry(variant).or_default().push(value);
        }
        Ok(out)
    }

    /// Entries as an export document.
    pub fn export(&self, ids: &[EntryId]) -> Result<Export, StoreError> {
        let entries = ids
            .iter()
            .map(|&id| self.get(id))
            .collect::<Result<_, _>>()?;
        Ok(Export {
            format: EXPORT_FORMAT.to_owned(),
            schema_version: EXPORT_VERSION,
            entries,
        })
    }

    /// Entries as export JSON (pretty-printed).
    pub fn export_json(&self, ids: &[EntryId]) -> Result<String, StoreError> {
        let export = self.export(ids)?;
        Ok(serde_json::to_string_pretty(&export).expect("export model always serialises"))
    }

    /// Import an export document in one transaction (all entries or none);
    /// entries get fresh ids, which are returned in order.
    pub fn import(&mut self, export: &Export) -> Result<Vec<EntryId>, StoreError> {
        if export.format != EXPORT_FORMAT {
            return Err(StoreError::Import {
                reason: format!(
                    "`format` is `{}`, expected `{EXPORT_FORMAT}`",
                    export.format
                ),
            });
        }
        if export.schema_version > EXPORT_VERSION {
            return Err(StoreError::Import {
                reason: format!(
                    "export version {} is newer than this kurabe reads ({EXPORT_VERSION}); upgrade kurabe",
                    export.schema_version
                ),
            });
        }
        let tx = self.write_tx()?;
        let mut ids = Vec::new();
        for entry in &export.entries {
            ids.push(match entry {
                Entry::Experiment(e) => import_experiment(&tx, e)?.into(),
                Entry::Result(r) => {
                    let host = r.host.as_ref().map(|h| upsert_host(&tx, h)).transpose()?;
                    insert_result(&tx, r.kind, &r.label, host, &r.created_at, &r.record)?.into()
                }
            });
        }
        tx.commit().ctx("committing the import")?;
        Ok(ids)
    }

    /// Import export JSON; the error says what is wrong with the file.
    pub fn import_json(&mut self, json: &str) -> Result<Vec<EntryId>, StoreError> {
        let export: Export = serde_json::from_str(json).map_err(|e| StoreError::Import {
            reason: format!(
                "not a kurabe export ({e}); expected the JSON of `kurabe results export`"
            ),
        })?;
        self.import(&export)
    }

    /// `PRAGMA integrity_check`: `"ok"` for a sound file.
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        self.conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .ctx("checking integrity")
    }

    fn write_tx(&mut self) -> Result<rusqlite::Transaction<'_>, StoreError> {
        // IMMEDIATE takes the write lock up front, where busy_timeout
        // applies; a deferred transaction that upgrades later can fail with
        // SQLITE_BUSY at once when another writer got in between.
        self.conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .ctx("starting a write")
    }

    fn experiment(&self, id: ExperimentId) -> Result<Experiment, StoreError> {
        let row = self
            .conn
            .query_row(
                "SELECT name, plan_text, host_id, tool_version, seed, started_at, finished_at, status
                 FROM experiment WHERE id = ?1",
                [id.0],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, Option<i64>>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, Option<i64>>(4)?,
                        r.get::<_, String>(5)?,
                        r.get::<_, Option<String>>(6)?,
                        r.get::<_, String>(7)?,
                    ))
                },
            )
            .optional()
            .ctx("reading the experiment")?
            .ok_or(StoreError::NotFound { id: id.into() })?;
        let (name, plan_text, host_id, tool_version, seed, started_at, finished_at, status) = row;
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, variant, workload, round, status, error_tail, started_at, finished_at,
                        metrics_json, record_json
                 FROM run WHERE experiment_id = ?1 ORDER BY id",
            )
            .ctx("reading runs")?;
        let rows = stmt
            .query_map([id.0], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, Option<String>>(5)?,
                    r.get::<_, String>(6)?,
                    r.get::<_, String>(7)?,
                    r.get::<_, String>(8)?,
                    r.get::<_, Option<String>>(9)?,
                ))
            })
            .ctx("reading runs")?;
        let mut runs = Vec::new();
        for row in rows {
            let (
                run_id,
                variant,
                workload,
                round,
                status,
                error_tail,
                started,
                finished,
                metrics,
                record,
            ) = row.ctx("reading runs")?;
            runs.push(StoredRun {
                id: run_id,
                run: RunRecord {
                    variant,
                    workload,
                    round: round as u32,
                    status: if status == "ok" {
                        RunStatus::Ok
                    } else {
                        RunStatus::Failed
                    },
                    error_tail,
                    started_at: started,
                    finished_at: finished,
                    metrics: parse_json(&metrics, "run metrics")?,
                    record: record.map(|r| parse_json(&r, "run record")).transpose()?,
                },
            });
        }
        Ok(Experiment {
            id,
            name,
            plan_text,
            host: host_id.map(|h| self.host(h)).transpose()?,
            tool_version,
            seed: seed.map(|s| s as u64),
            started_at,
            finished_at,
            status: ExperimentStatus::parse(&status),
            runs,
        })
    }

    fn result(&self, id: ResultId) -> Result<SavedResult, StoreError> {
        let row = self
            .conn
            .query_row(
                "SELECT kind, label, host_id, created_at, record_json FROM result WHERE id = ?1",
                [id.0],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, Option<i64>>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                    ))
                },
            )
            .optional()
            .ctx("reading the result")?
            .ok_or(StoreError::NotFound { id: id.into() })?;
        let (kind, label, host_id, created_at, record) = row;
        Ok(SavedResult {
            id,
            // The CHECK constraint only admits known kinds.
            kind: ResultKind::parse(&kind).unwrap_or(ResultKind::Http),
            label,
            host: host_id.map(|h| self.host(h)).transpose()?,
            created_at,
            record: parse_json(&record, "result record")?,
        })
    }

    fn host(&self, id: i64) -> Result<HostFacts, StoreError> {
        self.conn
            .query_row(
                "SELECT hostname, cpu_model, cores, memory_bytes, kernel, arch FROM host WHERE id = ?1",
                [id],
                |r| {
                    Ok(HostFacts {
                        hostname: r.get(0)?,
                        cpu_model: r.get(1)?,
                        cores: r.get(2)?,
                        memory_bytes: r.get::<_, i64>(3)? as u64,
                        kernel: r.get(4)?,
                        arch: r.get(5)?,
                    })
                },
            )
            .ctx("reading host facts")
    }
}

/// JSON written by this store that no longer parses means the file was
/// edited by hand or damaged.
fn parse_json<T: serde::de::DeserializeOwned>(
    text: &str,
    what: &'static str,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Db {
        action: what,
        source: rusqlite::Error::FromSqlConversionFailure(
            0,
            rusqlite::types::Type::Text,
            Box::new(e),
        ),
    })
}

fn upsert_host(conn: &Connection, h: &HostFacts) -> Result<i64, StoreError> {
    conn.execute(
        "INSERT OR IGNORE INTO host (hostname, cpu_model, cores, memory_bytes, kernel, arch)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            h.hostname,
            h.cpu_model,
            h.cores,
            h.memory_bytes as i64,
            h.kernel,
            h.arch
        ],
    )
    .ctx("recording host facts")?;
    conn.query_row(
        "SELECT id FROM host WHERE hostname = ?1 AND cpu_model = ?2 AND cores = ?3
         AND memory_bytes = ?4 AND kernel = ?5 AND arch = ?6",
        params![
            h.hostname,
            h.cpu_model,
            h.cores,
            h.memory_bytes as i64,
            h.kernel,
            h.arch
        ],
        |r| r.get(0),
    )
    .ctx("recording host facts")
}

fn insert_run(
    conn: &Connection,
    experiment: ExperimentId,
    run: &RunRecord,
) -> Result<i64, StoreError> {
    let metrics_json = serde_json::to_string(&run.metrics).expect("metrics always serialise");
    let record_json = run.record.as_ref().map(|r| r.to_string());
    conn.execute(
        "INSERT INTO run (experiment_id, variant, workload, round, status, error_tail,
                          started_at, finished_at, metrics_json, record_json)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            experiment.0,
            run.variant,
            run.workload,
            run.round,
            run.status.as_str(),
            run.error_tail,
            run.started_at,
            run.finished_at,
            metrics_json,
            record_json
        ],
    )
    .ctx("recording the run")?;
    let run_id = conn.last_insert_rowid();
    let mut stmt = conn
        .prepare_cached("INSERT INTO metric (run_id, name, value, unit) VALUES (?1, ?2, ?3, ?4)")
        .ctx("recording metrics")?;
    for m in run.metrics.iter().filter(|m| m.value.is_finite()) {
        stmt.execute(params![run_id, m.name, m.value, m.unit])
            .ctx("recording metrics")?;
    }
    Ok(run_id)
}

fn insert_result(
    conn: &Connection,
    kind: ResultKind,
    label: &str,
    host: Option<i64>,
    created_at: &str,
    record: &serde_json::Value,
) -> Result<ResultId, StoreError> {
    conn.execute(
        "INSERT INTO result (kind, label, host_id, created_at, record_json) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![kind.as_str(), label, host, created_at, record.to_string()],
    )
    .ctx("saving the result")?;
    Ok(ResultId(conn.last_insert_rowid()))
}

fn import_experiment(conn: &Connection, e: &Experiment) -> Result<ExperimentId, StoreError> {
    let host = e.host.as_ref().map(|h| upsert_host(conn, h)).transpose()?;
    conn.execute(
        "INSERT INTO experiment (name, plan_text, host_id, tool_version, seed, started_at, finished_at, status)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            e.name,
            e.plan_text,
            host,
            e.tool_version,
            e.seed.map(|s| s as i64),
            e.started_at,
            e.finished_at,
            e.status.as_str()
        ],
    )
    .ctx("importing the experiment")?;
    let id = ExperimentId(conn.last_insert_rowid());
    for run in &e.runs {
        insert_run(conn, id, &run.run)?;
    }
    Ok(id)
}

#[cfg(test)]
mod tests;
