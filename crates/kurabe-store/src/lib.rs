//! kurabe's results store: every experiment, run and saved result, in SQLite
//! or PostgreSQL.
//!
//! Owns the database (by default the file `$XDG_DATA_HOME/kurabe/results.db`;
//! `postgres://…` for a server shared by many machines, see [`pg`]), its
//! schema and migrations (the same on both backends), and the guarantee the
//! rest of kurabe relies on: a run handed to [`Store::record_run`] is
//! committed, in its own transaction, before the call returns — a crash or
//! `kill -9` loses at most the run in flight, and the database stays
//! consistent (SQLite: WAL journal, `synchronous = FULL`). An experiment
//! whose writer died is never mistaken for a complete one: it stays
//! `running` in the database, and reads as [`ExperimentStatus::Crashed`] once
//! its writer (host + pid + process start) is known to be gone.
//!
//! It must not print, compute statistics or know how results are rendered.

pub mod access;
mod db;
mod error;
pub mod pg;
pub mod proctitle;
mod read_only;
mod schema;
pub mod series;
mod time;
pub mod transfer;
mod writer;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rusqlite::Connection;

use db::{Conn, P};

pub use error::StoreError;
// The records live in the model (plain data, no I/O); re-exported so the
// store's callers can name what they pass in and get back from one place.
pub use kurabe_model::record::{
    host_fingerprint, CgroupLimits, Entry, EntryId, Experiment, ExperimentId, ExperimentStatus,
    Export, HostFacts, HttpRun, ListEntry, MetricValue, NewExperiment, Origin, ResultId,
    ResultKind, Revision, RunRecord, RunStatus, SavedRecord, SavedResult, StoredRun, Writer,
    EXPORT_FORMAT, EXPORT_VERSION,
};
pub use kurabe_model::run_detail::RunDetail;
pub use time::rfc3339;

/// How long a writer waits for another one to finish before giving up.
/// Runs are committed seconds apart and each commit takes milliseconds, so
/// waiting is always the right call; 10 s covers a slow disk's fsync.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Environment variable naming the store (like `--store`): a file, or a
/// `postgres://` URL.
pub const STORE_ENV: &str = "KURABE_STORE";

/// kurabe's own secrets in its environment: the store URL and the store's
/// password. Measured targets and commands never inherit them (a plan's
/// `env` may still set them explicitly).
pub const SECRET_ENV: &[&str] = &[STORE_ENV, "PGPASSWORD"];

/// Remove [`SECRET_ENV`] from what `cmd` inherits; call before adding the
/// command's own variables, which win.
pub fn scrub_secrets(cmd: &mut std::process::Command) {
    for name in SECRET_ENV {
        cmd.env_remove(name);
    }
}

/// Where the store lives when `--store` is not given: `$KURABE_STORE`, else
/// `$XDG_DATA_HOME/kurabe/results.db`, else `~/.local/share/kurabe/results.db`.
/// `$KURABE_STORE` may be a `postgres://` URL, which [`Store::open`] takes as is.
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

/// Where a store lives, parsed from `--store` / `KURABE_STORE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// An SQLite file (`PATH` or `sqlite:PATH`).
    Sqlite(PathBuf),
    /// A PostgreSQL server (`postgres://…` or `postgresql://…`).
    Postgres(String),
}

impl Location {
    /// `postgres://…` → PostgreSQL; `sqlite:PATH` or any other text → an
    /// SQLite file.
    pub fn parse(spec: &Path) -> Location {
        match spec.to_str() {
            Some(s) if pg::is_url(s) => Location::Postgres(s.to_owned()),
            Some(s) => Location::Sqlite(PathBuf::from(s.strip_prefix("sqlite:").unwrap_or(s))),
            None => Location::Sqlite(spec.to_owned()),
        }
    }
}

impl std::fmt::Display for Location {
    /// The file, or the URL without its password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Sqlite(p) => write!(f, "{}", p.display()),
            Location::Postgres(url) => f.write_str(&pg::redact(url)),
        }
    }
}

/// An open results store.
#[derive(Debug)]
pub struct Store {
    /// In a RefCell: the PostgreSQL client needs `&mut` even to read, and
    /// reading the store through `&Store` is the API kurabe already uses.
    conn: RefCell<Conn>,
    /// The file, or for PostgreSQL the URL without password (for messages).
    path: PathBuf,
    /// Facts about this machine's current boot, to tell dead writers.
    here: Writer,
}

