//! History: what every record knows of its code and machine, `kurabe
//! history` and `kurabe check` over real stores.

use std::path::Path;
use std::process::Command;

use kurabe_model::history::{CheckReport, HistoryReport};
use kurabe_model::stats::Verdict;
use kurabe_store::{
    Entry, EntryId, Experiment, ExperimentId, ExperimentStatus, Export, HostFacts, MetricValue,
    Origin, ResultKind, Revision, RunRecord, RunStatus, SavedRecord, Store, StoredRun,
    EXPORT_FORMAT, EXPORT_VERSION,
};

use crate::util::kurabe;

/// A plan whose one command workload takes no time.
const QUICK_PLAN: &str = r#"
name = "quick"
repeat = 1
[[variant]]
name = "a"
[[workload]]
name = "true"
command = { command = "true", runs = 1 }
"#;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn experiments(store: &Path) -> Vec<Experiment> {
    let store = Store::open(store).unwrap();
    let ids = store.experiments_named("quick").unwrap();
    ids.into_iter()
        .map(|id| match store.get(id.into()).unwrap() {
            Entry::Experiment(e) => e,
            other => panic!("not an experiment: {other:?}"),
        })
        .collect()
}

/// Inside a git work tree an experiment records commit, branch and the
/// dirty flag, plus the CI label; outside one it records no commit. Both
/// carry the host fingerprint of this machine and its cgroup limits.
#[test]
fn experiments_record_their_git_revision_label_and_host_fingerprint() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    std::fs::write(repo.join("plan.toml"), QUICK_PLAN).unwrap();
    git(&repo, &["init", "-q", "-b", "feature"]);
    git(&repo, &["add", "plan.toml"]);
    git(&repo, &["commit", "-q", "-m", "plan"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);
    let store = dir.path().join("results.db");
    let run = |cwd: &Path, env: Option<&str>| {
        let mut cmd = kurabe();
        cmd.current_dir(cwd)
            .args(["run", "-q", "--format", "json", "--store"])
            .arg(&store)
            .arg(repo.join("plan.toml"))
            .env_remove("KURABE_REV");
        if let Some(label) = env {
            cmd.env("KURABE_REV", label);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&repo, Some("ci-41"));
    std::fs::write(repo.join("plan.toml"), format!("{QUICK_PLAN}\n# edited\n")).unwrap();
    run(&repo, None);
    run(dir.path(), None);
    let e = experiments(&store);
    assert_eq!(e.len(), 3);
    let rev = e[0].origin.rev.as_ref().unwrap();
    assert_eq!(rev.commit.as_deref(), Some(head.as_str()));
    assert_eq!(rev.branch.as_deref(), Some("feature"));
    assert_eq!(rev.label.as_deref(), Some("ci-41"));
    assert!(!rev.dirty && rev.commit_time.as_deref().is_some_and(|t| t.ends_with('Z')));
    assert!(
        e[1].origin.rev.as_ref().unwrap().dirty,
        "an edited tracked file is dirty"
    );
    assert_eq!(e[2].origin.rev, None, "outside a work tree: no commit");
    let fp = e[0].host_fingerprint().unwrap();
    assert!(e
        .iter()
        .all(|x| x.host_fingerprint().as_deref() == Some(fp.as_str())));
    let limits = kurabe_probe::cgroup::limits_in_force();
    assert_eq!(e[0].origin.limits, Some(limits));
}

/// A small deterministic generator (SplitMix64) with normal deviates.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A standard normal deviate (Box–Muller).
    fn normal(&mut self) -> f64 {
        let u = self.unit().max(f64::MIN_POSITIVE);
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * self.unit()).cos()
    }
}

fn synthetic_host(name: &str, cores: u32) -> HostFacts {
    HostFacts {
        hostname: name.into(),
        cpu_model: "Synthetic CPU".into(),
        cores,
        memory_bytes: 1 << 30,
        kernel: "6.1.0".into(),
        arch: "x86_64".into(),
    }
}

/// The metric every synthetic series measures (lower is better).
const METRIC: &str = "cpu_ms_per_request";

