//! The result of `kurabe cmd`, in hyperfine's export layout.
//!
//! Owns [`CmdExport`]: `results[]` with hyperfine's fields (`command`,
//! `mean`, `stddev`, `median`, `user`, `system`, `min`, `max`, `times`,
//! `memory_usage_byte`, `exit_codes`, `parameters`; seconds and bytes) so
//! tools that read `hyperfine --export-json` read kurabe's, and kurabe's own
//! fields beside them (the name, max RSS, the comparison with the reference
//! command with its 95 % interval and verdict per metric). Also the pure
//! per-command statistics ([`CmdResult::from_executions`]).
//!
//! It must not do I/O or render text (kurabe-report renders Markdown and CSV).

use crate::tree_counters::Counts;
use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::plan::Measure;
use crate::stats::{Comparison, Summary};

/// What `kurabe cmd --export-json` writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(
    title = "kurabe cmd --export-json",
    description = "hyperfine's export layout (results[] with command, mean, stddev, median, user, system, min, max, times, memory_usage_byte, exit_codes, parameters; seconds and bytes) so tools reading hyperfine's JSON read kurabe's, plus kurabe's fields beside them."
)]
pub struct CmdExport {
    /// One entry per command, in the order given.
    pub results: Vec<CmdResult>,
    /// kurabe: version of this layout's kurabe fields.
    #[schemars(range(min = 1))]
    pub schema_version: u32,
    /// kurabe: the experiment in the results store (absent with `--no-save`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experiment_id: Option<String>,
    /// kurabe: name of the reference command the ratios are against.
    pub reference: String,
    /// kurabe: seed of the interleaved run order.
    pub seed: u64,
    /// kurabe: rounds of interleaved blocks that ran.
    pub rounds: u32,
    /// kurabe: executions of each command per block.
    pub block_size: u32,
    /// kurabe: the shell's own start-up subtracted from every execution, seconds.
    pub shell_overhead_s: f64,
    /// kurabe: what the executions were measured by; absent for time.
    /// With `instructions` the times are those under Cachegrind (about 50×
    /// slower) and only the instruction counts are compared.
    #[serde(default, skip_serializing_if = "Measure::is_time")]
    pub measure: Measure,
    /// kurabe: the shell's own start-up subtracted from every execution's
    /// count, instructions (with `measure` `instructions` and a shell).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell_overhead_instructions: Option<f64>,
    /// kurabe: why the hardware counters were not counted, when they were
    /// not (`no_pmu` on most VMs); absent when they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware_off: Option<crate::tree_counters::HardwareOff>,
    /// kurabe: the differential profile (`--profile`): each run's folded
    /// stacks and each command against the reference; absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::profile::ProfileReport>,
}

/// One command's figures: hyperfine's fields first, then kurabe's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct CmdResult {
    /// The command line as run (parameters substituted).
    pub command: String,
    /// Mean wall time, seconds.
    pub mean: f64,
    /// Sample standard deviation of the wall time (None with one run).
    #[schemars(required, transform = crate::schema::nullable)]
    pub stddev: Option<f64>,
    /// Median wall time, seconds.
    pub median: f64,
    /// Mean user CPU time, seconds.
    pub user: f64,
    /// Mean system CPU time, seconds.
    pub system: f64,
    /// Shortest wall time, seconds.
    pub min: f64,
    /// Longest wall time, seconds.
    pub max: f64,
    /// Every execution's wall time, seconds, in the order they ran.
    pub times: Vec<f64>,
    /// Every execution's max RSS, bytes.
    pub memory_usage_byte: Vec<u64>,
    /// Every execution's exit code (null: ended by a signal).
    pub exit_codes: Vec<Option<i32>>,
    /// Parameter values of this command (`-L`, `-P`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, String>,
    /// kurabe: the command's name in reports (`-n`, else the command).
    pub name: String,
    /// kurabe: largest max RSS of any execution, bytes.
    pub max_rss_bytes: u64,
    /// kurabe: highest Σ PSS of the command's tree sampled in any
    /// execution, bytes; absent when none lived long enough to be sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pss_peak_bytes: Option<u64>,
    /// kurabe: every execution's instruction count (Cachegrind's Ir, the
    /// shell's start-up subtracted), in the order they ran; absent unless
    /// measured by instructions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instructions: Vec<u64>,
    /// kurabe: mean instruction count of the executions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions_mean: Option<f64>,
    /// kurabe: the kernel's counters of the command's tree, mean per
    /// execution (faults, context switches, I/O calls and bytes,
    /// migrations, hardware events where there is a PMU); a counter not
    /// counted in every execution is absent.
    #[serde(default, skip_serializing_if = "Counts::is_empty")]
    pub counters: Counts,
    /// kurabe: against the reference, by metric (`wall_time_s`,
    /// `user_time_s`, `system_time_s`, `max_rss_bytes`, or `instructions`):
    /// ratio of geometric means, its 95 % interval and the verdict. Empty
    /// for the reference.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub versus_reference: BTreeMap<String, Comparison>,
}

