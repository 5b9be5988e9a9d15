//! Store tests, each run against both backends: real SQLite files in temp
//! dirs, and a real PostgreSQL server (kurabe-testkit's: `KURABE_TEST_PG`
//! or one started for the tests wherever PostgreSQL is installed; each
//! store a fresh schema there). Round trips, migrations, a writer killed
//! with SIGKILL mid-transaction, concurrent writers.

use std::cell::RefCell;
use std::collections::BTreeMap as Map;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::*;

fn host() -> HostFacts {
    HostFacts {
        hostname: "bench1".into(),
        cpu_model: "Test CPU @ 2.0GHz".into(),
        cores: 2,
        memory_bytes: 4 << 30,
        kernel: "6.1.0".into(),
        arch: "x86_64".into(),
    }
}

fn new_experiment(name: &str) -> NewExperiment {
    NewExperiment {
        name: name.into(),
        plan_text: "name = \"t\"\n".into(),
        seed: Some(u64::MAX - 1),
        host: host(),
        tool_version: "0.1.0".into(),
        origin: Origin::default(),
    }
}

fn run(variant: &str, round: u32, rps: f64, metrics: usize) -> RunRecord {
    let mut m = vec![
        MetricValue {
            name: "requests_per_second".into(),
            value: rps,
            unit: "/s".into(),
        },
        MetricValue {
            name: "pss_peak_bytes".into(),
            value: 40e6,
            unit: "B".into(),
        },
    ];
    for i in 0..metrics {
        m.push(MetricValue {
            name: format!("extra_{i}"),
            value: i as f64,
            unit: "".into(),
        });
    }
    RunRecord {
        variant: variant.into(),
        workload: "index".into(),
        round,
        status: RunStatus::Ok,
        error_tail: None,
        started_at: "2026-11-29T22:00:00.000Z".into(),
        finished_at: "2026-11-29T22:00:03.000Z".into(),
        metrics: m,
        record: Some(kurabe_model::run_detail::RunDetail::Idle(
            kurabe_model::run_detail::IdleDetail {
                target: None,
                system_used_bytes: Some(rps as u64),
            },
        )),
        http: None,
    }
}

/// Fresh, empty stores on one backend.
enum Fx {
    Sqlite(TempDir),
    Pg {
        url: String,
        /// Store name → schema created for it.
        schemas: RefCell<Map<String, String>>,
    },
}

impl Fx {
    /// Where store `name` of this backend lives (the same name, the same store).
    fn spec(&self, name: &str) -> PathBuf {
        match self {
            Fx::Sqlite(dir) => dir.path().join(name),
            Fx::Pg { url, schemas } => {
                static N: AtomicU32 = AtomicU32::new(0);
                let mut schemas = schemas.borrow_mut();
                let schema = schemas.entry(name.to_owned()).or_insert_with(|| {
                    let schema = format!(
                        "kurabe_test_{}_{}",
                        std::process::id(),
                        N.fetch_add(1, Ordering::Relaxed)
                    );
                    pg::connect(url)
                        .unwrap()
                        .batch_execute(&format!("CREATE SCHEMA {schema}"))
                        .unwrap();
                    schema
                });
                let sep = if url.contains('?') { '&' } else { '?' };
                PathBuf::from(format!("{url}{sep}options=-c%20search_path%3D{schema}"))
            }
        }
    }

    fn open(&self, name: &str) -> Store {
        Store::open(&self.spec(name)).unwrap()
    }

    fn name(&self) -> &'static str {
        match self {
            Fx::Sqlite(_) => "sqlite",
            Fx::Pg { .. } => "postgres",
        }
    }
}

impl Drop for Fx {
    fn drop(&mut self) {
        if let Fx::Pg { url, schemas } = self {
            if let Ok(mut c) = pg::connect(url) {
                for schema in schemas.borrow().values() {
                    let _ = c.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"));
                }
            }
        }
    }
}