/// A synthetic series to import: one experiment per level, `runs` runs of
/// lognormal noise with coefficient of variation `cv` around it.
struct Series<'a> {
    name: &'a str,
    levels: &'a [f64],
    runs: u32,
    cv: f64,
    host: HostFacts,
    /// Revision per experiment (label, branch); none when empty.
    revs: &'a [(&'a str, &'a str)],
    /// Minutes after the epoch of the first experiment.
    start_minute: usize,
}

fn timestamp(minute: usize) -> String {
    format!(
        "2026-01-{:02}T{:02}:{:02}:00.000Z",
        1 + minute / 1440,
        (minute / 60) % 24,
        minute % 60
    )
}

fn synthetic_experiment(s: &Series<'_>, i: usize, rng: &mut Rng) -> Experiment {
    let runs = (0..s.runs)
        .map(|round| StoredRun {
            id: 0,
            run: RunRecord {
                variant: "a".into(),
                workload: "get".into(),
                round,
                status: RunStatus::Ok,
                error_tail: None,
                started_at: timestamp(s.start_minute + i),
                finished_at: timestamp(s.start_minute + i),
                metrics: vec![MetricValue {
                    name: METRIC.into(),
                    value: s.levels[i] * (s.cv * rng.normal()).exp(),
                    unit: "ms".into(),
                }],
                record: None,
                http: None,
            },
        })
        .collect();
    let rev = s.revs.get(i).map(|(label, branch)| Revision {
        label: Some((*label).into()),
        branch: Some((*branch).into()),
        ..Revision::default()
    });
    Experiment {
        id: ExperimentId(0),
        name: s.name.into(),
        plan_text: String::new(),
        layout: None,
        host: Some(s.host.clone()),
        tool_version: "test".into(),
        seed: None,
        started_at: timestamp(s.start_minute + i),
        finished_at: Some(timestamp(s.start_minute + i)),
        status: ExperimentStatus::Complete,
        writer: None,
        origin: Origin { rev, limits: None },
        runs,
    }
}

/// Write the series through the store's import (one transaction); the
/// new experiment ids in order.
fn import(store: &mut Store, s: &Series<'_>, rng: &mut Rng) -> Vec<EntryId> {
    let entries = (0..s.levels.len())
        .map(|i| Entry::Experiment(synthetic_experiment(s, i, rng)))
        .collect();
    store
        .import(&Export {
            format: EXPORT_FORMAT.into(),
            schema_version: EXPORT_VERSION,
            entries,
        })
        .unwrap()
}

fn series<'a>(name: &'a str, levels: &'a [f64]) -> Series<'a> {
    Series {
        name,
        levels,
        runs: 5,
        cv: 0.01,
        host: synthetic_host("bench1", 2),
        revs: &[],
        start_minute: 0,
    }
}

