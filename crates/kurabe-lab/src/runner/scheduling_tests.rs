//! The runner's rules through its seams, exactly and instantly: a fake
//! launcher (no processes) returns scripted measurements or failures, a
//! fake sink keeps what would be stored, a fixed clock stands for the time
//! budget. The end-to-end tests (`crates/kurabe/tests/run.rs`) cover the
//! real launcher and store.

use std::cell::Cell;
use std::collections::BTreeMap;

use kurabe_model::stats::randomized_blocks;

use super::*;

/// What the fake sink was told, in order.
#[derive(Debug, Clone, PartialEq)]
enum Stored {
    Begin(String),
    Run(String, String, u32, RunStatus),
    Finish(ExperimentStatus),
}

#[derive(Default)]
struct FakeSink(Vec<Stored>);

impl Sink for FakeSink {
    fn begin(&mut self, e: &NewExperiment) -> Result<ExperimentId, StoreError> {
        self.0.push(Stored::Begin(e.name.clone()));
        Ok(ExperimentId(7))
    }
    fn record(&mut self, id: ExperimentId, r: &RunRecord) -> Result<(), StoreError> {
        assert_eq!(id, ExperimentId(7));
        let (v, w) = (r.variant.clone(), r.workload.clone());
        self.0.push(Stored::Run(v, w, r.round, r.status));
        Ok(())
    }
    fn finish(&mut self, _: ExperimentId, status: ExperimentStatus) -> Result<(), StoreError> {
        self.0.push(Stored::Finish(status));
        Ok(())
    }
}

/// Answers run number `n` (0-based) of variant `v` with `answer(n, v)`.
struct FakeLauncher<'a, F> {
    launched: &'a Cell<usize>,
    answer: F,
}

impl<F: FnMut(usize, &str) -> Result<Measured, RunFailure>> Launcher for FakeLauncher<'_, F> {
    fn launch(&mut self, v: &ResolvedVariant, _: &Workload) -> Result<Measured, RunFailure> {
        let n = self.launched.get();
        self.launched.set(n + 1);
        (self.answer)(n, &v.name)
    }
}

/// Time passes only with runs: `per_run` each.
struct PacedClock<'a> {
    launched: &'a Cell<usize>,
    per_run: Duration,
}

impl Clock for PacedClock<'_> {
    fn elapsed(&self) -> Duration {
        self.per_run * self.launched.get() as u32
    }
}

/// A command workload's two headline metrics.
fn measured(wall_s: f64, rss: f64) -> Result<Measured, RunFailure> {
    Ok(Measured {
        metrics: BTreeMap::from([("wall_time_s", wall_s), ("max_rss_bytes", rss)]),
        record: kurabe_model::run_detail::RunDetail::Command(
            kurabe_model::run_detail::CommandDetail {
                command: Vec::new(),
                executions: Vec::new(),
                profile: None,
            },
        ),
    })
}

fn plan(extra: &str, workloads: &[&str]) -> Plan {
    let mut text = format!("name = \"fake\"\nrepeat = 2\n{extra}\n");
    for v in ["a", "b"] {
        text.push_str(&format!("[[variant]]\nname = \"{v}\"\n"));
    }
    for w in workloads {
        text.push_str(&format!(
            "[[workload]]\nname = \"{w}\"\ncommand = {{ command = \"true\", runs = 1 }}\n"
        ));
    }
    crate::plan::parse_plan(&text, "fake.toml").unwrap()
}

fn opts(until_confident: Option<Duration>) -> RunOptions {
    opts_with(until_confident.map_or(MoreRounds::No, MoreRounds::UntilConfident))
}

fn opts_with(more_rounds: MoreRounds) -> RunOptions {
    RunOptions {
        plan_dir: PathBuf::from("/nonexistent"),
        plan_text: String::new(),
        seed: Some(42),
        repeat: None,
        kurabe_exe: PathBuf::from("/nonexistent/kurabe"),
        more_rounds,
        tool_version: "test".into(),
        worktrees: Default::default(),
        rev: None,
        live: None,
        profile: Default::default(),
    }
}