/// Run `test` on SQLite, and on PostgreSQL when the test server is there
/// (a visible skip line otherwise; a failure in CI).
fn each_backend(test: impl Fn(&Fx)) {
    let mut all = vec![Fx::Sqlite(TempDir::new().unwrap())];
    if let Some(url) = pg::test_url() {
        all.push(Fx::Pg {
            url,
            schemas: RefCell::new(Map::new()),
        });
    }
    for fx in &all {
        eprintln!("backend: {}", fx.name());
        test(fx);
    }
}

/// One integer from a query on the store's own connection.
fn count(store: &Store, sql: &str, params: &[db::P<'_>]) -> i64 {
    store
        .conn
        .borrow_mut()
        .query_one("test query", sql, params)
        .unwrap()
        .i64(0)
        .unwrap()
}

fn schema_version(store: &Store) -> i64 {
    if store.is_postgres() {
        return count(store, "SELECT version FROM kurabe_schema", &[]);
    }
    match &*store.conn.borrow() {
        Conn::Sqlite(c) => schema::version(c).unwrap(),
        Conn::Pg(_) => unreachable!(),
    }
}

fn table_exists(store: &Store, name: &str) -> bool {
    let sql = if store.is_postgres() {
        "SELECT count(*) FROM pg_tables WHERE tablename = $1 AND schemaname = current_schema()"
    } else {
        "SELECT count(*) FROM sqlite_master WHERE name = $1"
    };
    count(store, sql, &[name.into()]) == 1
}

#[test]
fn default_path_follows_env_then_xdg_then_home() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |k: &str| {
            pairs
                .iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| OsString::from(v))
        }
    };
    assert_eq!(
        default_path_from(env(&[("KURABE_STORE", "/x/r.db"), ("HOME", "/h")])).unwrap(),
        PathBuf::from("/x/r.db")
    );
    assert_eq!(
        default_path_from(env(&[("XDG_DATA_HOME", "/d"), ("HOME", "/h")])).unwrap(),
        PathBuf::from("/d/kurabe/results.db")
    );
    // Relative XDG_DATA_HOME is invalid per the spec; empty values are unset.
    assert_eq!(
        default_path_from(env(&[
            ("XDG_DATA_HOME", "rel"),
            ("KURABE_STORE", ""),
            ("HOME", "/h")
        ]))
        .unwrap(),
        PathBuf::from("/h/.local/share/kurabe/results.db")
    );
    let err = default_path_from(env(&[])).unwrap_err();
    assert!(matches!(err, StoreError::NoDataDir));
    assert!(err
        .to_string()
        .contains("pass --store PATH or set KURABE_STORE"));
}

#[test]
fn experiment_round_trip() {
    each_backend(|fx| {
        let path = fx.spec("sub/dir/results.db");
        let mut store = Store::open(&path).unwrap();
        let id = store
            .begin_experiment(&new_experiment("gc settings"))
            .unwrap();
        let mut failed = run("b", 0, 0.0, 0);
        failed.status = RunStatus::Failed;
        failed.error_tail = Some("line 1\nSegmentation fault".into());
        failed.metrics.clear();
        failed.record = None;
        let runs = [
            run("a", 0, 100.5, 3),
            failed,
            run("a", 1, 101.5, 3),
            run("b", 1, 120.0, 3),
        ];
        for r in &runs {
            store.record_run(id, r).unwrap();
        }
        store
            .finish_experiment(id, ExperimentStatus::Complete)
            .unwrap();
        drop(store);

        let store = Store::open(&path).unwrap();
        let Entry::Experiment(e) = store.get(id.into()).unwrap() else {
            panic!("expected an experiment")
        };
        assert_eq!(e.name, "gc settings");
        assert_eq!(
            e.seed,
            Some(u64::MAX - 1),
            "u64 seeds survive the i64 column"
        );
        assert_eq!(e.host, Some(host()));
        assert_eq!(e.status, ExperimentStatus::Complete);
        assert!(e.finished_at.is_some());
        let back: Vec<RunRecord> = e.runs.iter().map(|r| r.run.clone()).collect();
        assert_eq!(back, runs);

        let samples = store
            .metric_samples(id, "index", "requests_per_second")
            .unwrap();
        assert_eq!(samples["a"], vec![100.5, 101.5]);
        assert_eq!(samples["b"], vec![120.0], "the failed run is left out");

        let list = store.list().unwrap();
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].id.to_string(), format!("e{}", id.0));
        assert_eq!((list[0].runs, list[0].failed_runs), (4, 1));
        assert_eq!(list[0].hostname.as_deref(), Some("bench1"));
        assert_eq!(store.integrity_check().unwrap(), "ok");
    });
}