fn run_kurabe(args: &[&str], store: &Path) -> std::process::Output {
    kurabe()
        .args(args)
        .arg("--store")
        .arg(store)
        .env_remove("KURABE_STORE")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// One +10 % step in CPU per request at the 11th of 20 experiments: one
/// change, there, worse, in every format; the JSON matches its schema.
#[test]
fn history_finds_one_step_where_it_is_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let mut store = Store::open(&path).unwrap();
    let levels: Vec<f64> = (0..20).map(|i| if i < 10 { 1.0 } else { 1.1 }).collect();
    let ids = import(&mut store, &series("steps", &levels), &mut Rng(1));
    drop(store);
    let out = run_kurabe(&["history", "steps", "--format", "json"], &path);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    kurabe_testkit::schema::assert_valid("history.schema.json", &v);
    let report: HistoryReport = serde_json::from_value(v).unwrap();
    assert_eq!(report.series.len(), 1);
    let s = &report.series[0];
    assert_eq!(
        (s.metric.as_str(), s.variant.as_str(), s.workload.as_str()),
        (METRIC, "a", "get")
    );
    assert_eq!(s.points.len(), 20);
    assert_eq!(s.changes.len(), 1, "{:?}", s.changes);
    let c = &s.changes[0];
    assert_eq!((c.index, c.experiment.clone()), (10, ids[10].to_string()));
    assert_eq!(c.previous_experiment, ids[9].to_string());
    assert_eq!(c.verdict, Verdict::Worse);
    let [low, high] = c.interval.unwrap();
    assert!(
        low < 1.1 && 1.1 < high && (c.ratio.unwrap() - 1.1).abs() < 0.01,
        "{c:?}"
    );
    let render = |format: &str| {
        let out = run_kurabe(&["history", "steps", "--format", format], &path);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let t = render("text");
    assert!(
        t.contains(&format!("change at {}", ids[10])) && t.contains("worse"),
        "{t}"
    );
    assert!(render("md").contains(r"| get / a / cpu\_ms\_per\_request | 20 |"));
    let csv = render("csv");
    assert_eq!(csv.lines().count(), 21, "{csv}");
    // The change's verdict, then what the history could have detected (%).
    let change = csv.lines().nth(11).unwrap();
    let (verdict, detectable) = change.rsplit_once(',').unwrap();
    assert!(verdict.ends_with(",worse"), "{csv}");
    assert!(detectable.parse::<f64>().unwrap() > 0.0, "{csv}");
    let html = render("html");
    assert_eq!(html.matches("class=\"mark\"").count(), 1);
    assert!(!html.contains("<script"));
}

/// The newest experiment's machine is the default; other machines are
/// listed, selectable by fingerprint, or mixed in with --all-hosts.
#[test]
fn history_keeps_to_one_host_fingerprint_unless_told() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let mut store = Store::open(&path).unwrap();
    let flat = [1.0; 8];
    import(&mut store, &series("hosts", &flat), &mut Rng(2));
    let newer = Series {
        host: synthetic_host("bench2", 4),
        start_minute: 100,
        ..series("hosts", &flat[..3])
    };
    import(&mut store, &newer, &mut Rng(3));
    drop(store);
    let json = |extra: &[&str]| -> HistoryReport {
        let mut args = vec!["history", "hosts", "--format", "json"];
        args.extend_from_slice(extra);
        let out = run_kurabe(&args, &path);
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let newest = json(&[]);
    assert_eq!(newest.series[0].points.len(), 3);
    assert_eq!(newest.hosts.len(), 2);
    assert_eq!(newest.hosts[0].hostnames, vec!["bench2".to_owned()]);
    let other = newest.hosts[1].fingerprint.clone();
    assert_eq!(json(&["--host", &other]).series[0].points.len(), 8);
    let all = json(&["--all-hosts"]);
    assert_eq!(
        (all.series[0].points.len(), all.host_fingerprint),
        (11, None)
    );
}

/// `kurabe check`: against a branch's last N experiments, exit 1 on a
/// regression (named in the Markdown table), 0 when within noise; an
/// experiment id as baseline; the JSON matches its schema.
#[test]
fn check_gates_on_a_regression_against_the_branch_history() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let mut store = Store::open(&path).unwrap();
    let revs = [
        ("m1", "main"),
        ("m2", "main"),
        ("m3", "main"),
        ("m4", "main"),
        ("pr1", "pr"),
        ("pr2", "pr"),
    ];
    let levels = [1.0, 1.0, 1.0, 1.0, 1.12, 1.0];
    let s = Series {
        revs: &revs,
        ..series("gate", &levels)
    };
    let ids = import(&mut store, &s, &mut Rng(4));
    drop(store);
    let (bad, good) = (ids[4].to_string(), ids[5].to_string());
    let out = run_kurabe(
        &["check", &bad, "--baseline", "main", "--format", "md"],
        &path,
    );
    let md = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{md}{}", text(&out.stderr));
    assert!(
        md.contains("1 regression") && md.contains("❌ worse"),
        "{md}"
    );
    let out = run_kurabe(
        &[
            "check",
            &good,
            "--baseline",
            "main",
            "--last",
            "3",
            "--format",
            "json",
        ],
        &path,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    kurabe_testkit::schema::assert_valid("check.schema.json", &v);
    let report: CheckReport = serde_json::from_value(v).unwrap();
    let want: Vec<String> = ids[1..4].iter().map(|i| i.to_string()).collect();
    assert_eq!(report.baseline_experiments, want);
    assert_eq!((report.worse, report.rows[0].baseline_runs), (0, 15));
    let by_id = run_kurabe(&["check", &bad, "--baseline", &ids[1].to_string()], &path);
    assert_eq!(by_id.status.code(), Some(1), "{}", text(&by_id.stderr));
    assert!(text(&by_id.stdout).contains(&format!("(experiments {} {})", ids[0], ids[1])));
}

/// Bad input: one line naming what is missing, exit 2.
#[test]
fn unknown_plans_and_baselines_exit_2_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let mut store = Store::open(&path).unwrap();
    let ids = import(&mut store, &series("known", &[1.0, 1.0]), &mut Rng(5));
    drop(store);
    let e = ids[1].to_string();
    for (args, needle) in [
        (vec!["history", "nope"], "no history for `nope`"),
        (
            vec!["check", &e, "--baseline", "nope"],
            "unknown baseline `nope`",
        ),
        (
            vec!["check", &e, "--baseline", "e999"],
            "unknown baseline `e999`",
        ),
        (vec!["check", "e999", "--baseline", "main"], "e999"),
        (
            vec!["history", "known", "--host", "0000000000000000"],
            "no experiment on host",
        ),
    ] {
        let out = run_kurabe(&args, &path);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// A saved result's label has a history too: one point per saved result.
#[test]
fn a_saved_result_label_has_a_history() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let mut store = Store::open(&path).unwrap();
    for used in [100.0, 101.0, 99.0] {
        let record = serde_json::json!({ "schema_version": 1, "used_bytes": used });
        let h = synthetic_host("vps", 1);
        store
            .save_result(
                "after boot",
                &h,
                &Origin::default(),
                &SavedRecord::read(ResultKind::Mem, record),
            )
            .unwrap();
    }
    drop(store);
    let out = run_kurabe(&["history", "after boot", "--format", "json"], &path);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r: HistoryReport = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r.series[0].metric, "used_bytes");
    let points: Vec<&str> = r.series[0]
        .points
        .iter()
        .map(|p| p.experiment.as_str())
        .collect();
    assert_eq!(points, ["r1", "r2", "r3"]);
}