/// Run `plan` on the fakes: the outcome, what was stored, the events seen.
fn run_fake<F: FnMut(usize, &str) -> Result<Measured, RunFailure>>(
    plan: &Plan,
    opts: &RunOptions,
    per_run: Duration,
    stop: &AtomicBool,
    answer: F,
) -> (Outcome, Vec<Stored>, Vec<String>) {
    let launched = Cell::new(0);
    let mut launcher = FakeLauncher {
        launched: &launched,
        answer,
    };
    let mut sink = FakeSink::default();
    let mut events = Vec::new();
    let mut on_event = |e: &Event<'_>| events.push(format!("{e:?}"));
    let clock = PacedClock {
        launched: &launched,
        per_run,
    };
    let mut io = RunnerIo {
        launcher: &mut launcher,
        sink: &mut sink,
        clock: &clock,
        stop,
        on_event: &mut on_event,
    };
    let outcome = run_with(plan, opts, &mut io).unwrap();
    (outcome, sink.0, events)
}

fn run_lines(stored: &[Stored]) -> Vec<(String, String, u32)> {
    stored
        .iter()
        .filter_map(|s| match s {
            Stored::Run(v, w, r, _) => Some((v.clone(), w.clone(), *r)),
            _ => None,
        })
        .collect()
}

#[test]
fn every_round_runs_each_workload_on_each_variant_in_the_seeded_order() {
    let p = plan("", &["w1", "w2"]);
    let stop = AtomicBool::new(false);
    let (o, stored, _) = run_fake(&p, &opts(None), Duration::ZERO, &stop, |_, v| {
        measured(if v == "a" { 1.0 } else { 2.0 }, 1e6)
    });
    assert_eq!(o.status, ExperimentStatus::Complete);
    assert_eq!(o.seed, 42);
    assert_eq!(stored.first(), Some(&Stored::Begin("fake".into())));
    assert_eq!(
        stored.last(),
        Some(&Stored::Finish(ExperimentStatus::Complete))
    );
    let names = ["a", "b"];
    let mut expected = Vec::new();
    for (round, order) in randomized_blocks(2, 2, 42).iter().enumerate() {
        for w in ["w1", "w2"] {
            for &vi in order {
                expected.push((names[vi].to_owned(), w.to_owned(), round as u32));
            }
        }
    }
    assert_eq!(run_lines(&stored), expected);
    assert_eq!(o.runs.len(), 8);
}

#[test]
fn on_failure_stop_ends_at_the_first_failed_run() {
    let p = plan("on_failure = \"stop\"", &["w"]);
    let stop = AtomicBool::new(false);
    let (o, stored, _) = run_fake(&p, &opts(None), Duration::ZERO, &stop, |n, _| {
        if n == 2 {
            Err(RunFailure::new("exit code 3"))
        } else {
            measured(1.0, 1e6)
        }
    });
    assert_eq!(o.status, ExperimentStatus::Failed);
    assert_eq!(o.runs.len(), 3);
    let why = o.stopped_by.unwrap();
    assert!(
        why.starts_with("run 3 (") && why.ends_with("on_failure = \"stop\""),
        "{why}"
    );
    assert_eq!(
        stored.last(),
        Some(&Stored::Finish(ExperimentStatus::Failed))
    );
}

#[test]
fn on_failure_continue_runs_everything_and_fails_only_a_pair_without_success() {
    let p = plan("", &["w"]);
    let stop = AtomicBool::new(false);
    // One failure of a: the pair still has a success, the experiment completes.
    let (o, _, _) = run_fake(&p, &opts(None), Duration::ZERO, &stop, |n, _| {
        if n == 0 {
            Err(RunFailure::new("flaky"))
        } else {
            measured(1.0, 1e6)
        }
    });
    assert_eq!((o.status, o.runs.len()), (ExperimentStatus::Complete, 4));
    assert!(o.failed_cells.is_empty());
    // Every run of b fails: that pair has nothing to compare.
    let (o, stored, _) = run_fake(&p, &opts(None), Duration::ZERO, &stop, |_, v| {
        if v == "b" {
            Err(RunFailure::new("exit code 127"))
        } else {
            measured(1.0, 1e6)
        }
    });
    assert_eq!((o.status, o.runs.len()), (ExperimentStatus::Failed, 4));
    assert_eq!(o.failed_cells.len(), 1);
    assert_eq!(o.failed_cells[0].variant, "b");
    assert_eq!(
        stored.last(),
        Some(&Stored::Finish(ExperimentStatus::Failed))
    );
}

