//! Stores written by an older kurabe open and migrate forward without
//! losing a row: an SQLite file and PostgreSQL dumps made by main before
//! the one migration list (store schema version 4, the fleet's own version
//! 1), on a real SQLite and a real PostgreSQL server (kurabe-testkit's).
//!
//! Owns the fixtures' checks only; the fixtures are made by scripts beside
//! them (`crates/kurabe/tests/fixtures/store-v1/make.sh`,
//! `crates/kurabe-store/fixtures/make-pg.sh`) and never edited by hand.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use super::*;

/// Tables of schema version 4 (the store's) and the fleet's version 1.
const STORE_TABLES: &[&str] = &["host", "experiment", "run", "metric", "result"];
const FLEET_TABLES: &[&str] = &[
    "fleet_workers",
    "fleet_runs",
    "fleet_assignments",
    "fleet_progress",
    "fleet_results",
];

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Rows per table, for the tables that exist.
fn sqlite_rows(c: &rusqlite::Connection) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    for t in STORE_TABLES.iter().chain(FLEET_TABLES) {
        let sql = format!("SELECT count(*) FROM {t}");
        if let Ok(n) = c.query_row(&sql, [], |r| r.get(0)) {
            out.insert((*t).to_owned(), n);
        }
    }
    out
}

/// A host no fixture holds, so the result saved after a migration adds
/// exactly one host row whatever machine the test runs on (this machine's
/// facts would match the fixture's host only where the fixture was made).
fn new_host() -> kurabe_model::host::HostFacts {
    kurabe_model::host::HostFacts {
        hostname: "saved-after-migration.invalid".into(),
        cpu_model: "Test CPU @ 2.0GHz".into(),
        cores: 2,
        memory_bytes: 4 << 30,
        kernel: "6.1.0".into(),
        arch: "x86_64".into(),
    }
}

fn sqlite_has(c: &rusqlite::Connection, table: &str) -> bool {
    c.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [table],
        |r| r.get::<_, i64>(0),
    )
    .unwrap()
        == 1
}

#[test]
fn an_sqlite_store_made_by_main_migrates_without_losing_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite");
    std::fs::copy(
        fixture("../kurabe/tests/fixtures/store-v1/store.sqlite"),
        &path,
    )
    .unwrap();
    let before = {
        let c = rusqlite::Connection::open(&path).unwrap();
        assert_eq!(schema::version(&c).unwrap(), 4, "the fixture is version 4");
        assert!(!sqlite_has(&c, "fleet_runs"));
        sqlite_rows(&c)
    };
    assert!(before["run"] > 0 && before["metric"] > 0 && before["result"] > 0);

    let mut store = Store::open(&path).unwrap();
    let listed = store.list().unwrap().len();
    let id = store
        .save_result(
            "after migration",
            &new_host(),
            &Origin::default(),
            &SavedRecord::read(ResultKind::Mem, serde_json::json!({})),
        )
        .unwrap();
    assert_eq!(store.list().unwrap().len(), listed + 1);
    drop(store);

    let c = rusqlite::Connection::open(&path).unwrap();
    assert_eq!(schema::version(&c).unwrap(), schema::CURRENT);
    let mut after = sqlite_rows(&c);
    *after.get_mut("result").unwrap() -= 1;
    *after.get_mut("host").unwrap() -= 1;
    let fleet: Vec<_> = FLEET_TABLES.iter().map(|t| after.remove(*t)).collect();
    assert_eq!(after, before, "every row of version 4 is still there");
    assert!(
        fleet.iter().all(|n| *n == Some(0)),
        "fleet tables, empty: {fleet:?}"
    );
    drop(c);
    // Reopening an up-to-date store changes nothing.
    let store = Store::open(&path).unwrap();
    assert!(store.get(id.into()).is_ok());
}

/// A PostgreSQL schema of the test server loaded from a dump, dropped at the end.
struct PgFixture {
    url: String,
    schema: String,
}

impl PgFixture {
    /// `dump` loaded into a fresh schema, then `then` run on it (SQL, may be empty).
    fn load(url: &str, dump: &str, then: &str) -> PgFixture {
        let text = std::fs::read_to_string(fixture(dump)).unwrap();
        PgFixture::from_sql(url, &text, then)
    }

    /// A fresh schema with nothing in it.
    fn empty(url: &str) -> PgFixture {
        PgFixture::from_sql(url, "CREATE SCHEMA __SCHEMA__;", "")
    }