/// Tally of one detector over the trials.
#[derive(Debug, Default)]
struct Tally {
    /// Step series with a change within ±2 experiments of the step.
    found: usize,
    /// Step series with exactly one change, within ±2.
    exactly: usize,
    /// Flat series with any change.
    false_alarms: usize,
}

/// Change indices of `name` as `kurabe history` finds them (E-divisive
/// over the stored per-run samples), and the sliding t-test's over the
/// same samples, read back through the store.
fn detect(store: &Store, name: &str) -> (Vec<usize>, Vec<usize>) {
    use kurabe_model::stats::changepoint::{sliding_t_test, Config};
    let experiments: Vec<Experiment> = store
        .experiments_named(name)
        .unwrap()
        .into_iter()
        .map(|id| match store.get(id.into()).unwrap() {
            Entry::Experiment(e) => e,
            other => panic!("{other:?}"),
        })
        .collect();
    let config = Config::default();
    let report =
        kurabe_report::history_report(name, &experiments, &kurabe_report::Hosts::Newest, &config);
    let s = &report.series[0];
    let e_div = s.changes.iter().map(|c| c.index).collect();
    let groups: Vec<Vec<f64>> = s.points.iter().map(|p| p.samples.clone()).collect();
    (e_div, sliding_t_test(&groups, 12, 7.0, 2))
}

fn score(t: &mut Tally, found: &[usize], step: Option<usize>) {
    match step {
        Some(at) => {
            let near = found.iter().filter(|&&i| i.abs_diff(at) <= 2).count();
            t.found += usize::from(near > 0);
            t.exactly += usize::from(near == 1 && found.len() == 1);
        }
        None => t.false_alarms += usize::from(!found.is_empty()),
    }
}

