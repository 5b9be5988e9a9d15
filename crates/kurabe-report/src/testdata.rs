//! Hand-built experiments for the unit and snapshot tests: the DESIGN.md
//! ruby example (three rounds of two variants plus one failed run), and one
//! with every verdict shape and user strings that need escaping.

use kurabe_model::probe::{TreeSize, WatchPoint};
use kurabe_model::record::{
    Experiment, ExperimentId, ExperimentStatus, HostFacts, MetricValue, RunRecord, RunStatus,
    StoredRun,
};
use kurabe_model::run_detail::{RunDetail, SettlingDetail, TreeDetail, WatchDetail};

const MIB: f64 = 1024.0 * 1024.0;

/// The layout of a plan text, read as the store reads a stored one.
pub(crate) fn layout(plan_text: &str) -> Option<kurabe_model::layout::Layout> {
    let plan: kurabe_model::plan::Plan = toml::from_str(plan_text).ok()?;
    Some(kurabe_model::layout::Layout::of(&plan))
}

pub(crate) const PLAN: &str = r#"name = "ruby GC settings"
repeat = 3

[target]
command = "ruby app.rb -p {port}"
ready = "http://127.0.0.1:{port}/"

[[variant]]
name = "ruby"

[[variant]]
name = "ruby + big heap"
env = { RUBY_GC_HEAP_INIT_SLOTS = "600000" }

[[workload]]
name = "index page"
http = { path = "/test/index", requests = 1000, concurrency = 1 }
"#;

fn run(variant: &str, round: u32, rps: f64, pss_mib: f64, cpu_ms: f64) -> StoredRun {
    let m = |name: &str, value: f64, unit: &str| MetricValue {
        name: name.into(),
        value,
        unit: unit.into(),
    };
    StoredRun {
        id: 0,
        run: RunRecord {
            variant: variant.into(),
            workload: "index page".into(),
            round,
            status: RunStatus::Ok,
            error_tail: None,
            started_at: format!("2026-11-29T20:0{round}:00.000Z"),
            finished_at: format!("2026-11-29T20:0{round}:10.000Z"),
            metrics: vec![
                m("requests_per_second", rps, "/s"),
                m("pss_peak_bytes", pss_mib * MIB, "B"),
                m("cpu_ms_per_request", cpu_ms, "ms"),
            ],
            record: None,
            http: None,
        },
    }
}

/// The sample experiment; the run order starts with the non-baseline
/// variant so tests see that the plan, not first-seen order, decides.
/// A watch run's record whose tree went through `points` (t_s, CPU %, Σ PSS).
fn watched(points: &[(f64, f64, f64)]) -> RunDetail {
    let series: Vec<WatchPoint> = points
        .iter()
        .map(|&(t_s, cpu_percent, pss)| WatchPoint {
            t_s,
            cpu_percent,
            size: TreeSize {
                pss_bytes: pss as u64,
                ..TreeSize::default()
            },
            ..WatchPoint::default()
        })
        .collect();
    let peak = series.iter().map(|p| p.size.pss_bytes).max().unwrap_or(0);
    RunDetail::Watch(Box::new(WatchDetail {
        target: TreeDetail {
            pid: 1,
            duration_s: 2.0,
            samples: series.len() as u64,
            cpu_seconds_proc: 1.9,
            cpu_seconds_cgroup: None,
            cpu_percent_max: 95.0,
            pss_start_bytes: series[0].size.pss_bytes,
            pss_peak_bytes: peak,
            pss_end_bytes: peak,
            pss_mean_bytes: peak,
            rss_peak_bytes: peak,
            uss_peak_bytes: peak,
            processes_max: 1,
            threads_max: 1,
            root_exited: false,
            counters: Default::default(),
            series,
        },
        settling: Some(SettlingDetail {
            series: "cpu_percent".into(),
            warmup_s: 0.0,
            found: None,
        }),
    }))
}

pub(crate) fn sample_experiment() -> Experiment {
    let mut runs = vec![
        run("ruby + big heap", 0, 124.0, 60.1, 8.0),
        run("ruby", 0, 105.0, 39.0, 9.4),
        run("ruby", 1, 106.2, 39.1, 9.5),
        run("ruby + big heap", 1, 125.3, 60.2, 8.1),
        run("ruby + big heap", 2, 126.6, 60.3, 7.9),
        run("ruby", 2, 107.4, 38.9, 9.3),
    ];
    runs[1].run.record = Some(watched(&[
        (0.0, 10.0, 30.0 * MIB),
        (1.0, 95.0, 38.0 * MIB),
        (2.0, 90.0, 39.0 * MIB),
    ]));
    let mut failed = run("ruby + big heap", 3, 0.0, 0.0, 0.0);
    failed.run.status = RunStatus::Failed;
    failed.run.metrics.clear();
    failed.run.error_tail = Some("out of memory".into());
    runs.push(failed);
    Experiment {
        id: ExperimentId(3),
        name: "ruby GC settings".into(),
        plan_text: PLAN.into(),
        layout: layout(PLAN).map(Box::new),
        host: Some(HostFacts {
            hostname: "bench1".into(),
            cpu_model: "Intel(R) Celeron(R) CPU 2.40GHz".into(),
            cores: 2,
            memory_bytes: 2 * 1024 * 1024 * 1024,
            kernel: "6.1.0".into(),
            arch: "x86_64".into(),
        }),
        tool_version: "0.1.0".into(),
        seed: Some(7),
        started_at: "2026-11-29T20:00:00.000Z".into(),
        finished_at: Some("2026-11-29T20:04:00.000Z".into()),
        status: ExperimentStatus::Interrupted,
        writer: None,
        origin: Default::default(),
        runs,
    }
}

