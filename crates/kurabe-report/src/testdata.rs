//! A hand-built experiment for the unit and snapshot tests: the DESIGN.md
//! ruby example, three rounds of two variants plus one failed run.

use kurabe_store::{
    Experiment, ExperimentId, ExperimentStatus, HostFacts, MetricValue, RunRecord, RunStatus,
    StoredRun,
};

const MIB: f64 = 1024.0 * 1024.0;

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
        },
    }
}

/// The sample experiment; the run order starts with the non-baseline
/// variant so tests see that the plan, not first-seen order, decides.
pub(crate) fn sample_experiment() -> Experiment {
    let mut runs = vec![
        run("ruby + big heap", 0, 124.0, 60.1, 8.0),
        run("ruby", 0, 105.0, 39.0, 9.4),
        run("ruby", 1, 106.2, 39.1, 9.5),
        run("ruby + big heap", 1, 125.3, 60.2, 8.1),
        run("ruby + big heap", 2, 126.6, 60.3, 7.9),
        run("ruby", 2, 107.4, 38.9, 9.3),
    ];
    runs[1].run.record = Some(serde_json::json!({
        "series": [
            {"t_s": 0.0, "cpu_percent": 10.0, "pss_bytes": 30.0 * MIB},
            {"t_s": 1.0, "cpu_percent": 95.0, "pss_bytes": 38.0 * MIB},
            {"t_s": 2.0, "cpu_percent": 90.0, "pss_bytes": 39.0 * MIB},
        ]
    }));
    let mut failed = run("ruby + big heap", 3, 0.0, 0.0, 0.0);
    failed.run.status = RunStatus::Failed;
    failed.run.metrics.clear();
    failed.run.error_tail = Some("out of memory".into());
    runs.push(failed);
    Experiment {
        id: ExperimentId(3),
        name: "ruby GC settings".into(),
        plan_text: PLAN.into(),
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
        runs,
    }
}