impl Store {
    /// Open (creating if needed) the store `path` names and bring its
    /// schema up to date: an SQLite file (`PATH`, `sqlite:PATH`) or a
    /// PostgreSQL server (`postgres://…`, see [`pg`]).
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_location(&Location::parse(path), schema::CURRENT)
    }

    /// This store, when it can be written; a store opened read-only (see
    /// [`Store::open`]) is refused with [`StoreError::NotWritable`]. Commands
    /// that save call it before measuring anything.
    pub fn for_saving(self) -> Result<Store, StoreError> {
        let read_only = match &*self.conn.borrow() {
            Conn::Sqlite(c) => c.is_readonly(rusqlite::MAIN_DB).unwrap_or(false),
            Conn::Pg(_) => false,
        };
        if read_only {
            return Err(StoreError::NotWritable {
                path: self.path.clone(),
            });
        }
        Ok(self)
    }

    /// Open the store at [`default_path`].
    pub fn open_default() -> Result<Store, StoreError> {
        Store::open(&default_path()?)
    }

    #[cfg(test)]
    fn open_at_version(path: &Path, version: i64) -> Result<Store, StoreError> {
        Store::open_location(&Location::parse(path), version)
    }

    fn open_location(location: &Location, version: i64) -> Result<Store, StoreError> {
        let (conn, shown) = match location {
            Location::Sqlite(path) => (Store::open_sqlite(path, version)?, path.clone()),
            Location::Postgres(url) => {
                let client = pg::connect_at(url, version)?;
                let conn = Conn::Pg(Box::new(db::PgConn::new(client)));
                (conn, PathBuf::from(pg::redact(url)))
            }
        };
        Ok(Store {
            conn: RefCell::new(conn),
            path: shown,
            here: writer::current(),
        })
    }

    /// Open read-write; an existing store whose file, folder or file system
    /// cannot be written opens read-only instead, so reading still works.
    fn open_sqlite(path: &Path, version: i64) -> Result<Conn, StoreError> {
        match Store::open_sqlite_rw(path, version) {
            Err(e) if read_only::is_not_writable(&e) && path.is_file() => {
                read_only::open(path).map(Conn::Sqlite)
            }
            r => r,
        }
    }

    fn open_sqlite_rw(path: &Path, version: i64) -> Result<Conn, StoreError> {
        prepare_location(path)?;
        let open_err = |cause| StoreError::Open {
            path: path.to_owned(),
            cause,
        };
        let mut conn = Connection::open(path).map_err(open_err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        // Before anything is written (WAL mode changes the header): another
        // program's database, or a file that is no database, stays untouched.
        if let schema::Owner::Other(what) = schema::owner(&conn).map_err(open_err)? {
            return Err(StoreError::NotKurabe {
                path: path.to_owned(),
                what,
            });
        }
        set_pragmas(&conn).map_err(open_err)?;
        Self::upgrade(&mut conn, path, version)?;
        Ok(Conn::Sqlite(conn))
    }

    /// Check that the store is kurabe's (or new) and bring its schema to
    /// `version`; refuse a store newer than this kurabe.
    fn upgrade(conn: &mut Connection, path: &Path, version: i64) -> Result<(), StoreError> {
        let found = schema::version(conn)?;
        if found > schema::CURRENT {
            return Err(StoreError::TooNew {
                path: path.to_owned(),
                found,
                supported: schema::CURRENT,
            });
        }
        schema::migrate_sqlite(conn, version)?;
        schema::mark(conn)
    }

    /// The database file; for PostgreSQL, the URL without its password.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True when this store is on PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        matches!(*self.conn.borrow(), Conn::Pg(_))
    }

    /// The PostgreSQL connection, for callers that coordinate through the
    /// same database (the fleet's workers); `None` on SQLite.
    pub fn pg_client(&mut self) -> Option<&mut postgres::Client> {
        match self.conn.get_mut() {
            Conn::Pg(c) => Some(&mut c.client),
            Conn::Sqlite(_) => None,
        }
    }

    /// Record the start of an experiment; its status is `running` until
    /// [`Store::finish_experiment`]. The writer (this host, process id and
    /// process start) is recorded so that a crash can be recognised.
    pub fn begin_experiment(&mut self, new: &NewExperiment) -> Result<ExperimentId, StoreError> {
        // This process as /proc names it (not `new.host`, which a caller
        // may fill from elsewhere): what `Writer::is_gone` checks against.
        let writer = &self.here;
        self.conn
            .borrow_mut()
            .tx(|c| insert_new_experiment(c, new, writer))
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
        self.conn.borrow_mut().tx(|c| {
            check_running(c, experiment)?;
            insert_run(c, experiment, run)
        })
    }

    /// Mark an experiment finished with `status` (not `running`).
    pub fn finish_experiment(
        &mut self,
        id: ExperimentId,
        status: ExperimentStatus,
    ) -> Result<(), StoreError> {
        let changed = self.conn.borrow_mut().exec(
            "finishing the experiment",
            "UPDATE experiment SET status = $2, finished_at = $3 WHERE id = $1",
            &[
                id.0.into(),
                status.stored().into(),
                (&rfc3339(SystemTime::now())).into(),
            ],
        )?;
        if changed == 0 {
            return Err(StoreError::NotFound { id: id.into() });
        }
        Ok(())
    }

    /// Save a single result (`kurabe http --save` …): a label, the
    /// machine and code it measured, and its record (of its kind).
    pub fn save_result(
        &mut self,
        label: &str,
        host: &HostFacts,
        origin: &Origin,
        record: &SavedRecord,
    ) -> Result<ResultId, StoreError> {
        let now = rfc3339(SystemTime::now());
        self.conn.borrow_mut().tx(|c| {
            let host = upsert_host(c, host)?;
            insert_result(c, label, Some(host), origin, &now, record)
        })
    }

    /// Ids of the experiments of plan `name`, oldest first (start time,
    /// then id): the series a history is made of.
    pub fn experiments_named(&self, name: &str) -> Result<Vec<ExperimentId>, StoreError> {
        let rows = self.conn.borrow_mut().query(
            "listing the plan's experiments",
            "SELECT id FROM experiment WHERE name = $1 ORDER BY started_at, id",
            &[name.into()],
        )?;
        rows.iter().map(|r| Ok(ExperimentId(r.i64(0)?))).collect()
    }

    /// Ids of the saved results labelled `label`, oldest first.
    pub fn results_labelled(&self, label: &str) -> Result<Vec<ResultId>, StoreError> {
        let rows = self.conn.borrow_mut().query(
            "listing the label's results",
            "SELECT id FROM result WHERE label = $1 ORDER BY created_at, id",
            &[label.into()],
        )?;
        rows.iter().map(|r| Ok(ResultId(r.i64(0)?))).collect()
    }

    /// Everything in the store, newest first.
    pub fn list(&self) -> Result<Vec<ListEntry>, StoreError> {
        let mut out = self.list_experiments()?;
        out.extend(self.list_results()?);
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

    /// Every experiment with its run counts, in store order.
    fn list_experiments(&self) -> Result<Vec<ListEntry>, StoreError> {
        let rows = self.conn.borrow_mut().query(
            "listing experiments",
            "SELECT e.id, e.name, h.hostname, e.started_at, e.status,
                    (SELECT count(*) FROM run r WHERE r.experiment_id = e.id),
                    (SELECT count(*) FROM run r WHERE r.experiment_id = e.id AND r.status = 'failed'),
                    e.writer_host, e.writer_pid, e.writer_start
             FROM experiment e LEFT JOIN host h ON h.id = e.host_id",
            &[],
        )?;
        rows.iter()
            .map(|r| {
                let writer = writer_from(r, 7)?;
                Ok(ListEntry {
                    id: EntryId::Experiment(ExperimentId(r.i64(0)?)),
                    kind: "experiment".to_owned(),
                    name: r.text(1)?,
                    hostname: r.opt_text(2)?,
                    created_at: r.text(3)?,
                    status: Some(self.status_of(&r.text(4)?, writer.as_ref())),
                    runs: r.i64(5)? as u64,
                    failed_runs: r.i64(6)? as u64,
                })
            })
            .collect()
    }

    /// Every saved result, in store order.
    fn list_results(&self) -> Result<Vec<ListEntry>, StoreError> {
        let rows = self.conn.borrow_mut().query(
            "listing results",
            "SELECT r.id, r.kind, r.label, h.hostname, r.created_at, r.record_json
             FROM result r LEFT JOIN host h ON h.id = r.host_id",
            &[],
        )?;
        rows.iter()
            .map(|r| {
                Ok(ListEntry {
                    id: EntryId::Result(ResultId(r.i64(0)?)),
                    kind: r.text(1)?,
                    name: r.text(2)?,
                    hostname: r.opt_text(3)?,
                    created_at: r.text(4)?,
                    status: Some(result_status(&r.text(1)?, &r.text(5)?)),
                    runs: 0,
                    failed_runs: 0,
                })
            })
            .collect()
    }

    /// One entry with everything recorded about it.
    pub fn get(&self, id: EntryId) -> Result<Entry, StoreError> {
        match id {
            EntryId::Experiment(e) => self.experiment(e).map(Entry::Experiment),
            EntryId::Result(r) => self.result(r).map(Entry::Result),
        }
    }

    /// Delete an entry (an experiment with its runs and metrics). An
    /// experiment that is still running is refused unless `force`.
    pub fn delete(&mut self, id: EntryId, force: bool) -> Result<(), StoreError> {
        if !force {
            self.check_not_running(id)?;
        }
        let (sql, key) = match id {
            EntryId::Experiment(e) => ("DELETE FROM experiment WHERE id = $1", e.0),
            EntryId::Result(r) => ("DELETE FROM result WHERE id = $1", r.0),
        };
        // Runs and metrics go with their experiment (ON DELETE CASCADE).
        let changed = self
            .conn
            .borrow_mut()
            .exec("deleting", sql, &[key.into()])?;
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
        let rows = self.conn.borrow_mut().query(
            "reading metric samples",
            "SELECT r.variant, m.value FROM run r JOIN metric m ON m.run_id = r.id
             WHERE r.experiment_id = $1 AND r.workload = $2 AND m.name = $3 AND r.status = 'ok'
             ORDER BY r.round, r.id",
            &[experiment.0.into(), workload.into(), metric.into()],
        )?;
        let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for r in rows {
            out.entry(r.text(0)?).or_default().push(r.f64(1)?);
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

    /// Every entry's id, oldest first (the order `copy` and `export` keep).
    pub fn all_ids(&self) -> Result<Vec<EntryId>, StoreError> {
        let mut ids: Vec<EntryId> = self.list()?.into_iter().map(|e| e.id).collect();
        ids.reverse();
        Ok(ids)
    }

    /// Import an export document in one transaction (all entries or none);
    /// entries get fresh ids, which are returned in order.
    pub fn import(&mut self, export: &Export) -> Result<Vec<EntryId>, StoreError> {
        check_export(export)?;
        self.conn.borrow_mut().tx(|c| {
            let mut ids = Vec::new();
            for entry in &export.entries {
                ids.push(match entry {
                    Entry::Experiment(e) => import_experiment(c, e)?.into(),
                    Entry::Result(r) => {
                        let host = r.host.as_ref().map(|h| upsert_host(c, h)).transpose()?;
                        let (label, origin) = (&r.label, &r.origin);
                        insert_result(c, label, host, origin, &r.created_at, &r.record)?.into()
                    }
                });
            }
            Ok(ids)
        })
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

    /// SQLite's `PRAGMA integrity_check`: `"ok"` for a sound file. On
    /// PostgreSQL, which guards its own pages, `"ok"` once a query works.
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        let sql = match *self.conn.borrow() {
            Conn::Sqlite(_) => "PRAGMA integrity_check",
            Conn::Pg(_) => "SELECT 'ok'",
        };
        self.conn
            .borrow_mut()
            .query_one("checking integrity", sql, &[])?
            .text(0)
    }

    /// [`StoreError::Running`] when `id` is an experiment whose writer is
    /// alive (or on another host, where it cannot be judged); else whether it exists.
    pub fn check_not_running(&self, id: EntryId) -> Result<(), StoreError> {
        let EntryId::Experiment(e) = id else {
            return Ok(());
        };
        let r = self
            .conn
            .borrow_mut()
            .query_opt(
                "reading the experiment",
                "SELECT status, writer_host, writer_pid, writer_start FROM experiment WHERE id = $1",
                &[e.0.into()],
            )?
            .ok_or(StoreError::NotFound { id })?;
        let writer = writer_from(&r, 1)?;
        if self.status_of(&r.text(0)?, writer.as_ref()) != ExperimentStatus::Running {
            return Ok(());
        }
        Err(StoreError::Running {
            id,
            writer: writer.map_or("writer unknown".to_owned(), |w| {
                format!("kurabe pid {} on host {}", w.pid, w.hostname)
            }),
        })
    }

    /// The status to show: a stored `running` whose writer is gone from
    /// this machine reads as `crashed`.
    fn status_of(&self, stored: &str, writer: Option<&Writer>) -> ExperimentStatus {
        let status = ExperimentStatus::parse(stored);
        match writer {
            Some(w) if status == ExperimentStatus::Running && writer::is_gone(w, &self.here) => {
                ExperimentStatus::Crashed
            }
            _ => status,
        }
    }

    fn experiment(&self, id: ExperimentId) -> Result<Experiment, StoreError> {
        let r = self.experiment_row(id)?;
        let writer = writer_from(&r, 8)?;
        let status = self.status_of(&r.text(7)?, writer.as_ref());
        let host_id = r.opt_i64(2)?;
        let runs = self.runs_of(id)?;
        let plan_text = r.text(1)?;
        Ok(Experiment {
            id,
            name: r.text(0)?,
            layout: layout_of(&plan_text).map(Box::new),
            plan_text,
            host: host_id.map(|h| self.host(h)).transpose()?,
            tool_version: r.text(3)?,
            seed: r.opt_i64(4)?.map(|s| s as u64),
            started_at: r.text(5)?,
            finished_at: r.opt_text(6)?,
            status,
            writer,
            origin: origin_from(&r, 11)?,
            runs,
        })
    }

    /// The experiment table's row of `id` (columns as `experiment` reads them).
    fn experiment_row(&self, id: ExperimentId) -> Result<db::Row, StoreError> {
        self.conn
            .borrow_mut()
            .query_opt(
                "reading the experiment",
                "SELECT name, plan_text, host_id, tool_version, seed, started_at, finished_at, status,
                        writer_host, writer_pid, writer_start, origin_json
                 FROM experiment WHERE id = $1",
                &[id.0.into()],
            )?
            .ok_or(StoreError::NotFound { id: id.into() })
    }

    /// The runs of experiment `id`, in the order they were recorded.
    fn runs_of(&self, id: ExperimentId) -> Result<Vec<StoredRun>, StoreError> {
        let rows = self.conn.borrow_mut().query(
            "reading runs",
            "SELECT id, variant, workload, round, status, error_tail, started_at, finished_at,
                    metrics_json, record_json
             FROM run WHERE experiment_id = $1 ORDER BY id",
            &[id.0.into()],
        )?;
        rows.iter().map(stored_run).collect()
    }

    fn result(&self, id: ResultId) -> Result<SavedResult, StoreError> {
        let r = self
            .conn
            .borrow_mut()
            .query_opt(
                "reading the result",
                "SELECT kind, label, host_id, created_at, record_json, origin_json
                 FROM result WHERE id = $1",
                &[id.0.into()],
            )?
            .ok_or(StoreError::NotFound { id: id.into() })?;
        let host_id = r.opt_i64(2)?;
        Ok(SavedResult {
            id,
            label: r.text(1)?,
            host: host_id.map(|h| self.host(h)).transpose()?,
            created_at: r.text(3)?,
            record: SavedRecord::read(
                result_kind(&r.text(0)?),
                parse_json(&r.text(4)?, "result record")?,
            ),
            origin: origin_from(&r, 5)?,
        })
    }

    fn host(&self, id: i64) -> Result<HostFacts, StoreError> {
        host_by_id(&mut self.conn.borrow_mut(), id)
    }
}

/// The host facts of row `id`.
/// Make the directory a new SQLite store goes into; refuse a directory
/// given as the store.
fn prepare_location(path: &Path) -> Result<(), StoreError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|cause| StoreError::CreateDir {
            path: dir.to_owned(),
            cause,
        })?;
    }
    // Opened and checked as an input is (SQLite opens it again itself):
    // a named pipe would make SQLite wait for ever, a device is no store.
    use kurabe_input::{InputError, Kind};
    match kurabe_input::check_if_there(path, kurabe_input::Name::new("the results store")) {
        Err(InputError::NotAFile {
            kind: Kind::Directory,
            ..
        }) => Err(StoreError::IsDirectory {
            path: path.to_owned(),
        }),
        // Unreadable (no permission): SQLite says so, or opens it read-only.
        Ok(_) | Err(InputError::Open { .. }) => Ok(()),
        Err(e) => Err(StoreError::Input(e)),
    }
}

