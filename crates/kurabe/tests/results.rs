//! `kurabe results` and `kurabe report` against a real store built with the
//! kurabe-store API: round trips, every report format, escaping, the JSON
//! schema, and bad input exiting 2 with one line. The `results` commands run
//! on SQLite and on PostgreSQL (kurabe-testkit's server: `KURABE_TEST_PG`, or
//! one started for the tests wherever PostgreSQL is installed)
//! (with the password in PGPASSWORD, never on the command line); `results
//! copy` moves history between the two.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use kurabe_store::{
    ExperimentId, ExperimentStatus, HostFacts, MetricValue, NewExperiment, ResultKind, RunRecord,
    RunStatus, SavedRecord, Store,
};
use tempfile::TempDir;

use crate::util::kurabe;

const MIB: f64 = 1024.0 * 1024.0;

fn host(name: &str, arch: &str) -> HostFacts {
    HostFacts {
        hostname: name.into(),
        cpu_model: "Test CPU".into(),
        cores: 2,
        memory_bytes: 1 << 30,
        kernel: "6.1.0".into(),
        arch: arch.into(),
    }
}

fn plan(variants: &[&str]) -> String {
    let mut p = String::from(
        "name = \"serve work\"\nrepeat = 3\n\n[target]\ncommand = \"kurabe serve --port {port}\"\nready = \"http://127.0.0.1:{port}/\"\n",
    );
    for v in variants {
        p.push_str(&format!("\n[[variant]]\nname = '{v}'\n"));
    }
    p.push_str("\n[[workload]]\nname = \"root\"\nhttp = { path = \"/\", requests = 100, concurrency = 1 }\n");
    p
}

/// A watch run's record as the runner writes it, its tree's CPU and Σ PSS
/// sampled ten times.
fn watched(pss_mib: f64) -> kurabe_store::RunDetail {
    let series: Vec<serde_json::Value> = (0..10)
        .map(|i| {
            serde_json::json!({
                "t_s": f64::from(i) * 0.5, "cpu_percent": 20.0 + f64::from(i) * 7.0,
                "cpu_seconds": 0.1, "rss_bytes": 1, "pss_bytes": ((pss_mib - 10.0 + f64::from(i)) * MIB) as u64,
                "pss_anon_bytes": 1, "pss_file_bytes": 0, "pss_shmem_bytes": 0, "uss_bytes": 1,
                "swap_bytes": 0, "processes": 1, "threads": 1,
            })
        })
        .collect();
    serde_json::from_value(serde_json::json!({
        "kind": "watch",
        "target": {
            "pid": 1, "duration_s": 5.0, "samples": 10, "cpu_seconds_proc": 1.0,
            "cpu_seconds_cgroup": null, "cpu_percent_max": 83.0, "pss_start_bytes": 1,
            "pss_peak_bytes": 1, "pss_end_bytes": 1, "pss_mean_bytes": 1, "rss_peak_bytes": 1,
            "uss_peak_bytes": 1, "processes_max": 1, "threads_max": 1, "root_exited": false,
            "series": series,
        },
    }))
    .unwrap()
}

/// An experiment with three rounds of each variant; `rps` per variant is the centre.
fn experiment(store: &mut Store, variants: &[(&str, f64, f64)], series: bool) -> ExperimentId {
    let names: Vec<&str> = variants.iter().map(|v| v.0).collect();
    let id = store
        .begin_experiment(&NewExperiment {
            name: "serve work".into(),
            plan_text: plan(&names),
            seed: Some(1),
            host: host("bench1", "x86_64"),
            tool_version: "0.1.0".into(),
            origin: Default::default(),
        })
        .unwrap();
    for round in 0..3u32 {
        for (name, rps, pss_mib) in variants {
            let jitter = [0.99, 1.0, 1.01][round as usize];
            let record = series.then(|| watched(*pss_mib));
            store
                .record_run(
                    id,
                    &RunRecord {
                        variant: (*name).into(),
                        workload: "root".into(),
                        round,
                        status: RunStatus::Ok,
                        error_tail: None,
                        started_at: "2026-11-29T20:00:00.000Z".into(),
                        finished_at: "2026-11-29T20:00:05.000Z".into(),
                        metrics: vec![
                            MetricValue {
                                name: "requests_per_second".into(),
                                value: rps * jitter,
                                unit: "/s".into(),
                            },
                            MetricValue {
                                name: "pss_peak_bytes".into(),
                                value: pss_mib * MIB * jitter,
                                unit: "B".into(),
                            },
                        ],
                        record,
                        http: None,
                    },
                )
                .unwrap();
        }
    }
    store
        .record_run(
            id,
            &RunRecord {
                variant: variants[0].0.into(),
                workload: "root".into(),
                round: 3,
                status: RunStatus::Failed,
                error_tail: Some("bind: address in use\n<b>boom</b>".into()),
                started_at: "2026-11-29T20:01:00.000Z".into(),
                finished_at: "2026-11-29T20:01:01.000Z".into(),
                metrics: vec![],
                record: None,
                http: None,
            },
        )
        .unwrap();
    store
        .finish_experiment(id, ExperimentStatus::Complete)
        .unwrap();
    id
}