#[test]
fn interruption_drops_the_run_in_flight_and_keeps_the_finished_ones() {
    let p = plan("", &["w"]);
    let stop = AtomicBool::new(false);
    let (o, stored, events) = run_fake(&p, &opts(None), Duration::ZERO, &stop, |n, _| {
        if n == 2 {
            // Ctrl-C while the third run is measuring.
            stop.store(true, Ordering::Relaxed);
        }
        measured(1.0, 1e6)
    });
    assert_eq!(o.status, ExperimentStatus::Interrupted);
    assert_eq!(o.stopped_by.as_deref(), Some("interrupted"));
    assert_eq!(o.runs.len(), 2);
    assert_eq!(run_lines(&stored).len(), 2);
    assert_eq!(
        stored.last(),
        Some(&Stored::Finish(ExperimentStatus::Interrupted))
    );
    assert_eq!(
        events.iter().filter(|e| e.starts_with("RunStart")).count(),
        3
    );
}

#[test]
fn until_confident_stops_when_settled() {
    let p = plan("", &["w"]);
    let stop = AtomicBool::new(false);
    let hour = Some(Duration::from_secs(3600));
    let (o, _, events) = run_fake(&p, &opts(hour), Duration::from_millis(1), &stop, |n, v| {
        let jitter = (n % 3) as f64 * 1e-3;
        let x = if v == "a" { 1.0 } else { 2.0 };
        measured(x + jitter, x * 1e6 + jitter)
    });
    assert_eq!(o.status, ExperimentStatus::Complete);
    assert_eq!(o.stopped_by, None);
    // Two points a variant are too few at the stop level: one doubling,
    // then every verdict is settled at the second look.
    assert_eq!(o.runs.len(), 4 * 2);
    let added = events
        .iter()
        .filter(|e| e.starts_with("RoundAdded"))
        .count();
    assert_eq!(added, 2);
}

/// Equal means with wide spread: never settled.
fn unsettled(n: usize, v: &str) -> Result<Measured, RunFailure> {
    let up = (n / 2 + usize::from(v == "b")) % 2 == 0;
    let x = if up { 3.0 } else { 1.0 };
    measured(x, x * 1e6)
}

#[test]
fn until_confident_doubles_the_rounds_up_to_the_last_look() {
    let p = plan("", &["w"]);
    let stop = AtomicBool::new(false);
    let hour = Some(Duration::from_secs(3600));
    let (o, _, events) = run_fake(&p, &opts(hour), Duration::from_millis(1), &stop, unsettled);
    // Looks after 2, 4, 8, 16 and 32 rounds; 2 variants each.
    assert_eq!(o.runs.len(), 32 * 2);
    let added = events
        .iter()
        .filter(|e| e.starts_with("RoundAdded"))
        .count();
    assert_eq!(added, 30);
    assert_eq!(o.status, ExperimentStatus::Complete);
    assert!(o.stopped_by.unwrap().contains("after 5 looks"));
}

