//! What a metric is: its name, unit, which direction is better, and how big
//! a difference counts as noise.
//!
//! The catalogue lists the metrics kurabe's workloads produce, so a plan can
//! be checked against it before anything runs and a verdict knows whether
//! "1.10×" is good news. It must not know how a metric is measured.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tree_counters::{self, Counter};

/// Default noise band: differences smaller than ±2 % are "within noise".
pub const DEFAULT_NOISE_BAND: f64 = 0.02;

/// Which way a metric improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// More is better (requests per second, benchmark index).
    HigherIsBetter,
    /// Less is better (latency, memory, CPU time).
    LowerIsBetter,
}

/// Unit a metric's values are expressed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Events per second (requests/s, iterations/s).
    PerSecond,
    /// Seconds.
    Seconds,
    /// Milliseconds.
    Milliseconds,
    /// Microseconds.
    Microseconds,
    /// Bytes.
    Bytes,
    /// Percent of one CPU core (may exceed 100 on several cores).
    Percent,
    /// A plain count.
    Count,
    /// A dimensionless score (an index against a baseline machine).
    Score,
}

impl Unit {
    /// Short symbol for tables and error messages.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::PerSecond => "/s",
            Unit::Seconds => "s",
            Unit::Milliseconds => "ms",
            Unit::Microseconds => "µs",
            Unit::Bytes => "B",
            Unit::Percent => "%",
            Unit::Count => "",
            Unit::Score => "",
        }
    }
}

/// A metric definition: what a number in a run's result means.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct Metric {
    /// Stable snake_case name with the unit in it, as in result JSON (`pss_peak_bytes`).
    pub name: String,
    /// Unit of the values.
    pub unit: Unit,
    /// Which way is better.
    pub direction: Direction,
    /// Relative difference treated as noise, e.g. 0.02 for ±2 %.
    pub noise_band: f64,
    /// One-line description for reports and `--help`-like listings.
    pub description: String,
}

impl Metric {
    /// A metric with the default noise band.
    pub fn new(name: &str, unit: Unit, direction: Direction, description: &str) -> Metric {
        Metric {
            name: name.to_owned(),
            unit,
            direction,
            noise_band: DEFAULT_NOISE_BAND,
            description: description.to_owned(),
        }
    }

    /// The same metric with another noise band (a plan's per-metric override).
    pub fn with_noise_band(mut self, band: f64) -> Metric {
        self.noise_band = band;
        self
    }
}

use Direction::{HigherIsBetter as Hi, LowerIsBetter as Lo};

