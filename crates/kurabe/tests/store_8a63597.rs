//! A store written by kurabe at 8a63597 (`fixtures/store-8a63597/`,
//! made by its `make.sh`: two plan runs with every workload kind, `cmd`,
//! `http A B`, a capacity search, a hyperfine import, and a saved http,
//! watch, system, mem and unixbench result) reads unchanged: every reading
//! command (`results list/show/compare`, `report` in every format,
//! `history`, `check` with a baseline and with `--threshold`) prints on a
//! copy of it the bytes and exit code that 8a63597 printed (`expected/`,
//! written by `expect.sh`), and what they show is the file's own rows.

use std::path::{Path, PathBuf};
use std::process::Output;

use kurabe_model::history::{CheckReport, HistoryReport};
use kurabe_store::{Entry, ResultKind, SavedRecord};
use serde_json::Value;

use crate::old_store::same_json;
use crate::util::kurabe;

/// The fixture's directory.
fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-8a63597")
}

/// A copy of the store in a fresh temp dir (opening a store may migrate it).
fn fixture() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite");
    std::fs::copy(here().join("store.sqlite"), &path).unwrap();
    (dir, path)
}

/// `kurabe ARGS --store STORE`, as `expect.sh` runs it.
fn kurabe_on(store: &Path, args: &[&str]) -> Output {
    kurabe()
        .args(args)
        .arg("--store")
        .arg(store)
        .env_remove("KURABE_STORE")
        .env_remove("KURABE_REV")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// Its stdout, after asserting exit 0.
fn run(store: &Path, args: &[&str]) -> String {
    let out = kurabe_on(store, args);
    assert!(
        out.status.success(),
        "kurabe {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The raw `record_json` of saved result `id`, read straight from the file.
fn raw_result(id: i64) -> Value {
    let c = rusqlite::Connection::open(here().join("store.sqlite")).unwrap();
    let text: String = c
        .query_row("SELECT record_json FROM result WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The raw `record_json` of every run of experiment `id`, in order.
fn raw_run_records(id: i64) -> Vec<Option<Value>> {
    let c = rusqlite::Connection::open(here().join("store.sqlite")).unwrap();
    let mut q = c
        .prepare("SELECT record_json FROM run WHERE experiment_id = ?1 ORDER BY id")
        .unwrap();
    q.query_map([id], |r| r.get::<_, Option<String>>(0))
        .unwrap()
        .map(|t| t.unwrap().map(|t| serde_json::from_str(&t).unwrap()))
        .collect()
}

/// The first line where `got` and `want` differ, for the failure message.
fn first_difference(got: &str, want: &str) -> String {
    let at = got
        .lines()
        .zip(want.lines())
        .position(|(g, w)| g != w)
        .unwrap_or(got.lines().count().min(want.lines().count()));
    format!(
        "line {}: got {:?}, want {:?}",
        at + 1,
        got.lines().nth(at),
        want.lines().nth(at)
    )
}

/// Every command of `commands.txt` prints what 8a63597 printed, byte for
/// byte, and exits as it did.
#[test]
fn every_reading_command_prints_what_8a63597_printed() {
    let (_dir, store) = fixture();
    let codes = std::fs::read_to_string(here().join("expected/exit-codes")).unwrap();
    let commands = std::fs::read_to_string(here().join("commands.txt")).unwrap();
    let mut checked = 0;
    for line in commands
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let mut words = line.split(' ');
        let name = words.next().unwrap();
        let args: Vec<&str> = words.collect();
        let out = kurabe_on(&store, &args);
        let want_code: i32 = codes
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no exit code for {name}"))
            .parse()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(want_code),
            "{name}: kurabe {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let want = std::fs::read_to_string(here().join("expected").join(name)).unwrap();
        let got = String::from_utf8(out.stdout).unwrap();
        assert!(got == want, "{name}: {}", first_difference(&got, &want));
        checked += 1;
    }
    assert!(checked >= 40, "only {checked} commands");
}

/// `results list` names every entry with its kind; `results show` and
/// `results export` give every saved result's record and every run's
/// record back as the file holds it.
#[test]
fn every_row_shows_and_exports_as_written() {
    let (_dir, store) = fixture();
    let list: Value =
        serde_json::from_str(&run(&store, &["results", "list", "--format", "json"])).unwrap();
    let got: Vec<(&str, &str, u64)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let (id, kind) = (e["id"].as_str().unwrap(), e["kind"].as_str().unwrap());
            (id, kind, e["runs"].as_u64().unwrap())
        })
        .collect();
    let want = [
        ("r5", "unixbench", 0),
        ("r4", "mem", 0),
        ("r3", "system", 0),
        ("r2", "watch", 0),
        ("r1", "http", 0),
        ("e6", "experiment", 24),
        ("e5", "experiment", 3),
        ("e4", "experiment", 6),
        ("e3", "experiment", 6),
        ("e2", "experiment", 28),
        ("e1", "experiment", 28),
    ];
    assert_eq!(got, want);
    for id in 1..=5_i64 {
        let shown = run(
            &store,
            &["results", "show", &format!("r{id}"), "--format", "json"],
        );
        let Entry::Result(r) = serde_json::from_str::<Entry>(&shown).unwrap() else {
            panic!("r{id} is not a saved result");
        };
        let shown: Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(shown["kind"], want[5 - id as usize].1, "r{id}");
        assert!(same_json(&shown["record"], &raw_result(id)), "r{id}");
        assert_eq!(r.id.0, id);
    }
    let export: Value = serde_json::from_str(&run(&store, &["results", "export"])).unwrap();
    let entries = export["entries"].as_array().unwrap();
    assert_eq!(entries.len(), want.len());
    for e in entries {
        match e["entry"].as_str().unwrap() {
            "result" => {
                let id = e["id"].as_i64().unwrap();
                assert!(same_json(&e["record"], &raw_result(id)), "exported r{id}");
            }
            _ => {
                let id = e["id"].as_i64().unwrap();
                let runs = e["runs"].as_array().unwrap();
                let raw = raw_run_records(id);
                assert_eq!(runs.len(), raw.len(), "exported e{id}");
                for (run, want) in runs.iter().zip(raw) {
                    let got = run.get("record").cloned().unwrap_or(Value::Null);
                    let want = want.unwrap_or(Value::Null);
                    assert!(same_json(&got, &want), "exported e{id}: {got}");
                }
            }
        }
    }
}

/// `report` of the plan run in every format holds its workloads, and the
/// HTML page its charts.
#[test]
fn the_plan_run_reports_in_every_format() {
    let (_dir, store) = fixture();
    let workloads = [
        "GET /",
        "soak GET /",
        "true",
        "watch target",
        "idle",
        "idle system",
        "system",
    ];
    let html = run(&store, &["report", "e1", "--format", "html"]);
    let md = run(&store, &["report", "e1", "--format", "md"]);
    assert!(html.contains("<svg"), "no chart in the page");
    for w in workloads {
        assert!(md.contains(&format!("### {w}")), "md: {w}");
        let escaped = w.replace('/', "&#x2F;");
        assert!(html.contains(&escaped) || html.contains(w), "html: {w}");
    }
}

/// `history` of a saved http result follows its record's figures, and
/// `check --threshold` of it judges the p99 its record holds.
#[test]
fn a_saved_http_result_has_a_history_and_passes_its_threshold() {
    let (_dir, store) = fixture();
    let http = raw_result(1);
    let h: HistoryReport = serde_json::from_str(&run(
        &store,
        &["history", "fixture-http", "--format", "json"],
    ))
    .unwrap();
    let complete = h
        .series
        .iter()
        .find(|s| s.metric == "complete_requests")
        .expect("a complete_requests series");
    assert_eq!(
        complete.points[0].value,
        http["complete_requests"].as_f64().unwrap()
    );
    let args = ["check", "r1", "--threshold", "p(99)<1s", "--format", "json"];
    let c: CheckReport = serde_json::from_str(&run(&store, &args)).unwrap();
    let judged = &c.thresholds[0].variants[0].thresholds[0];
    let p99_s = http["latency_us"]["p99"].as_f64().unwrap() / 1e6;
    assert!((judged.measured - p99_s).abs() < 1e-9, "{judged:?}");
    assert!(judged.pass);
    let failed = kurabe_on(&store, &["check", "r1", "--threshold", "p(99)<1us"]);
    assert_eq!(
        failed.status.code(),
        Some(99),
        "a failed threshold exits 99"
    );
}

/// Every saved result of this store, and of the older `store-v1`, reads
/// as the typed record of its kind (none is kept as unrecognised JSON),
/// and writes back as exactly the JSON the file holds.
#[test]
fn every_saved_result_reads_as_its_kinds_record() {
    let v1 = here().join("../store-v1/store.sqlite");
    for path in [here().join("store.sqlite"), v1] {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("store.sqlite");
        std::fs::copy(&path, &copy).unwrap();
        let store = kurabe_store::Store::open(&copy).unwrap();
        for id in 1..=5_i64 {
            let what = format!("{} r{id}", path.display());
            let Entry::Result(r) = store.get(kurabe_store::ResultId(id).into()).unwrap() else {
                panic!("{what} is not a saved result");
            };
            let kind = match &r.record {
                SavedRecord::Http(h) => (ResultKind::Http, h.complete_requests > 0),
                SavedRecord::Watch(w) => (ResultKind::Watch, w.samples > 0),
                SavedRecord::Mem(m) => (ResultKind::Mem, m.total_bytes > 0),
                SavedRecord::System(s) => (ResultKind::System, !s.runs.is_empty()),
                SavedRecord::Unixbench(s) => (ResultKind::Unixbench, !s.runs.is_empty()),
                SavedRecord::Noise(n) => (ResultKind::Noise, !n.metrics.is_empty()),
                SavedRecord::Unrecognised(kind, v) => panic!("{what} ({kind:?}) not typed: {v}"),
            };
            assert_eq!(kind, (r.kind(), true), "{what}");
            let text: String = rusqlite::Connection::open(&path)
                .unwrap()
                .query_row("SELECT record_json FROM result WHERE id = ?1", [id], |r| {
                    r.get(0)
                })
                .unwrap();
            let raw: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(r.record.to_value(), raw, "{what} writes back unchanged");
        }
    }
}