/// The connection settings a writer needs.
fn set_pragmas(conn: &Connection) -> rusqlite::Result<()> {
    // WAL: readers never block the writer, and a killed writer leaves
    // the file consistent (its uncommitted frames are ignored on reopen).
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "wal", |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        // A file system without shared memory support (some network
        // mounts) refuses WAL; the rollback journal is still crash-safe.
        conn.pragma_update(None, "journal_mode", "delete")?;
    }
    conn.pragma_update(None, "synchronous", "full")?;
    conn.pragma_update(None, "foreign_keys", true)
}

/// The experiment exists and is still `running` (runs are only added then).
fn check_running(c: &mut Conn, experiment: ExperimentId) -> Result<(), StoreError> {
    let status = c
        .query_opt(
            "looking up the experiment",
            "SELECT status FROM experiment WHERE id = $1",
            &[experiment.0.into()],
        )?
        .map(|r| r.text(0))
        .transpose()?;
    match status.as_deref() {
        None => Err(StoreError::NotFound {
            id: experiment.into(),
        }),
        Some("running") => Ok(()),
        Some(other) => Err(StoreError::Finished {
            id: experiment.into(),
            status: other.to_owned(),
        }),
    }
}

/// A `run` row (columns as [`Store::runs_of`] selects them).
fn stored_run(row: &db::Row) -> Result<StoredRun, StoreError> {
    let record = run_detail(row)?;
    Ok(StoredRun {
        id: row.i64(0)?,
        run: RunRecord {
            variant: row.text(1)?,
            workload: row.text(2)?,
            round: row.i64(3)? as u32,
            status: if row.text(4)? == "ok" {
                RunStatus::Ok
            } else {
                RunStatus::Failed
            },
            error_tail: row.opt_text(5)?,
            started_at: row.text(6)?,
            finished_at: row.text(7)?,
            metrics: parse_json(&row.text(8)?, "run metrics")?,
            // What ran is read from the stored report, its one home.
            http: record.as_ref().and_then(HttpRun::of_detail),
            record,
        },
    })
}