/// Built-in metrics: (name, unit, direction, description).
const BUILTIN: &[(&str, Unit, Direction, &str)] = &[
    // http workload with find_rate: the capacity search's estimate
    (
        "capacity_per_second",
        Unit::PerSecond,
        Hi,
        "highest arrival rate sustained within the SLOs (find_rate)",
    ),
    // http workload: client side
    (
        "requests_per_second",
        Unit::PerSecond,
        Hi,
        "complete requests per second",
    ),
    (
        "latency_mean_us",
        Unit::Microseconds,
        Lo,
        "mean request latency",
    ),
    (
        "latency_p50_us",
        Unit::Microseconds,
        Lo,
        "median request latency",
    ),
    (
        "latency_p90_us",
        Unit::Microseconds,
        Lo,
        "90th percentile latency",
    ),
    (
        "latency_p99_us",
        Unit::Microseconds,
        Lo,
        "99th percentile latency",
    ),
    (
        "latency_p999_us",
        Unit::Microseconds,
        Lo,
        "99.9th percentile latency",
    ),
    ("failed_requests", Unit::Count, Lo, "requests that failed"),
    (
        "failed_percent",
        Unit::Percent,
        Lo,
        "failed requests, % of all requests",
    ),
    (
        "check_pass_percent",
        Unit::Percent,
        Hi,
        "responses that passed every response check (--check), % of those judged",
    ),
    (
        "non_2xx_responses",
        Unit::Count,
        Lo,
        "responses with a status outside 2xx",
    ),
    // target process tree (any workload that runs a target)
    (
        "cpu_ms_per_request",
        Unit::Milliseconds,
        Lo,
        "target CPU time per complete request",
    ),
    (
        "cpu_percent_mean",
        Unit::Percent,
        Lo,
        "target CPU, mean percent of one core",
    ),
    (
        "cpu_time_ms",
        Unit::Milliseconds,
        Lo,
        "target CPU time, user + system",
    ),
    (
        "pss_peak_bytes",
        Unit::Bytes,
        Lo,
        "highest Σ PSS of the target tree",
    ),
    (
        "pss_steady_bytes",
        Unit::Bytes,
        Lo,
        "Σ PSS of the target tree at the end",
    ),
    (
        "rss_peak_bytes",
        Unit::Bytes,
        Lo,
        "highest Σ RSS of the target tree",
    ),
    (
        "uss_peak_bytes",
        Unit::Bytes,
        Lo,
        "highest Σ USS of the target tree",
    ),
    // http workload with `soak`: growth of the memory floor
    (
        "pss_slope_bytes_per_request",
        Unit::Count,
        Lo,
        "soak: growth of the memory floor (Σ anon + shmem PSS + swap) per request, bytes (Theil–Sen)",
    ),
    (
        "pss_growth_mb_per_hour",
        Unit::Count,
        Lo,
        "soak: growth of the memory floor at the measured rate, MB per hour",
    ),
    (
        "pss_growing",
        Unit::Count,
        Lo,
        "soak: 1 when the memory floor keeps growing (a leak), 0 when flat",
    ),
    // command workload
    (
        "wall_time_s",
        Unit::Seconds,
        Lo,
        "wall-clock time of the command",
    ),
    (
        "user_time_s",
        Unit::Seconds,
        Lo,
        "user CPU time of the command",
    ),
    (
        "system_time_s",
        Unit::Seconds,
        Lo,
        "system CPU time of the command",
    ),
    (
        "max_rss_bytes",
        Unit::Bytes,
        Lo,
        "peak RSS of the command (getrusage)",
    ),
    // command workload with `measure = "instructions"`
    (
        "instructions",
        Unit::Count,
        Lo,
        "instructions executed by the command and its children (Cachegrind's Ir)",
    ),
    // idle workload / whole machine
    (
        "system_used_bytes",
        Unit::Bytes,
        Lo,
        "system memory used (free's 'used')",
    ),
    // system workload
    (
        "system_index",
        Unit::Score,
        Hi,
        "UnixBench-style index of the machine",
    ),
    // system workload, one per test: its index (result / BYTE baseline × 10)
    (
        "system_index_dhry2reg",
        Unit::Score,
        Hi,
        "index of Dhrystone 2",
    ),
    (
        "system_index_whetstone_double",
        Unit::Score,
        Hi,
        "index of Double-Precision Whetstone",
    ),
    (
        "system_index_execl",
        Unit::Score,
        Hi,
        "index of Execl Throughput",
    ),
    (
        "system_index_fstime",
        Unit::Score,
        Hi,
        "index of File Copy 1024 bufsize",
    ),
    (
        "system_index_fsbuffer",
        Unit::Score,
        Hi,
        "index of File Copy 256 bufsize",
    ),
    (
        "system_index_fsdisk",
        Unit::Score,
        Hi,
        "index of File Copy 4096 bufsize",
    ),
    (
        "system_index_pipe",
        Unit::Score,
        Hi,
        "index of Pipe Throughput",
    ),
    (
        "system_index_context1",
        Unit::Score,
        Hi,
        "index of Pipe-based Context Switching",
    ),
    (
        "system_index_spawn",
        Unit::Score,
        Hi,
        "index of Process Creation",
    ),
    (
        "system_index_shell1",
        Unit::Score,
        Hi,
        "index of Shell Scripts (1 concurrent)",
    ),
    (
        "system_index_shell8",
        Unit::Score,
        Hi,
        "index of Shell Scripts (8 concurrent)",
    ),
    (
        "system_index_syscall",
        Unit::Score,
        Hi,
        "index of System Call Overhead",
    ),
];