    fn from_sql(url: &str, text: &str, then: &str) -> PgFixture {
        static N: AtomicU32 = AtomicU32::new(0);
        let schema = format!(
            "kurabe_old_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let mut c = pg::connect(url).unwrap();
        c.batch_execute(&text.replace("__SCHEMA__", &schema))
            .unwrap();
        let fx = PgFixture {
            url: url.to_owned(),
            schema,
        };
        if !then.is_empty() {
            fx.client().batch_execute(then).unwrap();
        }
        fx
    }

    /// The store's spelling of this schema: the URL with its search_path.
    fn spec(&self) -> PathBuf {
        let sep = if self.url.contains('?') { '&' } else { '?' };
        PathBuf::from(format!(
            "{}{sep}options=-c%20search_path%3D{}",
            self.url, self.schema
        ))
    }

    fn client(&self) -> postgres::Client {
        pg::connect(self.spec().to_str().unwrap()).unwrap()
    }

    fn has(&self, table: &str) -> bool {
        self.client()
            .query_one(
                "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = $1",
                &[&table],
            )
            .unwrap()
            .get::<_, i64>(0)
            == 1
    }

    /// Every column of every table: name, type, nullability.
    fn columns(&self) -> Vec<(String, String, String, String)> {
        self.client()
            .query(
                "SELECT table_name::text, column_name::text, data_type::text, is_nullable::text
                 FROM information_schema.columns WHERE table_schema = current_schema()
                 ORDER BY 1, 2",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
            .collect()
    }

    fn rows(&self) -> BTreeMap<String, i64> {
        let mut c = self.client();
        let mut out = BTreeMap::new();
        for t in STORE_TABLES.iter().chain(FLEET_TABLES) {
            if self.has(t) {
                let n: i64 = c
                    .query_one(&format!("SELECT count(*) FROM {t}"), &[])
                    .unwrap()
                    .get(0);
                out.insert((*t).to_owned(), n);
            }
        }
        out
    }
}

impl Drop for PgFixture {
    fn drop(&mut self) {
        if let Ok(mut c) = pg::connect(&self.url) {
            let _ = c.batch_execute(&format!("DROP SCHEMA {} CASCADE", self.schema));
        }
    }
}

/// Open `fx` as a store, check that every row is kept, that the fleet's
/// tables and one version record are there, and that both the store and
/// the fleet's tables take new rows (their id sequences carried over).
fn migrates_keeping_rows(fx: &PgFixture) {
    let before = fx.rows();
    let mut store = Store::open(&fx.spec()).unwrap();
    let listed = store.list().unwrap().len();
    store
        .save_result(
            "after migration",
            &new_host(),
            &Origin::default(),
            &SavedRecord::read(ResultKind::Mem, serde_json::json!({})),
        )
        .unwrap();
    assert_eq!(store.list().unwrap().len(), listed + 1);
    drop(store);

    let mut after = fx.rows();
    for t in STORE_TABLES.iter().chain(FLEET_TABLES) {
        assert!(fx.has(t), "{t} exists after migration");
    }
    *after.get_mut("result").unwrap() -= 1;
    *after.get_mut("host").unwrap() -= 1;
    for (t, n) in &before {
        assert_eq!(after[t], *n, "rows of {t}");
    }
    assert!(!fx.has("fleet_schema_version"), "one version record");
    let mut c = fx.client();
    let v: i64 = c
        .query_one("SELECT version FROM kurabe_schema", &[])
        .unwrap()
        .get(0);
    assert_eq!(v, schema::CURRENT);
    let versions: i64 = c
        .query_one("SELECT count(*) FROM kurabe_schema", &[])
        .unwrap()
        .get(0);
    assert_eq!(versions, 1);
    // A worker registering after the migration gets the next id.
    let id: i64 = c
        .query_one(
            "INSERT INTO fleet_workers (name, backend_pid) VALUES ('new', pg_backend_pid()) RETURNING id",
            &[],
        )
        .unwrap()
        .get(0);
    let most: i64 = c
        .query_one("SELECT max(id) FROM fleet_workers", &[])
        .unwrap()
        .get(0);
    assert_eq!(id, most);
    // Opening again, as the fleet does, changes nothing.
    drop(pg::connect_migrated(fx.spec().to_str().unwrap()).unwrap());
    assert_eq!(
        fx.rows()["fleet_workers"],
        before.get("fleet_workers").unwrap_or(&0) + 1
    );
}

#[test]
fn postgres_stores_made_by_main_migrate_without_losing_rows() {
    let Some(url) = pg::test_url() else { return };
    let fresh = PgFixture::empty(&url);
    drop(Store::open(&fresh.spec()).unwrap());
    let want = fresh.columns();
    assert!(want
        .iter()
        .any(|c| c.0 == "fleet_results" && c.2 == "bytea"));

    // Store tables only (no fleet run ever used the database).
    let fx = PgFixture::load(&url, "fixtures/pg-store.sql", "");
    assert!(!fx.has("fleet_runs"));
    migrates_keeping_rows(&fx);
    assert_eq!(fx.columns(), want, "the same columns as a new store");

    // Store and fleet tables, with a distributed run's rows.
    let fx = PgFixture::load(&url, "fixtures/pg-fleet.sql", "");
    let rows = fx.rows();
    assert!(FLEET_TABLES.iter().all(|t| rows[*t] > 0), "{rows:?}");
    migrates_keeping_rows(&fx);
    let mut c = fx.client();
    let report: String = c
        .query_one("SELECT report::text FROM fleet_results", &[])
        .unwrap()
        .get(0);
    assert!(report.contains("requests_per_second"), "{report}");
    assert_eq!(fx.columns(), want, "the same columns as a new store");

    // Fleet tables only: `kurabe worker` ran there, no store was opened.
    let fx = PgFixture::load(
        &url,
        "fixtures/pg-fleet.sql",
        "DROP TABLE metric, run, experiment, result, host, kurabe_schema",
    );
    assert!(!fx.has("kurabe_schema") && fx.has("fleet_schema_version"));
    migrates_keeping_rows(&fx);
    assert_eq!(fx.columns(), want, "the same columns as a new store");
}