#[test]
fn finished_experiments_refuse_runs_and_missing_ids_are_named() {
    each_backend(|fx| {
        let mut store = fx.open("r.db");
        let id = store.begin_experiment(&new_experiment("x")).unwrap();
        store
            .finish_experiment(id, ExperimentStatus::Interrupted)
            .unwrap();
        let err = store.record_run(id, &run("a", 0, 1.0, 0)).unwrap_err();
        assert_eq!(
        err.to_string(),
        format!("experiment e{} is already finished (interrupted); start a new experiment to record more runs", id.0)
    );
        let err = store.get(EntryId::Result(ResultId(99))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no r99 in the results store; `kurabe results list` shows the ids"
        );
        assert!(matches!(
            store.record_run(ExperimentId(42), &run("a", 0, 1.0, 0)),
            Err(StoreError::NotFound { .. })
        ));
        assert!(matches!(
            store.delete(EntryId::Experiment(ExperimentId(42)), false),
            Err(StoreError::NotFound { .. })
        ));
    });
}

#[test]
fn saved_results_list_and_delete_with_cascade() {
    each_backend(|fx| {
        let mut store = fx.open("r.db");
        let e = store.begin_experiment(&new_experiment("exp")).unwrap();
        store.record_run(e, &run("a", 0, 1.0, 2)).unwrap();
        let record = serde_json::json!({ "schema_version": 1, "requests_per_second": 1234.5 });
        let r = store
            .save_result(
                "http://127.0.0.1:8080/",
                &host(),
                &Origin::default(),
                &SavedRecord::read(ResultKind::Http, record.clone()),
            )
            .unwrap();
        let Entry::Result(saved) = store.get(r.into()).unwrap() else {
            panic!("expected a result")
        };
        assert_eq!(
            (saved.kind(), saved.record.to_value()),
            (ResultKind::Http, record)
        );
        let kinds: Vec<String> = store.list().unwrap().into_iter().map(|l| l.kind).collect();
        assert!(kinds.contains(&"http".to_owned()) && kinds.contains(&"experiment".to_owned()));

        let err = store.delete(e.into(), false).unwrap_err();
        assert!(
            matches!(err, StoreError::Running { .. }) && err.to_string().contains("--force"),
            "this process is its live writer: {err}"
        );
        store.delete(e.into(), true).unwrap();
        let orphans = count(
            &store,
            "SELECT (SELECT count(*) FROM run) + (SELECT count(*) FROM metric)",
            &[],
        );
        assert_eq!(orphans, 0, "runs and metrics go with their experiment");
        store.delete(r.into(), false).unwrap();
        assert!(store.list().unwrap().is_empty());
    });
}