/// The PostgreSQL test server (`KURABE_TEST_PG`'s, else one started for
/// this test binary): a visible skip line when PostgreSQL is not installed,
/// a failure in CI.
fn test_pg() -> Option<String> {
    kurabe_testkit::pg::server().map(|s| s.url.clone())
}

/// Stores on PostgreSQL: each a fresh schema of the test database, dropped
/// at the end.
struct PgStores {
    /// Full URL, password included (for this test process only).
    url: String,
    /// The same without the password: what the kurabe commands get.
    bare: String,
    password: String,
    schemas: RefCell<Vec<String>>,
}

impl PgStores {
    fn new(url: String) -> PgStores {
        let (scheme, rest) = url.split_once("://").unwrap();
        let (userinfo, host) = rest.rsplit_once('@').unwrap();
        let (user, password) = userinfo.split_once(':').unwrap();
        PgStores {
            bare: format!("{scheme}://{user}@{host}"),
            password: password.to_owned(),
            url,
            schemas: RefCell::new(Vec::new()),
        }
    }

    /// A new empty store: (URL for this process, URL for kurabe commands).
    fn store(&self) -> (PathBuf, PathBuf) {
        static N: AtomicU32 = AtomicU32::new(0);
        let schema = format!(
            "kurabe_cli_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        kurabe_store::pg::connect(&self.url)
            .unwrap()
            .batch_execute(&format!("CREATE SCHEMA {schema}"))
            .unwrap();
        self.schemas.borrow_mut().push(schema.clone());
        let with = |u: &str| {
            let sep = if u.contains('?') { '&' } else { '?' };
            PathBuf::from(format!("{u}{sep}options=-c%20search_path%3D{schema}"))
        };
        (with(&self.url), with(&self.bare))
    }
}

impl Drop for PgStores {
    fn drop(&mut self) {
        if let Ok(mut c) = kurabe_store::pg::connect(&self.url) {
            for s in self.schemas.borrow().iter() {
                let _ = c.batch_execute(&format!("DROP SCHEMA {s} CASCADE"));
            }
        }
    }
}

/// Run `test` on SQLite, then on PostgreSQL when the test server is there.
fn each_backend(test: impl Fn(&Fixture)) {
    eprintln!("backend: sqlite");
    test(&Fixture::new());
    if let Some(url) = test_pg() {
        eprintln!("backend: postgres");
        let pg = std::rc::Rc::new(PgStores::new(url));
        test(&Fixture::on(Some(pg)));
    }
}

struct Fixture {
    dir: TempDir,
    /// The store as kurabe commands are given it (no password in it).
    db: PathBuf,
    /// The store as this test process opens it.
    db_full: PathBuf,
    pg: Option<std::rc::Rc<PgStores>>,
}

impl Fixture {
    /// e1: fast vs slow; e2: a `<script>` variant; r1/r2: mem records of two machines.
    fn new() -> Fixture {
        Fixture::on(None)
    }