/// The record column of a `run` row: none when absent or `null`.
fn run_detail(row: &db::Row) -> Result<Option<RunDetail>, StoreError> {
    // A stored `null` is no record; a shape no variant takes is kept whole.
    Ok(row
        .opt_text(9)?
        .map(|r| parse_json::<Option<RunDetail>>(&r, "run record"))
        .transpose()?
        .flatten())
}

fn host_by_id(c: &mut Conn, id: i64) -> Result<HostFacts, StoreError> {
    let r = c.query_one(
        "reading host facts",
        "SELECT hostname, cpu_model, cores, memory_bytes, kernel, arch FROM host WHERE id = $1",
        &[id.into()],
    )?;
    Ok(HostFacts {
        hostname: r.text(0)?,
        cpu_model: r.text(1)?,
        cores: r.i64(2)? as u32,
        memory_bytes: r.i64(3)? as u64,
        kernel: r.text(4)?,
        arch: r.text(5)?,
    })
}

/// The writer recorded in columns `at..at + 3` (host, pid, process start),
/// if any (experiments from before schema 3, or imported without one).
fn writer_from(r: &db::Row, at: usize) -> Result<Option<Writer>, StoreError> {
    Ok(
        match (r.opt_text(at)?, r.opt_i64(at + 1)?, r.opt_text(at + 2)?) {
            (Some(hostname), Some(pid), Some(process_start)) => Some(Writer {
                hostname,
                pid: pid as u32,
                process_start,
            }),
            _ => None,
        },
    )
}