#[test]
fn export_then_import_into_another_store() {
    each_backend(|fx| {
        let mut a = fx.open("a.db");
        let e = a.begin_experiment(&new_experiment("32 vs 64 bit")).unwrap();
        a.record_run(e, &run("32-bit", 0, 1078.7, 1)).unwrap();
        a.finish_experiment(e, ExperimentStatus::Complete).unwrap();
        let r = a
            .save_result(
                "vps-32",
                &host(),
                &Origin::default(),
                &SavedRecord::read(
                    ResultKind::Unixbench,
                    serde_json::json!({ "index": 1078.7 }),
                ),
            )
            .unwrap();
        let json = a.export_json(&[e.into(), r.into()]).unwrap();

        let mut b = fx.open("b.db");
        b.save_result(
            "pad",
            &host(),
            &Origin::default(),
            &SavedRecord::read(ResultKind::Mem, serde_json::json!({})),
        )
        .unwrap(); // shift the ids
        let ids = b.import_json(&json).unwrap();
        assert_eq!(ids.len(), 2);
        let strip = |entry: Entry| match entry {
            Entry::Experiment(mut x) => {
                x.id = ExperimentId(0);
                x.runs.iter_mut().for_each(|r| r.id = 0);
                Entry::Experiment(x)
            }
            Entry::Result(mut x) => {
                x.id = ResultId(0);
                Entry::Result(x)
            }
        };
        assert_eq!(
            strip(b.get(ids[0]).unwrap()),
            strip(a.get(e.into()).unwrap())
        );
        assert_eq!(
            strip(b.get(ids[1]).unwrap()),
            strip(a.get(r.into()).unwrap())
        );

        let err = b
            .import_json("{\"format\": \"other\", \"schema_version\": 1, \"entries\": []}")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot import: `format` is `other`, expected `kurabe-results`"
        );
        let err = b.import_json("[1, 2]").unwrap_err().to_string();
        assert!(
            err.starts_with("cannot import: not a kurabe export"),
            "{err}"
        );
        assert!(
            err.ends_with("expected the JSON of `kurabe results export`"),
            "{err}"
        );
    });
}

#[test]
fn migrates_an_older_store_and_reopening_is_idempotent() {
    each_backend(|fx| {
        let path = fx.spec("old.db");
        // A store as the first schema version left it, with data in it.
        let mut old = Store::open_at_version(&path, 1).unwrap();
        assert_eq!(schema_version(&old), 1);
        let id = old
            .begin_experiment(&new_experiment("from v1"))
            .unwrap_err();
        // Version 1 has no writer columns: kurabe of that time wrote without them.
        assert!(id.to_string().contains("writer"), "{id}");
        old.conn
            .borrow_mut()
            .exec(
                "test",
                "INSERT INTO experiment (name, plan_text, tool_version, started_at, status)
             VALUES ('from v1', '', '0.1.0', '2026-11-01T00:00:00.000Z', 'running')",
                &[],
            )
            .unwrap();
        let id = ExperimentId(count(&old, "SELECT max(id) FROM experiment", &[]));
        old.record_run(id, &run("a", 0, 99.0, 1)).unwrap();
        assert!(!table_exists(&old, "result"));
        drop(old);

        let mut store = Store::open(&path).unwrap();
        assert_eq!(schema_version(&store), schema::CURRENT);
        let Entry::Experiment(e) = store.get(id.into()).unwrap() else {
            panic!()
        };
        assert_eq!(e.runs.len(), 1);
        assert_eq!(e.writer, None);
        assert_eq!(
            e.status,
            ExperimentStatus::Running,
            "no writer known: not judged"
        );
        store
            .save_result(
                "after migration",
                &host(),
                &Origin::default(),
                &SavedRecord::read(ResultKind::System, serde_json::json!({})),
            )
            .unwrap();
        drop(store);
        let store = Store::open(&path).unwrap();
        assert_eq!(schema_version(&store), schema::CURRENT);
        assert_eq!(store.list().unwrap().len(), 2);
    });
}

#[test]
fn newer_store_is_refused_with_the_fix() {
    each_backend(|fx| {
        let path = fx.spec("new.db");
        let store = Store::open(&path).unwrap();
        let shown = store.path().to_owned();
        match &*store.conn.borrow() {
            Conn::Sqlite(c) => c.pragma_update(None, "user_version", 99).unwrap(),
            Conn::Pg(_) => {}
        }
        if store.is_postgres() {
            store
                .conn
                .borrow_mut()
                .exec("test", "UPDATE kurabe_schema SET version = 99", &[])
                .unwrap();
        }
        drop(store);
        let err = Store::open(&path).unwrap_err();
        assert_eq!(
        err.to_string(),
        format!(
            "results store {} has schema version 99, newer than this kurabe understands ({}); upgrade kurabe or use another store",
            shown.display(),
            schema::CURRENT
        )
    );
    });
}