    /// The fixture on PostgreSQL (`Some`) or in an SQLite file.
    fn on(pg: Option<std::rc::Rc<PgStores>>) -> Fixture {
        let dir = TempDir::new().unwrap();
        let (db_full, db) = match &pg {
            Some(pg) => pg.store(),
            None => {
                let p = dir.path().join("results.db");
                (p.clone(), p)
            }
        };
        let mut s = Store::open(&db_full).unwrap();
        experiment(
            &mut s,
            &[("fast", 1000.0, 40.0), ("slow", 800.0, 60.0)],
            true,
        );
        experiment(
            &mut s,
            &[
                ("base", 500.0, 30.0),
                ("<script>alert(1)</script>", 505.0, 30.0),
            ],
            false,
        );
        for (name, arch, used) in [("vps32", "i686", 100.0), ("vps64", "x86_64", 160.0)] {
            let record = serde_json::json!({"schema_version": 1, "total_bytes": 512.0 * MIB, "used_bytes": used * MIB});
            s.save_result(
                &format!("after boot {arch}"),
                &host(name, arch),
                &Default::default(),
                &SavedRecord::read(ResultKind::Mem, record),
            )
            .unwrap();
        }
        Fixture {
            dir,
            db,
            db_full,
            pg,
        }
    }

    /// Another empty store on the same backend: (for this process, for kurabe).
    fn other_store(&self, name: &str) -> (PathBuf, PathBuf) {
        match &self.pg {
            Some(pg) => pg.store(),
            None => (self.path(name), self.path(name)),
        }
    }

    /// `kurabe` with the backend's password in the environment.
    fn cmd(&self) -> std::process::Command {
        let mut c = kurabe();
        c.env_remove("KURABE_STORE").env("NO_COLOR", "1");
        if let Some(pg) = &self.pg {
            c.env("PGPASSWORD", &pg.password);
        }
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        let out = self
            .cmd()
            .args(args)
            .arg("--store")
            .arg(&self.db)
            .output()
            .unwrap();
        self.assert_no_password(&out);
        out
    }