/// The origin stored in column `at` (empty for records from before schema 4).
fn origin_from(r: &db::Row, at: usize) -> Result<Origin, StoreError> {
    r.opt_text(at)?
        .map_or(Ok(Origin::default()), |t| parse_json(&t, "record origin"))
}

/// An origin as stored.
fn origin_json(origin: &Origin) -> String {
    serde_json::to_string(origin).expect("an origin always serialises")
}

/// JSON written by this store that no longer parses means the database
/// was edited by hand or damaged.
fn parse_json<T: serde::de::DeserializeOwned>(
    text: &str,
    what: &'static str,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt {
        what: format!("{what}: {e}"),
    })
}

fn upsert_host(c: &mut Conn, h: &HostFacts) -> Result<i64, StoreError> {
    let params = [
        (&h.hostname).into(),
        (&h.cpu_model).into(),
        i64::from(h.cores).into(),
        (h.memory_bytes as i64).into(),
        (&h.kernel).into(),
        (&h.arch).into(),
    ];
    // Two writers recording the same host at once: the second waits for
    // the first's row (a unique index) and then finds it.
    c.exec(
        "recording host facts",
        "INSERT INTO host (hostname, cpu_model, cores, memory_bytes, kernel, arch)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
        &params,
    )?;
    c.query_one(
        "recording host facts",
        "SELECT id FROM host WHERE hostname = $1 AND cpu_model = $2 AND cores = $3
         AND memory_bytes = $4 AND kernel = $5 AND arch = $6",
        &params,
    )?
    .i64(0)
}

