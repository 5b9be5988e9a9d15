//! Stores written by earlier versions stay readable: `results list/show`,
//! `report` in every format, `history` and `check` on a copy of
//! `fixtures/store-v1/store.sqlite`, a store made by kurabe at b943999
//! (`fixtures/store-v1/make.sh`: two plan runs with every workload kind,
//! `kurabe cmd`, `kurabe http A B`, and saved http, watch, system, mem and
//! unixbench results). The expected figures are read from the file's own
//! rows, so a row that stops parsing (or parses into something else)
//! fails here.

use std::path::{Path, PathBuf};

use kurabe_model::experiment::ExperimentReport;
use kurabe_model::history::{CheckReport, HistoryReport};
use kurabe_store::{Entry, ResultKind, RunDetail};
use serde_json::Value;

use crate::util::kurabe;

/// The fixture as committed.
fn fixture_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-v1/store.sqlite")
}

/// A copy of the fixture in a fresh temp dir (opening a store may migrate it).
fn fixture() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite");
    std::fs::copy(fixture_path(), &path).unwrap();
    (dir, path)
}

/// Run kurabe on `store` with `args`; its stdout, after asserting exit `code`.
fn run_code(store: &Path, args: &[&str], code: i32) -> String {
    let out = kurabe()
        .args(args)
        .arg("--store")
        .arg(store)
        .env_remove("KURABE_STORE")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(code),
        "kurabe {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn run(store: &Path, args: &[&str]) -> String {
    run_code(store, args, 0)
}

/// One run row as the old binary wrote it.
struct RawRun {
    variant: String,
    workload: String,
    round: u32,
    metrics: Vec<(String, f64)>,
    record: Option<Value>,
}