#[test]
fn garbage_file_is_refused_with_the_fix() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(
        &path,
        "these are my notes, not a database, but long enough to have a header ..........",
    )
    .unwrap();
    let before = std::fs::read(&path).unwrap();
    let err = Store::open(&path).unwrap_err().to_string();
    assert!(err.contains("not an SQLite database"), "{err}");
    assert!(err.contains("--store"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn only_empty_files_and_kurabe_stores_are_opened() {
    let dir = TempDir::new().unwrap();
    let other = dir.path().join("other.db");
    let c = Connection::open(&other).unwrap();
    c.execute_batch("CREATE TABLE experiment (id INTEGER); CREATE TABLE run (id INTEGER);")
        .unwrap();
    drop(c);
    // Tables of the same names but no schema version: not ours.
    assert!(matches!(
        Store::open(&other),
        Err(StoreError::NotKurabe { .. })
    ));
    let c = Connection::open(&other).unwrap();
    c.pragma_update(None, "application_id", 7).unwrap();
    c.execute_batch("DROP TABLE experiment; DROP TABLE run;")
        .unwrap();
    drop(c);
    // Empty, but marked by another program.
    assert!(matches!(
        Store::open(&other),
        Err(StoreError::NotKurabe { .. })
    ));
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    Store::open(&empty).unwrap();
    Store::open(&empty).unwrap();
}

#[test]
fn concurrent_writers_wait_for_each_other() {
    each_backend(|fx| {
        let path = fx.spec("shared.db");
        // Several writers opening a new store at once all migrate it safely.
        let (writers, runs_each) = (4, 25);
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let mut store = Store::open(&path).unwrap();
                    let id = store
                        .begin_experiment(&new_experiment(&format!("writer {w}")))
                        .unwrap();
                    let mut saved = Vec::new();
                    for i in 0..runs_each {
                        store.record_run(id, &run("a", i, f64::from(i), 5)).unwrap();
                        if i % 5 == 0 {
                            saved.push(
                                store
                                    .save_result(
                                        "c",
                                        &host(),
                                        &Origin::default(),
                                        &SavedRecord::read(
                                            ResultKind::Http,
                                            serde_json::json!({ "w": w }),
                                        ),
                                    )
                                    .unwrap(),
                            );
                        }
                    }
                    store
                        .finish_experiment(id, ExperimentStatus::Complete)
                        .unwrap();
                    (id, saved)
                })
            })
            .collect();
        let done: Vec<(ExperimentId, Vec<ResultId>)> =
            handles.into_iter().map(|h| h.join().unwrap()).collect();
        let store = Store::open(&path).unwrap();
        let mut run_ids = std::collections::BTreeSet::new();
        let mut result_ids = std::collections::BTreeSet::new();
        for (id, saved) in &done {
            let Entry::Experiment(e) = store.get((*id).into()).unwrap() else {
                panic!()
            };
            assert_eq!(e.runs.len(), runs_each as usize);
            assert_eq!(e.status, ExperimentStatus::Complete);
            run_ids.extend(e.runs.iter().map(|r| r.id));
            result_ids.extend(saved.iter().map(|r| r.0));
        }
        assert_eq!(
            run_ids.len(),
            writers * runs_each as usize,
            "run ids are unique"
        );
        assert_eq!(result_ids.len(), writers * 5, "result ids are unique");
        assert_eq!(
            count(&store, "SELECT count(*) FROM run", &[]),
            (writers * runs_each as usize) as i64
        );
        assert_eq!(
            count(&store, "SELECT count(*) FROM metric", &[]),
            (writers * runs_each as usize * 7) as i64
        );
        assert_eq!(
            count(&store, "SELECT count(*) FROM host", &[]),
            1,
            "one host row, however many writers"
        );
        assert_eq!(store.list().unwrap().len(), writers + writers * 5);
        assert_eq!(store.integrity_check().unwrap(), "ok");
    });
}