fn insert_run(c: &mut Conn, experiment: ExperimentId, run: &RunRecord) -> Result<i64, StoreError> {
    let metrics_json = serde_json::to_string(&run.metrics).expect("metrics always serialise");
    let record_json = run
        .record
        .as_ref()
        .map(|r| serde_json::to_string(r).expect("run records always serialise"));
    let run_id = c
        .query_one(
            "recording the run",
            "INSERT INTO run (experiment_id, variant, workload, round, status, error_tail,
                              started_at, finished_at, metrics_json, record_json)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
            &[
                experiment.0.into(),
                (&run.variant).into(),
                (&run.workload).into(),
                i64::from(run.round).into(),
                run.status.as_str().into(),
                P::T(run.error_tail.as_deref()),
                (&run.started_at).into(),
                (&run.finished_at).into(),
                (&metrics_json).into(),
                P::T(record_json.as_deref()),
            ],
        )?
        .i64(0)?;
    insert_metrics(c, run_id, &run.metrics)?;
    Ok(run_id)
}

/// The finite `metrics` of run `run_id` into the metric table.
fn insert_metrics(c: &mut Conn, run_id: i64, metrics: &[MetricValue]) -> Result<(), StoreError> {
    // Many rows per statement: one round trip per 100 metrics rather than
    // per metric, which a PostgreSQL server across a network would feel.
    let finite: Vec<&MetricValue> = metrics.iter().filter(|m| m.value.is_finite()).collect();
    for chunk in finite.chunks(100) {
        let mut sql = String::from("INSERT INTO metric (run_id, name, value, unit) VALUES ");
        let mut params = Vec::with_capacity(chunk.len() * 4);
        for (i, m) in chunk.iter().enumerate() {
            let n = i * 4;
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("(${}, ${}, ${}, ${})", n + 1, n + 2, n + 3, n + 4));
            params.extend([
                run_id.into(),
                (&m.name).into(),
                P::F(m.value),
                (&m.unit).into(),
            ]);
        }
        c.exec("recording metrics", &sql, &params)?;
    }
    Ok(())
}