/// The per-test index metrics of the `system` workload, in UnixBench's
/// report order, with the test id each belongs to (`-` in an id is `_` in
/// the metric name).
pub const SYSTEM_TEST_METRICS: [(&str, &str); 12] = [
    ("dhry2reg", "system_index_dhry2reg"),
    ("whetstone-double", "system_index_whetstone_double"),
    ("execl", "system_index_execl"),
    ("fstime", "system_index_fstime"),
    ("fsbuffer", "system_index_fsbuffer"),
    ("fsdisk", "system_index_fsdisk"),
    ("pipe", "system_index_pipe"),
    ("context1", "system_index_context1"),
    ("spawn", "system_index_spawn"),
    ("shell1", "system_index_shell1"),
    ("shell8", "system_index_shell8"),
    ("syscall", "system_index_syscall"),
];

/// The built-in metric catalogue, in a stable order: the table above,
/// then each process-tree counter (`minor_faults`: per execution of a
/// command, over a watch) and per request of a load
/// (`minor_faults_per_request`).
pub fn catalogue() -> Vec<Metric> {
    names().filter_map(lookup).collect()
}

/// Look a built-in metric up by name.
pub fn lookup(name: &str) -> Option<Metric> {
    if let Some(&(name, unit, direction, description)) = BUILTIN.iter().find(|m| m.0 == name) {
        return Some(Metric::new(name, unit, direction, description));
    }
    Counter::ALL.into_iter().find_map(|c| {
        let whole = c.key() == name;
        (whole || c.per_request() == name).then(|| {
            let per = if whole {
                "of the tree, per command execution or over a watch"
            } else {
                "of the target tree per request"
            };
            let unit = match c.unit() {
                tree_counters::Unit::Milliseconds => Unit::Milliseconds,
                tree_counters::Unit::Bytes => Unit::Bytes,
                tree_counters::Unit::Count => Unit::Count,
            };
            Metric::new(name, unit, Lo, &format!("{} {per}", c.what()))
        })
    })
}

/// Names of all built-in metrics, for "expected one of …" messages.
pub fn names() -> impl Iterator<Item = &'static str> {
    BUILTIN.iter().map(|m| m.0).chain(
        Counter::ALL
            .into_iter()
            .flat_map(|c| [c.key(), c.per_request()]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_snake_case_and_carry_their_unit() {
        let mut seen = HashSet::new();
        for m in catalogue() {
            assert!(seen.insert(m.name.clone()), "duplicate metric {}", m.name);
            assert!(m
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'));
            let suffix_ok = match m.unit {
                Unit::Bytes => m.name.ends_with("_bytes") || m.name.ends_with("_bytes_per_request"),
                Unit::Microseconds => m.name.ends_with("_us"),
                Unit::Milliseconds => m.name.contains("_ms"),
                Unit::Seconds => m.name.ends_with("_s"),
                Unit::PerSecond => m.name.ends_with("_per_second"),
                Unit::Percent => m.name.contains("percent"),
                Unit::Count | Unit::Score => true,
            };
            assert!(suffix_ok, "{} does not name its unit {:?}", m.name, m.unit);
            assert_eq!(m.noise_band, DEFAULT_NOISE_BAND);
        }
    }

    #[test]
    fn directions_of_headline_metrics() {
        assert_eq!(
            lookup("requests_per_second").unwrap().direction,
            Direction::HigherIsBetter
        );
        assert_eq!(
            lookup("system_index").unwrap().direction,
            Direction::HigherIsBetter
        );
        assert_eq!(
            lookup("pss_peak_bytes").unwrap().direction,
            Direction::LowerIsBetter
        );
        assert_eq!(
            lookup("latency_p99_us").unwrap().direction,
            Direction::LowerIsBetter
        );
        assert!(lookup("no_such_metric").is_none());
    }

    #[test]
    fn noise_band_override() {
        let m = lookup("wall_time_s").unwrap().with_noise_band(0.05);
        assert_eq!(m.noise_band, 0.05);
    }

    #[test]
    fn serde_names_are_snake_case() {
        let m = lookup("requests_per_second").unwrap();
        let json = serde_json::to_string(&m).unwrap();
        assert!(json.contains(r#""direction":"higher_is_better""#), "{json}");
        assert!(json.contains(r#""unit":"per_second""#), "{json}");
    }
}