const MIXED_PLAN: &str = r#"name = "every verdict <b>shape</b> | piped"
repeat = 5

[target]
command = "./server --port {port}"
ready = "http://127.0.0.1:{port}/"

[[variant]]
name = "v1"

[[variant]]
name = "v2 <script>alert(1)</script> | *copy*"

[[variant]]
name = "v3 short"

[[workload]]
name = "GET / | c=4"
http = { path = "/", duration = "2s", concurrency = 4 }
metrics = ["requests_per_second", "latency_p99_us", "pss_peak_bytes", "frobs"]
"#;

/// Rows of (variant, req/s, p99 µs, PSS MiB, frobs) per round.
#[rustfmt::skip]
const MIXED_ROWS: &[(&str, [f64; 4])] = &[
    ("v1", [1000.0, 500.0, 20.0, 3.0]),
    ("v2 <script>alert(1)</script> | *copy*", [1000.2, 510.0, 22.0, 6.0]),
    ("v3 short", [1200.0, 400.0, 20.0, 3.0]),
    ("v1", [1001.0, 540.0, 20.1, 3.0]),
    ("v2 <script>alert(1)</script> | *copy*", [1000.8, 470.0, 22.1, 6.0]),
    ("v3 short", [1210.0, 410.0, 20.1, 3.0]),
    ("v1", [999.0, 470.0, 19.9, 3.0]),
    ("v2 <script>alert(1)</script> | *copy*", [999.4, 530.0, 21.9, 6.0]),
    ("v1", [1000.5, 520.0, 20.0, 3.0]),
    ("v2 <script>alert(1)</script> | *copy*", [1000.0, 490.0, 22.0, 6.0]),
    ("v1", [999.5, 480.0, 20.0, 3.0]),
    ("v2 <script>alert(1)</script> | *copy*", [999.8, 505.0, 22.0, 6.0]),
];

/// Every verdict shape against baseline `v1`: req/s settled within noise,
/// p99 latency within noise but inconclusive, PSS worse, an unknown metric
/// (`frobs`, no direction) with an interval but no good/bad word, and a
/// variant with two runs (no interval). Names carry `<script>`, `|` and `*`.
pub(crate) fn mixed_verdicts_experiment() -> Experiment {
    let runs = MIXED_ROWS
        .iter()
        .enumerate()
        .map(|(i, (variant, [rps, p99, pss, frobs]))| {
            let m = |name: &str, value: f64, unit: &str| MetricValue {
                name: name.into(),
                value,
                unit: unit.into(),
            };
            let round = u32::try_from(i / 3).unwrap_or(0);
            StoredRun {
                id: i64::try_from(i).unwrap_or(0),
                run: RunRecord {
                    variant: (*variant).into(),
                    workload: "GET / | c=4".into(),
                    round,
                    status: RunStatus::Ok,
                    error_tail: None,
                    started_at: format!("2026-11-29T21:00:{i:02}.000Z"),
                    finished_at: format!("2026-11-29T21:00:{i:02}.500Z"),
                    metrics: vec![
                        m("requests_per_second", *rps, "/s"),
                        m("latency_p99_us", *p99, "us"),
                        m("pss_peak_bytes", pss * MIB, "B"),
                        m("frobs", *frobs, "count"),
                    ],
                    record: None,
                    http: None,
                },
            }
        })
        .collect();
    Experiment {
        id: ExperimentId(12),
        name: "every verdict <b>shape</b> | piped".into(),
        plan_text: MIXED_PLAN.into(),
        layout: layout(MIXED_PLAN).map(Box::new),
        host: None,
        tool_version: "0.1.0".into(),
        seed: Some(1),
        started_at: "2026-11-29T21:00:00.000Z".into(),
        finished_at: Some("2026-11-29T21:01:00.000Z".into()),
        status: ExperimentStatus::Complete,
        writer: None,
        origin: Default::default(),
        runs,
    }
}