/// Environment variable that turns [`crash_child`] from a no-op into the
/// writer the crash test kills.
const CRASH_CHILD_ENV: &str = "KURABE_STORE_TEST_CRASH_CHILD";

/// Runs only when re-executed by a crash test: records runs, says so on
/// stdout, and then either keeps a transaction open half-written or keeps
/// writing, until it is killed.
#[test]
fn crash_child() {
    let Some(spec) = std::env::var_os(CRASH_CHILD_ENV) else {
        return;
    };
    let spec = spec.to_string_lossy().into_owned();
    let (mode, path) = spec.split_once(':').unwrap();
    let mut store = Store::open(Path::new(path)).unwrap();
    let id = store.begin_experiment(&new_experiment("crash")).unwrap();
    println!("EXPERIMENT {}", id.0);
    match mode {
        "open-tx" => {
            for i in 0..3 {
                store.record_run(id, &run("a", i, 100.0, 50)).unwrap();
            }
            println!("COMMITTED 3");
            // Half of a run written inside a transaction that never commits.
            let mut c = store.conn.borrow_mut();
            let begin = if matches!(*c, Conn::Pg(_)) {
                "BEGIN"
            } else {
                "BEGIN IMMEDIATE"
            };
            c.batch("test", begin).unwrap();
            insert_run(&mut c, id, &run("a", 3, 100.0, 50)).unwrap();
            c.batch("test", "INSERT INTO metric (run_id, name, value, unit) SELECT max(id), 'late', 1, '' FROM run")
                .unwrap();
            println!("IN_TX");
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        _ => {
            for i in 0.. {
                store.record_run(id, &run("a", i, 100.0, 200)).unwrap();
                println!("COMMITTED {}", i + 1);
            }
        }
    }
}

/// Re-execute this test binary as a writer, read its stdout until
/// `until(line)` holds, then SIGKILL it. Returns the experiment id and the
/// last COMMITTED count it printed.
fn run_and_kill(mode: &str, path: &Path, until: impl Fn(&str) -> bool) -> (ExperimentId, u32) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "tests::crash_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CRASH_CHILD_ENV, format!("{mode}:{}", path.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let (mut experiment, mut committed) = (None, 0);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = match rx.recv_timeout(left) {
            Ok(line) => line,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("crash child gave no expected line within 60 s: {e}");
            }
        };
        // libtest prints `test tests::crash_child ... ` without a newline
        // before the test's own output, so markers may follow it on a line.
        if let Some((_, id)) = line.split_once("EXPERIMENT ") {
            experiment = Some(ExperimentId(id.parse().unwrap()));
        }
        if let Some((_, n)) = line.split_once("COMMITTED ") {
            committed = n.parse().unwrap();
        }
        if until(&line) {
            break;
        }
    }
    child.kill().unwrap(); // SIGKILL: no destructors, no rollback
    child.wait().unwrap();
    (experiment.unwrap(), committed)
}

fn assert_consistent_after_crash(
    path: &Path,
    id: ExperimentId,
    at_least: u32,
    metrics_per_run: i64,
) -> usize {
    let store = Store::open(path).unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok");
    let Entry::Experiment(e) = store.get(id.into()).unwrap() else {
        panic!()
    };
    assert_eq!(
        e.status,
        ExperimentStatus::Crashed,
        "a killed writer's experiment must read as crashed, never complete"
    );
    let w = e.writer.as_ref().expect("the writer is recorded");
    assert_eq!(w.hostname, writer::current().hostname);
    assert_ne!(w.pid, std::process::id());
    assert!(store
        .list()
        .unwrap()
        .iter()
        .any(|l| l.id == EntryId::Experiment(id) && l.status == Some(ExperimentStatus::Crashed)));
    assert_eq!(e.finished_at, None);
    assert!(
        e.runs.len() >= at_least as usize,
        "{} runs stored, {at_least} were committed",
        e.runs.len()
    );
    // Every stored run is whole: all of its metric rows, nothing extra.
    for r in &e.runs {
        let n = count(
            &store,
            "SELECT count(*) FROM metric WHERE run_id = $1",
            &[r.id.into()],
        );
        assert_eq!(n, metrics_per_run, "run {} has {n} metric rows", r.id);
        assert_eq!(r.run.metrics.len() as i64, metrics_per_run);
    }
    e.runs.len()
}