/// The run rows of experiment `id`, read straight from the file (no kurabe code).
fn raw_runs(id: i64) -> Vec<RawRun> {
    let c = rusqlite::Connection::open(fixture_path()).unwrap();
    let mut q = c
        .prepare(
            "SELECT variant, workload, round, metrics_json, record_json FROM run
             WHERE experiment_id = ?1 ORDER BY id",
        )
        .unwrap();
    q.query_map([id], |r| {
        let metrics: Value = serde_json::from_str(&r.get::<_, String>(3)?).unwrap();
        let record: Option<String> = r.get(4)?;
        Ok(RawRun {
            variant: r.get(0)?,
            workload: r.get(1)?,
            round: r.get(2)?,
            metrics: metrics
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    (
                        m["name"].as_str().unwrap().to_owned(),
                        m["value"].as_f64().unwrap(),
                    )
                })
                .collect(),
            record: record.map(|t| serde_json::from_str(&t).unwrap()),
        })
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// The record of saved result `id`, read straight from the file.
fn raw_result(id: i64) -> Value {
    let c = rusqlite::Connection::open(fixture_path()).unwrap();
    let text: String = c
        .query_row("SELECT record_json FROM result WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The value of `metric` in every run of `workload` × `variant`, by round.
fn samples(runs: &[RawRun], workload: &str, variant: &str, metric: &str) -> Vec<f64> {
    let mut v: Vec<(u32, f64)> = runs
        .iter()
        .filter(|r| r.workload == workload && r.variant == variant)
        .filter_map(|r| {
            let m = r.metrics.iter().find(|(n, _)| n == metric)?;
            Some((r.round, m.1))
        })
        .collect();
    v.sort_by_key(|(round, _)| *round);
    v.into_iter().map(|(_, x)| x).collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Equal JSON, numbers within [`close`] (the JSON output rounds them to 12 digits).
pub(crate) fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => close(x.as_f64().unwrap(), y.as_f64().unwrap()),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

fn assert_close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(close(*g, *w), "{what}: {got:?} vs {want:?}");
    }
}

const PLAN: &str = "fixture: every workload kind";
const VARIANTS: [&str; 2] = ["work 0us", "work 200us"];
const WORKLOADS: [&str; 7] = [
    "GET /",
    "soak GET /",
    "true",
    "watch target",
    "idle",
    "idle system",
    "system",
];

/// `results list` names every entry of the old store with its kind and run count.
#[test]
fn old_store_lists_every_entry_with_its_kind_and_runs() {
    let (_dir, store) = fixture();
    let list: Value =
        serde_json::from_str(&run(&store, &["results", "list", "--format", "json"])).unwrap();
    let got: Vec<(&str, &str, u64, u64)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["id"].as_str().unwrap(),
                e["kind"].as_str().unwrap(),
                e["runs"].as_u64().unwrap(),
                e["failed_runs"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("r5", "unixbench", 0, 0),
            ("r4", "mem", 0, 0),
            ("r3", "system", 0, 0),
            ("r2", "watch", 0, 0),
            ("r1", "http", 0, 0),
            ("e4", "experiment", 6, 0),
            ("e3", "experiment", 6, 0),
            ("e2", "experiment", 28, 0),
            ("e1", "experiment", 28, 0),
        ]
    );
    assert_eq!(list[8]["name"], PLAN);
    assert_eq!(list[6]["name"], "cmd: true vs sleep 0.01");
    assert_eq!(list[4]["name"], "fixture-http");
    let text = run(&store, &["results", "list"]);
    for name in [PLAN, "cmd: true vs sleep 0.01", "fixture-unixbench"] {
        assert!(text.contains(name), "{name} missing from:\n{text}");
    }
}

/// `results show --format json` gives every run of every old experiment
/// back with the metrics and record the file holds, each record of the
/// kind it was written as; saved results come back with their records.
#[test]
fn old_store_shows_every_run_and_saved_result_as_written() {
    let (_dir, store) = fixture();
    for id in 1..=4_i64 {
        let raw = raw_runs(id);
        let shown = run(
            &store,
            &["results", "show", &format!("e{id}"), "--format", "json"],
        );
        let Entry::Experiment(e) = serde_json::from_str::<Entry>(&shown).unwrap() else {
            panic!("e{id} is not an experiment");
        };
        assert_eq!(e.runs.len(), raw.len(), "e{id}");
        for (got, want) in e.runs.iter().zip(&raw) {
            let r = &got.run;
            assert_eq!(
                (r.variant.as_str(), r.workload.as_str(), r.round),
                (want.variant.as_str(), want.workload.as_str(), want.round)
            );
            let names: Vec<&str> = r.metrics.iter().map(|m| m.name.as_str()).collect();
            let want_names: Vec<&str> = want.metrics.iter().map(|m| m.0.as_str()).collect();
            assert_eq!(names, want_names, "e{id} {}", r.workload);
            let values: Vec<f64> = r.metrics.iter().map(|m| m.value).collect();
            let want_values: Vec<f64> = want.metrics.iter().map(|m| m.1).collect();
            assert_close(&values, &want_values, &r.workload);
            let kind = |v: &Value| v["kind"].as_str().map(str::to_owned);
            let got_record = serde_json::to_value(&r.record).unwrap();
            assert_eq!(
                kind(&got_record),
                want.record.as_ref().and_then(kind),
                "e{id} {}",
                r.workload
            );
            let same = want
                .record
                .as_ref()
                .is_some_and(|w| same_json(&got_record, w));
            assert!(same || want.record.is_none(), "e{id} {} record", r.workload);
        }
    }
    let text = run(&store, &["results", "show", "e1"]);
    for name in WORKLOADS.iter().chain(&VARIANTS) {
        assert!(text.contains(name), "{name} missing from:\n{text}");
    }
    let kinds = [
        ResultKind::Http,
        ResultKind::Watch,
        ResultKind::System,
        ResultKind::Mem,
        ResultKind::Unixbench,
    ];
    for (id, kind) in (1..=5_i64).zip(kinds) {
        let shown = run(
            &store,
            &["results", "show", &format!("r{id}"), "--format", "json"],
        );
        let Entry::Result(r) = serde_json::from_str::<Entry>(&shown).unwrap() else {
            panic!("r{id} is not a saved result");
        };
        assert_eq!(r.kind(), kind, "r{id}");
        assert!(same_json(&r.record.to_value(), &raw_result(id)), "r{id}");
    }
    let http = raw_result(1);
    let text = run(&store, &["results", "show", "r1"]);
    assert!(
        text.starts_with("r1 · http result · fixture-http\n"),
        "{text}"
    );
    let complete = format!("\"complete_requests\": {}", http["complete_requests"]);
    assert!(text.contains(&complete), "{complete} missing from:\n{text}");
}

/// `report` of an old plan run, in every format, holds its workloads,
/// variants and per-run figures, and what the report reads from the runs'
/// records: the soak fits and the CPU and memory series of every run.
#[test]
fn old_store_reports_a_plan_run_in_every_format() {
    let (_dir, store) = fixture();
    let raw = raw_runs(1);
    let json = run(&store, &["report", "e1", "--format", "json"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    kurabe_testkit::schema::assert_valid("experiment-report.schema.json", &v);
    let report: ExperimentReport = serde_json::from_value(v).unwrap();
    let names: Vec<&str> = report.workloads.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, WORKLOADS);
    assert_eq!(report.variants, VARIANTS);
    assert_eq!((report.runs_total, report.runs_failed), (28, 0));
    for w in &report.workloads {
        for m in &w.metrics {
            for s in &m.variants {
                let want = samples(&raw, &w.name, &s.variant, &m.name);
                assert_close(
                    &s.samples,
                    &want,
                    &format!("{} {} {}", w.name, s.variant, m.name),
                );
            }
        }
    }
    // Soak: one memory-over-requests series per soak run, the fit the run stored.
    let soak = &report.workloads[1].soak;
    let soak_runs: Vec<&RawRun> = raw.iter().filter(|r| r.workload == "soak GET /").collect();
    assert_eq!(soak.len(), soak_runs.len());
    for s in soak {
        let r = soak_runs
            .iter()
            .find(|r| r.variant == s.variant && r.round == s.round)
            .unwrap();
        let rec = &r.record.as_ref().unwrap()["soak"];
        assert_eq!(s.memory, rec["fitted"].as_str().unwrap());
        assert_eq!(s.verdict, rec["verdict"].as_str().unwrap());
        assert_eq!(s.points.len(), rec["samples"].as_array().unwrap().len());
        assert_eq!(
            s.slope_bytes_per_request,
            rec["theil_sen"]["slope"].as_f64(),
            "{} {}",
            s.variant,
            s.round
        );
        assert_eq!(s.floor.len(), rec["floor"].as_array().unwrap().len());
    }
    // Per-run CPU and memory series, from the records' `target.series`.
    let watch = &report.workloads[3];
    assert_eq!(watch.series.len(), 4, "one series per watch run");
    for s in &watch.series {
        let r = raw
            .iter()
            .find(|r| r.workload == "watch target" && r.variant == s.variant && r.round == s.round)
            .unwrap();
        let series = r.record.as_ref().unwrap()["target"]["series"]
            .as_array()
            .unwrap();
        assert_eq!(s.points.len(), series.len());
        assert!(close(s.points[1].t_s, series[1]["t_s"].as_f64().unwrap()));
    }

    let max_rps = samples(&raw, "GET /", "work 0us", "requests_per_second")
        .into_iter()
        .fold(f64::MIN, f64::max);
    let csv = run(&store, &["report", "e1", "--format", "csv"]);
    assert!(
        csv.starts_with("experiment,workload,metric,unit,variant,"),
        "{csv}"
    );
    let row = csv
        .lines()
        .find(|l| l.starts_with("e1,GET /,requests_per_second,per_second,work 0us,true,2,"))
        .unwrap_or_else(|| panic!("no GET / row in:\n{csv}"));
    assert!(row.contains(&max_rps.to_string()), "{row} lacks {max_rps}");
    let text = run(&store, &["report", "e1"]);
    let md = run(&store, &["report", "e1", "--format", "md"]);
    assert!(md.starts_with(&format!("## {PLAN}\n")), "{md}");
    let html = run(&store, &["report", "e1", "--format", "html"]);
    assert!(html.contains("<svg"), "no chart in the page");
    for w in WORKLOADS {
        assert!(text.contains(w), "text: {w}");
        assert!(md.contains(&format!("### {w}")), "md: {w}");
        assert!(
            html.contains(&w.replace('/', "&#x2F;")) || html.contains(w),
            "html: {w}"
        );
        assert!(csv.contains(&format!("e1,{w},")), "csv: {w}");
    }
    for variant in VARIANTS {
        assert!(text.contains(variant) && md.contains(variant) && html.contains(variant));
    }
}

/// `report` of the old `kurabe cmd` and `kurabe http A B` experiments: their
/// variants (the commands, the URLs) and the figures of their runs.
#[test]
fn old_store_reports_cmd_and_http_ab_runs() {
    let (_dir, store) = fixture();
    for (id, workload, metric) in [
        (3, "command", "wall_time_s"),
        (4, "load", "requests_per_second"),
    ] {
        let raw = raw_runs(id);
        let eid = format!("e{id}");
        let v: Value =
            serde_json::from_str(&run(&store, &["report", &eid, "--format", "json"])).unwrap();
        kurabe_testkit::schema::assert_valid("experiment-report.schema.json", &v);
        let report: ExperimentReport = serde_json::from_value(v).unwrap();
        let mut variants: Vec<&str> = raw.iter().map(|r| r.variant.as_str()).collect();
        variants.dedup();
        variants.sort();
        variants.dedup();
        let mut got = report.variants.clone();
        got.sort();
        assert_eq!(got, variants, "{eid}");
        let w = &report.workloads[0];
        assert_eq!(w.name, workload);
        let m = w.metrics.iter().find(|m| m.name == metric).unwrap();
        for s in &m.variants {
            let want = samples(&raw, workload, &s.variant, metric);
            assert_close(&s.samples, &want, &format!("{eid} {}", s.variant));
        }
        for format in ["text", "md", "csv", "html"] {
            let out = run(&store, &["report", &eid, "--format", format]);
            for v in &variants {
                assert!(out.contains(v), "{eid} {format}: {v} missing");
            }
        }
    }
}

/// `history` over the two old plan runs: a series per workload, variant
/// and metric, its points the runs' values in time order; a saved
/// result's label has a history too, from its record.
#[test]
fn old_store_has_a_history_of_its_plan_and_saved_results() {
    let (_dir, store) = fixture();
    let h: HistoryReport =
        serde_json::from_str(&run(&store, &["history", PLAN, "--format", "json"])).unwrap();
    assert_eq!(h.name, PLAN);
    let (e1, e2) = (raw_runs(1), raw_runs(2));
    for s in &h.series {
        let points: Vec<&str> = s.points.iter().map(|p| p.experiment.as_str()).collect();
        assert_eq!(
            points,
            ["e1", "e2"],
            "{} {} {}",
            s.workload,
            s.variant,
            s.metric
        );
        let what = format!("{} {} {}", s.workload, s.variant, s.metric);
        assert_close(
            &s.points[0].samples,
            &samples(&e1, &s.workload, &s.variant, &s.metric),
            &what,
        );
        assert_close(
            &s.points[1].samples,
            &samples(&e2, &s.workload, &s.variant, &s.metric),
            &what,
        );
    }
    assert!(h
        .series
        .iter()
        .any(|s| s.workload == "soak GET /" && s.metric == "requests_per_second"));
    let rev: Vec<&str> = h.series[0].points.iter().map(|p| p.rev.as_str()).collect();
    assert_eq!(rev, ["base", "head"]);
    for format in ["text", "md", "csv", "html"] {
        let out = run(&store, &["history", PLAN, "--format", format]);
        assert!(out.contains("GET /"), "{format}");
    }

    let h: HistoryReport = serde_json::from_str(&run(
        &store,
        &["history", "fixture-http", "--format", "json"],
    ))
    .unwrap();
    let complete = h
        .series
        .iter()
        .find(|s| s.metric == "complete_requests")
        .expect("complete_requests series");
    let want = raw_result(1)["complete_requests"].as_f64().unwrap();
    assert_eq!(complete.points.len(), 1);
    assert_eq!(complete.points[0].value, want);
}

/// `check` of the newer old plan run against the older one's revision.
#[test]
fn old_store_checks_a_plan_run_against_its_baseline() {
    let (_dir, store) = fixture();
    let c: CheckReport = serde_json::from_str(&run(
        &store,
        &["check", "e2", "--baseline", "base", "--format", "json"],
    ))
    .unwrap();
    assert_eq!((c.experiment.as_str(), c.rev.as_str()), ("e2", "head"));
    assert_eq!(c.baseline_experiments, ["e1"]);
    assert_eq!(c.rows.len(), 36);
    assert_eq!((c.worse, c.better), (0, 0));
    let (e1, e2) = (raw_runs(1), raw_runs(2));
    let geomean = |v: Vec<f64>| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp();
    let row = c
        .rows
        .iter()
        .find(|r| {
            r.workload == "GET /" && r.variant == "work 0us" && r.metric == "requests_per_second"
        })
        .unwrap();
    let base = geomean(samples(&e1, "GET /", "work 0us", "requests_per_second"));
    let now = geomean(samples(&e2, "GET /", "work 0us", "requests_per_second"));
    assert!(
        close(row.baseline_value, base) && close(row.value, now),
        "{row:?}"
    );
    let text = run(&store, &["check", "e2", "--baseline", "base"]);
    assert!(text.ends_with("0 worse, 0 better, 36 checked\n"), "{text}");
    let md = run(
        &store,
        &["check", "e2", "--baseline", "base", "--format", "md"],
    );
    assert!(md.contains("soak GET /"), "{md}");
}

/// Every run row of the old store reads as the variant of its `kind`
/// (none falls back to `Unrecognised`), with what readers take from it,
/// and writes back as the same JSON: typed records lose nothing of the
/// rows written before they existed.
#[test]
fn old_rows_read_as_their_kinds_and_write_back_unchanged() {
    let (_dir, path) = fixture();
    let store = kurabe_store::Store::open(&path).unwrap();
    let mut kinds = std::collections::BTreeSet::new();
    for id in 1..=4_i64 {
        let Entry::Experiment(e) = store.get(kurabe_store::ExperimentId(id).into()).unwrap() else {
            panic!("e{id} is not an experiment");
        };
        for (got, want) in e.runs.iter().zip(raw_runs(id)) {
            let what = format!("e{id} {} {} {}", want.workload, want.variant, want.round);
            let want = want.record.expect("every fixture run succeeded");
            let detail = got.run.record.as_ref().expect(&what);
            let kind = match detail {
                RunDetail::Http(d) => {
                    assert_eq!(d.http.protocol, want["http"]["protocol"], "{what}");
                    let http = got.run.http.as_ref().expect("what ran is read back");
                    assert_eq!(http.engine.as_deref(), want["http"]["engine"].as_str());
                    assert_eq!(d.soak.is_some(), want.get("soak").is_some(), "{what}");
                    assert_eq!(d.target.is_some(), want.get("target").is_some(), "{what}");
                    if let Some(s) = &d.soak {
                        assert_eq!(s.verdict.as_str(), want["soak"]["verdict"]);
                        "soak"
                    } else {
                        "http"
                    }
                }
                RunDetail::Watch(d) => {
                    let n = want["target"]["series"].as_array().unwrap().len();
                    assert_eq!(d.target.series.len(), n, "{what}");
                    "watch"
                }
                RunDetail::Command(d) => {
                    assert_eq!(
                        d.executions.len(),
                        want["executions"].as_array().unwrap().len()
                    );
                    "command"
                }
                RunDetail::Idle(d) => {
                    let used = want["system_used_bytes"].as_u64();
                    assert_eq!(d.system_used_bytes, used, "{what}");
                    "idle"
                }
                RunDetail::System(d) => {
                    assert_eq!(
                        d.system.runs.len(),
                        want["system"]["runs"].as_array().unwrap().len()
                    );
                    "system"
                }
                RunDetail::Imported(_) => panic!("{what}: the fixture holds no import"),
                RunDetail::Capacity(_) => panic!("{what}: the fixture holds no capacity search"),
                RunDetail::Unrecognised(v) => panic!("{what} read as no kind: {v}"),
            };
            kinds.insert(kind);
            let back = serde_json::to_value(detail).unwrap();
            assert!(
                same_json(&back, &want),
                "{what}: written back as\n{back}\nnot\n{want}"
            );
        }
    }
    let all = ["command", "http", "idle", "soak", "system", "watch"];
    assert_eq!(kinds.into_iter().collect::<Vec<_>>(), all);
}