/// A saved result's status: `interrupted` when its record says so (Ctrl-C
/// during `kurabe http --save` …), else `complete`. Saved results are
/// written whole, in one transaction, so nothing in between exists.
fn result_status(kind: &str, record_json: &str) -> ExperimentStatus {
    let record = serde_json::from_str(record_json).unwrap_or_default();
    match SavedRecord::read(result_kind(kind), record).interrupted() {
        true => ExperimentStatus::Interrupted,
        false => ExperimentStatus::Complete,
    }
}

/// The kind a result row names; the CHECK constraint only admits known kinds.
fn result_kind(word: &str) -> ResultKind {
    ResultKind::parse(word).unwrap_or(ResultKind::Http)
}

fn insert_result(
    c: &mut Conn,
    label: &str,
    host: Option<i64>,
    origin: &Origin,
    created_at: &str,
    record: &SavedRecord,
) -> Result<ResultId, StoreError> {
    let (kind, record) = (record.kind(), record.to_value().to_string());
    let fingerprint = host
        .map(|h| host_by_id(c, h))
        .transpose()?
        .map(|h| host_fingerprint(&h, origin.limits.as_ref()));
    let row = c.query_one(
        "saving the result",
        "INSERT INTO result (kind, label, host_id, created_at, record_json, origin_json, host_fingerprint)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
        &[
            kind.as_str().into(),
            label.into(),
            P::I(host),
            created_at.into(),
            (&record).into(),
            (&origin_json(origin)).into(),
            P::T(fingerprint.as_deref()),
        ],
    )?;
    Ok(ResultId(row.i64(0)?))
}