/// Issue 14's accuracy targets, through the real store: 200 series of 60
/// experiments × 5 runs, run-to-run CV 2 %, one +5 % step at a random
/// position — found within ±2 experiments in ≥ 95 %; 200 flat series — a
/// false change in ≤ 5 %. The sliding t-test (Perfherder: windows of 12,
/// t > 7) is scored on the same series, side by side. Slow in a debug
/// build: `bench/history-accuracy.sh` runs it in release and prints the figures.
#[test]
#[ignore = "200 + 200 synthetic histories; run by bench/history-accuracy.sh"]
fn accuracy_of_change_points_through_the_store() {
    let trials: usize = std::env::var("TRIALS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("results.db")).unwrap();
    let mut rng = Rng(0x6b75_7261_6265);
    let (mut e_div, mut t_test) = (Tally::default(), Tally::default());
    for trial in 0..trials {
        let at = 5 + (rng.next() % 51) as usize; // 5..=55: two windows' room either side
        for step in [Some(at), None] {
            let levels: Vec<f64> = (0..60)
                .map(|i| {
                    if step.is_some_and(|a| i >= a) {
                        1.05
                    } else {
                        1.0
                    }
                })
                .collect();
            let name = format!(
                "trial {trial} {}",
                if step.is_some() { "step" } else { "flat" }
            );
            let s = Series {
                cv: 0.02,
                ..series(&name, &levels)
            };
            import(&mut store, &s, &mut rng);
            let (a, b) = detect(&store, &name);
            score(&mut e_div, &a, step);
            score(&mut t_test, &b, step);
        }
    }
    let pct = |n: usize| 100.0 * n as f64 / trials as f64;
    for (name, t) in [
        ("e-divisive (kurabe history)", &e_div),
        ("sliding t-test (12, t>7)", &t_test),
    ] {
        println!(
            "{name:<28} step found ±2: {}/{trials} ({:.1} %), exactly one: {}/{trials} ({:.1} %), false change on flat: {}/{trials} ({:.1} %)",
            t.found, pct(t.found), t.exactly, pct(t.exactly), t.false_alarms, pct(t.false_alarms)
        );
    }
    assert!(pct(e_div.found) >= 95.0, "{e_div:?}");
    assert!(pct(e_div.false_alarms) <= 5.0, "{e_div:?}");
}

/// `kurabe serve --work-us {work}` under a keep-alive load: CPU per request
/// follows the work set with `--set work=N`.
const WORK_PLAN: &str = r#"
name = "work steps"
repeat = 3
[target]
command = ["{kurabe}", "serve", "--port", "{port}", "--work-us", "{work}"]
ready = "http://127.0.0.1:{port}/"
[[variant]]
name = "serve"
[[workload]]
name = "get"
http = { path = "/", requests = 3000, concurrency = 1, keep_alive = true }
metrics = ["cpu_ms_per_request", "requests_per_second"]
"#;

/// Geometric mean of every run's `metric` in experiments `ids`.
fn pooled_centre(store: &Store, ids: &[ExperimentId], metric: &str) -> f64 {
    let logs: Vec<f64> = ids
        .iter()
        .flat_map(|&id| {
            store
                .metric_samples(id, "get", metric)
                .unwrap()
                .into_values()
                .flatten()
        })
        .map(f64::ln)
        .collect();
    (logs.iter().sum::<f64>() / logs.len() as f64).exp()
}

/// End to end: 6 experiments at --work-us 50, then 6 at 100 — exactly one
/// change in CPU per request, at the 7th experiment, worse, with a ratio
/// within 3 % of what the two sets measure directly. The spin is of thread
/// CPU time, so a loaded machine stretches the wall clock, not the CPU per
/// request. Other tests running beside it do move the server's overhead per
/// request (a fresh-clone CI run saw the first six at 78 µs and the last six
/// at 67–75 µs while a load test ran next to the first block), so `.ci/run`
/// runs it alone, after the suite. The step is 50 µs, not 10: on this
/// session's machine the server's own overhead per request was ~60 µs, so
/// a 10 µs step was ~9 % against a spread between experiments of ±5 % and,
/// in some runs, 0.11–0.15 ms at the same work (idle machine): it and a
/// 25 µs step were missed.
#[test]
#[ignore = "needs the machine to itself: .ci/run runs it alone after the suite"]
fn a_work_step_between_runs_is_one_change_at_the_seventh_experiment() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, store) = (dir.path().join("plan.toml"), dir.path().join("results.db"));
    std::fs::write(&plan, WORK_PLAN).unwrap();
    for work in ["50"; 6].into_iter().chain(["100"; 6]) {
        let set = format!("work={work}");
        let out = run_kurabe(
            &[
                "run",
                plan.to_str().unwrap(),
                "-q",
                "--set",
                &set,
                "--format",
                "json",
            ],
            &store,
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let out = run_kurabe(&["history", "work steps", "--format", "json"], &store);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: HistoryReport = serde_json::from_slice(&out.stdout).unwrap();
    let cpu = report
        .series
        .iter()
        .find(|s| s.metric == METRIC)
        .expect("a CPU series");
    let ids = Store::open(&store)
        .unwrap()
        .experiments_named("work steps")
        .unwrap();
    assert_eq!(cpu.points.len(), 12);
    assert_eq!(
        cpu.changes.len(),
        1,
        "{:#?}",
        cpu.points.iter().map(|p| p.value).collect::<Vec<_>>()
    );
    let change = &cpu.changes[0];
    assert_eq!(
        (change.index, change.experiment.clone()),
        (6, ids[6].to_string())
    );
    assert_eq!(change.verdict, Verdict::Worse);
    let s = Store::open(&store).unwrap();
    let direct = pooled_centre(&s, &ids[6..], METRIC) / pooled_centre(&s, &ids[..6], METRIC);
    let ratio = change.ratio.unwrap();
    eprintln!("work 50 → 100 µs: change ratio {ratio:.4}, direct {direct:.4}");
    assert!(
        (ratio / direct - 1.0).abs() < 0.03,
        "change {ratio} vs direct {direct}"
    );
    assert!(
        ratio > 1.05,
        "100 µs of work per request costs more CPU than 50: {ratio}"
    );
}

/// Relative links (`href="…"`) of an HTML page.
fn links(html: &str) -> Vec<String> {
    html.split("href=\"")
        .skip(1)
        .filter_map(|s| s.split_once('"').map(|(l, _)| l.to_owned()))
        .collect()
}

/// `kurabe site`: an index linking every series page, series pages linking
/// every experiment's report, all from the file system with no script or
/// network; a second run rewrites nothing, and a new experiment rewrites
/// only the pages it changes.
#[test]
fn site_links_plans_series_and_experiments_and_regenerates_incrementally() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let site = dir.path().join("site");
    let mut store = Store::open(&path).unwrap();
    let step: Vec<f64> = (0..12).map(|i| if i < 6 { 1.0 } else { 1.2 }).collect();
    let ids = import(&mut store, &series("stepping", &step), &mut Rng(6));
    import(
        &mut store,
        &Series {
            start_minute: 50,
            ..series("<b>flat</b>", &[1.0; 5])
        },
        &mut Rng(7),
    );
    let site_run = || {
        let out = run_kurabe(&["site", "-o", site.to_str().unwrap()], &path);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stderr)
    };
    let first = site_run();
    assert!(first.contains("20 page(s) written, 0 unchanged"), "{first}");
    let index = std::fs::read_to_string(site.join("index.html")).unwrap();
    assert!(index.contains("&lt;b&gt;flat&lt;/b&gt;") && !index.contains("<b>flat"));
    let series_links = links(&index);
    assert_eq!(series_links.len(), 2, "{series_links:?}");
    let page = std::fs::read_to_string(site.join(&series_links[0])).unwrap();
    assert_eq!(
        page.matches("class=\"mark\"").count(),
        1,
        "the step is marked"
    );
    for link in links(&page) {
        let target = site.join(&series_links[0]).parent().unwrap().join(&link);
        assert!(target.is_file(), "{link} is a page of the site");
    }
    assert!(page.contains(&format!("../experiments/{}.html", ids[6])));
    for html in [&index, &page] {
        // Only the SVG namespace names a URL; nothing is fetched.
        let fetched = ["src=", "href=\"http", "url(", "@import"];
        assert!(!html.contains("<script") && !fetched.iter().any(|f| html.contains(f)));
    }
    assert!(site_run().contains("0 page(s) written, 20 unchanged"));
    let mut store = Store::open(&path).unwrap();
    import(
        &mut store,
        &Series {
            start_minute: 60,
            ..series("<b>flat</b>", &[1.0])
        },
        &mut Rng(8),
    );
    drop(store);
    // The index, the flat plan's series page and the new experiment's report.
    assert!(site_run().contains("3 page(s) written, 18 unchanged"));
}
