//! What a workload run hands back, and the pieces of it that the http,
//! watch and soak workloads share: the metrics and record of the target
//! tree ([`tree_metrics`], [`counter_metrics`]) and of a load
//! ([`load_metrics`]).
//!
//! Owns [`Measured`] and [`Probe`]. Must not run anything: running a
//! workload is `measure`'s and `soak`'s, which both build on this module
//! (so neither needs the other's internals). No printing, no store.

use std::collections::BTreeMap;

use kurabe_model::http::HttpReport;
use kurabe_model::run_detail::{RunDetail, TreeDetail};
use kurabe_model::tree_counters::Counts;
use kurabe_probe::cgroup::CgroupReader;

/// Metric values by catalogue name, plus the full record of the run.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Every metric the workload produced.
    pub metrics: BTreeMap<&'static str, f64>,
    /// The workload's full result (an HTTP report, per-execution times …).
    pub record: RunDetail,
}

/// The process tree to sample, when there is a target.
#[derive(Debug, Clone)]
pub struct Probe {
    /// Root PID of the target.
    pub pid: u32,
    /// Its run cgroup's counters (the CPU of escaped children too).
    pub cgroup: Option<CgroupReader>,
    /// Whether its on-CPU stacks are sampled over an http load's
    /// measured phase (`--profile`).
    pub profile: kurabe_model::profile::Profiling,
}

/// The target tree's CPU and memory metrics (an http, watch or soak run).
pub(crate) fn tree_metrics(s: &TreeDetail, m: &mut BTreeMap<&'static str, f64>) {
    m.insert("cpu_time_ms", s.cpu_seconds() * 1e3);
    m.insert("cpu_percent_mean", s.cpu_percent_mean());
    m.insert("pss_peak_bytes", s.pss_peak_bytes as f64);
    m.insert("pss_steady_bytes", s.pss_end_bytes as f64);
    m.insert("rss_peak_bytes", s.rss_peak_bytes as f64);
    m.insert("uss_peak_bytes", s.uss_peak_bytes as f64);
}

/// The tree's counters as metrics: per request of a load (`per` the
/// requests the server answered: none answered, none counted) or, without
/// `per`, as totals (a watch).
pub(crate) fn counter_metrics(c: &Counts, per: Option<u64>, m: &mut BTreeMap<&'static str, f64>) {
    match per {
        Some(n) => m.extend(c.per(n as f64).iter().map(|(k, v)| (k.per_request(), v))),
        None => m.extend(c.iter().map(|(k, v)| (k.key(), v))),
    }
}

/// The load generator's throughput, latency and failure metrics (an http or soak run).
pub(crate) fn load_metrics(report: &HttpReport, m: &mut BTreeMap<&'static str, f64>) {
    m.insert("requests_per_second", report.requests_per_second);
    let l = &report.latency_us;
    m.insert("latency_mean_us", l.mean);
    m.insert("latency_p50_us", l.p50 as f64);
    m.insert("latency_p90_us", l.p90 as f64);
    m.insert("latency_p99_us", l.p99 as f64);
    m.insert("latency_p999_us", l.p999 as f64);
    m.insert("failed_requests", report.failed_requests as f64);
    m.insert("non_2xx_responses", report.non_2xx_responses as f64);
    if let Some(pass) = report.check_pass_percent() {
        m.insert("check_pass_percent", pass);
    }
}