#[test]
fn until_confident_adds_only_the_rounds_the_budget_allows() {
    let p = plan("", &["w"]);
    let stop = AtomicBool::new(false);
    // 2.5 s a run, 5 s a round. After 2 rounds (10 s) 2 more are asked and
    // fit; after 4 (20 s) 4 are asked and 1 fits; then the budget is spent.
    let pace = Duration::from_millis(2500);
    let budget = Some(Duration::from_secs(25));
    let (o, _, events) = run_fake(&p, &opts(budget), pace, &stop, unsettled);
    assert_eq!(o.runs.len(), 5 * 2);
    assert_eq!(
        events
            .iter()
            .filter(|e| e.starts_with("RoundAdded"))
            .count(),
        3
    );
    assert_eq!(o.stopped_by, None, "out of time, not out of looks");
    // Out of time at the first look: no round added.
    let spent = Some(Duration::from_secs(10));
    let (o, _, _) = run_fake(&p, &opts(spent), pace, &stop, unsettled);
    assert_eq!(o.runs.len(), 2 * 2);
    assert_eq!(rounds_that_fit(Duration::ZERO, 2, Duration::ZERO, 5), 5);
    assert_eq!(
        rounds_that_fit(Duration::from_secs(4), 2, Duration::from_secs(9), 5),
        2
    );
}

/// `kurabe noise`: rounds are added one at a time, settled or not, while
/// the next one ends within the time; never fewer than the plan's.
#[test]
fn until_time_adds_rounds_while_the_next_one_fits() {
    let p = plan("", &["w"]);
    let stop = AtomicBool::new(false);
    // 1 s a run, 2 s a round: 2 planned (4 s), then 3 more fit in 10 s.
    let pace = Duration::from_secs(1);
    let ten = opts_with(MoreRounds::UntilTime(Duration::from_secs(10)));
    let (o, _, events) = run_fake(&p, &ten, pace, &stop, |_, _| measured(1.0, 1e6));
    assert_eq!(o.runs.len(), 5 * 2, "settled at once, and still run on");
    let added = events.iter().filter(|e| e.starts_with("RoundAdded"));
    assert_eq!(added.count(), 3);
    assert_eq!(o.status, ExperimentStatus::Complete);
    let none = opts_with(MoreRounds::UntilTime(Duration::from_secs(1)));
    let (o, _, _) = run_fake(&p, &none, pace, &stop, unsettled);
    assert_eq!(
        o.runs.len(),
        2 * 2,
        "the plan's rounds run whatever the time"
    );
}

#[test]
fn interruption_in_an_added_round_ends_the_search_with_no_further_looks() {
    let p = plan("", &["w"]);
    let stop = AtomicBool::new(false);
    let hour = Some(Duration::from_secs(3600));
    // Rounds 1-2 (runs 0-3), a look adds rounds 3-4; Ctrl-C during run 5.
    let (o, stored, events) = run_fake(&p, &opts(hour), Duration::from_millis(1), &stop, |n, v| {
        if n == 5 {
            stop.store(true, Ordering::Relaxed);
        }
        unsettled(n, v)
    });
    assert_eq!(o.status, ExperimentStatus::Interrupted);
    assert_eq!(o.stopped_by.as_deref(), Some("interrupted"));
    assert_eq!(o.runs.len(), 5, "the run in flight is dropped");
    assert_eq!(run_lines(&stored).len(), 5);
    let added = events
        .iter()
        .filter(|e| e.starts_with("RoundAdded"))
        .count();
    assert_eq!(added, 2, "one look only: none after the interruption");
    assert_eq!(
        stored.last(),
        Some(&Stored::Finish(ExperimentStatus::Interrupted))
    );
}

#[test]
fn on_failure_stop_in_an_added_round_fails_the_experiment_there() {
    let p = plan("on_failure = \"stop\"", &["w"]);
    let stop = AtomicBool::new(false);
    let hour = Some(Duration::from_secs(3600));
    let (o, stored, _) = run_fake(&p, &opts(hour), Duration::from_millis(1), &stop, |n, v| {
        if n == 6 {
            return Err(RunFailure::new("exit code 3"));
        }
        unsettled(n, v)
    });
    assert_eq!(o.status, ExperimentStatus::Failed);
    assert_eq!(o.runs.len(), 7, "the failed run is kept, nothing after it");
    let why = o.stopped_by.unwrap();
    assert!(why.starts_with("run 7 ("), "{why}");
    assert_eq!(
        stored.last(),
        Some(&Stored::Finish(ExperimentStatus::Failed))
    );
}