#[test]
fn runs_survive_sigkill_mid_transaction() {
    each_backend(|fx| {
        let path = fx.spec("crash.db");
        let (id, committed) = run_and_kill("open-tx", &path, |l| l.ends_with("IN_TX"));
        assert_eq!(committed, 3);
        let stored = assert_consistent_after_crash(&path, id, 3, 52);
        assert_eq!(stored, 3, "the half-written fourth run must not appear");
    });
}

#[test]
fn runs_survive_sigkill_during_continuous_writes() {
    each_backend(|fx| {
        let path = fx.spec("crash.db");
        // Killed at whatever point of whichever transaction it happens to be in.
        let (id, committed) = run_and_kill("loop", &path, |l| l.ends_with("COMMITTED 20"));
        assert_eq!(committed, 20);
        assert_consistent_after_crash(&path, id, 20, 202);
        // The store keeps working after the crash.
        let mut store = Store::open(&path).unwrap();
        let next = store.begin_experiment(&new_experiment("after")).unwrap();
        store.record_run(next, &run("a", 0, 1.0, 0)).unwrap();
        let Entry::Experiment(e) = store.get(next.into()).unwrap() else {
            panic!()
        };
        assert_eq!(
            e.status,
            ExperimentStatus::Running,
            "our own writer is alive"
        );
    });
}

#[test]
fn export_output_matches_the_committed_schema() {
    each_backend(|fx| {
        let mut store = fx.open("r.db");
        // Every shape the export has: a finished experiment with an ok and a
        // failed run, a running one without seed, a saved result.
        let mut with_origin = new_experiment("done");
        with_origin.origin = Origin {
            rev: Some(Revision {
                commit: Some("ab12cd34ab12cd34ab12cd34ab12cd34ab12cd34".into()),
                branch: Some("main".into()),
                commit_time: Some("2026-01-02T03:04:05Z".into()),
                dirty: false,
                label: Some("ci-1".into()),
            }),
            limits: Some(CgroupLimits {
                cpus: Some(1.5),
                memory_bytes: None,
            }),
        };
        let done = store.begin_experiment(&with_origin).unwrap();
        store.record_run(done, &run("a", 0, 100.0, 1)).unwrap();
        let mut failed = run("b", 0, f64::NAN, 0);
        failed.status = RunStatus::Failed;
        failed.error_tail = Some("bind: address in use".into());
        store.record_run(done, &failed).unwrap();
        store
            .finish_experiment(done, ExperimentStatus::Failed)
            .unwrap();
        let mut open = new_experiment("open");
        open.seed = None;
        let running = store.begin_experiment(&open).unwrap();
        let saved = store
            .save_result(
                "chromium",
                &host(),
                &Origin::default(),
                &SavedRecord::read(ResultKind::Watch, serde_json::json!({ "cpu": [1, 2] })),
            )
            .unwrap();

        let json = store
            .export_json(&[done.into(), running.into(), saved.into()])
            .unwrap();
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        let schema = kurabe_testkit::schema::load("results-export.schema.json");
        let errors = kurabe_testkit::schema::violations(&schema, &doc);
        assert!(
            errors.is_empty(),
            "export does not match the schema: {errors:#?}\n{json}"
        );
        // NaN has no JSON form: it is exported as null, read back as NaN, and
        // left out of the metric table.
        assert!(json.contains("\"value\": null"), "{json}");
        let Entry::Experiment(e) = store.get(done.into()).unwrap() else {
            panic!()
        };
        assert!(e.runs[1].run.metrics[0].value.is_nan());
        assert!(!store
            .metric_samples(done, "index", "requests_per_second")
            .unwrap()
            .contains_key("b"));

        // The schema is not vacuous: each kind of damage fails it.
        let mut bad = doc.clone();
        bad["entries"][0]["status"] = "finished".into();
        assert_eq!(
            kurabe_testkit::schema::violations(&schema, &bad),
            ["$.entries[0]: matches 0 of the oneOf alternatives, expected exactly 1"],
            "an entry with a wrong status fits neither entry kind"
        );
        let mut bad = doc.clone();
        bad["entries"][0]["runs"][0]
            .as_object_mut()
            .unwrap()
            .remove("metrics");
        assert!(!kurabe_testkit::schema::violations(&schema, &bad).is_empty());
        let mut bad = doc.clone();
        bad["entries"][2]["created_at"] = "yesterday".into();
        assert!(!kurabe_testkit::schema::violations(&schema, &bad).is_empty());
        let mut bad = doc;
        bad["schema_version"] = 0.into();
        assert_eq!(
            kurabe_testkit::schema::violations(&schema, &bad),
            ["$.schema_version: 0 is below 1"]
        );
    });
}