/// One execution as `kurabe cmd` counts it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CmdExecution {
    /// Wall time, seconds.
    pub wall_s: f64,
    /// User CPU, seconds.
    pub user_s: f64,
    /// System CPU, seconds.
    pub system_s: f64,
    /// Max RSS, bytes.
    pub max_rss_bytes: u64,
    /// Highest Σ PSS sampled, bytes (None: ended before the first sample).
    pub pss_peak_bytes: Option<u64>,
    /// Exit code; None when a signal ended it.
    pub exit_code: Option<i32>,
    /// Instructions executed, when counted.
    pub instructions: Option<u64>,
    /// The kernel's counters of the execution's tree.
    pub counters: Counts,
}

impl CmdResult {
    /// hyperfine's statistics of `execs`; `None` without executions. The
    /// kurabe fields are left for the caller (`versus_reference` empty).
    pub fn from_executions(
        command: &str,
        name: &str,
        parameters: BTreeMap<String, String>,
        execs: &[CmdExecution],
    ) -> Option<CmdResult> {
        let times: Vec<f64> = execs.iter().map(|e| e.wall_s).collect();
        let s = Summary::of(&times)?;
        let mean_of =
            |f: fn(&CmdExecution) -> f64| execs.iter().map(f).sum::<f64>() / execs.len() as f64;
        let memory: Vec<u64> = execs.iter().map(|e| e.max_rss_bytes).collect();
        let counts: Vec<u64> = execs.iter().filter_map(|e| e.instructions).collect();
        Some(CmdResult {
            command: command.to_owned(),
            mean: s.mean,
            stddev: s.stdev,
            median: s.median,
            user: mean_of(|e| e.user_s),
            system: mean_of(|e| e.system_s),
            min: s.min,
            max: s.max,
            max_rss_bytes: memory.iter().copied().max().unwrap_or(0),
            pss_peak_bytes: execs.iter().filter_map(|e| e.pss_peak_bytes).max(),
            instructions_mean: mean_count(&counts),
            counters: execs
                .iter()
                .map(|e| e.counters)
                .reduce(|a, b| a.plus(&b))
                .unwrap_or_default()
                .per(execs.len() as f64),
            instructions: counts,
            memory_usage_byte: memory,
            exit_codes: execs.iter().map(|e| e.exit_code).collect(),
            times,
            parameters,
            name: name.to_owned(),
            versus_reference: BTreeMap::new(),
        })
    }
}

/// The mean of `counts`; `None` without any.
fn mean_count(counts: &[u64]) -> Option<f64> {
    let n = counts.len();
    (n > 0).then(|| counts.iter().map(|&c| c as f64).sum::<f64>() / n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(wall_s: f64, rss: u64) -> CmdExecution {
        CmdExecution {
            wall_s,
            user_s: wall_s / 2.0,
            system_s: 0.0,
            max_rss_bytes: rss,
            pss_peak_bytes: None,
            exit_code: Some(0),
            instructions: None,
            counters: Counts::default(),
        }
    }

    #[test]
    fn hyperfine_statistics() {
        let r = CmdResult::from_executions(
            "sleep 0.1",
            "nap",
            BTreeMap::new(),
            &[exec(0.3, 10), exec(0.1, 30), exec(0.2, 20)],
        )
        .unwrap();
        assert!((r.mean - 0.2).abs() < 1e-12);
        assert!((r.median - 0.2).abs() < 1e-12);
        assert!((r.stddev.unwrap() - 0.1).abs() < 1e-12);
        assert!((r.user - 0.1).abs() < 1e-12);
        assert_eq!((r.min, r.max), (0.1, 0.3));
        assert_eq!(r.times, vec![0.3, 0.1, 0.2]);
        assert_eq!(r.memory_usage_byte, vec![10, 30, 20]);
        assert_eq!(r.max_rss_bytes, 30);
        let one = CmdResult::from_executions("x", "x", BTreeMap::new(), &[exec(1.0, 1)]).unwrap();
        assert_eq!(one.stddev, None);
        assert!(CmdResult::from_executions("x", "x", BTreeMap::new(), &[]).is_none());
    }

    #[test]
    fn json_has_hyperfine_field_names() {
        let r =
            CmdResult::from_executions("true", "true", BTreeMap::new(), &[exec(0.001, 1)]).unwrap();
        let v = serde_json::to_value(&r).unwrap();
        for k in [
            "command",
            "mean",
            "stddev",
            "median",
            "user",
            "system",
            "min",
            "max",
            "times",
            "memory_usage_byte",
            "exit_codes",
        ] {
            assert!(v.get(k).is_some(), "{k} missing from {v}");
        }
    }
}