/// The row of a new, `running` experiment written by `writer`.
fn insert_new_experiment(
    c: &mut Conn,
    new: &NewExperiment,
    writer: &Writer,
) -> Result<ExperimentId, StoreError> {
    let now = rfc3339(SystemTime::now());
    let origin = origin_json(&new.origin);
    let fingerprint = host_fingerprint(&new.host, new.origin.limits.as_ref());
    let host = upsert_host(c, &new.host)?;
    c.query_one(
        "recording the experiment",
        "INSERT INTO experiment (name, plan_text, host_id, tool_version, seed, started_at, status,
                                 writer_host, writer_pid, writer_start, origin_json, host_fingerprint)
         VALUES ($1, $2, $3, $4, $5, $6, 'running', $7, $8, $9, $10, $11) RETURNING id",
        &[
            (&new.name).into(),
            (&new.plan_text).into(),
            host.into(),
            (&new.tool_version).into(),
            P::I(new.seed.map(|s| s as i64)),
            (&now).into(),
            (&writer.hostname).into(),
            i64::from(writer.pid).into(),
            (&writer.process_start).into(),
            (&origin).into(),
            (&fingerprint).into(),
        ],
    )?
    .i64(0)
    .map(ExperimentId)
}

/// An export this kurabe can read: its format, and a version not newer.
fn check_export(export: &Export) -> Result<(), StoreError> {
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
    Ok(())
}

/// An exported experiment and its runs, as a new experiment.
fn import_experiment(c: &mut Conn, e: &Experiment) -> Result<ExperimentId, StoreError> {
    let id = insert_experiment_row(c, e)?;
    for run in &e.runs {
        insert_run(c, id, &run.run)?;
    }
    Ok(id)
}

/// The experiment row of an exported experiment (its host upserted).
fn insert_experiment_row(c: &mut Conn, e: &Experiment) -> Result<ExperimentId, StoreError> {
    let host = e.host.as_ref().map(|h| upsert_host(c, h)).transpose()?;
    let w = e.writer.as_ref();
    let fingerprint = e.host_fingerprint();
    let row = c.query_one(
        "importing the experiment",
        "INSERT INTO experiment (name, plan_text, host_id, tool_version, seed, started_at,
                                 finished_at, status, writer_host, writer_pid, writer_start,
                                 origin_json, host_fingerprint)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id",
        &[
            (&e.name).into(),
            (&e.plan_text).into(),
            P::I(host),
            (&e.tool_version).into(),
            P::I(e.seed.map(|s| s as i64)),
            (&e.started_at).into(),
            P::T(e.finished_at.as_deref()),
            // `crashed` is derived from the writer, which is imported with it.
            e.status.stored().into(),
            P::T(w.map(|w| w.hostname.as_str())),
            P::I(w.map(|w| i64::from(w.pid))),
            P::T(w.map(|w| w.process_start.as_str())),
            (&origin_json(&e.origin)).into(),
            P::T(fingerprint.as_deref()),
        ],
    )?;
    Ok(ExperimentId(row.i64(0)?))
}

/// The layout of a stored plan text: the one place a stored plan is read
/// back, so readers of experiments get it typed. `None` for a text that
/// is not a plan this kurabe reads (an import's, a future kurabe's).
pub fn layout_of(plan_text: &str) -> Option<kurabe_model::layout::Layout> {
    let plan: kurabe_model::plan::Plan = toml::from_str(plan_text).ok()?;
    Some(kurabe_model::layout::Layout::of(&plan))
}

#[cfg(test)]
mod old_store_tests;
#[cfg(test)]
mod tests;