#[test]
fn list_is_newest_first_with_numeric_id_ties() {
    each_backend(|fx| {
        let mut store = fx.open("r.db");
        // Twelve experiments within a few milliseconds: many share a timestamp,
        // and `e10` must still come before `e9`.
        for i in 0..12 {
            store
                .begin_experiment(&new_experiment(&format!("x{i}")))
                .unwrap();
        }
        let ids: Vec<String> = store
            .list()
            .unwrap()
            .iter()
            .map(|e| e.id.to_string())
            .collect();
        let want: Vec<String> = (1..=12).rev().map(|i| format!("e{i}")).collect();
        assert_eq!(ids, want);
    });
}

#[test]
fn origin_and_fingerprint_round_trip_and_plans_list_in_start_order() {
    each_backend(|fx| {
        let mut store = fx.open("origin.db");
        let origin = Origin {
            rev: Some(Revision {
                commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
                branch: Some("main".into()),
                commit_time: Some("2026-01-02T03:04:05Z".into()),
                dirty: true,
                label: Some("ci-9".into()),
            }),
            limits: Some(CgroupLimits {
                cpus: Some(0.5),
                memory_bytes: Some(512 << 20),
            }),
        };
        let mut new = new_experiment("plan a");
        new.origin = origin.clone();
        let a = store.begin_experiment(&new).unwrap();
        let b = store.begin_experiment(&new_experiment("plan a")).unwrap();
        store.begin_experiment(&new_experiment("plan b")).unwrap();
        let Entry::Experiment(got) = store.get(a.into()).unwrap() else {
            panic!("{}: expected an experiment", fx.name())
        };
        assert_eq!(got.origin, origin, "{}", fx.name());
        let fp = got.host_fingerprint().unwrap();
        assert_eq!(fp, host_fingerprint(&host(), origin.limits.as_ref()));
        let Entry::Experiment(plain) = store.get(b.into()).unwrap() else {
            panic!("expected an experiment")
        };
        assert_eq!(plain.origin, Origin::default());
        assert_ne!(
            plain.host_fingerprint().unwrap(),
            fp,
            "limits are in the fingerprint"
        );
        assert_eq!(store.experiments_named("plan a").unwrap(), vec![a, b]);
        assert!(store.experiments_named("nope").unwrap().is_empty());
        let r = store
            .save_result(
                "m",
                &host(),
                &origin,
                &SavedRecord::read(ResultKind::Mem, serde_json::json!({})),
            )
            .unwrap();
        let Entry::Result(saved) = store.get(r.into()).unwrap() else {
            panic!("expected a result")
        };
        assert_eq!(saved.origin, origin);
        assert_eq!(store.results_labelled("m").unwrap(), vec![r]);
        // Export and import keep the origin.
        let json = store.export_json(&[a.into()]).unwrap();
        let ids = store.import_json(&json).unwrap();
        let Entry::Experiment(copy) = store.get(ids[0]).unwrap() else {
            panic!("expected an experiment")
        };
        assert_eq!(copy.origin, origin);
    });
}