    /// The password never appears in what kurabe prints.
    fn assert_no_password(&self, out: &Output) {
        if let Some(pg) = &self.pg {
            for stream in [&out.stdout, &out.stderr] {
                let text = String::from_utf8_lossy(stream);
                assert!(!text.contains(&pg.password), "password printed: {text}");
            }
        }
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// One line on stderr, exit 2, nothing on stdout.
fn assert_usage_error(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(needle), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn list_show_and_json_listing() {
    each_backend(|f| {
        let text = f.ok(&["results", "list"]);
        for id in ["e1", "e2", "r1", "r2"] {
            assert!(text.contains(id), "{text}");
        }
        assert!(text.contains("complete, 7 runs (1 failed)"), "{text}");
        let json: serde_json::Value =
            serde_json::from_str(&f.ok(&["results", "list", "--format", "json"])).unwrap();
        assert_eq!(json.as_array().unwrap().len(), 4);

        let show = f.ok(&["results", "show", "e1"]);
        assert!(show.contains("fast (baseline)"), "{show}");
        assert!(show.contains("vs fast"), "{show}");
        assert!(show.contains("slower"), "{show}");
        assert!(show.contains("more memory"), "{show}");
        assert!(
            show.contains("bind: address in use") || show.contains("<b>boom</b>"),
            "{show}"
        );
        let entry: serde_json::Value =
            serde_json::from_str(&f.ok(&["results", "show", "e1", "--format", "json"])).unwrap();
        assert_eq!(entry["entry"], "experiment");
        assert_eq!(entry["runs"].as_array().unwrap().len(), 7);
        let r = f.ok(&["results", "show", "r2"]);
        assert!(r.contains("vps64") && r.contains("used_bytes"), "{r}");
    });
}

#[test]
fn compare_experiments_and_saved_results() {
    each_backend(|f| {
        // The 32-bit vs 64-bit question: two machines' mem records.
        let text = f.ok(&["results", "compare", "r1", "r2", "--metric", "used_bytes"]);
        assert!(text.contains("1.60× more memory"), "{text}");
        assert!(
            text.contains("vps32 (i686)") && text.contains("vps64 (x86_64)"),
            "{text}"
        );
        let json: serde_json::Value =
            serde_json::from_str(&f.ok(&["results", "compare", "r1", "r2", "--format", "json"]))
                .unwrap();
        let rows = json["rows"].as_array().unwrap();
        let used = rows.iter().find(|r| r["key"] == "used_bytes").unwrap();
        assert!((used["ratio"].as_f64().unwrap() - 1.6).abs() < 1e-12);
        assert!(
            used["comparison"].is_null(),
            "one sample a side: no verdict"
        );

        // Two experiments: same variant names pair up, 3 samples a side give a verdict.
        let json: serde_json::Value = serde_json::from_str(&f.ok(&[
            "results",
            "compare",
            "e1",
            "e1",
            "--format",
            "json",
            "--metric",
            "requests_per_second",
        ]))
        .unwrap();
        let rows = json["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 2);
        // Same samples: ratio exactly 1; ±1 % spread over 3 runs straddles the 2 % band.
        assert_eq!(rows[0]["ratio"], 1.0);
        assert_eq!(rows[0]["comparison"]["verdict"]["kind"], "inconclusive");
        let phrase = rows[0]["phrase"].as_str().unwrap();
        assert!(
            phrase.contains("could only detect changes above"),
            "{phrase}"
        );
        assert!(
            rows[0]["comparison"]["detectable_change_pct"]
                .as_f64()
                .unwrap()
                > 2.0
        );

        assert_usage_error(
            &f.run(&["results", "compare", "e1", "r1"]),
            "cannot compare e1 (experiment) with r1 (mem)",
        );
        assert_usage_error(
            &f.run(&["results", "compare", "r1", "r2", "--metric", "nope"]),
            "--metric takes one of:",
        );
    });
}

#[test]
fn export_import_rm_round_trip() {
    each_backend(|f| {
        let file = f.path("out/export.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let file_s = file.to_str().unwrap();
        f.ok(&["results", "export", "e1", "r2", "-o", file_s]);
        let export: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(export["format"], "kurabe-results");
        assert_eq!(export["entries"].as_array().unwrap().len(), 2);
        // No temp file left next to it.
        assert_eq!(
            std::fs::read_dir(file.parent().unwrap()).unwrap().count(),
            1
        );

        // Into a fresh store on "another machine".
        let (other_full, other) = f.other_store("other.db");
        let out = f
            .cmd()
            .args(["results", "import", file_s, "--store"])
            .arg(&other)
            .output()
            .unwrap();
        f.assert_no_password(&out);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("imported e1, r1 into"));
        let s = Store::open(&other_full).unwrap();
        let (a, b) = (
            Store::open(&f.db_full)
                .unwrap()
                .get("e1".parse().unwrap())
                .unwrap(),
            s.get("e1".parse().unwrap()).unwrap(),
        );
        let runs = |e: &kurabe_store::Entry| match e {
            kurabe_store::Entry::Experiment(x) => {
                x.runs.iter().map(|r| r.run.clone()).collect::<Vec<_>>()
            }
            _ => panic!("not an experiment"),
        };
        assert_eq!(runs(&a), runs(&b));
        // Reports of the original and the imported copy agree.
        let report = |db: &Path| {
            let out = f
                .cmd()
                .args(["report", "e1", "--store"])
                .arg(db)
                .output()
                .unwrap();
            String::from_utf8(out.stdout).unwrap()
        };
        assert_eq!(report(&f.db), report(&other));

        // Export of everything, stdout.
        let all: serde_json::Value = serde_json::from_str(&f.ok(&["results", "export"])).unwrap();
        assert_eq!(all["entries"].as_array().unwrap().len(), 4);

        // rm: all ids checked before anything is deleted.
        assert_usage_error(
            &f.run(&["results", "rm", "e1", "e99"]),
            "no e99 in the results store",
        );
        assert!(f.ok(&["results", "list"]).contains("e1"));
        assert_eq!(
            f.ok(&["results", "rm", "e1", "r1"]),
            "removed e1\nremoved r1\n"
        );
        let list = f.ok(&["results", "list"]);
        assert!(!list.contains("e1 ") && !list.contains("r1 "), "{list}");
        assert_usage_error(
            &f.run(&["results", "show", "e1"]),
            "no e1 in the results store",
        );
    });
}

#[test]
fn report_in_every_format() {
    let f = Fixture::new();
    let schema = kurabe_testkit::schema::load("experiment-report.schema.json");
    for id in ["e1", "e2"] {
        let text = f.ok(&["report", id]);
        assert!(text.contains("(baseline)"), "{text}");
        assert!(!text.contains('\x1b'), "NO_COLOR honoured");

        let md = f.ok(&["report", id, "--format", "md"]);
        assert!(md.starts_with("## serve work\n"), "{md}");
        assert!(!md.contains("<script>") && !md.contains("<b>boom"), "{md}");

        let json: serde_json::Value =
            serde_json::from_str(&f.ok(&["report", id, "--format", "json"])).unwrap();
        let errors = kurabe_testkit::schema::violations(&schema, &json);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(json["runs_failed"], 1);

        let csv = f.ok(&["report", id, "--format", "csv"]);
        assert_eq!(csv.lines().count(), 1 + 2 * 2, "{csv}");

        let file = f.path(&format!("{id}.html"));
        let out = f.run(&[
            "report",
            id,
            "--format",
            "html",
            "-o",
            file.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let html = std::fs::read_to_string(&file).unwrap();
        kurabe_testkit::html::balanced(&html).unwrap();
        assert!(!html.contains("<script"), "a variant name became a tag");
        assert!(!html.contains("<b>boom"), "error output became markup");
        assert!(html.matches("<svg").count() >= 2, "bar charts per metric");
    }
    let e1 = std::fs::read_to_string(f.path("e1.html")).unwrap();
    assert!(e1.contains("CPU and memory over time"), "series charts");
    assert!(std::fs::read_to_string(f.path("e2.html"))
        .unwrap()
        .contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    let json: serde_json::Value =
        serde_json::from_str(&f.ok(&["report", "e1", "--format", "json"])).unwrap();
    let rps = &json["workloads"][0]["metrics"][0];
    assert_eq!(rps["name"], "requests_per_second");
    assert_eq!(
        rps["versus_baseline"][0]["comparison"]["verdict"]["kind"],
        "worse"
    );
    assert_eq!(rps["versus_baseline"][0]["tone"], "bad");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let f = Fixture::new();
    assert_usage_error(&f.run(&["report", "e42"]), "no e42 in the results store");
    assert_usage_error(&f.run(&["report", "x1"]), "expected an id like `e12`");
    assert_usage_error(
        &f.run(&["report", "r1"]),
        "is a saved result, not an experiment",
    );
    assert_usage_error(
        &f.run(&["results", "import", "/nonexistent/x.json"]),
        "cannot read /nonexistent/x.json",
    );
    let bad = f.path("bad.json");
    std::fs::write(&bad, "{\"format\": \"something else\"}").unwrap();
    assert_usage_error(
        &f.run(&["results", "import", bad.to_str().unwrap()]),
        "not a kurabe export",
    );
    // Reading commands do not create a store where there is none.
    let missing = f.path("missing.db");
    let out = kurabe()
        .args(["results", "list", "--store"])
        .arg(&missing)
        .output()
        .unwrap();
    assert_usage_error(&out, "no results store at");
    assert!(!missing.exists());
    // A failed report write leaves nothing behind.
    let out = f.run(&[
        "report",
        "e1",
        "--format",
        "html",
        "-o",
        "/nonexistent-dir/r.html",
    ]);
    assert_usage_error(&out, "cannot write");
    // KURABE_STORE is honoured.
    let out = kurabe()
        .args(["results", "list"])
        .env("KURABE_STORE", &f.db)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("r2"));
}

#[test]
fn save_reads_a_json_record() {
    each_backend(|f| {
        let rec = f.path("mem.json");
        std::fs::write(&rec, r#"{"schema_version": 1, "used_bytes": 5}"#).unwrap();
        assert_eq!(
            f.ok(&[
                "results",
                "save",
                "--kind",
                "mem",
                "--label",
                "lab",
                rec.to_str().unwrap()
            ]),
            "saved r3\n"
        );
        assert!(f
            .ok(&["results", "show", "r3"])
            .contains("\"used_bytes\": 5"));
        std::fs::write(&rec, "[1, 2]").unwrap();
        assert_usage_error(
            &f.run(&["results", "save", "--kind", "mem", rec.to_str().unwrap()]),
            "not a JSON object",
        );
    });
}

/// `--save` on the measuring commands puts their record in the store, and
/// two saved `mem` records compare (the 32- vs 64-bit question across machines).
#[test]
fn save_flag_on_measuring_commands_stores_their_records() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("r.db");
    let db_s = db.to_str().unwrap();
    let server = crate::serve::ServeChild::start(&[]);
    for argv in [
        vec![
            "http",
            "-q",
            "-n",
            "50",
            "--save",
            &server.url,
            "--store",
            db_s,
        ],
        vec!["mem", "--save=machine a", "--store", db_s],
        vec!["mem", "--save=machine b", "--store", db_s],
        vec![
            "watch",
            "--store",
            db_s,
            "--save",
            "--duration",
            "1",
            "--",
            "true",
        ],
    ] {
        let out = kurabe().args(&argv).output().unwrap();
        assert!(
            out.status.success(),
            "{argv:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains("saved as r"));
    }
    let list = kurabe()
        .args(["results", "list", "--format", "json", "--store", db_s])
        .output()
        .unwrap();
    assert!(list.status.success());
    let entries: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let text = entries.to_string();
    for kind in ["http", "mem", "watch"] {
        assert!(
            text.contains(&format!("\"{kind}\"")),
            "{kind} missing in {text}"
        );
    }
    let store = Store::open(&db).unwrap();
    let mem_ids: Vec<String> = store
        .list()
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "mem")
        .map(|e| e.id.to_string())
        .collect();
    assert_eq!(mem_ids.len(), 2);
    assert_one_host(&store);
    let cmp = kurabe()
        .args([
            "results",
            "compare",
            &mem_ids[0],
            &mem_ids[1],
            "--store",
            db_s,
        ])
        .output()
        .unwrap();
    assert!(
        cmp.status.success(),
        "{}",
        String::from_utf8_lossy(&cmp.stderr)
    );
    assert!(String::from_utf8_lossy(&cmp.stdout).contains("used_bytes"));
}

/// Every saved record names this machine with the same facts: the store's
/// `host` of each entry, the watch record's `host` object and the mem
/// record's `host`/`kernel`/`arch` fields all come from one reader.
fn assert_one_host(store: &Store) {
    let mut hosts = Vec::new();
    for listed in store.list().unwrap() {
        let kurabe_store::Entry::Result(saved) = store.get(listed.id).unwrap() else {
            panic!("{} is not a saved result", listed.id);
        };
        let host = saved.host.clone().expect("saved results record their host");
        match &saved.record {
            SavedRecord::Watch(w) => assert_eq!(w.host, host),
            SavedRecord::Mem(m) => {
                let got = (&m.host, &m.kernel, &m.arch);
                assert_eq!(got, (&host.hostname, &host.kernel, &host.arch), "mem");
            }
            SavedRecord::Unrecognised(kind, v) => {
                panic!("a {kind:?} record this version reads: {v}")
            }
            _ => {}
        }
        hosts.push(host);
    }
    assert!(hosts.len() >= 4, "{hosts:?}");
    assert!(hosts.windows(2).all(|w| w[0] == w[1]), "{hosts:?}");
    let h = &hosts[0];
    assert!(h.cores >= 1 && h.memory_bytes > 0, "{h:?}");
    assert!(!h.cpu_model.is_empty() && h.cpu_model != "unknown", "{h:?}");
}

/// Everything a store holds as export JSON, ids left out (a copy gets new ids).
fn export_without_ids(f: &Fixture, store: &Path) -> serde_json::Value {
    let out = f
        .cmd()
        .args(["results", "export", "--store"])
        .arg(store)
        .output()
        .unwrap();
    f.assert_no_password(&out);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for e in v["entries"].as_array_mut().unwrap() {
        e["id"] = serde_json::Value::Null;
        if let Some(runs) = e.get_mut("runs").and_then(|r| r.as_array_mut()) {
            runs.iter_mut()
                .for_each(|r| r["id"] = serde_json::Value::Null);
        }
    }
    v
}

#[test]
fn copy_moves_history_between_sqlite_and_postgres_losslessly() {
    let Some(url) = test_pg() else { return };
    let pg = std::rc::Rc::new(PgStores::new(url));
    let f = Fixture::new(); // the SQLite original
    let pgf = Fixture::on(Some(pg.clone())); // for its environment
    let before = export_without_ids(&f, &f.db);
    assert_eq!(before["entries"].as_array().unwrap().len(), 4);

    // SQLite → PostgreSQL (an empty schema) → another SQLite file.
    let (_, to_pg) = pg.store();
    let sqlite_arg = format!("sqlite:{}", f.db.display());
    let out = pgf
        .cmd()
        .args(["results", "copy", "--from", &sqlite_arg, "--to"])
        .arg(&to_pg)
        .output()
        .unwrap();
    pgf.assert_no_password(&out);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.starts_with("copied 4 entries from "), "{said}");
    assert_eq!(export_without_ids(&pgf, &to_pg), before);

    let back = f.path("back.db");
    let out = pgf
        .cmd()
        .args(["results", "copy", "--from"])
        .arg(&to_pg)
        .arg("--to")
        .arg(&back)
        .output()
        .unwrap();
    pgf.assert_no_password(&out);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(export_without_ids(&f, &back), before);
    // The same history reads the same: reports of e1 agree on all three.
    let report = |fx: &Fixture, db: &Path| {
        let out = fx
            .cmd()
            .args(["report", "e1", "--store"])
            .arg(db)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let original = report(&f, &f.db);
    assert!(original.contains("fast"), "{original}");
    assert_eq!(report(&pgf, &to_pg), original);
    assert_eq!(report(&f, &back), original);

    // Copying a store onto itself is refused.
    let out = f
        .cmd()
        .args(["results", "copy", "--from"])
        .arg(&f.db)
        .arg("--to")
        .arg(&sqlite_arg)
        .output()
        .unwrap();
    assert_usage_error(&out, "name the same store");
}

#[test]
fn postgres_errors_never_show_the_password() {
    let Some(url) = test_pg() else { return };
    let pg = PgStores::new(url);
    let (_, bare) = pg.store();
    // Wrong password in the URL: one line naming the server, no password.
    let wrong = bare
        .to_str()
        .unwrap()
        .replacen("://kurabe@", "://kurabe:Sekr1tWrong@", 1);
    let out = kurabe()
        .args(["results", "list", "--store", &wrong])
        .env_remove("PGPASSWORD")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_usage_error(&out, "password authentication failed");
    assert!(!err.contains("Sekr1tWrong"), "{err}");
    assert!(err.contains("postgres://kurabe@"), "{err}");
    assert!(
        err.contains("give the password in PGPASSWORD or ~/.pgpass"),
        "{err}"
    );
    // KURABE_STORE with a password does not leak through --help either.
    let full = pg.url.clone();
    let out = kurabe()
        .args(["http", "--help"])
        .env("KURABE_STORE", &full)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stdout).contains(&pg.password));
    // Nothing listening: a clear error, not a hang.
    let out = kurabe()
        .args([
            "results",
            "list",
            "--store",
            "postgres://kurabe@127.0.0.1:1/kurabe",
        ])
        .output()
        .unwrap();
    assert_usage_error(
        &out,
        "cannot connect to PostgreSQL at postgres://kurabe@127.0.0.1:1/kurabe",
    );
}

#[test]
fn experiment_of_a_killed_kurabe_lists_as_crashed() {
    each_backend(|f| {
        let plan = f.path("crash.toml");
        std::fs::write(
            &plan,
            r#"
name = "crash"
repeat = 50
[target]
command = "echo up >&2; exec sleep 29.75"
ready = { log = "up" }
[[variant]]
name = "a"
[[workload]]
name = "w"
idle = { settle = "50ms" }
"#,
        )
        .unwrap();
        let mut child = f
            .cmd()
            .arg("run")
            .arg(&plan)
            .arg("--store")
            .arg(&f.db)
            .arg("-q")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let crash = |s: &Store| s.list().ok()?.into_iter().find(|e| e.name == "crash");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let runs = Store::open(&f.db_full)
                .ok()
                .and_then(|s| crash(&s))
                .map_or(0, |e| e.runs);
            if runs >= 2 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "kurabe run stored no runs in 30 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let listed = f.ok(&["results", "list"]);
        assert!(listed.contains("running, "), "alive: running\n{listed}");
        child.kill().unwrap(); // SIGKILL: no chance to mark anything
        child.wait().unwrap();
        let listed = f.ok(&["results", "list"]);
        assert!(listed.contains("crashed, "), "{listed}");
        let s = Store::open(&f.db_full).unwrap();
        let e = crash(&s).unwrap();
        assert_eq!(e.status, Some(ExperimentStatus::Crashed));
    });
}

#[test]
fn concurrent_kurabe_processes_save_without_conflicts() {
    each_backend(|f| {
        let rec = f.path("rec.json");
        std::fs::write(&rec, r#"{"schema_version": 1, "used_bytes": 7}"#).unwrap();
        // Eight processes started together, each saving three results.
        let children: Vec<_> = (0..8)
            .map(|i| {
                let script = format!(
                    "for j in 1 2 3; do \"$0\" results save --kind mem --label p{i}-$j --store \"$1\" \"$2\" || exit 1; done"
                );
                let mut sh = std::process::Command::new("sh");
                sh.env_remove("KURABE_STORE");
                if let Some(pg) = &f.pg {
                    sh.env("PGPASSWORD", &pg.password);
                }
                sh.arg("-c")
                    .arg(script)
                    .arg(env!("CARGO_BIN_EXE_kurabe"))
                    .arg(&f.db)
                    .arg(&rec)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let mut ids = std::collections::BTreeSet::new();
        for c in children {
            let out = c.wait_with_output().unwrap();
            f.assert_no_password(&out);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            for line in String::from_utf8(out.stdout).unwrap().lines() {
                assert!(
                    ids.insert(line.strip_prefix("saved ").unwrap().to_owned()),
                    "{line}"
                );
            }
        }
        assert_eq!(ids.len(), 24, "every save got its own id");
        let s = Store::open(&f.db_full).unwrap();
        let labels: std::collections::BTreeSet<String> = s
            .list()
            .unwrap()
            .into_iter()
            .filter(|e| e.name.starts_with('p'))
            .map(|e| e.name)
            .collect();
        assert_eq!(labels.len(), 24, "all rows present: {labels:?}");
    });
}

/// Ctrl-C during `kurabe http --save`: the saved result is whole and lists
/// as `interrupted`; an uninterrupted one lists as `complete`.
#[test]
fn an_interrupted_http_save_lists_as_interrupted() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("r.db");
    let db_s = db.to_str().unwrap();
    let server = crate::serve::ServeChild::start(&[]);
    let child = kurabe()
        .args([
            "http", "-q", "-t", "60", "-c", "2", "-k", "--save", "--store", db_s,
        ])
        .arg(&server.url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.served() < 100 {
        assert!(Instant::now() < deadline, "no load arrived");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("saved as r1"), "{err}");
    let done = kurabe()
        .args(["http", "-q", "-n", "10", "--save", "--store", db_s])
        .arg(&server.url)
        .output()
        .unwrap();
    assert!(done.status.success(), "{done:?}");
    let list = kurabe()
        .args(["results", "list", "--format", "json", "--store", db_s])
        .output()
        .unwrap();
    let entries: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let status = |id: &str| {
        entries
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == id)
            .map(|e| e["status"].clone())
    };
    assert_eq!(status("r1"), Some("interrupted".into()), "{entries}");
    assert_eq!(status("r2"), Some("complete".into()), "{entries}");
    let store = Store::open(&db).unwrap();
    let kurabe_store::Entry::Result(saved) = store.get("r1".parse().unwrap()).unwrap() else {
        panic!("r1 is not a saved result");
    };
    let http = saved.record.http().expect("an http record");
    assert!(http.interrupted);
    assert!(http.complete_requests >= 100);
    let text = kurabe()
        .args(["results", "list", "--store", db_s])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("interrupted"));
}
